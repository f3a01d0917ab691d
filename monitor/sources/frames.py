"""What every kind of source does to the frames it returns: a window's rows filtered by their
parsed timestamps, and counted combinations turned into a counted :class:`~monitor.sources.contract.Batch`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from datetime import datetime

import numpy as np
import pandas as pd

from monitor.core.errors import SourceError
from monitor.sources.contract import (
    INVALID_TIMESTAMP,
    WEIGHT,
    Batch,
    CountRequest,
    missing_column,
)

__all__ = [
    "count_keys",
    "counted_batch",
    "filter_window",
    "flaggable",
    "merge_counts",
    "normalize_timestamps",
    "with_missing_flags",
]


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


def count_keys(chunks: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Each row's keys (the ungrouped :func:`count_statement`, in chunks of rows) counted as the
    ``GROUP BY`` would: distinct combinations, NULL/NaN a value like any other, with their count
    in :data:`WEIGHT`.

    Each chunk is counted on its own; the counts are merged whenever the chunks not merged yet hold
    as many combinations as the merged ones, so that every combination is regrouped a logarithmic
    number of times: linear in the rows when they are nearly all distinct (raw float scores), where
    merging at every chunk was quadratic, and one merge per chunk when they are few. At most the
    combinations so far, about twice over, and one chunk are held at a time."""
    merged: pd.DataFrame | None = None
    pending: list[pd.DataFrame] = []
    waiting = 0  # combinations in pending
    for rows in chunks:
        counted = (
            rows.groupby(list(rows.columns), dropna=False, sort=False).size().rename(WEIGHT).reset_index()
        )
        pending.append(counted)
        waiting += len(counted)
        if merged is None or waiting >= len(merged):
            merged = merge_counts([*([merged] if merged is not None else []), *pending])
            pending, waiting = [], 0
    assert merged is not None, "a read yields at least one chunk"
    return merge_counts([merged, *pending]) if pending else merged


def merge_counts(counted: list[pd.DataFrame]) -> pd.DataFrame:
    """Counted frames of the same columns as one: each combination once, with the sum of its counts."""
    if len(counted) == 1:
        return counted[0]
    both = pd.concat(counted, ignore_index=True)
    keys = [c for c in both.columns if c != WEIGHT]
    return both.groupby(keys, dropna=False, sort=False)[WEIGHT].sum().reset_index()


def with_missing_flags(frame: pd.DataFrame, request: CountRequest, flagged: Collection[str]) -> pd.DataFrame:
    """``frame`` with the flags of rows missing an indicator attribute set to NaN (as the rows'
    own values are), and the "missing" columns dropped."""
    frame = frame.copy()
    for i, flags in enumerate(request.indicators):
        if flags.attribute in flagged:
            missing = frame.pop(missing_column(i)).to_numpy() == 1
            for c in flags.columns:
                frame[c] = np.where(missing, np.nan, frame[c].to_numpy(dtype=np.float64))
    return frame


def flaggable(request: CountRequest, numeric: Collection[str]) -> frozenset[str]:
    """The indicator attributes whose columns are all of a numeric type: thresholded in the database."""
    return frozenset(f.attribute for f in request.indicators if all(c in numeric for c in f.columns))


def counted_batch(frame: pd.DataFrame, request: CountRequest, flagged: frozenset[str]) -> Batch:
    """A count statement's result as a counted :class:`Batch`: indicator flags of rows missing the
    attribute set to NaN, rows whose timestamp could not be read rejected (``timestamp_invalid``)."""
    frame = with_missing_flags(frame, request, flagged)
    rejected: Counter[str] = Counter()
    if INVALID_TIMESTAMP in frame.columns:
        invalid = frame[INVALID_TIMESTAMP].to_numpy() == 1
        if invalid.any():
            rejected["timestamp_invalid"] = int(frame.loc[invalid, WEIGHT].sum())
        frame = frame.loc[~invalid].drop(columns=INVALID_TIMESTAMP).reset_index(drop=True)
    return Batch(frame, rejected, counted=True, flagged=flagged)
