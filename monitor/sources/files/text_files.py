"""CSV and JSON Lines log files, looked at byte by byte before DuckDB counts them.

DuckDB's CSV and JSON readers and the row path's parsers (``pandas.read_csv``, and
:func:`json_records`, which both paths use) agree on well-formed files, and DuckDB stops with an
error on most malformed ones (then the row path reads the window). This module finds what
DuckDB would read *silently differently*, and what the row path treats specially, and either
arranges for DuckDB to read exactly the row path's rows or refuses (:class:`Uncountable`):

- a file being written: DuckDB must not meet a row the writer has half written. A plain file
  modified in the last minute is read from a copy of the very bytes looked at (up to the last
  newline); any other file is checked to be unchanged after the count
  (:meth:`TextFiles.unchanged`: the caller counts again, from copies, if not);
- a CSV file whose last row is unterminated: the row path drops that row and counts it
  ``line_invalid``; DuckDB reads a copy without it. A JSON Lines file's unterminated last line
  is one more line to the row path: dropped and counted when it does not parse (DuckDB reads
  the copy), kept when it does;
- gzip: the row path reads a truncated member's partial output and stops at bytes that are not
  another member, while DuckDB reads truncated data silently: such a file is refused, as is a
  gzip file ending in an unterminated row (no copy is made of decompressed data);
- CSV: DuckDB drops spaces between a delimiter and a quoted field (``a, "b"``), pandas keeps them:
  a file with a quote next to a space or tab after a comma or line start, or before a comma or
  line end, is refused (found by ``bytes.find``, at memory speed; a quoted text with ``, "`` in
  it is refused too). The header must be the first line (pandas skips blank lines before it);
- JSON Lines: DuckDB accepts trailing commas, ``nan``/``inf`` in any spelling, a line that is
  just ``null`` and vertical-tab or form-feed whitespace, which ``json.loads`` rejects: a file
  with any of them is refused. (What only Python accepts - a byte-order mark, lone surrogates,
  duplicate keys - makes DuckDB fail, and the row path reads.)

An empty file, or one with nothing but whitespace, adds no rows and is left out, as is a CSV
file whose header line is not complete yet.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import IO, Any

import pandas as pd

from monitor.sources.files.parquet_counts import Uncountable

__all__ = ["TextFiles", "Unfinished", "json_records", "prepare"]

_LIVE_SECONDS = 60  # a plain file modified this recently is read from a copy
_CHUNK = 1 << 24  # bytes looked at at a time
_CARRY = 256  # bytes of the previous chunk kept in front of the next one (patterns across chunks)
_HEAD = 1 << 16  # bytes in which a CSV header must end
_BOM = b"\xef\xbb\xbf"
_CLOSING = bytes.maketrans(b"]", b"}")


class Unfinished(Uncountable):
    """A file still being written in a way that cannot be read in part (a gzip member not finished)."""


def json_records(data: bytes) -> tuple[list[dict[str, Any]], int]:
    """The JSON objects of ``data``'s lines, and how many non-blank lines are not one (torn or
    malformed lines, JSON that is no object). The row path and the counted path both read
    JSON Lines with this."""
    records: list[dict[str, Any]] = []
    bad = 0
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:  # JSONDecodeError, or bytes that are not UTF-8
            bad += 1
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            bad += 1
    return records, bad


@dataclass
class TextFiles:
    """What DuckDB reads for a window's files, and what the row path would count on the way."""

    paths: list[str] = field(default_factory=list)  # the files, or copies up to their last newline
    header: tuple[str, ...] | None = None  # CSV: the columns as pandas names them
    rejected: Counter[str] = field(default_factory=Counter)  # unterminated rows the row path drops
    watched: list[tuple[str, int, int]] = field(default_factory=list)  # read in place: path, size, mtime
    copies: ExitStack = field(default_factory=ExitStack)  # the copies, deleted on close

    def unchanged(self) -> bool:
        """Whether the files read in place are still what was looked at (no writer appended)."""
        for path, size, mtime in self.watched:
            try:
                info = os.stat(path)
            except FileNotFoundError:
                return False
            if (info.st_size, info.st_mtime_ns) != (size, mtime):
                return False
        return True

    def close(self) -> None:
        self.copies.close()


def prepare(
    paths: Sequence[str], fmt: str, *, copy_all: bool = False, deadline: float, settled: bool = False
) -> TextFiles:
    """Look at each of ``paths`` (``fmt``: ``csv`` or ``jsonl``); raise :class:`Uncountable` for
    a file DuckDB would read differently from the row path (see the module docstring), and
    :class:`TimeoutError` after ``deadline`` (``time.monotonic()``, checked between files).
    ``copy_all``: read every plain file from a copy (after a count found files changed);
    ``settled``: no file is being written (a tail's parts), none is copied."""
    files = TextFiles()
    try:
        for path in paths:
            if time.monotonic() > deadline:
                raise TimeoutError(f"looking at the files took longer than source.timeout ({path!r} next)")
            try:
                _prepare_one(path, fmt, files, copy_all, settled)
            except FileNotFoundError:
                raise Uncountable(f"{path!r} vanished (rotation under way)") from None
    except BaseException:
        files.close()
        raise
    return files


