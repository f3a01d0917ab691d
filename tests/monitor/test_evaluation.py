"""The evaluation pipeline on in-memory sources: windows, label delay, label join, bad rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from monitor.config import settings_from_dict
from monitor.core.errors import SourceError
from monitor.evaluation.evaluators import build_evaluators
from monitor.sources import MemorySource

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def make_log(n: int = 4000, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ts = NOW - timedelta(hours=4) + pd.to_timedelta(rng.uniform(0, 4 * 3600, n), unit="s")
    y = (rng.random(n) < 0.3).astype(float)
    g = rng.random(n) < 0.2
    score = np.round(np.clip(0.3 * y + 0.15 * g + rng.normal(0.35, 0.2, n), 0, 1), 2)
    race = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]).astype(object)
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "ts": [t.isoformat() for t in ts],
            "score": score,
            "label": y,
            "g": g.astype(float),
            "race": race,
        }
    )


def settings(**model: Any) -> Any:
    base: dict[str, Any] = {
        "name": "m",
        "source": {"kind": "memory", "name": "log"},
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [
            {"attribute": "identity", "kind": "indicator", "columns": ["g"]},
            {"attribute": "race", "kind": "categorical", "column": "race", "reference": "a"},
        ],
        "windows": [{"name": "1h", "length": "1h"}, {"name": "3h", "length": "3h"}],
        "min_samples": 5,
    }
    base.update(model)
    return settings_from_dict({"models": [base]})


def evaluate(frame: pd.DataFrame, label_frame: pd.DataFrame | None = None, **model: Any) -> Any:
    mem = {"log": MemorySource(frame, timestamp_column="ts")}
    if label_frame is not None:
        mem["labels"] = MemorySource(label_frame, timestamp_column="labeled_at")
    return build_evaluators(settings(**model), memory_sources=mem)["m"].evaluate(NOW)


def evaluate_with_label_source(frame: pd.DataFrame, arrive_after: timedelta, **model: Any) -> Any:
    """``frame``'s labels moved to their own source, each arriving ``arrive_after`` its prediction."""
    labels = frame[["id", "label"]].copy()
    ts = pd.to_datetime(frame["ts"], utc=True)
    labels["labeled_at"] = [(t + arrive_after).isoformat() for t in ts]
    return evaluate(
        frame.drop(columns=["label"]),
        labels,
        labels={
            "source": {"kind": "memory", "name": "labels"},
            "columns": {"id": "id", "label": "label", "timestamp": "labeled_at"},
        },
        **model,
    )


def in_window(frame: pd.DataFrame, start: datetime, end: datetime) -> pd.DataFrame:
    ts = pd.to_datetime(frame["ts"], utc=True)
    return frame[(ts >= start) & (ts < end)]


def test_windows_match_an_independent_computation() -> None:
    frame = make_log()
    ev = evaluate(frame)
    assert [w.window for w in ev.windows] == ["1h", "3h"]
    for w, hours in zip(ev.windows, (1, 3), strict=True):
        sub = in_window(frame, NOW - timedelta(hours=hours), NOW)
        assert w.n_rows == len(sub)
        g = sub["g"] >= 0.5
        bpsn = sub[(g & (sub.label == 0)) | (~g & (sub.label == 1))]
        got = next(v for v in w.values if v.metric == "bpsn_auc" and v.group == "g")
        assert got.value == pytest.approx(roc_auc_score(bpsn.label, bpsn.score), abs=1e-12)
        # categorical vs a named reference: race=b against race=a only
        sr = {r: (sub[sub.race == r].score >= 0.5).mean() for r in "abc"}
        di = next(v for v in w.values if v.metric == "disparate_impact" and v.group == "b")
        assert di.reference == "a"
        assert di.value == pytest.approx(sr["b"] / sr["a"], abs=1e-12)


def test_label_delay_shifts_label_metrics_only() -> None:
    frame = make_log()
    ev = evaluate(frame, label_delay="1h")
    w = ev.windows[0]
    assert w.label_start == NOW - timedelta(hours=2) and w.label_end == NOW - timedelta(hours=1)
    outcome = in_window(frame, NOW - timedelta(hours=1), NOW)
    labeled = in_window(frame, NOW - timedelta(hours=2), NOW - timedelta(hours=1))
    spd = next(v for v in w.values if v.metric == "statistical_parity_difference" and v.group == "g")
    g = outcome.g >= 0.5
    assert spd.value == pytest.approx((outcome[g].score >= 0.5).mean() - (outcome[~g].score >= 0.5).mean())
    eod = next(v for v in w.values if v.metric == "equal_opportunity_difference" and v.group == "g")
    gl = labeled.g >= 0.5
    pos = labeled.label == 1
    tpr = lambda m: (labeled[m & pos].score >= 0.5).mean()  # noqa: E731
    assert eod.value == pytest.approx(tpr(gl) - tpr(~gl), abs=1e-12)


