"""Published panes in a directory or an object store, through ``pyarrow.fs``.

Layout: ``<store>/<model>/<fingerprint>/<publisher>/<pane start, Unix seconds>.arrow`` - one Arrow
IPC file per pane (:mod:`monitor.sources.count_files`; its facts in the schema metadata) - and in
each publisher's folder ``.published``, its heartbeat (JSON), rewritten at every publication so a
publisher whose panes did not change is still seen alive.

The store is a path or a ``file://`` URL (a volume every replica mounts), or a URL ``pyarrow.fs``
opens: ``s3://bucket/prefix`` (credentials as the AWS SDK finds them: the environment, the pod's
role; ``?endpoint_override=host:port&scheme=http`` for an S3-compatible server), ``gs://bucket/prefix``,
``hdfs://``. A pane is written atomically: on a file system to a temporary name in its folder
(``.<name>.<pid>-<token>.tmp``), then renamed over - a reader sees the old file or the new one,
never half of one, and a publisher killed mid-write leaves only a temporary file nobody reads; on an
object store (S3, GCS) an object appears whole when its upload completes, and nothing is renamed
(a rename there is a copy). A reader tells a pane published again by its file's modification time
and size, and on a local file system its inode; an object store's time is to the second, so an
object written in the last few seconds is read again at every listing until its time has passed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs

from monitor.core.errors import ConfigError, SourceError
from monitor.core.secrets import mask, mask_url, url_secrets
from monitor.sources.count_files import decode_frame, encode_frame, folder_name, is_partial, write_table
from monitor.sources.published.store import (
    META,
    Heartbeat,
    LastBeat,
    Listed,
    PublishedPane,
    pane_from,
    pane_meta,
)

__all__ = ["HEARTBEAT", "PaneDirectory"]

log = logging.getLogger(__name__)

#: A publisher's heartbeat file in its folder.
HEARTBEAT = ".published"
_SUFFIX = ".arrow"
_STEM = re.compile(r"-?[0-9]{1,12}", re.ASCII)
_FINGERPRINT = re.compile(r"[0-9a-f]{16}", re.ASCII)
_TOKEN = uuid.uuid4().hex[:8]  # this process's temporary files (two containers may share a pid)
_ATOMIC_UPLOADS = frozenset({"s3", "gcs"})  # an object appears whole; a rename would copy it
#: Seconds an object store's modification time (to the second, on the store's clock) must be in the
#: past before a pane read is kept: one published again within the same second has the same time
_SETTLE = 10.0


class PaneDirectory:
    """One model's published panes under a directory of a ``pyarrow.fs`` file system."""

    def __init__(self, fs: pafs.FileSystem, root: str, model: str, shown: str) -> None:
        self.fs = fs
        self.root = root.rstrip("/") or "/"
        self.model = model
        self.folder = _join(self.root, folder_name(model))
        self._shown = f"{shown.rstrip('/')}/{folder_name(model)}"
        self._local = fs.type_name == "local"
        self._renames = fs.type_name not in _ATOMIC_UPLOADS
        self._said: set[tuple[str, str]] = set()  # unreadable panes already logged

    @classmethod
    def open(cls, url: str, model: str, key: str) -> PaneDirectory:
        """The store ``url`` names: a path, ``file://`` or a ``pyarrow.fs`` URL (``key``: the setting)."""
        if "://" not in url or url.lower().startswith("file://"):
            path = os.path.abspath(url[len("file://") :] or "/") if "://" in url else os.path.abspath(url)
            return cls(pafs.LocalFileSystem(), path, model, path)
        try:
            fs, root = pafs.FileSystem.from_uri(url)
        except (pa.ArrowException, ValueError, OSError) as exc:
            reason = mask(
                str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__, url_secrets(url)
            )
            raise ConfigError(f"{key}: cannot open the store {mask_url(url)}: {reason}") from None
        return cls(fs, root, model, mask_url(url.split("?")[0]))

    def describe(self) -> str:
        return self._shown

    def close(self) -> None:
        pass  # nothing held between calls

    def check(self, *, publishing: bool = False) -> str | None:
        try:
            info = self.fs.get_file_info(self.root)
        except OSError as exc:
            return f"cannot be read: {_reason(exc)}"
        if info.type == pafs.FileType.NotFound and not publishing:  # a publisher makes it
            return f"no directory {self.root} (the store publishers write to)"
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
        table = encode_frame(frame, META, meta)  # Unwritable before anything is written
        path = _join(self._publisher_folder(fingerprint, publisher), f"{int(pane.timestamp())}{_SUFFIX}")
        with self._failing("a pane cannot be published"):
            self._put(path, lambda sink: write_table(sink, table))

    def beat(
        self, fingerprint: str, publisher: str, at: datetime, rejected: Mapping[str, int], instance: str
    ) -> None:
        beat = {
            "publisher": publisher,
            "published_at": at.astimezone(UTC).isoformat(),
            "instance": instance,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "rejected": {str(k): int(v) for k, v in rejected.items()},
        }
        data = json.dumps(beat).encode()
        path = _join(self._publisher_folder(fingerprint, publisher), HEARTBEAT)
        with self._failing("the publisher's heartbeat cannot be written"):
            self._put(path, lambda sink: sink.write(data))

    def last_beat(self, fingerprint: str, publisher: str) -> LastBeat | None:
        path = _join(self._publisher_folder(fingerprint, publisher), HEARTBEAT)
        data = self._bytes_if_there(path, "a heartbeat")
        if data is None:
            return None
        try:
            beat = json.loads(data)
            at = datetime.fromisoformat(beat["published_at"])
            return LastBeat(str(beat["instance"]), at, str(beat.get("host", "")), int(beat.get("pid", 0)))
        except (ValueError, KeyError, TypeError):
            return None

    def pane_starts(self, fingerprint: str, publisher: str) -> set[datetime]:
        names = [_name(info.path) for info in self._list(self._publisher_folder(fingerprint, publisher))]
        stems = [n[: -len(_SUFFIX)] for n in names if n.endswith(_SUFFIX)]
        return {datetime.fromtimestamp(int(s), UTC) for s in stems if _STEM.fullmatch(s)}

    def remove(self, fingerprint: str, publisher: str, panes: list[datetime]) -> None:
        folder = self._publisher_folder(fingerprint, publisher)
        with self._failing("a pane cannot be removed"):
            for pane in panes:
                with contextlib.suppress(FileNotFoundError):
                    self.fs.delete_file(_join(folder, f"{int(pane.timestamp())}{_SUFFIX}"))

    def own_panes(self, fingerprint: str, publisher: str) -> list[PublishedPane]:
        out: list[PublishedPane] = []
        for info in self._list(self._publisher_folder(fingerprint, publisher)):
            name = _name(info.path)
            if is_partial(name):
                with contextlib.suppress(OSError):
                    self.fs.delete_file(info.path)
            elif name.endswith(_SUFFIX) and _STEM.fullmatch(name[: -len(_SUFFIX)]):
                stored = self._read(info.path, fingerprint, publisher)
                if stored is not None:
                    out.append(stored)
        return out

    def expire(self, keep: str, before: datetime) -> list[str]:
        """Publishers whose heartbeat is older than ``before`` (or, without one, whose folder holds
        nothing newer) lose the files they wrote before it: each file by the time it says it was
        published, so a publisher back from its silence while this runs keeps what it writes."""
        removed = []
        for fingerprint in self.fingerprints():
            for name, (beat, folder) in sorted(self._beats(fingerprint).items()):
                if name == keep or (beat.published_at is not None and beat.published_at >= before):
                    continue
                gone = False
                for info in self._list(folder):
                    written = self._written(info.path)
                    if written is not None and written >= before:
                        continue  # new since the decision: a live publisher's
                    with contextlib.suppress(FileNotFoundError):
                        self.fs.delete_file(info.path)
                        gone = True
                if not self._list(folder):
                    with contextlib.suppress(OSError):
                        self.fs.delete_dir(folder)
                if gone:
                    removed.append(name)
            fingerprint_folder = _join(self.folder, fingerprint)
            if not self._list(fingerprint_folder):
                with contextlib.suppress(OSError):
                    self.fs.delete_dir(fingerprint_folder)
        return removed

    def _written(self, path: str) -> datetime | None:
        """When a publisher's file says it was published (``None``: a temporary or unreadable file)."""
        name = _name(path)
        try:
            data = self._bytes(path)
            if name == HEARTBEAT:
                return datetime.fromisoformat(json.loads(data)["published_at"])
            if name.endswith(_SUFFIX):
                schema = pa.ipc.open_file(pa.BufferReader(data)).schema
                return datetime.fromisoformat(json.loads((schema.metadata or {})[META])["published_at"])
        except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
            return None
        return None

    # -- reading ----------------------------------------------------------------------------------

    def fingerprints(self) -> list[str]:
        return sorted(
            _name(info.path)
            for info in self._list(self.folder)
            if info.type == pafs.FileType.Directory and _FINGERPRINT.fullmatch(_name(info.path))
        )

    def heartbeats(self, fingerprint: str) -> dict[str, Heartbeat]:
        return {name: beat for name, (beat, _) in self._beats(fingerprint).items()}

    def listing(self, fingerprint: str) -> list[Listed]:
        """Every pane file of ``fingerprint``, in one (recursive) listing of its folder."""
        folder = _join(self.folder, fingerprint)
        out = []
        for info in sorted(self._list(folder, recursive=True), key=lambda i: i.path):
            parts = info.path[len(folder) + 1 :].split("/")
            if len(parts) != 2 or not parts[1].endswith(_SUFFIX) or info.type != pafs.FileType.File:
                continue
            if not _STEM.fullmatch(parts[1][: -len(_SUFFIX)]):
                continue
            version: tuple[Any, ...] = (info.mtime_ns, info.size)
            if self._local:  # a file replaced by a rename is another inode, whatever its time
                try:
                    version += (os.stat(info.path).st_ino,)
                except FileNotFoundError:
                    continue
            elif info.mtime is None or time.time() - info.mtime.timestamp() < _SETTLE:
                version += (object(),)  # a time to the second: written again within it? read it again
            out.append(Listed(parts[0], info.path, version))
        return out

    def read(self, listed: Listed, fingerprint: str) -> PublishedPane | None:
        return self._read(listed.where, fingerprint, listed.publisher)

    # -- internals --------------------------------------------------------------------------------

    def _publisher_folder(self, fingerprint: str, publisher: str) -> str:
        return _join(self.folder, fingerprint, folder_name(publisher))

    def _put(self, path: str, write: Callable[[Any], None]) -> None:
        """Write ``path`` whole or not at all (see the module's docstring)."""
        folder, name = path.rsplit("/", 1)
        if not self._renames:  # an object store: no folders to make, an upload appears whole
            with self.fs.open_output_stream(path, compression=None) as sink:
                write(sink)
            return
        self.fs.create_dir(folder, recursive=True)
        temp = _join(folder, f".{name}.{os.getpid()}-{_TOKEN}.tmp")
        try:
            with self.fs.open_output_stream(temp, compression=None) as sink:
                write(sink)
            self.fs.move(temp, path)
        except OSError:
            with contextlib.suppress(OSError):
                self.fs.delete_file(temp)
            raise

    def _bytes_if_there(self, path: str, what: str) -> bytes | None:
        """``path``'s bytes; ``None`` when it is gone. A store that fails to give them (a network
        error, an NFS hiccup) fails the read: going on without the file would report part of the fleet."""
        try:
            return self._bytes(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SourceError(f"published:{self._shown}: {what} cannot be read: {_reason(exc)}") from None

    def _bytes(self, path: str) -> bytes:
        with self.fs.open_input_stream(path, compression=None) as source:
            data: bytes = source.read()
        return data

    def _list(self, folder: str, *, recursive: bool = False) -> list[pafs.FileInfo]:
        """The entries of ``folder`` (none when it does not exist); the store's errors as SourceError."""
        with self._failing("cannot be listed"):
            try:
                infos: list[pafs.FileInfo] = self.fs.get_file_info(
                    pafs.FileSelector(folder, allow_not_found=True, recursive=recursive)
                )
            except (FileNotFoundError, NotADirectoryError):
                return []
        return infos

    def _beats(self, fingerprint: str) -> dict[str, tuple[Heartbeat, str]]:
        """Each publisher folder of ``fingerprint``: its heartbeat (an unreadable one: ``None`` and
        nothing), by the publisher's name, with the folder."""
        out: dict[str, tuple[Heartbeat, str]] = {}
        for info in self._list(_join(self.folder, fingerprint)):
            if info.type != pafs.FileType.Directory:
                continue
            data = self._bytes_if_there(_join(info.path, HEARTBEAT), "a heartbeat") or b""
            try:
                beat = json.loads(data)
                rejected = Counter({str(k): int(v) for k, v in beat.get("rejected", {}).items()})
                at = datetime.fromisoformat(beat["published_at"])
                out[str(beat.get("publisher", _name(info.path)))] = (Heartbeat(at, rejected), info.path)
            except (ValueError, KeyError, TypeError, AttributeError):
                out[_name(info.path)] = (Heartbeat(None, Counter()), info.path)
        return out

    def _newest_write(self, folder: str) -> float:
        """The latest modification time of any file in ``folder`` (0: none, or the folder is gone)."""
        times = [info.mtime.timestamp() for info in self._list(folder) if info.mtime is not None]
        return max(times, default=0.0)

    def _read(self, path: str, fingerprint: str, publisher: str) -> PublishedPane | None:
        """One pane; ``None`` when it is gone (replaced or removed since it was listed) or damaged
        (logged once per file and reason). A store that fails to give its bytes (a network error, an
        NFS hiccup) fails the read: counting without the pane would report part of the fleet."""
        name = _name(path)
        data = self._bytes_if_there(path, f"pane {name} of {publisher}")
        if data is None:
            return None
        try:
            frame, meta = decode_frame(data, META)
            return pane_from(frame, meta, self.model, fingerprint, name[: -len(_SUFFIX)])
        except Exception as exc:  # whatever damaged bytes make the decoder raise: not used
            reason = _reason(exc)
            if (path, reason) not in self._said:  # once per file and reason: it is read again each tick
                self._said.add((path, reason))
                log.warning(
                    "model %s: published pane %s of %s cannot be read (%s); not counted",
                    self.model,
                    name,
                    publisher,
                    reason,
                )
            return None

    @contextlib.contextmanager
    def _failing(self, what: str) -> Iterator[None]:
        """The store's I/O errors as the source's failure (this tick fails; the next tries again)."""
        try:
            yield
        except OSError as exc:
            raise SourceError(f"published:{self._shown}: {what}: {_reason(exc)}") from None


def _join(*parts: str) -> str:
    return "/".join([parts[0].rstrip("/"), *parts[1:]]) if parts[0] != "/" else "/" + "/".join(parts[1:])


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _reason(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]
