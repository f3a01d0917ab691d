"""FileSource on real files: JSON Lines, CSV and Parquet as a model server's sidecar writes them."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from monitor.config import SourceConfig
from monitor.core.errors import SourceError
from monitor.sources import build_source
from monitor.sources.files.source import FileSource

START = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
END = datetime(2026, 11, 22, 4, 0, tzinfo=UTC)

# (id, event time): the edges of the half-open window [START, END) and around it.
EVENTS = [
    (1, START - timedelta(hours=2)),
    (2, START - timedelta(microseconds=1)),
    (3, START),
    (4, START + timedelta(minutes=30)),
    (5, END - timedelta(microseconds=1)),
    (6, END),
    (7, END + timedelta(hours=1)),
]
IN_WINDOW = [3, 4, 5]

MakeSource = Callable[..., FileSource]


@pytest.fixture
def make_source() -> Iterator[MakeSource]:
    """``make_source(path, timestamp_column="ts", **config)``."""
    sources: list[FileSource] = []

    def make(path: Path | str, timestamp_column: str | None = "ts", **fields: Any) -> FileSource:
        config = SourceConfig.model_validate({"kind": "files", "path": str(path), **fields})
        source = build_source(config, timestamp_column=timestamp_column)
        assert isinstance(source, FileSource)
        sources.append(source)
        return source

    yield make
    for source in sources:
        source.close()


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def rows(events: list[tuple[int, datetime]] = EVENTS) -> list[dict[str, Any]]:
    return [{"id": i, "ts": iso(t), "score": i / 10, "group": "a" if i % 2 else "b"} for i, t in events]


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def written_at(path: Path, moment: datetime = END + timedelta(minutes=1)) -> Path:
    """Give ``path`` the modification time of a file last appended to at ``moment``."""
    os.utime(path, (moment.timestamp(), moment.timestamp()))
    return path


def write(path: Path, data: bytes, moment: datetime = END + timedelta(minutes=1)) -> Path:
    path.write_bytes(data)
    return written_at(path, moment)


def ids(frame: pd.DataFrame) -> list[int]:
    return sorted(int(i) for i in frame["id"])


# -- formats ------------------------------------------------------------------------------------------


def test_jsonl_window_is_half_open_with_utc_timestamps(tmp_path: Path, make_source: MakeSource) -> None:
    write(tmp_path / "predictions.jsonl", jsonl(rows()))
    batch = make_source(tmp_path / "predictions.jsonl").read(START, END)
    assert ids(batch.frame) == IN_WINDOW and not batch.rejected
    assert str(batch.frame["ts"].dt.tz) == "UTC" and batch.frame["ts"].min() == pd.Timestamp(START)
    assert batch.frame.set_index("id").loc[4, "score"] == pytest.approx(0.4)


def test_jsonl_epoch_seconds_and_bad_timestamps(tmp_path: Path, make_source: MakeSource) -> None:
    records = [{"id": i, "ts": t.timestamp()} for i, t in EVENTS] + [{"id": 99, "ts": "yesterday"}]
    write(tmp_path / "p.ndjson", jsonl(records))
    batch = make_source(tmp_path / "p.ndjson").read(START, END)
    assert ids(batch.frame) == IN_WINDOW
    assert batch.rejected == {"timestamp_invalid": 1}


def test_csv(tmp_path: Path, make_source: MakeSource) -> None:
    pd.DataFrame(rows()).to_csv(tmp_path / "p.csv", index=False)
    written_at(tmp_path / "p.csv")
    batch = make_source(tmp_path / "p.csv").read(START, END)
    assert ids(batch.frame) == IN_WINDOW and batch.frame["group"].tolist() == ["a", "b", "a"]


def test_parquet(tmp_path: Path, make_source: MakeSource) -> None:
    frame = pd.DataFrame(
        {"id": [i for i, _ in EVENTS], "ts": pd.to_datetime([t for _, t in EVENTS], utc=True)}
    )
    frame.to_parquet(tmp_path / "p.parquet")
    written_at(tmp_path / "p.parquet")
    assert ids(make_source(tmp_path / "p.parquet").read(START, END).frame) == IN_WINDOW


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_gzip_with_appended_members_and_a_torn_tail(
    tmp_path: Path, make_source: MakeSource, fmt: str
) -> None:
    """Appending writers add one gzip member per flush; the last may still be incomplete."""
    records = rows()
    if fmt == "jsonl":
        first, second = jsonl(records[:4]), jsonl(records[4:])
    else:
        text = pd.DataFrame(records).to_csv(index=False).encode()
        lines = text.splitlines(keepends=True)
        first, second = b"".join(lines[:5]), b"".join(lines[5:])
    complete = gzip.compress(first) + gzip.compress(second)
    path = write(tmp_path / f"p.{fmt}.gz", complete)
    assert ids(make_source(tmp_path / f"p.{fmt}.gz").read(START, END).frame) == IN_WINDOW

    torn = gzip.compress(first) + gzip.compress(second)[:-12]  # second member lacks its end
    write(path, torn)
    batch = make_source(path).read(START, END)
    assert set(ids(batch.frame)) <= set(IN_WINDOW) and {3, 4} <= set(ids(batch.frame))


def test_format_from_config_and_unknown_extension(tmp_path: Path, make_source: MakeSource) -> None:
    write(tmp_path / "predictions.log", jsonl(rows()))
    with pytest.raises(SourceError, match="set `format:`"):
        make_source(tmp_path / "predictions.log").read(START, END)
    assert ids(make_source(tmp_path / "predictions.log", format="jsonl").read(START, END).frame) == IN_WINDOW


# -- a live writer -------------------------------------------------------------------------------------


def test_torn_last_line_is_rejected_then_read_once_complete(tmp_path: Path, make_source: MakeSource) -> None:
    path = tmp_path / "predictions.jsonl"
    last = json.dumps({"id": 9, "ts": iso(START + timedelta(minutes=59)), "score": 0.9}).encode()
    write(path, jsonl(rows()) + last[:20])  # the writer is mid-append
    source = make_source(path)
    batch = source.read(START, END)
    assert ids(batch.frame) == IN_WINDOW and batch.rejected == {"line_invalid": 1}

    write(path, jsonl(rows()) + last + b"\n")
    batch = source.read(START, END)
    assert ids(batch.frame) == [*IN_WINDOW, 9] and not batch.rejected


def test_malformed_lines_are_counted(tmp_path: Path, make_source: MakeSource) -> None:
    lines = jsonl(rows()).splitlines(keepends=True)
    data = b"".join(lines[:3]) + b"{not json\n" + b"[1, 2]\n" + b"\n" + b"\xff\xfe\n" + b"".join(lines[3:])
    write(tmp_path / "p.jsonl", data)
    batch = make_source(tmp_path / "p.jsonl").read(START, END)
    assert ids(batch.frame) == IN_WINDOW and batch.rejected == {"line_invalid": 3}


def test_csv_torn_and_overlong_rows(tmp_path: Path, make_source: MakeSource) -> None:
    text = pd.DataFrame(rows()).to_csv(index=False)
    lines = text.splitlines(keepends=True)
    data = (
        "".join(lines[:4])
        + "42,2026-11-22T03:10:00Z,0.1,a,EXTRA\n"
        + "".join(lines[4:])
        + "8,2026-11-22T03:2"
    )
    write(tmp_path / "p.csv", data.encode())
    batch = make_source(tmp_path / "p.csv").read(START, END)
    assert ids(batch.frame) == IN_WINDOW and batch.rejected == {"line_invalid": 2}


def test_glob_across_rotated_files(tmp_path: Path, make_source: MakeSource) -> None:
    """The writer renames predictions.jsonl to predictions-<n>.jsonl and starts a new one."""
    records = rows()
    write(tmp_path / "predictions-1.jsonl", jsonl(records[:2]), START - timedelta(minutes=1))
    current = write(tmp_path / "predictions.jsonl", jsonl(records[2:4]))
    source = make_source(tmp_path / "predictions*.jsonl")
    assert ids(source.read(START, END).frame) == [3, 4]

    current.rename(tmp_path / "predictions-2.jsonl")  # rotation
    write(tmp_path / "predictions.jsonl", jsonl(records[4:]))
    batch = source.read(START, END)
    assert ids(batch.frame) == IN_WINDOW  # every row once, whatever the file is called now
    assert source.last_scan.files_read == 3


def test_file_vanishing_before_it_is_opened_is_skipped(tmp_path: Path, make_source: MakeSource) -> None:
    write(tmp_path / "predictions-1.jsonl", jsonl(rows()))
    (tmp_path / "predictions-0.jsonl").symlink_to(
        tmp_path / "rotated-away.jsonl"
    )  # matches, cannot be opened
    source = make_source(tmp_path / "predictions-*.jsonl")
    assert ids(source.read(START, END).frame) == IN_WINDOW
    assert source.last_scan.files_vanished == 1 and source.last_scan.files_read == 1


def test_a_file_linked_twice_is_read_once(tmp_path: Path, make_source: MakeSource) -> None:
    write(tmp_path / "predictions-1.jsonl", jsonl(rows()))
    os.link(tmp_path / "predictions-1.jsonl", tmp_path / "predictions-2.jsonl")
    assert ids(make_source(tmp_path / "predictions-*.jsonl").read(START, END).frame) == IN_WINDOW


def test_empty_directory_is_an_empty_window_but_missing_directory_fails(
    tmp_path: Path, make_source: MakeSource
) -> None:
    for path in (tmp_path / "predictions-*.jsonl", tmp_path / "predictions.jsonl"):
        batch = make_source(path).read(START, END)
        assert batch.frame.empty and "ts" in batch.frame.columns and not batch.rejected
    write(tmp_path / "predictions.jsonl", b'{"id": 1, "ts": "2026-11-22T03:0')  # only a torn line so far
    batch = make_source(tmp_path / "predictions.jsonl").read(START, END)
    assert batch.frame.empty and batch.rejected == {"line_invalid": 1}
    with pytest.raises(SourceError, match="does not exist"):
        make_source(tmp_path / "missing" / "predictions-*.jsonl").read(START, END)


def test_label_files_are_read_whole(tmp_path: Path, make_source: MakeSource) -> None:
    write(tmp_path / "labels.csv", b"id,label\n1,0\n2,1\n", START - timedelta(days=30))
    batch = make_source(tmp_path / "labels.csv", timestamp_column=None).read(START, END)
    assert batch.frame.to_dict("list") == {"id": [1, 2], "label": [0, 1]}


# -- reading only what the window needs ----------------------------------------------------------------


def test_files_last_written_before_the_window_are_not_opened(tmp_path: Path, make_source: MakeSource) -> None:
    # Garbage that would fail the read if it were parsed at all.
    old = write(tmp_path / "predictions-0.parquet", b"not parquet", START - timedelta(minutes=6))
    frame = pd.DataFrame(
        {"id": [3, 4], "ts": pd.to_datetime([START, START + timedelta(minutes=1)], utc=True)}
    )
    frame.to_parquet(tmp_path / "predictions-1.parquet")
    written_at(tmp_path / "predictions-1.parquet")
    source = make_source(tmp_path / "predictions-*.parquet")
    assert ids(source.read(START, END).frame) == [3, 4]
    assert (source.last_scan.files_pruned, source.last_scan.files_read) == (1, 1)

    written_at(old, START - timedelta(minutes=4))  # within the grace: it must be read, and it is garbage
    batch = source.read(START, END)  # skipped and named (tests/faults/test_files.py), the rest read
    assert batch.skipped_files == (str(old),) and ids(batch.frame) == [3, 4]


def epoch_seconds(ts: pd.Series) -> pd.Series:
    return (ts - pd.Timestamp("1970-01-01", tz="UTC")).dt.total_seconds()


PARQUET_TIMESTAMPS: dict[str, Callable[[pd.Series], Any]] = {
    "timestamp-us-utc": lambda ts: pa.array(ts, type=pa.timestamp("us", tz="UTC")),
    "timestamp-ms-naive": lambda ts: pa.array(ts.dt.tz_localize(None), type=pa.timestamp("ms")),
    "timestamp-ns-berlin": lambda ts: pa.array(
        ts.dt.tz_convert("Europe/Berlin"), type=pa.timestamp("ns", "Europe/Berlin")
    ),
    "int64-epoch": lambda ts: pa.array(epoch_seconds(ts).astype("int64")),
    "float64-epoch": lambda ts: pa.array(epoch_seconds(ts)),
    "iso-text": lambda ts: pa.array(ts.dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")),
}


@pytest.mark.parametrize("kind", PARQUET_TIMESTAMPS)
def test_parquet_reads_only_row_groups_of_the_window(
    tmp_path: Path, make_source: MakeSource, kind: str
) -> None:
    rng = np.random.default_rng(3)
    n = 20_000
    # Ten hours in event-time order, a little jitter, whole seconds so epoch ints are exact.
    seconds = np.sort(rng.integers(0, 10 * 3600, n))
    first = int((START - timedelta(hours=4)).timestamp())
    ts = pd.Series(pd.to_datetime(first + seconds, unit="s", utc=True))
    stored = PARQUET_TIMESTAMPS[kind](ts)
    last_five = pa.array(np.arange(n) >= n - 5)
    stored = pc.if_else(last_five, pa.nulls(n, stored.type), stored)  # the writer lost some timestamps
    table = pa.table({"id": np.arange(n), "ts": stored, "score": rng.random(n)})
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=1000)
    written_at(tmp_path / "p.parquet")

    source = make_source(tmp_path / "p.parquet")
    batch = source.read(START, END)
    expected = np.flatnonzero(((ts >= START) & (ts < END)).to_numpy()[:-5])
    assert ids(batch.frame) == expected.tolist()
    assert batch.rejected == {"timestamp_invalid": 5}  # nulls are kept for counting, not silently dropped
    scan = source.last_scan
    assert scan.row_groups_total == 20
    if kind == "iso-text":
        assert scan.row_groups_read == 20  # no statistics-based pruning on text: filtered in pandas
    else:
        assert scan.row_groups_read <= 4  # one hour of ten, plus the row group holding the nulls
