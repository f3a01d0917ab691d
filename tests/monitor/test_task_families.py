"""Every task family, from a real SQLite log through evaluation, alerts and `/metrics`."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from monitor.config import settings_from_dict
from monitor.core.clock import FakeClock
from monitor.evaluation.evaluators import build_evaluators
from monitor.outputs.prometheus.collector import SnapshotCollector
from monitor.service.alerting import AlertTracker
from monitor.service.notifiers import RecordingNotifier
from monitor.service.runner import Runner

NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)
N = 3000


def _base(rng: np.random.Generator) -> pd.DataFrame:
    ts = NOW - timedelta(hours=2) + pd.to_timedelta(rng.uniform(0, 3600, N), unit="s")
    grp = rng.choice(["a", "b"], N, p=[0.6, 0.4])
    return pd.DataFrame({"id": np.arange(N), "ts": [t.isoformat() for t in ts], "grp": grp})


def multiclass(
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, dict[str, Any], str, Callable[[pd.DataFrame], float]]:
    f = _base(rng)
    b = f.grp == "b"
    f["pred"] = np.where(b, rng.choice(["x", "y", "z"], N, p=[0.6, 0.2, 0.2]), rng.choice(["x", "y", "z"], N))
    f["label"] = rng.choice(["x", "y", "z"], N)

    def expected(sub: pd.DataFrame) -> float:
        p = {g: sub[sub.grp == g].pred.value_counts(normalize=True) for g in "ab"}
        return 0.5 * float(sum(abs(p["b"].get(c, 0) - p["a"].get(c, 0)) for c in "xyz"))

    cols = {"prediction": "pred", "label": "label", "score": None}
    return f, {"task": "multiclass", "columns": cols}, "multiclass_statistical_parity", expected


def regression(
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, dict[str, Any], str, Callable[[pd.DataFrame], float]]:
    f = _base(rng)
    f["pred"] = rng.normal(10, 2, N) + 1.5 * (f.grp == "b")
    f["target"] = f.pred + rng.normal(0, 1, N)

    def expected(sub: pd.DataFrame) -> float:
        return float(sub[sub.grp == "b"].pred.mean() - sub[sub.grp == "a"].pred.mean())

    cols = {"score": "pred", "label": "target"}
    # informational by default (the scale of a score is the model's); a configured range makes it alert
    model = {
        "task": "regression",
        "columns": cols,
        "fair_ranges": {"regression_average_score_difference": [-0.5, 0.5]},
    }
    return f, model, "regression_average_score_difference", expected


def recommender(
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, dict[str, Any], str, Callable[[pd.DataFrame], float]]:
    f = _base(rng)
    f["user"] = [f"u{i % 300}" for i in range(N)]
    f["grp"] = np.where(np.arange(N) % 300 < 120, "b", "a")  # the attribute is a property of the user
    f["item"] = np.where(
        f.grp == "b", rng.choice(["i1", "i2", "i3"], N), rng.choice(["i1", "i2", "i3", "i4"], N)
    )
    f["rank"] = rng.integers(1, 6, N)
    f["score"] = rng.uniform(0, 1, N)

    def expected(sub: pd.DataFrame) -> float:
        e = {g: sub[sub.grp == g].item.value_counts(normalize=True) for g in "ab"}
        return 0.5 * float(sum(abs(e["b"].get(i, 0) - e["a"].get(i, 0)) for i in ["i1", "i2", "i3", "i4"]))

    cols = {"user": "user", "item": "item", "rank": "rank", "score": "score", "label": None}
    return f, {"task": "recommender", "columns": cols}, "exposure_total_variation", expected


def clustering(
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, dict[str, Any], str, Callable[[pd.DataFrame], float]]:
    f = _base(rng)
    b = f.grp == "b"
    f["cluster"] = np.where(b, rng.choice([0, 1, 2], N, p=[0.7, 0.2, 0.1]), rng.choice([0, 1, 2], N))
    f["f1"] = f.cluster * 3 + rng.normal(0, 1, N)
    f["f2"] = rng.normal(0, 1, N)

    def expected(sub: pd.DataFrame) -> float:
        p = {g: sub[sub.grp == g].cluster.value_counts(normalize=True) for g in "ab"}
        return 0.5 * float(sum(abs(p["b"].get(c, 0) - p["a"].get(c, 0)) for c in (0, 1, 2)))

    cols = {"cluster": "cluster", "features": ["f1", "f2"], "score": None, "label": None}
    return f, {"task": "clustering", "columns": cols}, "cluster_distribution_total_variation", expected


def text(
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, dict[str, Any], str, Callable[[pd.DataFrame], float]]:
    f = _base(rng)
    hurtful = np.where(f.grp == "b", rng.random(N) < 0.3, rng.random(N) < 0.05)
    f["completion"] = np.where(hurtful, "She is such an IDIOT!", "She is a fine engineer.")

    def expected(sub: pd.DataFrame) -> float:
        rate = {g: sub[sub.grp == g].completion.str.contains("IDIOT").mean() for g in "ab"}
        return float(rate["b"] - rate["a"])

    cols = {"text": "completion", "score": None, "label": None}
    return (
        f,
        {"task": "text", "columns": cols, "options": {"lexicon_file": "lexicon.txt"}},
        "honest_difference",
        expected,
    )


@pytest.mark.parametrize(
    "family", [multiclass, regression, recommender, clustering, text], ids=lambda f: f.__name__
)
def test_family_from_sqlite_to_metrics(family: Callable[..., Any], tmp_path: Path) -> None:
    frame, model, metric, expected = family(np.random.default_rng(11))
    with sqlite3.connect(tmp_path / "log.db") as conn:
        frame.to_sql("predictions", conn, index=False)
    (tmp_path / "lexicon.txt").write_text("idiot\nstupid\n")
    config = {
        "name": "m",
        "source": {"kind": "sql", "url": f"sqlite:///{tmp_path / 'log.db'}", "table": "predictions"},
        "groups": [{"attribute": "grp", "kind": "categorical", "column": "grp", "reference": "a"}],
        "windows": [{"name": "3h", "length": "3h"}],
        "min_samples": 30,
        "metrics": [metric],
        **model,
    }
    config["columns"] = {"id": "id", "timestamp": "ts", **model["columns"]}
    options = config.get("options", {})
    config["options"] = {k: str(tmp_path / v) if k.endswith("_file") else v for k, v in options.items()}
    settings = settings_from_dict({"models": [config], "alerts": {"for": "0s"}})
    monitor = Runner(
        build_evaluators(settings),
        tracker=AlertTracker(for_=timedelta(0), keep_firing_for=timedelta(0)),
        notifiers=[RecordingNotifier()],
        clock=FakeClock(NOW),
    )
    evaluation = monitor.run_model("m")
    assert evaluation is not None, monitor.snapshot().models["m"].last_error
    value = next(v for v in evaluation.windows[0].values if v.metric == metric and v.group == "b")
    assert value.reference == "a"
    assert value.value == pytest.approx(expected(frame), abs=1e-9)
    assert value.state == "violation", value  # every scenario is built biased against group b

    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(monitor.snapshot, version="test"))
    exposed = {
        s.labels.get("group"): s.value
        for fam in text_string_to_metric_families(generate_latest(registry).decode())
        for s in fam.samples
        if s.name == f"fairwatch_{metric}"
    }
    assert exposed["b"] == pytest.approx(value.value)
    alerts = monitor.snapshot().alerts
    assert any(a.labels["metric"] == metric and a.state == "firing" for a in alerts)
