"""Tailing CSV and JSON Lines logs: each tick counts only the lines written since the last one.

A sidecar publishes its pod's counts every tick (:mod:`monitor.reading.publish`), and a text log
has no index: counting its open panes meant scanning every file of the horizon again, ~2.8 s of CPU
a minute inside the model's pod at 1 M rows a day. :class:`TextTail` keeps, for each file of the
log, the byte offset up to which it has counted (the end of the last complete line) and that
file's counted combinations per epoch-aligned pane. A tick counts the new complete lines of each
file (with the same DuckDB statement as a whole read, :func:`~.text_counts.count_text`, over a
temporary file holding them - and the CSV header) into their panes, and answers a pane as the sum
of every file's counts for it: the counts of reading the files whole.

What it watches for, per file (known by device and inode, so a renamed file is the same file):

- a partial last line: not counted until its newline arrives;
- rotation: a renamed file keeps its state; a new file is counted from its start; a file gone
  from the glob (deleted, or renamed out of it) takes its counts with it, as a whole read would;
- truncation or replacement (``copytruncate``; a new file that got a freed inode; a file rewritten
  in place): the file is shorter than its offset, or its first bytes or the last bytes counted
  changed: it is counted again from its start;
- gzip'd files (rotated, not appended to): counted whole once, again if their size or mtime
  changes; one still being written (a truncated member) sends the window to a whole read;
- a restart: with a directory to keep them in (``panes.directory``), the offsets and counts are
  written there at most every :data:`SAVE_EVERY` and when the source closes, and a restarted
  sidecar goes on from them (lines written meanwhile are new lines); without one, or when what is
  kept does not match the files any more, the first tick counts the files whole.

It gives up (returns ``None``: the caller counts the panes whole, and the reason is logged once)
wherever a part cannot be counted as the whole would be: CSV texts whose value depends on how
pandas types the whole file's column, a JSON key absent from every counted line, a row dated more
than :data:`AHEAD` after the newest pane asked for (clock skew), a pane before ``since``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import secrets
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import pandas as pd

from monitor.sources.contract import CountedPanes, CountRequest, range_column
from monitor.sources.count_files import Unwritable, is_partial, read_frame, write_frame
from monitor.sources.files.parquet_counts import Uncountable
from monitor.sources.files.text_counts import count_text
from monitor.sources.files.text_files import Unfinished, json_records
from monitor.sources.frames import counted_batch, merge_counts

__all__ = ["AHEAD", "SAVE_EVERY", "TextTail", "TryAgain"]

log = logging.getLogger(__name__)

#: Rows may be dated up to this far after the newest pane asked for (writers whose clocks run ahead).
AHEAD = timedelta(days=1)
_HEAD = 4096  # first bytes of a file that identify it (a replaced file differs in them)
_BLOCK = 1 << 16
_PARTS = 32  # counted parts of one pane kept apart before they are regrouped
#: The running counts are written to their directory at most this often (and when the source closes):
#: a crashed sidecar counts again at most this long of lines.
SAVE_EVERY = timedelta(minutes=5)
_MANIFEST = "tail.json"
_KEY = b"fairwatch.tail"


@dataclass
class _File:
    """What has been counted of one file."""

    offset: int = 0  # bytes counted: up to the end of the last complete line
    head: bytes = b""  # a digest of its first bytes (up to _HEAD) when last counted
    last: bytes = b""  # a digest of the bytes before the offset (up to _HEAD): the last lines counted
    header: bytes = b""  # CSV: the header line, put in front of each part
    stamp: tuple[int, int] = (0, 0)  # gzip: the (size, mtime) counted whole
    panes: dict[datetime, list[pd.DataFrame]] = field(default_factory=dict)  # counts per pane
    invalid: int = 0  # rows whose timestamp cannot be read (in no pane)
    torn: int = 0  # the unterminated last line, when the row path drops it (line_invalid)
    key: tuple[int, int] = (0, 0)  # (device, inode)
    changed: set[datetime] = field(default_factory=set)  # panes whose counts were not written yet
    saved: dict[datetime, str] = field(default_factory=dict)  # pane -> the file its counts were written to
    present: set[str] = field(default_factory=set)  # JSON: the request's keys some counted line has


class TextTail:
    """Running per-pane counts of one text log (``fmt``: ``csv`` or ``jsonl``) for one request shape."""

    def __init__(self, fmt: str, *, timeout: float, directory: Path | None = None) -> None:
        self.fmt = fmt
        self.timeout = timeout
        self.directory = directory  # where the offsets and counts survive a restart
        self._loaded = directory is None  # what the directory holds was read (or there is none)
        self._saved_at: float | None = None  # time.monotonic() of the last save
        self._shape: CountRequest | None = None
        self._size: timedelta | None = None
        self._since: datetime | None = None
        self._files: dict[tuple[int, int], _File] = {}
        self._flagged: frozenset[str] = frozenset()
        self.parts_counted = 0  # statements run (for tests and benchmarks)
        self._conn: Any = None  # one DuckDB connection for every part (connecting takes ~15 ms)

    def close(self) -> None:
        """Write what is counted (with a directory), and let the DuckDB connection go."""
        try:
            if self._shape is not None and self._files:
                self.save()
        finally:
            self.discard()

    def discard(self) -> None:
        """Let the DuckDB connection go without writing anything: after a failed :meth:`count`, the
        counts in memory may be half updated (what the directory holds is of an earlier moment,
        whole, and a later tail goes on from it)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def count(
        self,
        paths: list[str],
        shape: CountRequest,
        panes: list[datetime],
        size: timedelta,
        since: datetime,
        until: datetime,
    ) -> CountedPanes:
        """``panes`` counted whole over ``paths`` (the glob's files now, plain or gzip'd), after
        counting what changed since the last call; rows from ``since`` to :data:`AHEAD` after
        ``until`` (the horizon's end: now) are kept. Raises :class:`Uncountable` where it cannot,
        :class:`TryAgain` when this tick cannot (no complete row yet, a file changing while read)."""
        shape = replace(shape, ranges=())
        if not self._loaded:
            self._loaded = True
            self._load(shape, size)
        if shape != self._shape or size != self._size or self._since is None or since < self._since:
            self._reset(shape, size, since)
        assert self._since is not None
        if panes[0] < self._since:
            raise Uncountable("a pane before those kept was asked for")
        self._since = since
        hi = max(until, panes[-1] + size) + AHEAD
        seen: dict[tuple[int, int], _File] = {}
        for path in paths:
            try:
                info = os.stat(path)
            except FileNotFoundError:
                continue  # rotated away between listing and now: as gone
            key = (info.st_dev, info.st_ino)
            if key in seen:  # a whole read counts a file under each of its names
                raise Uncountable(f"{path!r} is a file matched under another name too (a link)")
            state = self._files.get(key, _File())
            state.key = key
            try:
                self._refresh(path, info, state, hi, self._near(panes[-1]))
            except FileNotFoundError:
                raise TryAgain(f"{path!r} vanished while it was read (rotation under way)") from None
            seen[key] = state
        self._files = seen  # files gone from the glob take their counts with them
        for state in self._files.values():  # panes before `since` are never asked for again
            for pane in [p for p in state.panes if p < since]:
                del state.panes[pane]
        if not any(state.panes for state in self._files.values()):
            raise TryAgain("no complete rows in the files")
        self._require_present()
        frames = {}
        for pane in panes:
            parts = [f for state in self._files.values() for f in state.panes.get(pane, ())]
            frames[pane] = self._merged(parts)
        rejected = Counter(
            {
                "timestamp_invalid": sum(state.invalid for state in self._files.values()),
                "line_invalid": sum(state.torn for state in self._files.values()),
            }
        )
        rejected = +rejected  # no zero counts
        if self.directory is not None and (
            self._saved_at is None or time.monotonic() - self._saved_at >= SAVE_EVERY.total_seconds()
        ):
            self.save()
        return CountedPanes(frames, self._flagged, rejected)

    # -- kept across restarts -----------------------------------------------------------------------

    def save(self) -> None:
        """Write the offsets and the counts changed since the last save into the directory: the
        panes' files first, then the manifest that names them (atomically), then the files no
        manifest names any more are removed. A failure is logged, not raised: the counts stay in memory."""
        if self.directory is None or self._shape is None or self._size is None or self._since is None:
            return
        self._saved_at = time.monotonic()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            files: list[dict[str, Any]] = []
            named: set[str] = set()
            for state in self._files.values():
                names: dict[str, str] = {}
                for pane, frames in state.panes.items():
                    name = state.saved.get(pane)
                    if pane in state.changed or name is None:
                        # a new name each time: the manifest on disk names the files of its own moment
                        # until the new manifest replaces it (a crash in between leaves them whole)
                        name = f"{state.key[0]}-{state.key[1]}-{int(pane.timestamp())}-{secrets.token_hex(4)}.arrow"
                        if len(frames) > 1:
                            state.panes[pane] = frames = [_combined(frames)]
                        write_frame(self.directory / name, frames[0], _KEY, {})
                    names[str(int(pane.timestamp()))] = name
                state.saved = {pane: names[str(int(pane.timestamp()))] for pane in state.panes}
                state.changed.clear()
                named.update(names.values())
                files.append(
                    {
                        "key": list(state.key),
                        "offset": state.offset,
                        "head": state.head.hex(),
                        "last": state.last.hex(),
                        "header": state.header.hex(),
                        "stamp": list(state.stamp),
                        "invalid": state.invalid,
                        "torn": state.torn,
                        "present": sorted(state.present),
                        "panes": names,
                    }
                )
            manifest = {
                "shape": _fingerprint(self._shape, self._size, self.fmt),
                "since": self._since.isoformat(),
                "flagged": sorted(self._flagged),
                "files": files,
            }
            temp = self.directory / f".{_MANIFEST}.tmp"
            temp.write_text(json.dumps(manifest))
            os.replace(temp, self.directory / _MANIFEST)
            for path in self.directory.iterdir():  # earlier saves' files, and writes a crash cut short
                if (path.suffix == ".arrow" and path.name not in named) or is_partial(path.name):
                    path.unlink(missing_ok=True)
        except (OSError, Unwritable) as exc:
            log.warning(
                "cannot keep a log's running counts in %s (%s): they stay in memory", self.directory, exc
            )

    def _load(self, shape: CountRequest, size: timedelta) -> None:
        """The offsets and counts a previous process kept, if they were counted for this shape."""
        assert self.directory is not None
        try:
            manifest = json.loads((self.directory / _MANIFEST).read_text())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.warning(
                "the running counts kept in %s cannot be read (%s): counting the log again",
                self.directory,
                exc,
            )
            return
        if manifest.get("shape") != _fingerprint(shape, size, self.fmt):
            return  # another config: counted again
        try:
            files = {}
            for kept in manifest["files"]:
                state = _File(
                    offset=kept["offset"],
                    head=bytes.fromhex(kept["head"]),
                    last=bytes.fromhex(kept["last"]),
                    header=bytes.fromhex(kept["header"]),
                    stamp=(kept["stamp"][0], kept["stamp"][1]),
                    invalid=kept["invalid"],
                    torn=kept["torn"],
                    key=(kept["key"][0], kept["key"][1]),
                    present=set(kept["present"]),
                )
                for epoch, name in kept["panes"].items():
                    pane = datetime.fromtimestamp(int(epoch), UTC)
                    state.panes[pane] = [read_frame(self.directory / name, _KEY)[0]]
                    state.saved[pane] = name
                files[state.key] = state
        except Exception as exc:  # a damaged or missing file: whatever the decoder raises
            log.warning(
                "the running counts kept in %s cannot be read (%s): counting the log again",
                self.directory,
                exc,
            )
            return
        self._shape, self._size = shape, size
        self._since = datetime.fromisoformat(manifest["since"])
        self._flagged = frozenset(manifest["flagged"])
        self._files = files
        self._saved_at = time.monotonic()

    def _require_present(self) -> None:
        """JSON: a key no counted line of any file has (or only as null) is a missing column to the
        row path, as in a whole read (:func:`~.text_counts.count_text`): refused, so that the whole
        read says so."""
        if self.fmt != "jsonl" or self._shape is None:
            return
        present = set().union(*(state.present for state in self._files.values()))
        needed = {self._shape.timestamp, *self._shape.columns}
        needed |= {c for flags in self._shape.indicators for c in flags.columns}
        if absent := sorted(needed - present):
            raise Uncountable(f"column(s) {absent} have no value in the files")

    def _near(self, asked: datetime) -> list[datetime]:
        """The panes new lines are expected in: the newest pane holding rows and the next, and the
        newest pane asked for (an append-only log's new rows are its newest)."""
        assert self._size is not None
        newest = max((p for state in self._files.values() for p in state.panes), default=asked)
        return sorted({newest, newest + self._size, asked})

    def _reset(self, shape: CountRequest, size: timedelta, since: datetime) -> None:
        self._shape, self._size, self._since = shape, size, since
        self._files = {}

    def _merged(self, parts: list[pd.DataFrame]) -> pd.DataFrame:
        if not parts:  # a pane without rows: the columns of any other
            some = next(f for state in self._files.values() for fs in state.panes.values() for f in fs)
            return some.iloc[:0].reset_index(drop=True)
        # stacked, not regrouped: a combination in several parts is counted in each, and the
        # counts of a pane's combinations add up wherever they are read
        return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)

    def _refresh(
        self, path: str, info: os.stat_result, state: _File, hi: datetime, near: list[datetime]
    ) -> None:
        """Count what is new in ``path`` into ``state`` (left as it was if this raises)."""
        if path.lower().endswith(".gz"):
            stamp = (info.st_size, info.st_mtime_ns)
            if state.stamp != stamp:
                fresh = _File(key=state.key, stamp=stamp)
                try:
                    self._count_into(fresh, [path], hi)
                except Unfinished as exc:  # logrotate still compressing it: next tick
                    raise TryAgain(str(exc)) from None
                state.panes, state.invalid, state.present, state.stamp = (
                    fresh.panes,
                    fresh.invalid,
                    fresh.present,
                    stamp,
                )
                state.changed |= set(fresh.panes)
            return
        with open(path, "rb") as fh:
            opened = os.fstat(fh.fileno())
            if (opened.st_dev, opened.st_ino) != state.key:
                raise TryAgain(f"{path!r} was replaced while it was looked at (rotation under way)")
            size = opened.st_size
            offset = state.offset
            if offset and (size < offset or _marks(fh, offset) != (state.head, state.last)):
                log.info("%s: truncated or replaced since it was last counted: counted again", path)
                offset = 0
            end = _last_line_end(fh, offset, size)
            end, torn = self._unterminated(fh, end, size, offset)
            if end <= offset:
                if offset != state.offset:  # truncated to no complete line
                    state.offset, state.panes, state.invalid, state.header = 0, {}, 0, b""
                    state.present = set()
                state.torn = torn
                return
            marks = _marks(fh, end)  # of the bytes counted now, read before they are copied
            header = state.header if offset else b""
            if self.fmt == "csv" and not offset:
                fh.seek(0)
                header = fh.readline()
            fresh = _File(key=state.key) if not offset else state
            with tempfile.NamedTemporaryFile(prefix="fairwatch-tail-", suffix=f".{self.fmt}") as part:
                if offset:
                    part.write(header)  # CSV: the header in front of the new rows
                _copy(fh, part, offset, end)
                part.flush()
                if _marks(fh, end) != marks or (offset and _marks(fh, offset) != (state.head, state.last)):
                    # rewritten (truncated, regrown) while it was copied: counted next time
                    raise TryAgain(f"{path!r} changed while its new lines were read")
                if not offset:  # from the start: into a fresh state, swapped in once counted
                    self._count_into(fresh, [part.name], hi)
                    state.panes, state.invalid, state.present = fresh.panes, fresh.invalid, fresh.present
                    state.changed |= set(fresh.panes)
                else:
                    self._count_into(state, [part.name], hi, near=near)
            state.header, state.torn = header, torn
            state.head, state.last = marks
            state.offset = end

    def _unterminated(self, fh: IO[bytes], end: int, size: int, offset: int) -> tuple[int, int]:
        """Where the lines to count end, and the rows the row path drops, given the bytes after
        the last newline - as :func:`~.text_files.prepare` decides: a CSV row without its newline
        is dropped (``line_invalid``; a header not complete yet is no row), a JSON line is a row
        when it parses whole (the writer's newline is all it lacks), else dropped."""
        if end >= size:
            return end, 0
        if self.fmt == "csv" and end == 0 == offset:
            return 0, 0  # not even the header is complete: the row path reads nothing of it
        fh.seek(end)
        rest = fh.read(size - end)
        if not rest.strip():
            return end, 0
        if self.fmt == "csv":
            return end, 1
        records, bad = json_records(rest)
        if records and bad:
            raise Uncountable("an unterminated last line of several parts")
        return (size, 0) if records else (end, bad)

    def _count_into(
        self, state: _File, paths: list[str], hi: datetime, near: list[datetime] | None = None
    ) -> None:
        """Count ``paths`` pane by pane (``since`` up to ``hi``) and add the counts to ``state``.

        ``near``: the panes new lines are expected in. They are counted first in those alone - a
        statement and a frame have a column per pane, and ~50 panes took ~150 ms for a minute's
        lines - and in every pane only when a row lies elsewhere."""
        assert self._size is not None and self._since is not None
        size = self._size
        every = []
        pane = self._since
        while pane < hi:
            every.append(pane)
            pane += size
        if near is not None:
            guess = [p for p in near if self._since <= p < hi]
            counted = self._count_panes(paths, guess, hi)
            if counted is not None:
                self._add(state, *counted)
                return
        counted = self._count_panes(paths, every, hi)
        if counted is None:
            raise Uncountable(f"rows dated more than {AHEAD} after the newest pane")
        self._add(state, *counted)

    def _count_panes(
        self, paths: list[str], panes: list[datetime], hi: datetime
    ) -> tuple[list[datetime], pd.DataFrame, int, set[str]] | None:
        """``paths`` counted with a 0/1 column per pane of ``panes``: (the panes, the counted
        combinations, the rows whose timestamp cannot be read, the keys some line has - JSON);
        ``None`` when a row of ``[since, far future)`` lies in none of them."""
        assert self._shape is not None and self._size is not None and self._since is not None
        size = self._size
        request = replace(self._shape, ranges=tuple((p, p + size) for p in panes))
        # read from `since` to the far future: a row in no pane of `panes` is found, not lost
        far = hi + timedelta(days=3650)
        if self._conn is None:
            import duckdb

            self._conn = duckdb.connect()
        absent: list[str] = []
        frame, flagged, _ = count_text(
            paths,
            self.fmt,
            request,
            self._since,
            far,
            timeout=self.timeout,
            part=True,
            conn=self._conn,
            absent=absent,
        )
        self.parts_counted += 1
        batch = counted_batch(frame, request, flagged)
        self._flagged = flagged
        columns = [range_column(i) for i in range(len(panes))]
        if len(batch.frame) and (batch.frame[columns].to_numpy().sum(axis=1) == 0).any():
            return None
        present = set(request.names) - set(absent) if len(frame) else set()
        return panes, batch.frame, batch.rejected.get("timestamp_invalid", 0), present

    @staticmethod
    def _add(
        state: _File, panes: list[datetime], counted: pd.DataFrame, invalid: int, present: set[str]
    ) -> None:
        state.invalid += invalid
        state.present |= present
        columns = [range_column(i) for i in range(len(panes))]
        for i, pane in enumerate(panes):
            rows = counted[counted[columns[i]] == 1]
            if len(rows):
                state.changed.add(pane)
                frames = state.panes.setdefault(pane, [])
                frames.append(rows.drop(columns=columns).reset_index(drop=True))
                # regrouped once the new parts hold as many combinations as the rest (or are many):
                # each combination is regrouped a few times, not at every tick
                if len(frames) > _PARTS or sum(map(len, frames[1:])) >= len(frames[0]):
                    state.panes[pane] = [_combined(frames)]


