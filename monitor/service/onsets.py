"""When each active incident began, estimated once per incident from its model's log.

The service judges windows; a window crosses its fair range hours after the model changed. When an
evaluation shows an incident not seen before (:mod:`monitor.evaluation.incidents`), its onset is
estimated from the log (:func:`monitor.evaluation.onsets.onset_of`: a change point on the group's
counts) and kept while the incident's alerts are active: the alerts' annotations, the notifications and
the live view say "began about ... ± ...".

The estimate reads and recomputes the span (about 4 s for three incidents of a 1-day window over 100 k
rows a day, 7 s for a 7-day window's 21 days): it runs on a worker thread of its own, one incident
at a time, after the evaluation that found the incident has raised its alerts. It holds the model's
evaluator as an evaluation does (its sources serve one reader at a time: a DuckDB connection, a Spark
session), so the model's next evaluation may wait for it once. The alerts start without it and carry it
from the evaluation after it is ready. An incident whose onset cannot be estimated yet - just begun, too few rows after the change
to place it surely - is tried again once a pane (``panes.size``) of the model's time has passed, at most
:data:`MOST_TRIES` times in all (a bias older than the span has no change in it to find); one found is
kept while the incident lasts. Closing stops a running estimate between two of its computations.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Collection, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType

from monitor.evaluation.evaluator import Evaluator
from monitor.evaluation.incidents import Incident, incidents
from monitor.evaluation.onset import Onset
from monitor.evaluation.onsets import onset_of
from monitor.evaluation.results import ModelEvaluation

__all__ = ["Onsets"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Job:
    evaluator: Evaluator
    incident: Incident
    evaluation: ModelEvaluation
    guard: AbstractContextManager[object]


@dataclass(frozen=True)
class _Tried:
    """An onset not found at ``at`` (the evaluation's time), ``tries`` times: tried again a pane later,
    at most :data:`MOST_TRIES` times (a bias older than the span has none to find)."""

    at: datetime
    tries: int


@dataclass(frozen=True)
class _Pending:
    """Queued or being estimated; ``tries`` before this one."""

    tries: int


#: Estimates of one incident's onset, at most: one, then a pane apart while none is found.
MOST_TRIES = 6


class Onsets:
    """Each model's incidents' onsets, by population (``race=Black``: the ``incident`` label).

    ``background=False`` estimates in the caller's thread (tests, one-off runs)."""

    def __init__(self, *, background: bool = True) -> None:
        self._known: dict[str, dict[str, Onset | _Tried | _Pending | None]] = {}
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._busy = 0
        self._worker: threading.Thread | None = None
        self._background = background
        self._closed = False

    def estimate(
        self,
        evaluator: Evaluator,
        evaluation: ModelEvaluation,
        guard: AbstractContextManager[object] | None = None,
    ) -> Mapping[str, Onset]:
        """The onsets of the model's incidents known now; those new in ``evaluation`` are estimated
        (on the worker: known from a later call), holding ``guard`` - what keeps the model's evaluations
        from using its evaluator (its sources) at the same time."""
        model = evaluation.model
        again = evaluator.model.panes.size
        for incident in incidents([evaluation]):
            population = f"{incident.attribute}={incident.group}"
            with self._lock:
                known = self._known.setdefault(model, {})
                tried = known.get(population)
                if population in known and not (
                    isinstance(tried, _Tried)
                    and tried.tries < MOST_TRIES
                    and evaluation.evaluated_at - tried.at >= again
                ):
                    continue
                known[population] = _Pending(tried.tries if isinstance(tried, _Tried) else 0)
                self._busy += 1
            job = _Job(evaluator, incident, evaluation, guard or contextlib.nullcontext())
            if self._background:
                self._start()
                self._queue.put(job)
            else:
                self._run(job)
        with self._lock:
            return MappingProxyType(
                {p: o for p, o in self._known.get(model, {}).items() if isinstance(o, Onset)}
            )

    def keep(self, model: str, incidents: Collection[str]) -> None:
        """Forget the model's onsets but those of ``incidents`` (their alerts are still active)."""
        with self._lock:
            known = self._known.get(model, {})
            self._known[model] = {p: o for p, o in known.items() if p in incidents}

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Wait until no estimate is queued or running; False if ``timeout`` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout=timeout)

    def close(self) -> None:
        """Stop the worker after the estimate it runs (the queued ones are dropped: their sources are
        about to close)."""
        with self._lock:
            self._closed = True
        if self._worker is not None:
            self._queue.put(None)
            self._worker.join(timeout=30)

    def _start(self) -> None:
        with self._lock:
            if self._worker is None:
                self._worker = threading.Thread(target=self._serve, name="fairwatch-onsets", daemon=True)
                self._worker.start()

    def _serve(self) -> None:
        while (job := self._queue.get()) is not None:
            self._run(job)

    def _run(self, job: _Job) -> None:
        evaluator, incident, evaluation = job.evaluator, job.incident, job.evaluation
        population = f"{incident.attribute}={incident.group}"
        found: Onset | None = None
        try:
            with self._lock:  # forgotten while queued (the incident resolved), or closing: nothing to do
                pending = self._known.get(evaluation.model, {}).get(population)
                wanted = not self._closed and isinstance(pending, _Pending)
            if wanted:
                with job.guard:
                    found = onset_of(evaluator, incident, evaluation, cancelled=lambda: self._closed)
        except Exception:  # onset_of says what failed; this keeps the worker alive whatever happens
            log.exception("model %s: estimating the onset of %s failed", evaluation.model, population)
        finally:
            with self._idle:
                known = self._known.get(evaluation.model, {})
                if isinstance(pending := known.get(population), _Pending):
                    known[population] = found or _Tried(evaluation.evaluated_at, pending.tries + 1)
                self._busy -= 1
                self._idle.notify_all()
