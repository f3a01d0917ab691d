"""Parquet log files counted by DuckDB give exactly what reading every row gives."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from monitor.evaluation import build_evaluators
from monitor.sources import file_counts
from tests.monitor.test_counts import NOW, comparable, config, dirty_log


def write_parquet(folder: Path, frame: pd.DataFrame, parts: int = 3) -> str:
    """The log as ``parts`` rotated Parquet files (several row groups each)."""
    folder.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, len(frame), parts + 1).astype(int)
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        part = frame.iloc[lo:hi]
        pq.write_table(
            pa.Table.from_pandas(part, preserve_index=False), folder / f"log-{i}.parquet", row_group_size=400
        )
    return str(folder / "log-*.parquet")


def evaluate(path: str, *, aggregate: bool, task: str = "binary") -> tuple[Any, int]:
    """One evaluation, and how many times DuckDB was asked to count (a failed count is -1: a count
    that fails and falls back to the row path must not pass for a count)."""
    calls = []
    original = file_counts.count_parquet

    def spy(*args: Any, **kwargs: Any) -> Any:
        try:
            counted = original(*args, **kwargs)
        except Exception:
            calls.append(-1)
            raise
        calls.append(1)
        return counted

    evaluator = build_evaluators(config({"kind": "files", "path": path}, aggregate=aggregate, task=task))[
        "tox"
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("monitor.sources.files.count_parquet", spy)
        result = evaluator.evaluate(NOW)
    return result, sum(calls)


@pytest.mark.parametrize("task", ["binary", "multiclass"])
@pytest.mark.parametrize("zone", ["UTC", None])
def test_parquet_counts_equal_rows(tmp_path: Path, task: str, zone: str | None) -> None:
    frame = dirty_log()
    frame.loc[frame.index % 101 == 3, "ts"] = pd.NaT  # timestamps nothing can read: rejected either way
    if zone is None:
        frame["ts"] = frame["ts"].dt.tz_localize(None)  # naive: UTC wall time
    path = write_parquet(tmp_path / "logs", frame)
    counted, duckdb_calls = evaluate(path, aggregate=True, task=task)
    rows, no_calls = evaluate(path, aggregate=False, task=task)
    assert (duckdb_calls, no_calls) == (1, 0)
    assert comparable(counted) == comparable(rows)
    assert counted.rejected["timestamp_invalid"] > 0
    assert any(not math.isnan(v.value) for v in counted.windows[1].values)


def test_epoch_timestamps_in_parquet_are_read_as_rows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    frame = dirty_log()
    frame["ts"] = frame["ts"].astype("int64") // 10**9
    path = write_parquet(tmp_path / "logs", frame)
    with caplog.at_level("INFO", logger="fairwatch"):
        counted, _ = evaluate(path, aggregate=True)
    rows, _ = evaluate(path, aggregate=False)
    assert comparable(counted) == comparable(rows)
    assert "reading rows, not counts: timestamps stored as int64" in caplog.text


def test_a_half_written_file_sends_the_window_to_the_row_path(tmp_path: Path) -> None:
    """DuckDB cannot read a Parquet file without its footer: the row path skips and names it."""
    path = write_parquet(tmp_path / "logs", dirty_log())
    torn = tmp_path / "logs" / "log-9.parquet"
    torn.write_bytes((tmp_path / "logs" / "log-0.parquet").read_bytes()[:500])
    counted, calls = evaluate(path, aggregate=True)
    assert calls == -1 and counted.skipped_files == (str(torn),)
    assert counted.windows[1].values
