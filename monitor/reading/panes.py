"""Sealed panes: each tick reads from the database only what can still change.

A model's timeline is cut into panes of ``panes.size`` (aligned to the Unix epoch: whole hours
by default). A pane is *sealed* once its end is older than ``label_delay + panes.lateness``:
its rows and their labels are taken to be final, and its counts - the counted combinations of
:mod:`monitor.sources.count_sql`, without time ranges - are kept. An evaluation then asks the
database only for the parts of its read range that no kept pane covers whole: the unsealed
tail, and the partial panes where a window's bound cuts a pane. Each kept pane gets the 0/1
range columns of the windows it lies in (a pane that no bound cuts lies wholly inside or
outside each window), and the pieces are concatenated: the same combinations with the same
total counts as one read of the whole range, hence the same values. The kept panes are merged
into one table once per change of the set of panes in use (about twice an hour), not per tick.

Rows that land in a pane after it was sealed (*late rows*) would be missed; every
``panes.recheck`` the kept panes are recounted in one statement (rows per block of consecutive
panes, no rows returned: an index range per block where the timestamps are indexed, else one pass). A block whose total changed is dropped and read again at
once, and the rows it gained are reported as late (``fairwatch_late_rows_total``).

Rows *changed* in a sealed pane - a corrected label, a label written into an existing row, a
delete and an insert of as many rows - keep its total. So each pane is also counted again whole,
and its combinations compared with the kept ones, at least once every ``panes.recheck``: a few
panes per tick, the ones checked longest ago (as many as keep every pane within ``recheck``), in
one statement per run of consecutive panes. A pane that differs is replaced by its new counts
(``fairwatch_sealed_panes_changed_total``). Over a ``recheck`` this reads each kept pane once
more: a 24 h window checked hourly reads a 24th of its sealed rows an hour, spread over the ticks.

Limits, by design: rows whose timestamp cannot be read are counted (``timestamp_invalid``)
only by the read of the window's unsealed tail (on SQLite: those whose text falls in its range); a label written into a row after its pane
was sealed is not seen until the pane is read again (keep ``lateness`` above the longest label
delay you expect beyond ``label_delay``). Sources that cannot read a narrow piece of a window
cheaply (SQLite text timestamps of unknown offset: see ``timestamp_format: iso_utc``) read
whole windows; so does any read the panes cannot serve (then nothing is kept).

With ``panes.directory`` the kept panes are also written to disk (:mod:`monitor.reading.pane_store`),
and a restarted service starts from them: they are rechecked at its first tick, so rows written
into them while it was down are found as late rows and folded in.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from monitor.config import PanesConfig
from monitor.reading.pane_store import PaneStore
from monitor.sources.contract import (
    WEIGHT,
    Batch,
    CountedPanes,
    CountingSource,
    CountRequest,
    PaneCountingSource,
    range_column,
)

__all__ = ["CountedPanes", "Panes", "PanesRead", "count_panes", "pane_runs", "pane_starts"]

log = logging.getLogger(__name__)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_RECHECK_BLOCKS = 32  # at most this many totals per recheck statement
_PANES_PER_READ = 24  # new panes counted in one statement (a 0/1 column each): a day of hours


@dataclass(frozen=True)
class PanesRead:
    """A window's counted batch, assembled from kept panes and fresh pieces."""

    batch: Batch
    late_rows: int  # rows found in sealed panes since they were kept
    pieces_read: int | None  # statements sent for fresh pieces and new panes (None: one whole read)
    changed_panes: int = 0  # sealed panes whose rows changed since they were kept (counted again)


@dataclass(frozen=True)
class _Kept:
    frame: pd.DataFrame  # counted combinations of the pane, no range columns
    rows: int


