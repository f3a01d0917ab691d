"""SQL sources: a table, or the user's own query, read one window at a time through SQLAlchemy.

Any SQLAlchemy URL works; SQLite is the embedded default, PostgreSQL is tested against a real
server, and a DuckDB database file is read through duckdb-engine (each read opens it read-only and
closes it, so that the application writing it can open it between ticks; its columns come from
``information_schema`` while duckdb-engine's reflection is broken, see :mod:`.sql_columns`).
Three ways to say what to read:

``table:`` (and optionally ``schema:``)
    The table is reflected (identifiers are quoted by SQLAlchemy, never pasted into SQL) and
    read with ``WHERE ts >= :start AND ts < :end``.
``query:`` without placeholders
    The user's SQL - the only text ever executed as given - is wrapped as
    ``SELECT * FROM (<query>) AS q WHERE q.ts >= :start AND q.ts < :end``.
``query:`` with ``:start`` and ``:end``
    The query filters itself; the bounds are bound and the query is not wrapped.

The window bounds are always *bound parameters*, in the representation the column stores
(see :class:`TimestampEncoding`), so that the database can use an index on the timestamp.
That database-side filter is only a prefilter: the rows are always filtered again, exactly,
with :func:`~monitor.sources.contract.filter_window`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

import pandas as pd
import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, make_url

from monitor.config import SourceConfig
from monitor.core.errors import ConfigError, SourceError
from monitor.core.secrets import mask, mask_url, url_secrets
from monitor.core.times import utc
from monitor.sources.contract import Batch, CountRequest, LabelJoin, Source
from monitor.sources.count_sql import Instant, Prefilter, count_statement, numeric_columns
from monitor.sources.frames import count_keys, counted_batch, filter_window, flaggable
from monitor.sources.sql.arrow import ArrowReader, ArrowReadTimeout
from monitor.sources.sql.columns import columns_table
from monitor.sources.sql.timestamps import (
    SECOND_DAYS,
    TimestampEncoding,
    detect_encoding,
    julian_day,
    placeholder_encoding,
)

__all__ = ["SqlSource", "TimestampEncoding", "detect_encoding"]

logger = logging.getLogger(__name__)

_PLACEHOLDERS = {"start", "end"}
_T = TypeVar("_T")
_ARROW_STRIKES = 3  # Arrow reads failing in a row (SQLAlchemy then reading) before a source gives Arrow up


class SqlSource:
    """Rows of a window from a SQL table or query (see the module docstring).

    The engine is created at once but nothing connects before the first :meth:`read`, so a
    database that is down at start-up only fails that model's evaluations until it is back.
    """

    def __init__(self, config: SourceConfig, *, timestamp_column: str | None) -> None:
        if not config.url:
            raise ConfigError("source.url: a sql source needs an SQLAlchemy URL")
        try:
            self._url = make_url(config.url)
        except (sa.exc.ArgumentError, ValueError):
            # The parser's message may quote the whole URL, password included: do not chain its text.
            raise ConfigError("source.url: not a valid SQLAlchemy URL (dialect+driver://...)") from None
        self.config = config
        self.timestamp_column = timestamp_column
        self._query = config.query.strip().rstrip(";").strip() if config.query else None
        self._placeholders = self._query is not None and _query_placeholders(self._query)
        self._timeout = config.timeout.total_seconds()
        self._deadline = math.inf  # monotonic time the running read must end by
        self._interrupted = False
        try:
            self._engine = sa.create_engine(
                self._url, pool_pre_ping=True, **_engine_options(self._url, self._timeout)
            )
        except (sa.exc.NoSuchModuleError, ImportError) as exc:
            raise ConfigError(f"source.url: cannot use {self.describe()}: {exc}") from exc
        self._bound_statements()
        self._arrow_strikes, self._arrow_failure = 0, ""  # Arrow reads failed in a row; the last cause
        self._arrow = (
            ArrowReader.for_url(
                self._url, timeout=self._timeout, own_statement=self._query is None, engine=self._engine
            )
            if config.arrow
            else None
        )
        self._table: sa.TableClause | None = None  # reflected once, forgotten after a failed read
        self._numeric: frozenset[str] = frozenset()  # the table's columns of a numeric type
        self._text: frozenset[str] = frozenset()  # the table's columns of a text type
        self._joined_text: frozenset[str] = frozenset()  # a joined label column of a text type
        self._single: frozenset[str] = frozenset()  # the table's REAL columns (float4, except on SQLite)
        self._integer: frozenset[str] = frozenset()  # the table's integer columns
        self._counts_unavailable: str | None = None  # why the last read_counts read rows instead
        self._flagged: frozenset[str] = frozenset()  # indicator attributes thresholded by the database
        self._encoding: TimestampEncoding | None = None
        self._warned_unknown = False
        self._warned_reflection = False
        self._timestamp_indexed = False  # an index leads with the timestamp column (found when reflected)
        self._labels: SqlSource | None = None  # a label table of this database, joined while counting

    def _bound_statements(self) -> None:
        """``source.timeout`` per statement: PostgreSQL's ``statement_timeout`` (lock waits
        included), for SQLite a progress handler that interrupts a statement running past the
        read's deadline, for DuckDB a timer that interrupts the connection (:meth:`_connect`).
        Other databases: only the connection's own timeouts."""
        backend = self._url.get_backend_name()
        if backend == "postgresql":
            milliseconds = str(max(1, round(self._timeout * 1000)))

            @sa.event.listens_for(self._engine, "connect")
            def _pg_timeout(dbapi_connection: Any, _record: Any) -> None:
                cursor = dbapi_connection.cursor()
                cursor.execute("SELECT set_config('statement_timeout', %s, false)", (milliseconds,))
                cursor.close()
                dbapi_connection.commit()

        elif backend == "sqlite":

            @sa.event.listens_for(self._engine, "connect")
            def _sqlite_deadline(dbapi_connection: Any, _record: Any) -> None:
                dbapi_connection.set_progress_handler(self._past_deadline, 10_000)

    @contextmanager
    def _connect(self) -> Iterator[Connection]:
        """A connection for one read; on DuckDB, which has no statement timeout, interrupted by a
        timer at the read's deadline."""
        with self._engine.connect() as conn:
            if self._url.get_backend_name() != "duckdb":
                yield conn
                return
            timer = threading.Timer(
                max(0.0, self._deadline - time.monotonic()),
                self._interrupt,
                (conn.connection.dbapi_connection,),
            )
            timer.daemon = True
            timer.start()
            try:
                yield conn
            finally:
                timer.cancel()

    def _interrupt(self, dbapi_connection: Any) -> None:
        self._interrupted = True
        dbapi_connection.interrupt()

    def _past_deadline(self) -> int:
        """SQLite's progress handler: non-zero interrupts the running statement."""
        if time.monotonic() > self._deadline:
            self._interrupted = True
            return 1
        return 0

    @property
    def _is_sqlite(self) -> bool:
        return self._url.get_backend_name() == "sqlite"

    @property
    def reader(self) -> Literal["arrow", "pandas"]:
        """How rows are read now: Arrow columns through an ADBC driver, or ``pandas.read_sql``."""
        return "pandas" if self._arrow is None else "arrow"

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for event hooks in tests; not for running other SQL)."""
        return self._engine

    def describe(self) -> str:
        """``sql table 'x' in <url>``, credentials masked in every form (:func:`~monitor.core.secrets.mask_url`)."""
        url = mask_url(self._url.render_as_string(hide_password=False))
        what = f"query on {url}"
        if self.config.table:
            name = f"{self.config.schema_}.{self.config.table}" if self.config.schema_ else self.config.table
            what = f"table {name!r} in {url}"
        return f"sql {what}"

    def close(self) -> None:
        self._engine.dispose()

    def read(self, start: datetime, end: datetime) -> Batch:
        self._check_database_file()
        self._deadline, self._interrupted = time.monotonic() + self._timeout, False
        try:
            with self._connect() as conn:
                frame = self._frame(conn, self._statement(conn, start, end))
        except SourceError:
            raise
        except Exception as exc:
            # Every failure to read is a source failure, however the driver's error comes back:
            # SQLAlchemy's, or wrapped by pandas (pandas.errors.DatabaseError for "database is
            # locked"). The chained error would carry the SQL and its parameters: not kept.
            # The schema may have changed under us: reflect and detect again on the next tick.
            self._table, self._encoding = None, None
            raise SourceError(f"cannot read {self.describe()}: {self._short_cause(exc)}") from None
        finally:
            self._deadline = math.inf
        if self.timestamp_column is None:
            return Batch(frame)
        return filter_window(frame, self.timestamp_column, start, end)

    def _frame(self, conn: Connection, statement: sa.Select[Any] | sa.TextClause) -> pd.DataFrame:
        """The statement's rows: as Arrow columns where an ADBC driver applies, else through pandas
        (and through pandas once when the Arrow read fails: see :meth:`_arrow_failed`)."""
        if self._arrow is not None:
            try:
                frame = self._arrow.read(
                    statement, self._deadline, text=self._text if self._is_sqlite else None
                )
            except Exception as exc:
                frame = pd.read_sql(statement, self._arrow_failed(exc, conn))
                self._give_up_arrow(exc, "reading rows through pandas")
                return frame
            self._arrow_strikes = 0
            return frame
        return pd.read_sql(statement, conn)

    def _arrow_failed(self, exc: Exception, conn: Connection) -> Connection:
        """An Arrow read failed: a timeout is the source's failure; anything else is retried through
        SQLAlchemy on ``conn`` (returned), whose failure, if it fails too, is the source's."""
        if (
            isinstance(exc, ArrowReadTimeout)
            or time.monotonic() > self._deadline
            or "timeout" in str(exc).lower()
        ):
            raise SourceError(
                f"cannot read {self.describe()}: statement timeout: the read ran longer than "
                f"source.timeout ({self._timeout:g} s)"
            ) from None
        self._arrow_failure = self._short_cause(exc)
        return conn

    def _give_up_arrow(self, exc: Exception, instead: str) -> None:
        """SQLAlchemy read what the Arrow read could not. Arrow is given up for this source (logged once)
        when the data is the cause - values of a type the driver cannot hold - or after three such
        failures in a row; a passing cause (a lock SQLite's own driver waited out) keeps it."""
        self._arrow_strikes += 1
        data = isinstance(exc, TypeError | pa.ArrowException) or "type mismatch" in str(exc).lower()
        if data or self._arrow_strikes >= _ARROW_STRIKES:
            logger.info(
                "%s: %s from now on; the Arrow read failed: %s", self.describe(), instead, self._arrow_failure
            )
            self._arrow = None

    def read_counts(self, request: CountRequest, start: datetime, end: datetime) -> Batch | None:
        """The window's distinct combinations of ``request``'s columns with their row counts
        (:mod:`monitor.sources.count_sql`), or ``None`` when the database cannot filter this
        source's timestamps exactly (the caller then reads rows).

        ``None`` when: ``source.aggregate`` is off; the user's query binds ``:start``/``:end``
        itself; the timestamps are text outside SQLite (no portable exact instant), of mixed or
        unknown form, or the window is empty; a requested column is missing (the row path then
        names it).
        """
        frame = self._counting(lambda conn: self._counted_frame(conn, request, start, end))
        if frame is None:
            return None
        batch = counted_batch(frame, request, self._flagged)
        if request.labels is not None:
            # the label rows the row path rejects (arrival times it cannot read), counted alike
            assert self._labels is not None and self._labels.timestamp_column is not None
            arrival = CountRequest(self._labels.timestamp_column, (), (), ((start, end),))
            arrived = self._labels.read_counts(arrival, start, end)
            if arrived is None:
                return None
            batch.rejected.update(arrived.rejected)
        return batch

    @property
    def narrow_reads(self) -> bool:
        """Known once a read has seen the stored timestamps: numbers and SQL date-times are bound
        exactly; text only with ``timestamp_format: iso_utc`` (otherwise whole days are scanned)."""
        encoding = self._encoding
        if encoding is None or self._placeholders:
            return False
        return encoding.kind in ("epoch", "datetime") or (encoding.kind == "iso" and encoding.exact)

    def count_ranges(self, request: CountRequest, start: datetime, end: datetime) -> tuple[int, ...] | None:
        """The number of rows in each of ``request``'s time ranges (within ``[start, end)``), in one
        pass that returns one row; ``None`` where :meth:`read_counts` would be ``None``."""

        def totals(conn: Connection) -> tuple[int, ...] | None:
            statement = self._count_statement(conn, request, start, end, totals=True)
            return None if statement is None else tuple(int(n) for n in conn.execute(statement).one())

        return self._counting(totals)

    def _counting(self, count: Callable[[Connection], _T | None]) -> _T | None:
        """Run ``count`` on a connection under the source's deadline (``None``: read rows instead)."""
        if not self.config.aggregate or (self._query is not None and self._placeholders):
            why = "source.aggregate is off" if not self.config.aggregate else "the query binds :start/:end"
            self._rows_instead(why)
            return None
        self._check_database_file()
        self._deadline, self._interrupted = time.monotonic() + self._timeout, False
        try:
            with self._connect() as conn:
                result = count(conn)
                if result is None:
                    return None
        except SourceError:
            raise
        except Exception as exc:
            self._table, self._encoding = None, None
            raise SourceError(f"cannot read {self.describe()}: {self._short_cause(exc)}") from None
        finally:
            self._deadline = math.inf
        self._counts_unavailable = None
        return result

    def _rows_instead(self, why: str) -> None:
        if why != self._counts_unavailable:  # once per reason, not at every tick
            logger.info("%s: reading rows, not counts: %s", self.describe(), why)
            self._counts_unavailable = why
        return None

    def _counted_frame(
        self, conn: Connection, request: CountRequest, start: datetime, end: datetime
    ) -> pd.DataFrame | None:
        """The counted combinations. SQLite's ``GROUP BY`` sorts every row (~6 s per million here):
        on SQLite, with the Arrow reader, each row's keys come as Arrow columns and are counted by
        pandas' hash grouping instead - the same combinations and counts; elsewhere the database
        groups, and its combinations come as Arrow columns too (``pandas.read_sql`` without Arrow)."""
        in_python = self._arrow is not None and self._is_sqlite
        statement = self._count_statement(conn, request, start, end, grouped=not in_python)
        if statement is None or self._arrow is None:
            return None if statement is None else pd.read_sql(statement, conn)
        try:
            if in_python:
                text = self._text | self._joined_text
                frame = count_keys(self._arrow.read_chunks(statement, self._deadline, text=text))
            else:
                frame = self._arrow.read(statement, self._deadline)
        except Exception as exc:
            grouped = self._count_statement(self._arrow_failed(exc, conn), request, start, end)
            assert grouped is not None, "the same request, grouped"
            frame = pd.read_sql(grouped, conn)
            self._give_up_arrow(exc, "counting in the database")
            return frame
        self._arrow_strikes = 0
        return frame

    def _count_statement(
        self,
        conn: Connection,
        request: CountRequest,
        start: datetime,
        end: datetime,
        *,
        grouped: bool = True,
        totals: bool = False,
    ) -> sa.Select[Any] | None:
        table = self._selectable(conn, request.names)
        source: sa.FromClause = table
        available = set(source.c.keys()) if self._query is None else self._query_columns(conn)
        if absent := [c for c in request.optional if c not in available]:
            request = request.without(absent)  # a default-named optional column the log lacks
        if missing := [c for c in request.names if c not in available]:
            self._rows_instead(f"column(s) {missing} missing")
            return None
        self._flagged = flaggable(request, self._numeric if self._query is None else ())
        encoding = self._timestamp_encoding(conn, table)  # of the log itself, before any join
        if request.labels is not None:
            joined = self._with_labels(conn, source, request.labels, start, end)
            if isinstance(joined, str):
                self._rows_instead(f"labels not joined in the database: {joined}")
                return None
            source = joined
        column = source.c[request.timestamp]
        instant = self._instant(column, encoding)
        if encoding is None or instant is None:
            kind = "no rows yet" if encoding is None else f"timestamps stored as {encoding.kind}"
            self._rows_instead(f"{kind}: no exact instant to filter on in the database")
            return None
        prefilter: Prefilter | None = None
        invalid = None
        if encoding.kind in ("iso", "iso_day"):  # SQLite text: the whole-day text range uses an index
            text_encoding = encoding

            def day_range(lo: datetime, hi: datetime, name: str) -> sa.ColumnElement[bool]:
                low, high, sql_type = text_encoding.bounds(lo, hi) or (None, None, None)
                return sa.and_(
                    column >= sa.bindparam(f"{name}_lo", low, type_=sql_type),
                    column < sa.bindparam(f"{name}_hi", high, type_=sql_type),
                )

            prefilter, invalid = day_range, instant[0].is_(None)
        return count_statement(
            source,
            request,
            instant,
            read=(start, end),
            prefilter=prefilter,
            invalid=invalid,
            flagged=self._flagged,
            sqlite=self._is_sqlite,
            grouped=grouped,
            totals=totals,
            indexed=self._query is None and request.labels is None and self._timestamp_indexed,
            round_score=self._rounds_in_sql(request.score),
        )

    def _rounds_in_sql(self, score: str | None) -> bool:
        """Whether the database rounds the score (score_decimals) as numpy would round what the
        driver returns: a column of doubles or exact numbers. Not PostgreSQL's ``real``: the SQL widens
        float4 exactly (0.285 -> 0.28499999642...) where psycopg's text gives 0.285."""
        if self._query is not None or score not in self._numeric:
            return False
        return self._is_sqlite or score not in self._single  # SQLite's REAL is a double

    # -- labels in their own table ------------------------------------------------------------------

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
    ) -> sa.Subquery | str:
        """``(__jid, __jlabel)``: the latest label of each id that arrived in ``[start, end)`` - what
        :func:`~monitor.reading.label_join.join_labels` keeps - or why the database cannot tell."""
        assert self.timestamp_column is not None, "bind_labels requires arrival times"
        table = self._selectable(conn)
        if missing := [c for c in (id_column, label_column) if c not in table.c]:
            return f"label column(s) {missing} missing"
        encoding = self._timestamp_encoding(conn, table)
        arrived = table.c[self.timestamp_column]
        instant = self._instant(arrived, encoding)
        if encoding is None or instant is None:
            return "no labels yet" if encoding is None else f"arrival times stored as {encoding.kind}"
        moment, bound = instant
        where = [
            table.c[id_column].is_not(None),
            moment >= bound(start, "label_lo"),
            moment < bound(end, "label_hi"),
        ]
        if encoding.kind in ("iso", "iso_day"):
            low, high, sql_type = encoding.bounds(start, end) or (None, None, None)
            where += [
                arrived >= sa.bindparam("label_day_lo", low, type_=sql_type),
                arrived < sa.bindparam("label_day_hi", high, type_=sql_type),
            ]
        # ties in arrival broken like join_labels: a missing label first, then the greatest (byte order)
        label = table.c[label_column]
        ordered = (
            sa.collate(label, "C")
            if self.column_kind(label_column) == "text" and not self._is_sqlite
            else label
        )
        latest_first = sa.func.row_number().over(
            partition_by=table.c[id_column],
            order_by=(moment.desc(), sa.case((label.is_(None), 1), else_=0).desc(), ordered.desc()),
        )
        return (
            sa.select(
                table.c[id_column].label("__jid"),
                table.c[label_column].label("__jlabel"),
                latest_first.label("__rank"),
            )
            .where(*where)
            .subquery("latest")
        )

    def id_kind(self, name: str) -> str:
        """``integer``, ``text`` or ``other``: ids the database compares as the row path does (text
        of an integer is the integer); other numbers (17.0 vs 17, NUMERIC read as text) are not."""
        return "integer" if name in self._integer else "text" if name in self._text else "other"

    def column_kind(self, name: str) -> str:
        """``number``, ``text`` or ``other``: how a reflected table column compares."""
        return "number" if name in self._numeric else "text" if name in self._text else "other"

    def _with_labels(
        self, conn: Connection, log: sa.FromClause, join: LabelJoin, start: datetime, end: datetime
    ) -> sa.Subquery | str:
        """The log with ``join.column`` = its own label, else the latest joined one (a subquery)."""
        labels = self._labels
        assert labels is not None, "requests join labels only after bind_labels"
        latest = labels.latest_labels(conn, join.id, join.label, start, end)
        if isinstance(latest, str):
            return latest
        ids = (self.id_kind(join.join_on), labels.id_kind(join.id))
        if ids[0] != ids[1] or "other" in ids:
            return f"ids compared as text in Python: {join.join_on} is {ids[0]}, {join.id} is {ids[1]}"
        own = log.c.get(join.column)
        kinds = {
            labels.column_kind(join.label),
            *([self.column_kind(join.column)] if own is not None else []),
        }
        if len(kinds) != 1 or "other" in kinds:
            return f"label columns of different types ({', '.join(sorted(kinds))})"
        self._joined_text = frozenset({join.column}) if kinds == {"text"} else frozenset()
        joined_label = latest.c["__jlabel"]
        if own is None:
            label: sa.ColumnElement[Any] = joined_label
        elif kinds == {"number"} and not self._is_sqlite:  # NaN is no label either (join_labels: notna)
            nan = sa.bindparam(None, float("nan"), type_=sa.Float())
            label = sa.case((sa.or_(own.is_(None), own == nan), joined_label), else_=own)
        else:
            label = sa.func.coalesce(own, joined_label)
        kept = [c for c in log.c if c.name != join.column]
        on = sa.and_(log.c[join.join_on] == latest.c["__jid"], latest.c["__rank"] == 1)
        return (
            sa.select(*kept, label.label(join.column))
            .select_from(log.outerjoin(latest, on))
            .subquery("joined")
        )

    def _instant(self, column: sa.ColumnElement[Any], encoding: TimestampEncoding | None) -> Instant | None:
        """The stored timestamp as an exactly comparable instant, with its bound expression."""
        if encoding is None:
            return None
        if encoding.kind in ("epoch", "datetime"):

            def bound(moment: datetime, name: str) -> sa.ColumnElement[Any]:
                low, _, sql_type = encoding.bounds(moment, moment) or (None, None, None)
                return sa.bindparam(name, low, type_=sql_type)

            return column, bound
        if encoding.kind in ("iso", "iso_day") and self._is_sqlite:
            # SQLite reads both sides alike, to the millisecond (julianday keeps milliseconds)
            def julian(moment: datetime, name: str) -> sa.ColumnElement[Any]:
                text = utc(moment).strftime("%Y-%m-%d %H:%M:%S.%f")
                return sa.func.julianday(sa.bindparam(name, text, type_=sa.String()))

            return sa.func.julianday(column), julian
        return None

    def _query_columns(self, conn: Connection) -> set[str]:
        assert self._query is not None
        query = sa.text(self._query).columns().subquery("q")
        probe: sa.Select[Any] = sa.select(sa.literal_column("*")).select_from(query)
        return set(conn.execute(probe.limit(0)).keys())

    # -- statements -----------------------------------------------------------------------------

    def _statement(self, conn: Connection, start: datetime, end: datetime) -> sa.Select[Any] | sa.TextClause:
        if self._query is not None and self._placeholders:
            return self._placeholder_statement(start, end)
        source = self._selectable(conn)
        stmt: sa.Select[Any] = sa.select(sa.literal_column("*")).select_from(source)
        ts = self.timestamp_column
        if ts is None:
            return stmt
        encoding = self._timestamp_encoding(conn, source)
        bounds = encoding.bounds(start, end) if encoding else None
        if bounds is None:
            return stmt  # filter_window does all the filtering
        low, high, sql_type = bounds
        column = source.c[ts]
        condition = sa.and_(
            column >= sa.bindparam("start", low, type_=sql_type),
            column < sa.bindparam("end", high, type_=sql_type),
        )
        if encoding is not None and encoding.kind in ("iso", "iso_day") and self._is_sqlite:
            # The text bounds are whole days (safe for any separator and offset); SQLite can
            # also read each value as an instant: keep the rows of the window's second range,
            # and every row it cannot read (filter_window counts those as timestamp_invalid).
            instant = sa.func.julianday(column)
            lo_day, hi_day = julian_day(start) - SECOND_DAYS, julian_day(end) + SECOND_DAYS
            condition = sa.and_(
                condition,
                sa.or_(
                    sa.and_(
                        instant >= sa.bindparam("start_jd", lo_day, type_=sa.Float()),
                        instant < sa.bindparam("end_jd", hi_day, type_=sa.Float()),
                    ),
                    instant.is_(None),
                ),
            )
        return stmt.where(condition)

    def _placeholder_statement(self, start: datetime, end: datetime) -> sa.TextClause:
        assert self._query is not None
        encoding = placeholder_encoding(self.config.timestamp_format)
        if encoding.kind == "datetime" and self._url.get_backend_name() == "sqlite":
            # SQLite keeps date-times as text, with or without fractions: bind whole seconds, which
            # compare right against both ("2026-11-22 03:00:00" and "... 03:00:00.000000").
            encoding = TimestampEncoding("iso", separator=" ", exact=True)
        bounds = encoding.bounds(start, end)
        assert bounds is not None
        low, high, sql_type = bounds
        return sa.text(self._query).bindparams(
            sa.bindparam("start", low, type_=sql_type), sa.bindparam("end", high, type_=sql_type)
        )

    def _selectable(self, conn: Connection, names: Sequence[str] = ()) -> sa.TableClause | sa.Subquery:
        """The table (reflected, as untyped columns) or the user's query as a subquery ``q``
        (declaring the timestamp column and ``names``)."""
        if self._query is not None:
            declared = dict.fromkeys([*([self.timestamp_column] if self.timestamp_column else []), *names])
            return sa.text(self._query).columns(*map(sa.column, declared)).subquery("q")
        if self._table is None:
            self._table = self._reflect(conn)
        return self._table

    def _reflect(self, conn: Connection) -> sa.TableClause:
        name, schema = self.config.table, self.config.schema_
        assert name is not None
        try:
            table: sa.Table | None = sa.Table(name, sa.MetaData(), schema=schema, autoload_with=conn)
        except sa.exc.NoSuchTableError:
            table = None
        except sa.exc.ProgrammingError as exc:
            # DuckDB: duckdb-engine's reflection queries a pg_catalog table DuckDB lacks (duckdb_engine#1391,
            # duckdb#22069); the standard information_schema says the same (see sql_columns).
            conn.rollback()
            table = columns_table(conn, name, schema)
            if not self._warned_reflection:
                self._warned_reflection = True
                logger.info(
                    "%s: columns read from information_schema; reflection failed: %s",
                    self.describe(),
                    self._short_cause(exc),
                )
        if table is None:
            raise SourceError(f"table {name!r} not found: {self.describe()}")
        names = [c.name for c in table.columns]
        self._timestamp_indexed = self._leads_an_index(conn, self.timestamp_column)
        self._numeric = numeric_columns(table)
        self._text = frozenset(c.name for c in table.columns if isinstance(c.type, sa.String))
        self._single = frozenset(c.name for c in table.columns if isinstance(c.type, sa.REAL))
        self._integer = frozenset(c.name for c in table.columns if isinstance(c.type, sa.Integer))
        ts = self.timestamp_column
        if ts is not None and ts not in names:
            raise SourceError(f"column {ts!r} not found in {self.describe()}; its columns are {names}")
        # Untyped columns: values come back as the driver returns them. SQLAlchemy's SQLite DATETIME
        # type would otherwise try to parse ISO text it did not write itself, and fail.
        return sa.table(name, *(sa.column(n) for n in names), schema=schema)

    def _leads_an_index(self, conn: Connection, column: str | None) -> bool:
        """Whether an index of the table - its own, or its primary key's or a unique constraint's -
        starts with ``column`` (then a time range is an index range)."""
        if column is None or conn.dialect.name == "duckdb":  # duckdb-engine reflects no indexes (and warns)
            return False
        name, schema = self.config.table or "", self.config.schema_
        try:
            inspector = sa.inspect(conn)
            leading = [list(i["column_names"]) for i in inspector.get_indexes(name, schema=schema)]
            leading.append(list(inspector.get_pk_constraint(name, schema=schema)["constrained_columns"]))
            leading += [
                list(u["column_names"]) for u in inspector.get_unique_constraints(name, schema=schema)
            ]
        except (sa.exc.SQLAlchemyError, NotImplementedError):  # a dialect that cannot tell
            conn.rollback()
            return False
        return any(columns[:1] == [column] for columns in leading)

    def _timestamp_encoding(
        self, conn: Connection, source: sa.TableClause | sa.Subquery
    ) -> TimestampEncoding | None:
        """How the timestamp column is stored, from its smallest and largest value.

        Detected at every read (two index lookups where the column is indexed): a writer that
        changes format while the service runs shows up at the extremes, and the prefilter follows.
        ``min`` and ``max`` are separate scalar subqueries: SQLite answers a lone ``min()`` or
        ``max()`` from the index, but scans every row for a select that has both.
        """
        assert self.timestamp_column is not None
        column = source.c[self.timestamp_column]
        low, high = conn.execute(
            sa.select(
                sa.select(sa.func.min(column)).scalar_subquery(),
                sa.select(sa.func.max(column)).scalar_subquery(),
            )
        ).one()
        encoding = detect_encoding(low, high)
        if encoding is None:
            return None  # no rows yet: nothing to learn, try again next time
        self._check_declared_format(encoding)
        if encoding.kind == "iso" and self.config.timestamp_format == "iso_utc":
            # declared: every row is UTC text in the extremes' style, so text bounds to the second are safe
            encoding = replace(encoding, exact=True)
        if encoding.kind == "unknown" and not self._warned_unknown:
            self._warned_unknown = True
            logger.warning(
                "%s: timestamps in %r are of mixed or unrecognised form (%r .. %r); reading without "
                "a database-side time filter",
                self.describe(),
                self.timestamp_column,
                type(low).__name__,
                type(high).__name__,
            )
        if self._encoding is not None and encoding != self._encoding:
            logger.warning(
                "%s: timestamps in %r changed form (%s -> %s); prefiltering for the new form",
                self.describe(),
                self.timestamp_column,
                self._encoding.kind,
                encoding.kind,
            )
        self._encoding = encoding
        return encoding

    def _check_declared_format(self, encoding: TimestampEncoding) -> None:
        """The stored values decide how to bind; say so when they contradict ``timestamp_format``."""
        declared = self.config.timestamp_format
        kind = "iso" if encoding.kind in ("iso", "iso_day") and declared != "iso_utc" else encoding.kind
        # SQLite stores DATETIME as text: "datetime" and "iso" both mean text there.
        compatible: dict[str, set[str]] = {
            "auto": {kind},
            "iso": {"iso"},
            "iso_utc": {"iso"},
            "epoch": {"epoch"},
            "datetime": {"datetime", "iso"},
        }
        if kind not in compatible[declared]:
            logger.warning(
                "%s: timestamp_format is %r but %r holds %s values; binding for what is stored",
                self.describe(),
                declared,
                self.timestamp_column,
                encoding.kind,
            )

    # -- errors -----------------------------------------------------------------------------------

    def _check_database_file(self) -> None:
        """SQLite (and DuckDB opened for writing) would silently create a missing database file; a
        monitor should say it is missing."""
        engine = {"sqlite": "SQLite", "duckdb": "DuckDB"}.get(self._url.get_backend_name())
        if engine is None:
            return
        database = self._url.database or ""
        if (
            database in ("", ":memory:")
            or database.startswith(("file:", "md:"))
            or self._url.query.get("uri")
        ):
            return
        if not Path(database).is_file():
            raise SourceError(f"cannot read {self.describe()}: the {engine} database file does not exist")

    def _short_cause(self, exc: BaseException) -> str:
        """One line naming the driver's error, without the SQL, parameters or password.

        The innermost error of the chain is the driver's own (``sqlite3.OperationalError``,
        ``psycopg.OperationalError``); the wrappers around it quote the statement.
        """
        cause: BaseException = exc
        seen = {id(cause)}
        while True:
            inner = getattr(cause, "orig", None) or cause.__cause__ or cause.__context__
            if not isinstance(inner, BaseException) or id(inner) in seen:
                break
            seen.add(id(inner))
            cause = inner
        if self._interrupted and "interrupt" in str(cause).lower():
            return f"statement timeout: the query ran longer than source.timeout ({self._timeout:g} s)"
        lines = str(cause).strip().splitlines()
        text = f"{type(cause).__name__}: {lines[0] if lines else ''}".rstrip(": ")
        return mask(text, url_secrets(self.config.url))[:300]


def _query_placeholders(query: str) -> bool:
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


def _engine_options(url: sa.URL, timeout: float) -> dict[str, Any]:
    """Bounded connection attempts and lock waits: a silent network or a held lock must fail
    this tick, not hang the scheduler. SQLite's ``timeout`` is how long a locked database is
    waited for; PostgreSQL's ``connect_timeout`` bounds the connection.

    DuckDB lets one process open a database file for writing, or several for reading only, and
    a pooled connection would hold the file between ticks, locking out the application that
    writes the log: each read opens the file read-only and closes it (a writer holding the
    file then fails that tick, with DuckDB's lock error)."""
    backend = url.get_backend_name()
    if backend == "duckdb":
        read_only = {} if "access_mode" in url.query else {"connect_args": {"read_only": True}}
        return {"poolclass": sa.pool.NullPool, **read_only}
    if backend == "postgresql" and "connect_timeout" not in url.query:
        return {"connect_args": {"connect_timeout": max(1, min(10, math.ceil(timeout)))}}
    if backend == "sqlite" and "timeout" not in url.query:
        return {"connect_args": {"timeout": timeout}}
    return {}
