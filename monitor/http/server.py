"""A small threaded WSGI server, run from a background thread, for the fairwatch app."""

from __future__ import annotations

import logging
import socket
import threading
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import WSGIApplication

from monitor.errors import ConfigError

__all__ = ["ServerHandle", "serve"]

logger = logging.getLogger("monitor.http")


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
