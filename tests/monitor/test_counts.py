"""Counts, not rows: an evaluation from the database's ``GROUP BY`` equals the row path's, exactly.

The reference is the row path (``aggregate: false``), which reads every row and is itself tested
against hand computations and independent implementations elsewhere. Each log here is dirty on
purpose: NULL, NaN and out-of-range scores, invalid and probability labels, missing, fractional
and non-numeric identity values, blank and numeric categories, unreadable timestamps, two models
in one table, and a label delay so that outcome and label windows differ.
"""

from __future__ import annotations

import math
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import astuple
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from monitor.config import settings_from_dict
from monitor.evaluation.evaluators import build_evaluators
from monitor.evaluation.results import ModelEvaluation
from monitor.sources.contract import RANGE_PREFIX
from monitor.sources.count_sql import packed_column
from monitor.sources.sql.arrow import ArrowReader
from tests.monitor.test_source_sql import captured_statements

NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)
IDENTITY = ["male", "female", "black"]


def dirty_log(rows: int = 3000, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ts = NOW - timedelta(hours=9) + pd.to_timedelta(np.sort(rng.uniform(0, 9 * 3600, rows)), unit="s")
    label = (rng.random(rows) < 0.3).astype(float)
    score = np.round(1 / (1 + np.exp(-(-1 + 2 * label + rng.normal(0, 1, rows)))), 2)
    frame = pd.DataFrame(
        {
            "id": np.arange(rows),
            "ts": ts.floor("ms"),  # SQLite compares instants to the millisecond
            "model": np.where(rng.random(rows) < 0.9, "tox", "other"),
            "score": score,
            "label": label,
        }
    )
    frame.loc[rng.random(rows) < 0.02, "score"] = np.nan  # score_invalid
    frame.loc[rng.random(rows) < 0.01, "score"] = 1.5  # score_out_of_range
    frame.loc[rng.random(rows) < 0.2, "label"] = np.nan  # not arrived yet
    frame.loc[rng.random(rows) < 0.01, "label"] = 2.0  # label_invalid
    frame.loc[rng.random(rows) < 0.03, "label"] = 0.7  # a probability: binarised at 0.5
    for name, p in zip(IDENTITY, (0.3, 0.4, 0.15), strict=True):
        member = rng.random(rows) < p
        frame[name] = np.where(
            member, rng.choice([1.0, 0.5, 0.8], rows), np.where(rng.random(rows) < 0.5, 0.0, 0.2)
        )
        frame.loc[rng.random(rows) < 0.2, name] = np.nan
    frame.loc[frame.index % 7 == 0, IDENTITY] = np.nan  # rows with no identity value at all
    frame["race"] = rng.choice(["a", "b", "c", "", None], rows, p=[0.5, 0.25, 0.15, 0.05, 0.05])
    frame["sex"] = rng.choice(["f", "m", None], rows, p=[0.5, 0.45, 0.05])
    # a multiclass model's classes: text, numbers stored as text ("1" and "1.0" are one class), missing
    frame["pred"] = rng.choice(["x", "y", "z", "1", "1.0", None], rows, p=[0.4, 0.25, 0.2, 0.05, 0.05, 0.05])
    frame["cls"] = rng.choice(["x", "y", "z", "1", None], rows, p=[0.3, 0.25, 0.2, 0.05, 0.2])
    return frame


TASKS: dict[str, dict[str, Any]] = {
    "binary": {
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label", "model": "model"},
        "score_range": [0, 1],
    },
    "multiclass": {
        "task": "multiclass",
        "columns": {"id": "id", "timestamp": "ts", "prediction": "pred", "label": "cls", "model": "model"},
    },
}


def config(
    source: dict[str, Any],
    *,
    aggregate: bool,
    task: str = "binary",
    panes: bool | dict[str, Any] = False,
    **keys: Any,
) -> Any:
    """The dirty log's model (``keys``: more of its keys); ``panes`` off by default: these tests pin
    one whole read (test_panes pins the panes to it)."""
    model = model_config({**source, "aggregate": aggregate}, task=task)
    model["panes"] = panes if isinstance(panes, dict) else {"enabled": panes}
    return settings_from_dict({"models": [model | keys]})


def model_config(source: dict[str, Any], *, task: str = "binary") -> dict[str, Any]:
    """The dirty log's model ``tox`` reading ``source``: indicator, categorical and intersection
    groups, windows of 1 h and 6 h, labels 2 h late."""
    return {
        "name": "tox",
        "source": source,
        **TASKS[task],
        "groups": [
            {"attribute": "identity", "kind": "indicator", "columns": IDENTITY, "threshold": 0.5},
            {"attribute": "race", "kind": "categorical", "column": "race", "reference": "a"},
            {"attribute": "race&sex", "kind": "intersection", "columns": ["race", "sex"], "min_size": 40},
        ],
        "windows": [{"name": "1h", "length": "1h"}, {"name": "6h", "length": "6h"}],
        "label_delay": "2h",
        "min_samples": 30,
    }


def evaluate(
    source: dict[str, Any], *, aggregate: bool, task: str = "binary"
) -> tuple[ModelEvaluation, list[str]]:
    """One evaluation, and the statements it sent."""
    evaluator = build_evaluators(config(source, aggregate=aggregate, task=task))["tox"]
    try:
        with captured_statements(evaluator.source.engine) as seen, arrow_statements() as by_arrow:  # type: ignore[attr-defined]
            result = evaluator.evaluate(NOW)
        return result, [statement for statement, _ in seen] + by_arrow
    finally:
        evaluator.source.close()


def comparable(result: ModelEvaluation) -> dict[str, Any]:
    """Everything an evaluation reports but its timings, NaN made comparable."""

    def plain(value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):
            return "nan"
        if isinstance(value, tuple | list):
            return tuple(plain(v) for v in value)
        return value

    out: dict[str, Any] = {"rows_read": result.rows_read, "rejected": dict(result.rejected)}
    for w in result.windows:
        out[w.window] = {
            "values": sorted((plain(astuple(v)) for v in w.values), key=repr),
            "model": sorted((plain(astuple(v)) for v in w.model_values), key=repr),
            "groups": sorted((plain(astuple(g)) for g in w.groups), key=repr),
            "counts": (w.n_rows, w.n_labeled, w.n_label_rows),
            "dropped": dict(w.dropped_groups),
            "missing": dict(w.missing_group_rows),
        }
    return out


def assert_counted_equals_rows(source: dict[str, Any], task: str = "binary") -> list[str]:
    counted, statements = evaluate(source, aggregate=True, task=task)
    rows, _ = evaluate(source, aggregate=False, task=task)
    assert comparable(counted) == comparable(rows)
    assert counted.windows[0].values and any(not math.isnan(v.value) for v in counted.windows[1].values)
    return statements


@contextmanager
def arrow_statements() -> Iterator[list[str]]:
    """The SQL the Arrow (ADBC) reads send, as compiled for the driver."""
    sent: list[str] = []
    compile_ = ArrowReader.compile

    def spy(self: ArrowReader, statement: Any) -> tuple[str, list[Any]]:
        sql, params = compile_(self, statement)
        sent.append(sql)
        return sql, params

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ArrowReader, "compile", spy)
        yield sent


