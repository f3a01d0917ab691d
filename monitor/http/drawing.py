"""Answers drawn once per state, one at a time, within a share of the clock: HTTP cannot starve evaluations.

The evaluations and the HTTP server share one interpreter, so what the server computes is time the
evaluations wait for. Three rules bound it, whatever clients do:

- an answer that computes (the live view, ``/api/v1/results``, ``/api/v1/history``, ``/api/v1/power``)
  is kept for as long as what it was drawn from stays the same - its *state*: the snapshot, the
  history's version, the page's ETag - and shared by every client asking the same thing
  (:class:`CachedApp`);
- answers are drawn one at a time, server-wide, and drawing takes at most ``share`` of the wall clock:
  after a drawing that took *d* seconds the next may start *d* (1/share - 1) seconds later
  (:class:`Drawing`);
- while the budget holds a new drawing up, a client gets the last drawing of what it asked for (a
  page at most a few refreshes old) at once; one asking for something never drawn waits its turn,
  and beyond :data:`MAX_WAITING` such clients the answer is ``503`` with ``Retry-After``.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Generic, TypeVar
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

if TYPE_CHECKING:
    from _typeshed import OptExcInfo

__all__ = ["DRAWING_SHARE", "MAX_WAITING", "CachedApp", "Drawing", "capture"]

#: The share of the wall clock that drawing answers may take.
DRAWING_SHARE = 0.25
#: Requests waiting for a first drawing of what they asked; beyond, 503 at once.
MAX_WAITING = 4
#: Distinct requests (query string, negotiation headers) kept per route.
MAX_KEPT = 64

T = TypeVar("T")
# A rendered response: status, headers, body.
Response = tuple[str, list[tuple[str, str]], bytes]
State = tuple[object, ...]

_BUSY = b"busy drawing other answers, retry\n"


class Drawing(Generic[T]):
    """One drawing at a time, all of them within ``share`` of the clock."""

    def __init__(
        self,
        share: float = DRAWING_SHARE,
        *,
        max_waiting: int = MAX_WAITING,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"share must lie in (0, 1], got {share}")
        self._share = share
        self._max_waiting = max_waiting
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._waiting = 0
        self._waiting_lock = threading.Lock()
        self._next = -float("inf")  # when the next drawing may start

    def draw(self, compute: Callable[[], T], *, stale: T | None, drawn: Callable[[], T | None]) -> T | None:
        """``compute()``, when the budget allows; else ``stale`` at once if there is one. ``drawn()``
        is asked first once it is this request's turn (another may have drawn the same meanwhile).
        None: too many requests already wait for a first drawing (the caller answers 503)."""
        if stale is not None:
            if not self._lock.acquire(blocking=False):
                return stale  # another drawing is under way
            if self._clock() < self._next:
                self._lock.release()
                return stale
        else:
            with self._waiting_lock:
                if self._waiting >= self._max_waiting:
                    return None
                self._waiting += 1
            try:
                self._lock.acquire()
            finally:
                with self._waiting_lock:
                    self._waiting -= 1
        try:
            done = drawn()
            if done is not None:
                return done
            wait = self._next - self._clock()
            if wait > 0:
                self._sleep(wait)
            began = self._clock()
            result = compute()
            ended = self._clock()
            self._next = ended + (ended - began) * (1 / self._share - 1)
            return result
        finally:
            self._lock.release()


class CachedApp:
    """Another WSGI app's answers, kept per request for as long as their state stays the same and
    drawn through ``drawing``.

    ``state(environ)`` is a tuple of what the answer is drawn from, compared element by element: by
    identity (the snapshot is immutable and swapped by reference; compared as an object, not by its
    ``id()``, which may be reused), or by value for numbers and strings (a version, an ETag). Its last
    element is the answer's kind (error details shown or not): a stale answer, served while the
    budget holds a drawing up, is one of the same kind. An
    answer with an ``ETag`` header is ``304 Not Modified`` to a request whose ``If-None-Match`` names it.
    """

    def __init__(
        self,
        app: WSGIApplication,
        state: Callable[[WSGIEnvironment], State],
        drawing: Drawing[Response],
        *,
        max_kept: int = MAX_KEPT,
    ) -> None:
        self._app = app
        self._state = state
        self._drawing = drawing
        self._max_kept = max_kept
        self._kept: OrderedDict[tuple[str, str, str], tuple[State, Response]] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        key = (
            environ.get("QUERY_STRING", ""),
            environ.get("HTTP_ACCEPT", ""),
            environ.get("HTTP_ACCEPT_ENCODING", ""),
        )
        state = self._state(environ)
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and _same(kept[0], state):
            response = kept[1]
        else:

            def drawn() -> Response | None:
                with self._lock:
                    again = self._kept.get(key)
                return again[1] if again is not None and _same(again[0], state) else None

            # a stale answer only of the same kind: the last element of a state (the error details
            # shown or not) never changes under a client's feet
            stale = kept[1] if kept is not None and _same(kept[0][-1:], state[-1:]) else None
            found = self._drawing.draw(lambda: capture(self._app, environ), stale=stale, drawn=drawn)
            if found is None:
                return _busy(start_response)
            response = found
            if kept is None or response is not kept[1]:
                with self._lock:
                    self._kept[key] = (state, response)
                    self._kept.move_to_end(key)
                    while len(self._kept) > self._max_kept:
                        self._kept.popitem(last=False)
        status, headers, body = response
        etag = next((v for k, v in headers if k == "ETag"), None)
        if etag is not None and environ.get("HTTP_IF_NONE_MATCH") == etag:
            kept_headers = ("ETag", "Cache-Control", "Vary")  # a 304 says what the 200 would (RFC 9110)
            start_response("304 Not Modified", [(k, v) for k, v in headers if k in kept_headers])
            return []
        start_response(status, list(headers))
        return [body]


def _same(kept: State, now: State) -> bool:
    return len(kept) == len(now) and all(
        a is b or (isinstance(a, int | str) and a == b) for a, b in zip(kept, now, strict=True)
    )


def _busy(start_response: StartResponse) -> Iterable[bytes]:
    start_response(
        "503 Service Unavailable",
        [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(_BUSY))),
            ("Retry-After", "1"),
        ],
    )
    return [_BUSY]


def capture(app: WSGIApplication, environ: WSGIEnvironment) -> Response:
    """Run ``app`` once and keep what it answered, with the length of the body it produced."""
    captured: list[tuple[str, list[tuple[str, str]]]] = []

    def start_response(
        status: str, headers: list[tuple[str, str]], exc_info: OptExcInfo | None = None
    ) -> Callable[[bytes], object]:
        captured[:] = [(status, headers)]
        return lambda data: None

    chunks = app(environ, start_response)
    try:
        body = b"".join(chunks)
    finally:
        if hasattr(chunks, "close"):  # PEP 3333: the server closes what the application returned
            chunks.close()
    ((status, headers),) = captured
    kept = [(k, v) for k, v in headers if k.lower() != "content-length"]
    return status, [*kept, ("Content-Length", str(len(body)))], body
