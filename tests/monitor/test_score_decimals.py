"""``score_decimals``: scores rounded alike by every engine, and the AUCs' rounding bound.

References: the exact AUCs of the unrounded scores by scikit-learn, a hand-built worst case, and
the row path (which rounds with numpy) for the databases' rounding.
"""

from __future__ import annotations

import math
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from sklearn.metrics import roc_auc_score

import metrics_core as mc
from monitor.config import settings_from_dict
from monitor.core.errors import ConfigError
from monitor.evaluation.evaluators import build_evaluators
from monitor.sources.count_sql import rounded_score
from monitor.tasks import metrics_for
from monitor.tasks.binary import round_scores
from tests.monitor.test_counts import NOW, SQLITE_TIMESTAMPS, comparable, config, dirty_log, sqlite_log
from tests.monitor.test_file_counts import write_parquet

TRICKY = [0.125, 0.135, 0.145, 2.675, 1.0005, 0.9999999, -0.125, -2.5, 1e-10, 0.5, 1.0, 0.0, 7.0, 123.456789]
# beyond 2^48 / 10^k a score is left as it is (y + 1/2 would not be exact): 3e6 at k=9, 5e11 at k=3
TRICKY += [3.0e6 + 0.123456789, 5.0e11 + 0.5, -3.0e6 - 0.5]
BOUNDS = ("subgroup", "bpsn", "bnsp")


def continuous(frame: pd.DataFrame, seed: int = 3) -> pd.DataFrame:
    """The dirty log with unrounded scores (nearly one distinct score per row)."""
    rng = np.random.default_rng(seed)
    score = frame["score"].to_numpy(dtype=float)
    noisy = np.clip(score + rng.normal(0, 0.01, len(frame)), 0, 1)
    return frame.assign(score=np.where(np.isfinite(score) & (score <= 1), noisy, score))


def with_decimals(settings: Any, decimals: int | None) -> Any:
    model = settings.models[0].model_copy(update={"score_decimals": decimals})
    return settings.model_copy(update={"models": [model]})


def evaluate(source: dict[str, Any], *, aggregate: bool, decimals: int | None) -> Any:
    evaluator = build_evaluators(with_decimals(config(source, aggregate=aggregate), decimals))["tox"]
    try:
        return evaluator.evaluate(NOW)
    finally:
        evaluator.source.close()


# -- one rounding, every engine ------------------------------------------------------------------------


@pytest.mark.parametrize("decimals", [0, 2, 3])
def test_sqlite_rounds_bit_for_bit_like_numpy(tmp_path: Path, decimals: int) -> None:
    db = tmp_path / "r.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (i INTEGER, x REAL)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", enumerate(TRICKY))
        conn.execute("INSERT INTO t VALUES (99, 'oops')")  # text in a REAL column stays text
    engine = sa.create_engine(f"sqlite:///{db}")
    table = sa.table("t", sa.column("i"), sa.column("x"))
    with engine.connect() as conn:
        got = dict(conn.execute(sa.select(table.c.i, rounded_score(table.c.x, decimals, sqlite=True))).all())
    engine.dispose()
    expected = round_scores(np.array(TRICKY), decimals)
    assert [got[i] for i in range(len(TRICKY))] == expected.tolist()
    assert got[99] == "oops"


@pytest.mark.integration
@pytest.mark.parametrize("decimals", [0, 2, 3])
def test_postgres_rounds_bit_for_bit_like_numpy(postgres_url: str, decimals: int) -> None:
    engine = sa.create_engine(postgres_url)
    values = sa.values(sa.column("i", sa.Integer), sa.column("x", sa.Double()), name="v").data(
        [(i, x) for i, x in enumerate([*TRICKY, math.nan, math.inf])]
    )
    with engine.connect() as conn:
        got = dict(
            conn.execute(sa.select(values.c.i, rounded_score(values.c.x, decimals, sqlite=False))).all()
        )
    engine.dispose()
    expected = round_scores(np.array([*TRICKY, math.nan, math.inf]), decimals)
    assert [got[i] for i in range(len(TRICKY))] == expected[: len(TRICKY)].tolist()
    assert math.isnan(got[len(TRICKY)]) and got[len(TRICKY) + 1] == math.inf


@pytest.mark.parametrize("decimals", [3, 6, 9])
def test_rounding_twice_changes_nothing_even_for_huge_scores(decimals: int) -> None:
    """The row path rounds what the database already rounded: that must be the identity (found by
    review: with a 1e9 guard, scores near 2^53 / 10^k drifted by one step)."""
    rng = np.random.default_rng(decimals)
    x = np.concatenate([rng.normal(0, 1, 2000), rng.uniform(-1, 1, 2000) * 2.0**52 / 10**decimals])
    once = round_scores(x, decimals)
    assert np.array_equal(round_scores(once, decimals), once)


def test_round_scores_is_half_up_and_idempotent() -> None:
    x = np.array(TRICKY)
    once = round_scores(x, 2)
    # 0.125 is exact in binary: half up gives 0.13 (numpy's round: 0.12); the double nearest 0.145 lies
    # below it (0.14499999999999999): 0.14, as every engine computes it
    assert once.tolist()[:3] == [0.13, 0.14, 0.14] and once[6] == -0.12
    assert np.round(0.125, 2) == 0.12
    assert np.array_equal(round_scores(once, 2), once)


