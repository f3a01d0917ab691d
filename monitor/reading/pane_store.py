"""Sealed panes on disk: what :mod:`monitor.reading.panes` keeps in memory, also kept in a folder, so that a
restarted service does not read the whole history again.

Layout: ``<panes.directory>/<model>/<fingerprint>/<pane start, Unix seconds>.arrow`` (a model
name of capitals, or a long one, as a hashed folder name: :func:`folder_name`). The
fingerprint is a hash of what was counted and where - the count request without its time
ranges, the pane size and the source (kind, URL without its password, table or query, path,
formats), as JSON with sorted keys - so a changed config (other groups, columns, thresholds,
score decimals, pane size, another table) opens another folder and never reads the old counts;
the model's folders of earlier configs are removed when a new one is opened. The indicator attributes the
source thresholded (known only once it answers) are in each file and checked by the panes as if
they had just been read.

Each file is one Arrow IPC file holding one pane's counted combinations
(:mod:`monitor.sources.count_files`: object columns as unions, written atomically); its schema
metadata holds the format version, the pane's start and size, its row total and the thresholded
attributes.

The folder mirrors memory: :meth:`PaneStore.sync` writes the panes kept since the last call and
removes the files of panes no longer kept (slid out of every window, dropped by a recheck or by
the memory budget). A file that cannot be read is logged, removed, and its pane read from the
source; so is a file written for another model or another fingerprint (copied between folders:
the model and fingerprint are in its metadata). A folder that becomes unwritable while running (a
full disk) is logged once, the panes stay in memory, each sync tries again and writing resumes
when it can (logged too); :attr:`PaneStore.up` says which (``fairwatch_pane_store_up``).

One service at a time: :meth:`PaneStore.open` takes an exclusive lock (``flock``) on the model's
folder's ``.lock`` file, naming the holder in it; a second service configured with the same
directory and model is refused at start-up (a config error naming the holder) instead of
deleting the first one's folder. Within one process the lock is shared (a config reload builds
the new stores before the old ones close).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import logging
import os
import re
import socket
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from monitor.config import SourceConfig
from monitor.core.errors import ConfigError
from monitor.core.secrets import mask_url
from monitor.sources.contract import WEIGHT, CountRequest
from monitor.sources.count_files import (
    Unwritable,
    folder_name,
    is_partial,
    read_frame,
    writable_folder,
    write_frame,
)

__all__ = ["FORMAT", "PaneStore", "StoredPane", "fingerprint", "folder_name"]

log = logging.getLogger(__name__)

#: Written into every file; a file of another version is not read (and is replaced).
FORMAT = 2  # 2: the model and fingerprint in each file's metadata
_META = b"fairwatch.pane"
_SUFFIX = ".arrow"
_FINGERPRINT = re.compile(r"^[0-9a-f]{16}$")
_PANE_STEM = re.compile(r"-?[0-9]{1,12}", re.ASCII)  # a pane file's name: its start, Unix seconds
# what names the rows a source reads (not how: timeouts, Arrow or not, Spark session settings)
_SOURCE_IDENTITY = {
    "kind",
    "url",
    "table",
    "schema_",
    "query",
    "path",
    "format",
    "timestamp_format",
    "name",
    "master",
    "remote",
}


@dataclass(frozen=True)
class StoredPane:
    """One pane read back from its file."""

    pane: datetime
    frame: pd.DataFrame
    rows: int
    flagged: frozenset[str]
    written: datetime | None = None  # when its file was last written (its counts read then, or later)


class PaneStore:
    """One model's folder of sealed panes.

    Built at start-up by :meth:`open`, which refuses a folder it cannot write (a
    :class:`~monitor.core.errors.ConfigError` naming the config key).
    """

    def __init__(self, root: Path, model: str, source: SourceConfig, lock: _FolderLock | None = None) -> None:
        self.root = root  # this model's folder
        self.model = model
        self.source = source
        self._lock = lock
        self._folder: Path | None = None  # the fingerprint folder in use
        self._written: dict[datetime, pd.DataFrame] = {}  # pane -> the frame its file holds
        self.up = True  # the last sync wrote what it had to (False: a full disk, a read-only volume)
        self._unwritable = False  # a pane's values could not be written (logged once)

    @classmethod
    def open(cls, directory: str, model: str, source: SourceConfig, key: str) -> PaneStore:
        """The store of ``model`` (reading ``source``) under ``directory``; ``key`` names the
        setting in errors."""
        root = writable_folder(Path(directory) / folder_name(model), key, "sealed panes")
        return cls(root, model, source, _FolderLock.take(root / ".lock", key, model))

    def close(self) -> None:
        """Let the folder go (its lock: another service may use it now)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def load(self, shape: CountRequest, size: timedelta) -> list[StoredPane]:
        """Use the folder of ``shape`` counted in panes of ``size``, and read its panes (sorted by
        start). Other configs' folders of the model are removed; unreadable files too (logged)."""
        self._written.clear()
        folder = self.root / fingerprint(shape, size, self.source)
        self._folder = folder
        out = []
        try:  # (a file it cannot remove - a read-only volume - leaves the panes in memory only too)
            for other in self.root.iterdir():
                if other != folder and other.is_dir() and _FINGERPRINT.match(other.name):
                    _remove_folder(other)
            folder.mkdir(exist_ok=True)
            for path in sorted(folder.iterdir()):
                if is_partial(path.name):  # a write cut short
                    path.unlink(missing_ok=True)
                    continue
                if path.suffix != _SUFFIX:
                    continue
                try:
                    stored = _read(path, size, self.model, folder.name)
                except Exception as exc:  # whatever a damaged file makes the decoder raise: not used
                    reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
                    log.warning(
                        "model %s: sealed pane file %s cannot be read (%s); removed, its pane is read "
                        "from the source",
                        self.model,
                        path,
                        reason,
                    )
                    path.unlink(missing_ok=True)
                    continue
                self._written[stored.pane] = stored.frame
                out.append(stored)
        except OSError as exc:
            self._fail(exc)
            return []
        return sorted(out, key=lambda stored: stored.pane)

    def holds(self, shape: CountRequest, size: timedelta) -> bool:
        """Whether panes of ``shape`` are on disk (what :meth:`load` would read)."""
        folder = self.root / fingerprint(shape, size, self.source)
        try:
            return any(path.suffix == _SUFFIX for path in folder.iterdir())
        except OSError:
            return False

    def sync(self, panes: Mapping[datetime, tuple[pd.DataFrame, int]], flagged: frozenset[str]) -> None:
        """Make the folder hold exactly ``panes`` (pane -> frame, row total): write the new and
        changed ones, remove the others."""
        if self._folder is None:
            return
        try:
            if not self.up:  # failed before: what is on disk is unknown, look again
                self._folder.mkdir(exist_ok=True)
                self._written = {p: pd.DataFrame() for p in self._on_disk()}
            for pane in [p for p in self._written if p not in panes]:
                del self._written[pane]
                self._path(pane).unlink(missing_ok=True)
            for pane, (frame, rows) in panes.items():
                if self._written.get(pane) is not frame:
                    self._write(pane, frame, rows, flagged)
                    self._written[pane] = frame
        except OSError as exc:
            self._fail(exc)
            return
        if not self.up:
            self.up = True
            log.warning("model %s: writing sealed panes into %s again", self.model, self._folder)

    def clear(self) -> None:
        """Remove every pane file of the folder in use."""
        if self._folder is None:
            return
        self._written.clear()
        try:
            for path in self._folder.glob(f"*{_SUFFIX}"):
                path.unlink(missing_ok=True)
        except OSError as exc:
            self._fail(exc)

    # -- internals --------------------------------------------------------------------------------

    def _on_disk(self) -> list[datetime]:
        assert self._folder is not None
        return [
            datetime.fromtimestamp(int(path.stem), UTC)
            for path in self._folder.glob(f"*{_SUFFIX}")
            if _PANE_STEM.fullmatch(path.stem)
        ]

    def _path(self, pane: datetime) -> Path:
        assert self._folder is not None
        return self._folder / f"{int(pane.timestamp())}{_SUFFIX}"

    def _write(self, pane: datetime, frame: pd.DataFrame, rows: int, flagged: frozenset[str]) -> None:
        assert self._folder is not None
        meta = {
            "format": FORMAT,
            "model": self.model,
            "fingerprint": self._folder.name,
            "pane": pane.astimezone(UTC).isoformat(),
            "rows": rows,
            "flagged": sorted(flagged),
        }
        try:
            write_frame(self._path(pane), frame, _META, meta)
        except Unwritable as exc:
            if not self._unwritable:
                log.warning("model %s: a sealed pane is kept in memory only: %s", self.model, exc)
                self._unwritable = True
            self._path(pane).unlink(missing_ok=True)

    def _fail(self, exc: OSError) -> None:
        if self.up:  # once per episode: each sync tries again, quietly
            log.warning(
                "model %s: cannot write sealed panes into %s (%s); keeping them in memory, trying "
                "again at each evaluation",
                self.model,
                self.root,
                exc.strerror or exc,
            )
        self.up = False
        self._written.clear()