@dataclass
class _Scan:
    size: int = 0  # bytes of the file looked at (compressed, for gzip)
    mtime: int = 0
    content: int = 0  # bytes of content (decompressed)
    head: bytes = b""  # the first bytes of the content
    tail: bytes = b""  # the bytes after the last newline
    newline: bool = False


def _prepare_one(path: str, fmt: str, files: TextFiles, copy_all: bool, settled: bool = False) -> None:
    compressed = path.lower().endswith(".gz")
    live = not settled and time.time() - os.stat(path).st_mtime < _LIVE_SECONDS
    copy = None if compressed or not (live or copy_all) else _temporary(f".{fmt}", files)
    scan = _Scan()
    carry = b""
    for chunk in _contents(path, compressed, scan):
        if copy is not None:
            copy.write(chunk)  # the copy holds exactly the bytes looked at
        scan.content += len(chunk)
        if len(scan.head) < _HEAD:
            scan.head += chunk[: _HEAD - len(scan.head)]
        cut = chunk.rfind(b"\n")
        scan.newline = scan.newline or cut >= 0
        scan.tail = chunk[cut + 1 :] if cut >= 0 else scan.tail + chunk
        window = carry + chunk
        problem = _csv_problem(window) if fmt == "csv" else _jsonl_problem(window, at_start=not carry)
        if problem:
            raise Uncountable(f"{path!r}: {problem}")
        carry = window[-_CARRY:]
    keep = scan.content - len(scan.tail)  # content bytes DuckDB must read: up to the last newline
    if fmt == "csv":
        if not scan.newline:
            return  # not even the header is complete: the row path reads nothing of it
        if scan.tail:
            files.rejected["line_invalid"] += 1  # the row being written: the row path drops it
    elif scan.tail.strip():
        records, bad = json_records(scan.tail)
        if records and bad:
            raise Uncountable(f"{path!r}: an unterminated last line of several parts")
        if records:
            keep = scan.content  # a whole object, only its newline missing: a row either way
        else:
            files.rejected["line_invalid"] += bad
    if len(scan.head) < _HEAD and not scan.head[:keep].strip():
        return  # nothing but whitespace: the row path adds no rows either
    if fmt == "csv":
        _check_header(path, scan, files)
    if copy is not None:
        copy.truncate(keep)
        copy.flush()
        files.paths.append(copy.name)
    elif keep == scan.content:
        files.paths.append(path)
        files.watched.append((path, scan.size, scan.mtime))
    elif compressed:
        raise Uncountable(f"{path!r}: gzip data ending in an unterminated line")
    else:  # an old file ending in an unterminated row (a writer that died): copy what was looked at
        files.paths.append(_copy(path, keep, scan, f".{fmt}", files))


def _check_header(path: str, scan: _Scan, files: TextFiles) -> None:
    """The CSV header must be the first line, readable, and the same in every file."""
    first_line = scan.head.removeprefix(_BOM).split(b"\n", 1)[0]
    if not first_line.strip():
        raise Uncountable(f"{path!r}: blank lines before the CSV header")
    cut = scan.head.rfind(b"\n")
    try:
        header = tuple(str(c) for c in pd.read_csv(io.BytesIO(scan.head[: cut + 1]), nrows=0).columns)
    except (ValueError, pd.errors.ParserError) as exc:
        raise Uncountable(f"{path!r}: the CSV header cannot be read ({exc})") from None
    if files.header is None:
        files.header = header
    elif header != files.header:
        raise Uncountable(f"CSV files with different headers ({path!r})")


def _temporary(suffix: str, files: TextFiles) -> IO[bytes]:
    """A temporary file, deleted when ``files`` close."""
    named = tempfile.NamedTemporaryFile(prefix="fairwatch-", suffix=suffix)  # noqa: SIM115 - closed with files
    copy: IO[bytes] = files.copies.enter_context(named)
    return copy


def _copy(path: str, size: int, scan: _Scan, suffix: str, files: TextFiles) -> str:
    """A copy of the first ``size`` bytes of ``path`` (the kernel copies), if the file is still
    what was looked at."""
    copy = _temporary(suffix, files)
    with open(path, "rb") as src:
        left = size
        while left > 0:
            try:
                done = os.copy_file_range(src.fileno(), copy.fileno(), left)
            except OSError:  # not between these file systems: copy through memory
                block = src.read(min(left, _CHUNK))
                copy.write(block)
                done = len(block)
            if done == 0:
                break
            left -= done
        info = os.fstat(src.fileno())
    copy.flush()
    if left or (info.st_size, info.st_mtime_ns) != (scan.size, scan.mtime):
        raise Uncountable(f"{path!r} changed while being copied")
    return copy.name