def counted_by_the_database(statements: list[str]) -> bool:
    """A count statement was sent: grouped by the database, or each row's keys for pandas to count
    (SQLite through Arrow) - either way the window's time ranges are 0/1 columns computed in SQL."""
    # the time ranges' columns by name, or packed as bits of one integer column (SQLite)
    return any((RANGE_PREFIX in s or packed_column(0) in s) and "CASE WHEN" in s for s in statements)


# -- SQLite ---------------------------------------------------------------------------------------------


def sqlite_log(path: Path, frame: pd.DataFrame, ts_type: str, to_stored: Any) -> str:
    db = path / f"log-{uuid.uuid4().hex[:6]}.db"
    columns = ", ".join(
        f'"{c}" {t}'
        for c, t in [
            ("id", "INTEGER"),
            ("ts", ts_type),
            ("model", "TEXT"),
            ("score", "REAL"),
            ("label", "REAL"),
            *[(c, "REAL") for c in IDENTITY],
            ("race", "TEXT"),
            ("sex", "TEXT"),
            ("pred", "TEXT"),
            ("cls", "TEXT"),
        ]
    )
    stored = frame.assign(ts=[to_stored(t) for t in frame["ts"]]).astype(object)
    stored = stored.where(stored.notna(), None)
    with sqlite3.connect(db) as conn:
        conn.execute(f"CREATE TABLE predictions ({columns})")
        conn.executemany(
            f"INSERT INTO predictions VALUES ({', '.join('?' * len(stored.columns))})",
            stored.itertuples(index=False),
        )
        # what a REAL column keeps as text, and timestamps nothing can read
        conn.execute("UPDATE predictions SET male = 'n/a' WHERE id % 97 = 1")
        conn.execute("UPDATE predictions SET score = 'oops' WHERE id % 89 = 2")
    return f"sqlite:///{db}"


