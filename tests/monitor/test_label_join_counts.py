"""Labels in their own table, joined by the database while it counts, give exactly what the row
path gives (every row read, labels joined in pandas by :func:`monitor.reading.label_join.join_labels`).

The label table is dirty on purpose: ids relabelled later (the latest label wins), labels that
arrive after the window (not used), labels for ids that were never predicted, rows whose own
label is already there (it wins), missing ids, and arrival times nothing can read.
"""

from __future__ import annotations

import sqlite3
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from monitor.config import settings_from_dict
from monitor.evaluation.evaluators import build_evaluators
from monitor.evaluation.results import ModelEvaluation
from monitor.sources.count_sql import packed_column
from tests.monitor.test_counts import IDENTITY, NOW, TASKS, arrow_statements, comparable, dirty_log
from tests.monitor.test_source_sql import captured_statements


def label_table(frame: pd.DataFrame, seed: int = 11) -> pd.DataFrame:
    """Labels of ~70% of the predictions, arriving 0-5 h after them; 10% relabelled later, 5% at the
    same instant."""
    rng = np.random.default_rng(seed)
    picked = frame.sample(frac=0.7, random_state=seed)
    late = pd.to_timedelta(rng.uniform(0, 5 * 3600, len(picked)), unit="s")
    labels = pd.DataFrame(
        {
            "pid": picked["id"].to_numpy(),
            "y": (rng.random(len(picked)) < 0.35).astype(float),
            "arrived": (picked["ts"] + late).dt.floor("ms").to_numpy(),
        }
    )
    again = labels.sample(frac=0.1, random_state=seed + 1).assign(
        y=lambda d: 1.0 - d["y"], arrived=lambda d: d["arrived"] + pd.Timedelta(minutes=30)
    )
    # relabelled at the very same instant (batch loads stamp one time): the greatest label wins, both ways
    tied = labels.sample(frac=0.05, random_state=seed + 2).assign(y=lambda d: 1.0 - d["y"])
    stranger = pd.DataFrame(
        {"pid": [10**6, 10**6 + 1], "y": [1.0, 0.0], "arrived": [NOW - timedelta(hours=3)] * 2}
    )
    missing = pd.DataFrame({"pid": [None], "y": [1.0], "arrived": [NOW - timedelta(hours=3)]})
    return pd.concat([labels, again, tied, stranger, missing], ignore_index=True)


def predictions(task: str) -> pd.DataFrame:
    frame = dirty_log(2500)
    if task == "binary":  # most labels come from the label table; some rows carry their own
        frame.loc[frame.index % 5 != 0, "label"] = np.nan
    else:
        frame.loc[frame.index % 5 != 0, "cls"] = None
    return frame


def settings(
    url: str, *, aggregate: bool, task: str, tables: tuple[str, str] = ("predictions", "labels")
) -> Any:
    label_column = "label" if task == "binary" else "cls"
    model = {
        "name": "tox",
        "source": {"kind": "sql", "url": url, "table": tables[0], "aggregate": aggregate},
        **TASKS[task],
        "labels": {
            "source": {"kind": "sql", "url": url, "table": tables[1]},
            "columns": {"id": "pid", "label": "y", "timestamp": "arrived"},
        },
        "groups": [
            {"attribute": "identity", "kind": "indicator", "columns": IDENTITY, "threshold": 0.5},
            {"attribute": "race", "kind": "categorical", "column": "race", "reference": "a"},
        ],
        "windows": [{"name": "1h", "length": "1h"}, {"name": "6h", "length": "6h"}],
        "label_delay": "2h",
        "min_samples": 30,
        "panes": {"enabled": False},
    }
    model["columns"] = {**model["columns"], "label": label_column}
    return settings_from_dict({"models": [model]})


def evaluate(
    url: str, *, aggregate: bool, task: str, tables: tuple[str, str] = ("predictions", "labels")
) -> tuple[ModelEvaluation, list[str]]:
    evaluator = build_evaluators(settings(url, aggregate=aggregate, task=task, tables=tables))["tox"]
    assert hasattr(evaluator.source, "engine")
    with captured_statements(evaluator.source.engine) as seen, arrow_statements() as sent:
        result = evaluator.evaluate(NOW)
    evaluator.source.close()
    if evaluator.label_source is not None:
        evaluator.label_source.close()
    return result, [s for s, _ in seen] + sent


def joined_by_the_database(statements: list[str]) -> bool:
    # and counted: the time ranges' columns by name, or packed as bits of one integer column (SQLite)
    return any("row_number() OVER" in s and ("__in_" in s or packed_column(0) in s) for s in statements)


