"""File sources under a live writer: a half-written or corrupt Parquet file is skipped and counted,
the others are read, and the file is read as soon as it is whole; a scan is bounded by
``source.timeout``."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from monitor.core.errors import SourceError
from tests.monitor.test_source_files import END, EVENTS, IN_WINDOW, START, MakeSource, ids, written_at


def _parquet(path: Path, events: list[tuple[int, object]]) -> Path:
    frame = pd.DataFrame(
        {"id": [i for i, _ in events], "ts": pd.to_datetime([t for _, t in events], utc=True)}
    )
    frame.to_parquet(path)
    return written_at(path)


def test_a_half_written_parquet_file_is_skipped_counted_and_read_once_whole(
    tmp_path: Path, make_source: MakeSource, caplog: pytest.LogCaptureFixture
) -> None:
    _parquet(tmp_path / "p-1.parquet", EVENTS)
    later = [(100 + i, t + timedelta(seconds=1)) for i, t in EVENTS]
    whole = _parquet(tmp_path / "p-2.parquet", later).read_bytes()
    (tmp_path / "p-2.parquet").write_bytes(whole[: len(whole) // 2])  # the writer is half way through
    written_at(tmp_path / "p-2.parquet")
    source = make_source(tmp_path / "*.parquet")

    with caplog.at_level(logging.INFO, logger="monitor"):
        for _ in range(2):
            batch = source.read(START, END)
            assert ids(batch.frame) == IN_WINDOW  # the whole file's rows, none lost to its neighbour
            assert batch.skipped_files == (str(tmp_path / "p-2.parquet"),)
            assert source.last_scan.files_skipped == 1
        (tmp_path / "p-2.parquet").write_bytes(whole)  # the writer finished
        written_at(tmp_path / "p-2.parquet")
        batch = source.read(START, END)
    assert ids(batch.frame) == IN_WINDOW + [i for i, t in later if START <= t < END]
    assert batch.skipped_files == ()
    messages = [r.getMessage() for r in caplog.records]
    assert sum("skipping" in m and "p-2.parquet" in m for m in messages) == 1  # once per streak
    assert sum("can be read again" in m for m in messages) == 1


def test_a_source_whose_every_file_is_unreadable_is_down(tmp_path: Path, make_source: MakeSource) -> None:
    (tmp_path / "p-1.parquet").write_bytes(b"PAR1 not really Parquet")
    written_at(tmp_path / "p-1.parquet")
    with pytest.raises(SourceError, match="none of its 1 file"):
        make_source(tmp_path / "*.parquet").read(START, END)


def test_a_scan_longer_than_the_timeout_is_a_source_failure(tmp_path: Path, make_source: MakeSource) -> None:
    for n in range(20):
        _parquet(tmp_path / f"p-{n:02d}.parquet", EVENTS)
    source = make_source(tmp_path / "*.parquet", timeout="1ms")  # less than reading one file takes
    with pytest.raises(SourceError, match=r"longer than source.timeout \(0.001 s\) after 1 file"):
        source.read(START, END)
