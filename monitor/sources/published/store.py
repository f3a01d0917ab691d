"""The store replicas publish their counts to, and a central fairwatch reads: a shared directory.

Layout: ``<store>/<model>/<fingerprint>/<publisher>/<pane start, Unix seconds>.arrow`` - one Arrow
IPC file per pane (:mod:`monitor.sources.count_files`: written to a temporary name, then renamed
over, so a reader never sees half a file and a publisher killed mid-write leaves only a temporary
file nobody reads). Its metadata holds the pane's start and size, its row total, the indicator
attributes the publisher's source thresholded and when it was published. Each publisher's folder
also holds ``.published``: when it last published (written at every publication, so a publisher
whose panes did not change is still seen alive).

The *fingerprint* is a hash of what was counted - the count request without its time ranges (the
columns, indicator thresholds, score decimals; :func:`request_fingerprint`) - and not of where:
every replica reads its own log, and one central reads them all. A publisher whose config counts
something else (another group, other score decimals) publishes under another fingerprint, which
the central does not read and reports.

Publishing again replaces (the same file name), so a restarted pod or a retried write is never
counted twice; a pane a publisher no longer has (slid out of its windows) is removed by that
publisher. A publisher that stops (a pod deleted, scaled down) leaves its files: they keep counting
in the central's windows until the live publishers remove them (:meth:`PaneDirectory.expire`: once
nothing in its folder was written for longer than their horizon and two panes - keep the central's
windows no longer than the publishers').
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import socket
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from monitor.core.errors import ConfigError
from monitor.sources.contract import WEIGHT, CountRequest
from monitor.sources.count_files import folder_name, is_partial, read_frame, write_frame

__all__ = [
    "FORMAT",
    "HEARTBEAT",
    "Heartbeat",
    "LastBeat",
    "PaneDirectory",
    "PublishedPane",
    "request_fingerprint",
    "store_path",
]

log = logging.getLogger(__name__)

#: Written into every file; a file of another version is not read.
FORMAT = 1
#: A publisher's heartbeat file in its folder.
HEARTBEAT = ".published"
_META = b"fairwatch.published"
_SUFFIX = ".arrow"
_STEM = re.compile(r"-?[0-9]{1,12}", re.ASCII)
_FINGERPRINT = re.compile(r"[0-9a-f]{16}", re.ASCII)


@dataclass(frozen=True)
class Heartbeat:
    """A publisher's last word: when it last published, and the rows its newest read rejected."""

    published_at: datetime | None
    rejected: Counter[str]
    folder: Path  # the publisher's folder


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


def request_fingerprint(shape: CountRequest) -> str:
    """A stable hash of what a pane counts: the request without its time ranges (the score column
    counts only where it is rounded)."""
    score = shape.score if shape.score_decimals is not None else None
    plain = dataclasses.asdict(dataclasses.replace(shape, ranges=(), score=score))
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def store_path(url: str, key: str) -> Path:
    """The directory a store URL names: a path or a ``file://`` URL (``key`` names the setting in errors)."""
    if url.startswith("file://"):
        return Path(url.removeprefix("file://") or "/")
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", url):
        raise ConfigError(
            f"{key}: {url.split('://')[0]}:// stores are not supported; publish to a directory every "
            "replica mounts (a path or file:///path)"
        )
    return Path(url)


