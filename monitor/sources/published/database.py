"""Published panes in a database: two tables fairwatch creates, through SQLAlchemy.

``fairwatch_published_panes`` holds one row per (model, fingerprint, publisher, pane): the pane's
start and end (Unix seconds), its row total, when it was published, and its counted combinations
as the bytes of an Arrow IPC file (zstd; the same file a directory store holds, its facts in the
schema metadata). ``fairwatch_publishers`` holds each publisher's heartbeat: when it last
published, which process (instance, host, pid) and the rows its newest read rejected (JSON).

Why the combinations are bytes and not one SQL row each: what a pane counts differs by model and
config (a score rounded or not, one group column or five, a column of text and numbers in one
pod's SQLite log, JSON Lists), so rows of combination columns would need a table per fingerprint
and column types no database shares; the Arrow file gives every value back as it was counted,
with its type, and is ~14x smaller. A pane is published again by one upsert (``INSERT ... ON
CONFLICT DO UPDATE`` on PostgreSQL and SQLite; a delete and an insert in one transaction
elsewhere): a reader sees the old pane or the new one, never half of one, and a publisher killed
mid-write leaves nothing. A reader lists the panes (no bytes) and reads the bytes of those whose
``published_at`` or row total changed since it last read them.

PostgreSQL is the store for a fleet (every replica and the central reach it); SQLite serves the
pods of one host. The tables are created by the first publisher (``CREATE TABLE`` if missing; two
creating them at once is fine); a central that finds none reports that nothing was published yet.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import socket
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import sqlalchemy as sa

from monitor.core.errors import ConfigError, SourceError
from monitor.core.secrets import mask, mask_url, url_secrets
from monitor.sources.count_files import decode_frame, frame_bytes
from monitor.sources.published.store import (
    META,
    Heartbeat,
    LastBeat,
    Listed,
    PublishedPane,
    pane_from,
    pane_meta,
)

__all__ = ["PANES", "PUBLISHERS", "PaneTable"]

log = logging.getLogger(__name__)

_TABLES = sa.MetaData()
#: One row per published pane.
PANES = sa.Table(
    "fairwatch_published_panes",
    _TABLES,
    sa.Column("model", sa.Text, primary_key=True),
    sa.Column("fingerprint", sa.String(16), primary_key=True),
    sa.Column("publisher", sa.Text, primary_key=True),
    sa.Column("pane_start", sa.BigInteger, primary_key=True),  # Unix seconds
    sa.Column("pane_end", sa.BigInteger, nullable=False),
    sa.Column("row_total", sa.BigInteger, nullable=False),
    sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("version", sa.String(32), nullable=False),  # new at every write: what a reader compares
    sa.Column("counts", sa.LargeBinary, nullable=False),  # an Arrow IPC file, the pane's facts inside
)
#: One row per publisher: its heartbeat.
PUBLISHERS = sa.Table(
    "fairwatch_publishers",
    _TABLES,
    sa.Column("model", sa.Text, primary_key=True),
    sa.Column("fingerprint", sa.String(16), primary_key=True),
    sa.Column("publisher", sa.Text, primary_key=True),
    sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("instance", sa.Text, nullable=False),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("rejected", sa.Text, nullable=False),  # JSON: reason -> rows
)
_TIMEOUT = 10.0  # seconds a connection attempt, a lock or a statement may take


class PaneTable:
    """One model's published panes in a database's ``fairwatch_published_panes`` table."""

    def __init__(self, url: str, model: str, key: str) -> None:
        self.model = model
        self._secrets = tuple(url_secrets(url))
        self._shown = mask_url(url)
        self._engine = sa.create_engine(url, pool_pre_ping=True, **_engine_options(sa.make_url(url)))
        self._created = False  # the tables are known to exist
        self._said: set[tuple[Any, str]] = set()  # unreadable panes already logged

    @classmethod
    def open(cls, url: str, model: str, key: str) -> PaneTable:
        """The database ``url`` names (``key``: the setting, named in errors)."""
        try:
            return cls(url, model, key)
        except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError, ValueError) as exc:
            raise ConfigError(f"{key}: cannot open the store {mask_url(url)}: {exc}") from None

    def describe(self) -> str:
        return f"{self._shown} ({PANES.name}, model {self.model})"

    def close(self) -> None:
        self._engine.dispose()

    def check(self, *, publishing: bool = False) -> str | None:
        try:
            with self._engine.connect() as conn:
                if not publishing and not sa.inspect(conn).has_table(PANES.name):
                    return f"no table {PANES.name} in {self._shown} yet (the first publisher creates it)"
        except sa.exc.SQLAlchemyError as exc:
            return f"cannot be read: {self._cause(exc)}"
        return None

    # -- publishing -------------------------------------------------------------------------------

    def write(
        self,
        fingerprint: str,
        publisher: str,
        pane: datetime,
        size: timedelta,
        frame: pd.DataFrame,
        flagged: frozenset[str],
        published_at: datetime,
    ) -> None:
        meta = pane_meta(self.model, fingerprint, publisher, pane, size, frame, flagged, published_at)
        counts = frame_bytes(frame, META, meta)  # Unwritable before anything is written
        row = {
            **self._key(fingerprint, publisher),
            "pane_start": int(pane.timestamp()),
            "pane_end": int((pane + size).timestamp()),
            "row_total": meta["rows"],
            "published_at": published_at.astimezone(UTC),
            "version": uuid.uuid4().hex,
            "counts": counts,
        }
        with self._failing("a pane cannot be published"), self._writing() as conn:
            _upsert(conn, PANES, row)

    def beat(
        self, fingerprint: str, publisher: str, at: datetime, rejected: Mapping[str, int], instance: str
    ) -> None:
        row = {
            **self._key(fingerprint, publisher),
            "published_at": at.astimezone(UTC),
            "instance": instance,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "rejected": json.dumps({str(k): int(v) for k, v in rejected.items()}),
        }
        with self._failing("the publisher's heartbeat cannot be written"), self._writing() as conn:
            _upsert(conn, PUBLISHERS, row)

    def last_beat(self, fingerprint: str, publisher: str) -> LastBeat | None:
        where = _matching(PUBLISHERS, self._key(fingerprint, publisher))
        columns = (PUBLISHERS.c.instance, PUBLISHERS.c.published_at, PUBLISHERS.c.host, PUBLISHERS.c.pid)
        with self._failing("the publisher's heartbeat cannot be read"), self._reading() as conn:
            row = None if conn is None else conn.execute(sa.select(*columns).where(where)).first()
        if row is None:
            return None
        return LastBeat(row.instance, _utc(row.published_at), row.host, int(row.pid))

    def pane_starts(self, fingerprint: str, publisher: str) -> set[datetime]:
        where = _matching(PANES, self._key(fingerprint, publisher))
        with self._failing("cannot be listed"), self._reading() as conn:
            statement = sa.select(PANES.c.pane_start).where(where)
            starts: list[int] = [] if conn is None else list(conn.execute(statement).scalars())
            return {datetime.fromtimestamp(int(s), UTC) for s in starts}

    def remove(self, fingerprint: str, publisher: str, panes: list[datetime]) -> None:
        if not panes:
            return
        where = _matching(PANES, self._key(fingerprint, publisher))
        starts = [int(p.timestamp()) for p in panes]
        with self._failing("a pane cannot be removed"), self._writing() as conn:
            conn.execute(PANES.delete().where(where, PANES.c.pane_start.in_(starts)))

    def own_panes(self, fingerprint: str, publisher: str) -> list[PublishedPane]:
        where = _matching(PANES, self._key(fingerprint, publisher))
        statement = sa.select(PANES.c.pane_start, PANES.c.counts).where(where)
        with self._failing("cannot be read"), self._reading() as conn:
            rows = [] if conn is None else conn.execute(statement).all()
        panes = [self._pane(row.counts, fingerprint, row.pane_start, publisher) for row in rows]
        return [p for p in panes if p is not None]

    def expire(self, keep: str, before: datetime) -> list[str]:
        cutoff = before.astimezone(UTC)
        with self._failing("cannot be cleaned up"), self._writing() as conn:
            # the heartbeats older than the cutoff, deleted only while still older (a publisher back
            # from its silence just now keeps its heartbeat: the delete's condition sees its write, or
            # waits for it); in a fixed order, so two publishers cleaning up at once take their locks alike
            gone = set()
            for fingerprint, publisher in sorted(self._silent(conn, keep, cutoff)):
                key = self._key(fingerprint, publisher)
                still_old = conn.execute(
                    PUBLISHERS.delete().where(_matching(PUBLISHERS, key), PUBLISHERS.c.published_at < cutoff)
                ).rowcount
                heard = conn.execute(
                    sa.select(PUBLISHERS.c.publisher).where(_matching(PUBLISHERS, key))
                ).first()
                if not still_old and heard is not None:
                    continue  # published again meanwhile
                # its panes written before the cutoff: a pane written since is a live publisher's
                removed = conn.execute(
                    PANES.delete().where(_matching(PANES, key), PANES.c.published_at < cutoff)
                ).rowcount
                if still_old or removed:
                    gone.add(publisher)
        return sorted(gone)

    def _silent(self, conn: sa.Connection, keep: str, cutoff: datetime) -> set[tuple[str, str]]:
        """(fingerprint, publisher) of the heartbeats older than ``cutoff`` and of panes without a
        heartbeat whose newest was published before it - never ``keep``'s."""
        old = conn.execute(
            sa.select(PUBLISHERS.c.fingerprint, PUBLISHERS.c.publisher).where(
                PUBLISHERS.c.model == self.model,
                PUBLISHERS.c.publisher != keep,
                PUBLISHERS.c.published_at < cutoff,
            )
        ).all()
        heartbeat = sa.select(PUBLISHERS.c.publisher).where(
            PUBLISHERS.c.model == self.model,
            PUBLISHERS.c.fingerprint == PANES.c.fingerprint,
            PUBLISHERS.c.publisher == PANES.c.publisher,
        )
        orphans = conn.execute(
            sa.select(PANES.c.fingerprint, PANES.c.publisher)
            .where(PANES.c.model == self.model, PANES.c.publisher != keep, ~sa.exists(heartbeat))
            .group_by(PANES.c.fingerprint, PANES.c.publisher)
            .having(sa.func.max(PANES.c.published_at) < cutoff)
        ).all()
        return {(str(f), str(p)) for f, p in (*old, *orphans)}

    # -- reading ----------------------------------------------------------------------------------

    def fingerprints(self) -> list[str]:
        statement = sa.select(PANES.c.fingerprint).where(PANES.c.model == self.model).distinct()
        with self._failing("cannot be listed"), self._reading() as conn:
            return [] if conn is None else sorted(conn.execute(statement).scalars())

    def heartbeats(self, fingerprint: str) -> dict[str, Heartbeat]:
        statement = sa.select(PUBLISHERS.c.publisher, PUBLISHERS.c.published_at, PUBLISHERS.c.rejected).where(
            PUBLISHERS.c.model == self.model, PUBLISHERS.c.fingerprint == fingerprint
        )
        with self._failing("cannot be listed"), self._reading() as conn:
            rows = [] if conn is None else conn.execute(statement).all()
        out = {}
        for row in rows:
            try:
                rejected = Counter({str(k): int(v) for k, v in json.loads(row.rejected).items()})
            except (ValueError, TypeError, AttributeError):
                rejected = Counter()
            out[row.publisher] = Heartbeat(_utc(row.published_at), rejected)
        return out

    def listing(self, fingerprint: str) -> list[Listed]:
        c = PANES.c
        statement = (
            sa.select(c.publisher, c.pane_start, c.version)
            .where(c.model == self.model, c.fingerprint == fingerprint)
            .order_by(c.publisher, c.pane_start)
        )
        with self._failing("cannot be listed"), self._reading() as conn:
            rows = [] if conn is None else conn.execute(statement).all()
        return [Listed(r.publisher, json.dumps([r.publisher, r.pane_start]), r.version) for r in rows]

    def read(self, listed: Listed, fingerprint: str) -> PublishedPane | None:
        publisher, start = json.loads(listed.where)
        where = _matching(PANES, self._key(fingerprint, publisher))
        statement = sa.select(PANES.c.counts).where(where, PANES.c.pane_start == start)
        with self._failing("cannot be read"), self._reading() as conn:
            counts = None if conn is None else conn.execute(statement).scalar()
        return None if counts is None else self._pane(counts, fingerprint, start, publisher)

    # -- internals --------------------------------------------------------------------------------

    def _key(self, fingerprint: str, publisher: str) -> dict[str, str]:
        return {"model": self.model, "fingerprint": fingerprint, "publisher": publisher}

    def _pane(self, counts: bytes, fingerprint: str, start: int, publisher: str) -> PublishedPane | None:
        try:
            frame, meta = decode_frame(bytes(counts), META)
            return pane_from(frame, meta, self.model, fingerprint, str(start))
        except Exception as exc:  # whatever damaged bytes make the decoder raise: not used
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            if ((publisher, start), reason) not in self._said:
                self._said.add(((publisher, start), reason))
                log.warning(
                    "model %s: published pane %s of %s cannot be read (%s); not counted",
                    self.model,
                    start,
                    publisher,
                    reason,
                )
            return None

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sa.Connection]:
        """A transaction, the tables created first if this store has not seen them."""
        if not self._created:
            try:
                _TABLES.create_all(self._engine, checkfirst=True)
            except sa.exc.SQLAlchemyError:  # another publisher created them at the same moment
                with self._engine.connect() as conn:
                    if not all(sa.inspect(conn).has_table(t.name) for t in _TABLES.sorted_tables):
                        raise
            self._created = True
        with self._engine.begin() as conn:
            yield conn

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sa.Connection | None]:
        """A connection; ``None`` while the tables do not exist (nothing was published yet)."""
        with self._engine.connect() as conn:
            if not self._created:
                if not sa.inspect(conn).has_table(PANES.name) or not sa.inspect(conn).has_table(
                    PUBLISHERS.name
                ):
                    yield None
                    return
                self._created = True
            yield conn

    @contextlib.contextmanager
    def _failing(self, what: str) -> Iterator[None]:
        """The database's errors as the source's failure (this tick fails; the next tries again)."""
        try:
            yield
        except sa.exc.SQLAlchemyError as exc:
            raise SourceError(f"published:{self.describe()}: {what}: {self._cause(exc)}") from None

    def _cause(self, exc: BaseException) -> str:
        text = str(getattr(exc, "orig", None) or exc)
        return mask((text.splitlines() or [type(exc).__name__])[0][:300], self._secrets)