def test_the_overall_auc_is_the_label_windows_not_the_unlabelled_outcome_windows() -> None:
    """With labels in their own table and ``label_delay``, the outcome window holds no label yet:
    its overall AUC was "the window does not have both labels" on /metrics, in reports and backfill,
    while the AUC family's fair ranges used the label window's. It is the label window's."""
    frame = make_log()
    ts = pd.to_datetime(frame["ts"], utc=True)
    ev = evaluate_with_label_source(frame, timedelta(minutes=50), label_delay="1h")
    w = ev.windows[0]
    (auc,) = [v for v in w.model_values if v.metric == "overall_auc"]
    labeled = frame[(ts >= NOW - timedelta(hours=2)) & (ts < NOW - timedelta(hours=1))]
    assert auc.reason is None
    assert auc.value == pytest.approx(roc_auc_score(labeled.label, labeled.score), abs=1e-12)


def test_the_overall_auc_is_the_label_windows_when_no_metric_of_the_model_needs_labels() -> None:
    """A model monitoring only outcome metrics (``metrics: [disparate_impact]``) still reports the
    overall AUC; with ``label_delay`` it is the label window's too (it came from the outcome window,
    whose rows may have no label yet)."""
    frame = make_log()
    ts = pd.to_datetime(frame["ts"], utc=True)
    ev = evaluate_with_label_source(
        frame, timedelta(minutes=50), label_delay="1h", metrics=["disparate_impact"]
    )
    w = ev.windows[0]
    assert {v.metric for v in w.values} == {"disparate_impact"}
    (auc,) = [v for v in w.model_values if v.metric == "overall_auc"]
    labeled = frame[(ts >= NOW - timedelta(hours=2)) & (ts < NOW - timedelta(hours=1))]
    assert auc.reason is None
    assert auc.value == pytest.approx(roc_auc_score(labeled.label, labeled.score), abs=1e-12)


def test_labels_from_a_separate_source_are_joined_and_only_arrived_ones_count() -> None:
    frame = make_log()
    ts = pd.to_datetime(frame["ts"], utc=True)
    ev = evaluate_with_label_source(frame, timedelta(minutes=30))
    w = ev.windows[0]
    arrived = (ts >= NOW - timedelta(hours=1)) & (ts < NOW - timedelta(minutes=30))
    assert w.n_labeled == int(arrived.sum())
    cov = {s.group: s.label_coverage for s in w.groups}
    sub = frame[(ts >= NOW - timedelta(hours=1)) & (ts < NOW)]
    g_sub = sub.g >= 0.5
    g_arrived = arrived[(ts >= NOW - timedelta(hours=1)) & (ts < NOW)] & g_sub
    assert cov["g"] == pytest.approx(g_arrived.sum() / g_sub.sum())


def test_bad_rows_are_dropped_and_counted_by_reason() -> None:
    frame = make_log(500)
    frame = frame.astype({"score": object, "label": object})
    frame.loc[0, "score"] = "NaN"
    frame.loc[1, "score"] = None
    frame.loc[2, "label"] = 3
    frame.loc[3, "label"] = "yes"
    frame.loc[4, "ts"] = "not a time"
    frame.loc[5, "score"] = 1.7
    ev = evaluate(frame, windows=[{"name": "all", "length": "5h"}], score_range=[0, 1])
    assert dict(ev.rejected) == {
        "score_invalid": 2,
        "label_invalid": 2,
        "timestamp_invalid": 1,
        "score_out_of_range": 1,
    }
    assert ev.windows[0].n_rows == 500 - 6


def test_missing_column_is_a_source_error() -> None:
    with pytest.raises(SourceError, match="race"):
        evaluate(make_log().drop(columns=["race"]))


def test_empty_window_is_nan_with_reason_not_zero() -> None:
    frame = make_log()
    frame["ts"] = (NOW - timedelta(days=30)).isoformat()
    ev = evaluate(frame)
    w = ev.windows[0]
    assert w.n_rows == 0
    for v in w.values:
        assert np.isnan(v.value) and v.reason and v.state == "insufficient_data"


def test_explicit_range_is_one_window() -> None:
    frame = make_log()
    build = build_evaluators(settings(), memory_sources={"log": MemorySource(frame, timestamp_column="ts")})
    ev = build["m"].evaluate(NOW, start=NOW - timedelta(hours=2), end=NOW - timedelta(hours=1))
    assert [w.window for w in ev.windows] == ["range"]
    assert ev.windows[0].n_rows == len(in_window(frame, NOW - timedelta(hours=2), NOW - timedelta(hours=1)))