SQLITE_TIMESTAMPS = {
    "iso-text": ("TEXT", lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"),
    "iso-space-offset": ("TEXT", lambda t: t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "+00:00"),
    "epoch-int": ("INTEGER", lambda t: int(t.timestamp())),
    "epoch-float": ("REAL", lambda t: t.timestamp()),
}


@pytest.mark.parametrize("storage", SQLITE_TIMESTAMPS)
def test_sqlite_counts_equal_rows(tmp_path: Path, storage: str) -> None:
    ts_type, to_stored = SQLITE_TIMESTAMPS[storage]
    frame = dirty_log()
    if storage == "epoch-int":
        frame["ts"] = frame["ts"].dt.floor("s")
    url = sqlite_log(tmp_path, frame, ts_type, to_stored)
    statements = assert_counted_equals_rows({"kind": "sql", "url": url, "table": "predictions"})
    assert counted_by_the_database(statements)


@pytest.mark.parametrize("storage", ["iso-text", "epoch-int"])
def test_sqlite_multiclass_counts_equal_rows(tmp_path: Path, storage: str) -> None:
    """A multiclass model's metrics are counts by (prediction, label, groups): counted by the database too."""
    ts_type, to_stored = SQLITE_TIMESTAMPS[storage]
    frame = dirty_log()
    if storage == "epoch-int":
        frame["ts"] = frame["ts"].dt.floor("s")
    url = sqlite_log(tmp_path, frame, ts_type, to_stored)
    statements = assert_counted_equals_rows({"kind": "sql", "url": url, "table": "predictions"}, "multiclass")
    assert counted_by_the_database(statements)
    # only the columns the task reads are keys: not the log's score column, which multiclass never reads
    assert all("score" not in s for s in statements if RANGE_PREFIX in s)
    counted, _ = evaluate(
        {"kind": "sql", "url": url, "table": "predictions"}, aggregate=True, task="multiclass"
    )
    assert counted.rejected["prediction_invalid"] > 0
    names = {v.metric for v in counted.windows[1].values}
    assert {"multiclass_statistical_parity", "multiclass_equality_of_opportunity"} <= names


def test_a_default_named_optional_column_the_log_lacks_is_not_counted_by(tmp_path: Path) -> None:
    """A multiclass config without ``label:`` defaults to a ``label`` column; a log without one is still
    counted (the row path skips the label metrics alike), not read row by row."""
    frame = dirty_log().drop(columns=["label"])
    db = tmp_path / "nolabel.db"
    with sqlite3.connect(db) as conn:
        frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")).to_sql(
            "predictions", conn, index=False
        )
    source = {"kind": "sql", "url": f"sqlite:///{db}", "table": "predictions"}
    results, statements = [], []
    for aggregate in (True, False):
        settings = config(source, aggregate=aggregate, task="multiclass")
        model = settings.models[0]
        columns = model.columns.model_dump(exclude={"label"}, exclude_unset=True)
        model = model.model_copy(update={"columns": type(model.columns).model_validate(columns)})
        evaluator = build_evaluators(settings.model_copy(update={"models": [model]}))["tox"]
        try:
            with captured_statements(evaluator.source.engine) as seen, arrow_statements() as by_arrow:  # type: ignore[attr-defined]
                results.append(evaluator.evaluate(NOW))
            statements.append([q for q, _ in seen] + by_arrow)
        finally:
            evaluator.source.close()
    assert counted_by_the_database(statements[0]) and not counted_by_the_database(statements[1])
    assert comparable(results[0]) == comparable(results[1])
    assert {v.metric for v in results[0].windows[1].values} == {"multiclass_statistical_parity"}


