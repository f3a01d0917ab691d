"""The source contract: a window of rows by event time.

A source returns every logged row whose event timestamp lies in ``[start, end)``, with
the log's own column names, and the timestamp column converted to timezone-aware UTC
``datetime64``. Rows whose timestamp cannot be parsed are dropped and counted in
``rejected`` (reason ``timestamp_invalid``), never fatal. A file that cannot be parsed
(half written, corrupt) is skipped and named in ``skipped_files``; the next read tries it
again. A source that cannot be read at all raises :class:`~monitor.core.errors.SourceError`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from monitor.sources.count_sql import CountRequest

__all__ = ["WEIGHT", "Batch", "CountingSource", "Source", "normalize_timestamps"]

#: The column of a counted batch holding each combination's row count.
WEIGHT = "__rows"


@dataclass
class Batch:
    """Rows of a window; or, when ``counted``, their distinct combinations with a row count each
    (:mod:`monitor.sources.count_sql`: the count in column :data:`WEIGHT`, no timestamp column, the
    request's time ranges as 0/1 columns)."""

    frame: pd.DataFrame
    rejected: Counter[str] = field(default_factory=Counter)  # bad rows dropped, by reason
    skipped_files: tuple[str, ...] = ()  # files that could not be parsed this time
    counted: bool = False
    flagged: frozenset[str] = frozenset()  # counted: indicator attributes the database thresholded

    @property
    def n_rows(self) -> int:
        """The rows the batch stands for."""
        if self.counted:
            return int(self.frame[WEIGHT].sum())
        return len(self.frame)


class Source(Protocol):
    def read(self, start: datetime, end: datetime) -> Batch:
        """Rows with ``start <= timestamp < end``."""
        ...

    def describe(self) -> str:
        """Where the source reads from, for logs: passwords masked."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class CountingSource(Source, Protocol):
    """A source that can count a window's rows by columns (a database: ``GROUP BY``)."""

    def read_counts(self, request: CountRequest, start: datetime, end: datetime) -> Batch | None:
        """Counted combinations of ``request``'s columns; ``None``: cannot, read rows instead."""
        ...

    def count_ranges(self, request: CountRequest, start: datetime, end: datetime) -> tuple[int, ...] | None:
        """The number of rows in each of ``request``'s time ranges; ``None``: cannot."""
        ...

    @property
    def narrow_reads(self) -> bool:
        """Whether counting a small part of a window costs about that part (an index range, file
        statistics), not a scan of much more: only then do sealed panes pay (:mod:`monitor.reading.panes`)."""
        ...


def normalize_timestamps(values: pd.Series) -> pd.Series:
    """ISO text, SQL datetimes or epoch seconds -> UTC datetimes (NaT where unparseable).

    Naive datetimes are taken as UTC.

    >>> normalize_timestamps(pd.Series(["2026-01-01T00:00:00Z", "1767225600", "bad", 1767225600.5])).tolist()[:2]
    [Timestamp('2026-01-01 00:00:00+0000', tz='UTC'), Timestamp('2026-01-01 00:00:00+0000', tz='UTC')]
    """
    if pd.api.types.is_datetime64_any_dtype(values):
        out = pd.to_datetime(values, utc=True)
        return out
    if pd.api.types.is_numeric_dtype(values):
        return pd.to_datetime(values.astype("float64"), unit="s", utc=True, errors="coerce")
    as_text = values.astype("string")
    numeric = pd.to_numeric(as_text, errors="coerce")
    parsed = pd.to_datetime(as_text.where(numeric.isna()), utc=True, errors="coerce", format="ISO8601")
    from_epoch = pd.to_datetime(numeric, unit="s", utc=True, errors="coerce")
    return parsed.where(numeric.isna(), from_epoch)


def filter_window(frame: pd.DataFrame, column: str, start: datetime, end: datetime) -> Batch:
    """Normalise ``column`` to UTC datetimes and keep ``[start, end)``; count bad timestamps."""
    if column not in frame.columns:
        from monitor.core.errors import SourceError

        raise SourceError(f"the timestamp column {column!r} is missing; columns are {list(frame.columns)}")
    ts = normalize_timestamps(frame[column])
    bad = ts.isna().to_numpy()
    rejected: Counter[str] = Counter()
    if bad.any():
        rejected["timestamp_invalid"] = int(bad.sum())
    start_ts, end_ts = pd.Timestamp(start), pd.Timestamp(end)
    keep = (~bad) & (ts >= start_ts).to_numpy() & (ts < end_ts).to_numpy()
    out = frame.loc[np.asarray(keep)].copy()
    out[column] = ts[np.asarray(keep)]
    return Batch(out.reset_index(drop=True), rejected)
