"""``kind: spark`` against a real Spark (``local[2]``, Java 17): its counts equal the row path's.

The reference is the row path of a files source reading the same Parquet files with pyarrow
(``aggregate: false``), itself pinned to hand computations elsewhere. One Spark session serves the
module (a JVM start takes seconds); a Spark Connect service runs in the same JVM for the
``remote:`` test, whose client runs in a subprocess (pyspark is classic or Connect per process).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

import monitor.sources.spark.source as spark_module
from monitor.cli.preflight import check_sources
from monitor.config import SourceConfig, load_settings, settings_from_dict
from monitor.core.errors import ConfigError, SourceError
from monitor.evaluation.evaluators import build_evaluators
from monitor.evaluation.results import ModelEvaluation
from monitor.sources.contract import CountRequest
from monitor.sources.spark.source import SparkSource
from tests.monitor.test_counts import NOW, comparable, config, dirty_log
from tests.monitor.test_score_decimals import continuous, with_decimals
from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
CONNECT_PORT = free_port()

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
        .config("spark.connect.grpc.binding.address", "127.0.0.1")
        .config("spark.connect.grpc.binding.port", str(CONNECT_PORT))
        .config("spark.connect.authenticate.token", "s3cr3t")  # what the remote URL's token must be
        .getOrCreate()
    )
    yield session
    session.stop()
    if zone is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = zone
    time.tzset()


@pytest.fixture
def endless_log(spark: Any) -> str:
    """A global view (every session of the context sees it) whose scan takes minutes."""
    from pyspark.sql import functions as F

    seconds = F.lit(NOW.timestamp()) - F.col("id") % 3600  # not foldable: each row is computed
    spark.range(4 * 10**9).select(
        F.timestamp_seconds(seconds).alias("ts"), F.sqrt("id").alias("score")
    ).createOrReplaceGlobalTempView("endless_log")
    return "global_temp.endless_log"


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


def evaluate(
    source: dict[str, Any], *, aggregate: bool, task: str = "binary", decimals: int | None = None
) -> ModelEvaluation:
    settings = with_decimals(config(source, aggregate=aggregate, task=task), decimals)
    evaluator = build_evaluators(settings)["tox"]
    try:
        return evaluator.evaluate(NOW)
    finally:
        evaluator.source.close()


def rows_reference(folder: str, task: str, decimals: int | None = None) -> ModelEvaluation:
    return evaluate(
        {"kind": "files", "path": f"{folder}/*.parquet"}, aggregate=False, task=task, decimals=decimals
    )


def counted_by_spark(
    source: dict[str, Any], task: str, monkeypatch: pytest.MonkeyPatch, decimals: int | None = None
) -> ModelEvaluation:
    """The evaluation, failing if Spark did not count (a fall-back to rows must not pass for a count)."""
    counted: list[bool] = []
    original = SparkSource.read_counts

    def spy(self: SparkSource, *args: Any) -> Any:
        batch = original(self, *args)
        counted.append(batch is not None)
        return batch

    monkeypatch.setattr(SparkSource, "read_counts", spy)
    result = evaluate(source, aggregate=True, task=task, decimals=decimals)
    assert counted == [True]
    return result


@pytest.mark.parametrize("task", ["binary", "multiclass"])
@pytest.mark.parametrize("zone", ["UTC", None])
def test_spark_counts_a_parquet_path_like_the_row_path(
    spark: Any,
    tmp_path: Path,
    task: str,
    zone: str | None,
    monkeypatch: pytest.MonkeyPatch,
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
    """... with continuous scores rounded to ``score_decimals`` by Spark, as numpy rounds the rows."""
    frame = continuous(on_the_bounds(dirty_log(1500)))
    frame["ts"] = frame["ts"].astype("int64") / 1e9  # epoch seconds (fractions) as DOUBLE
    folder = parquet_log(tmp_path / "log", frame)
    spark.read.parquet(folder).write.saveAsTable("epoch_log")
    result = counted_by_spark({"kind": "spark", "table": "epoch_log"}, "binary", monkeypatch, decimals=2)
    assert comparable(result) == comparable(rows_reference(folder, "binary", decimals=2))


def test_text_timestamps_and_aggregate_false_are_read_as_rows(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame = dirty_log(800)
    weeks_ago = frame.index % 4 == 0  # ISO text days outside every window: Spark does not return them
    frame.loc[weeks_ago, "ts"] -= timedelta(days=20)
    text = frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    local = frame["ts"].dt.tz_convert("Asia/Kolkata").dt.strftime("%Y-%m-%d %H:%M:%S%z")  # +05:30
    text = text.where(frame.index % 5 != 1, local)
    epoch = frame["ts"].astype("int64").floordiv(10**6).div(1000).map(repr)  # epoch seconds as text
    text = text.where(frame.index % 7 != 2, epoch)
    text = text.where(frame.index % 31 != 3, "soon")  # unreadable: rejected
    frame["ts"] = text
    folder = parquet_log(tmp_path / "log", frame)
    fetched: list[int] = []
    to_pandas = spark_module._pandas

    def counting(frame: Any) -> Any:
        out = to_pandas(frame)
        fetched.append(len(out))
        return out

    monkeypatch.setattr(spark_module, "_pandas", counting)
    with caplog.at_level("INFO", logger="monitor"):
        counted = evaluate({"kind": "spark", "path": folder}, aggregate=True)
    assert "reading rows, not counts: timestamps stored as StringType" in caplog.text
    rows = evaluate({"kind": "spark", "path": folder}, aggregate=False)
    reference = rows_reference(folder, "binary")
    assert comparable(counted) == comparable(rows) == comparable(reference)
    assert reference.rejected["timestamp_invalid"] > 0
    # epoch text and unreadable text come back for the row path; ISO text of other days does not,
    # nor do the rows of the log's other model
    far_iso = weeks_ago & (frame.index % 7 != 2) & (frame.index % 31 != 3)
    ours = frame["model"] == "tox"
    assert fetched == [int((ours & ~far_iso).sum())] * 2


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
    with pytest.raises(SourceError, match=r"cannot read spark .*\[PATH_NOT_FOUND\] Path does not exist"):
        source.read(NOW - timedelta(hours=1), NOW)


def test_validate_connect_opens_a_spark_path_and_names_what_is_missing(spark: Any, tmp_path: Path) -> None:
    folder = parquet_log(tmp_path / "log", dirty_log(200).rename(columns={"score": "scores"}))
    (check,) = check_sources(config({"kind": "spark", "path": folder}, aggregate=True))
    assert "score" not in check.columns and "scores" in check.columns and "ts" in check.columns
    (problem,) = check.problems
    assert problem.startswith("models[0].columns.score: no column `score` in spark (master local[2]) path ")
    assert problem.endswith("(did you mean `scores`?)")
    (missing,) = check_sources(config({"kind": "spark", "path": str(tmp_path / "nothing")}, aggregate=True))
    (problem,) = missing.problems
    assert problem.startswith("models[0].source.path: cannot read spark") and "PATH_NOT_FOUND" in problem


def test_a_stuck_job_is_cancelled_after_source_timeout(spark: Any, endless_log: str) -> None:
    source = SparkSource(
        SourceConfig.model_validate({"kind": "spark", "table": endless_log, "timeout": "1s"}),
        timestamp_column="ts",
    )
    window = (NOW - timedelta(minutes=30), NOW)
    with pytest.raises(SourceError, match=r"cancelled after source.timeout \(1 s\)"):
        source.count_ranges(CountRequest("ts", ("score",), (), (window,)), *window)
    tracker = spark.sparkContext.statusTracker()
    for _ in range(300):  # the cluster stops too (the job group is cancelled, not abandoned)
        if not tracker.getActiveJobsIds():
            break
        time.sleep(0.1)
    assert tracker.getActiveJobsIds() == []


CONNECT_CLIENT = """
import sys
from monitor.config import SourceConfig
from monitor.core.errors import SourceError
from monitor.sources.spark.source import SparkSource
from tests.monitor.test_counts import NOW, comparable
from tests.monitor.test_spark_source import counted_by_spark_connect

