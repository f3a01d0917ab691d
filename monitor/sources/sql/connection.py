"""A SQL source's database: one SQLAlchemy engine, every read under the source's deadline.

``source.timeout`` bounds each read: PostgreSQL's ``statement_timeout`` (lock waits included),
for SQLite a progress handler that interrupts a statement running past the read's deadline, for
DuckDB a timer that interrupts the connection. Other databases: only the connection's own
timeouts. Connection attempts and lock waits are bounded too (:func:`engine_options`). Whatever
fails inside a read is a :class:`~monitor.core.errors.SourceError` of one line naming the driver's
error without the SQL, its parameters or the password (:func:`short_cause`).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from monitor.core.errors import SourceError
from monitor.core.secrets import mask

__all__ = ["Connect", "Database", "LibraryTurns", "engine_options", "short_cause", "sqlite_file_lock"]


Connect = Callable[[], AbstractContextManager[Connection]]
"""Opens a connection for one part of a read (:meth:`Database.reading`)."""


class Database:
    """The engine of one source, and the deadline of the read running on it.

    The engine is created at once but nothing connects before the first read, so a database that
    is down at start-up only fails that model's evaluations until it is back.
    """

    def __init__(
        self, url: sa.URL, *, timeout: float, describe: Callable[[], str], secrets: Collection[str]
    ) -> None:
        self.url = url
        self.timeout = timeout
        self._describe = describe
        self._secrets = secrets
        self.deadline = math.inf  # monotonic time the running read must end by
        self._interrupted = False
        self.engine: Engine = sa.create_engine(url, pool_pre_ping=True, **engine_options(url, timeout))
        self._bound_statements()

    @property
    def backend(self) -> str:
        return self.url.get_backend_name()

    @property
    def is_sqlite(self) -> bool:
        return self.backend == "sqlite"

    def past_deadline(self) -> bool:
        return time.monotonic() > self.deadline

    @contextmanager
    def reading(self, forget: Callable[[], None]) -> Iterator[Connect]:
        """One read, under a fresh deadline: yields ``connect``, which opens a connection for a part
        of it (plan the statement on one, close it, then read through Arrow: on a SQLite file the
        two libraries take turns, :func:`sqlite_file_lock`). Every failure to read is a source
        failure, however the driver's error comes back (SQLAlchemy's, or wrapped by pandas:
        ``pandas.errors.DatabaseError`` for "database is locked"); ``forget`` runs first, since the
        schema may have changed under us. The chained error would carry the SQL and its
        parameters: it is not kept."""
        self.check_file()
        self.deadline, self._interrupted = time.monotonic() + self.timeout, False
        try:
            yield self._connect
        except SourceError:
            raise
        except Exception as exc:
            forget()
            raise SourceError(f"cannot read {self._describe()}: {self.cause(exc)}") from None
        finally:
            self.deadline = math.inf

    def cause(self, exc: BaseException) -> str:
        """:func:`short_cause`, or that the statement ran past ``source.timeout`` when it was interrupted."""
        text = short_cause(exc, self._secrets)
        if self._interrupted and "interrupt" in text.lower():
            return f"statement timeout: the query ran longer than source.timeout ({self.timeout:g} s)"
        return text

    def check_file(self) -> None:
        """SQLite (and DuckDB opened for writing) would silently create a missing database file; a
        monitor should say it is missing."""
        engine = {"sqlite": "SQLite", "duckdb": "DuckDB"}.get(self.backend)
        if engine is None:
            return
        database = self.url.database or ""
        if database in ("", ":memory:") or database.startswith(("file:", "md:")) or self.url.query.get("uri"):
            return
        if not Path(database).is_file():
            raise SourceError(f"cannot read {self._describe()}: the {engine} database file does not exist")

    def close(self) -> None:
        self.engine.dispose()

    def _bound_statements(self) -> None:
        """``source.timeout`` per statement (see the module docstring; DuckDB's timer is in :meth:`_connect`)."""
        if self.backend == "postgresql":
            milliseconds = str(max(1, round(self.timeout * 1000)))

            @sa.event.listens_for(self.engine, "connect")
            def _pg_timeout(dbapi_connection: Any, _record: Any) -> None:
                cursor = dbapi_connection.cursor()
                cursor.execute("SELECT set_config('statement_timeout', %s, false)", (milliseconds,))
                cursor.close()
                dbapi_connection.commit()

        elif self.backend == "sqlite":

            @sa.event.listens_for(self.engine, "connect")
            def _sqlite_deadline(dbapi_connection: Any, _record: Any) -> None:
                dbapi_connection.set_progress_handler(self._progress, 10_000)

    @contextmanager
    def _connect(self) -> Iterator[Connection]:
        """A connection for one read; on DuckDB, which has no statement timeout, interrupted by a
        timer at the read's deadline; on a SQLite file, holding the file's lock (:func:`sqlite_file_lock`)."""
        with sqlite_file_lock(self.url, "python"), self.engine.connect() as conn:
            if self.backend != "duckdb":
                yield conn
                return
            timer = threading.Timer(
                max(0.0, self.deadline - time.monotonic()),
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

    def _progress(self) -> int:
        """SQLite's progress handler: non-zero interrupts the running statement."""
        if time.monotonic() > self.deadline:
            self._interrupted = True
            return 1
        return 0


def short_cause(exc: BaseException, secrets: Collection[str] = ()) -> str:
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
    lines = str(cause).strip().splitlines()
    text = f"{type(cause).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    return mask(text, secrets)[:300]


class LibraryTurns:
    """Connections of one SQLite library at a time on a file, any number of that library at once.

    Waiters queue in arrival order; the waiters at the head of the queue that use one library enter
    together once the file is free of the other's, so neither library waits for ever behind a
    stream of the other's reads. A thread that holds a library's turn may take it again (nested
    connections of one library); asking for the other library's while holding one is a bug.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._library: str | None = None  # the library whose connections are open, if any
        self._holders = 0
        self._queue: list[tuple[str, object]] = []
        self._mine = threading.local()  # library -> this thread's nesting depth

    @contextmanager
    def turn(self, library: str) -> Iterator[None]:
        depth: dict[str, int] = self._mine.__dict__.setdefault("depth", {})
        held = [name for name, n in depth.items() if n]
        if held and held != [library]:
            raise RuntimeError(f"a {held[0]} SQLite connection is open in this thread; {library}'s must wait")
        if not held:
            self._enter(library)
        try:
            depth[library] = depth.get(library, 0) + 1
            yield
        finally:
            depth[library] = depth.get(library, 1) - 1
            if not depth[library]:
                self._leave()

    def _enter(self, library: str) -> None:
        token = object()
        with self._changed:
            self._queue.append((library, token))
            try:
                self._changed.wait_for(lambda: self._may_enter(library, token))
            except BaseException:
                self._queue.remove((library, token))
                self._changed.notify_all()  # those queued behind this waiter may enter now
                raise
            self._queue.remove((library, token))
            self._library = library
            self._holders += 1
            self._changed.notify_all()  # the next waiters of this library may enter with it

    def _may_enter(self, library: str, token: object) -> bool:
        for name, waiter in self._queue:
            if name != library:
                return False  # someone of the other library came first
            if waiter is token:
                break
        return self._holders == 0 or self._library == library

    def _leave(self) -> None:
        with self._changed:
            self._holders -= 1
            if not self._holders:
                self._library = None
                self._changed.notify_all()


_FILE_TURNS: dict[str, LibraryTurns] = {}
_FILE_TURNS_GUARD = threading.Lock()


@contextmanager
def sqlite_file_lock(url: sa.URL, library: str) -> Iterator[None]:
    """One SQLite library at a time on a database file, in this process (:class:`LibraryTurns`).

    The process holds two SQLite libraries - ADBC's, linked into its driver (``library="adbc"``),
    for Arrow reads, and Python's (``"python"``) for every other statement - and POSIX locks belong
    to the process, not to a library: when one closes its descriptor of the file, the locks the
    other holds on it are gone, and a writer in another process may then change pages under a read
    (SQLite's "multiple copies of SQLite linked into the same application"). Every connection to a
    SQLite file, of either library, is opened, used and closed in its library's turn. Connections
    of one library share its turn: one library keeps its own connections' locks right. Other
    backends: no lock."""
    database = (url.database or "") if url.get_backend_name() == "sqlite" else ""
    if not database or database == ":memory:" or database.startswith("file:"):
        yield
        return
    key = os.path.realpath(database)
    with _FILE_TURNS_GUARD:
        turns = _FILE_TURNS.setdefault(key, LibraryTurns())
    with turns.turn(library):
        yield


def engine_options(url: sa.URL, timeout: float) -> dict[str, Any]:
    """Bounded connection attempts and lock waits: a silent network or a held lock must fail
    this tick, not hang the scheduler. SQLite's ``timeout`` is how long a locked database is
    waited for; PostgreSQL's ``connect_timeout`` bounds the connection.

    DuckDB lets one process open a database file for writing, or several for reading only, and
    a pooled connection would hold the file between ticks, locking out the application that
    writes the log: each read opens the file read-only and closes it (a writer holding the
    file then fails that tick, with DuckDB's lock error).

    SQLite connections are not pooled either. The process holds two SQLite libraries - ADBC's,
    linked into its driver, for Arrow reads, and Python's for these statements - and POSIX locks
    belong to the process, not the library: when one library closes its descriptor of the
    database, the other's locks go too. A pooled connection of the second then kept a stale view
    of a WAL database (late rows written by the application were never seen by the panes'
    recheck) and, with a writer in the same process, failed with "disk I/O error". A connection
    per statement reads the latest commit and holds no lock between them (opening one costs
    ~0.1 ms)."""
    backend = url.get_backend_name()
    if backend == "duckdb":
        read_only = {} if "access_mode" in url.query else {"connect_args": {"read_only": True}}
        return {"poolclass": sa.pool.NullPool, **read_only}
    if backend == "postgresql" and "connect_timeout" not in url.query:
        return {"connect_args": {"connect_timeout": max(1, min(10, math.ceil(timeout)))}}
    if backend == "sqlite":
        unpooled = {} if _in_memory(url) else {"poolclass": sa.pool.NullPool}
        if "timeout" not in url.query:
            return {"connect_args": {"timeout": timeout}, **unpooled}
        return unpooled
    return {}


def _in_memory(url: sa.URL) -> bool:
    """An in-memory SQLite database lives as long as its one connection: it must stay pooled."""
    database = url.database or ""
    return database in ("", ":memory:") or "mode=memory" in database or url.query.get("mode") == "memory"
