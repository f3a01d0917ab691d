"""Which model a free worker evaluates next: the one whose tick fell due first.

APScheduler gives each job its own timer: with more models than workers, every job falls due at the
same instant, queues in the pool in config order, and a job that waits past its ``misfire_grace_time``
is dropped and requeued at the back - so a fixed part of the config (200 models at ``interval: 10s``
on 8 workers: models 100-199) was never evaluated, however long the service ran. Here one timer
drives every model: four times a second (and whenever an evaluation ends) :meth:`Dispatcher.tick` hands the
free workers the models whose ticks fell due, *oldest due first*, so a model that waited is served
before one that was just evaluated, whatever the config order. A model is never evaluated twice at
once, and never dropped: a tick missed while it waited for a worker (``busy``) or while its own
evaluation ran (``slow``) is counted (``fairwatch_evaluation_skipped_total{model,reason}``) and said
in the log, and the model's next tick is its first one still ahead.

Every model is evaluated at start-up; its ticks then fall at its own *phase* of the interval - the
models spread evenly over it in config order, as Prometheus spreads its targets' scrapes - so that
each interval's work is spread over the interval instead of queueing in one burst. (Ticks anchored
at each model's first evaluation kept the burst: the first round, which reads whole windows, took
12 s for 50 models, the next ones ~30 s of work due within those 12 s - the last model of each
burst waited half a minute, and a model's place in the queue changed from one minute to the next.)
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping

__all__ = ["SKIP_REASONS", "Dispatcher"]

log = logging.getLogger(__name__)

#: Why ticks were skipped: the model waited for a worker, or its own evaluation outlasted its interval.
SKIP_REASONS = ("busy", "slow")
_LOG_EVERY = 900.0  # seconds between log lines about one model's skipped ticks


class Dispatcher:
    """Evaluate each model every ``intervals[name]`` seconds on at most ``workers`` at once.

    ``submit(job)`` runs ``job`` on a worker (the scheduler's thread pool); ``run(name)`` evaluates
    one model and never raises (:meth:`~monitor.service.runner.Runner.run_model`);
    ``skipped(name, reason, ticks)`` records ticks a model missed.
    """

    def __init__(
        self,
        intervals: Mapping[str, float],
        *,
        workers: int,
        run: Callable[[str], object],
        submit: Callable[[Callable[[], None]], object],
        skipped: Callable[[str, str, int], None] = lambda _name, _reason, _ticks: None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self._intervals = dict(intervals)
        self._workers = workers
        self._run = run
        self._submit = submit
        self._skipped = skipped
        self._monotonic = monotonic
        self._lock = threading.Lock()
        now = monotonic()
        self._due = dict.fromkeys(self._intervals, now)  # when each model's next tick falls due
        n = max(1, len(self._intervals))
        # each model's ticks fall at now + phase + k * interval (its first evaluation: at once)
        self._phase = {name: now + i / n * self._intervals[name] for i, name in enumerate(self._intervals)}
        self._running: set[str] = set()
        self._stopped = False
        self._anchored: set[str] = set()  # models whose ticks follow their phase (after the first evaluation)
        self._last_said: dict[str, float] = {}  # when the log last spoke of a model's skipped ticks
        self._unsaid: dict[str, dict[str, int]] = {}  # ticks skipped since then, by reason

    @property
    def running(self) -> frozenset[str]:
        return frozenset(self._running)

    def tick(self) -> None:
        """Hand the free workers the due models, oldest due first (ties: config order)."""
        now = self._monotonic()
        with self._lock:  # held while submitting, so that stop() waits for a submit under way
            free = self._workers - len(self._running)
            if self._stopped or free <= 0:
                return
            order = {name: i for i, name in enumerate(self._intervals)}
            due = sorted(
                (d, order[name], name)
                for name, d in self._due.items()
                if d <= now and name not in self._running
            )
            for due_at, _, name in due[:free]:
                self._running.add(name)
                self._submit(lambda name=name, due_at=due_at: self._evaluate(name, due_at))  # type: ignore[misc]

    def stop(self) -> None:
        """Hand out no more evaluations (the scheduler is about to shut down and wait for the running ones)."""
        with self._lock:
            self._stopped = True

    def _evaluate(self, name: str, due_at: float) -> None:
        started = self._monotonic()
        interval = self._intervals[name]
        first = name not in self._anchored
        self._anchored.add(name)
        try:
            self._run(name)
        finally:
            finished = self._monotonic()
            if first:
                # Every model falls due at start-up. That evaluation stands for its last phase point
                # at or before its start (those before it passed while it waited for a worker:
                # skipped, busy); a phase point that passed while it ran is its next tick, due at
                # once - so the second success follows the first by at most an interval, wherever
                # the model's phase fell in the start-up burst (a next tick taken after the run
                # ended put up to an interval plus a run between them: 63.7 s at 60 s) - and only
                # more of them than one were skipped (slow).
                phase = self._phase[name]
                waited = math.floor((started - phase) / interval)  # phase points up to the start: 0, 1, ...
                ran = math.floor((finished - phase) / interval) - waited  # phase points during the run
                next_due = phase + (waited + max(ran, 1)) * interval
                busy = max(0, waited)
                slow = max(0, ran - 1)
            else:
                # ticks that fell due meanwhile: as many as its run lasted intervals are its own (slow),
                # the rest fell due because it started late (busy: it waited for a worker)
                missed = max(0, math.floor((finished - due_at) / interval))
                slow = min(missed, math.floor((finished - started) / interval))
                busy = missed - slow
                next_due = due_at + (missed + 1) * interval
            with self._lock:
                self._due[name] = next_due
                self._running.discard(name)
            for reason, ticks in (("busy", busy), ("slow", slow)):
                if ticks:
                    self._skipped(name, reason, ticks)
                    self._say(name, reason, ticks, finished)
            self.tick()  # the freed worker takes the next due model now, not at the next second

    def _say(self, name: str, reason: str, ticks: int, now: float) -> None:
        """One log line per model per quarter hour, with the ticks skipped since the last one."""
        with self._lock:
            unsaid = self._unsaid.setdefault(name, {})
            unsaid[reason] = unsaid.get(reason, 0) + ticks
            if now - self._last_said.get(name, -math.inf) < _LOG_EVERY:
                return
            self._last_said[name] = now
            counts = dict(self._unsaid.pop(name))
        why = {
            "busy": "waiting for a free worker (more models due than workers)",
            "slow": "its own evaluation ran longer than its interval",
        }
        parts = "; ".join(f"{n} while {why[r]}" for r, n in counts.items())
        log.warning(
            "model %s: %d tick(s) of %gs skipped: %s (fairwatch_evaluation_skipped_total)",
            name,
            sum(counts.values()),
            self._intervals[name],
            parts,
        )
