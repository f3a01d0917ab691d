"""The demo's pacer: one evaluation at a time, the ticks that fell due meanwhile counted as skipped."""

from __future__ import annotations

import threading

from monitor.cli.demo.pacer import Pacer


def test_slow_evaluations_skip_ticks_and_say_how_many() -> None:
    """Two models due every second, each evaluation taking 2.5 s of a fake clock. By hand:
    a runs 0-2.5 (ticks 1, 2 skipped; next due 3); b runs 2.5-5 (ticks 1-5 skipped; due 6);
    a runs 5-7.5 (ticks 3-7 passed: 4 skipped beyond the one served; due 8); b runs 7.5-10
    (ticks 6-10: 4 skipped; due 11)."""
    now = [0.0]
    done = threading.Event()
    calls: list[tuple[str, float]] = []

    def run(name: str) -> None:
        calls.append((name, now[0]))
        now[0] += 2.5
        if len(calls) == 4:
            pacer.stop()  # from its own thread: no new evaluation after this one
            done.set()

    pacer = Pacer(run, {"a": 1.0, "b": 1.0}, monotonic=lambda: now[0])
    pacer.start()
    assert done.wait(10)
    pacer.stop(timeout=10)
    assert calls == [("a", 0.0), ("b", 2.5), ("a", 5.0), ("b", 7.5)]
    assert dict(pacer.runs) == {"a": 2, "b": 2}
    assert dict(pacer.skipped) == {"a": 2 + 4, "b": 5 + 4}
    assert pacer.summary() == (
        "evaluations: a 2, b 2; 15 tick(s) skipped while an evaluation ran (slowest 2.5 s, interval 1 s)"
    )


def test_an_evaluation_that_raises_does_not_stop_the_others() -> None:
    now = [0.0]
    done = threading.Event()
    calls: list[str] = []

    def run(name: str) -> None:
        calls.append(name)
        now[0] += 1.0
        if len(calls) == 3:
            pacer.stop()
            done.set()
        if name == "a":
            raise RuntimeError("boom")

    pacer = Pacer(run, {"a": 1.0, "b": 1.0}, monotonic=lambda: now[0])
    pacer.start()
    assert done.wait(10)
    pacer.stop(timeout=10)
    assert calls == ["a", "b", "a"]
    assert pacer.runs["b"] == 1
