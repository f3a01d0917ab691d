"""Counts, not rows: what an evaluation asks a database for when the task's statistics are counts.

A binary model's metrics depend on its rows only through the number of rows with each
(score, label, prediction, group memberships) in each window. A :class:`~monitor.sources.contract.CountRequest` names
those columns and the windows' time ranges; :func:`count_statement` turns it into one
``GROUP BY`` a database runs, so that a window of millions of rows comes back as its distinct
combinations with a row count each (``WEIGHT``), and the rest of the evaluation weighs each
combination by its count. The values are the row path's, exactly:

- score, label, prediction, model and categorical group columns come back *as stored* (the
  same values the row path reads, only without repeats), and are cleaned by the same code;
- an indicator group's columns become 1/0 flags in the database only where the columns are of
  a numeric type: ``value >= threshold`` (NULL and NaN are not members), with one more 0/1
  column marking rows that have no value in any of the attribute's columns (the row path's
  "missing": :func:`~monitor.sources.frames.with_missing_flags` turns those rows' flags into NaN). On SQLite a stored
  value that is not a number (text in a REAL column) counts as missing, as the row path's
  ``to_numeric`` makes it;
- each time range becomes a 0/1 column ``__in_<i>`` computed from the stored instant, so that
  one scan serves the outcome and label windows of every configured window.

Everything is SQLAlchemy Core: identifiers quoted by SQLAlchemy, thresholds and time bounds
bound as parameters, a user's ``query:`` wrapped as a subquery. Where the database's own
``GROUP BY`` is the slow part (SQLite sorts every row), the ungrouped statement's rows are
counted by :func:`monitor.sources.frames.count_keys` instead, chunk by chunk, to the same combinations and counts.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from monitor.sources.contract import (
    INVALID_TIMESTAMP,
    WEIGHT,
    CountRequest,
    IndicatorFlags,
    missing_column,
    range_column,
)

__all__ = [
    "DOLLAR_DIALECT",
    "Between",
    "Instant",
    "Prefilter",
    "count_statement",
    "grouped_keys",
    "numeric_columns",
    "packed_column",
    "packed_names",
    "rounded_score",
    "unpack",
]

#: PostgreSQL's SQL with ``$1`` placeholders: what DuckDB (files) and ADBC's PostgreSQL driver read.
DOLLAR_DIALECT = postgresql.psycopg.dialect(paramstyle="numeric_dollar")  # type: ignore[no-untyped-call]

#: ``instant >= bound(moment)``: the stored instant, and a bound expression for a moment.
Instant = tuple[sa.ColumnElement[Any], Callable[[datetime, str], sa.ColumnElement[Any]]]
#: ``start <= instant < end`` as one condition, given the names of its two bound parameters: for
#: a log whose rows are compared with a bound in more than one way (text files: epoch numbers
#: against one bound, ISO text against another; :mod:`monitor.sources.files.text_timestamps`).
Between = Callable[[datetime, datetime, str, str], sa.ColumnElement[bool]]
#: An index-friendly condition that holds for every row in ``[start, end)`` (and maybe a few more),
#: its bind parameters named after the last argument.
Prefilter = Callable[[datetime, datetime, str], sa.ColumnElement[bool]]


def count_statement(
    source: sa.FromClause,
    request: CountRequest,
    instant: Instant | Between,
    *,
    read: tuple[datetime, datetime],
    prefilter: Prefilter | None = None,
    invalid: sa.ColumnElement[bool] | None = None,
    flagged: Collection[str] = (),
    sqlite: bool,
    grouped: bool = True,
    totals: bool = False,
    indexed: bool = False,
    round_score: bool = False,
    extra: Sequence[sa.Label[Any]] = (),
    keep: sa.ColumnElement[bool] | None = None,
    packed: bool = False,
) -> sa.Select[Any]:
    """``SELECT <keys>, count(*) FROM (<keys of each row in read>) GROUP BY <keys>``.

    With ``grouped=False``, only the inner statement: each row's keys, to be counted by
    :func:`count_keys` (where the database's own ``GROUP BY`` is the slow part: SQLite sorts).
    With ``totals=True``, one row: the number of rows in each of the request's ranges
    (the request's columns are not read). Where the timestamps are ``indexed`` (a table, not a
    query), each range is a ``count(*)`` subquery of its own, an index range each; else one pass,
    ``sum(CASE ...)`` per range - for each row, every range's comparison (on SQLite's text
    timestamps a ``julianday`` each: the tick that recounted 24 kept panes of a million rows took
    2.75 s in one pass; by ranges no tick of that benchmark took more than 0.27 s).

    ``instant`` reads the stored timestamp as something the database compares exactly (or is
    the comparison itself, :data:`Between`); ``prefilter`` (an index-friendly condition for a
    range) is ANDed in; rows where ``invalid`` holds are kept and marked in :data:`INVALID_TIMESTAMP`
    (they are rejected, as the row path does, unless the caller places them: see ``extra``).
    The indicator attributes in ``flagged`` (see :func:`~monitor.sources.frames.flaggable`) become flags; the others'
    columns are grouped by as stored. With ``round_score`` (the source knows the score column
    holds numbers) the score is grouped by rounded to ``request.score_decimals``
    (:func:`rounded_score`): continuous scores then come back as a few thousand values, not one
    per row. ``extra`` keys are grouped by too (what the caller needs to decide some rows
    itself, such as a text timestamp the database cannot read exactly). Only rows where ``keep``
    holds are counted at all (one model's rows of a log holding several: an index on the model
    column and the timestamp then serves the read). With ``packed`` the 0/1 keys - indicator flags,
    time ranges, unreadable timestamps - come as bits of one integer column (:func:`packed_names`,
    :func:`unpack`): a 2 M-row SQLite window returns 3 columns, not 14, to the Arrow reader, which
    spends about as long converting each column as SQLite spends computing it.
    """

    def between(start: datetime, end: datetime, lo: str, hi: str) -> sa.ColumnElement[bool]:
        if callable(instant):
            return instant(start, end, lo, hi)
        moment, bound = instant
        return sa.and_(moment >= bound(start, lo), moment < bound(end, hi))

    insides = [between(start, end, f"lo_{i}", f"hi_{i}") for i, (start, end) in enumerate(request.ranges)]
    lo, hi = read
    where = between(lo, hi, "read_lo", "read_hi")
    if totals and indexed:
        counts: list[sa.ColumnElement[Any]] = []
        for i, (start, end) in enumerate(request.ranges):
            start, end = max(start, lo), min(end, hi)  # within the read range, as one pass counts
            if start >= end:
                counts.append(sa.literal(0))
                continue
            inside = between(start, end, f"lo_{i}", f"hi_{i}")
            if prefilter is not None:
                inside = sa.and_(prefilter(start, end, f"day_{i}"), inside)
            if keep is not None:
                inside = sa.and_(keep, inside)
            counts.append(sa.select(sa.func.count()).select_from(source).where(inside).scalar_subquery())
        return sa.select(*(n.label(range_column(i)) for i, n in enumerate(counts)))
    day = None if prefilter is None else prefilter(lo, hi, "day")
    if keep is not None:  # ANDed outside every OR below: another model's unreadable rows are not ours
        day = keep if day is None else sa.and_(keep, day)
    if totals:
        where = where if day is None else sa.and_(day, where)
        sums = [sa.func.coalesce(sa.func.sum(sa.case((inside, 1), else_=0)), 0) for inside in insides]
        return (
            sa.select(*(n.label(range_column(i)) for i, n in enumerate(sums)))
            .select_from(source)
            .where(where)
        )
    keys: list[sa.ColumnElement[Any]] = [source.c[c].label(c) for c in request.columns]
    if round_score and request.score in request.columns and request.score_decimals is not None:
        at = request.columns.index(request.score)
        keys[at] = rounded_score(source.c[request.score], request.score_decimals, sqlite).label(request.score)
    bits: list[tuple[str, sa.ColumnElement[bool] | None]] = []  # 0/1 keys: (name, condition; None: always 1)
    for i, flags in enumerate(request.indicators):
        if flags.attribute in flagged:
            bits += _flags(source, flags, i, sqlite)
        else:
            keys += [source.c[c].label(c) for c in flags.columns if c not in request.columns]
    for i, ((start, end), inside) in enumerate(zip(request.ranges, insides, strict=True)):
        # a range holding the whole read holds every readable row: no comparison per row
        bits.append((range_column(i), None if start <= lo and hi <= end else inside))
    if invalid is not None:
        bits.append((INVALID_TIMESTAMP, invalid))
        where = sa.or_(where, invalid)
    if day is not None:  # after the OR: unreadable rows only of the read's days, as the row path reads
        where = sa.and_(day, where)
    if packed:
        keys += [
            sum((_flag(c) * (1 << k) for k, (_, c) in enumerate(bits[at : at + _WORD])), sa.literal(0)).label(
                packed_column(at // _WORD)
            )
            for at in range(0, len(bits), _WORD)
        ]
    else:
        keys += [_flag(c).label(name) for name, c in bits]
    keys += extra
    each = sa.select(*keys).select_from(source).where(where)
    return each if not grouped else grouped_keys(each)


#: 0/1 keys packed into one integer column (``packed``): an integer has 63 bits to spare.
_WORD = 62


def packed_column(index: int) -> str:
    return f"__bits_{index}"


def packed_names(request: CountRequest, flagged: Collection[str], *, invalid: bool) -> list[str]:
    """The 0/1 keys :func:`count_statement` packs with ``packed=True``, in bit order (see :func:`unpack`)."""
    names = []
    for i, flags in enumerate(request.indicators):
        if flags.attribute in flagged:
            names += [*flags.columns, missing_column(i)]
    names += [range_column(i) for i in range(len(request.ranges))]
    return [*names, INVALID_TIMESTAMP] if invalid else names


def unpack(frame: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """A counted frame with its packed columns turned back into one 0/1 column per name."""
    frame = frame.copy()
    for word in range(0, len(names), _WORD):
        packed = frame.pop(packed_column(word // _WORD)).to_numpy(dtype=np.int64)
        for k, name in enumerate(names[word : word + _WORD]):
            frame[name] = (packed >> k) & 1
    return frame


def _flag(condition: sa.ColumnElement[bool] | None) -> sa.ColumnElement[Any]:
    return sa.literal(1) if condition is None else sa.case((condition, 1), else_=0)


def grouped_keys(each: sa.Select[Any]) -> sa.Select[Any]:
    """``SELECT <keys>, count(*) FROM (<each row's keys>) GROUP BY <keys>``."""
    rows = each.subquery("r")
    return sa.select(*rows.c, sa.func.count().label(WEIGHT)).group_by(*rows.c)


def rounded_score(column: sa.ColumnElement[Any], decimals: int, sqlite: bool) -> sa.ColumnElement[Any]:
    """``floor(score * 10^decimals + 1/2) / 10^decimals`` in the database, bit for bit what
    :func:`monitor.tasks.binary.round_scores` computes (which the rows are cleaned with, so a value
    left unrounded here is rounded there): every step is one IEEE double operation. Values that are
    not numbers (SQLite text), NaN, infinities and values at or beyond ``2^48 / 10^decimals`` are
    left as stored (as numpy leaves them). SQLite has no
    ``floor`` everywhere: ``CAST(y AS INTEGER)`` truncates toward zero, one less below zero."""
    scale = sa.bindparam(None, float(10**decimals), type_=sa.Float())
    half = sa.bindparam(None, 0.5, type_=sa.Float())
    small = sa.bindparam(None, 2.0**48 / 10**decimals, type_=sa.Float())  # monitor.tasks.binary.ROUNDABLE
    if sqlite:
        y = column * scale + half
        whole = sa.cast(y, sa.Integer)
        floor = whole - sa.case((y < whole, 1), else_=0)
        number = sa.and_(_number(column, sqlite), sa.func.abs(column) < small)
        return sa.case((number, floor / scale), else_=column)
    y = sa.cast(column, sa.Double()) * scale + half
    return sa.case((sa.func.abs(column) < small, sa.func.floor(y) / scale), else_=column)


def _flags(
    source: sa.FromClause, flags: IndicatorFlags, index: int, sqlite: bool
) -> list[tuple[str, sa.ColumnElement[bool]]]:
    """A 1/0 flag per column, and 1/0 in :func:`missing_column` when no column has a number.

    (Two states per flag and one shared "missing" column keep the combinations few: a NULL
    flag per missing value would multiply them.)
    """
    threshold = sa.bindparam(f"threshold_{index}", flags.threshold, type_=sa.Float())
    out: list[tuple[str, sa.ColumnElement[bool]]] = [
        (c, sa.and_(_number(source.c[c], sqlite), source.c[c] >= threshold)) for c in flags.columns
    ]
    out.append(
        (missing_column(index), sa.and_(*(sa.not_(_number(source.c[c], sqlite)) for c in flags.columns)))
    )
    return out


def _number(column: sa.ColumnElement[Any], sqlite: bool) -> sa.ColumnElement[bool]:
    """A number: not NULL, not NaN (PostgreSQL and DuckDB order NaN above every number), and on SQLite
    not a stored value of another type (text that a REAL column could not convert stays text). SQLite
    orders every number below every text, and compares a numeric column with '' as text: ``x < ''``
    is that test, without a ``typeof()`` call per row (half the statement's time on a 2 M-row window)."""
    if sqlite:
        return sa.and_(column.is_not(None), column < sa.bindparam(None, "", type_=sa.String()))
    nan = sa.bindparam(None, float("nan"), type_=sa.Float())
    return sa.and_(column.is_not(None), column != nan)


def numeric_columns(columns: Iterable[tuple[str, sa.types.TypeEngine[Any]]]) -> frozenset[str]:
    """The names of the reflected ``(name, type)`` columns whose type holds numbers."""
    return frozenset(name for name, sql_type in columns if _holds_numbers(sql_type))


def _holds_numbers(sql_type: sa.types.TypeEngine[Any]) -> bool:
    # Float is no Numeric subclass in every SQLAlchemy 2.x; a type's Python type says it in all
    if isinstance(sql_type, sa.Boolean):
        return False
    try:
        return issubclass(sql_type.python_type, int | float | Decimal)
    except NotImplementedError:  # a dialect type without a Python equivalent
        return False
