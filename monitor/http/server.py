"""A small WSGI server with a bounded pool of worker threads, run from a background thread.

Connections are accepted into a listen backlog of :data:`LISTEN_BACKLOG` (socketserver's default
of 5 overflows under a few dozen concurrent scrapers: the kernel drops SYNs and clients retry
after 1, 3, 7 s) and handed to :data:`WORKERS` threads through a queue of
:data:`MAX_QUEUED` connections. When that queue is full the server answers ``503`` at once
rather than queueing without bound. A connection must deliver its whole request line and headers
within :data:`CONNECTION_TIMEOUT` seconds and finish the whole exchange within
:data:`EXCHANGE_TIMEOUT`: a per-read socket timeout alone frees a worker from a client that stops,
not from one that sends a byte every few seconds, so a watchdog thread shuts such connections down.

While evaluations run (``busy()``), the workers together may use at most :data:`HTTP_SHARE` of a
CPU on average (:class:`CpuBudget`, measured per exchange with ``time.thread_time``): a worker waits
- sleeping, not holding the interpreter - until the budget has refilled before it takes the next
request, so clients that ask as fast as they are answered slow down instead of the evaluations.
Idle, the server answers as fast as it can. At most :data:`ANSWERING` other requests are answered at
once (the rest wait, asleep), so a scrape competes for the interpreter with those few, not with
every worker. :data:`PRE_RENDERED` paths never wait.

With a web configuration (:mod:`monitor.http.web_config`) that holds ``tls_server_config``, every
connection is TLS: the handshake runs in the worker, under the same deadline as the headers, with
the context in force when the connection arrived (a renewed certificate serves the next
connection); a client speaking plain HTTP is answered ``400`` in plain text, as Go's servers do.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import math
import queue
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import WSGIApplication

from monitor.core.errors import ConfigError
from monitor.http.web_config import WebConfigFile

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
#: CPU share the HTTP workers may use together while evaluations run.
HTTP_SHARE = 0.25
#: Requests other than the pre-rendered ones answered at once (the rest wait, asleep, for their turn).
ANSWERING = 2
#: Requests answered from bytes made before the request (a scrape, the probes; exactly these, no query
#: string): they never wait for the budget, so that Prometheus and the kubelet are answered at once
#: however busy the rest is.
PRE_RENDERED = frozenset({"/metrics", "/healthz", "/readyz"})

_PLAIN_TO_TLS = (
    b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"Client sent an HTTP request to an HTTPS server.\n"
)
# the first bytes of a plain HTTP request (a TLS handshake begins with byte 0x16)
_HTTP_METHODS = (b"GET ", b"HEAD", b"POST", b"PUT ", b"DELE", b"OPTI", b"PATC", b"CONN", b"TRAC")

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
                    # below TLS (SSLSocket.shutdown drops the TLS state first: a write in between
                    # would go out in plain text): the worker's blocked read or write returns
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)


class CpuBudget:
    """CPU seconds the HTTP workers may spend: refilled at ``share`` per second up to ``burst``, spent
    by each exchange; while ``busy()``, a worker waits for a positive balance before the next one."""

    def __init__(
        self,
        share: float = HTTP_SHARE,
        *,
        burst: float = 0.25,
        busy: Callable[[], bool] = lambda: False,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._share = share
        self._burst = burst
        self._busy = busy
        self._clock = clock
        self._sleep = sleep
        self._balance = burst
        self._at = clock()
        self._lock = threading.Lock()
        self.waited = 0.0  # seconds workers spent waiting for the budget

    def _refill(self) -> float:
        now = self._clock()
        self._balance = min(self._burst, self._balance + (now - self._at) * self._share)
        self._at = now
        return self._balance

    def wait(self) -> None:
        """Return once the balance is positive, or at once while no evaluation runs."""
        while self._busy():
            with self._lock:
                balance = self._refill()
            if balance > 0:
                return
            pause = min(0.1, -balance / self._share + 0.001)
            self.waited += pause
            self._sleep(pause)

    def spend(self, seconds: float) -> None:
        with self._lock:
            self._refill()
            self._balance -= seconds


class _PooledWSGIServer(WSGIServer):
    """Requests served by a fixed pool of threads (not one new thread each, without bound)."""

    request_queue_size = LISTEN_BACKLOG
    allow_reuse_address = True

    workers = WORKERS
    max_queued = MAX_QUEUED
    request_timeout = CONNECTION_TIMEOUT
    exchange_timeout = EXCHANGE_TIMEOUT
    web: WebConfigFile | None = None  # TLS, when its file holds tls_server_config
    budget: CpuBudget = CpuBudget()  # replaced per server by serve()
    # requests other than PRE_RENDERED being answered at once: a scrape competes for the interpreter
    # with at most these, not with every worker (replaced per server by serve())
    answering: threading.BoundedSemaphore = threading.BoundedSemaphore(ANSWERING)

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
            if self.web is None or self.web.current().tls is None:  # a TLS client cannot read plain text
                try:
                    request.settimeout(1.0)
                    request.sendall(_BUSY)
                except OSError:
                    pass
            self.shutdown_request(request)

    def _work(self) -> None:
        while (item := self._pending.get()) is not None:
            request, client_address = item
            began = time.thread_time()
            self.watchdog.arm(request, self.request_timeout)  # until the headers are in
            try:
                if self.web is not None and (context := self.web.current()).tls is not None:
                    request, ready = self._handshake(request, context.tls, context.allowed_sans)
                    if not ready:
                        continue
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.watchdog.disarm(request)
                self.shutdown_request(request)
                self.budget.spend(time.thread_time() - began)

    def _handshake(
        self, request: socket.socket, context: ssl.SSLContext, allowed_sans: frozenset[str]
    ) -> tuple[socket.socket, bool]:
        """The connection to use and close from now on (the TLS one once wrapped, armed with the
        headers' deadline) and whether its handshake succeeded."""
        try:
            request.settimeout(self.request_timeout)
            first = request.recv(4, socket.MSG_PEEK)
            if first.upper().startswith(_HTTP_METHODS):
                request.sendall(_PLAIN_TO_TLS)
                return request, False
            tls = context.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        except OSError as exc:
            logger.debug("TLS connection failed before the handshake: %s", exc)
            return request, False
        self.watchdog.disarm(request)  # wrap_socket took over its file descriptor
        self.watchdog.arm(tls, self.request_timeout)
        try:
            tls.do_handshake()
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            logger.debug("TLS handshake failed: %s", exc)
            return tls, False
        if allowed_sans and not _san_allowed(tls.getpeercert(), allowed_sans):
            logger.debug("TLS client certificate names none of client_allowed_sans")
            return tls, False
        return tls, True

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


def _san_allowed(cert: dict[str, Any] | None, allowed: frozenset[str]) -> bool:
    """Whether a verified client certificate names one of ``allowed`` (DNS, IP, e-mail or URI); IP
    addresses compare as addresses (Python spells IPv6 SANs ``2001:DB8:0:0:...``)."""
    addresses = {_address(name) for name in allowed} - {None}
    for kind, value in (cert or {}).get("subjectAltName", ()):
        if value in allowed or (kind == "IP Address" and _address(value) in addresses):
            return True
    return False


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


class _QuietHandler(WSGIRequestHandler):
    timeout = CONNECTION_TIMEOUT  # StreamRequestHandler sets it on the connection
    server: _PooledWSGIServer

    _answering = False  # holds one of the server's answering slots

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        if parsed:  # the headers are in: the rest of the exchange gets the longer deadline
            if self.path not in PRE_RENDERED:  # /metrics?name[]=... renders afresh: it waits
                self.server.budget.wait()
                self.server.answering.acquire()
                self._answering = True
            self.server.watchdog.arm(self.connection, self.server.exchange_timeout)
        return parsed

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if self._answering:
                self._answering = False
                self.server.answering.release()

    def get_environ(self) -> dict[str, Any]:
        environ = super().get_environ()
        if isinstance(self.connection, ssl.SSLSocket):
            environ["HTTPS"] = "on"  # wsgi.url_scheme: https
        return environ

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)