class TryAgain(Uncountable):
    """Nothing to count this time, the running counts intact: no complete row in the log yet (a pod
    just started), a file rotated or rewritten while it was read. The next tick tails again."""


def _fingerprint(shape: CountRequest, size: timedelta, fmt: str) -> str:
    """What the kept counts were counted for: the request (its columns, flags, thresholds), the pane
    size and the format."""
    text = json.dumps([dataclasses.asdict(shape), size.total_seconds(), fmt], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _combined(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Counted frames as one, each combination once where the values can be grouped (JSON lists
    cannot: then the frames are only stacked, and their counts add up downstream)."""
    if len(frames) == 1:
        return frames[0]
    try:
        return merge_counts(frames)
    except TypeError:  # unhashable values
        return pd.concat(frames, ignore_index=True)


def _marks(fh: IO[bytes], offset: int) -> tuple[bytes, bytes]:
    """Digests of a file's first bytes and of the bytes before ``offset`` (up to :data:`_HEAD`
    each): a file rewritten in place, truncated and written again, or replaced by another that got
    its inode differs in one of them (an append-only log in neither)."""
    fh.seek(0)
    head = fh.read(min(_HEAD, offset))
    fh.seek(max(0, offset - _HEAD))
    last = fh.read(offset - max(0, offset - _HEAD))
    return _digest(head), _digest(last)


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _last_line_end(fh: IO[bytes], offset: int, size: int) -> int:
    """The offset just after the last newline in ``[offset, size)`` (``offset`` when none)."""
    at = size
    while at > offset:
        start = max(offset, at - _BLOCK)
        fh.seek(start)
        block = fh.read(at - start)
        cut = block.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        at = start
    return offset


def _copy(fh: IO[bytes], out: IO[bytes], start: int, end: int) -> None:
    fh.seek(start)
    left = end - start
    while left > 0:
        block = fh.read(min(left, 1 << 24))
        if not block:
            raise TryAgain("a file shrank while its new lines were read (rotation under way)")
        out.write(block)
        left -= len(block)
