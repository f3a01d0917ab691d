"""The fairwatch WSGI application: routes.

Every route that computes (the live view, ``/api/v1/results``, ``/api/v1/power``,
``/api/v1/history``) is a :class:`~monitor.http.drawing.CachedApp`: drawn once per state, one
drawing at a time, within a share of the clock (:mod:`monitor.http.drawing`). ``/metrics`` is
rendered when a snapshot is published (:class:`~monitor.http.metrics.MetricsEndpoint`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from urllib.parse import parse_qs
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from prometheus_client import CollectorRegistry, make_wsgi_app

from metrics_core import STATES
from monitor.http.compress import gzipped
from monitor.http.drawing import CachedApp, Drawing, Response
from monitor.http.live import LiveView, static_asset
from monitor.outputs.api import FILTERS, history_data, results_data
from monitor.outputs.csv_rows import rows_csv
from monitor.service.history import History, SeriesKey
from monitor.service.snapshot import Snapshot

__all__ = ["make_app"]

_JSON = "application/json"
_CSV = "text/csv; charset=utf-8; header=present"
_TEXT = "text/plain; charset=utf-8"
_HTML = "text/html; charset=utf-8"

Body = Iterable[bytes]


def make_app(
    *,
    registry: CollectorRegistry,
    get_snapshot: Callable[[], Snapshot],
    ready: Callable[[], bool],
    metrics: WSGIApplication | None = None,
    plans: Callable[[Snapshot], object] | None = None,
    live: LiveView | None = None,
    details: Callable[[], bool] = lambda: True,
    drawing: Drawing[Response] | None = None,
) -> WSGIApplication:
    """The fairwatch WSGI application.

    ``metrics`` serves ``/metrics``: the service passes a
    :class:`~monitor.http.metrics.MetricsEndpoint`, which renders each snapshot once when it is
    published. Without it, prometheus_client renders ``registry`` at every scrape (right for a
    registry that also holds live collectors, such as process metrics).

    ``plans`` turns a snapshot into the JSON-ready power plans ``/api/v1/power`` serves
    (:mod:`monitor.outputs.power`); computed on the first request after each evaluation and
    cached with the snapshot, as ``/metrics`` is.

    ``live`` draws the live view at ``/`` and feeds ``/api/v1/history`` (the service passes one
    reading its :class:`~monitor.service.history.History`); without it, the live view keeps no history.

    ``details``: whether a failed source's error and skipped files are served in full
    (``server.error_details``; asked per snapshot).

    ``drawing``: how answers that compute are drawn (default: one at a time within
    :data:`~monitor.http.drawing.DRAWING_SHARE` of the clock).
    """
    if metrics is None:
        metrics = make_wsgi_app(registry)
    if live is None:
        live = LiveView(History(1), {})
    view = live
    if drawing is None:
        drawing = Drawing()  # one answer drawn at a time, within a share of the clock
    drawer = drawing

    def cached(
        route: WSGIApplication, state: Callable[[WSGIEnvironment], tuple[object, ...]]
    ) -> WSGIApplication:
        return CachedApp(route, state, drawer)

    def snapshot_state(environ: WSGIEnvironment) -> tuple[object, ...]:
        return (get_snapshot(), details())  # last: the kind (a failed source's details shown or not)

    def history_state(environ: WSGIEnvironment) -> tuple[object, ...]:
        return (get_snapshot(), view.history.version, False)  # last: the kind (no error details here)

    def page_state(environ: WSGIEnvironment) -> tuple[object, ...]:
        params = parse_qs(environ.get("QUERY_STRING", ""))
        model, window = (params.get(k, [None])[0] for k in ("model", "window"))
        return (view.etag(get_snapshot(), model, window), details())

    def healthz(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        return _respond(start_response, "200 OK", b"ok\n", _TEXT)

    def readyz(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        if ready():
            return _respond(start_response, "200 OK", b"ready\n", _TEXT)
        return _respond(start_response, "503 Service Unavailable", b"not ready\n", _TEXT)

    def results(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        return _results(get_snapshot(), environ, start_response, details=details())

    def landing(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        snapshot = get_snapshot()
        params = parse_qs(environ.get("QUERY_STRING", ""))
        model, window = (params.get(k, [None])[0] for k in ("model", "window"))
        etag = view.etag(snapshot, model, window)
        fragment = params.get("fragment", ["0"])[0] == "1"
        page = view.main(snapshot, model, window) if fragment else view.page(snapshot, model, window)
        headers = [("ETag", etag), ("Cache-Control", "no-cache")]
        return _respond(start_response, "200 OK", page.encode("utf-8"), _HTML, headers)

    def history(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        return _history(view.history, environ, start_response)

    def static(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        asset = static_asset((environ.get("PATH_INFO") or "").removeprefix("/static/"))
        if asset is None:
            return _respond(start_response, "404 Not Found", b"not found\n", _TEXT)
        body, content_type = asset
        return _respond(start_response, "200 OK", body, content_type, [("Cache-Control", "max-age=300")])

    def power(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        if plans is None:
            return _respond(start_response, "404 Not Found", b"not found\n", _TEXT)
        body = {"status": "success", "data": {"plans": plans(get_snapshot())}}
        return _respond(start_response, "200 OK", _dumps(body), _JSON)

    routes: dict[str, WSGIApplication] = {
        "/metrics": metrics,
        "/healthz": healthz,
        "/readyz": readyz,
        "/api/v1/results": cached(gzipped(results), snapshot_state),
        "/api/v1/power": cached(gzipped(power), snapshot_state),
        "/api/v1/history": cached(gzipped(history), history_state),
        "/favicon.ico": static,  # browsers ask for it whatever the page links
        "/": cached(gzipped(landing), page_state),
    }

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        path = environ.get("PATH_INFO") or "/"
        if path == "/favicon.ico":
            environ = {**environ, "PATH_INFO": "/static/favicon.svg"}
        route = static if path.startswith("/static/") else routes.get(path)
        if route is None:
            return _respond(start_response, "404 Not Found", b"not found\n", _TEXT)
        method = environ["REQUEST_METHOD"]
        if method not in ("GET", "HEAD"):
            return _respond(
                start_response,
                "405 Method Not Allowed",
                b"method not allowed\n",
                _TEXT,
                [("Allow", "GET, HEAD")],
            )
        if method == "HEAD":  # answered as GET, without the body (prometheus_client's app knows only GET)
            body = route({**environ, "REQUEST_METHOD": "GET"}, start_response)
            if hasattr(body, "close"):
                body.close()
            return []
        return route(environ, start_response)

    return app


def _respond(
    start_response: StartResponse,
    status: str,
    body: bytes,
    content_type: str,
    extra: list[tuple[str, str]] | None = None,
) -> Body:
    headers = [("Content-Type", content_type), ("Content-Length", str(len(body))), *(extra or [])]
    start_response(status, headers)
    return [body]


def _results(
    snapshot: Snapshot, environ: WSGIEnvironment, start_response: StartResponse, *, details: bool
) -> Body:
    params = parse_qs(environ.get("QUERY_STRING", ""))
    wanted = {name: set(params[name]) for name in FILTERS if name in params}
    unknown_states = wanted.get("state", set()) - set(STATES)
    if unknown_states:
        error = {
            "status": "error",
            "errorType": "bad_data",
            "error": f"unknown state {_some(unknown_states)}; states: {', '.join(STATES)}",
        }
        return _respond(start_response, "400 Bad Request", _dumps(error), _JSON)
    answer = params.get("format", ["json"])[-1]
    if answer not in ("json", "csv"):
        error = {
            "status": "error",
            "errorType": "bad_data",
            "error": f"unknown format {_some({answer})}; formats: json, csv",
        }
        return _respond(start_response, "400 Bad Request", _dumps(error), _JSON)
    data = results_data(snapshot, wanted, details=details)
    if answer == "csv":  # the judged values, for a spreadsheet
        text = rows_csv(data["results"]).encode("utf-8")
        disposition = ("Content-Disposition", 'inline; filename="fairwatch-results.csv"')
        return _respond(start_response, "200 OK", text, _CSV, [("Cache-Control", "no-store"), disposition])
    body = {"status": "success", "data": data}
    return _respond(start_response, "200 OK", _dumps(body), _JSON, [("Cache-Control", "no-store")])


def _history(history: History, environ: WSGIEnvironment, start_response: StartResponse) -> Body:
    params = parse_qs(environ.get("QUERY_STRING", ""))
    unknown = set(params) - {"model", "since", *SeriesKey._fields}
    try:
        if unknown:
            raise ValueError(
                f"unknown parameter {_some(unknown)}; parameters: model, since, {', '.join(SeriesKey._fields)}"
            )
        body = {"status": "success", "data": history_data(history, params)}
    except ValueError as exc:
        error = {"status": "error", "errorType": "bad_data", "error": str(exc)}
        return _respond(start_response, "400 Bad Request", _dumps(error), _JSON)
    return _respond(start_response, "200 OK", _dumps(body), _JSON, [("Cache-Control", "no-store")])


def _some(values: set[str], shown: int = 3, length: int = 40) -> str:
    """A few of ``values``, each cut short: an error names what was wrong, it does not echo a flood."""
    first = [repr(v if len(v) <= length else v[:length] + "...") for v in sorted(values)[:shown]]
    more = f" and {len(values) - shown} more" if len(values) > shown else ""
    return ", ".join(first) + more


def _dumps(obj: object) -> bytes:
    # allow_nan=False: a NaN that slipped past finite_or_none fails loudly, not as invalid JSON.
    return json.dumps(obj, allow_nan=False, ensure_ascii=False).encode("utf-8")
