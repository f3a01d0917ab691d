"""The HTTP surface: a WSGI app and a small threaded server to run it.

Routes (GET and HEAD; other methods get 405, unknown paths 404):

- ``/metrics``: text or OpenMetrics by ``Accept``, gzip by ``Accept-Encoding``, rendered once
  per snapshot when the monitor publishes it (:class:`MetricsEndpoint`);
- ``/healthz``: the process is alive; ``/readyz``: 200 once ``ready()``, else 503;
- ``/api/v1/results``: the latest snapshot as JSON, optionally filtered;
- ``/api/v1/power``: how many rows and days each alert needs to detect a departure, from the
  latest evaluation (``fairwatch power``'s figures);
- ``/api/v1/history``: the kept history of each judged value (:class:`monitor.service.history.History`);
- ``/``: the live view of one model's window (:mod:`monitor.http.live`), refreshing itself;
  ``/static/`` its script, style sheet and icon.

With ``server.web_config_file`` (exporter-toolkit's format, :mod:`monitor.http.web_config`) the
server speaks TLS and :func:`guard` asks every request for basic-auth credentials, adds the
file's headers and applies its rate limit.

Every route reads the snapshot reference once and only formats it (the power plans are
computed once per snapshot).
"""

from monitor.http.guard import PROBES, guard
from monitor.http.live import LiveView
from monitor.http.metrics import MetricsEndpoint
from monitor.http.routes import make_app
from monitor.http.server import ServerHandle, serve
from monitor.http.web_config import WebConfigFile, load_web_config
from monitor.outputs.api import redact, results_data

__all__ = [
    "PROBES",
    "LiveView",
    "MetricsEndpoint",
    "ServerHandle",
    "WebConfigFile",
    "guard",
    "load_web_config",
    "make_app",
    "redact",
    "results_data",
    "serve",
]
