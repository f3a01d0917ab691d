"""File sources: prediction logs that a model server appends to on a shared volume (the sidecar pattern).

``path`` is one file or a glob over rotated files (``/logs/predictions-*.jsonl``). The format is
``jsonl``, ``csv`` or ``parquet``, given by ``format:`` or guessed from the extension (``.jsonl``,
``.ndjson``, ``.json``, ``.csv``, ``.parquet``; ``.gz`` on top of JSON Lines or CSV).

The writer is live, so the reader is tolerant:

- a line the writer has not finished or a malformed line is dropped and counted as rejected reason
  ``line_invalid``; the next read sees it whole. A JSON line is unfinished when it does not parse; a
  CSV row when the file does not end with a newline yet (writers terminate every row);
- a file that vanishes between listing and opening (rotation) is skipped, and the glob is listed
  again so that its new name is read instead; a file is read once per window even when renamed;
- a file that cannot be parsed (a Parquet file still being written has no footer yet; a corrupt
  or unreadable file) is skipped, named in the batch's ``skipped_files`` and logged once until it
  reads again; the other files are read, and the next read tries it again. Only when every file
  to read fails is the source down;
- the scan stops with a :class:`~monitor.core.errors.SourceError` once it has taken longer than
  ``source.timeout`` (checked between files);
- an existing directory without matching files is an empty window (the model has not logged yet),
  while a missing directory is a :class:`~monitor.core.errors.SourceError`.

Only what the window needs is read: files last modified before the window began (minus a grace
for clock skew) are skipped - this assumes the writer appends rows soon after their event time -
and Parquet row groups whose statistics lie outside the window are not read.
"""

from __future__ import annotations

import glob
import io
import logging
import os
import stat
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from monitor.config import SourceConfig
from monitor.core.errors import ConfigError, SourceError
from monitor.core.times import utc
from monitor.sources.contract import Batch, CountedPanes, CountRequest
from monitor.sources.files.parquet_counts import Uncountable, count_parquet, holds_text
from monitor.sources.files.tail import TextTail, TryAgain
from monitor.sources.files.text_counts import count_text
from monitor.sources.files.text_files import json_records
from monitor.sources.frames import counted_batch, filter_window

__all__ = ["MTIME_GRACE", "FileSource", "ScanStats"]

log = logging.getLogger(__name__)

# Clock skew between the writer's host and ours, plus writes buffered before they reach the disk.
MTIME_GRACE = timedelta(minutes=5)

_EXTENSIONS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_MAX_LISTINGS = 3  # list the glob again when files vanished, but not forever
_TAIL_RETRY = timedelta(hours=1)  # a log the tail could not count is counted whole this long


@dataclass
class ScanStats:
    """What the last :meth:`FileSource.read` looked at (for debug logs and tests)."""

    files_matched: int = 0
    files_pruned: int = 0  # skipped: last modified before the window began
    files_vanished: int = 0  # listed, then gone before they could be opened (rotation)
    files_read: int = 0
    row_groups_total: int = 0  # Parquet row groups in the files read
    row_groups_read: int = 0  # ... of which could hold rows of the window
    files_skipped: int = 0  # could not be parsed (half written, corrupt): tried again next read