class PaneDirectory:
    """One model's published panes under a store directory."""

    def __init__(self, root: Path, model: str) -> None:
        self.root = root
        self.model = model
        self.folder = root / folder_name(model)
        self._said: set[tuple[Path, str]] = set()  # unreadable files already logged

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
        """Publish (or publish again: replace) one pane's counts."""
        folder = self._publisher_folder(fingerprint, publisher)
        folder.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": FORMAT,
            "model": self.model,
            "fingerprint": fingerprint,
            "publisher": publisher,
            "pane": pane.astimezone(UTC).isoformat(),
            "size_seconds": size.total_seconds(),
            "rows": int(frame[WEIGHT].sum()) if len(frame) else 0,
            "flagged": sorted(flagged),
            "published_at": published_at.astimezone(UTC).isoformat(),
        }
        write_frame(folder / f"{int(pane.timestamp())}{_SUFFIX}", frame, _META, meta)

    def beat(
        self, fingerprint: str, publisher: str, at: datetime, rejected: Mapping[str, int], instance: str
    ) -> None:
        """Say the publisher is alive, and how many rows its newest read rejected (rows without a
        readable time belong to no pane): ``.published`` rewritten atomically. ``instance`` tells
        two processes publishing under one name apart."""
        folder = self._publisher_folder(fingerprint, publisher)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / HEARTBEAT
        temp = path.with_name(f".{path.name}.{instance}.tmp")
        beat = {
            "publisher": publisher,
            "published_at": at.astimezone(UTC).isoformat(),
            "instance": instance,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "rejected": {str(k): int(v) for k, v in rejected.items()},
        }
        temp.write_text(json.dumps(beat))
        os.replace(temp, path)

    def last_beat(self, fingerprint: str, publisher: str) -> LastBeat | None:
        """The process that wrote the publisher's heartbeat last, and when (``None``: none, unreadable)."""
        try:
            beat = json.loads((self._publisher_folder(fingerprint, publisher) / HEARTBEAT).read_text())
            at = datetime.fromisoformat(beat["published_at"])
            return LastBeat(str(beat["instance"]), at, str(beat.get("host", "")), int(beat.get("pid", 0)))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def pane_starts(self, fingerprint: str, publisher: str) -> set[datetime]:
        """The panes whose files this publisher's folder holds (by their names)."""
        folder = self._publisher_folder(fingerprint, publisher)
        try:
            names = [p.stem for p in folder.iterdir() if p.suffix == _SUFFIX]
        except FileNotFoundError:
            return set()
        return {datetime.fromtimestamp(int(n), UTC) for n in names if _STEM.fullmatch(n)}

    def remove(self, fingerprint: str, publisher: str, panes: list[datetime]) -> None:
        folder = self._publisher_folder(fingerprint, publisher)
        for pane in panes:
            (folder / f"{int(pane.timestamp())}{_SUFFIX}").unlink(missing_ok=True)

    def own_panes(self, fingerprint: str, publisher: str) -> list[PublishedPane]:
        """The panes this publisher has published; its own cut-short writes removed."""
        folder = self._publisher_folder(fingerprint, publisher)
        out: list[PublishedPane] = []
        if not folder.is_dir():
            return out
        for path in folder.iterdir():
            if is_partial(path):
                path.unlink(missing_ok=True)
            elif path.suffix == _SUFFIX and _STEM.fullmatch(path.stem):
                stored = self._read(path, fingerprint, publisher)
                if stored is not None:
                    out.append(stored)
        return out

    def expire(self, keep: str, before: datetime) -> list[str]:
        """Remove the folders of publishers (under any fingerprint) whose heartbeat is older than
        ``before`` - a pod long gone: its panes have left every window - but never ``keep``'s. The
        publishers removed."""
        removed = []
        for fingerprint in self.fingerprints():
            for name, beat in self.heartbeats(fingerprint).items():
                if name == keep or (beat.published_at is not None and beat.published_at >= before):
                    continue
                folder = beat.folder
                if beat.published_at is None and _newest_write(folder) >= before.timestamp():
                    continue  # no readable heartbeat, but files written recently
                again = self.heartbeats(fingerprint).get(name)  # back from a long silence just now?
                if again is not None and again.published_at is not None and again.published_at >= before:
                    continue
                with contextlib.suppress(FileNotFoundError):  # another publisher removing it too
                    for path in folder.iterdir():
                        path.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    folder.rmdir()
                removed.append(name)
            with contextlib.suppress(OSError):
                (self.folder / fingerprint).rmdir()  # only when empty
        return removed

    # -- reading ----------------------------------------------------------------------------------

    def fingerprints(self) -> list[str]:
        """The fingerprints anything was published under for this model."""
        if not self.folder.is_dir():
            return []
        return sorted(p.name for p in self.folder.iterdir() if p.is_dir() and _FINGERPRINT.fullmatch(p.name))

    def heartbeats(self, fingerprint: str) -> dict[str, Heartbeat]:
        """Each publisher of ``fingerprint``: when it last published and what its newest read rejected
        (an unreadable heartbeat: ``None`` and nothing)."""
        folder = self.folder / fingerprint
        out: dict[str, Heartbeat] = {}
        if not folder.is_dir():
            return out
        for sub in folder.iterdir():
            if not sub.is_dir():
                continue
            try:
                beat = json.loads((sub / HEARTBEAT).read_text())
                rejected = Counter({str(k): int(v) for k, v in beat.get("rejected", {}).items()})
                at = datetime.fromisoformat(beat["published_at"])
                out[str(beat.get("publisher", sub.name))] = Heartbeat(at, rejected, sub)
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                out[sub.name] = Heartbeat(None, Counter(), sub)
        return out

    def pane_files(self, fingerprint: str) -> Iterator[tuple[str, Path]]:
        """``(publisher, file)`` of every published pane of ``fingerprint``."""
        folder = self.folder / fingerprint
        if not folder.is_dir():
            return
        for sub in sorted(folder.iterdir()):
            if not sub.is_dir():
                continue
            for path in sorted(sub.iterdir()):
                if path.suffix == _SUFFIX and _STEM.fullmatch(path.stem):
                    yield sub.name, path

    def read(self, path: Path, fingerprint: str, publisher: str) -> PublishedPane | None:
        """One published pane; ``None`` (logged) when its file cannot be read or is not what its
        place in the store says."""
        return self._read(path, fingerprint, publisher)

    # -- internals --------------------------------------------------------------------------------

    def _publisher_folder(self, fingerprint: str, publisher: str) -> Path:
        return self.folder / fingerprint / folder_name(publisher)

    def _read(self, path: Path, fingerprint: str, publisher: str) -> PublishedPane | None:
        try:
            frame, meta = read_frame(path, _META)
            return _pane(path, frame, meta, self.model, fingerprint)
        except FileNotFoundError:  # replaced or removed between listing and reading
            return None
        except Exception as exc:  # whatever a damaged file makes the decoder raise: not used
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            if (path, reason) not in self._said:  # once per file and reason: it is read again each tick
                self._said.add((path, reason))
                log.warning(
                    "model %s: published pane %s of %s cannot be read (%s); not counted",
                    self.model,
                    path.name,
                    publisher,
                    reason,
                )
            return None


