"""Alert delivery off the evaluation path: one outbox and one sender thread per sink.

An evaluation hands its alert changes to :meth:`AlertDelivery.submit` and goes on; it never
waits for a receiver, however slow. Each sink's outbox holds only what is still worth sending:

- the latest firing alerts of each model: a newer submit replaces the older one (firing alerts
  are re-sent at every evaluation anyway, so an attempt always carries the current state and a
  slow sink never falls behind by more than one attempt);
- every resolve the sink has not received yet, keyed by the alert's labels. A newer submit
  never replaces a resolve; only the same alert firing again does (it is in the firing set
  then). At most ``max_pending`` resolves are kept; beyond that the oldest are dropped and
  counted (``fairwatch_alert_notifications_dropped_total``) - Alertmanager still resolves them
  when their ``endsAt`` passes.

The sender sends the outbox whenever it holds something new. An attempt is bounded as a whole
by the sink's timeout (:mod:`monitor.service.notifiers`). A failed attempt puts its resolves back and is
retried with the next submit (the next evaluation), with the then-current firing alerts. Any
exception a sink raises counts as a failed attempt: the sender thread never dies of one.
:meth:`AlertDelivery.stop` gives every sink one last bounded attempt.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from monitor.core.errors import AlertDeliveryError
from monitor.service.notifiers import Notifier
from monitor.service.snapshot import ActiveAlert, SinkStats

__all__ = ["DEFAULT_MAX_PENDING", "AlertDelivery"]

log = logging.getLogger(__name__)

#: Undelivered resolves kept per sink.
DEFAULT_MAX_PENDING = 10_000

_LabelKey = tuple[tuple[str, str], ...]


class _Outbox:
    """One sink's pending state and its sender thread."""

    def __init__(self, notifier: Notifier, max_pending: int, on_change: Callable[[], None]) -> None:
        self.notifier = notifier
        self._max_pending = max_pending
        self._on_change = on_change
        self._wake = threading.Condition()
        self._firing: dict[str, tuple[ActiveAlert, ...]] = {}  # model -> its latest firing alerts
        self._resolves: dict[_LabelKey, ActiveAlert] = {}  # insertion order: oldest first
        self._now: datetime | None = None
        self._new = False  # something arrived since the last attempt began
        self._stopping = False
        self._busy = False
        self._failing = False
        self._sent = self._failures = self._dropped = 0
        self._thread = threading.Thread(
            target=self._run, name=f"fairwatch-alerts-{notifier.name}", daemon=True
        )
        self._thread.start()

    def submit(
        self, model: str, firing: Sequence[ActiveAlert], resolved: Sequence[ActiveAlert], now: datetime
    ) -> None:
        with self._wake:
            self._firing[model] = tuple(firing)
            self._add_resolves(resolved)
            self._now = now
            self._new = True
            self._wake.notify()

    def _add_resolves(self, resolved: Sequence[ActiveAlert]) -> None:
        """Under the lock: queue resolves, forget those firing again, drop the oldest beyond the cap."""
        for alert in resolved:
            self._resolves[_label_key(alert.labels)] = alert
        self._trim()

    def _put_back(self, resolved: Sequence[ActiveAlert]) -> None:
        """Under the lock: a failed attempt's resolves go back ahead of those queued since (they are
        older), unless the same alert resolved again meanwhile (the newer resolve is kept)."""
        queued = self._resolves
        self._resolves = {_label_key(a.labels): a for a in resolved if _label_key(a.labels) not in queued}
        self._resolves.update(queued)
        self._trim()

    def _trim(self) -> None:
        for alerts in self._firing.values():
            for alert in alerts:
                self._resolves.pop(_label_key(alert.labels), None)
        excess = len(self._resolves) - self._max_pending
        if excess > 0:
            for key in list(self._resolves)[:excess]:
                del self._resolves[key]
            self._dropped += excess

    @property
    def stats(self) -> SinkStats:
        with self._wake:
            queued = len(self._resolves) + (sum(map(len, self._firing.values())) if self._new else 0)
            return SinkStats(self._sent, self._failures, self._dropped, queued)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._new and not self._stopping:
                    self._wake.wait()
                if not self._new:  # stopping, nothing left to say
                    return
                firing = [a for alerts in self._firing.values() for a in alerts]
                resolved = list(self._resolves.values())
                now = self._now
                self._resolves.clear()
                self._new = False
                self._busy = True
            assert now is not None
            try:
                self._attempt(firing, resolved, now)
            finally:
                with self._wake:
                    self._busy = False
                    self._wake.notify_all()
            with self._wake:
                if self._stopping and not self._new:
                    return

    def _attempt(self, firing: list[ActiveAlert], resolved: list[ActiveAlert], now: datetime) -> None:
        if not firing and not resolved:
            return
        name = self.notifier.name
        try:
            self.notifier.send(firing, resolved, now)
        except Exception as exc:  # a sink's bug must not end its sender thread either
            undelivered = exc.undelivered if isinstance(exc, AlertDeliveryError) else None
            with self._wake:  # kept for the next attempt, unless firing again: those not delivered
                self._put_back(
                    resolved
                    if undelivered is None
                    else [a for a in resolved if any(a is u for u in undelivered)]
                )
                self._failures += 1
            if not self._failing:  # one line per failure streak
                detail = exc if isinstance(exc, AlertDeliveryError) else repr(exc)
                log.warning("alert delivery to %s failed: %s", name, detail)
            self._failing = True
        else:
            with self._wake:
                self._sent += len(firing) + len(resolved)
            if self._failing:
                log.info("alert delivery to %s works again", name)
            self._failing = False
        self._on_change()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing new is waiting and no attempt runs; False if ``timeout`` passed first."""
        with self._wake:
            return self._wake.wait_for(lambda: not self._new and not self._busy, timeout)

    def begin_stop(self) -> None:
        """Let the sender make one last attempt if anything is owed, then end."""
        with self._wake:
            self._stopping = True
            self._new = self._new or bool(self._resolves)
            self._wake.notify_all()

    def join(self, timeout: float) -> None:
        self._thread.join(max(0.0, timeout))


class AlertDelivery:
    """Hands alerts to every sink's outbox; see the module docstring.

    ``on_change`` is called (from a sender thread) after every attempt, so that the owner can
    publish the new :meth:`stats`.
    """

    def __init__(
        self,
        notifiers: Sequence[Notifier],
        *,
        max_pending: int = DEFAULT_MAX_PENDING,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        if max_pending < 1:
            raise ValueError(f"max_pending must be at least 1, got {max_pending}")
        self._outboxes = [_Outbox(n, max_pending, on_change) for n in notifiers]

    def submit(
        self, model: str, firing: Sequence[ActiveAlert], resolved: Sequence[ActiveAlert], now: datetime
    ) -> None:
        """Queue one evaluation's alert state for every sink; returns at once."""
        for outbox in self._outboxes:
            outbox.submit(model, firing, resolved, now)

    def stats(self) -> Mapping[str, SinkStats]:
        return {o.notifier.name: o.stats for o in self._outboxes}

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every sink has attempted what was submitted; False if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        return all([o.wait_idle(max(0.0, deadline - time.monotonic())) for o in self._outboxes])

    def stop(self, timeout: float = 10.0) -> None:
        """One last attempt per sink for anything still owed, all within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        for outbox in self._outboxes:
            outbox.begin_stop()
        for outbox in self._outboxes:
            outbox.join(deadline - time.monotonic())


def _label_key(labels: Mapping[str, str]) -> _LabelKey:
    return tuple(sorted(labels.items()))