class FileSource:
    """Rows of a window from log files (see the module docstring).

    Pruning by modification time assumes the writer appends rows in event-time order, soon after
    the event: a file last written before ``start - mtime_grace`` then holds no row of the window.
    It is skipped without being opened. ``timestamp_column=None`` reads every file, unfiltered.
    """

    def __init__(
        self,
        config: SourceConfig,
        *,
        timestamp_column: str | None,
        model: tuple[str, str] | None = None,
        mtime_grace: timedelta = MTIME_GRACE,
    ) -> None:
        if not config.path:
            raise ConfigError("source.path: a files source needs a file or a glob")
        self.pattern = config.path
        self._model = model  # (column, name): one model's rows of a log holding several (Parquet counts)
        self.format = config.format
        self.timestamp_column = timestamp_column
        self.mtime_grace = mtime_grace
        self.timeout = config.timeout.total_seconds()
        self.last_scan = ScanStats()
        self._unreadable: set[str] = set()  # files skipped at the last read: logged once per streak
        self.aggregate = config.aggregate
        self._counts_unavailable: str | None = None  # why the last read_counts read rows instead
        self._tail: TextTail | None = None  # running counts of a text log (count_panes)
        self._tail_directory: Path | None = None  # where they survive a restart (keep_counts_in)
        self._tail_retry_at = 0.0  # time.monotonic() after which tailing is tried again

    def describe(self) -> str:
        return f"files {self.pattern}"

    def close(self) -> None:
        if self._tail is not None:
            self._tail.close()

    def read(self, start: datetime, end: datetime) -> Batch:
        directory = _static_directory(self.pattern)
        if not directory.is_dir():
            raise SourceError(f"cannot read {self.describe()}: directory {str(directory)!r} does not exist")
        stats, rejected, skipped = ScanStats(), Counter[str](), dict[str, str]()
        frames = self._read_files(start, end, stats, rejected, skipped)
        self.last_scan = stats
        self._report_unreadable(skipped)
        if skipped and not stats.files_read:
            first = next(iter(skipped.items()))
            raise SourceError(
                f"cannot read {self.describe()}: none of its {len(skipped)} file(s) could be read, "
                f"e.g. {first[0]!r}: {first[1]}"
            )
        frame = _concat(frames)
        if self.timestamp_column is None:
            return Batch(frame, rejected, tuple(skipped))
        if frame.empty and self.timestamp_column not in frame.columns:
            # Nothing logged yet (or only torn lines): an empty window, not a missing column.
            frame[self.timestamp_column] = pd.Series([], dtype="datetime64[ns, UTC]")
        batch = filter_window(frame, self.timestamp_column, start, end)
        batch.rejected.update(rejected)
        batch.skipped_files = tuple(skipped)
        return batch

    def read_counts(self, request: CountRequest, start: datetime, end: datetime) -> Batch | None:
        """The window counted by DuckDB - Parquet files (:mod:`monitor.sources.files.parquet_counts`), CSV
        or JSON Lines files (:mod:`monitor.sources.files.text_counts`) - or ``None`` (logged once per
        reason) where the row path must read: ``aggregate: false``, files of several formats,
        Parquet timestamps not stored as Parquet timestamps, a missing column, a file DuckDB
        cannot read or would read differently from the row path (the row path reads it)."""
        counted = self._count(request, start, end, totals=False)
        if counted is None:
            return None
        frame, flagged, rejected = counted
        batch = counted_batch(frame, request, flagged)
        batch.rejected.update(rejected)  # rows the row path drops on reading (unterminated lines)
        return batch

    def reads_narrowly(self) -> bool:
        """Parquet only: DuckDB skips row groups outside the range by their statistics (a text file
        is read whole whatever part of it is asked for)."""
        if self.format != "auto":
            return self.format == "parquet"
        paths = glob.glob(self.pattern, recursive=True)
        return bool(paths) and all(self._format_of(p) == ("parquet", False) for p in paths)

    def count_panes(
        self, shape: CountRequest, panes: list[datetime], size: timedelta, since: datetime, until: datetime
    ) -> CountedPanes | None:
        """CSV and JSON Lines: ``panes`` from the log's running counts, after counting the lines
        written since the last call (:mod:`monitor.sources.files.tail`); ``None`` for Parquet, for
        ``aggregate: false``, and where the tail cannot count (logged once; it tries again after
        :data:`_TAIL_RETRY`): the panes are then counted whole."""
        if not self.aggregate or self.timestamp_column is None or time.monotonic() < self._tail_retry_at:
            return None
        directory = _static_directory(self.pattern)
        if not directory.is_dir():
            return None
        paths = [p for p in sorted(glob.glob(self.pattern, recursive=True)) if os.path.isfile(p)]
        formats = {self._format_of(p)[0] for p in paths}
        if len(formats) != 1 or (fmt := formats.pop()) == "parquet":
            return None
        if self._tail is None or self._tail.fmt != fmt:
            if self._tail is not None:
                self._tail.close()
            self._tail = TextTail(fmt, timeout=self.timeout, directory=self._tail_directory)
        oldest_mtime = (utc(since) - self.mtime_grace).timestamp()
        try:
            counted = self._tail.count(_modified_since(paths, oldest_mtime), shape, panes, size, since, until)
        except TryAgain as exc:  # this tick only: the running counts are intact
            log.debug("%s: counting panes from whole files this tick: %s", self.describe(), exc)
            return None
        except Exception as exc:  # Uncountable, or what DuckDB refused in the new lines: count whole
            self._tail.discard()
            self._tail = None
            self._tail_retry_at = time.monotonic() + _TAIL_RETRY.total_seconds()
            log.info(
                "%s: counting panes from whole files for %s, not tailing them: %s",
                self.describe(),
                _TAIL_RETRY,
                exc,
            )
            return None
        self._counts_unavailable = None
        return counted

    def keep_counts_in(self, directory: Path) -> None:
        """Keep a tailed log's offsets and running counts in ``directory`` (``panes.directory``)."""
        self._tail_directory = directory

    def count_ranges(self, request: CountRequest, start: datetime, end: datetime) -> tuple[int, ...] | None:
        """The number of rows in each of ``request``'s time ranges, counted by DuckDB in one pass
        (Parquet files); ``None`` where :meth:`read_counts` would be ``None``, and for text files."""
        counted = self._count(request, start, end, totals=True)
        return None if counted is None else tuple(int(n) for n in counted[0].iloc[0])

    def _count(
        self, request: CountRequest, start: datetime, end: datetime, *, totals: bool
    ) -> tuple[pd.DataFrame, frozenset[str], Counter[str]] | None:
        if not self.aggregate or self.timestamp_column is None:
            return None
        directory = _static_directory(self.pattern)
        if not directory.is_dir():
            return None  # the row path says so
        oldest_mtime = (utc(start) - self.mtime_grace).timestamp()
        stats, paths, formats = ScanStats(), [], set()
        for path in sorted(glob.glob(self.pattern, recursive=True)):
            try:
                info = os.stat(path)
            except FileNotFoundError:
                return None  # rotation under way: the row path lists again
            if not stat.S_ISREG(info.st_mode):
                continue
            stats.files_matched += 1
            if info.st_mtime < oldest_mtime:
                stats.files_pruned += 1
                continue
            formats.add(self._format_of(path)[0])
            paths.append(path)
        if not paths:
            return None
        if len(formats) > 1:
            self._rows_instead(f"files of several formats ({', '.join(sorted(formats))})")
            return None
        fmt = formats.pop()
        if fmt != "parquet" and totals:
            return None  # not asked for: text files make no narrow reads
        began = time.monotonic()
        try:
            if fmt == "parquet":
                frame, flagged = count_parquet(
                    paths, request, start, end, timeout=self.timeout, totals=totals, model=self._model
                )
                counted = frame, flagged, Counter[str]()
            else:
                counted = count_text(paths, fmt, request, start, end, timeout=self.timeout)
        except Uncountable as exc:
            self._rows_instead(str(exc))
            return None
        except Exception as exc:
            if time.monotonic() - began >= self.timeout:
                raise SourceError(
                    f"cannot read {self.describe()}: the count took longer than source.timeout ({self.timeout:g} s)"
                ) from None
            self._rows_instead(f"DuckDB could not count them ({type(exc).__name__}: {str(exc)[:200]})")
            return None
        stats.files_read = len(paths)
        self.last_scan = stats
        self._report_unreadable({})
        self._counts_unavailable = None
        return counted

    def _rows_instead(self, why: str) -> None:
        if why != self._counts_unavailable:  # once per reason, not at every tick
            log.info("%s: reading rows, not counts: %s", self.describe(), why)
            self._counts_unavailable = why
        return None

    def _report_unreadable(self, skipped: dict[str, str]) -> None:
        """One log line when a file starts failing to parse, one when it reads again."""
        for path in sorted(skipped.keys() - self._unreadable):
            log.warning("%s: skipping %r until it can be read: %s", self.describe(), path, skipped[path])
        for path in sorted(self._unreadable - skipped.keys()):
            log.info("%s: %r can be read again", self.describe(), path)
        self._unreadable = set(skipped)

    def _read_files(
        self,
        start: datetime,
        end: datetime,
        stats: ScanStats,
        rejected: Counter[str],
        skipped: dict[str, str],
    ) -> list[pd.DataFrame]:
        """Read every matching file once; list again when rotation renamed some under us."""
        deadline = time.monotonic() + self.timeout
        frames: list[pd.DataFrame] = []
        done_paths: set[str] = set()
        seen_files: set[tuple[int, int]] = set()  # (device, inode): a renamed file is the same file
        oldest_mtime = (utc(start) - self.mtime_grace).timestamp()
        for _ in range(_MAX_LISTINGS):
            vanished = False
            for path in sorted(glob.glob(self.pattern, recursive=True)):
                if path in done_paths:
                    continue
                done_paths.add(path)
                try:
                    info = os.stat(path)
                except FileNotFoundError:
                    stats.files_vanished += 1
                    vanished = True
                    continue
                if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) in seen_files:
                    continue
                seen_files.add((info.st_dev, info.st_ino))
                stats.files_matched += 1
                if self.timestamp_column is not None and info.st_mtime < oldest_mtime:
                    stats.files_pruned += 1
                    continue
                if time.monotonic() > deadline:
                    raise SourceError(
                        f"cannot read {self.describe()}: the scan took longer than source.timeout "
                        f"({self.timeout:g} s) after {stats.files_read} file(s)"
                    )
                try:
                    frames.append(self._read_file(path, start, end, stats, rejected))
                except _Unreadable as exc:
                    skipped[path] = str(exc.__cause__ or exc)[:300]
                    stats.files_skipped += 1
                    continue
                except FileNotFoundError:
                    seen_files.discard((info.st_dev, info.st_ino))  # read it under its new name
                    stats.files_matched -= 1
                    stats.files_vanished += 1
                    vanished = True
                    continue
                stats.files_read += 1
            if not vanished:
                break
        return frames

    def _read_file(
        self, path: str, start: datetime, end: datetime, stats: ScanStats, rejected: Counter[str]
    ) -> pd.DataFrame:
        fmt, compressed = self._format_of(path)
        try:
            if fmt == "parquet":
                return _read_parquet(path, self.timestamp_column, start, end, stats, self._model)
            with open(path, "rb") as fh:
                data = fh.read()
            if compressed:
                data = _gunzip(data)
            if fmt == "csv":
                return _parse_csv(data, rejected)
            return _parse_jsonl(data, rejected)
        except FileNotFoundError:
            raise
        except (OSError, zlib.error, pa.ArrowException, ValueError, pd.errors.ParserError) as exc:
            raise _Unreadable(path) from exc

    def _format_of(self, path: str) -> tuple[str, bool]:
        """``(format, gzip-compressed)`` from the config, else from the file name."""
        name = path.lower()
        compressed = name.endswith(".gz")
        stem = name.removesuffix(".gz")
        fmt = self.format if self.format != "auto" else _EXTENSIONS.get(os.path.splitext(stem)[1])
        if fmt is None:
            raise SourceError(
                f"cannot tell the format of {path!r} from its extension; set `format:` "
                "(jsonl, csv or parquet) in the source of the config"
            )
        if fmt == "parquet" and compressed:
            raise SourceError(f"{path!r}: gzip over Parquet is not supported (Parquet compresses itself)")
        return fmt, compressed