class _FolderLock:
    """An exclusive ``flock`` on a model folder's lock file, shared within the process."""

    _held: ClassVar[dict[str, _FolderLock]] = {}
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self.fd = fd
        self.users = 0

    @classmethod
    def take(cls, path: Path, key: str, model: str) -> _FolderLock:
        real = os.path.realpath(path)
        with cls._guard:
            held = cls._held.get(real)
            if held is None:
                fd = os.open(real, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    holder = os.read(fd, 200).decode(errors="replace").strip() or "another process"
                    os.close(fd)
                    raise ConfigError(
                        f"{key}: the sealed panes of model {model} in {path.parent} are in use by "
                        f"{holder}: give each service its own panes.directory"
                    ) from None
                os.ftruncate(fd, 0)
                os.write(fd, f"fairwatch pid {os.getpid()} on {socket.gethostname()}\n".encode())
                held = cls._held[real] = cls(real, fd)
            held.users += 1
            return held

    def release(self) -> None:
        with self._guard:
            self.users -= 1
            if self.users == 0:
                del self._held[self.path]
                os.close(self.fd)  # the lock goes with the descriptor


def fingerprint(shape: CountRequest, size: timedelta, source: SourceConfig) -> str:
    """A stable hash of what a pane counts: the request without ranges, the pane size and the
    source's identity (its URL's password masked: rotating it keeps the panes)."""
    where = source.model_dump(include=_SOURCE_IDENTITY)
    where["url"] = mask_url(source.url) if source.url else None
    # the score column changes what is counted only where it is rounded (panes kept before the
    # request named it always keep their fingerprint)
    score = shape.score if shape.score_decimals is not None else None
    described = {
        "format": FORMAT,
        "request": _plain(dataclasses.replace(shape, ranges=(), score=score)),
        "size": size.total_seconds(),
        "source": where,
    }
    text = json.dumps(described, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _plain(value: Any) -> Any:
    """``value`` as JSON: dataclasses as their fields (a joined label source by its type only)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: type(getattr(value, f.name)).__name__
            if f.name == "source"
            else _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
        }
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot describe {type(value).__name__} in a pane fingerprint")


def _read(path: Path, size: timedelta, model: str, fingerprint: str) -> StoredPane:
    frame, meta = read_frame(path, _META)
    if meta.get("format") != FORMAT:
        raise ValueError(f"format {meta.get('format')}, not {FORMAT}")
    if meta.get("model") != model or meta.get("fingerprint") != fingerprint:
        raise ValueError(
            f"written for model {str(meta.get('model'))[:100]!r}, fingerprint {str(meta.get('fingerprint'))[:16]}"
        )
    pane = datetime.fromisoformat(meta["pane"])
    if path.stem != str(int(pane.timestamp())) or pane.timestamp() % size.total_seconds():
        raise ValueError("the file's name is not its pane's start")
    rows = int(meta["rows"])
    if int(frame[WEIGHT].sum()) != rows:
        raise ValueError("its counts do not add up to its row total")
    written = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return StoredPane(pane, frame, rows, frozenset(meta["flagged"]), written)


def _remove_folder(folder: Path) -> None:
    """Remove a fingerprint folder this store wrote (only its pane files: nothing else is touched)."""
    for path in _pane_files(folder):
        path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # it holds something else: leave it
        folder.rmdir()


def _pane_files(folder: Path) -> Iterator[Path]:
    for path in folder.iterdir():
        if path.suffix == _SUFFIX or is_partial(path.name):
            yield path