class Panes:
    """The kept panes of one model, and how to read a window through them."""

    def __init__(
        self, config: PanesConfig, label_delay: timedelta, name: str, store: PaneStore | None = None
    ) -> None:
        self.config = config
        self.label_delay = label_delay
        self.name = name
        self._store = store  # the kept panes also on disk (panes.directory)
        self._kept: dict[datetime, _Kept] = {}
        self._shape: CountRequest | None = None  # the request (without ranges) the panes were counted for
        self._flagged: frozenset[str] | None = None
        self._interior: tuple[tuple[tuple[datetime, tuple[int, ...]], ...], pd.DataFrame] | None = None
        self._checked_at: datetime | None = None
        self._verified: dict[datetime, datetime] = {}  # pane -> when its counts were last read whole
        self._verify_credit = 0.0  # panes owed a recount (accrues at kept panes / recheck)
        self._verified_at: datetime | None = None  # the tick that last recounted
        self._full = False  # the memory budget stopped keeping panes (logged once)

    def read(
        self, source: CountingSource, request: CountRequest, start: datetime, end: datetime, now: datetime
    ) -> PanesRead | None:
        """``request`` counted over ``[start, end)``; ``None`` when the panes cannot serve it (the
        caller reads the whole range as usual)."""
        shape = replace(request, ranges=())
        if shape != self._shape:
            self._forget()
            self._shape = shape
            self._load(shape)
        late, pieces = self._recheck(source, now), 0
        verified = self._verify(source, now)
        if verified is None:
            return None
        pieces, changed = verified[0], verified[2]
        late += verified[1]
        self._sync()  # a pane the recheck dropped loses its file now, not after reads that may fail
        sealed_before = now - self.label_delay - self.config.lateness
        cuts = {moment for r in request.ranges for moment in r} | {start, end}
        # panes that slid out of every window, or are no longer sealed (the clock moved back)
        if any(t < start or t + self.config.size > sealed_before for t in self._kept):
            self._kept = {
                t: k for t, k in self._kept.items() if start <= t <= sealed_before - self.config.size
            }
            self._full = False
        whole = [
            pane
            for pane in pane_starts(start, min(end, sealed_before), self.config.size)
            # sealed (no rows may still be written into it), inside the range, cut by no window bound
            if pane + self.config.size <= sealed_before
            and start <= pane
            and pane + self.config.size <= end
            and not any(pane < c < pane + self.config.size for c in cuts)
        ]
        new = [] if self._full else [pane for pane in whole if pane not in self._kept]
        # one statement per run of new panes; near the memory budget, runs of the panes likely to fit
        most = _PANES_PER_READ
        if new and self._kept:
            per_pane = max(1.0, self.kept_rows() / len(self._kept))
            most = max(1, min(most, int((self.config.max_rows - self.kept_rows()) / per_pane)))
        for run in pane_runs(new, self.config.size, most):
            if self._full:
                break
            counted = self._count_panes(source, shape, run)
            pieces += 1
            if counted is None:
                return None
            for pane, kept in counted.items():
                if self._keep(pane, kept):
                    self._verified[pane] = now  # counted whole just now
        usable = [pane for pane in whole if pane in self._kept]
        frames = [self._merged(usable, request.ranges)] if usable else []
        rejected: Counter[str] = Counter()
        for lo, hi in _gaps(start, end, usable, self.config.size):
            batch = source.read_counts(request, lo, hi)
            pieces += 1
            if batch is None or not self._same_flags(batch.flagged):
                self._forget()
                return None
            frames.append(batch.frame)
            # a read may count unreadable timestamps outside its range (they have no time): once, at the tail
            rejected += (
                batch.rejected
                if hi == end
                else Counter({k: n for k, n in batch.rejected.items() if k != "timestamp_invalid"})
            )
        frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        flagged = self._flagged if self._flagged is not None else frozenset()
        self._sync()
        return PanesRead(Batch(frame, rejected, counted=True, flagged=flagged), late, pieces, changed)

    def _sync(self) -> None:
        """The folder (``panes.directory``) made to hold exactly the kept panes."""
        if self._store is not None:
            flagged = self._flagged if self._flagged is not None else frozenset()
            self._store.sync({t: (k.frame, k.rows) for t, k in self._kept.items()}, flagged)

    def resumable(self, request: CountRequest) -> bool:
        """Whether a previous run's panes for ``request`` are on disk and not read yet: the first
        read goes through them even before the source has shown that it reads narrow pieces
        (their recheck is what shows it)."""
        shape = replace(request, ranges=())
        return self._store is not None and self._shape is None and self._store.holds(shape, self.config.size)

    @property
    def store_up(self) -> bool | None:
        """Whether the kept panes are written to ``panes.directory`` (None: no directory)."""
        return None if self._store is None else self._store.up

    def close(self) -> None:
        """Let the panes' folder go (its lock)."""
        if self._store is not None:
            self._store.close()

    def kept_rows(self) -> int:
        """Counted combinations held, all kept panes together."""
        return sum(len(k.frame) for k in self._kept.values())

    # -- internals --------------------------------------------------------------------------------

    def _count_panes(
        self, source: CountingSource, shape: CountRequest, panes: list[datetime]
    ) -> dict[datetime, _Kept] | None:
        counted = count_panes(source, shape, panes, self.config.size)
        if counted is None or not self._same_flags(counted.flagged):
            self._forget()
            return None
        return {pane: _Kept(frame, int(frame[WEIGHT].sum())) for pane, frame in counted.frames.items()}

    def _keep(self, pane: datetime, kept: _Kept) -> bool:
        if self.kept_rows() + len(kept.frame) > self.config.max_rows:
            if not self._full:
                log.warning(
                    "model %s: sealed panes hold %d counted combinations (panes.max_rows %d): reading "
                    "the rest of each window from the source",
                    self.name,
                    self.kept_rows(),
                    self.config.max_rows,
                )
                self._full = True
            return False
        self._kept[pane] = kept
        return True

    def _same_flags(self, flagged: frozenset[str]) -> bool:
        """Whether a piece thresholded the same indicator attributes as the kept panes (a column
        that changed type would make the pieces' combinations incomparable)."""
        if self._flagged is None:
            self._flagged = flagged
        return flagged == self._flagged

    def _merged(self, panes: list[datetime], ranges: tuple[tuple[datetime, datetime], ...]) -> pd.DataFrame:
        """The kept panes' combinations with each window's 0/1 column, merged (cached while the
        set of panes and their windows stays the same)."""
        size = self.config.size
        layout = tuple(
            (pane, tuple(int(lo <= pane and pane + size <= hi) for lo, hi in ranges)) for pane in panes
        )
        if self._interior is not None and self._interior[0] == layout:
            return self._interior[1]
        frames = [
            self._kept[pane].frame.assign(**{range_column(i): flag for i, flag in enumerate(flags)})
            for pane, flags in layout
        ]
        both = pd.concat(frames, ignore_index=True)
        keys = [c for c in both.columns if c != WEIGHT]
        merged = both.groupby(keys, dropna=False, sort=False)[WEIGHT].sum().reset_index()
        self._interior = (layout, merged)
        return merged

    def _recheck(self, source: CountingSource, now: datetime) -> int:
        """Recount the kept panes every ``recheck``; drop blocks whose total changed. Late rows found."""
        # (a clock that moved back makes it due at once: it says nothing of the time since the last one)
        if self._checked_at is not None and timedelta(0) <= now - self._checked_at < self.config.recheck:
            return 0
        self._checked_at = now
        panes = sorted(self._kept)
        if not panes or self._shape is None:
            return 0
        size = self.config.size
        blocks = _blocks(panes, size)
        ranges = tuple((block[0], block[-1] + size) for block in blocks)
        request = CountRequest(self._shape.timestamp, (), (), ranges)
        totals = source.count_ranges(request, panes[0], panes[-1] + size)
        if totals is None:
            return 0
        late = 0
        for block, total in zip(blocks, totals, strict=True):
            kept = sum(self._kept[p].rows for p in block)
            if total != kept:  # more rows: late ones; fewer: deleted (retention) - either way, read again
                late += max(0, total - kept)
                for p in block:
                    del self._kept[p]
                self._interior = None
        if late:
            log.warning("model %s: %d late rows found in sealed panes; read again", self.name, late)
        return late

    def _verify(self, source: CountingSource, now: datetime) -> tuple[int, int, int] | None:
        """Count again, whole, the kept panes whose turn it is, and replace those whose combinations
        changed. ``(statements, late rows, panes changed)``; ``None`` when a recount failed."""
        assert self._shape is not None
        for pane in self._verified.keys() - self._kept.keys():
            del self._verified[pane]
        for pane in self._kept:
            # not after now: a clock stepped back would leave the panes it stamped never due
            self._verified[pane] = min(self._verified.get(pane, now), now)
        recheck = self.config.recheck
        if self._verified_at is not None and now > self._verified_at:
            owed = len(self._kept) * ((now - self._verified_at) / recheck)
            self._verify_credit = min(float(len(self._kept)), self._verify_credit + owed)
        self._verified_at = now
        order = sorted(self._kept, key=lambda p: (self._verified[p], p))
        overdue = sum(1 for p in order if now - self._verified[p] >= recheck)
        turn = max(overdue, int(self._verify_credit))
        if not turn:
            return 0, 0, 0
        self._verify_credit = max(0.0, self._verify_credit - turn)
        size = self.config.size
        statements = late = changed = 0
        for block in _blocks(sorted(order[:turn]), size):
            counted = self._count_panes(source, self._shape, block)
            statements += 1
            if counted is None:
                return None
            for pane, fresh in counted.items():
                kept = self._kept[pane]
                if not _same_counts(kept.frame, fresh.frame):
                    late += max(0, fresh.rows - kept.rows)
                    changed += 1
                    self._kept[pane] = fresh
                    self._interior = None
                self._verified[pane] = now
        if changed:
            log.warning(
                "model %s: %d sealed pane(s) changed since their counts were kept (rows updated, "
                "replaced or written late); counted again",
                self.name,
                changed,
            )
        return statements, late, changed

    def _forget(self) -> None:
        self._kept.clear()
        self._interior = None
        self._flagged = None
        if self._store is not None:
            self._store.clear()

    def _load(self, shape: CountRequest) -> None:
        """The panes a previous run kept for ``shape`` (within the memory budget)."""
        if self._store is None:
            return
        for stored in self._store.load(shape, self.config.size):
            if self._same_flags(stored.flagged) and self._keep(stored.pane, _Kept(stored.frame, stored.rows)):
                self._checked_at = None  # rows may have been written while nobody watched: recheck now
                if stored.written is not None:  # counted then at the latest: due within recheck of it
                    self._verified[stored.pane] = stored.written