def _newest_write(folder: Path) -> float:
    """The latest modification time of any file in ``folder`` (0: none, or the folder is gone)."""
    newest = 0.0
    with contextlib.suppress(FileNotFoundError):
        for path in folder.iterdir():
            with contextlib.suppress(FileNotFoundError):
                newest = max(newest, path.stat().st_mtime)
    return newest


def _pane(
    path: Path, frame: pd.DataFrame, meta: dict[str, Any], model: str, fingerprint: str
) -> PublishedPane:
    if meta.get("format") != FORMAT:
        raise ValueError(f"format {meta.get('format')}, not {FORMAT}")
    if meta.get("model") != model or meta.get("fingerprint") != fingerprint:
        raise ValueError(f"published for model {str(meta.get('model'))[:100]!r}, another place in the store")
    pane = datetime.fromisoformat(meta["pane"])
    size = timedelta(seconds=float(meta["size_seconds"]))
    if path.stem != str(int(pane.timestamp())) or size <= timedelta(0):
        raise ValueError("the file's name is not its pane's start")
    rows = int(meta["rows"])
    if (int(frame[WEIGHT].sum()) if len(frame) else 0) != rows:
        raise ValueError("its counts do not add up to its row total")
    published_at = datetime.fromisoformat(meta["published_at"])
    return PublishedPane(
        str(meta["publisher"]), pane, size, frame, rows, frozenset(meta["flagged"]), published_at
    )
