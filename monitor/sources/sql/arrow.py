"""Arrow-native row reads: a SQL source's statement run through an ADBC driver, no Python object per row.

``pandas.read_sql`` turns every value of every row into a Python object before it builds a
column (~1 KB and ~6 us per row of a log). An ADBC driver (the Arrow project's database
connectivity standard) returns Arrow columns instead; the statement is the same SQLAlchemy
Core statement, compiled for the database with its bounds as *bound parameters*.

Used for PostgreSQL (its ``statement_timeout`` still bounds the read) and for SQLite tables
(the statement is fairwatch's own ``SELECT ... WHERE ts`` range, whose work is bounded by the
table; a user's ``query:`` on SQLite keeps pandas, whose progress handler can interrupt it:
the ADBC SQLite driver cannot cancel a statement). A DuckDB database needs no ADBC driver: the
source engine's own DuckDB connection returns Arrow record batches (DuckDB refuses a second
connection to a file this process has open with another configuration), and is interrupted at
the read's deadline. Between batches the read's deadline is checked. :class:`RowReader` falls back to
``pandas.read_sql`` whenever this path fails (a column whose stored types are mixed, which Arrow
cannot hold in one column, for instance).
"""

from __future__ import annotations

import importlib.util
import logging
import math
import threading
import time
from collections.abc import Callable, Collection, Generator, Iterator
from contextlib import closing, contextmanager
from typing import Any, Literal

import pandas as pd
import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from monitor.core.errors import SourceError
from monitor.sources.count_sql import DOLLAR_DIALECT, grouped_keys
from monitor.sources.frames import count_keys
from monitor.sources.sql.connection import Connect, sqlite_file_lock

__all__ = ["ArrowReadTimeout", "ArrowReader", "RowReader"]

logger = logging.getLogger(__name__)

_STRIKES = 3  # Arrow reads failing in a row (SQLAlchemy then reading) before a source gives Arrow up

_DRIVERS = {"sqlite": "adbc_driver_sqlite", "postgresql": "adbc_driver_postgresql", "duckdb": "duckdb_engine"}
#: Compiles statements with the placeholders each ADBC driver expects (``?``, ``$1``).
_DIALECTS: dict[str, Callable[[], sa.Dialect]] = {
    "sqlite": sqlite.dialect,
    "postgresql": lambda: DOLLAR_DIALECT,
    "duckdb": lambda: _duckdb_dialect(),
}
#: Parameter types SQLite's driver binds as SQLAlchemy would (others: pandas reads the window).
_PLAIN = (str, int, float, type(None))


class ArrowReadTimeout(Exception):
    """The read ran past its deadline (checked between batches)."""


