"""The store replicas publish their counts to, and a central fairwatch reads: what every store does.

A store keeps, per model, *fingerprint*, publisher and pane, one pane's counted combinations with
its facts (start, size, row total, the indicator attributes the publisher's source thresholded,
when it was published), and per publisher a *heartbeat*: when it last published, which process
did, and the rows its newest read rejected. Two kinds hold them (:func:`open_store` picks one
from the URL):

- a directory or object store (:class:`~monitor.sources.published.directory.PaneDirectory`): a
  path, ``file://``, ``s3://``, ``gs://`` or ``hdfs://`` through ``pyarrow.fs``, one Arrow IPC file
  per pane;
- a database (:class:`~monitor.sources.published.database.PaneTable`): any other URL is an
  SQLAlchemy URL (PostgreSQL first-class; SQLite for one host), one row per pane in a table
  fairwatch creates.

The *fingerprint* is a hash of what was counted - the count request without its time ranges (the
columns, indicator thresholds, score decimals; :func:`request_fingerprint`) - and not of where:
every replica reads its own log, and one central reads them all. A publisher whose config counts
something else (another group, other score decimals) publishes under another fingerprint, which
the central does not read and reports.

Publishing again replaces (the same key), so a restarted pod or a retried write is never counted
twice; a pane a publisher no longer has (slid out of its windows) is removed by that publisher. A
publisher that stops (a pod deleted, scaled down) leaves its panes: they keep counting in the
central's windows until the live publishers remove them (:meth:`PaneStore.expire`: once nothing
was published by it for longer than their horizon and two panes - keep the central's windows no
longer than the publishers').
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any, Protocol

import pandas as pd

from monitor.config import store_kind
from monitor.sources.contract import WEIGHT, CountRequest

__all__ = [
    "FORMAT",
    "STORE_KINDS",
    "Heartbeat",
    "LastBeat",
    "Listed",
    "PaneStore",
    "PublishedPane",
    "open_store",
    "pane_from",
    "pane_meta",
    "request_fingerprint",
]

#: Written with every pane; a pane of another version is not read.
FORMAT = 1
#: The schema-metadata key of a pane's facts in its Arrow IPC bytes.
META = b"fairwatch.published"


@dataclass(frozen=True)
class Heartbeat:
    """A publisher's last word: when it last published, and the rows its newest read rejected."""

    published_at: datetime | None
    rejected: Counter[str]


@dataclass(frozen=True)
class LastBeat:
    """Who wrote a publisher's heartbeat last: its process, when, on which host, with which pid."""

    instance: str
    published_at: datetime
    host: str
    pid: int


@dataclass(frozen=True)
class PublishedPane:
    """One publisher's counts of one pane, as read back from the store."""

    publisher: str
    pane: datetime
    size: timedelta
    frame: pd.DataFrame  # counted combinations (a WEIGHT column), no time ranges
    rows: int
    flagged: frozenset[str]
    published_at: datetime

    @property
    def end(self) -> datetime:
        return self.pane + self.size


@dataclass(frozen=True)
class Listed:
    """A published pane as a store lists it, before it is read: whose, where, and a version that
    changes whenever the pane is published again (a reader keeps what it read until it does)."""

    publisher: str
    where: str  # the pane's place in the store (a file's path, a row's key)
    version: Hashable


