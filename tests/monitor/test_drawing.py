"""Answers drawn once per state, one at a time, within a share of the clock (monitor.http.drawing)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from wsgiref.types import StartResponse, WSGIEnvironment

import pytest

from monitor.http.drawing import CachedApp, Drawing, Response


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_budget_spaces_drawings_by_their_cost() -> None:
    clock = FakeClock()
    drawing: Drawing[str] = Drawing(0.25, clock=clock, sleep=clock.sleep)

    def compute(cost: float, value: str) -> Callable[[], str]:
        def run() -> str:
            clock.now += cost
            return value

        return run

    assert drawing.draw(compute(2.0, "first"), stale=None, drawn=lambda: None) == "first"
    # 2 s of drawing at a 25% share: the next may start 6 s after it ended
    clock.now += 1.0
    assert drawing.draw(compute(1.0, "second"), stale="old", drawn=lambda: None) == "old"  # at once, stale
    assert clock.slept == []
    assert drawing.draw(compute(1.0, "second"), stale=None, drawn=lambda: None) == "second"  # waits its turn
    assert clock.slept == [pytest.approx(5.0)]
    # drawn meanwhile by another request: nothing drawn, nothing spent
    clock.now += 100
    assert drawing.draw(compute(9.0, "again"), stale=None, drawn=lambda: "theirs") == "theirs"
    assert drawing.draw(compute(0.0, "free"), stale="old", drawn=lambda: None) == "free"


def test_beyond_the_waiting_limit_the_answer_is_none() -> None:
    drawing: Drawing[str] = Drawing(1.0, max_waiting=2)
    release = threading.Event()
    started = threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        return "slow"

    results: list[str | None] = []
    first = threading.Thread(
        target=lambda: results.append(drawing.draw(slow, stale=None, drawn=lambda: None))
    )
    first.start()
    assert started.wait(10)
    waiters = [
        threading.Thread(
            target=lambda: results.append(drawing.draw(lambda: "w", stale=None, drawn=lambda: None))
        )
        for _ in range(2)
    ]
    for w in waiters:
        w.start()
    deadline = time.monotonic() + 10
    while drawing._waiting < 2 and time.monotonic() < deadline:  # both are queued for the lock
        time.sleep(0.01)
    assert drawing.draw(lambda: "late", stale=None, drawn=lambda: None) is None  # a third waiter: refused
    assert drawing.draw(lambda: "late", stale="kept", drawn=lambda: None) == "kept"  # stale needs no wait
    release.set()
    for t in (first, *waiters):
        t.join(10)
    assert sorted(r for r in results if r is not None) == ["slow", "w", "w"]


class CountingApp:
    def __init__(self, delay: float = 0.0) -> None:
        self.calls = 0
        self.delay = delay
        self.body = b"v1"

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        self.calls += 1
        time.sleep(self.delay)
        start_response("200 OK", [("Content-Type", "text/plain"), ("ETag", '"' + self.body.decode() + '"')])
        return [self.body]


def _call(app: CachedApp, query: str = "", if_none_match: str | None = None) -> tuple[str, bytes]:
    seen: list[str] = []
    environ: WSGIEnvironment = {"QUERY_STRING": query}
    if if_none_match:
        environ["HTTP_IF_NONE_MATCH"] = if_none_match
    body = b"".join(app(environ, lambda status, headers, exc_info=None: seen.append(status)))  # type: ignore[arg-type, func-returns-value]
    return seen[0], body


def test_an_answer_is_drawn_once_per_state_and_shared() -> None:
    state: list[object] = [object()]
    inner = CountingApp(delay=0.05)
    app = CachedApp(inner, lambda environ: (state[0],), Drawing[Response](1.0))
    threads = [threading.Thread(target=_call, args=(app,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert inner.calls == 1  # eight clients at once, one drawing
    assert _call(app) == ("200 OK", b"v1") and inner.calls == 1
    assert _call(app, "model=b")[1] == b"v1" and inner.calls == 2  # another request: its own drawing
    assert _call(app, if_none_match='"v1"') == ("304 Not Modified", b"")
    state[0] = object()  # a new snapshot: drawn again
    inner.body = b"v2"
    assert _call(app) == ("200 OK", b"v2") and inner.calls == 3
    assert _call(app, if_none_match='"v1"') == ("200 OK", b"v2")


def test_over_budget_the_last_drawing_is_served_at_once() -> None:
    clock = FakeClock()
    state: list[object] = [object()]
    inner = CountingApp()

    class Costly(CountingApp):
        def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
            clock.now += 1.0  # each drawing costs a second
            return inner(environ, start_response)

    details = [True]  # the last element of a state: the answer's kind
    app = CachedApp(
        Costly(),
        lambda environ: (state[0], details[0]),
        Drawing[Response](0.25, clock=clock, sleep=clock.sleep),
    )
    assert _call(app)[1] == b"v1"
    state[0], inner.body = object(), b"v2"
    assert _call(app)[1] == b"v1" and inner.calls == 1  # stale: the budget holds the drawing up
    assert clock.slept == []
    clock.now += 3.0
    assert _call(app)[1] == b"v2" and inner.calls == 2  # the budget allows it again
    # another kind (error details now hidden): never the stale one, the request waits its turn
    details[0], inner.body = False, b"v3"
    assert _call(app)[1] == b"v3" and inner.calls == 3
    assert clock.slept == [pytest.approx(3.0)]


def test_the_cache_is_bounded() -> None:
    inner = CountingApp()
    app = CachedApp(inner, lambda environ: (), Drawing[Response](1.0), max_kept=3)
    for q in ("a", "b", "c", "d"):
        _call(app, q)
    assert inner.calls == 4
    _call(app, "d")
    assert inner.calls == 4  # kept
    _call(app, "a")
    assert inner.calls == 5  # the oldest was let go


def test_the_cpu_budget_holds_workers_only_while_evaluations_run() -> None:
    from monitor.http.server import CpuBudget

    clock = FakeClock()
    busy = [True]
    budget = CpuBudget(0.25, burst=0.25, busy=lambda: busy[0], clock=clock, sleep=clock.sleep)
    budget.wait()
    assert clock.slept == []  # a full balance
    budget.spend(0.75)  # 0.5 s in debt: two seconds of refill at a quarter CPU
    budget.wait()
    assert sum(clock.slept) == pytest.approx(2.0, abs=0.01)
    assert 1.9 < budget.waited < 2.1
    budget.spend(1.0)
    busy[0] = False  # no evaluation running: no wait, whatever the balance
    slept = len(clock.slept)
    budget.wait()
    assert len(clock.slept) == slept
    # the balance refills up to the burst, never beyond
    clock.now += 1000
    busy[0] = True
    budget.spend(0.3)  # 0.25 - 0.3 < 0: waits again
    budget.wait()
    assert sum(clock.slept[slept:]) == pytest.approx(0.2, abs=0.01)


def test_a_scrape_never_waits_for_the_answering_slots() -> None:
    """At most ANSWERING requests other than /metrics and the probes are answered at once; the rest
    wait asleep for a turn, and a scrape is answered meanwhile."""
    import urllib.request

    from monitor.http.server import ANSWERING, serve

    release = threading.Event()
    inside: list[str] = []

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ["PATH_INFO"]
        if path == "/slow":
            inside.append(path)
            release.wait(20)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [path.encode()]

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    server = serve(app, "127.0.0.1", 0)
    try:
        get = lambda path: opener.open(server.url + path, timeout=30).read()  # noqa: E731
        slow = [threading.Thread(target=get, args=("/slow",)) for _ in range(ANSWERING)]
        for t in slow:
            t.start()
        deadline = time.monotonic() + 10
        while len(inside) < ANSWERING and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(inside) == ANSWERING  # every slot taken
        waiting: list[bytes] = []
        queued = threading.Thread(target=lambda: waiting.append(get("/api/v1/results")))
        queued.start()
        assert get("/metrics") == b"/metrics"  # a scrape: at once
        assert get("/healthz") == b"/healthz"
        queued.join(0.5)
        assert queued.is_alive() and not waiting  # the third waits for a turn
        release.set()
        queued.join(20)
        assert waiting == [b"/api/v1/results"]
        for t in slow:
            t.join(20)
    finally:
        release.set()
        server.shutdown()
