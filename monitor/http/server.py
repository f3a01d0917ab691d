"""A small WSGI server with a bounded pool of worker threads, run from a background thread.

Connections are accepted into a listen backlog of :data:`LISTEN_BACKLOG` (socketserver's default
of 5 overflows under a few dozen concurrent scrapers: the kernel drops SYNs and clients retry
after 1, 3, 7 s) and handed to :data:`WORKERS` threads through a queue of
:data:`MAX_QUEUED` connections. When that queue is full the server answers ``503`` at once
rather than queueing without bound. A connection must deliver its whole request line and headers
within :data:`CONNECTION_TIMEOUT` seconds and finish the whole exchange within
:data:`EXCHANGE_TIMEOUT`: a per-read socket timeout alone frees a worker from a client that stops,
not from one that sends a byte every few seconds, so a watchdog thread shuts such connections down.
"""

from __future__ import annotations

import contextlib
import logging
import math
import queue
import socket
import threading
import time
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import WSGIApplication

from monitor.core.errors import ConfigError

__all__ = ["ServerHandle", "serve"]

logger = logging.getLogger(__name__)


#: Pending connections the kernel keeps (capped by ``net.core.somaxconn``).
LISTEN_BACKLOG = 1024
#: Threads serving requests.
WORKERS = 32
#: Accepted connections waiting for a worker; beyond this the server answers 503.
MAX_QUEUED = 512
#: Seconds a connection has to send its request line and headers (and may sit idle in any read or write).
CONNECTION_TIMEOUT = 10.0
#: Seconds a whole exchange (request and answer) may take, however steadily bytes trickle.
EXCHANGE_TIMEOUT = 60.0

_BUSY = (
    b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Retry-After: 1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy\n"
)


class _Watchdog:
    """Shuts down connections that outlive their deadline; one thread for the whole server."""

    _TICK = 0.25

    def __init__(self) -> None:
        self._deadlines: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self.expired = 0  # connections cut off
        self._thread = threading.Thread(target=self._run, name="fairwatch-http-watchdog", daemon=True)
        self._thread.start()

    def arm(self, sock: socket.socket, seconds: float) -> None:
        with self._lock:
            self._deadlines[sock] = time.monotonic() + seconds

    def disarm(self, sock: socket.socket) -> None:
        with self._lock:
            self._deadlines.pop(sock, None)

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.wait(self._TICK):
            now = time.monotonic()
            with self._lock:
                late = [sock for sock, deadline in self._deadlines.items() if deadline <= now]
                for sock in late:
                    del self._deadlines[sock]
                self.expired += len(late)
            for sock in late:
                with contextlib.suppress(OSError):  # closed meanwhile
                    sock.shutdown(socket.SHUT_RDWR)  # the worker's blocked read or write returns


class _PooledWSGIServer(WSGIServer):
    """Requests served by a fixed pool of threads (not one new thread each, without bound)."""

    request_queue_size = LISTEN_BACKLOG
    allow_reuse_address = True

    workers = WORKERS
    max_queued = MAX_QUEUED
    request_timeout = CONNECTION_TIMEOUT
    exchange_timeout = EXCHANGE_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.watchdog = _Watchdog()
        self._pending: queue.Queue[tuple[Any, Any] | None] = queue.Queue(self.max_queued)
        self.rejected = 0  # connections answered 503 because every worker was busy
        self._last_busy_log = -math.inf
        self._workers: list[threading.Thread] = []  # server_close runs inside __init__ when the bind fails
        super().__init__(*args, **kwargs)
        self._workers = [
            threading.Thread(target=self._work, name=f"fairwatch-http-{i}", daemon=True)
            for i in range(self.workers)
        ]
        for worker in self._workers:
            worker.start()

    def process_request(self, request: Any, client_address: Any) -> None:
        try:
            self._pending.put_nowait((request, client_address))
        except queue.Full:
            self.rejected += 1
            now = time.monotonic()
            if now - self._last_busy_log >= 60:  # at most a line a minute
                self._last_busy_log = now
                logger.warning(
                    "HTTP server busy: %d connection(s) answered 503 so far (%d waiting for %d workers)",
                    self.rejected,
                    self.max_queued,
                    self.workers,
                )
            try:
                request.settimeout(1.0)
                request.sendall(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)

    def _work(self) -> None:
        while (item := self._pending.get()) is not None:
            request, client_address = item
            self.watchdog.arm(request, self.request_timeout)  # until the headers are in
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.watchdog.disarm(request)
                self.shutdown_request(request)

    def server_close(self) -> None:
        super().server_close()
        self.watchdog.stop()
        for _ in self._workers:
            try:
                self._pending.put_nowait(None)
            except queue.Full:
                break  # workers are daemons: they go with the process

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Mostly clients hanging up mid-response: not worth a traceback on stderr.
        logger.debug("error serving %s", client_address, exc_info=True)


class _QuietHandler(WSGIRequestHandler):
    timeout = CONNECTION_TIMEOUT  # StreamRequestHandler sets it on the connection
    server: _PooledWSGIServer

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        if parsed:  # the headers are in: the rest of the exchange gets the longer deadline
            self.server.watchdog.arm(self.connection, self.server.exchange_timeout)
        return parsed

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


def serve(
    app: WSGIApplication,
    host: str,
    port: int,
    *,
    workers: int = WORKERS,
    max_queued: int = MAX_QUEUED,
    connection_timeout: float = CONNECTION_TIMEOUT,
    exchange_timeout: float = EXCHANGE_TIMEOUT,
) -> ServerHandle:
    """Serve ``app`` on ``host:port`` from a background daemon thread (port 0: any free port)."""
    try:  # a host no resolver knows is a config error too (a reload then keeps the running config)
        family = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][
            0
        ]
    except OSError as exc:
        raise ConfigError(f"server: cannot listen on {host}:{port}: {exc.strerror or exc}") from exc

    class Server(_PooledWSGIServer):
        address_family = family  # IPv6 hosts need AF_INET6

    Server.workers, Server.max_queued = workers, max_queued
    Server.request_timeout, Server.exchange_timeout = connection_timeout, exchange_timeout

    class Handler(_QuietHandler):
        timeout = connection_timeout

    try:
        server = make_server(host, port, app, server_class=Server, handler_class=Handler)
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