class PaneStore(Protocol):
    """One model's published panes in a store (a directory, an object store, a database table)."""

    model: str

    def describe(self) -> str:
        """Where the store is, for messages (no credentials)."""
        ...

    def check(self, *, publishing: bool = False) -> str | None:
        """Why the store cannot be read now (``None``: it can), for ``fairwatch validate --connect``;
        ``publishing``: whether a publisher can reach it (the first one creates what is missing)."""
        ...

    def close(self) -> None:
        """Release the store's connections."""
        ...

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
        """Publish (or publish again: replace) one pane's counts, atomically."""
        ...

    def beat(
        self, fingerprint: str, publisher: str, at: datetime, rejected: Mapping[str, int], instance: str
    ) -> None:
        """Say the publisher is alive, and how many rows its newest read rejected (rows without a
        readable time belong to no pane). ``instance`` tells two processes of one name apart."""
        ...

    def last_beat(self, fingerprint: str, publisher: str) -> LastBeat | None:
        """The process that wrote the publisher's heartbeat last, and when (``None``: none, unreadable)."""
        ...

    def pane_starts(self, fingerprint: str, publisher: str) -> set[datetime]:
        """The panes this publisher has in the store."""
        ...

    def remove(self, fingerprint: str, publisher: str, panes: list[datetime]) -> None: ...

    def own_panes(self, fingerprint: str, publisher: str) -> list[PublishedPane]:
        """The panes this publisher has published (its own cut-short writes cleared)."""
        ...

    def expire(self, keep: str, before: datetime) -> list[str]:
        """Remove the panes and heartbeats of publishers (under any fingerprint) that last published
        before ``before`` - pods long gone, whose panes have left every window - never ``keep``'s.
        The publishers removed."""
        ...

    # -- reading ----------------------------------------------------------------------------------

    def fingerprints(self) -> list[str]:
        """The fingerprints anything was published under for this model."""
        ...

    def heartbeats(self, fingerprint: str) -> dict[str, Heartbeat]:
        """Each publisher of ``fingerprint``: when it last published and what its newest read rejected
        (an unreadable heartbeat: ``None`` and nothing)."""
        ...

    def listing(self, fingerprint: str) -> list[Listed]:
        """Every published pane of ``fingerprint``, unread."""
        ...

    def read(self, listed: Listed, fingerprint: str) -> PublishedPane | None:
        """One listed pane; ``None`` (logged once) when it cannot be read or is not what its place
        in the store says, or is gone since it was listed."""
        ...


def request_fingerprint(shape: CountRequest) -> str:
    """A stable hash of what a pane counts: the request without its time ranges (the score column
    counts only where it is rounded)."""
    score = shape.score if shape.score_decimals is not None else None
    plain = dataclasses.asdict(dataclasses.replace(shape, ranges=(), score=score))
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: A store's kind (:func:`~monitor.config.store_kind`) -> the class that keeps it, as
#: ``module:class``: imported only when a config uses it (SQLAlchemy loads for a database store only).
STORE_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "directory": "monitor.sources.published.directory:PaneDirectory",
        "database": "monitor.sources.published.database:PaneTable",
    }
)


def open_store(url: str, model: str, key: str) -> PaneStore:
    """The store ``url`` names, for ``model``'s panes (``key``: the setting, named in errors)."""
    module, _, name = STORE_KINDS[store_kind(url)].partition(":")
    store: PaneStore = getattr(importlib.import_module(module), name).open(url, model, key)
    return store


def pane_meta(
    model: str,
    fingerprint: str,
    publisher: str,
    pane: datetime,
    size: timedelta,
    frame: pd.DataFrame,
    flagged: frozenset[str],
    published_at: datetime,
) -> dict[str, Any]:
    """A pane's facts, stored with its counts (and checked against its place when read back)."""
    return {
        "format": FORMAT,
        "model": model,
        "fingerprint": fingerprint,
        "publisher": publisher,
        "pane": pane.astimezone(UTC).isoformat(),
        "size_seconds": size.total_seconds(),
        "rows": int(frame[WEIGHT].sum()) if len(frame) else 0,
        "flagged": sorted(flagged),
        "published_at": published_at.astimezone(UTC).isoformat(),
    }


def pane_from(
    frame: pd.DataFrame, meta: dict[str, Any], model: str, fingerprint: str, stem: str
) -> PublishedPane:
    """The pane a stored frame and its facts hold, checked against where it was found (``stem``: the
    pane's start, Unix seconds, as its place in the store names it). Raises ``ValueError``."""
    if meta.get("format") != FORMAT:
        raise ValueError(f"format {meta.get('format')}, not {FORMAT}")
    if meta.get("model") != model or meta.get("fingerprint") != fingerprint:
        raise ValueError(f"published for model {str(meta.get('model'))[:100]!r}, another place in the store")
    pane = datetime.fromisoformat(meta["pane"])
    size = timedelta(seconds=float(meta["size_seconds"]))
    if stem != str(int(pane.timestamp())) or size <= timedelta(0):
        raise ValueError("its place in the store is not its pane's start")
    rows = int(meta["rows"])
    if (int(frame[WEIGHT].sum()) if len(frame) else 0) != rows:
        raise ValueError("its counts do not add up to its row total")
    published_at = datetime.fromisoformat(meta["published_at"])
    return PublishedPane(
        str(meta["publisher"]), pane, size, frame, rows, frozenset(meta["flagged"]), published_at
    )