remote, folder, endless, unreachable = sys.argv[1:]
print(repr(comparable(counted_by_spark_connect({"kind": "spark", "path": folder, "remote": remote}))))
for url, table in ((remote, endless), (unreachable, endless)):
    source = SparkSource(
        SourceConfig.model_validate({"kind": "spark", "table": table, "remote": url, "timeout": "1s"}),
        timestamp_column="ts",
    )
    try:
        source.read(NOW, NOW)
        print("read")
    except SourceError as exc:
        print(exc)
    source.close()
"""


def counted_by_spark_connect(source: dict[str, Any]) -> ModelEvaluation:
    """In the Connect client's process: the evaluation, failing if Spark did not count."""
    evaluator = build_evaluators(config(source, aggregate=True))["tox"]
    assert isinstance(evaluator.source, SparkSource)
    counts = evaluator.source.read_counts
    counted: list[bool] = []

    def spy(*args: Any) -> Any:
        batch = counts(*args)
        counted.append(batch is not None)
        return batch

    setattr(evaluator.source, "read_counts", spy)  # noqa: B010  (an instance's method, for this run)
    try:
        return evaluator.evaluate(NOW)
    finally:
        evaluator.source.close()
        assert counted == [True]


def test_spark_connect_counts_like_the_row_path_and_is_bounded(
    spark: Any, tmp_path: Path, endless_log: str
) -> None:
    """``remote:``: a Connect service in the module's JVM, the client in a fresh process."""
    service = spark.sparkContext._jvm.org.apache.spark.sql.connect.service.SparkConnectService
    service.start(spark.sparkContext._jsc.sc())
    frame = on_the_bounds(dirty_log(1500))
    folder = parquet_log(tmp_path / "log", frame)
    remote = f"sc://localhost:{CONNECT_PORT}/;token=s3cr3t"  # localhost: a token without TLS
    unreachable = f"sc://localhost:{free_port()}/;token=s3cr3t"
    try:
        out = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", CONNECT_CLIENT, remote, folder, endless_log, unreachable],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,  # an unbounded retry of the unreachable server would take ten minutes
            check=False,
        )
    finally:
        service.stop(
            spark.sparkContext._jvm.scala.Option.empty(), spark.sparkContext._jvm.scala.Option.empty()
        )
    assert out.returncode == 0, out.stderr[-3000:]
    counted, cancelled, refused = out.stdout.strip().splitlines()[-3:]
    assert counted == repr(comparable(rows_reference(folder, "binary")))
    assert cancelled.endswith("cancelled after source.timeout (1 s)")
    assert refused.startswith(f"cannot read spark (remote {unreachable.replace('s3cr3t', '***')})"), refused
    assert "failed to connect" in refused  # gRPC's status, not pyspark's wrapper's repr
    assert "s3cr3t" not in out.stdout