class ServerHandle:
    """A running server: ``.port``, ``.url`` and ``.shutdown()`` (also a context manager)."""

    def __init__(self, server: WSGIServer, thread: threading.Thread, host: str, scheme: str = "http") -> None:
        self._server = server
        self._thread = thread
        self.host = host
        self.scheme = scheme
        self.port: int = server.server_address[1]

    @property
    def url(self) -> str:
        """Base URL, without trailing slash; a wildcard host is reached over loopback."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        if ":" in host:
            host = f"[{host}]"
        return f"{self.scheme}://{host}:{self.port}"

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
    web: WebConfigFile | None = None,
    busy: Callable[[], bool] = lambda: False,
    http_share: float = HTTP_SHARE,
) -> ServerHandle:
    """Serve ``app`` on ``host:port`` from a background daemon thread (port 0: any free port).

    ``web``: the web configuration whose ``tls_server_config`` (if any) makes every connection TLS;
    its authentication and headers are :func:`monitor.http.guard.guard`'s, around ``app``.

    ``busy``: whether evaluations are running; meanwhile the workers keep to ``http_share`` of a CPU.
    """
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
    Server.web = web
    Server.budget = CpuBudget(http_share, busy=busy)
    Server.answering = threading.BoundedSemaphore(ANSWERING)

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
    tls = web is not None and web.current().tls is not None
    handle = ServerHandle(server, thread, host, "https" if tls else "http")
    logger.info("serving on %s", handle.url)
    return handle
