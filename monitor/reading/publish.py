"""``models[].publish``: a replica's counts, published for one central fairwatch to judge the fleet.

A fairwatch beside each replica of a model server (a sidecar) counts its own pod's log in panes
of ``panes.size`` - the same epoch-aligned panes as :mod:`monitor.reading.panes` - and writes each
pane's counted combinations to a shared store (:mod:`monitor.sources.published.store`), keyed by
model, publisher, pane and a fingerprint of what was counted. A central fairwatch reads them all
with ``source: {kind: published}`` and evaluates their sum: exactly the counts of all the pods'
rows together.

At each tick, for the panes of the model's horizon (its longest window and ``label_delay``):

- the *open* panes - not yet sealed, ``label_delay + panes.lateness`` after their end - are
  counted again and published again (replacing their files), so labels and late rows that land in
  them are published as they arrive;
- a *sealed* pane is published once; every ``panes.recheck`` the sealed panes' row totals are
  counted again in one statement and a pane whose total changed (late rows, retention) is counted
  and published again;
- panes that slid out of the horizon are removed from the store by their publisher.

Publishing the same pane again replaces it, so a restarted or retried publisher never counts twice;
after a restart the publisher finds its sealed panes in the store and counts only the open ones.
Each publication also rewrites the publisher's heartbeat, so the central can tell a silent
publisher from one whose counts did not change. Times are the publisher's clock: a row is counted
in the pane of its own timestamp, so clocks that differ by less than ``panes.lateness`` lose
nothing (docs/fleet.md).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from monitor.config import ModelConfig, PublishConfig
from monitor.core.errors import SourceError
from monitor.reading.panes import count_panes, pane_runs, pane_starts
from monitor.sources.contract import WEIGHT, CountedPanes, CountingSource, CountRequest
from monitor.sources.count_files import Unwritable
from monitor.sources.published.store import open_store, request_fingerprint

__all__ = ["Published", "Publisher", "default_publisher"]

log = logging.getLogger(__name__)

_PANES_PER_READ = 24  # panes counted in one statement (a 0/1 column each): a day of hours
_PROCESS = uuid.uuid4().hex[:16]  # this process, in every heartbeat it writes


@dataclass(frozen=True)
class Published:
    """What one publication wrote."""

    publisher: str
    panes_written: int  # pane files written (or written again) by this publication
    rows: int  # rows in the published panes of the horizon: what this replica counted


def default_publisher() -> str:
    """The pod's name (``$HOSTNAME``, which Kubernetes sets to it), else the host's name."""
    return os.environ.get("HOSTNAME") or socket.gethostname()


class Publisher:
    """Publishes one model's panes from one replica."""

    def __init__(self, model: ModelConfig, config: PublishConfig, key: str = "publish.url") -> None:
        self.model = model
        self.name = config.publisher or default_publisher()
        self.store = open_store(config.url, model.name, key)
        self.size = model.panes.size
        self.instance = _PROCESS  # this process (a config reload keeps it), told apart from others
        self._fingerprint: str | None = None
        self._rows: dict[datetime, int] = {}  # every pane published, open or sealed -> its row total
        self._sealed: set[datetime] = set()  # panes published after they were sealed
        self._checked_at: datetime | None = None  # the last recheck of the sealed panes' totals
        self._expired_at: datetime | None = None  # the last look for publishers long gone
        self._rejected: Counter[str] = Counter()  # what the newest read rejected
        self._since = datetime.max.replace(tzinfo=UTC)  # the horizon's first pane, at the last publication
        self._until = datetime.min.replace(tzinfo=UTC)  # ... and its newest pane's end

    def publish(self, source: CountingSource, shape: CountRequest, now: datetime) -> Published:
        """Publish the panes of the horizon ending ``now`` that are open, new or changed."""
        fingerprint = request_fingerprint(shape)
        size, model = self.size, self.model
        self._check_alone(fingerprint, now)
        if fingerprint != self._fingerprint:  # the first publication, or another config
            self._resume(fingerprint)
        # alive before the panes are written (a peer's cleanup must not take a publisher back from a
        # long silence for a dead one), and again after
        self.store.beat(fingerprint, self.name, now, self._rejected, self.instance)
        horizon = max(w.length for w in model.windows) + model.label_delay
        panes = list(pane_starts(now - horizon, now, size))
        sealed_before = now - model.label_delay - model.panes.lateness
        # a pane stays published a pane and the lateness past the horizon (a central whose clock is
        # behind may still need it); panes ahead of now (a clock stepped back) are kept
        gone = [p for p in self._rows if p + size + model.panes.lateness < panes[0]]
        if gone:
            self.store.remove(fingerprint, self.name, gone)
            for pane in gone:
                del self._rows[pane]
                self._sealed.discard(pane)
        # no pane before those still published (the horizon, a pane and the lateness) is counted again
        self._since = next(pane_starts(panes[0] - size - model.panes.lateness, panes[0] + size, size))
        self._until = max(now, panes[-1] + size)  # the newest pane's end
        due = [p for p in panes if p + size > sealed_before or p not in self._sealed]
        due = sorted(set(due) | self._changed(source, shape, now))
        written, rejected = 0, Counter[str]()
        for run in pane_runs(due, size, _PANES_PER_READ):
            counted = self._count(source, shape, run)
            for pane, frame in counted.frames.items():
                try:
                    self.store.write(fingerprint, self.name, pane, size, frame, counted.flagged, now)
                except Unwritable as exc:
                    raise SourceError(f"model {model.name}: a pane cannot be published: {exc}") from None
                self._rows[pane] = int(frame[WEIGHT].sum())
                if pane + size <= sealed_before:
                    self._sealed.add(pane)
                written += 1
            rejected = counted.rejected  # the read of the newest panes (the last run) counts them once
        self._rejected = rejected
        self.store.beat(fingerprint, self.name, now, rejected, self.instance)
        self._expire(now, horizon)
        return Published(self.name, written, sum(self._rows.values()))

    def close(self) -> None:
        """Release the store's connections (a database store's pool)."""
        self.store.close()

    def _resume(self, fingerprint: str) -> None:
        """What this publisher (a previous process of it) published: a pane counts as sealed only if
        it was published after it was sealed; panes of another size (the config changed) are removed."""
        stored = self.store.own_panes(fingerprint, self.name)  # a failure: resumed at the next tick
        self._fingerprint = fingerprint
        self._checked_at = None  # the sealed panes' totals are checked at once
        other = [p.pane for p in stored if p.size != self.size]
        if other:
            self.store.remove(fingerprint, self.name, other)
        lateness = self.model.label_delay + self.model.panes.lateness
        mine = [p for p in stored if p.size == self.size]
        self._rows = {p.pane: p.rows for p in mine}
        self._sealed = {p.pane for p in mine if p.published_at >= p.pane + self.size + lateness}

    def _check_alone(self, fingerprint: str, now: datetime) -> None:
        """Another process that publishes under this name (a fixed ``publisher:`` shared by replicas,
        pods on the host network, a one-off ``fairwatch evaluate`` beside the sidecar) would overwrite
        this one's panes: refuse to publish over it while it publishes; one silent for two intervals,
        or known dead (this host, its pid gone - or ours: a restarted container), is taken over."""
        beat = self.store.last_beat(fingerprint, self.name)
        if beat is None or beat.instance == self.instance:
            return
        if beat.host == socket.gethostname() and (beat.pid == os.getpid() or not _alive(beat.pid)):
            return  # a previous process of this container or host, gone
        if now - beat.published_at < 2 * self.model.interval:
            raise SourceError(
                f"model {self.model.name}: another process publishes as {self.name!r} to "
                f"{self.store.describe()} (each replica needs its own `publish.publisher`; the default is "
                "the pod's name): not publishing over its counts"
            )
        log.warning(
            "model %s: another process published as %s until %s; it has stopped: publishing again",
            self.model.name,
            self.name,
            beat.published_at.isoformat(),
        )

    def _count(self, source: CountingSource, shape: CountRequest, panes: list[datetime]) -> CountedPanes:
        counted = count_panes(source, shape, panes, self.size, min(self._since, panes[0]), self._until)
        if counted is None:
            raise SourceError(
                f"model {self.model.name}: its source cannot count these rows, so nothing is published "
                "(see the log for why it reads rows)"
            )
        return counted

    def _changed(self, source: CountingSource, shape: CountRequest, now: datetime) -> set[datetime]:
        """Sealed panes whose row total changed since they were published, every ``panes.recheck``:
        from the totals in one statement where the source gives them, else (log files, scanned whole
        anyway) by counting the sealed panes again."""
        recheck = self.model.panes.recheck
        if self._checked_at is not None and timedelta(0) <= now - self._checked_at < recheck:
            return set()
        self._checked_at = now
        sealed = sorted(self._sealed)
        if not sealed:
            return set()
        blocks = pane_runs(sealed, self.size, _PANES_PER_READ)
        ranges = tuple((block[0], block[-1] + self.size) for block in blocks)
        totals = source.count_ranges(
            CountRequest(shape.timestamp, (), (), ranges), sealed[0], sealed[-1] + self.size
        )
        # a pane whose file is gone (removed by hand, or by a peer's cleanup) is published again
        changed = set(sealed) - self.store.pane_starts(self._fingerprint or "", self.name)
        if totals is None:
            for block in blocks:
                counted = self._count(source, shape, block)
                changed.update(p for p, f in counted.frames.items() if int(f[WEIGHT].sum()) != self._rows[p])
        else:
            for block, total in zip(blocks, totals, strict=True):
                if total != sum(self._rows[p] for p in block):
                    changed.update(block)
        if changed:
            log.warning(
                "model %s: %d published sealed pane(s) changed since they were published (late rows or "
                "retention); published again",
                self.model.name,
                len(changed),
            )
        return changed

    def _expire(self, now: datetime, horizon: timedelta) -> None:
        """Every ``panes.recheck``: remove the folders of publishers silent for longer than the horizon
        and two panes - pods long gone, whose every pane has left every window."""
        recheck = self.model.panes.recheck
        if self._expired_at is not None and timedelta(0) <= now - self._expired_at < recheck:
            return
        self._expired_at = now
        gone = self.store.expire(self.name, now - horizon - 2 * self.size)
        if gone:
            log.info(
                "model %s: removed the published panes of %d publisher(s) silent for longer than the "
                "windows: %s",
                self.model.name,
                len(gone),
                ", ".join(sorted(gone)[:10]),
            )


def _alive(pid: int) -> bool:
    """Whether a process of this host has ``pid`` (signal 0 checks without sending anything)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True