class _Unreadable(Exception):
    """A file that could not be parsed this time; the cause says why."""


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Rows of all files; empty pieces are left out (their all-NA columns would only blur dtypes)."""
    non_empty = [f for f in frames if len(f)]
    if not non_empty:  # keep the columns some file declared
        return max(frames, key=lambda f: len(f.columns), default=pd.DataFrame())
    return non_empty[0] if len(non_empty) == 1 else pd.concat(non_empty, ignore_index=True)


# -- parsing ------------------------------------------------------------------------------------------


def _parse_jsonl(data: bytes, rejected: Counter[str]) -> pd.DataFrame:
    """One JSON object per line; a torn or malformed line is counted, not fatal."""
    records, bad = json_records(data)
    if bad:
        rejected["line_invalid"] += bad
    return pd.DataFrame.from_records(records) if records else pd.DataFrame()


def _parse_csv(data: bytes, rejected: Counter[str]) -> pd.DataFrame:
    """CSV with a header. An unterminated last row is one the writer is still writing: dropped."""
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n")
        if cut < 0:
            return pd.DataFrame()  # not even the header is complete yet
        data = data[: cut + 1]
        rejected["line_invalid"] += 1
    if not data.strip():
        return pd.DataFrame()
    try:
        # low_memory=False: infer each column's type once, not per chunk (no DtypeWarning).
        return pd.read_csv(io.BytesIO(data), low_memory=False)
    except pd.errors.ParserError:
        pass  # a row with too many fields: parse again, slower, skipping and counting such rows
    bad: list[list[str]] = []

    def skip(fields: list[str]) -> None:
        bad.append(fields)
        return None

    frame = pd.read_csv(io.BytesIO(data), engine="python", on_bad_lines=skip)
    rejected["line_invalid"] += len(bad)
    return frame


def _gunzip(data: bytes) -> bytes:
    """Decompress gzip, member after member; a truncated last member yields what is complete.

    Appending writers produce several concatenated members, and a writer caught mid-append leaves
    a member without its trailer: the ``gzip`` module raises there, a decompressor object does not.
    """
    out: list[bytes] = []
    while data:
        member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        out.append(member.decompress(data))
        if not member.eof:
            break
        data = member.unused_data
        if not data.startswith(b"\x1f\x8b"):
            break  # trailing padding, not another member
    return b"".join(out)


def _read_parquet(
    path: str,
    timestamp_column: str | None,
    start: datetime,
    end: datetime,
    stats: ScanStats,
    model: tuple[str, str] | None = None,
) -> pd.DataFrame:
    """Read only the row groups whose min/max statistics may overlap the window - and of a log
    holding several models, only ``model``'s rows (where its column holds text, as the counts do)."""
    dataset = ds.dataset(path, format="parquet")
    window = _arrow_window(dataset.schema, timestamp_column, start, end)
    if (
        model is not None
        and model[0] in dataset.schema.names
        and holds_text(dataset.schema.field(model[0]).type)
    ):
        ours = ds.field(model[0]) == model[1]
        window = ours if window is None else window & ours
    pieces = []
    for fragment in dataset.get_fragments():
        total = fragment.metadata.num_row_groups
        stats.row_groups_total += total
        if window is None:
            stats.row_groups_read += total
            pieces.append(fragment.to_table(schema=dataset.schema))
            continue
        for row_group in fragment.split_by_row_group(window):
            stats.row_groups_read += 1
            pieces.append(row_group.to_table(filter=window, schema=dataset.schema))
    table = pa.concat_tables(pieces) if pieces else dataset.schema.empty_table()
    frame: pd.DataFrame = table.to_pandas()
    return frame