def _engine_options(url: sa.URL) -> dict[str, Any]:
    """Bounded waits: a silent network, a held lock or a slow statement fails this tick (the next one
    tries again), never the scheduler: PostgreSQL's connect, statement and lock timeouts and TCP
    keepalives (a peer gone without a word); SQLite's wait for a locked file."""
    backend = url.get_backend_name()
    seconds = math.ceil(_TIMEOUT)
    if backend == "postgresql":
        options = {
            "connect_timeout": seconds,
            "options": f"-c statement_timeout={seconds * 1000} -c lock_timeout={seconds * 1000}",
            "keepalives": 1,
            "keepalives_idle": seconds,
            "keepalives_interval": 5,
            "keepalives_count": 3,
            "tcp_user_timeout": 3 * seconds * 1000,
        }
        return {"connect_args": {k: v for k, v in options.items() if k not in url.query}}
    if backend == "sqlite" and "timeout" not in url.query:
        return {"connect_args": {"timeout": _TIMEOUT}}
    return {}


def _matching(table: sa.Table, key: Mapping[str, str]) -> sa.ColumnElement[bool]:
    return sa.and_(*(table.c[name] == value for name, value in key.items()))


def _upsert(conn: sa.Connection, table: sa.Table, row: dict[str, Any]) -> None:
    """Insert ``row``, or replace the row of its primary key."""
    keys = [c.name for c in table.primary_key.columns]
    dialect = conn.dialect.name
    if dialect in ("postgresql", "sqlite"):
        from sqlalchemy.dialects import postgresql, sqlite

        insert = (postgresql if dialect == "postgresql" else sqlite).insert(table).values(row)
        changed = {name: insert.excluded[name] for name in row if name not in keys}
        conn.execute(insert.on_conflict_do_update(index_elements=keys, set_=changed))
        return
    conn.execute(table.delete().where(_matching(table, {k: row[k] for k in keys})))
    conn.execute(table.insert().values(row))


def _utc(value: datetime) -> datetime:
    """A stored time as aware UTC (SQLite gives back the naive UTC time it was given)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
