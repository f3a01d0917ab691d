"""The HTTP surface: a WSGI app and a small threaded server to run it.

Routes (GET and HEAD; other methods get 405, unknown paths 404):

- ``/metrics``: prometheus_client's own WSGI app (text or OpenMetrics by ``Accept``,
  gzip by ``Accept-Encoding``), with the rendered bytes cached per snapshot;
- ``/healthz``: the process is alive; ``/readyz``: 200 once ``ready()``, else 503;
- ``/api/v1/results``: the latest snapshot as JSON, optionally filtered;
- ``/``: a landing page listing the models and linking to the endpoints.

Every route reads the snapshot reference once and only formats it.
"""

from __future__ import annotations

import html
import json
import logging
import re
import socket
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from socketserver import ThreadingMixIn
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from prometheus_client import CollectorRegistry, make_wsgi_app

from metrics_core import STATES
from monitor.errors import ConfigError
from monitor.results import WindowResult
from monitor.serialize import evaluation_rows, finite_or_none, model_value_rows
from monitor.snapshot import ActiveAlert, ModelStatus, Snapshot
from monitor.timestamps import iso_z

__all__ = ["ServerHandle", "make_app", "serve"]

logger = logging.getLogger(__name__)

_JSON = "application/json"
_TEXT = "text/plain; charset=utf-8"
_HTML = "text/html; charset=utf-8"
_FILTERS = ("model", "window", "metric", "state")
# user:password@ in a URL; the source should already have masked it, this is a second line.
_URL_PASSWORD = re.compile(r"(?P<keep>[a-zA-Z][a-zA-Z0-9+.-]*://[^/:@\s]*:)[^@\s]*@")
# Distinct (Accept, Accept-Encoding) pairs cached per snapshot: Prometheus sends one pair,
# browsers and curl a few more; a bound keeps odd headers from growing the cache.
_MAX_CACHED_RESPONSES = 16

Body = Iterable[bytes]


