"""The statements a SQL source runs, built with SQLAlchemy Core: identifiers quoted by SQLAlchemy,
window bounds and thresholds bound as parameters, a user's ``query:`` wrapped as a subquery - the
only SQL text ever executed as the user wrote it.

The window bounds are bound in the representation the timestamp column stores
(:class:`~monitor.sources.sql.timestamps.TimestampEncoding`), so that the database can use an index
on it. For rows that is only a prefilter: they are always filtered again, exactly, with
:func:`~monitor.sources.frames.filter_window`. Counts are exact in the database itself
(:func:`~monitor.sources.count_sql.count_statement`), or not counted there at all.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from monitor.core.errors import ConfigError
from monitor.sources.contract import CountRequest
from monitor.sources.count_sql import Prefilter, count_statement, packed_names
from monitor.sources.sql.schema import TableSchema
from monitor.sources.sql.timestamps import (
    SECOND_DAYS,
    TimestampEncoding,
    day_range,
    instant,
    julian_day,
    placeholder_encoding,
)

__all__ = [
    "count_or_reason",
    "model_condition",
    "placeholder_statement",
    "query_columns",
    "query_placeholders",
    "query_selectable",
    "rounds_in_sql",
    "rows_statement",
]

_PLACEHOLDERS = {"start", "end"}


def rows_statement(
    source: sa.FromClause,
    timestamp_column: str | None,
    encoding: TimestampEncoding | None,
    start: datetime,
    end: datetime,
    *,
    sqlite: bool,
    keep: sa.ColumnElement[bool] | None = None,
) -> sa.Select[Any]:
    """``SELECT * FROM source WHERE ts >= :start AND ts < :end`` (no time filter where the stored
    form allows none: :func:`~monitor.sources.frames.filter_window` then does all the filtering),
    and only rows where ``keep`` holds (one model's)."""
    stmt: sa.Select[Any] = sa.select(sa.literal_column("*")).select_from(source)
    if keep is not None:
        stmt = stmt.where(keep)
    bounds = encoding.bounds(start, end) if encoding is not None and timestamp_column is not None else None
    if bounds is None or encoding is None or timestamp_column is None:
        return stmt
    low, high, sql_type = bounds
    column = source.c[timestamp_column]
    condition = sa.and_(
        column >= sa.bindparam("start", low, type_=sql_type),
        column < sa.bindparam("end", high, type_=sql_type),
    )
    if encoding.kind in ("iso", "iso_day") and sqlite:
        # The text bounds are whole days (safe for any separator and offset); SQLite can also read
        # each value as an instant: keep the rows of the window's second range, and every row it
        # cannot read (filter_window counts those as timestamp_invalid).
        moment = sa.func.julianday(column)
        lo_day, hi_day = julian_day(start) - SECOND_DAYS, julian_day(end) + SECOND_DAYS
        condition = sa.and_(
            condition,
            sa.or_(
                sa.and_(
                    moment >= sa.bindparam("start_jd", lo_day, type_=sa.Float()),
                    moment < sa.bindparam("end_jd", hi_day, type_=sa.Float()),
                ),
                moment.is_(None),
            ),
        )
    return stmt.where(condition)


def placeholder_statement(
    query: str, timestamp_format: str, start: datetime, end: datetime, *, sqlite: bool
) -> sa.TextClause:
    """The user's query that binds ``:start`` and ``:end`` itself, with the bounds bound as the
    config says they are stored (the query is opaque)."""
    encoding = placeholder_encoding(timestamp_format)
    if encoding.kind == "datetime" and sqlite:
        # SQLite keeps date-times as text, with or without fractions: bind whole seconds, which
        # compare right against both ("2026-11-22 03:00:00" and "... 03:00:00.000000").
        encoding = TimestampEncoding("iso", separator=" ", exact=True)
    bounds = encoding.bounds(start, end)
    assert bounds is not None
    low, high, sql_type = bounds
    return sa.text(query).bindparams(
        sa.bindparam("start", low, type_=sql_type), sa.bindparam("end", high, type_=sql_type)
    )


def count_or_reason(
    source: sa.FromClause,
    request: CountRequest,
    encoding: TimestampEncoding | None,
    *,
    start: datetime,
    end: datetime,
    flagged: Collection[str],
    sqlite: bool,
    grouped: bool = True,
    totals: bool = False,
    indexed: bool = False,
    round_score: bool = False,
    keep: sa.ColumnElement[bool] | None = None,
) -> tuple[sa.Select[Any], list[str] | None] | str:
    """:func:`~monitor.sources.count_sql.count_statement` over ``source`` (the log, its labels
    joined where asked), with the names of its packed 0/1 keys (SQLite: see ``packed``; ``None``:
    none packed) - or why the database cannot count it exactly (then rows are read). ``encoding`` is
    the log's own timestamps' (before any join)."""
    column = source.c[request.timestamp]
    exact = instant(column, encoding, sqlite) if encoding is not None else None
    if encoding is None or exact is None:
        kind = "no rows yet" if encoding is None else f"timestamps stored as {encoding.kind}"
        return f"{kind}: no exact instant to filter on in the database"
    prefilter: Prefilter | None = None
    invalid = None
    if encoding.kind in ("iso", "iso_day"):  # SQLite text: the whole-day text range uses an index
        prefilter, invalid = day_range(column, encoding), exact[0].is_(None)
    packed = sqlite and not totals
    statement = count_statement(
        source,
        request,
        exact,
        read=(start, end),
        prefilter=prefilter,
        invalid=invalid,
        flagged=flagged,
        sqlite=sqlite,
        grouped=grouped,
        totals=totals,
        indexed=indexed,
        round_score=round_score,
        keep=keep,
        packed=packed,
    )
    return statement, packed_names(request, flagged, invalid=invalid is not None) if packed else None


def rounds_in_sql(score: str | None, schema: TableSchema | None, *, sqlite: bool) -> bool:
    """Whether the database rounds the score (``score_decimals``) as numpy would round what the driver
    returns: a table column of doubles or exact numbers (``schema``: ``None`` for a query). Not
    PostgreSQL's ``real``: the SQL widens float4 exactly (0.285 -> 0.28499999642...) where psycopg's
    text gives 0.285."""
    if schema is None or score not in schema.numeric:
        return False
    return sqlite or score not in schema.single  # SQLite's REAL is a double


def query_placeholders(query: str) -> bool:
    """Whether the user's query binds ``:start`` and ``:end`` itself (both or neither)."""
    names = set(sa.text(query).compile().params)
    if not names:
        return False
    if names != _PLACEHOLDERS:
        raise ConfigError(
            f"source.query: the only placeholders allowed are :start and :end (both), got "
            f"{sorted(':' + n for n in names)}"
        )
    return True


def query_selectable(query: str, names: Sequence[str]) -> sa.Subquery:
    """The user's query as a subquery ``q`` declaring the columns ``names``."""
    return sa.text(query).columns(*map(sa.column, dict.fromkeys(names))).subquery("q")


def query_columns(conn: Connection, query: str) -> set[str]:
    """The columns the user's query returns (it is run with ``LIMIT 0``)."""
    probe: sa.Select[Any] = sa.select(sa.literal_column("*")).select_from(
        sa.text(query).columns().subquery("q")
    )
    return set(conn.execute(probe.limit(0)).keys())


def model_condition(
    source: sa.FromClause, model: tuple[str, str] | None, schema: TableSchema | None
) -> sa.ColumnElement[bool] | None:
    """``<model column> = :model`` for a source that reads one model of a log holding several
    (``model``: the column and the model's name), where the database compares as the row path does:
    a table column of a text type. (A number or an untyped query column is filtered in pandas only.)"""
    if model is None or schema is None or model[0] not in schema.text:
        return None
    column, name = model
    return source.c[column] == sa.bindparam("model", name, type_=sa.String())
