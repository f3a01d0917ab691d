"""SQL sources: a table, or the user's own query, read one window at a time through SQLAlchemy.

Any SQLAlchemy URL works; SQLite is the embedded default, PostgreSQL is tested against a real
server, and a DuckDB database file is read through duckdb-engine (each read opens it read-only and
closes it, so that the application writing it can open it between ticks; its columns come from
``information_schema`` while duckdb-engine's reflection is broken, see :mod:`.schema`).
Three ways to say what to read:

``table:`` (and optionally ``schema:``)
    The table is reflected (identifiers are quoted by SQLAlchemy, never pasted into SQL) and
    read with ``WHERE ts >= :start AND ts < :end``.
``query:`` without placeholders
    The user's SQL - the only text ever executed as given - is wrapped as
    ``SELECT * FROM (<query>) AS q WHERE q.ts >= :start AND q.ts < :end``.
``query:`` with ``:start`` and ``:end``
    The query filters itself; the bounds are bound and the query is not wrapped.

:class:`SqlSource` holds what one source knows and runs its reads; the pieces are in the modules
beside it: :mod:`.connection` (the engine and each read's deadline), :mod:`.schema` (the reflected
table), :mod:`.timestamps` (how the timestamps are stored and bound), :mod:`.statements` (what is
run), :mod:`.labels` (a label table joined while counting) and :mod:`.arrow` (results as Arrow
columns, pandas as the fallback).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, make_url

from monitor.config import SourceConfig
from monitor.core.errors import ConfigError, SourceError
from monitor.core.secrets import mask_url, url_secrets
from monitor.sources.contract import WEIGHT, Batch, CountRequest, Source
from monitor.sources.count_sql import unpack
from monitor.sources.frames import counted_batch, filter_window, flaggable
from monitor.sources.sql.arrow import ArrowReader, RowReader
from monitor.sources.sql.connection import Connect, Database
from monitor.sources.sql.labels import latest_labels, with_labels
from monitor.sources.sql.schema import TableSchema, reflect
from monitor.sources.sql.statements import (
    count_or_reason,
    model_condition,
    placeholder_statement,
    query_columns,
    query_placeholders,
    query_selectable,
    rounds_in_sql,
    rows_statement,
)
from monitor.sources.sql.timestamps import StoredTimestamps, TimestampEncoding, detect_encoding

__all__ = ["SqlSource", "TimestampEncoding", "detect_encoding"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class SqlSource:
    """Rows or counts of a window from a SQL table or query (see the module docstring)."""

    def __init__(
        self, config: SourceConfig, *, timestamp_column: str | None, model: tuple[str, str] | None = None
    ) -> None:
        if not config.url:
            raise ConfigError("source.url: a sql source needs an SQLAlchemy URL")
        try:
            self._url = make_url(config.url)
        except (sa.exc.ArgumentError, ValueError):
            # The parser's message may quote the whole URL, password included: do not chain its text.
            raise ConfigError("source.url: not a valid SQLAlchemy URL (dialect+driver://...)") from None
        self.config = config
        self.timestamp_column = timestamp_column
        self._model = model  # (column, name): one model's rows of a log holding several
        self._query = config.query.strip().rstrip(";").strip() if config.query else None
        self._placeholders = self._query is not None and query_placeholders(self._query)
        timeout = config.timeout.total_seconds()
        try:
            self._db = Database(
                self._url, timeout=timeout, describe=self.describe, secrets=url_secrets(config.url)
            )
        except (sa.exc.NoSuchModuleError, ImportError) as exc:
            raise ConfigError(f"source.url: cannot use {self.describe()}: {exc}") from exc
        arrow = (
            ArrowReader.for_url(
                self._url, timeout=timeout, own_statement=self._query is None, engine=self._db.engine
            )
            if config.arrow
            else None
        )
        self._reader = RowReader(
            arrow,
            deadline=lambda: self._db.deadline,
            timeout=timeout,
            describe=self.describe,
            cause=self._db.cause,
        )
        self._distinct: dict[tuple[object, ...], bool] = {}  # count shape -> more than half its rows distinct
        self._schema: TableSchema | None = None  # reflected once, forgotten after a failed read
        self._timestamps = StoredTimestamps(timestamp_column, config.timestamp_format, self.describe)
        self._labels: SqlSource | None = None  # a label table of this database, joined while counting
        self._counts_unavailable: str | None = None  # why the last read_counts read rows instead
        self._warned_reflection = False

    @property
    def reader(self) -> Literal["arrow", "pandas"]:
        """How rows are read now: Arrow columns through an ADBC driver, or ``pandas.read_sql``."""
        return self._reader.kind

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for event hooks in tests; not for running other SQL)."""
        return self._db.engine

    def describe(self) -> str:
        """``sql table 'x' in <url>``, credentials masked in every form (:func:`~monitor.core.secrets.mask_url`)."""
        url = mask_url(self._url.render_as_string(hide_password=False))
        what = f"query on {url}"
        if self.config.table:
            name = f"{self.config.schema_}.{self.config.table}" if self.config.schema_ else self.config.table
            what = f"table {name!r} in {url}"
        return f"sql {what}"

    def close(self) -> None:
        self._db.close()

    def read(self, start: datetime, end: datetime) -> Batch:
        with self._db.reading(self._forget) as connect:
            if self._query is not None and self._placeholders:
                statement: sa.Select[Any] | sa.TextClause = placeholder_statement(
                    self._query, self.config.timestamp_format, start, end, sqlite=self._db.is_sqlite
                )
            else:
                with connect() as conn:
                    source = self._selectable(conn)
                    encoding = (
                        self._timestamps.detect(conn, source) if self.timestamp_column is not None else None
                    )
                keep = model_condition(source, self._model, self._schema if self._query is None else None)
                statement = rows_statement(
                    source, self.timestamp_column, encoding, start, end, sqlite=self._db.is_sqlite, keep=keep
                )
            text = (
                (self._schema.text if self._schema is not None else frozenset())
                if self._db.is_sqlite
                else None
            )
            frame = self._reader.rows(connect, statement, text=text)
        if self.timestamp_column is None:
            return Batch(frame)
        return filter_window(frame, self.timestamp_column, start, end)

    def read_counts(self, request: CountRequest, start: datetime, end: datetime) -> Batch | None:
        """The window's distinct combinations of ``request``'s columns with their row counts
        (:mod:`monitor.sources.count_sql`), or ``None`` when the database cannot filter this
        source's timestamps exactly (the caller then reads rows).

        ``None`` when: ``source.aggregate`` is off; the user's query binds ``:start``/``:end``
        itself; the timestamps are text outside SQLite (no portable exact instant), of mixed or
        unknown form, or the window is empty; a requested column is missing (the row path then
        names it); the labels of another table cannot be joined as the row path joins them.
        """

        def counted(connect: Connect) -> Batch | None:
            with connect() as conn:
                built = self._count_statement(conn, request, start, end, grouped=False)
            if built is None:
                return None
            keys, flagged, text, packed = built
            frame = self._reader.counts(connect, keys, text=text, in_python=self._groups_in_python(request))
            rows = frame[WEIGHT].sum() if WEIGHT in frame.columns else 0
            self._distinct[_shape_of(request)] = len(frame) > rows / 2  # what the next count does
            return counted_batch(frame if packed is None else unpack(frame, packed), request, flagged)

        batch = self._counting(counted)
        if batch is None or request.labels is None:
            return batch
        # the label rows the row path rejects (arrival times it cannot read), counted alike
        assert self._labels is not None and self._labels.timestamp_column is not None
        arrival = CountRequest(self._labels.timestamp_column, (), (), ((start, end),))
        arrived = self._labels.read_counts(arrival, start, end)
        if arrived is None:
            return None
        batch.rejected.update(arrived.rejected)
        return batch

    def reads_narrowly(self) -> bool:
        """Whether a narrow piece of a window is read narrowly: numbers and SQL date-times are bound
        exactly; text only with ``timestamp_format: iso_utc`` (otherwise whole days are scanned).
        Learned from the stored timestamps - looked at once here when no read has seen them yet, so
        that a model's first evaluation already builds its sealed panes instead of reading its whole
        windows and counting the panes at the next one."""
        if self._placeholders or self.timestamp_column is None:
            return False
        encoding = self._timestamps.encoding
        if encoding is None:
            encoding = self._look_at_timestamps()
        if encoding is None:
            return False
        return encoding.kind in ("epoch", "datetime") or (encoding.kind == "iso" and encoding.exact)

    def _look_at_timestamps(self) -> TimestampEncoding | None:
        """The stored timestamps' encoding (their smallest and largest); ``None`` when they cannot be
        read now (the read that follows reports why)."""
        try:
            with self._db.reading(self._forget) as connect, connect() as conn:
                return self._timestamps.detect(conn, self._selectable(conn))
        except SourceError:
            return None

    def count_ranges(self, request: CountRequest, start: datetime, end: datetime) -> tuple[int, ...] | None:
        """The number of rows in each of ``request``'s time ranges (within ``[start, end)``), in one
        statement that returns one row; ``None`` where :meth:`read_counts` would be ``None``."""

        def totals(connect: Connect) -> tuple[int, ...] | None:
            with connect() as conn:
                built = self._count_statement(conn, request, start, end, totals=True)
                return None if built is None else tuple(int(n) for n in conn.execute(built[0]).one())

        return self._counting(totals)

    def bind_labels(self, labels: Source) -> bool:
        """Join ``labels``'s table into counts that ask for labels, from now on: where both are tables
        of this database (the same URL) and the labels record when they arrived."""
        if not (
            isinstance(labels, SqlSource)
            and labels.config.url == self.config.url
            and self._query is None
            and labels.config.query is None
            and labels.timestamp_column is not None
        ):
            return False
        self._labels = labels
        return True

    def latest_labels(
        self, conn: Connection, id_column: str, label_column: str, start: datetime, end: datetime
    ) -> tuple[sa.Subquery, TableSchema] | str:
        """This label table's latest label of each id that arrived in ``[start, end)`` (see
        :func:`~monitor.sources.sql.labels.latest_labels`), with the table's schema."""
        assert self.timestamp_column is not None, "bind_labels requires arrival times"
        table = self._selectable(conn)
        assert self._schema is not None, "a label source is a table"
        encoding = self._timestamps.detect(conn, table)
        latest = latest_labels(
            self._schema,
            self.timestamp_column,
            encoding,
            id_column,
            label_column,
            start,
            end,
            sqlite=self._db.is_sqlite,
        )
        return latest if isinstance(latest, str) else (latest, self._schema)

    # -- internals --------------------------------------------------------------------------------

    def _counting(self, count: Callable[[Connect], _T | None]) -> _T | None:
        """Run ``count`` on a connection under the source's deadline (``None``: read rows instead)."""
        if not self.config.aggregate or (self._query is not None and self._placeholders):
            why = "source.aggregate is off" if not self.config.aggregate else "the query binds :start/:end"
            self._rows_instead(why)
            return None
        with self._db.reading(self._forget) as connect:
            result = count(connect)
            if result is None:
                return None
        self._counts_unavailable = None
        return result

    def _count_statement(
        self,
        conn: Connection,
        request: CountRequest,
        start: datetime,
        end: datetime,
        *,
        grouped: bool = True,
        totals: bool = False,
    ) -> tuple[sa.Select[Any], frozenset[str], frozenset[str], list[str] | None] | None:
        """The count statement, the indicator attributes it thresholds, the columns Arrow reads as
        text and the names of its packed 0/1 keys; ``None`` (the reason logged) where the database
        cannot count the request exactly."""
        table = self._selectable(conn, request.names)
        source: sa.FromClause = table
        available = set(source.c.keys()) if self._query is None else query_columns(conn, self._query)
        if absent := [c for c in request.optional if c not in available]:
            request = request.without(absent)  # a default-named optional column the log lacks
        if missing := [c for c in request.names if c not in available]:
            self._rows_instead(f"column(s) {missing} missing")
            return None
        schema = self._schema if self._query is None else None
        flagged = flaggable(request, schema.numeric if schema is not None else ())
        text = schema.text if schema is not None else frozenset()
        encoding = self._timestamps.detect(conn, table)  # of the log itself, before any join
        if request.labels is not None:
            assert self._labels is not None and schema is not None, "labels are joined after bind_labels"
            join = request.labels
            latest = self._labels.latest_labels(conn, join.id, join.label, start, end)
            joined = (
                latest
                if isinstance(latest, str)
                else with_labels(source, schema, *latest, join, sqlite=self._db.is_sqlite)
            )
            if isinstance(joined, str):
                self._rows_instead(f"labels not joined in the database: {joined}")
                return None
            source = joined[0]
            text = text | {join.column} if joined[1] else text
        statement = count_or_reason(
            source,
            request,
            encoding,
            start=start,
            end=end,
            flagged=flagged,
            sqlite=self._db.is_sqlite,
            grouped=grouped,
            totals=totals,
            indexed=schema is not None and request.labels is None and schema.timestamp_indexed,
            round_score=rounds_in_sql(request.score, schema, sqlite=self._db.is_sqlite),
            keep=model_condition(source, self._model, schema),
        )
        if isinstance(statement, str):
            self._rows_instead(statement)
            return None
        return statement[0], flagged, text, statement[1]

    def _groups_in_python(self, request: CountRequest) -> bool:
        """Whether each row's keys come as Arrow columns for pandas' hash grouping to count (the same
        combinations and counts), rather than the database's ``GROUP BY``: on SQLite, whose
        ``GROUP BY`` sorts every row (~6 s per million), and for a floating-point score column not
        rounded by ``score_decimals``, where nearly every row is its own combination and grouping in
        the database only adds its work to the same rows' transfer (on PostgreSQL, 200 k raw float
        scores: 0.33 s grouped vs 0.10 s for the rows' keys). Once a count has shown how many
        combinations the rows make, that decides (a float column of a few values groups in the
        database again)."""
        if self._db.is_sqlite:
            return True
        seen = self._distinct.get(_shape_of(request))
        if seen is not None:  # the previous count of this shape: nearly a combination per row, or not
            return seen
        schema = self._schema if self._query is None else None
        return (
            schema is not None
            and request.score is not None
            and request.score_decimals is None
            and request.score in schema.floating
        )

    def _rows_instead(self, why: str) -> None:
        if why != self._counts_unavailable:  # once per reason, not at every tick
            logger.info("%s: reading rows, not counts: %s", self.describe(), why)
            self._counts_unavailable = why

    def _selectable(self, conn: Connection, names: tuple[str, ...] = ()) -> sa.TableClause | sa.Subquery:
        """The table (reflected, as untyped columns) or the user's query as a subquery ``q``
        (declaring the timestamp column and ``names``)."""
        if self._query is not None:
            return query_selectable(
                self._query, [*([self.timestamp_column] if self.timestamp_column else []), *names]
            )
        if self._schema is None:
            assert self.config.table is not None
            self._schema = reflect(
                conn,
                self.config.table,
                self.config.schema_,
                self.timestamp_column,
                describe=self.describe,
                fallback=self._reflection_failed,
            )
        return self._schema.table

    def _reflection_failed(self, exc: Exception) -> None:
        if not self._warned_reflection:
            self._warned_reflection = True
            logger.info(
                "%s: columns read from information_schema; reflection failed: %s",
                self.describe(),
                self._db.cause(exc),
            )

    def _forget(self) -> None:
        """After a failed read: reflect and detect again on the next (the schema may have changed)."""
        self._schema, self._timestamps.encoding = None, None


def _shape_of(request: CountRequest) -> tuple[object, ...]:
    """What a count request counts, whatever its time ranges."""
    return (request.columns, request.indicators, request.score, request.score_decimals, request.labels)