def _arrow_window(schema: pa.Schema, column: str | None, start: datetime, end: datetime) -> Any:
    """A dataset filter for ``[start, end)`` when the column's type allows one, else ``None``.

    Bounds are rounded outwards to the column's unit (the exact filter comes later). Null
    timestamps are kept so that they are counted as invalid like in every other source.
    """
    if column is None or column not in schema.names:
        return None
    typ = schema.field(column).type
    field = ds.field(column)
    if pa.types.is_timestamp(typ):
        low = pa.scalar(_units_since_epoch(start, typ.unit, round_up=False), type=typ)
        high = pa.scalar(_units_since_epoch(end, typ.unit, round_up=True), type=typ)
    elif pa.types.is_integer(typ):
        low = pa.scalar(_units_since_epoch(start, "s", round_up=True), type=typ)
        high = pa.scalar(_units_since_epoch(end, "s", round_up=True), type=typ)
    elif pa.types.is_floating(typ):
        low = pa.scalar(utc(start).timestamp(), type=typ)
        high = pa.scalar(utc(end).timestamp(), type=typ)
    else:
        return None  # text timestamps: filtered in pandas
    return ((field >= low) & (field < high)) | field.is_null()


def _units_since_epoch(moment: datetime, unit: str, *, round_up: bool) -> int:
    """Exact integer count of ``unit`` since the epoch (UTC), rounded down or up."""
    micros = (utc(moment) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    per_second = _UNITS_PER_SECOND[unit]
    if per_second >= 1_000_000:
        return micros * (per_second // 1_000_000)
    quotient, remainder = divmod(micros, 1_000_000 // per_second)
    return quotient + (1 if round_up and remainder else 0)


# -- paths --------------------------------------------------------------------------------------------


def _modified_since(paths: list[str], oldest: float) -> list[str]:
    """The files last modified at or after ``oldest`` (a file gone meanwhile: rotated away)."""
    kept = []
    for path in paths:
        try:
            if os.stat(path).st_mtime >= oldest:
                kept.append(path)
        except FileNotFoundError:
            continue
    return kept


def _static_directory(pattern: str) -> Path:
    """The directory part of ``pattern`` before any glob character: it must exist."""
    parts = Path(pattern).parts
    static: list[str] = []
    for part in parts[:-1]:
        if any(ch in part for ch in "*?["):
            break
        static.append(part)
    return Path(*static) if static else Path(".")