def _same_counts(kept: pd.DataFrame, fresh: pd.DataFrame) -> bool:
    """Whether two pane counts hold the same combinations with the same counts, in any order."""
    if len(kept) != len(fresh) or set(kept.columns) != set(fresh.columns):
        return False
    return bool(np.array_equal(np.sort(_row_hashes(kept)), np.sort(_row_hashes(fresh[list(kept.columns)]))))


def _row_hashes(frame: pd.DataFrame) -> np.ndarray:
    """One 64-bit hash per row, of values made comparable across dtypes: integers as integers (exact
    beyond 2**53), other numbers as float64, anything else as text, every missing value alike."""

    def canonical(column: pd.Series) -> pd.Series:
        if pd.api.types.is_bool_dtype(column) or pd.api.types.is_integer_dtype(column):
            return column.astype("Int64")
        if pd.api.types.is_numeric_dtype(column):
            return column.astype("float64")
        return column.map(lambda v: None if _missing(v) else str(v)).astype(object)

    both = pd.DataFrame({str(c): canonical(frame[c]) for c in frame.columns})
    return pd.util.hash_pandas_object(both, index=False).to_numpy()


def _missing(value: object) -> bool:
    try:
        return bool(pd.isna(value))  # type: ignore[call-overload]
    except (TypeError, ValueError):  # a list or array: a value
        return False


