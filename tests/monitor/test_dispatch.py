"""The dispatcher: models served oldest-due first, none starved, none run twice at once, skips counted.

A simulated clock and workers: each submitted evaluation runs when the test says, advancing the clock
by its cost, so that hours of overload take milliseconds and every order is deterministic.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from collections.abc import Callable

import pytest

from monitor.service.dispatch import Dispatcher


class Simulation:
    """``workers`` workers evaluating models whose evaluations cost ``cost(name)`` seconds each."""

    def __init__(self, intervals: dict[str, float], workers: int, cost: Callable[[str], float]) -> None:
        self.now = 0.0
        self.runs: Counter[str] = Counter()
        self.skips: Counter[tuple[str, str]] = Counter()
        self.queue: list[Callable[[], None]] = []
        self.cost = cost
        self.finished: dict[str, list[float]] = {}
        self.dispatcher = Dispatcher(
            intervals,
            workers=workers,
            run=self.run,
            submit=self.queue.append,
            skipped=lambda name, reason, ticks: self.skips.update({(name, reason): ticks}),
            monotonic=lambda: self.now,
        )

    def run(self, name: str) -> None:
        self.runs[name] += 1
        self.now += self.cost(name)
        self.finished.setdefault(name, []).append(self.now)

    def until(self, end: float, idle_step: float = 1.0) -> None:
        """Serve every submitted evaluation in turn (one at a time: the clock is the workers' total
        busy time, the worst case for waiting), ticking every ``idle_step`` of idle time."""
        while self.now < end:
            self.dispatcher.tick()
            if self.queue:
                self.queue.pop(0)()
            else:
                self.now += idle_step


def test_an_overloaded_service_serves_every_model_oldest_due_first() -> None:
    """200 models every 10 s, 0.1 s each: twice the work one worker can do. APScheduler served a
    fixed half of them and never the other; here each gets its share, whatever its place in the config."""
    names = [f"m{i:03d}" for i in range(200)]
    sim = Simulation(dict.fromkeys(names, 10.0), workers=1, cost=lambda _name: 0.1)
    sim.until(1000.0)
    runs = [sim.runs[name] for name in names]
    assert min(runs) >= 45 and max(runs) - min(runs) <= 3, runs  # ~1000 s / 20 s of work per round
    assert all(sim.skips[(name, "busy")] >= 40 for name in names)  # said on /metrics, not silent
    assert not any(reason == "slow" for _, reason in sim.skips)


def test_a_model_is_never_evaluated_twice_at_once_and_its_next_tick_is_still_ahead() -> None:
    sim = Simulation({"a": 10.0}, workers=4, cost=lambda _name: 35.0)
    sim.dispatcher.tick()
    sim.dispatcher.tick()
    assert len(sim.queue) == 1 and sim.dispatcher.running == {"a"}
    sim.queue.pop(0)()  # the start-up evaluation, 35 s: its ticks at 10, 20 and 30 s passed during it
    assert sim.skips == Counter({("a", "slow"): 2})  # the one at 30 s is due at once, not skipped
    sim.dispatcher.tick()
    sim.dispatcher.tick()
    assert len(sim.queue) == 1 and sim.dispatcher.running == {"a"}
    sim.queue.pop(0)()  # the 30 s tick, run from 35 to 70 s: those at 40, 50, 60 and 70 s passed
    assert sim.skips == Counter({("a", "slow"): 5, ("a", "busy"): 1})  # 3 while it ran, 1 as it started late
    assert sim.dispatcher.running == frozenset()
    sim.dispatcher.tick()
    assert not sim.queue  # next due at 80 s: still ahead
    sim.now = 80.0
    sim.dispatcher.tick()
    assert len(sim.queue) == 1


def test_workers_are_never_handed_more_models_than_they_can_run() -> None:
    sim = Simulation(dict.fromkeys("abcdefgh", 10.0), workers=3, cost=lambda _name: 1.0)
    sim.dispatcher.tick()
    assert len(sim.queue) == 3 and sim.dispatcher.running == {"a", "b", "c"}  # config order on a tie
    sim.queue.pop(0)()  # a finishes: its worker takes the next due model at once
    assert sim.dispatcher.running == {"b", "c", "d"}


def test_skipped_ticks_are_said_in_the_log_at_most_every_quarter_hour(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sim = Simulation({"slow": 1.0}, workers=1, cost=lambda _name: 2.5)
    with caplog.at_level(logging.WARNING, logger="monitor.service.dispatch"):
        sim.until(1800.0)
    lines = [r.getMessage() for r in caplog.records]
    assert 2 <= len(lines) <= 3, lines
    assert "model slow:" in lines[0] and "its own evaluation ran longer than its interval" in lines[0]
    assert sum(sim.skips.values()) >= 1000


def test_the_models_ticks_are_spread_over_the_interval_and_each_stays_fresh() -> None:
    """50 models every 60 s whose first evaluation is quick (a whole window in one read) and later
    ones slower and uneven (0.2-1.0 s: panes being built, rechecks): ticks anchored at the first
    round all fell due within its 4 s, and the minute's 30 s of work queued behind them - the last
    model of a burst waited half a minute, and some waited in one minute and not the next (102 s
    between two successes of one model in a real service). Spread over the minute, none waits."""
    import random

    rng = random.Random(7)
    first: set[str] = set()

    def cost(name: str) -> float:
        if name not in first:
            first.add(name)
            return 0.08
        return rng.uniform(0.2, 1.0)

    names = [f"model-{i:02d}" for i in range(50)]
    sim = Simulation(dict.fromkeys(names, 60.0), workers=1, cost=cost)
    sim.until(900.0, idle_step=0.25)
    assert all(14 <= sim.runs[name] <= 16 for name in names), sim.runs
    gaps = [b - a for name in names for a, b in itertools.pairwise(sim.finished[name])]
    assert max(gaps) <= 61.0, max(gaps)  # every model fresh every minute, from its first evaluation on
    assert not sim.skips


def test_a_first_evaluation_counts_the_ticks_it_waited_for_not_those_it_ran_through() -> None:
    """Every model is due at start-up, its ticks then at its phase. A first evaluation that ran
    across its model's phase point (shorter than an interval) skipped nothing; one that waited
    45 s for a worker at a 10 s interval skipped the ticks that passed meanwhile (busy)."""
    sim = Simulation({f"m{i}": 10.0 for i in range(10)}, workers=1, cost=lambda _name: 4.5)
    sim.dispatcher.tick()
    for _ in range(10):  # the first round, one after another (each run hands the worker the next)
        sim.queue.pop(0)()
    assert sim.runs == dict.fromkeys(sim.runs, 1) and len(sim.runs) == 10
    # m0..m9 ran one after another, 4.5 s each: m9 started at 40.5 s; its phase is 9 s
    assert sim.skips[("m9", "busy")] == 3  # its ticks at 9, 19 and 29 s passed while it waited (39 s: served)
    assert sim.skips[("m0", "busy")] == 0 and sim.skips[("m1", "busy")] == 0  # m1: phase 1 s, ran 4.5-9 s
    assert not any(reason == "slow" for _, reason in sim.skips)


def test_a_first_evaluation_that_ran_across_its_phase_point_is_followed_at_once() -> None:
    """m1's phase point (5 s) passes while its start-up evaluation runs (3-6 s): that tick is due at
    once, so its second success follows the first within an interval (the tick after the run, at
    15 s, put 12 s between them at a 10 s interval)."""
    sim = Simulation({"m0": 10.0, "m1": 10.0}, workers=1, cost=lambda _name: 3.0)
    sim.until(30.0, idle_step=0.25)
    assert sim.finished["m1"][:3] == [6.0, 9.0, 18.0]
    assert sim.finished["m0"][:2] == [3.0, 13.0]  # phase 0: served by its first run, next at 10 s
    gaps = [b - a for name in sim.finished for a, b in itertools.pairwise(sim.finished[name])]
    assert max(gaps) <= 10.0 and not sim.skips