def test_sqlite_unreadable_timestamps_are_counted_as_rejected(tmp_path: Path) -> None:
    frame = dirty_log(1000)
    url = sqlite_log(tmp_path, frame, "TEXT", SQLITE_TIMESTAMPS["iso-text"][1])
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        conn.execute("UPDATE predictions SET ts = substr(ts, 1, 10) || 'T99:99' WHERE id % 50 = 0")
    assert_counted_equals_rows({"kind": "sql", "url": url, "table": "predictions"})
    counted, _ = evaluate({"kind": "sql", "url": url, "table": "predictions"}, aggregate=True)
    assert counted.rejected["timestamp_invalid"] > 0


def test_sqlite_unreadable_timestamps_of_other_days_are_not_read(tmp_path: Path) -> None:
    """The read covers whole days of text (the index range): an unreadable timestamp of another
    day is outside it, in the row path and in the count alike. So is another model's row: the log
    holds two models, and only this one's rows are read."""
    frame = dirty_log(1000)
    url = sqlite_log(tmp_path, frame, "TEXT", SQLITE_TIMESTAMPS["iso-text"][1])
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        conn.execute("UPDATE predictions SET ts = substr(ts, 1, 10) || 'T99:99' WHERE id % 50 = 0")
        conn.execute("UPDATE predictions SET ts = '2026-11-01T99:99' WHERE id % 50 = 1")  # 3 weeks ago
    assert_counted_equals_rows({"kind": "sql", "url": url, "table": "predictions"})
    counted, _ = evaluate({"kind": "sql", "url": url, "table": "predictions"}, aggregate=True)
    # ids 0, 50, ..., 950 (the day of the window) of this model, not the other's
    ours = int(((frame["id"] % 50 == 0) & (frame["model"] == "tox")).sum())
    assert 0 < ours < 20
    assert counted.rejected["timestamp_invalid"] == ours


def test_a_query_source_is_counted_with_its_columns_as_stored(tmp_path: Path) -> None:
    url = sqlite_log(tmp_path, dirty_log(), "TEXT", SQLITE_TIMESTAMPS["iso-text"][1])
    source = {"kind": "sql", "url": url, "query": "SELECT * FROM predictions WHERE id % 5 <> 3"}
    statements = assert_counted_equals_rows(source)
    assert counted_by_the_database(statements)


def test_the_database_returns_far_fewer_rows_than_it_counts(tmp_path: Path) -> None:
    frame = dirty_log(20_000).assign(model="tox", race="a", sex="f")  # scores and identities vary
    url = sqlite_log(tmp_path, frame, "TEXT", SQLITE_TIMESTAMPS["iso-text"][1])
    evaluator = build_evaluators(config({"kind": "sql", "url": url, "table": "predictions"}, aggregate=True))[
        "tox"
    ]
    spans = evaluator.spans(NOW)
    start = min(s.label_start for s in spans)
    counted = evaluator.plan.read(
        tuple(dict.fromkeys(r for s in spans for r in ((s.start, s.end), (s.label_start, s.label_end)))),
        start,
        NOW,
        None,
    )
    batch = counted.batch
    assert batch.counted
    in_window = int(((frame["ts"] >= start) & (frame["ts"] < NOW)).sum())
    assert batch.n_rows == in_window
    assert len(batch.frame) < in_window / 2


def test_aggregate_false_and_unfilterable_timestamps_read_rows(tmp_path: Path) -> None:
    url = sqlite_log(tmp_path, dirty_log(500), "TEXT", SQLITE_TIMESTAMPS["iso-text"][1])
    _, statements = evaluate({"kind": "sql", "url": url, "table": "predictions"}, aggregate=False)
    assert not counted_by_the_database(statements)
    mixed = sqlite_log(tmp_path, dirty_log(500), "TEXT", lambda t: "x" if t.minute == 0 else t.isoformat())
    with sqlite3.connect(mixed.removeprefix("sqlite:///")) as conn:  # text and numbers: no known form
        conn.execute("UPDATE predictions SET ts = 1 WHERE id = 0")
    _, statements = evaluate({"kind": "sql", "url": mixed, "table": "predictions"}, aggregate=True)
    assert not counted_by_the_database(statements)