class ArrowReader:
    """Reads SQLAlchemy statements through an ADBC driver into pandas frames."""

    def __init__(self, backend: str, connect: Callable[[], Any], prepare: Callable[[Any], None]) -> None:
        self.backend = backend
        self._connect = connect
        self._prepare = prepare
        self._dialect = _DIALECTS[backend]()

    @classmethod
    def for_url(
        cls, url: sa.URL, *, timeout: float, own_statement: bool, engine: sa.Engine
    ) -> ArrowReader | None:
        """A reader for ``url``, or ``None`` where no ADBC driver applies (then pandas reads).

        ``own_statement``: the statement is fairwatch's own range read of a table (required on
        SQLite, whose driver cannot interrupt a statement). ``engine``: the source's, whose
        connections DuckDB reads are made on.
        """
        backend = url.get_backend_name()
        module = _DRIVERS.get(backend)
        if module is None or importlib.util.find_spec(module) is None:
            return None
        if backend == "sqlite":
            database = url.database or ""
            if not own_statement or database in ("", ":memory:") or database.startswith("file:") or url.query:
                return None

            @contextmanager
            def connect() -> Iterator[Any]:  # one SQLite library at a time on the file
                with sqlite_file_lock(url, "adbc"), _dbapi(module).connect(database) as conn:
                    yield conn

            return cls(backend, connect, lambda _conn: None)
        if backend == "duckdb":
            return cls(backend, lambda: closing(engine.raw_connection()), lambda _conn: None)
        uri = url.set(drivername="postgresql")
        if "connect_timeout" not in uri.query:
            uri = uri.update_query_dict({"connect_timeout": str(max(1, min(10, math.ceil(timeout))))})
        milliseconds = str(max(1, round(timeout * 1000)))

        def prepare(conn: Any) -> None:
            with conn.cursor() as cursor:
                cursor.execute("SELECT set_config('statement_timeout', $1, false)", (milliseconds,))
                cursor.fetchall()

        target = uri.render_as_string(hide_password=False)
        return cls(backend, lambda: _dbapi(module).connect(target), prepare)

    def compile(self, statement: sa.Select[Any] | sa.TextClause) -> tuple[str, list[Any]]:
        """The statement's SQL for the driver, with positional placeholders, and its bound values."""
        compiled = statement.compile(dialect=self._dialect, compile_kwargs={"render_postcompile": True})
        params = [compiled.params[name] for name in compiled.positiontup or ()]
        if self.backend == "sqlite" and not all(isinstance(p, _PLAIN) for p in params):
            raise TypeError("a bound value SQLite's ADBC driver would bind differently")
        return compiled.string, params

    def read(
        self,
        statement: sa.Select[Any] | sa.TextClause,
        deadline: float,
        *,
        text: Collection[str] | None = None,
    ) -> pd.DataFrame:
        """The statement's rows as a frame (the dtypes ``pandas.read_sql`` gives typed columns).

        ``text``: on SQLite, the columns declared as text. A column of another affinity comes
        back as text only when its rows hold values of several types (a REAL column keeps text
        it cannot convert): SQLite's driver would then turn its numbers into text, to 15
        digits, so such a read is refused (and pandas reads the values as stored).
        """
        return pd.concat(list(self.read_chunks(statement, deadline, text=text, rows=None)), ignore_index=True)

    def read_chunks(
        self,
        statement: sa.Select[Any] | sa.TextClause,
        deadline: float,
        *,
        text: Collection[str] | None = None,
        rows: int | None = 1 << 18,
    ) -> Generator[pd.DataFrame, None, None]:
        """The statement's rows as frames of about ``rows`` rows each (``None``: one frame), so
        that a caller that reduces them (counts) never holds the whole result. See :meth:`read`."""
        sql, params = self.compile(statement)
        with self._connect() as conn:
            self._prepare(conn)
            with closing(conn.cursor()) as cursor, self._interrupted_at(deadline, cursor):
                cursor.execute(sql, params)
                # DuckDB 1.5 renamed fetch_record_batch (deprecated there) to to_arrow_reader
                fetch = getattr(cursor, "to_arrow_reader", None) or cursor.fetch_record_batch
                reader = fetch()
                _check_types(reader.schema, text)
                batches: list[pa.RecordBatch] = []
                held = 0
                for batch in reader:
                    if time.monotonic() > deadline:
                        raise ArrowReadTimeout("the read ran longer than source.timeout")
                    batches.append(batch)
                    held += batch.num_rows
                    if rows is not None and held >= rows:
                        yield _frame(batches, reader.schema, text)
                        batches, held = [], 0
                if batches or rows is None or not held:
                    yield _frame(batches, reader.schema, text)

    @contextmanager
    def _interrupted_at(self, deadline: float, cursor: Any) -> Iterator[None]:
        """DuckDB runs a statement before the first batch comes back, and has no statement timeout:
        a timer interrupts the cursor's statement at the deadline. (The other drivers: the deadline is
        checked between batches, and PostgreSQL's ``statement_timeout`` bounds the statement.)"""
        if self.backend != "duckdb":
            yield
            return
        timer = threading.Timer(max(0.0, deadline - time.monotonic()), cursor.interrupt)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()


def _check_types(schema: pa.Schema, text: Collection[str] | None) -> None:
    if text is not None:
        mixed = [f.name for f in schema if pa.types.is_string(f.type) and f.name not in text]
        if mixed:
            raise TypeError(f"column(s) {mixed} hold values of several types")


def _frame(batches: list[pa.RecordBatch], schema: pa.Schema, text: Collection[str] | None) -> pd.DataFrame:
    table = pa.Table.from_batches(batches, schema=schema)
    _check_types(table.schema, text)
    frame: pd.DataFrame = table.to_pandas()
    return frame