def sqlite_store(path: Path, task: str, labels: pd.DataFrame, *, text_labels: bool = False) -> str:
    db = path / "log.db"
    frame = predictions(task)
    with sqlite3.connect(db) as conn:
        frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")).to_sql(
            "predictions", conn, index=False
        )
        stored = labels.assign(
            arrived=pd.to_datetime(labels["arrived"], utc=True).dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        )
        if task == "multiclass":
            stored = stored.assign(y=np.where(stored["y"] == 1.0, "x", "y"))
        stored.loc[stored.index % 53 == 7, "arrived"] = (
            "2026-11-22T09:xx"  # sorts among the times; unreadable
        )
        stored.to_sql("labels", conn, index=False)
    return f"sqlite:///{db}"


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_sqlite_labels_joined_in_the_database_equal_rows(tmp_path: Path, task: str) -> None:
    url = sqlite_store(tmp_path, task, label_table(predictions(task)))
    counted, statements = evaluate(url, aggregate=True, task=task)
    rows, _ = evaluate(url, aggregate=False, task=task)
    assert joined_by_the_database(statements)
    assert comparable(counted) == comparable(rows)
    assert counted.rejected["timestamp_invalid"] > 0  # the unreadable arrival times, counted like rows
    assert counted.windows[1].n_labeled > 0


@pytest.mark.integration
def test_postgres_labels_joined_in_the_database_equal_rows(postgres_url: str) -> None:
    tables = (f"predictions_{uuid.uuid4().hex[:6]}", f"labels_{uuid.uuid4().hex[:6]}")
    engine = sa.create_engine(postgres_url)
    try:
        predictions("binary").to_sql(tables[0], engine, index=False)
        labels = label_table(predictions("binary"))
        labels.assign(arrived=pd.to_datetime(labels["arrived"], utc=True)).to_sql(
            tables[1], engine, index=False
        )
    finally:
        engine.dispose()
    counted, statements = evaluate(postgres_url, aggregate=True, task="binary", tables=tables)
    rows, _ = evaluate(postgres_url, aggregate=False, task="binary", tables=tables)
    assert joined_by_the_database(statements)
    assert comparable(counted) == comparable(rows)


@pytest.mark.integration
def test_postgres_nan_own_labels_take_the_joined_label(postgres_url: str) -> None:
    """A float8 'NaN' in the prediction's own label is no label (the row path: notna); the database
    must not keep it over the joined one (found by review)."""
    tables = (f"predictions_{uuid.uuid4().hex[:6]}", f"labels_{uuid.uuid4().hex[:6]}")
    frame = predictions("binary")
    engine = sa.create_engine(postgres_url)
    try:
        frame.to_sql(tables[0], engine, index=False)
        labels = label_table(frame)
        labels.assign(arrived=pd.to_datetime(labels["arrived"], utc=True)).to_sql(
            tables[1], engine, index=False
        )
        quoted = engine.dialect.identifier_preparer.quote(tables[0])
        with engine.begin() as conn:
            conn.execute(sa.text(f"UPDATE {quoted} SET label = 'NaN' WHERE label IS NULL"))
    finally:
        engine.dispose()
    counted, statements = evaluate(postgres_url, aggregate=True, task="binary", tables=tables)
    assert joined_by_the_database(statements)
    assert comparable(counted) == comparable(
        evaluate(postgres_url, aggregate=False, task="binary", tables=tables)[0]
    )


def test_ids_as_text_normalise_numeric_ids() -> None:
    """PostgreSQL NUMERIC ids read by pandas are Decimals: 17.0 joins 17 as a float does."""
    from decimal import Decimal

    from monitor.reading.label_join import _id_text

    ids = pd.Series([Decimal("17.0"), Decimal("17.50"), 17.0, "17", None, Decimal("NaN")], dtype=object)
    assert _id_text(ids).tolist() == ["17", "17.5", "17", "17", pd.NA, pd.NA]


def test_ids_of_different_types_are_joined_in_python(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    labels = label_table(predictions("binary"))
    labels["pid"] = labels["pid"].map(
        lambda v: None if pd.isna(v) else str(int(v))
    )  # text ids, numbers in the log
    url = sqlite_store(tmp_path, "binary", labels)
    with caplog.at_level("INFO", logger="monitor.sources.sql"):
        counted, statements = evaluate(url, aggregate=True, task="binary")
    assert not joined_by_the_database(statements)
    assert "labels not joined in the database: ids compared as text in Python" in caplog.text
    assert comparable(counted) == comparable(evaluate(url, aggregate=False, task="binary")[0])