# -- counted (rounded by the engine) equals rows (rounded by numpy) --------------------------------------


@pytest.mark.parametrize("storage", ["iso-text", "epoch-float"])
def test_sqlite_counts_with_score_decimals_equal_rows(tmp_path: Path, storage: str) -> None:
    ts_type, to_stored = SQLITE_TIMESTAMPS[storage]
    source = {
        "kind": "sql",
        "url": sqlite_log(tmp_path, continuous(dirty_log()), ts_type, to_stored),
        "table": "predictions",
    }
    counted = evaluate(source, aggregate=True, decimals=2)
    assert comparable(counted) == comparable(evaluate(source, aggregate=False, decimals=2))
    assert comparable(counted) != comparable(evaluate(source, aggregate=True, decimals=None))


@pytest.mark.integration
def test_postgres_counts_with_score_decimals_equal_rows(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    continuous(dirty_log()).to_sql("decimals_log", engine, index=False)
    engine.dispose()
    source = {"kind": "sql", "url": postgres_url, "table": "decimals_log"}
    assert comparable(evaluate(source, aggregate=True, decimals=2)) == comparable(
        evaluate(source, aggregate=False, decimals=2)
    )


@pytest.mark.integration
@pytest.mark.parametrize("arrow", [True, False])
def test_postgres_float4_scores_are_rounded_like_the_driver_reads_them(
    postgres_url: str, arrow: bool
) -> None:
    """``real`` widens exactly in SQL (0.285 -> 0.28499999642...) but psycopg's text says 0.285: such
    a column is rounded after the read, whatever reads it (found by review)."""
    engine = sa.create_engine(postgres_url)
    table = f"float4_{uuid.uuid4().hex[:6]}"
    frame = dirty_log()
    frame["score"] = np.round(frame["score"], 2) + 0.005  # x.xx5: on the edge of every bin
    frame.to_sql(table, engine, index=False, dtype={"score": sa.REAL()})
    engine.dispose()
    source = {"kind": "sql", "url": postgres_url, "table": table, "arrow": arrow}
    assert comparable(evaluate(source, aggregate=True, decimals=2)) == comparable(
        evaluate(source, aggregate=False, decimals=2)
    )


def test_parquet_counts_with_score_decimals_equal_rows(tmp_path: Path) -> None:
    source = {"kind": "files", "path": write_parquet(tmp_path / "logs", continuous(dirty_log()))}
    assert comparable(evaluate(source, aggregate=True, decimals=2)) == comparable(
        evaluate(source, aggregate=False, decimals=2)
    )


@pytest.mark.parametrize("store", ["sqlite", "parquet"])
def test_rounding_in_the_database_returns_few_combinations(tmp_path: Path, store: str) -> None:
    """The engine rounds (SQLite's expression, DuckDB's): far fewer combinations come back."""
    frame = continuous(dirty_log(6000)).assign(model="tox", race="a", sex="f", black=np.nan, female=np.nan)
    if store == "sqlite":
        source = {
            "kind": "sql",
            "url": sqlite_log(tmp_path, frame, *SQLITE_TIMESTAMPS["epoch-float"]),
            "table": "predictions",
        }
    else:
        source = {"kind": "files", "path": write_parquet(tmp_path / "logs", frame)}
    sizes = {}
    start = NOW - pd.Timedelta(hours=9)
    for decimals in (None, 2):
        evaluator = build_evaluators(with_decimals(config(source, aggregate=True), decimals))["tox"]
        counted = evaluator.plan.read(((start, NOW),), start, NOW, None)
        assert counted.batch.counted
        sizes[decimals] = len(counted.batch.frame)
        evaluator.source.close()
    assert sizes[2] < sizes[None] / 5, sizes


# -- the bound -------------------------------------------------------------------------------------------


def bounded_values(score: np.ndarray, label: np.ndarray, member: np.ndarray) -> dict[str, float]:
    identity = mc.indicator_attribute("identity", {"g": member})
    table = mc.table_for(score, label, [identity])
    names = [f"{k}_auc{suffix}" for k in BOUNDS for suffix in ("", "_rounding_error")]
    report = mc.evaluate(table, identity.comparisons, metrics=names, min_samples=1)
    return {name: report.get(name, "g").value for name in names}


def exact_aucs(score: np.ndarray, label: np.ndarray, member: np.ndarray) -> dict[str, float]:
    """The Jigsaw AUCs of the unrounded scores, by scikit-learn."""
    pos, neg = label == 1, label == 0
    sets = {
        "subgroup": member,
        "bpsn": (member & neg) | (~member & pos),
        "bnsp": (member & pos) | (~member & neg),
    }
    return {k: roc_auc_score(label[rows], score[rows]) for k, rows in sets.items()}


@pytest.mark.parametrize("decimals", [1, 2, 3])
def test_the_bound_holds_against_the_exact_auc(decimals: int) -> None:
    rng = np.random.default_rng(decimals)
    for _ in range(20):
        n = int(rng.integers(200, 2000))
        member = rng.random(n) < 0.3
        label = (rng.random(n) < 0.4).astype(float)
        score = 1 / (1 + np.exp(-(rng.normal(0, 1, n) + 1.2 * label - 0.6 * member)))
        exact = exact_aucs(score, label, member)
        got = bounded_values(round_scores(score, decimals), label, member)
        for k in BOUNDS:
            bound = got[f"{k}_auc_rounding_error"]
            assert 0 <= bound <= 0.5
            assert abs(got[f"{k}_auc"] - exact[k]) <= bound + 1e-12, (k, decimals)


def test_the_bound_is_reached_when_every_tied_pair_was_ordered() -> None:
    """Subgroup positives at 0.44, negatives at 0.43: exact AUC 1; rounded to 0.4 all tie: AUC 1/2,
    bound 1/2 (by hand: 0.5 * (2 * 3) / (2 * 3))."""
    score = np.array([0.44, 0.44, 0.43, 0.43, 0.43, 0.9, 0.1, 0.8, 0.2])
    label = np.array([1.0, 1, 0, 0, 0, 1, 0, 1, 0])
    member = np.array([True] * 5 + [False] * 4)
    assert exact_aucs(score, label, member)["subgroup"] == 1.0
    got = bounded_values(round_scores(score, 1), label, member)
    assert got["subgroup_auc"] == 0.5 and got["subgroup_auc_rounding_error"] == 0.5


def test_the_bounds_are_reported_only_for_rounded_scores(tmp_path: Path) -> None:
    source = {
        "kind": "sql",
        "url": sqlite_log(tmp_path, dirty_log(), *SQLITE_TIMESTAMPS["epoch-float"]),
        "table": "predictions",
    }
    names = {2: set(), None: set()}
    for decimals in names:
        result = evaluate(source, aggregate=True, decimals=decimals)
        names[decimals] = {v.metric for w in result.windows for v in w.values}
    bounds = {f"{k}_auc_rounding_error" for k in BOUNDS}
    assert bounds <= names[2] and not bounds & names[None]
    settings = with_decimals(config(source, aggregate=True), 2)
    assert bounds <= {s.name for s in metrics_for(settings.models[0])}


def test_score_decimals_is_checked() -> None:
    group = {"attribute": "identity", "kind": "indicator", "columns": ["g"]}
    base = {"name": "m", "source": {"kind": "memory"}, "groups": [group]}
    for bad in (
        {"score_decimals": -1},
        {"score_decimals": 10},
        {"score_decimals": 2, "columns": {"score": None, "prediction": "p"}},
    ):
        with pytest.raises(ConfigError, match="score_decimals"):
            settings_from_dict({"models": [base | bad]}, environ={})


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_text_file_counts_with_score_decimals_equal_rows(tmp_path: Path, fmt: str) -> None:
    """CSV / JSON Lines counts group by the score's text; the cleaning rounds it as it rounds rows."""
    from tests.monitor.test_file_counts import counted_by_duckdb, dirty_text_log, write_csv, write_jsonl

    frame = dirty_text_log()
    score = pd.to_numeric(frame["score"], errors="coerce")  # the dirty texts ("n/a", ...) stay as they are
    noisy = np.clip(score + np.random.default_rng(5).normal(0, 0.01, len(frame)), 0, 1)
    frame["score"] = frame["score"].where(~((score >= 0) & (score <= 1)), noisy)
    path = (write_csv if fmt == "csv" else write_jsonl)(tmp_path / "logs", frame, gz=False)
    source = {"kind": "files", "path": path}
    with counted_by_duckdb() as outcomes:
        counted = evaluate(source, aggregate=True, decimals=2)
    assert outcomes == ["counted"]
    assert comparable(counted) == comparable(evaluate(source, aggregate=False, decimals=2))


def test_a_window_of_nearly_distinct_rows_says_so_once_naming_score_decimals(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Raw scores: the counted window is about as long as the rows it stands for. Said in the log
    once per model, with the setting that helps; with rounded scores the advice is not given."""
    frame = continuous(dirty_log(24_000))
    url = sqlite_log(tmp_path, frame, "TEXT", SQLITE_TIMESTAMPS["iso-text"][1])
    source = {"kind": "sql", "url": url, "table": "predictions"}
    for decimals in (None, 2):
        caplog.clear()
        evaluator = build_evaluators(with_decimals(config(source, aggregate=True), decimals))["tox"]
        with evaluator, caplog.at_level("INFO", logger="monitor"):
            for _ in range(2):
                evaluation = evaluator.evaluate(NOW)
        lines = [r.getMessage() for r in caplog.records if "distinct combinations" in r.getMessage()]
        assert evaluation.rows_read >= 10_000
        if decimals is None:
            assert len(lines) == 1, lines
            assert "score_decimals: 4" in lines[0] and "model tox" in lines[0]
        else:
            assert len(lines) <= 1 and not any("score_decimals" in line for line in lines), lines
