"""``source: {kind: published, url: ...}``: the counts other fairwatch services published, merged.

Each replica of a model server runs fairwatch beside it with ``models[].publish`` (a sidecar that
counts its own pod's log, :mod:`monitor.reading.publish`); one central fairwatch reads every
publisher's panes of the model from the shared store (:mod:`monitor.sources.published.store`)
and adds them up. Score tables and confusion counts are sufficient statistics, so the sum of the
replicas' counts is exactly the count of all their rows together: every value, interval and alert
equals those of one evaluation over the union of the logs.

A window counts every published pane that overlaps it: its bounds are rounded out to whole panes
(a 24 h window ending at 10:37 counts the panes from 10:00 yesterday, and the open pane of 10:00
today up to each publisher's last publication). Windows whose bounds fall on pane boundaries
(``--start``/``--end`` on whole hours, with hourly panes) are exact.

Panes are read once and kept while their version in the store stays the same (a file's time and
size, a row's publication time and total); a publisher publishes its open panes at every tick, so a
central tick reads those and lists the rest. The store is a directory, an object store or a
database table (:mod:`monitor.sources.published.store`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import replace
from datetime import datetime

import numpy as np
import pandas as pd

from monitor.config import SourceConfig
from monitor.core.errors import SourceError
from monitor.sources.contract import WEIGHT, Batch, CountRequest, range_column
from monitor.sources.published.store import (
    Heartbeat,
    PublishedPane,
    open_store,
    request_fingerprint,
)

__all__ = ["PublishedSource"]

#: A published pane's identity: where it is in the store, and its version there.
_Key = tuple[str, Hashable]

log = logging.getLogger(__name__)


class PublishedSource:
    """Every publisher's counts of one model, merged (a counting source that reads no log)."""

    def __init__(
        self,
        config: SourceConfig,
        *,
        timestamp_column: str | None = None,
        model: tuple[str, str] | None = None,
    ) -> None:
        assert config.url is not None and config.name is not None, "checked by the config"
        self.config = config
        self.store = open_store(config.url, config.name, "source.url")
        self._files: dict[str, tuple[_Key, PublishedPane]] = {}
        self._seen: dict[str, datetime | None] = {}  # every publisher in the store
        self._previous: set[_Key] = set()  # the files the previous read used
        # the unchanged panes' (file, range flags), merged with their range columns
        self._stable: tuple[frozenset[tuple[_Key, tuple[int, ...]]], pd.DataFrame | None] | None = None
        self._publishers: dict[str, datetime | None] = {}
        self._heartbeats: dict[str, Heartbeat] = {}
        self._said: str | None = None  # the last "nothing published" reason logged

    def describe(self) -> str:
        return f"published:{self.store.describe()}"

    def close(self) -> None:
        self._files.clear()
        self.store.close()

    def read(self, start: datetime, end: datetime) -> Batch:
        raise SourceError(
            f"{self.describe()}: published counts are counts, not rows; a model that reads them must "
            "count (task binary or multiclass)"
        )

    def read_counts(self, request: CountRequest, start: datetime, end: datetime) -> Batch | None:
        """Every publisher's panes overlapping ``[start, end)``, each range's 0/1 column 1 for the
        panes that overlap it, in one counted batch."""
        fingerprint = request_fingerprint(request)
        found = self._panes(fingerprint)
        if not found:
            raise SourceError(self._nothing_published(fingerprint))
        self._said = None
        chosen = [
            (key, pane, tuple(int(pane.pane < hi and pane.end > lo) for lo, hi in request.ranges))
            for key, pane in found
            if pane.pane < end and pane.end > start
        ]
        present = {pane.publisher for _, pane, _ in chosen}  # the publishers in the windows
        if not chosen:  # no pane in range: an empty batch with the panes' columns
            key, pane = found[-1]
            chosen = [(key, replace(pane, frame=pane.frame.iloc[:0]), (0,) * len(request.ranges))]
        flagged = {pane.flagged for _, pane, _ in chosen}
        if len(flagged) > 1:
            by = sorted({f"{p.publisher}: {sorted(p.flagged)}" for _, p, _ in chosen})
            raise SourceError(
                f"{self.describe()}: publishers thresholded different indicator attributes (a column "
                f"numeric in one pod's log, text in another's): {'; '.join(by[:5])}"
            )
        frame = self._assembled(chosen, len(request.ranges))
        # their rejected rows count, and they are reported (fresh or stale) with those heard from since
        present |= {
            name
            for name, beat in self._heartbeats.items()
            if beat.published_at and beat.published_at >= start
        }
        self._publishers = {name: at for name, at in self._seen.items() if name in present}
        rejected = sum(
            (beat.rejected for name, beat in self._heartbeats.items() if name in present), Counter[str]()
        )
        return Batch(frame, rejected, counted=True, flagged=flagged.pop())

    def _assembled(
        self, chosen: list[tuple[_Key, PublishedPane, tuple[int, ...]]], ranges: int
    ) -> pd.DataFrame:
        """The chosen panes with their range columns, as one frame. The panes that did not change since
        the previous read (sealed ones: most of them) are merged once and kept while they and their
        range columns stay the same (the windows cross a pane boundary once per pane); the others are
        appended at each read (a counted batch may repeat a combination)."""
        unchanged = [(key, pane, flags) for key, pane, flags in chosen if key in self._previous]
        self._previous = {key for key, _, _ in chosen}
        stable = frozenset((key, flags) for key, _, flags in unchanged)
        kept_ids = self._stable[0] if self._stable is not None else frozenset()
        if self._stable is None or not kept_ids <= stable or len(stable - kept_ids) > len(kept_ids):
            self._stable = (stable, _merged(_with_ranges(unchanged, ranges)) if unchanged else None)
            kept_ids = stable
        rest = [(key, pane, flags) for key, pane, flags in chosen if (key, flags) not in kept_ids]
        parts = [
            frame
            for frame in (self._stable[1], _with_ranges(rest, ranges) if rest else None)
            if frame is not None
        ]
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]

    def count_ranges(self, request: CountRequest, start: datetime, end: datetime) -> tuple[int, ...] | None:
        return None  # no sealed panes of its own to recheck (see reads_narrowly)

    def reads_narrowly(self) -> bool:
        return False  # already panes: no sealed panes of its own on top

    def publishers(self) -> Mapping[str, datetime | None]:
        """Each publisher seen at the last read, and when it last published (``None``: unknown)."""
        return dict(self._publishers)

    # -- internals --------------------------------------------------------------------------------

    def _panes(self, fingerprint: str) -> list[tuple[_Key, PublishedPane]]:
        """Every published pane of ``fingerprint`` with its identity (its place and version in the
        store), panes read again only when they changed."""
        seen: dict[str, tuple[_Key, PublishedPane]] = {}
        for listed in self.store.listing(fingerprint):
            key = (listed.where, listed.version)
            cached = self._files.get(listed.where)
            if cached is not None and cached[0] == key:
                seen[listed.where] = cached
                continue
            pane = self.store.read(listed, fingerprint)
            if pane is not None:  # a pane that cannot be read now is tried again at the next read
                seen[listed.where] = (key, pane)
        self._files = seen
        found = _one_size_each([(key, pane) for key, pane in seen.values() if pane is not None])
        panes = [pane for _, pane in found]
        self._heartbeats = self.store.heartbeats(fingerprint)
        publishers = {name: beat.published_at for name, beat in self._heartbeats.items()}
        for pane in panes:  # a publisher without a heartbeat: its newest publication
            if publishers.get(pane.publisher) is None:
                publishers[pane.publisher] = max(
                    (p.published_at for p in panes if p.publisher == pane.publisher), default=None
                )
        self._seen = publishers
        return sorted(found, key=lambda kp: (kp[1].pane, kp[1].publisher))

    def _nothing_published(self, fingerprint: str) -> str:
        others = [f for f in self.store.fingerprints() if f != fingerprint]
        if others:
            why = (
                f"nothing published for this model's config (fingerprint {fingerprint}), but counts of "
                f"{len(others)} other config(s) are there ({', '.join(others[:3])}): the publishers' model "
                "config (columns, groups, thresholds, score_decimals) must match the central's"
            )
        else:
            why = f"nothing published yet for model {self.store.model!r}"
        if why != self._said:
            log.warning("%s: %s", self.describe(), why)
            self._said = why
        return f"{self.describe()}: {why}"


