"""The runner: runs evaluations, keeps per-model status, drives alerts, swaps snapshots.

:meth:`Runner.run_model` is the scheduled job. It never lets an exception escape into
the scheduler: a failing source marks that model's source down, keeps its last good
values (their age is exported), is logged once per distinct cause and counted, and the
next tick retries. Other models are not affected.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from types import MappingProxyType

from monitor.core.clock import Clock
from monitor.core.errors import SourceError
from monitor.evaluation.evaluator import Evaluator
from monitor.evaluation.results import ModelEvaluation
from monitor.service.alerting import AlertTracker, AlertUpdate
from monitor.service.delivery import AlertDelivery
from monitor.service.notifiers import Notifier
from monitor.service.onsets import Onsets
from monitor.service.snapshot import ActiveAlert, ModelStatus, Snapshot

__all__ = ["Runner"]

log = logging.getLogger(__name__)


class Runner:
    def __init__(
        self,
        evaluators: Mapping[str, Evaluator],
        *,
        tracker: AlertTracker,
        notifiers: Sequence[Notifier],
        clock: Clock,
        log_alerts: bool = True,
        onsets: Onsets | None = None,
    ) -> None:
        self.evaluators = dict(evaluators)
        # one user of a model's evaluator (its sources, its panes) at a time: its evaluation or its onsets
        self._using = {name: threading.Lock() for name in self.evaluators}
        self.log_alerts = log_alerts  # alerts.log: the pending / cleared lines too, not only firing ones
        self.tracker = tracker
        # each incident's onset, read from the log once, on a worker of its own
        self.onsets = onsets if onsets is not None else Onsets()
        self.clock = clock
        self._lock = threading.Lock()  # two models' jobs may finish at once: one snapshot writer
        self._subscribers: list[Callable[[Snapshot], None]] = []
        self._alerts: dict[str, tuple[ActiveAlert, ...]] = {}
        # sinks are fed through outboxes: an evaluation never waits for a receiver
        self.delivery = AlertDelivery(notifiers, on_change=self._publish_delivery_stats)
        self._snapshot = Snapshot(
            models=MappingProxyType(
                {
                    name: ModelStatus(name, ev.model.interval.total_seconds())
                    for name, ev in self.evaluators.items()
                }
            ),
            created_at=clock.now(),
        )

    def subscribe(self, callback: Callable[[Snapshot], None]) -> None:
        """Call ``callback(snapshot)`` after every swap (from the thread that swapped it)."""
        self._subscribers.append(callback)

    @contextmanager
    def _publishing(self) -> Iterator[None]:
        """Hold the writer lock to change the snapshot, then hand it to the subscribers - outside
        the lock, since a subscriber may take a while (``/metrics`` renders it)."""
        with self._lock:
            yield
            snapshot = self._snapshot
        for callback in self._subscribers:
            try:
                callback(snapshot)
            except Exception:
                log.exception("publishing the snapshot failed")

    def snapshot(self) -> Snapshot:
        """The current snapshot: one reference read, consistent however it is used."""
        return self._snapshot

    def run_model(self, name: str) -> ModelEvaluation | None:
        """Evaluate one model now; update its status, alerts and the snapshot."""
        evaluator = self.evaluators[name]
        now = self.clock.now()
        try:
            with self._using[name]:  # the onsets' worker reads through the same evaluator
                evaluation = evaluator.evaluate(now)
        except Exception as exc:  # the job boundary: count, log, keep the last values, retry next tick
            self._record_failure(name, exc)
            return None
        onsets = self.onsets.estimate(evaluator, evaluation, self._using[name])
        update = self.tracker.update(evaluation, now, onsets=onsets)
        mine = [a.labels for a in update.active if a.labels.get("model") == name]  # by label and own group
        self.onsets.keep(
            name,
            {p for labels in mine for p in (labels["incident"], f"{labels['attribute']}={labels['group']}")},
        )
        if self.log_alerts:
            _log_transitions(update)
        self.delivery.submit(name, update.firing, update.resolved, now)
        with self._publishing():
            old = self._snapshot.models[name]
            rejected = Counter(dict(old.rows_rejected_total))
            rejected.update(evaluation.rejected)
            status = replace(
                old,
                source_up=True,
                last_evaluation=evaluation,
                last_success=now,
                last_attempt=now,
                last_error=None,
                evaluations_total=old.evaluations_total + 1,
                rows_read_total=old.rows_read_total + evaluation.rows_read,
                rows_rejected_total=MappingProxyType(dict(rejected)),
                late_rows_total=old.late_rows_total + evaluation.late_rows,
                changed_panes_total=old.changed_panes_total + evaluation.changed_panes,
                last_duration_seconds=evaluation.duration_seconds,
            )
            self._alerts[name] = tuple(a for a in update.active if a.labels.get("model") == name)
            self._swap({name: status})
        if old.last_error is not None:
            log.info("model %s: evaluation succeeded again", name)
        return evaluation

    def record_skipped(self, name: str, reason: str, ticks: int) -> None:
        """Ticks of ``name`` that fell due while it waited for a worker or ran (:mod:`.dispatch`)."""
        with self._publishing():
            old = self._snapshot.models[name]
            skipped = Counter(dict(old.skipped_total))
            skipped[reason] += ticks
            self._swap({name: replace(old, skipped_total=MappingProxyType(dict(skipped)))})

    def record_job_error(self) -> None:
        """A scheduler-level failure (missed run, crashed job) - APScheduler only logs these."""
        with self._publishing():
            self._snapshot = replace(self._snapshot, job_errors_total=self._snapshot.job_errors_total + 1)

    def _record_failure(self, name: str, exc: Exception) -> None:
        message = f"{type(exc).__name__}: {exc}"
        with self._publishing():
            old = self._snapshot.models[name]
            if message != old.last_error:  # log a cause once, not every tick
                if isinstance(exc, SourceError):
                    log.error("model %s: source failed, keeping last values: %s", name, exc)
                else:
                    log.exception("model %s: evaluation failed", name, exc_info=exc)
            status = replace(
                old,
                source_up=False if isinstance(exc, SourceError) else old.source_up,
                last_attempt=self.clock.now(),
                last_error=message,
                evaluations_total=old.evaluations_total + 1,
                failures_total=old.failures_total + 1,
            )
            self._swap({name: status})

    def _publish_delivery_stats(self) -> None:
        with self._publishing():
            self._snapshot = replace(
                self._snapshot, alert_sinks=MappingProxyType(dict(self.delivery.stats()))
            )

    def close(self, timeout: float = 10.0) -> None:
        """Give queued alerts one last bounded attempt and stop the senders (and the onsets' worker)."""
        self.delivery.stop(timeout)
        self.onsets.close()

    def _swap(self, changed: Mapping[str, ModelStatus]) -> None:
        models = dict(self._snapshot.models)
        models.update(changed)
        self._snapshot = replace(
            self._snapshot,
            models=MappingProxyType(models),
            alerts=tuple(a for alerts in self._alerts.values() for a in alerts),
            alert_sinks=MappingProxyType(dict(self.delivery.stats())),
            created_at=self.clock.now(),
        )


def _log_transitions(update: AlertUpdate) -> None:
    """One line per alert that went pending or was dropped while pending: no sink hears of these."""
    for alert in update.started_pending:
        log.info("fairness alert pending: %s", alert.annotations.get("summary", _series(alert)))
    for alert in update.dropped:
        log.info("pending fairness alert cleared before it fired: %s", _series(alert))


def _series(alert: ActiveAlert) -> str:
    labels = alert.labels
    estimated = " (estimated, labels pending)" if labels.get("basis") == "estimate" else ""
    return (
        f"{labels.get('metric')} for {labels.get('attribute')}={labels.get('group')} "
        f"in model {labels.get('model')}, window {labels.get('window')}{estimated}"
    )