def test_spark_config_is_checked_and_secrets_masked() -> None:
    def error(source: dict[str, Any]) -> str:
        with pytest.raises(ValidationError) as info:
            SourceConfig.model_validate(source)
        return str(info.value)

    assert "exactly one of `table` or `path`" in error({"kind": "spark"})
    assert "`master` or `remote`" in error(
        {"kind": "spark", "table": "t", "master": "local[2]", "remote": "sc://h"}
    )
    assert "`remote` is a Spark Connect URL" in error({"kind": "spark", "table": "t", "remote": "http://h"})
    assert "`format: csv`" in error({"kind": "spark", "path": "/logs", "format": "csv"})
    assert "`query` is not read by a spark source" in error({"kind": "spark", "path": "/l", "query": "x"})
    assert "`table: db.name`" in error({"kind": "spark", "table": "t", "schema": "db"})
    assert "`conf.spark.sql.session.timeZone` cannot be set" in error(
        {"kind": "spark", "table": "t", "conf": {"spark.sql.session.timeZone": "Europe/Paris"}}
    )
    assert "`master` is a spark source's key" in error({"kind": "files", "path": "/l", "master": "local"})
    assert "`conf` is a spark source's key" in error(
        {"kind": "sql", "url": "sqlite://", "table": "t", "conf": {"a": 1}}
    )
    conf = {
        "spark.sql.shuffle.partitions": 8,
        "spark.sql.adaptive.enabled": False,
        "spark.driver.memory": "2g",
    }
    parsed = SourceConfig.model_validate({"kind": "spark", "table": "t", "conf": conf})
    assert parsed.conf == {
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.adaptive.enabled": "false",
        "spark.driver.memory": "2g",
    }
    remote = SourceConfig.model_validate(
        {"kind": "spark", "table": "t", "remote": "sc://h:15002/;token=s3cr3t"}
    )
    described = SparkSource(remote, timestamp_column="ts").describe()
    assert "s3cr3t" not in described and "sc://h:15002/;token=***" in described


def spark_model(name: str, source: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "source": {"kind": "spark", **source}, "groups": []}


def test_one_config_runs_one_kind_of_spark_and_masks_its_secrets(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"models\[1\]\.source\.master: local\[4\] differs from models\[0\]"
    ):
        settings_from_dict(
            {
                "models": [
                    spark_model("a", {"table": "a"}),
                    spark_model("b", {"table": "b", "master": "local[4]"}),
                ]
            }
        )
    with pytest.raises(ConfigError, match=r"models\[1\]\.source: spark sources of one config use `remote`"):
        settings_from_dict(
            {
                "models": [
                    spark_model("a", {"table": "a"}),
                    spark_model("b", {"table": "b", "remote": "sc://h"}),
                ]
            }
        )
    settings = settings_from_dict(
        {
            "models": [
                spark_model("a", {"table": "a", "remote": "sc://h/;token=tok1"}),
                spark_model(
                    "b", {"table": "b", "remote": "sc://g", "conf": {"spark.hadoop.fs.s3a.secret.key": "k3y"}}
                ),
            ]
        }
    )
    assert set(settings.secrets()) == {"tok1", "k3y"}
    # a URI path is the cluster's, not a file beside the config
    (tmp_path / "fairwatch.yaml").write_text(
        "models:\n  - name: a\n    source: {kind: spark, path: 's3a://logs/predictions/'}\n    groups: []\n"
    )
    assert load_settings(tmp_path / "fairwatch.yaml").models[0].source.path == "s3a://logs/predictions/"