def _one_size_each(found: list[tuple[_Key, PublishedPane]]) -> list[tuple[_Key, PublishedPane]]:
    """Each publisher's panes of one size: the size of its newest publication (panes of another
    size overlap them - left by a config of another ``panes.size`` - and are not counted)."""
    newest: dict[str, PublishedPane] = {}
    for _, pane in found:
        if pane.publisher not in newest or pane.published_at > newest[pane.publisher].published_at:
            newest[pane.publisher] = pane
    return [(key, pane) for key, pane in found if pane.size == newest[pane.publisher].size]


def _with_ranges(items: list[tuple[_Key, PublishedPane, tuple[int, ...]]], ranges: int) -> pd.DataFrame:
    """The panes' frames one after another, each range's 0/1 column the pane's flag on every row."""
    frames = [pane.frame for _, pane, _ in items]
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].reset_index(drop=True)
    lengths = np.array([len(f) for f in frames])
    flags = np.array([flags for _, _, flags in items], dtype=np.int64).reshape(len(items), ranges)
    columns = {range_column(i): np.repeat(flags[:, i], lengths) for i in range(ranges)}
    return frame.assign(**columns) if columns else frame


def _merged(frame: pd.DataFrame) -> pd.DataFrame:
    """The publishers' combinations added up where they repeat (a counted batch may repeat one; this
    only makes it smaller). Values pandas cannot hash (a JSON Lines list) are left as they are."""
    keys = [c for c in frame.columns if c != WEIGHT]
    if not keys:
        return frame
    try:
        return frame.groupby(keys, dropna=False, sort=False)[WEIGHT].sum().reset_index()
    except TypeError:  # unhashable values
        return frame