def test_prediction_only_model_skips_ranking_metrics() -> None:
    frame = make_log()
    frame["pred"] = (frame.score >= 0.5).astype(int)
    ev = evaluate(
        frame, columns={"id": "id", "timestamp": "ts", "score": None, "prediction": "pred", "label": "label"}
    )
    metrics = {v.metric for v in ev.windows[0].values}
    assert "disparate_impact" in metrics and "bpsn_auc" not in metrics


def test_join_on_names_the_prediction_column_and_float_ids_still_join() -> None:
    frame = make_log(400).rename(columns={"id": "request_id"})
    labels = pd.DataFrame(
        {"id": frame["request_id"].astype(str), "label": frame["label"], "labeled_at": frame["ts"]}
    )
    frame = frame.drop(columns=["label"])
    frame["request_id"] = frame["request_id"].astype(
        "float64"
    )  # an integer column with a NULL reads as float
    frame.loc[0, "request_id"] = np.nan
    ev = evaluate(
        frame,
        labels,
        columns={"id": "pid", "timestamp": "ts", "score": "score", "label": "label"},
        labels={
            "source": {"kind": "memory", "name": "labels"},
            "join_on": "request_id",
            "columns": {"id": "id", "label": "label", "timestamp": "labeled_at"},
        },
        windows=[{"name": "all", "length": "5h"}],
    )
    assert ev.windows[0].n_labeled == 399  # every row but the one without an id


def test_label_coverage_is_measured_on_the_label_window() -> None:
    frame = make_log()
    ts = pd.to_datetime(frame["ts"], utc=True)
    frame.loc[ts >= NOW - timedelta(hours=1), "label"] = np.nan  # the last hour has no labels yet
    ev = evaluate(frame, label_delay="1h")
    w = ev.windows[0]
    assert w.label_coverage == pytest.approx(1.0)  # the shifted window is fully labeled
    assert all(g.label_coverage == pytest.approx(1.0) for g in w.groups)
    assert w.n_label_rows == len(in_window(frame, NOW - timedelta(hours=2), NOW - timedelta(hours=1)))


def test_multiclass_config_needs_no_score_column() -> None:
    frame = make_log().drop(columns=["score", "label"])
    frame["action"] = np.where(frame["g"] >= 0.5, "remove", "allow")
    ev = evaluate(
        frame,
        task="multiclass",
        columns={"id": "id", "timestamp": "ts", "prediction": "action"},
        metrics=["multiclass_statistical_parity"],
    )
    assert {v.metric for v in ev.windows[0].values} == {"multiclass_statistical_parity"}


def test_a_list_in_a_group_column_counts_as_missing() -> None:
    frame = make_log(300).astype({"race": object})
    frame.at[3, "race"] = ["a"]
    ev = evaluate(frame, windows=[{"name": "all", "length": "5h"}])
    assert ev.windows[0].missing_group_rows == {"race": 1}


def test_a_reference_that_names_no_value_is_said_loudly_once(caplog: pytest.LogCaptureFixture) -> None:
    """``reference: Whte`` made every comparison undefined without a word, so no alert could fire."""
    import logging

    frame = make_log().assign(race=lambda f: f["race"].map({"a": "White", "b": "Black", "c": "Asian"}))
    frame["sex"] = np.where(np.arange(len(frame)) % 2, "F", "M")
    groups = [
        {"attribute": "race", "kind": "categorical", "column": "race", "reference": "Whte"},
        {
            "attribute": "race_sex",
            "kind": "intersection",
            "columns": ["race", "sex"],
            "reference": ["White", "m"],
        },
        {"attribute": "sex", "kind": "categorical", "column": "sex", "reference": "M"},  # fine
    ]
    mem = {"log": MemorySource(frame, timestamp_column="ts")}
    evaluator = build_evaluators(settings(groups=groups), memory_sources=mem)["m"]
    with caplog.at_level(logging.WARNING, logger="monitor"):
        ev = evaluator.evaluate(NOW)
        evaluator.evaluate(NOW + timedelta(minutes=1))
    said = [r.getMessage() for r in caplog.records if "is no value of column" in r.getMessage()]
    assert len(said) == 2, said  # once each, not per window or tick
    assert "reference 'Whte' of attribute race is no value of column race" in said[0]
    assert "(did you mean `White`?)" in said[0] and "Asian, Black, White" in said[0]
    assert "reference 'm' of attribute race_sex is no value of column sex" in said[1]
    assert "(did you mean `M`?)" in said[1]
    ratios: dict[str, set[str]] = {}
    for v in ev.windows[0].values:
        if v.metric == "disparate_impact":
            ratios.setdefault(v.attribute, set()).add(v.state)
    assert ratios == {"race": {"insufficient_data"}, "race_sex": {"insufficient_data"}, "sex": {"ok"}}
