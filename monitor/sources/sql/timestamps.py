"""How a SQL table stores its timestamps, and how a window's bounds are bound against them.

A log's timestamp column may hold SQL date-times, epoch numbers or ISO-8601 text (of one or
several styles); :func:`detect_encoding` tells which from the column's extremes, and
:class:`TimestampEncoding` turns a window's bounds into parameters the database compares
(and, for text, an index-friendly prefilter).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal, cast

import sqlalchemy as sa
from sqlalchemy.sql.type_api import TypeEngine

from monitor.core.times import utc
from monitor.sources.count_sql import Instant, Prefilter

__all__ = [
    "SECOND_DAYS",
    "StoredTimestamps",
    "TimestampEncoding",
    "ceil_second",
    "day_range",
    "detect_encoding",
    "instant",
    "julian_day",
    "placeholder_encoding",
]

logger = logging.getLogger(__name__)

# ISO-8601 text with seconds and a UTC designator (or none: naive means UTC). Text like this
# sorts chronologically as long as every row uses the same date/time separator.
_ISO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}(?P<sep>[T ])\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]00(?::?00)?)?$")
_ISO_DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class TimestampEncoding:
    """How a timestamp column is stored, hence how the window bounds are bound against it.

    ``kind`` is one of

    - ``epoch``: numbers of seconds (``number`` says int, float or Decimal);
    - ``datetime``: SQL date-times (``aware`` when the column has a time zone);
    - ``iso``: ISO-8601 text in UTC with separator ``separator`` at the column's extremes.
      Text bounds are whole dates widened by a day on each side: the rows between the extremes
      may use another separator or a non-UTC offset (offsets are at most +-14 h), and a text
      bound to the second would silently drop them. On SQLite the source adds an exact
      instant test (``julianday``) that keeps unreadable values. With ``exact`` (only for a
      user's query that binds ``:start``/``:end`` itself and declares ``timestamp_format:
      iso``) the bounds are ``YYYY-MM-DD<sep>HH:MM:SS``, start floored and end ceiled;
    - ``iso_day``: ISO-like text of mixed styles or offsets at the extremes: whole dates, as
      ``iso``;
    - ``unknown``: anything else; no database-side filter at all.
    """

    kind: Literal["epoch", "datetime", "iso", "iso_day", "unknown"]
    number: Literal["int", "float", "decimal"] = "float"
    aware: bool = True
    separator: str = "T"
    exact: bool = False  # iso: bind to the second (a user's query with :start/:end); else whole days

    def bounds(self, start: datetime, end: datetime) -> tuple[Any, Any, TypeEngine[Any]] | None:
        """``(low, high, sql_type)`` for ``low <= ts < high``; ``None`` when no filter is possible."""
        start, end = utc(start), utc(end)
        if self.kind == "epoch":
            lo, hi = start.timestamp(), end.timestamp()
            if self.number == "int":
                # ts >= lo <=> ts >= ceil(lo) for integers; binding ints keeps an integer index usable.
                return math.ceil(lo), math.ceil(hi), sa.BigInteger()
            if self.number == "decimal":
                return Decimal(repr(lo)), Decimal(repr(hi)), sa.Numeric()
            return lo, hi, sa.Float()
        if self.kind == "datetime":
            if self.aware:
                return start, end, sa.DateTime(timezone=True)
            # A naive column holds UTC wall time; an aware bound would be converted with the session's zone.
            return start.replace(tzinfo=None), end.replace(tzinfo=None), sa.DateTime()
        if self.kind == "iso" and self.exact:
            return iso_text(start, self.separator), iso_text(ceil_second(end), self.separator), sa.String()
        if self.kind in ("iso", "iso_day"):
            lo_day = start.date() - timedelta(days=1)
            hi_day = end.date() + timedelta(days=2)
            return lo_day.isoformat(), hi_day.isoformat(), sa.String()
        return None


def iso_text(moment: datetime, separator: str = " ", *, timespec: str = "seconds") -> str:
    """``moment`` in UTC as ISO-8601 text without offset, the year always four digits (strftime's
    ``%Y`` writes ``999``, which compares above ``2026`` as text and which ``julianday`` cannot read).

    >>> from datetime import UTC
    >>> iso_text(datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC), "T")
    '0999-01-02T03:04:05'
    """
    return utc(moment).replace(tzinfo=None).isoformat(sep=separator, timespec=timespec)


def detect_encoding(low: Any, high: Any) -> TimestampEncoding | None:
    """The encoding of a column from its smallest and largest stored values (``None``: no values).

    The extremes catch the usual way formats get mixed - the writer changed format at some
    point, so old rows sort to one end and new rows to the other.

    >>> detect_encoding("2026-01-01T00:00:00Z", "2026-03-01T10:00:00.5+00:00").kind
    'iso'
    >>> detect_encoding("2026-01-01 00:00:00", "2026-03-01T10:00:00").kind
    'iso_day'
    >>> detect_encoding(1767225600, 1767229200).number
    'int'
    """
    if low is None or high is None:
        return None
    kinds = {_value_kind(low), _value_kind(high)}
    if len(kinds) != 1:
        return TimestampEncoding("unknown")
    kind = kinds.pop()
    if kind == "datetime":
        return TimestampEncoding("datetime", aware=low.tzinfo is not None and high.tzinfo is not None)
    if kind in ("int", "float", "decimal"):
        return TimestampEncoding("epoch", number=cast(Literal["int", "float", "decimal"], kind))
    if kind == "text":
        styles = [_ISO_UTC.match(v) for v in (low, high)]
        if all(styles) and len({m.group("sep") for m in styles if m}) == 1:
            return TimestampEncoding("iso", separator=styles[0].group("sep") if styles[0] else "T")
        if all(_ISO_DATE_PREFIX.match(v) for v in (low, high)):
            return TimestampEncoding("iso_day")
    return TimestampEncoding("unknown")


def _value_kind(value: Any) -> str:
    if isinstance(value, datetime):
        return "datetime"
    if isinstance(value, bool | date):
        return "other"  # a bare date or a flag is not a timestamp we can bind against
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, Decimal):
        return "decimal"
    if isinstance(value, str):
        return "text"
    return "other"


SECOND_DAYS = 1 / 86400  # one second in days: slack for julianday's float rounding at the bounds
_UNIX_EPOCH_JD = 2440587.5


def julian_day(moment: datetime) -> float:
    """The Julian day SQLite's ``julianday()`` gives the same instant."""
    return utc(moment).timestamp() / 86400 + _UNIX_EPOCH_JD


