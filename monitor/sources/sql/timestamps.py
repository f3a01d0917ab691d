"""How a SQL table stores its timestamps, and how a window's bounds are bound against them.

A log's timestamp column may hold SQL date-times, epoch numbers or ISO-8601 text (of one or
several styles); :func:`detect_encoding` tells which from the column's extremes, and
:class:`TimestampEncoding` turns a window's bounds into parameters the database compares
(and, for text, an index-friendly prefilter).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal, cast

import sqlalchemy as sa
from sqlalchemy.sql.type_api import TypeEngine

from monitor.core.times import utc

__all__ = [
    "SECOND_DAYS",
    "TimestampEncoding",
    "ceil_second",
    "detect_encoding",
    "julian_day",
    "placeholder_encoding",
]

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
            fmt = f"%Y-%m-%d{self.separator}%H:%M:%S"
            return start.strftime(fmt), ceil_second(end).strftime(fmt), sa.String()
        if self.kind in ("iso", "iso_day"):
            lo_day = start.date() - timedelta(days=1)
            hi_day = end.date() + timedelta(days=2)
            return lo_day.isoformat(), hi_day.isoformat(), sa.String()
        return None


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