def _contents(path: str, compressed: bool, scan: _Scan) -> Iterator[bytes]:
    """The file's (decompressed) content, chunk by chunk; its size and mtime go into ``scan``.
    gzip data the row path reads other than DuckDB (a truncated member, bytes that are not
    another member) raises Uncountable."""
    with open(path, "rb") as fh:
        info = os.fstat(fh.fileno())
        scan.mtime = info.st_mtime_ns
        if not compressed:  # read, not mapped: a file truncated under a mapping kills the process
            while scan.size < info.st_size and (block := fh.read(min(_CHUNK, info.st_size - scan.size))):
                scan.size += len(block)  # up to the size seen at opening: a writer's later bytes wait
                yield block
            return
        scan.size = info.st_size
        member: Any = None
        while block := fh.read(_CHUNK):
            while block:
                if member is None or member.eof:  # a member starts right here
                    if not block.startswith(b"\x1f\x8b"):
                        raise Uncountable(f"{path!r}: bytes after the gzip data")
                    member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
                try:
                    out = member.decompress(block)
                except zlib.error as exc:
                    raise Uncountable(f"{path!r}: damaged gzip data ({exc})") from None
                if out:
                    yield out
                block = member.unused_data if member.eof else b""
        if member is not None and not member.eof:
            raise Unfinished(f"{path!r}: a truncated gzip member (still being written?)")


# -- what DuckDB reads differently ------------------------------------------------------------------


def _csv_problem(data: bytes) -> str | None:
    """A quote next to a space or tab at the edge of a field (DuckDB trims those spaces)."""
    if data.find(b'"') < 0:
        return None
    for pattern in (b' "', b'\t"'):
        at = data.find(pattern)
        while at >= 0:
            start = at
            while start > 0 and data[start - 1] in b" \t":
                start -= 1
            if start == 0 or data[start - 1] in b",\n\r":
                return "a quoted CSV field after spaces (DuckDB drops them, pandas keeps them)"
            at = data.find(pattern, at + 1)
    for pattern in (b'" ', b'"\t'):
        at = data.find(pattern)
        while at >= 0:
            end = at + 1
            while end < len(data) and data[end] in b" \t":
                end += 1
            if end == len(data) or data[end] in b",\n\r":
                return "spaces after a quoted CSV field (DuckDB drops them, pandas keeps them)"
            at = data.find(pattern, at + 1)
    return None


def _jsonl_problem(data: bytes, *, at_start: bool) -> str | None:
    """JSON that DuckDB reads and ``json.loads`` rejects (see the module docstring): a handful of
    passes of ``bytes`` methods over ``data``, about 0.1 s per 16 MB."""
    if data.find(b"\x0b") >= 0 or data.find(b"\x0c") >= 0:
        return "a vertical tab or form feed (DuckDB reads them as whitespace, json.loads does not)"
    squeezed = data.translate(_CLOSING, b" \t\r")  # whitespace out, "]" read as "}": one pass
    if squeezed.find(b",}") >= 0:
        return "a trailing comma (DuckDB reads it, json.loads does not)"
    if (
        b"\nnull\n" in squeezed
        or (at_start and squeezed.startswith(b"null\n"))
        or squeezed.endswith(b"\nnull")
    ):
        return "a line that is just null (DuckDB reads an empty row, json.loads no object)"
    lowered = data.lower()
    for word in (b"nan", b"inf"):
        at = lowered.find(word)
        while at >= 0:
            if _bare_non_python(data, at):
                return "nan or inf spelled other than NaN and Infinity (DuckDB reads it, json.loads does not)"
            at = lowered.find(word, at + 1)
    return None


def _bare_non_python(data: bytes, at: int) -> bool:
    """Whether the ``nan``/``inf`` at ``at`` may be a bare JSON token in a spelling only DuckDB reads."""
    before, sign = at, 0
    if before > 0 and data[before - 1] in b"-+":
        sign = data[before - 1]
        before -= 1
    while before > 0 and data[before - 1] in b" \t":
        before -= 1
    if before > 0 and data[before - 1] not in b":,[":
        return False  # part of a word or a string: no token
    if data.startswith(b"NaN", at) and not sign:
        end = at + 3
    elif data.startswith(b"Infinity", at) and sign != ord("+"):
        end = at + 8
    else:
        return True
    return end < len(data) and (chr(data[end]).isalnum() or data[end] == ord("_"))