def ceil_second(moment: datetime) -> datetime:
    if moment.microsecond:
        return moment.replace(microsecond=0) + timedelta(seconds=1)
    return moment


def placeholder_encoding(timestamp_format: str) -> TimestampEncoding:
    """How ``:start``/``:end`` of the user's own query are bound: the query is opaque, so the config says."""
    if timestamp_format == "epoch":
        return TimestampEncoding("epoch")
    if timestamp_format in ("iso", "iso_utc"):
        return TimestampEncoding("iso", separator="T", exact=True)
    return TimestampEncoding("datetime", aware=True)  # auto | datetime


class StoredTimestamps:
    """How one source's timestamp ``column`` is stored, learnt from its smallest and largest value.

    Detected at every read (two index lookups where the column is indexed): a writer that changes
    format while the service runs shows up at the extremes, and the prefilter follows. ``min`` and
    ``max`` are separate scalar subqueries: SQLite answers a lone ``min()`` or ``max()`` from the
    index, but scans every row for a select that has both.
    """

    def __init__(self, column: str | None, declared: str, describe: Callable[[], str]) -> None:
        self.column = column
        self.declared = declared  # timestamp_format
        self.encoding: TimestampEncoding | None = None  # what the last read found
        self._describe = describe
        self._warned_unknown = False

    def detect(self, conn: sa.Connection, source: sa.FromClause) -> TimestampEncoding | None:
        """The encoding now (``None``: no rows yet, nothing to learn; try again next time)."""
        assert self.column is not None
        column = source.c[self.column]
        low, high = conn.execute(
            sa.select(
                sa.select(sa.func.min(column)).scalar_subquery(),
                sa.select(sa.func.max(column)).scalar_subquery(),
            )
        ).one()
        encoding = detect_encoding(low, high)
        if encoding is None:
            return None
        self._check_declared_format(encoding)
        if encoding.kind == "iso" and self.declared == "iso_utc":
            # declared: every row is UTC text in the extremes' style, so text bounds to the second are safe
            encoding = replace(encoding, exact=True)
        if encoding.kind == "unknown" and not self._warned_unknown:
            self._warned_unknown = True
            logger.warning(
                "%s: timestamps in %r are of mixed or unrecognised form (%r .. %r); reading without "
                "a database-side time filter",
                self._describe(),
                self.column,
                type(low).__name__,
                type(high).__name__,
            )
        if self.encoding is not None and encoding != self.encoding:
            logger.warning(
                "%s: timestamps in %r changed form (%s -> %s); prefiltering for the new form",
                self._describe(),
                self.column,
                self.encoding.kind,
                encoding.kind,
            )
        self.encoding = encoding
        return encoding

    def _check_declared_format(self, encoding: TimestampEncoding) -> None:
        """The stored values decide how to bind; say so when they contradict ``timestamp_format``."""
        kind = "iso" if encoding.kind in ("iso", "iso_day") and self.declared != "iso_utc" else encoding.kind
        # SQLite stores DATETIME as text: "datetime" and "iso" both mean text there.
        compatible: dict[str, set[str]] = {
            "auto": {kind},
            "iso": {"iso"},
            "iso_utc": {"iso"},
            "epoch": {"epoch"},
            "datetime": {"datetime", "iso"},
        }
        if kind not in compatible[self.declared]:
            logger.warning(
                "%s: timestamp_format is %r but %r holds %s values; binding for what is stored",
                self._describe(),
                self.declared,
                self.column,
                encoding.kind,
            )


