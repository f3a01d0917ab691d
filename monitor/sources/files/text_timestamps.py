"""Timestamps written as text (CSV, JSON Lines), placed in time by DuckDB exactly as the row path places them.

The row path (:func:`~monitor.sources.frames.normalize_timestamps`) reads text that is a number as
epoch seconds - a float64, then pandas' own conversion to nanoseconds - and other text as ISO
8601 (naive = UTC); what it cannot read is rejected (``timestamp_invalid``). DuckDB decides the
two common shapes itself, exactly:

- epoch seconds written as digits (``1767225600``, ``1767225600.123456``; below 7e9, year
  2191): ``CAST(text AS DOUBLE)`` and pandas read the same float64 (both round correctly:
  identical on 1.8 M random decimal strings here). Rather than re-implement pandas' float to
  nanosecond conversion in SQL, each bound becomes the least float64 that pandas reads as that
  instant or later (:func:`epoch_threshold`, found by asking pandas), and DuckDB compares floats;
- ISO 8601 of the usual shape - ``2026-11-22T03:00:00``, a space for the ``T``, up to nine
  fraction digits, ``Z`` or ``±hh:mm`` or nothing (UTC), years 1900-2199 -:
  ``TRY_CAST(text AS TIMESTAMP_NS)`` gives pandas' nanosecond instant (``tests/monitor/
  test_file_counts.py`` compares them on random strings); an invalid date it refuses
  (``2026-02-30``) is left undecided, not rejected.

Everything else (``2026-01-01``, ``20260101T000000``, ``1e9``, `` 1767225600``, a JSON ``true``,
...) is not decided in SQL: such a row keeps its text as a key, and :func:`place` runs
``normalize_timestamps`` itself on the few distinct texts. Instants outside 1678-2261 are
refused there (:class:`Uncountable`): whether pandas can read them depends on the precision of
the *whole* column (one nanosecond-precise text and a year-2300 text becomes unreadable), which
a part of the column cannot tell.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import sqlalchemy as sa

from monitor.core.times import utc
from monitor.sources.files.parquet_counts import Uncountable
from monitor.sources.frames import normalize_timestamps

__all__ = ["EPOCH_TEXT", "ISO_TEXT", "TextInstant", "epoch_threshold", "place"]

#: Epoch seconds DuckDB reads (with :data:`_EPOCH_MAX`).
EPOCH_TEXT = r"[0-9]{1,10}(\.[0-9]{1,30})?"
_EPOCH_MAX = 7e9
#: ISO 8601 DuckDB reads to pandas' nanosecond.
ISO_TEXT = (
    r"(19|20|21)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[T ]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_YEARS = (1678, 2261)  # pandas reads these at any precision


class _TimestampNs(sa.types.UserDefinedType[Any]):
    """DuckDB's nanosecond timestamp."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "TIMESTAMP_NS"


@dataclass(frozen=True)
class TextInstant:
    """A text timestamp as DuckDB reads it: epoch seconds, or nanoseconds of ISO text, or neither.

    Two steps, so that each text is matched and cast once: :meth:`read` gives a subquery's
    columns, :meth:`of` the instant from that subquery."""

    epoch: sa.ColumnElement[float]  # NULL unless epoch seconds DuckDB reads exactly
    nanos: sa.ColumnElement[int]  # NULL unless ISO text DuckDB reads exactly

    NUMBER: ClassVar[str] = "__ts_number"
    NANOS: ClassVar[str] = "__ts_nanos"

    @classmethod
    def read(cls, text: sa.ColumnElement[str]) -> list[sa.Label[Any]]:
        """The text as nanoseconds of ISO text, else as digits read as a float64 (CASE, not AND:
        only what matched is cast)."""
        iso = sa.func.regexp_full_match(text, sa.bindparam(None, ISO_TEXT, type_=sa.String()))
        digits = sa.func.regexp_full_match(text, sa.bindparam(None, EPOCH_TEXT, type_=sa.String()))
        nanos = sa.func.epoch_ns(getattr(sa.func, "try")(sa.cast(text, _TimestampNs())))  # NULL if invalid
        return [
            sa.case((iso, nanos)).label(cls.NANOS),
            sa.case((iso, None), (digits, sa.cast(text, sa.Double()))).label(cls.NUMBER),
        ]

    @classmethod
    def of(cls, read: sa.Subquery) -> TextInstant:
        """The instant of a subquery with the columns of :meth:`read`."""
        number = read.c[cls.NUMBER]
        return cls(
            sa.case((number < sa.bindparam(None, _EPOCH_MAX, type_=sa.Double()), number)), read.c[cls.NANOS]
        )

    @property
    def decided(self) -> sa.ColumnElement[bool]:
        return sa.or_(self.epoch.is_not(None), self.nanos.is_not(None))

    def between(self, start: datetime, end: datetime, lo: str, hi: str) -> sa.ColumnElement[bool]:
        """``start <= instant < end`` (see :data:`~monitor.sources.count_sql.Between`)."""
        return sa.or_(
            sa.and_(
                self.epoch >= sa.bindparam(f"{lo}_s", epoch_threshold(start), type_=sa.Double()),
                self.epoch < sa.bindparam(f"{hi}_s", epoch_threshold(end), type_=sa.Double()),
            ),
            sa.and_(
                self.nanos >= sa.bindparam(f"{lo}_ns", _nanos(start), type_=sa.BigInteger()),
                self.nanos < sa.bindparam(f"{hi}_ns", _nanos(end), type_=sa.BigInteger()),
            ),
        )


@functools.lru_cache(maxsize=4096)  # a tailing sidecar asks for the same pane bounds every minute
def epoch_threshold(at: datetime) -> float:
    """The least float64 of epoch seconds that the row path reads as ``at`` or later."""
    target = pd.Timestamp(utc(at))
    guess = (utc(at) - _EPOCH) / timedelta(seconds=1)  # within a unit in the last place
    below, above = [guess], [guess]
    for _ in range(8):
        below.append(float(np.nextafter(below[-1], -np.inf)))
        above.append(float(np.nextafter(above[-1], np.inf)))
    candidates = np.array([*reversed(below), *above[1:]])
    later = (normalize_timestamps(pd.Series(candidates)) >= target).to_numpy()
    if later[0] or not later[-1] or (np.diff(later.astype(np.int8)) < 0).any():
        raise Uncountable(f"no float64 threshold for {at.isoformat()}")  # never seen; safe if it were
    return float(candidates[int(np.argmax(later))])


def place(
    values: Sequence[object], ranges: Sequence[tuple[datetime, datetime]]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Undecided timestamps, read by the row path's own code: which are unreadable, and which lie
    in each of ``ranges``."""
    moments = normalize_timestamps(pd.Series(list(values), dtype=object))
    valid = moments.notna().to_numpy()
    if valid.any():
        years = moments[valid].dt.year
        if (years < _YEARS[0]).any() or (years > _YEARS[1]).any():
            raise Uncountable("a timestamp outside the years 1678-2261 (pandas reads those per column)")
    inside = [
        valid & (moments >= pd.Timestamp(utc(lo))).to_numpy() & (moments < pd.Timestamp(utc(hi))).to_numpy()
        for lo, hi in ranges
    ]
    return ~valid, inside


def _nanos(at: datetime) -> int:
    return ((utc(at) - _EPOCH) // timedelta(microseconds=1)) * 1000
