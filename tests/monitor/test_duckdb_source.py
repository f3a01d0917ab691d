"""A DuckDB database file as a ``kind: sql`` source (``duckdb:///log.duckdb``, through duckdb-engine).

The reference is the row path, as for SQLite and PostgreSQL (``test_counts.py``): the same dirty
log, written to a DuckDB file, evaluated counted (one ``GROUP BY`` run by DuckDB, its combinations
back as Arrow) and as rows must give the same report, value for value. The counted reads are
spied on: a count that silently became a row read, or an Arrow read that silently fell back to
pandas, fails the test. duckdb-engine cannot reflect a table with this SQLAlchemy (its
PostgreSQL-derived reflection reads ``pg_catalog.pg_collation``): the columns come from
``information_schema.columns``, checked here type by type.
"""

from __future__ import annotations

import math
import re
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from monitor.config import SourceConfig, load_settings
from monitor.core.errors import SourceError
from monitor.evaluation.results import ModelEvaluation
from monitor.sources.count_sql import rounded_score
from monitor.sources.sql.arrow import RowReader
from monitor.sources.sql.schema import sql_type
from monitor.sources.sql.source import SqlSource
from monitor.tasks.binary import round_scores
from tests.monitor import test_panes
from tests.monitor.test_counts import (
    IDENTITY,
    NOW,
    comparable,
    counted_by_the_database,
    dirty_log,
    evaluate,
)
from tests.monitor.test_label_join_counts import evaluate as evaluate_joined
from tests.monitor.test_label_join_counts import joined_by_the_database, label_table, predictions
from tests.monitor.test_score_decimals import TRICKY, continuous
from tests.monitor.test_score_decimals import evaluate as evaluate_decimals