def count_panes(
    source: CountingSource,
    shape: CountRequest,
    panes: list[datetime],
    size: timedelta,
    since: datetime | None = None,
    until: datetime | None = None,
) -> CountedPanes | None:
    """Consecutive ``panes`` counted whole: from a source's own running counts where it keeps them
    (log files it tails; ``since``: no pane before it is asked for again, default the first of
    ``panes``; ``until``: the end of the newest that will be, default the end of the last of
    ``panes``), else in one statement, each pane's time range a 0/1 column, the combinations of each
    pane those with its column 1 (every row lies in one pane); ``None`` where the source cannot count."""
    if isinstance(source, PaneCountingSource):
        kept = source.count_panes(
            shape,
            panes,
            size,
            panes[0] if since is None else since,
            panes[-1] + size if until is None else until,
        )
        if kept is not None:
            return kept
    ranges = tuple((pane, pane + size) for pane in panes)
    batch = source.read_counts(replace(shape, ranges=ranges), panes[0], panes[-1] + size)
    if batch is None:
        return None
    flags = [range_column(i) for i in range(len(panes))]
    frames = {}
    for i, pane in enumerate(panes):
        frames[pane] = batch.frame[batch.frame[flags[i]] == 1].drop(columns=flags).reset_index(drop=True)
    return CountedPanes(frames, batch.flagged, batch.rejected)


def pane_starts(start: datetime, end: datetime, size: timedelta) -> Iterator[datetime]:
    """The starts of the epoch-aligned panes that overlap ``[start, end)``."""
    pane = _EPOCH + ((start.astimezone(UTC) - _EPOCH) // size) * size
    while pane < end:
        yield pane
        pane += size


def _blocks(panes: list[datetime], size: timedelta) -> list[list[datetime]]:
    """``panes`` (sorted) in blocks of consecutive panes, about :data:`_RECHECK_BLOCKS` in all."""
    runs: list[list[datetime]] = []
    for pane in panes:
        if runs and runs[-1][-1] + size == pane:
            runs[-1].append(pane)
        else:
            runs.append([pane])
    per = max(1, -(-len(panes) // _RECHECK_BLOCKS))
    return [run[i : i + per] for run in runs for i in range(0, len(run), per)]


def pane_runs(panes: list[datetime], size: timedelta, most: int) -> list[list[datetime]]:
    """``panes`` (sorted) in runs of consecutive panes, at most ``most`` to a run."""
    runs: list[list[datetime]] = []
    for pane in panes:
        if runs and runs[-1][-1] + size == pane and len(runs[-1]) < most:
            runs[-1].append(pane)
        else:
            runs.append([pane])
    return runs


def _gaps(
    start: datetime, end: datetime, panes: list[datetime], size: timedelta
) -> Iterator[tuple[datetime, datetime]]:
    """The parts of ``[start, end)`` no pane in ``panes`` (sorted) covers, as maximal ranges."""
    at = start
    for pane in panes:
        if pane > at:
            yield at, pane
        at = pane + size
    if at < end:
        yield at, end