def instant(column: sa.ColumnElement[Any], encoding: TimestampEncoding, sqlite: bool) -> Instant | None:
    """The stored timestamp as an exactly comparable instant, with its bound expression; ``None``
    where the database cannot read it exactly (text outside SQLite, unknown forms)."""
    if encoding.kind in ("epoch", "datetime"):

        def bound(moment: datetime, name: str) -> sa.ColumnElement[Any]:
            low, _, sql_type = encoding.bounds(moment, moment) or (None, None, None)
            return sa.bindparam(name, low, type_=sql_type)

        return column, bound
    if encoding.kind in ("iso", "iso_day") and sqlite:
        # SQLite reads both sides alike, to the millisecond (julianday keeps milliseconds)
        def julian(moment: datetime, name: str) -> sa.ColumnElement[Any]:
            text = iso_text(moment, " ", timespec="microseconds")
            return sa.func.julianday(sa.bindparam(name, text, type_=sa.String()))

        return sa.func.julianday(column), julian
    return None


def day_range(column: sa.ColumnElement[Any], encoding: TimestampEncoding) -> Prefilter:
    """Text timestamps: the whole-day text range of a time range, which an index on the column serves."""

    def prefilter(lo: datetime, hi: datetime, name: str) -> sa.ColumnElement[bool]:
        low, high, sql_type = encoding.bounds(lo, hi) or (None, None, None)
        return sa.and_(
            column >= sa.bindparam(f"{name}_lo", low, type_=sql_type),
            column < sa.bindparam(f"{name}_hi", high, type_=sql_type),
        )

    return prefilter
