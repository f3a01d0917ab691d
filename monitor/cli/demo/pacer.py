"""Evaluations at a pace the machine keeps: one model at a time, late ticks counted, not queued.

``fairwatch demo`` evaluates every second. On a busy machine an evaluation can take longer,
and APScheduler then logs "skipped: maximum number of running instances reached" for every
tick that found the last run still going - a warning that would break the demo's live table.
The :class:`Pacer` runs the evaluations itself, in one thread: it takes the model whose tick
is due first, evaluates it, and counts the ticks that fell due meanwhile as skipped (what
APScheduler would have skipped), so the table can say how many and why.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping

__all__ = ["Pacer"]

log = logging.getLogger(__name__)


class Pacer:
    """Call ``run(name)`` for each model every ``intervals[name]`` seconds, in one thread.

    ``before`` is called in the same thread before every evaluation, never during one: the demo
    grows its log there.
    """

    def __init__(
        self,
        run: Callable[[str], object],
        intervals: Mapping[str, float],
        *,
        before: Callable[[], object] = lambda: None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._run = run
        self._monotonic = monotonic
        self._before = before
        self._intervals = dict(intervals)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="fairwatch-pacer", daemon=True)
        self.runs: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.slowest = 0.0  # seconds, the longest evaluation so far

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Take no new evaluation; wait for a running one (its read is bounded by ``source.timeout``)."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _loop(self) -> None:
        due = dict.fromkeys(self._intervals, self._monotonic())
        while not self._stop.is_set():
            name = min(due, key=due.__getitem__)
            if self._stop.wait(max(0.0, due[name] - self._monotonic())):
                return
            started = self._monotonic()
            try:
                self._before()
                self._run(name)  # Runner.run_model catches, counts and logs evaluation errors itself
            except Exception:  # the job boundary, as the scheduler's listener is: log, go on
                log.exception("evaluating %s failed", name)
            finished = self._monotonic()
            self.runs[name] += 1
            self.slowest = max(self.slowest, finished - started)
            interval = self._intervals[name]
            late = math.floor((finished - due[name]) / interval)  # ticks that fell due meanwhile
            self.skipped[name] += max(0, late)
            due[name] += (max(0, late) + 1) * interval

    def summary(self) -> str:
        """``"evaluations: toxicity 41, moderation 41; 3 ticks skipped (slowest 1.4 s > 1 s interval)"``."""
        runs = ", ".join(f"{name} {self.runs[name]}" for name in self._intervals)
        skipped = sum(self.skipped.values())
        if not skipped:
            return f"evaluations: {runs}"
        shortest = min(self._intervals.values())
        return (
            f"evaluations: {runs}; {skipped} tick(s) skipped while an evaluation ran "
            f"(slowest {self.slowest:.1f} s, interval {shortest:g} s)"
        )
