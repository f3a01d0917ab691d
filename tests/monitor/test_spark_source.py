"""``kind: spark`` against a real Spark (``local[2]``, Java 17): its counts equal the row path's.

The reference is the row path of a files source reading the same Parquet files with pyarrow
(``aggregate: false``), itself pinned to hand computations elsewhere. One Spark session serves the
module (a JVM start takes seconds).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

from monitor.config import SourceConfig
from monitor.errors import SourceError
from monitor.evaluation import build_evaluators
from monitor.results import ModelEvaluation
from monitor.sources.counts import CountRequest
from monitor.sources.spark import SparkSource
from tests.monitor.test_counts import NOW, comparable, config, dirty_log

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The session, with this process in a zone far from UTC: a bound that went through local time
    (py4j reads a naive datetime as local) would be hours off (found by review)."""
    from pyspark.sql import SparkSession

    zone = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Kolkata"
    time.tzset()
    warehouse = tmp_path_factory.mktemp("warehouse")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("fairwatch-tests")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .getOrCreate()
    )
    yield session
    session.stop()
    if zone is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = zone
    time.tzset()


def on_the_bounds(frame: Any) -> Any:
    """Rows exactly on the windows' bounds (1h and 6h windows, labels 2h late): half-open ranges."""
    bounds = [NOW - timedelta(hours=h) for h in (1, 2, 3, 6, 8)]
    for i, bound in enumerate(bounds):
        frame.loc[frame.index[i * 40 : i * 40 + 8], "ts"] = bound
    return frame


def parquet_log(folder: Path, frame: Any) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    # Spark reads Parquet timestamps to the microsecond (pandas' nanoseconds it refuses)
    pq.write_table(table, folder / "log.parquet", row_group_size=500, coerce_timestamps="us")
    return str(folder)


def evaluate(source: dict[str, Any], *, aggregate: bool, task: str = "binary") -> ModelEvaluation:
    evaluator = build_evaluators(config(source, aggregate=aggregate, task=task))["tox"]
    try:
        return evaluator.evaluate(NOW)
    finally:
        evaluator.source.close()


def rows_reference(folder: str, task: str) -> ModelEvaluation:
    return evaluate({"kind": "files", "path": f"{folder}/*.parquet"}, aggregate=False, task=task)


def counted_by_spark(source: dict[str, Any], task: str, monkeypatch: pytest.MonkeyPatch) -> ModelEvaluation:
    """The evaluation, failing if Spark did not count (a fall-back to rows must not pass for a count)."""
    counted: list[bool] = []
    original = SparkSource.read_counts

    def spy(self: SparkSource, *args: Any) -> Any:
        batch = original(self, *args)
        counted.append(batch is not None)
        return batch

    monkeypatch.setattr(SparkSource, "read_counts", spy)
    result = evaluate(source, aggregate=True, task=task)
    assert counted == [True]
    return result


@pytest.mark.parametrize("task", ["binary", "multiclass"])
@pytest.mark.parametrize("zone", ["UTC", None])
def test_spark_counts_a_parquet_path_like_the_row_path(
    spark: Any, tmp_path: Path, task: str, zone: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame = on_the_bounds(dirty_log(1500))
    frame.loc[frame.index % 101 == 3, "ts"] = None  # no timestamp: rejected either way
    if zone is None:
        frame["ts"] = frame["ts"].dt.tz_localize(None)  # naive: UTC wall time (Spark: TIMESTAMP_NTZ)
    folder = parquet_log(tmp_path / "log", frame)
    result = counted_by_spark({"kind": "spark", "path": folder}, task, monkeypatch)
    assert comparable(result) == comparable(rows_reference(folder, task))
    assert result.rejected["timestamp_invalid"] > 0
    assert any(not math.isnan(v.value) for v in result.windows[1].values)


def test_spark_counts_a_catalog_table_and_epoch_seconds(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame = on_the_bounds(dirty_log(1500))
    frame["ts"] = frame["ts"].astype("int64") / 1e9  # epoch seconds (fractions) as DOUBLE
    folder = parquet_log(tmp_path / "log", frame)
    spark.read.parquet(folder).write.saveAsTable("epoch_log")
    result = counted_by_spark({"kind": "spark", "table": "epoch_log"}, "binary", monkeypatch)
    assert comparable(result) == comparable(rows_reference(folder, "binary"))


def test_text_timestamps_and_aggregate_false_are_read_as_rows(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    frame = dirty_log(800)
    frame["ts"] = frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    folder = parquet_log(tmp_path / "log", frame)
    with caplog.at_level("INFO", logger="fairwatch"):
        counted = evaluate({"kind": "spark", "path": folder}, aggregate=True)
    assert "reading rows, not counts: timestamps stored as StringType" in caplog.text
    rows = evaluate({"kind": "spark", "path": folder}, aggregate=False)
    assert comparable(counted) == comparable(rows) == comparable(rows_reference(folder, "binary"))


def test_count_ranges_counts_rows_per_range(spark: Any, tmp_path: Path) -> None:
    frame = dirty_log(1000)
    folder = parquet_log(tmp_path / "log", frame)
    source = SparkSource(
        SourceConfig.model_validate({"kind": "spark", "path": folder}), timestamp_column="ts"
    )
    ranges = ((NOW - timedelta(hours=6), NOW - timedelta(hours=2)), (NOW - timedelta(hours=2), NOW))
    totals = source.count_ranges(CountRequest("ts", (), (), ranges), NOW - timedelta(hours=6), NOW)
    expected = tuple(int(((frame["ts"] >= lo) & (frame["ts"] < hi)).sum()) for lo, hi in ranges)
    assert totals == expected and sum(expected) > 0


def test_a_missing_path_is_a_source_error(spark: Any, tmp_path: Path) -> None:
    source = SparkSource(
        SourceConfig.model_validate({"kind": "spark", "path": str(tmp_path / "nothing")}),
        timestamp_column="ts",
    )
    with pytest.raises(SourceError, match="cannot read spark"):
        source.read(NOW - timedelta(hours=1), NOW)


def test_spark_config_is_checked_and_secrets_masked() -> None:
    with pytest.raises(ValidationError, match="exactly one of `table` or `path`"):
        SourceConfig.model_validate({"kind": "spark"})
    with pytest.raises(ValidationError, match="`master` or `remote`"):
        SourceConfig.model_validate({"kind": "spark", "table": "t", "master": "local[2]", "remote": "sc://h"})
    remote = SourceConfig.model_validate(
        {"kind": "spark", "table": "t", "remote": "sc://h:15002/;token=s3cr3t"}
    )
    assert "s3cr3t" not in SparkSource(remote, timestamp_column="ts").describe()
