"""The fairwatch WSGI application: routes; ``/api/v1/power`` computed once per snapshot."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING
from urllib.parse import parse_qs
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from prometheus_client import CollectorRegistry, make_wsgi_app

from metrics_core import STATES
from monitor.http.live import LiveView, static_asset
from monitor.outputs.api import FILTERS, history_data, results_data
from monitor.service.history import History, SeriesKey
from monitor.service.snapshot import Snapshot

if TYPE_CHECKING:
    from _typeshed import OptExcInfo

__all__ = ["make_app"]

_JSON = "application/json"
_TEXT = "text/plain; charset=utf-8"
_HTML = "text/html; charset=utf-8"
# Distinct (Accept, Accept-Encoding) pairs cached per snapshot: Prometheus sends one pair,
# browsers and curl a few more; a bound keeps odd headers from growing the cache.
_MAX_CACHED_RESPONSES = 16

Body = Iterable[bytes]
# A rendered response: status, headers, body.
_Response = tuple[str, list[tuple[str, str]], bytes]


def make_app(
    *,
    registry: CollectorRegistry,
    get_snapshot: Callable[[], Snapshot],
    ready: Callable[[], bool],
    metrics: WSGIApplication | None = None,
    plans: Callable[[Snapshot], object] | None = None,
    live: LiveView | None = None,
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
    """
    if metrics is None:
        metrics = make_wsgi_app(registry)
    if live is None:
        live = LiveView(History(1), {})
    view = live

    def healthz(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        return _respond(start_response, "200 OK", b"ok\n", _TEXT)

    def readyz(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        if ready():
            return _respond(start_response, "200 OK", b"ready\n", _TEXT)
        return _respond(start_response, "503 Service Unavailable", b"not ready\n", _TEXT)

    def results(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        return _results(get_snapshot(), environ, start_response)

    def landing(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        snapshot = get_snapshot()
        params = parse_qs(environ.get("QUERY_STRING", ""))
        model, window = (params.get(k, [None])[0] for k in ("model", "window"))
        etag = view.etag(snapshot, model, window)
        if environ.get("HTTP_IF_NONE_MATCH") == etag:
            start_response("304 Not Modified", [("ETag", etag), ("Cache-Control", "no-cache")])
            return []
        fragment = params.get("fragment", ["0"])[0] == "1"
        page, etag = view.render(snapshot, model, window, fragment=fragment)
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
        "/api/v1/results": results,
        "/api/v1/power": _SnapshotCachedApp(power, get_snapshot),
        "/api/v1/history": history,
        "/favicon.ico": static,  # browsers ask for it whatever the page links
        "/": landing,
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


class _SnapshotCachedApp:
    """Memoises another WSGI app's responses for as long as the snapshot stays the same.

    The snapshot is immutable and swapped by reference, so a response rendered from it
    stays right until the next swap. Keyed by the snapshot object (not its ``id()``,
    which may be reused) and the raw negotiation headers; requests with a query string
    (``name[]`` filters) are passed through uncached.
    """

    def __init__(self, app: WSGIApplication, get_snapshot: Callable[[], Snapshot]) -> None:
        self._app = app
        self._get_snapshot = get_snapshot
        # (snapshot, {headers key: (status, headers, body)}), replaced as a whole.
        self._cache: tuple[Snapshot | None, dict[tuple[str, str], _Response]] = (None, {})

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        if environ.get("QUERY_STRING"):
            return self._app(environ, start_response)
        snapshot = self._get_snapshot()
        cached_snapshot, responses = self._cache
        if cached_snapshot is not snapshot:
            responses = {}
            self._cache = (snapshot, responses)
        key = (environ.get("HTTP_ACCEPT", ""), environ.get("HTTP_ACCEPT_ENCODING", ""))
        response = responses.get(key)
        if response is None:
            # If the snapshot is swapped while rendering, these bytes may come from the
            # newer one: harmless, since only requests still seeing the older one use them.
            response = _capture(self._app, environ)
            if len(responses) < _MAX_CACHED_RESPONSES:
                responses[key] = response
        status, headers, body = response
        start_response(status, list(headers))
        return [body]


def _capture(app: WSGIApplication, environ: WSGIEnvironment) -> _Response:
    """Run ``app`` once and keep what it answered, with the length of the body it produced."""
    captured: list[tuple[str, list[tuple[str, str]]]] = []

    def start_response(
        status: str, headers: list[tuple[str, str]], exc_info: OptExcInfo | None = None
    ) -> Callable[[bytes], object]:
        captured[:] = [(status, headers)]
        return lambda data: None

    body = b"".join(app(environ, start_response))
    ((status, headers),) = captured
    kept = [(k, v) for k, v in headers if k.lower() != "content-length"]
    return status, [*kept, ("Content-Length", str(len(body)))], body


def _results(snapshot: Snapshot, environ: WSGIEnvironment, start_response: StartResponse) -> Body:
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
    body = {"status": "success", "data": results_data(snapshot, wanted)}
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