def _duckdb_dialect() -> sa.Dialect:
    from duckdb_engine import Dialect  # the duckdb extra, imported by DuckDB sources only

    return Dialect(paramstyle="numeric_dollar")


def _read_sql(statement: sa.Select[Any] | sa.TextClause, connect: Connect) -> pd.DataFrame:
    with connect() as conn:
        return pd.read_sql(statement, conn)


def _dbapi(module: str) -> Any:
    return importlib.import_module(f"{module}.dbapi")


class RowReader:
    """A statement's result as a frame: as Arrow columns where an ADBC driver applies (``arrow``),
    else through ``pandas.read_sql``; and through pandas once when an Arrow read fails.

    A timeout is the read's failure; any other Arrow failure is retried through SQLAlchemy on the
    read's connection, whose failure, if it fails too, is the read's. Arrow is given up for the
    source (logged once) when the data is the cause - values of a type the driver cannot hold - or
    after three such failures in a row; a passing cause (a lock SQLite's own driver waited out) keeps it.
    """

    def __init__(
        self,
        arrow: ArrowReader | None,
        *,
        deadline: Callable[[], float],
        timeout: float,
        describe: Callable[[], str],
        cause: Callable[[BaseException], str],
    ) -> None:
        self._arrow = arrow
        self._deadline = deadline
        self._timeout = timeout
        self._describe = describe
        self._cause = cause
        self._strikes, self._failure = 0, ""  # Arrow reads failed in a row; the last cause

    @property
    def kind(self) -> Literal["arrow", "pandas"]:
        return "pandas" if self._arrow is None else "arrow"

    def rows(
        self, connect: Connect, statement: sa.Select[Any] | sa.TextClause, *, text: Collection[str] | None
    ) -> pd.DataFrame:
        """The statement's rows (``text``: see :meth:`ArrowReader.read`); ``connect`` opens the
        read's SQLAlchemy connections (no other connection of the source is open meanwhile)."""
        if self._arrow is None:
            return _read_sql(statement, connect)
        try:
            frame = self._arrow.read(statement, self._deadline(), text=text)
        except Exception as exc:
            self._arrow_failed(exc)
            frame = _read_sql(statement, connect)
            self._give_up(exc, "reading rows through pandas")
            return frame
        self._strikes = 0
        return frame

    def counts(
        self, connect: Connect, keys: sa.Select[Any], *, text: Collection[str], in_python: bool
    ) -> pd.DataFrame:
        """``keys`` (each row's keys: the ungrouped count statement) counted: by pandas' hash grouping
        over Arrow chunks ``in_python`` (where the database's own ``GROUP BY`` is the slow part:
        SQLite sorts every row), else by the database, its combinations read as Arrow columns."""
        if self._arrow is None:
            return _read_sql(grouped_keys(keys), connect)
        try:
            if in_python:
                # closed here, not by the garbage collector: its connection holds ADBC's turn on a
                # SQLite file, and the fallback below opens a Python connection to it
                with closing(self._arrow.read_chunks(keys, self._deadline(), text=text)) as chunks:
                    frame = count_keys(chunks)
            else:
                frame = self._arrow.read(grouped_keys(keys), self._deadline())
        except Exception as exc:
            self._arrow_failed(exc)
            frame = _read_sql(grouped_keys(keys), connect)
            self._give_up(exc, "counting in the database")
            return frame
        self._strikes = 0
        return frame

    def _arrow_failed(self, exc: Exception) -> None:
        """A timeout fails the read; anything else is read again through SQLAlchemy."""
        if (
            isinstance(exc, ArrowReadTimeout)
            or time.monotonic() > self._deadline()
            or "timeout" in str(exc).lower()
        ):
            raise SourceError(
                f"cannot read {self._describe()}: statement timeout: the read ran longer than "
                f"source.timeout ({self._timeout:g} s)"
            ) from None
        self._failure = self._cause(exc)

    def _give_up(self, exc: Exception, instead: str) -> None:
        self._strikes += 1
        data = isinstance(exc, TypeError | pa.ArrowException) or "type mismatch" in str(exc).lower()
        if data or self._strikes >= _STRIKES:
            logger.info(
                "%s: %s from now on; the Arrow read failed: %s", self._describe(), instead, self._failure
            )
            self._arrow = None