def make_app(
    *,
    registry: CollectorRegistry,
    get_snapshot: Callable[[], Snapshot],
    ready: Callable[[], bool],
    cache_metrics: bool = True,
) -> WSGIApplication:
    """The fairwatch WSGI application.

    With ``cache_metrics`` (the default) ``/metrics`` answers a repeated scrape of the same
    snapshot with the bytes rendered for the first one: prometheus_client needs ~10 ms
    per 1,000 samples to render text. This assumes everything in ``registry`` derives
    from the snapshot, as with a registry holding only the
    :class:`~monitor.exporter.SnapshotCollector`; pass ``False`` when it also holds live
    collectors (process or platform metrics).
    """
    metrics: WSGIApplication = make_wsgi_app(registry)
    if cache_metrics:
        metrics = _SnapshotCachedApp(metrics, get_snapshot)

    def healthz(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        return _respond(start_response, "200 OK", b"ok\n", _TEXT)

    def readyz(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        if ready():
            return _respond(start_response, "200 OK", b"ready\n", _TEXT)
        return _respond(start_response, "503 Service Unavailable", b"not ready\n", _TEXT)

    def results(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        return _results(get_snapshot(), environ, start_response)

    def landing(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        page = landing_page(get_snapshot())
        return _respond(start_response, "200 OK", page.encode("utf-8"), _HTML)

    routes: dict[str, WSGIApplication] = {
        "/metrics": metrics,
        "/healthz": healthz,
        "/readyz": readyz,
        "/api/v1/results": results,
        "/": landing,
    }

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Body:
        route = routes.get(environ.get("PATH_INFO") or "/")
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
        self._cache: tuple[Snapshot | None, dict[tuple[str, str], Any]] = (None, {})

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


def _capture(app: WSGIApplication, environ: WSGIEnvironment) -> tuple[str, list[tuple[str, str]], bytes]:
    captured: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        captured[:] = [status, headers]
        return lambda data: None

    body = b"".join(app(environ, start_response))
    status, headers = captured
    headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
    return status, [*headers, ("Content-Length", str(len(body)))], body


# --------------------------------------------------------------------------------------------------------
# /api/v1/results
# --------------------------------------------------------------------------------------------------------


def _results(snapshot: Snapshot, environ: WSGIEnvironment, start_response: StartResponse) -> Body:
    params = parse_qs(environ.get("QUERY_STRING", ""))
    wanted = {name: set(params[name]) for name in _FILTERS if name in params}
    unknown_states = wanted.get("state", set()) - set(STATES)
    if unknown_states:
        error = {
            "status": "error",
            "errorType": "bad_data",
            "error": f"unknown state {sorted(unknown_states)}; states: {', '.join(STATES)}",
        }
        return _respond(start_response, "400 Bad Request", _dumps(error), _JSON)
    body = {"status": "success", "data": results_data(snapshot, wanted)}
    return _respond(start_response, "200 OK", _dumps(body), _JSON, [("Cache-Control", "no-store")])


def results_data(snapshot: Snapshot, filters: Mapping[str, set[str]] | None = None) -> dict[str, Any]:
    """The ``data`` object of ``/api/v1/results``.

    ``filters`` maps ``model``, ``window``, ``metric`` and ``state`` to accepted values;
    each applies to ``results`` and, where the rows have the field, ``model_values``.
    """
    filters = filters or {}
    evaluations = [s.last_evaluation for s in snapshot.models.values() if s.last_evaluation is not None]
    return {
        "generated_at": _iso_z_or_none(snapshot.created_at),
        "models": [_model_json(status) for status in snapshot.models.values()],
        "results": _filtered(evaluation_rows(evaluations), filters),
        "model_values": _filtered(model_value_rows(evaluations), filters),
        "alerts": [_alert_json(alert) for alert in snapshot.alerts],
    }


def _filtered(rows: list[dict[str, Any]], filters: Mapping[str, set[str]]) -> list[dict[str, Any]]:
    return [
        row for row in rows if all(row[name] in accepted for name, accepted in filters.items() if name in row)
    ]


def _model_json(status: ModelStatus) -> dict[str, Any]:
    evaluation = status.last_evaluation
    return {
        "name": status.name,
        "source_up": status.source_up,
        "interval_seconds": status.interval_seconds,
        "last_success": _iso_z_or_none(status.last_success),
        "last_attempt": _iso_z_or_none(status.last_attempt),
        "last_error": redact(status.last_error) if status.last_error else None,
        "evaluated_at": _iso_z_or_none(evaluation.evaluated_at) if evaluation else None,
        "evaluations_total": status.evaluations_total,
        "failures_total": status.failures_total,
        "rows_read_total": status.rows_read_total,
        "rows_rejected_total": dict(status.rows_rejected_total),
        "last_duration_seconds": finite_or_none(status.last_duration_seconds),
        "windows": [_window_json(w) for w in evaluation.windows] if evaluation else [],
    }


def _window_json(w: WindowResult) -> dict[str, Any]:
    return {
        "window": w.window,
        "start": _iso_z_or_none(w.start),
        "end": _iso_z_or_none(w.end),
        "label_start": _iso_z_or_none(w.label_start),
        "label_end": _iso_z_or_none(w.label_end),
        "n_rows": w.n_rows,
        "n_labeled": w.n_labeled,
        "label_coverage": finite_or_none(w.label_coverage),
        "dropped_groups": dict(w.dropped_groups),
        "missing_group_rows": dict(w.missing_group_rows),
        "groups": [
            {
                "attribute": g.attribute,
                "group": g.group,
                "reference": g.reference,
                "n_rows": g.n_rows,
                "n_labeled": g.n_labeled,
                "label_coverage": finite_or_none(g.label_coverage),
            }
            for g in w.groups
        ],
    }


def _alert_json(alert: ActiveAlert) -> dict[str, Any]:
    return {
        "labels": dict(alert.labels),
        "annotations": dict(alert.annotations),
        "state": alert.state,
        "active_since": _iso_z_or_none(alert.active_since),
        "firing_since": _iso_z_or_none(alert.firing_since),
        "value": finite_or_none(alert.value),
    }


def redact(text: str) -> str:
    """``text`` with URL passwords masked: ``postgresql://u:secret@h`` -> ``postgresql://u:***@h``."""
    return _URL_PASSWORD.sub(r"\g<keep>***@", text)


def _iso_z_or_none(t: datetime | None) -> str | None:
    return None if t is None else iso_z(t)


def _dumps(obj: Any) -> bytes:
    # allow_nan=False: a NaN that slipped past finite_or_none fails loudly, not as invalid JSON.
    return json.dumps(obj, allow_nan=False, ensure_ascii=False).encode("utf-8")


# --------------------------------------------------------------------------------------------------------
# /
# --------------------------------------------------------------------------------------------------------


def landing_page(snapshot: Snapshot) -> str:
    """A small HTML overview: per model, its source, last evaluation and state counts."""
    rows = "".join(_model_row(status, snapshot.alerts) for status in snapshot.models.values())
    links = "".join(
        f'<li><a href="{path}">{path}</a> - {html.escape(what)}</li>'
        for path, what in (
            ("/metrics", "Prometheus metrics"),
            ("/api/v1/results", "latest results as JSON"),
            ("/healthz", "liveness"),
            ("/readyz", "readiness"),
        )
    )
    columns = ("model", "source", "last evaluation", "alerts", *STATES)
    headers = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'><title>fairwatch</title></head><body>"
        "<h1>fairwatch</h1>"
        f"<p>Snapshot of {html.escape(_iso_z_or_none(snapshot.created_at) or 'never')}; "
        f"{len(snapshot.alerts)} active alert(s).</p>"
        f"<table><tr>{headers}</tr>{rows}</table>"
        f"<ul>{links}</ul></body></html>\n"
    )


def _model_row(status: ModelStatus, alerts: tuple[ActiveAlert, ...]) -> str:
    evaluation = status.last_evaluation
    counts: Counter[str] = Counter()
    if evaluation is not None:
        counts.update(v.state for w in evaluation.windows for v in w.values)
    n_alerts = sum(1 for a in alerts if a.labels.get("model") == status.name)
    source = "up" if status.source_up else f"down: {redact(status.last_error or '')}"
    cells = [
        status.name,
        source,
        (_iso_z_or_none(evaluation.evaluated_at) if evaluation else None) or "never",
        str(n_alerts),
        *(str(counts[state]) for state in STATES),
    ]
    return "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"


# --------------------------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------------------------


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    """A thread per request, as prometheus_client's server."""

    daemon_threads = True  # a slow client never blocks shutdown
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Mostly clients hanging up mid-response: not worth a traceback on stderr.
        logger.debug("error serving %s", client_address, exc_info=True)


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)


class ServerHandle:
    """A running server: ``.port``, ``.url`` and ``.shutdown()`` (also a context manager)."""

    def __init__(self, server: WSGIServer, thread: threading.Thread, host: str) -> None:
        self._server = server
        self._thread = thread
        self.host = host
        self.port: int = server.server_address[1]

    @property
    def url(self) -> str:
        """Base URL, without trailing slash; a wildcard host is reached over loopback."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    def shutdown(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def serve(app: WSGIApplication, host: str, port: int) -> ServerHandle:
    """Serve ``app`` on ``host:port`` from a background daemon thread (port 0: any free port)."""
    family = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]

    class Server(_ThreadingWSGIServer):
        address_family = family  # IPv6 hosts need AF_INET6

    try:
        server = make_server(host, port, app, server_class=Server, handler_class=_QuietHandler)
    except OSError as exc:
        raise ConfigError(f"server: cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    # shutdown() waits for the next poll: 0.1 s keeps stopping quick at ten wake-ups a second.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="fairwatch-http", daemon=True
    )
    thread.start()
    handle = ServerHandle(server, thread, host)
    logger.info("serving on %s", handle.url)
    return handle