COLUMNS = [
    ("id", "BIGINT"),
    ("ts", "?"),
    ("model", "VARCHAR"),
    ("score", "DOUBLE"),
    ("label", "DOUBLE"),
    *[(c, "DOUBLE") for c in IDENTITY],
    ("race", "VARCHAR"),
    ("sex", "VARCHAR"),
    ("pred", "VARCHAR"),
    ("cls", "VARCHAR"),
]
#: The timestamp column's type, and the dirty log's timestamps as stored in it.
TIMESTAMPS = {
    "timestamptz": ("TIMESTAMPTZ", lambda ts: ts),
    "timestamp": ("TIMESTAMP", lambda ts: ts.dt.tz_localize(None)),  # naive: UTC wall time
    "epoch-int": ("BIGINT", lambda ts: ts.dt.floor("s").astype("int64") // 10**9),
    "epoch-float": ("DOUBLE", lambda ts: ts.astype("int64") / 1e9),
    "iso-text": ("VARCHAR", lambda ts: ts.dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")),
}


@pytest.fixture(autouse=True)
def no_silent_pandas_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """An Arrow read that fails falls back to ``pandas.read_sql`` quietly: here it fails the test."""

    def fail(self: RowReader, exc: Exception, conn: Any) -> Any:
        raise AssertionError(f"the Arrow read failed: {exc!r}")

    monkeypatch.setattr(RowReader, "_arrow_failed", fail)


def write_duckdb(path: Path, tables: dict[str, tuple[pd.DataFrame, list[tuple[str, str]]]]) -> str:
    """The frames as tables of a new DuckDB file, columns of the given types; its URL."""
    with duckdb.connect(str(path)) as conn:
        for name, (frame, columns) in tables.items():
            conn.register("frame", frame)
            conn.execute(f"CREATE TABLE {name} ({', '.join(f'{c} {t}' for c, t in columns)})")
            conn.execute(f"INSERT INTO {name} SELECT {', '.join(c for c, _ in columns)} FROM frame")
            conn.unregister("frame")
    return f"duckdb:///{path}"


def duckdb_log(tmp_path: Path, frame: pd.DataFrame, storage: str, score: str = "DOUBLE") -> str:
    """The dirty log in a DuckDB file, with what DuckDB stores and pandas' frames do not: NaN (not
    NULL) in score and identity columns, and infinite scores."""
    ts_type, to_stored = TIMESTAMPS[storage]
    columns = [(c, ts_type if c == "ts" else score if c == "score" else t) for c, t in COLUMNS]
    path = tmp_path / f"log-{uuid.uuid4().hex[:6]}.duckdb"
    url = write_duckdb(path, {"predictions": (frame.assign(ts=to_stored(frame["ts"])), columns)})
    with duckdb.connect(str(path)) as conn:
        if score != "DECIMAL(12, 6)":
            conn.execute("UPDATE predictions SET score = 'NaN' WHERE id % 61 = 4")
            conn.execute("UPDATE predictions SET score = 'Infinity' WHERE id % 83 = 6")
        conn.execute("UPDATE predictions SET female = 'NaN' WHERE id % 13 = 5")
    return url


def source(url: str, **options: Any) -> dict[str, Any]:
    return {"kind": "sql", "url": url, "table": "predictions", **options}


# -- counted equals rows ---------------------------------------------------------------------------------


def counted_equals_rows(log: dict[str, Any], task: str = "binary") -> ModelEvaluation:
    """The counted evaluation, checked: counted by DuckDB, and equal to the row path's."""
    counted, statements = evaluate(log, aggregate=True, task=task)
    assert counted_by_the_database(statements)
    assert comparable(counted) == comparable(evaluate(log, aggregate=False, task=task)[0])
    assert any(not math.isnan(v.value) for v in counted.windows[1].values)
    return counted


@pytest.mark.parametrize("storage", ["timestamptz", "timestamp", "epoch-int", "epoch-float"])
def test_duckdb_counts_equal_rows(tmp_path: Path, storage: str) -> None:
    url = duckdb_log(tmp_path, dirty_log(), storage)
    counted = counted_equals_rows(source(url))
    assert counted.rejected["score_invalid"] > 0 and counted.rejected["score_out_of_range"] > 0
    if storage == "timestamptz":  # rows through pandas.read_sql (Python objects) too
        assert comparable(evaluate(source(url, arrow=False), aggregate=False)[0]) == comparable(counted)


def test_duckdb_multiclass_counts_equal_rows(tmp_path: Path) -> None:
    counted = counted_equals_rows(source(duckdb_log(tmp_path, dirty_log(), "timestamptz")), "multiclass")
    assert counted.rejected["prediction_invalid"] > 0


def test_a_query_source_is_counted(tmp_path: Path) -> None:
    url = duckdb_log(tmp_path, dirty_log(), "timestamp")
    counted_equals_rows({"kind": "sql", "url": url, "query": "SELECT * FROM predictions WHERE id % 5 <> 3"})


def test_text_timestamps_read_rows_prefiltered_by_day(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No portable exact instant in ISO text (as on PostgreSQL): rows, with the reason logged once."""
    frame = dirty_log()
    frame = pd.concat([frame, frame.head(50).assign(ts=frame["ts"].head(50) - timedelta(days=5))])
    url = duckdb_log(tmp_path, frame.reset_index(drop=True), "iso-text")
    with caplog.at_level("INFO", logger="monitor.sources.sql"):
        counted, statements = evaluate(source(url), aggregate=True)
    assert comparable(counted) == comparable(evaluate(source(url), aggregate=False)[0])
    assert not counted_by_the_database(statements)
    assert "timestamps stored as iso: no exact instant to filter on in the database" in caplog.text
    reads = [s for s in statements if s.startswith("SELECT * \nFROM predictions")]
    # days, bound (after the model's own filter: the dirty log holds two models)
    assert reads and all(re.search(r"predictions\.ts >= \$\d AND predictions\.ts < \$\d", s) for s in reads)


# -- score_decimals --------------------------------------------------------------------------------------


@pytest.mark.parametrize("score", ["DOUBLE", "FLOAT", "DECIMAL(12, 6)"])
def test_duckdb_counts_with_score_decimals_equal_rows(tmp_path: Path, score: str) -> None:
    """DOUBLE and DECIMAL scores are rounded by DuckDB while it counts; 4-byte FLOAT ones after the
    read (as on PostgreSQL), here on the edge of every bin."""
    frame = continuous(dirty_log())
    if score == "FLOAT":
        frame["score"] = np.round(frame["score"], 2) + 0.005
    url = duckdb_log(tmp_path, frame, "timestamptz", score=score)
    counted = evaluate_decimals(source(url), aggregate=True, decimals=2)
    assert comparable(counted) == comparable(evaluate_decimals(source(url), aggregate=False, decimals=2))
    if score == "DOUBLE":  # the rounding made a difference
        assert comparable(counted) != comparable(
            evaluate_decimals(source(url), aggregate=True, decimals=None)
        )


@pytest.mark.parametrize("decimals", [0, 2, 3])
def test_duckdb_rounds_bit_for_bit_like_numpy(tmp_path: Path, decimals: int) -> None:
    values = [*TRICKY, math.nan, math.inf]
    url = write_duckdb(
        tmp_path / "r.duckdb",
        {"t": (pd.DataFrame({"i": range(len(values)), "x": values}), [("i", "INTEGER"), ("x", "DOUBLE")])},
    )
    with duckdb.connect(url.removeprefix("duckdb:///")) as conn:
        conn.execute("UPDATE t SET x = 'NaN' WHERE i = ?", [len(TRICKY)])  # pandas' NaN arrives as NULL
    engine = sa.create_engine(url)
    table = sa.table("t", sa.column("i"), sa.column("x"))
    with engine.connect() as conn:
        got = dict(conn.execute(sa.select(table.c.i, rounded_score(table.c.x, decimals, sqlite=False))).all())
    engine.dispose()
    expected = round_scores(np.array(values), decimals)
    assert [got[i] for i in range(len(TRICKY))] == expected[: len(TRICKY)].tolist()
    assert math.isnan(got[len(TRICKY)]) and got[len(TRICKY) + 1] == math.inf


# -- labels in their own table ---------------------------------------------------------------------------


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_duckdb_labels_joined_in_the_database_equal_rows(tmp_path: Path, task: str) -> None:
    frame = predictions(task)
    labels = label_table(frame)
    labels["arrived"] = pd.to_datetime(labels["arrived"], utc=True)
    labels.loc[labels.index % 53 == 7, "arrived"] = pd.NaT  # no arrival time: never joined
    label_type = "DOUBLE"
    if task == "multiclass":
        labels["y"], label_type = np.where(labels["y"] == 1.0, "x", "y"), "VARCHAR"
    log_columns = [(c, "TIMESTAMPTZ" if c == "ts" else t) for c, t in COLUMNS]
    label_columns = [("pid", "BIGINT"), ("y", label_type), ("arrived", "TIMESTAMPTZ")]
    url = write_duckdb(
        tmp_path / "joined.duckdb", {"predictions": (frame, log_columns), "labels": (labels, label_columns)}
    )
    counted, statements = evaluate_joined(url, aggregate=True, task=task)
    assert joined_by_the_database(statements)
    assert comparable(counted) == comparable(evaluate_joined(url, aggregate=False, task=task)[0])
    assert counted.windows[1].n_labeled > 0


# -- sealed panes ----------------------------------------------------------------------------------------


@pytest.fixture
def close_pane_sources() -> Iterator[None]:
    yield
    while test_panes.OPEN:
        test_panes.OPEN.pop().source.close()


@pytest.mark.usefixtures("close_pane_sources")
def test_duckdb_ticks_through_panes_equal_whole_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log grows between ticks, written by another connection: the source holds no connection
    (hence no lock on the file) between its reads. Five ticks (two pane boundaries crossed)."""
    monkeypatch.setattr(test_panes, "TICKS", test_panes.TICKS[:5])
    early, frame = test_panes.growing_log()
    url = duckdb_log(tmp_path, early, "timestamptz")

    def append(rows: pd.DataFrame) -> None:
        with duckdb.connect(url.removeprefix("duckdb:///")) as conn:
            conn.register("fresh", rows)
            conn.execute(f"INSERT INTO predictions SELECT {', '.join(c for c, _ in COLUMNS)} FROM fresh")

    store = test_panes.Store(source(url), append)
    test_panes.assert_panes_served(test_panes.run_ticks(store, frame))


# -- the file, its columns, its lock, its timeout -------------------------------------------------------


def sql_source(url: str, table: str = "predictions", **options: Any) -> SqlSource:
    config = SourceConfig.model_validate({"kind": "sql", "url": url, "table": table, **options})
    return SqlSource(config, timestamp_column="ts")


def test_columns_and_their_kinds_come_from_information_schema(tmp_path: Path) -> None:
    """Reflection fails (duckdb_engine#1391); each column's kind is read from its type name, and a
    table of the same name in another schema is told apart."""
    path = tmp_path / "types.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute(
            "CREATE TABLE t (ts TIMESTAMPTZ, i INTEGER, u UBIGINT, h HUGEINT, f FLOAT, d DOUBLE, "
            '"Dec" DECIMAL(18, 3), v VARCHAR, b BOOLEAN, l INTEGER[], s STRUCT(a INTEGER), day DATE)'
        )
        conn.execute("INSERT INTO t (ts) VALUES (TIMESTAMPTZ '2026-11-22 10:00:00+00')")
        conn.execute("CREATE SCHEMA other")
        conn.execute("CREATE TABLE other.t (ts TIMESTAMP, w VARCHAR)")
    engine = sa.create_engine(f"duckdb:///{path}")
    with engine.connect() as conn, pytest.raises(sa.exc.ProgrammingError, match="pg_collation"):
        sa.Table(
            "t", sa.MetaData(), autoload_with=conn
        )  # still broken upstream: else drop schema.columns_table
    engine.dispose()
    log = sql_source(f"duckdb:///{path}", "t")
    assert len(log.read(NOW - timedelta(days=1), NOW).frame) == 1
    schema = log._schema
    assert schema is not None
    assert schema.numeric == {"i", "u", "h", "f", "d", "Dec"}
    assert schema.integer == {"i", "u", "h"}
    assert schema.single == {"f"}
    assert schema.text == {"v"}
    assert list(schema.table.c.keys()) == ["ts", "i", "u", "h", "f", "d", "Dec", "v", "b", "l", "s", "day"]
    log.close()
    other = sql_source(f"duckdb:///{path}", "t", schema="other")
    other.read(NOW - timedelta(days=1), NOW)
    assert other._schema is not None and other._schema.text == {"w"} and not other._schema.numeric
    other.close()
    with pytest.raises(SourceError, match="table 'nope' not found"):
        sql_source(f"duckdb:///{path}", "nope").read(NOW - timedelta(days=1), NOW)


def test_information_schema_type_names() -> None:
    names = {
        "BIGINT": sa.BigInteger,
        "UTINYINT": sa.BigInteger,
        "REAL": sa.REAL,
        "double precision": sa.Double,
        "NUMERIC(10,2)": sa.Numeric,
        "character varying": sa.String,
        "VARCHAR[]": sa.types.NullType,
        "TIMESTAMP_NS": sa.DateTime,
        "INTERVAL": sa.types.NullType,
    }
    for name, kind in names.items():
        assert type(sql_type(name)) is kind, name
    assert sql_type("TIMESTAMP WITH TIME ZONE").timezone and not sql_type("TIMESTAMP").timezone  # type: ignore[attr-defined]


def test_the_file_is_opened_read_only_and_released_after_each_read(tmp_path: Path) -> None:
    url = duckdb_log(tmp_path, dirty_log(300), "timestamptz")
    path = url.removeprefix("duckdb:///")
    log = sql_source(url)
    rows = len(log.read(NOW - timedelta(days=1), NOW).frame)
    # DuckDB refuses another configuration (here: read-write) while any connection of this process is open
    with duckdb.connect(path) as writer:
        writer.execute("INSERT INTO predictions (id, ts) VALUES (-1, ?)", [NOW - timedelta(minutes=1)])
    assert len(log.read(NOW - timedelta(days=1), NOW).frame) == rows + 1
    with log.engine.connect() as conn, pytest.raises(sa.exc.DBAPIError, match="read-only"):
        conn.exec_driver_sql("CREATE TABLE scratch (x INTEGER)")
    missing = tmp_path / "missing.duckdb"
    with pytest.raises(SourceError, match="the DuckDB database file does not exist"):
        sql_source(f"duckdb:///{missing}").read(NOW - timedelta(days=1), NOW)
    assert not missing.exists()
    log.close()


def test_a_statement_running_past_the_timeout_is_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "slow.duckdb"
    with duckdb.connect(str(path)) as conn:  # a view of 10^12 rows: its min(ts) alone would take hours
        conn.execute(
            "CREATE VIEW predictions AS SELECT TIMESTAMPTZ '2026-11-22 10:00:00+00' + to_seconds(r % 100) AS ts, "
            "r AS x FROM range(1000000) a(r), range(1000000) b(s)"
        )
    log = sql_source(f"duckdb:///{path}", timeout="1s")
    started = time.monotonic()
    with pytest.raises(
        SourceError, match=r"statement timeout: the query ran longer than source.timeout \(1 s\)"
    ):
        log.read(NOW - timedelta(days=1), NOW)
    assert time.monotonic() - started < 10
    log.close()


def test_an_arrow_read_past_its_deadline_is_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "slow.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE t (x BIGINT)")
    log = sql_source(f"duckdb:///{path}", "t")
    arrow = log._reader._arrow
    assert arrow is not None
    slow = (
        sa.select(sa.func.count())
        .select_from(
            sa.func.range(10**6).table_valued("range").alias("a"),
            sa.func.range(10**6).table_valued("range").alias("b"),
        )
        .where(sa.literal_column("a.range") * 3 % 7 == sa.literal_column("b.range") % 5)
    )
    started = time.monotonic()
    with pytest.raises(duckdb.InterruptException):
        arrow.read(slow, time.monotonic() + 1)
    assert time.monotonic() - started < 10
    log.close()


def test_relative_duckdb_paths_are_relative_to_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "fairwatch.yaml"
    config.write_text(
        "models:\n  - name: m\n    source: {kind: sql, url: duckdb:///logs/log.duckdb, table: predictions}\n"
        "    columns: {score: score, label: label}\n"
        "    groups: [{attribute: g, kind: categorical, column: g}]\n"
    )
    model = load_settings(config).models[0]
    assert model.source.url == f"duckdb:///{(tmp_path / 'logs' / 'log.duckdb').resolve()}"
