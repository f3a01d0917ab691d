"""Which decision a model made and which outcome is good: ``thresholds`` (per-group decision thresholds,
a deployed mitigation) and ``favorable`` (``negative``: a positive prediction is the penalty).

References: the decisions and rates by hand with numpy and pandas, the AUC by scikit-learn; the same
model read as rows (memory) and as counts (SQLite) gives the same values.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from monitor.config import settings_from_dict
from monitor.core.errors import ConfigError
from monitor.evaluation.evaluators import build_evaluators
from monitor.sources import MemorySource

NOW = datetime(2026, 3, 2, tzinfo=UTC)


def _log(n: int = 6000, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    race = rng.choice(["White", "Black", "Asian"], n, p=[0.6, 0.25, 0.15])
    label = (rng.random(n) < 0.4).astype(int)
    score = np.clip(0.35 + 0.25 * label - 0.06 * (race == "Black") + rng.normal(0, 0.15, n), 0, 1).round(4)
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "ts": NOW.timestamp() - rng.uniform(1, 3500, n),
            "score": score,
            "label": label,
            "race": race,
        }
    )


def _model(**extra: Any) -> dict[str, Any]:
    return {
        "name": "loans",
        "source": {"kind": "memory", "name": "log"},
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "race", "kind": "categorical", "column": "race", "reference": "White"}],
        "windows": [{"name": "1h", "length": "1h"}],
        "metrics": [
            "statistical_parity_difference",
            "disparate_impact",
            "equal_opportunity_difference",
            "subgroup_auc",
        ],
        "min_samples": 10,
        **extra,
    }


def _values(
    frame: pd.DataFrame, source: dict[str, Any] | None = None, **extra: Any
) -> dict[tuple[str, str], Any]:
    model = _model(**extra) | ({"source": source} if source else {})
    settings = settings_from_dict({"models": [model]})
    memory = {"log": MemorySource(frame, timestamp_column="ts")}
    with build_evaluators(settings, memory_sources=memory) as evaluators:
        (window,) = evaluators["loans"].evaluate(NOW).windows
    return {(v.metric, v.group): v for v in window.values}


@pytest.mark.parametrize("read", ["rows", "counts"])
def test_each_group_is_decided_at_its_own_threshold(read: str, tmp_path: Path) -> None:
    frame = _log()
    source = None
    if read == "counts":
        with sqlite3.connect(tmp_path / "log.db") as db:
            frame.to_sql("decisions", db, index=False)
        source = {"kind": "sql", "url": f"sqlite:///{tmp_path / 'log.db'}", "table": "decisions"}
    values = _values(frame, source, threshold=0.5, thresholds={"race": {"Black": 0.44}})
    decided = frame["score"] >= np.where(frame["race"] == "Black", 0.44, 0.5)
    rate = decided.groupby(frame["race"]).mean()
    assert values["statistical_parity_difference", "Black"].value == pytest.approx(
        rate["Black"] - rate["White"], abs=1e-12
    )
    assert values["disparate_impact", "Asian"].value == pytest.approx(
        rate["Asian"] / rate["White"], abs=1e-12
    )
    positives = frame["label"] == 1
    tpr = decided[positives].groupby(frame["race"][positives]).mean()
    assert values["equal_opportunity_difference", "Black"].value == pytest.approx(
        tpr["Black"] - tpr["White"], abs=1e-12
    )
    black = frame["race"] == "Black"  # the scores' ranking is the thresholds' business of none
    assert values["subgroup_auc", "Black"].value == pytest.approx(
        roc_auc_score(frame["label"][black], frame["score"][black]), abs=1e-12
    )
    # without the override the Black group's selection rate is lower: the thresholds were applied
    plain = _values(frame, source)
    assert (
        plain["statistical_parity_difference", "Black"].value
        < values["statistical_parity_difference", "Black"].value
    )


def test_a_negative_favourable_outcome_compares_who_is_spared() -> None:
    frame = _log()
    values = _values(frame, favorable="negative")
    spared = (frame["score"] < 0.5).groupby(frame["race"]).mean()
    assert values["disparate_impact", "Black"].value == pytest.approx(
        spared["Black"] / spared["White"], abs=1e-12
    )
    assert values["statistical_parity_difference", "Black"].value == pytest.approx(
        spared["Black"] - spared["White"], abs=1e-12
    )
    flagged = (frame["score"] >= 0.5)[frame["label"] == 1].groupby(frame["race"][frame["label"] == 1]).mean()
    assert values["equal_opportunity_difference", "Black"].value == pytest.approx(
        flagged["Black"] - flagged["White"], abs=1e-12
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"thresholds": {"zip": {"1": 0.4}}},
            "column 'zip' is read by none of the model's categorical or intersection groups (race)",
        ),
        ({"thresholds": {"race": {"Black": 0.4}, "sex": {"F": 0.4}}}, "thresholds: one column's values"),
        (
            {"favorable": "negative", "task": "regression", "metrics": None},
            "favorable and thresholds: a binary model's",
        ),
        (
            {
                "thresholds": {"race": {"Black": 0.4}},
                "columns": {"id": "id", "timestamp": "ts", "prediction": "score", "score": None},
            },
            "it has no columns.score",
        ),
        ({"favorable": "good"}, "models[0].favorable: Input should be 'positive' or 'negative'"),
    ],
)
def test_a_bad_decision_setting_names_its_key(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        settings_from_dict({"models": [_model(**extra)]})
    assert message in str(raised.value)


def test_thresholds_with_a_label_delay_judge_the_configured_metrics_only_once() -> None:
    """A review: with labels windows apart from the outcome windows, a run asked for no metric (the
    label window's overall AUC only) computed every ranking metric and judged it - alerts on metrics
    nobody configured, and standardized_mean_difference twice."""
    frame = _log()
    settings = settings_from_dict(
        {
            "models": [
                _model(
                    thresholds={"race": {"Black": 0.44}},
                    label_delay="10m",
                    metrics=[
                        "equal_opportunity_difference",
                        "disparate_impact",
                        "standardized_mean_difference",
                    ],
                )
            ]
        }
    )
    with build_evaluators(
        settings, memory_sources={"log": MemorySource(frame, timestamp_column="ts")}
    ) as evaluators:
        (window,) = evaluators["loans"].evaluate(NOW).windows
    judged = [(v.metric, v.group) for v in window.values]
    assert len(judged) == len(set(judged))
    assert {m for m, _ in judged} == {
        "equal_opportunity_difference",
        "disparate_impact",
        "standardized_mean_difference",
    }
    assert {v.metric for v in window.model_values} >= {"overall_auc"}  # the label window's anchor