# -- PostgreSQL -----------------------------------------------------------------------------------------


@pytest.fixture
def pg_engine(postgres_url: str) -> Iterator[sa.Engine]:
    engine = sa.create_engine(postgres_url)
    yield engine
    engine.dispose()


PG_TIMESTAMPS = {
    "timestamptz": lambda ts: ts,
    "timestamp": lambda ts: ts.dt.tz_localize(None),
    "bigint-epoch": lambda ts: ts.dt.floor("s").astype("int64") // 10**9,
    "float8-epoch": lambda ts: ts.astype("int64") / 1e9,
    "text-iso": lambda ts: ts.dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
}


@pytest.mark.integration
@pytest.mark.parametrize("storage", PG_TIMESTAMPS)
def test_postgres_counts_equal_rows(postgres_url: str, pg_engine: sa.Engine, storage: str) -> None:
    frame = dirty_log()
    if storage == "bigint-epoch":
        frame["ts"] = frame["ts"].dt.floor("s")
    frame["ts"] = PG_TIMESTAMPS[storage](frame["ts"])
    table = f"log {uuid.uuid4().hex[:6]}"
    frame.to_sql(table, pg_engine, index=False)
    quoted = pg_engine.dialect.identifier_preparer.quote(table)
    with pg_engine.begin() as conn:  # NaN, which PostgreSQL stores (and orders above every number)
        conn.execute(sa.text(f"UPDATE {quoted} SET score = 'NaN' WHERE id % 61 = 4"))
        conn.execute(sa.text(f"UPDATE {quoted} SET female = 'NaN' WHERE id % 13 = 5"))
    statements = assert_counted_equals_rows({"kind": "sql", "url": postgres_url, "table": table})
    # text timestamps have no portable exact instant: read as rows
    assert counted_by_the_database(statements) == (storage != "text-iso")
    if storage == "timestamptz":
        statements = assert_counted_equals_rows(
            {"kind": "sql", "url": postgres_url, "table": table}, "multiclass"
        )
        assert counted_by_the_database(statements)


def test_more_flags_than_one_integer_holds_are_packed_into_several(tmp_path: Path) -> None:
    """SQLite returns the 0/1 keys as bits of integer columns, 62 to a column: 70 indicator columns,
    with values that are no numbers, make two; the values are the row path's."""
    rng = np.random.default_rng(5)
    frame = dirty_log(2000)
    flags = [f"g{i:02d}" for i in range(70)]
    for name in flags:
        frame[name] = rng.choice(np.array([1.0, 0.0, 0.7, np.nan]), len(frame), p=[0.1, 0.6, 0.05, 0.25])
    db = tmp_path / "wide.db"
    with sqlite3.connect(db) as conn:
        stored = frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z")
        stored.to_sql("predictions", conn, index=False)
        conn.execute("UPDATE predictions SET g03 = 'n/a' WHERE id % 41 = 0")  # text a REAL column keeps
    settings = config({"kind": "sql", "url": f"sqlite:///{db}", "table": "predictions"}, aggregate=True)
    model = settings.models[0]
    groups = [model.groups[0].model_copy(update={"columns": flags})]
    wide = settings.model_copy(update={"models": [model.model_copy(update={"groups": groups})]})
    results = []
    for aggregate in (True, False):
        source = wide.models[0].source.model_copy(update={"aggregate": aggregate})
        settings_ = wide.model_copy(update={"models": [wide.models[0].model_copy(update={"source": source})]})
        evaluator = build_evaluators(settings_)["tox"]
        with evaluator, captured_statements(evaluator.source.engine) as seen, arrow_statements() as by_arrow:  # type: ignore[attr-defined]
            results.append(comparable(evaluator.evaluate(NOW)))
        if aggregate:
            sent = [s for s, _ in seen] + by_arrow
            assert any(packed_column(1) in s for s in sent) and not any(packed_column(2) in s for s in sent)
    assert results[0] == results[1]
    assert any(v[1] == "g03" for v in results[0]["6h"]["values"])  # the column with text is judged
