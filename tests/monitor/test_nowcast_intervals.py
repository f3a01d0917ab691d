"""The estimates' intervals include the calibration's own error (``nowcast.resamples``).

A calibration fitted on a small label window is itself uncertain, and a soft-labelled AUC reads the
map's shape: with 1,500 labelled rows and the step function of plain isotonic regression, a review
measured 70-78% coverage for the AUCs' estimates. Two changes, each tested here against hand values
or an independent computation: the map joins its blocks' centres (centred isotonic regression), and
the map is refitted on Poisson resamples of the labelled rows, whose spread widens each comparison's
intervals (a design effect dividing its weights).
"""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest

import metrics_core as mc
from monitor.config import settings_from_dict
from monitor.core.errors import ConfigError
from monitor.evaluation.evaluators import build_evaluators
from monitor.evaluation.nowcast import (
    Labelled,
    calibration_checks,
    calibration_map,
    cross_fitted,
    design_effects,
    fit_calibration,
    resampled_calibrations,
    widened,
)
from monitor.sources import MemorySource

START = datetime(2026, 1, 1, tzinfo=UTC)
DELAY = timedelta(days=7)
AUCS = ("subgroup_auc", "bpsn_auc")
METRICS = [
    *AUCS,
    "false_positive_rate_difference",
    "equal_opportunity_difference",
    "equalized_odds_difference",
]


def _day(rng: np.random.Generator, day: datetime, rows: int) -> pd.DataFrame:
    """A fair, calibrated model's day: p ~ U(0, 1), score = p, label ~ Bernoulli(p); b is 30%."""
    ts = day + pd.to_timedelta(np.sort(rng.uniform(0, 86400, rows)), unit="s")
    p = rng.uniform(0, 1, rows)
    return pd.DataFrame(
        {
            "id": np.arange(rows),
            "ts": ts,
            "score": np.round(p, 4),
            "label": (rng.random(rows) < p).astype(float),
            "group": np.where(rng.random(rows) < 0.3, "b", "a"),
        }
    )


def _model(*, delay: timedelta, nowcast: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": "loans",
        "source": {"kind": "memory", "name": "log"},
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "group", "kind": "categorical", "column": "group", "reference": "a"}],
        "windows": [{"name": "1d", "length": "1d"}],
        "label_delay": f"{delay.total_seconds():g}s",
        "metrics": METRICS,
        "nowcast": nowcast or {"enabled": False},
        "panes": {"enabled": False},
    }


def _window(
    model: dict[str, Any], log: pd.DataFrame, at: datetime, alerts: dict[str, Any] | None = None
) -> Any:
    source = MemorySource(log, timestamp_column="ts", name="log")
    settings = settings_from_dict({"models": [model], "alerts": alerts or {}})
    with build_evaluators(settings, memory_sources={"log": source}) as built:
        (window,) = built["loans"].evaluate(at).windows
    return window


def _b(values: Any) -> dict[str, mc.MetricValue]:
    return {v.metric: v for v in values if v.group == "b"}


def _days(seed: int, labelled: int, today: int) -> tuple[pd.DataFrame, pd.DataFrame, datetime]:
    """(the log as it is at the end of today - today's labels pending -, the log with them, that time)."""
    rng = np.random.default_rng([seed, 23])
    log = pd.concat([_day(rng, START, labelled), _day(rng, START + DELAY, today)], ignore_index=True)
    at = START + DELAY + timedelta(days=1)
    return log.assign(label=log["label"].where(log["ts"] < at - DELAY)), log, at


def test_the_isotonic_map_joins_the_centres_of_its_blocks() -> None:
    # by hand: pooling adjacent violators gives blocks {0} -> 0, {1, 2} -> 0.5, {3} -> 1, whose
    # centres (mean scores) are 0, 1.5 and 3; the map is the straight lines through those points
    score = np.array([0.0, 1.0, 2.0, 3.0])
    label = np.array([0.0, 1.0, 0.0, 1.0])
    mapped = calibration_map(score, label, np.ones(4), "isotonic")(np.array([-1.0, 0.75, 1.5, 2.25, 4.0]))
    np.testing.assert_allclose(mapped, [0.0, 0.25, 0.5, 0.75, 1.0])


def _estimate(metric: str, v: float, lower: float = math.nan, upper: float = math.nan) -> mc.MetricValue:
    return mc.MetricValue("g", "b", "a", metric, v, lower, upper, -0.1, 0.1, "ok", 500, 500, 500)


def test_a_design_effect_is_one_plus_the_maps_variance_over_the_sampling_variance() -> None:
    base = [_estimate("m1", 0.5, 0.4, 0.6), _estimate("m2", 0.0, -0.02, 0.02), _estimate("m3", 0.1, 0, 0.2)]
    draws = [
        [_estimate("m1", x), _estimate("m2", 0.0), _estimate("m3", y)]
        for x, y in ((0.5, math.nan), (0.6, math.nan), (0.4, math.nan), (0.5, 0.1))
    ]
    # m1: se = 0.2 / (2 * 2) = 0.05, the draws' variance (ddof 1) = 0.02 / 3; m2 does not vary;
    # m3 is undefined under 3 of the 4 maps: too uncertain to estimate
    effects = design_effects(base, draws, z=2.0)
    assert effects == {
        ("g", "b", "a", "m1"): pytest.approx(1 + (0.02 / 3) / 0.05**2),
        ("g", "b", "a", "m2"): 1.0,
        ("g", "b", "a", "m3"): math.inf,
    }


def test_widening_stretches_each_side_by_the_root_of_the_effect_and_judges_again() -> None:
    values = [
        _estimate("gap", 0.2, 0.12, 0.25),  # a violation of [-0.1, 0.1]: its interval lies above 0.1
        _estimate("subgroup_auc", 0.9, 0.85, 0.97),
        _estimate("other", 0.0, -0.05, 0.05),
        _estimate("unsure", 0.3, 0.2, 0.4),
    ]
    values[0] = dataclasses.replace(values[0], state="violation")
    effects = {
        ("g", "b", "a", "gap"): 4.0,
        ("g", "b", "a", "subgroup_auc"): 4.0,
        ("g", "b", "a", "unsure"): math.inf,
    }
    gap, auc, other, unsure = widened(values, effects, min_samples=100)
    # by hand: sqrt(4) = 2; 0.2 - 2 * 0.08 = 0.04 and 0.2 + 2 * 0.05 = 0.3; 0.04 reaches into the range
    assert (gap.value, gap.ci_lower, gap.ci_upper) == (0.2, pytest.approx(0.04), pytest.approx(0.3))
    assert gap.state == "inconclusive"
    assert (auc.ci_lower, auc.ci_upper) == (
        pytest.approx(0.8),
        1.0,
    )  # 0.9 + 2 * 0.07 = 1.04, an AUC stops at 1
    assert other == values[2]  # no effect, nothing changes
    assert math.isnan(unsure.value) and unsure.state == "insufficient_data"
    assert unsure.reason is not None and "resampled calibrations" in unsure.reason


def test_a_labelled_row_of_weight_zero_does_not_break_the_map() -> None:
    # a review's case: sklearn gives the zero-weight row a level between two blocks, a block of no
    # weight whose centre was 0 / 0
    score = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    label = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    weight = np.array([1.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    mapped = calibration_map(score, label, weight, "isotonic")(
        np.array([0.1, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6])
    )
    # without the zero-weight row: blocks {0.1, 0.2, 0.3} -> 0 (centre 0.2), {0.5, 0.6} -> 1 (centre 0.55)
    np.testing.assert_allclose(
        mapped, [0.0, 0.1 / 0.35, 0.15 / 0.35, 0.2 / 0.35, 0.25 / 0.35, 0.3 / 0.35, 1.0]
    )


@pytest.mark.parametrize(
    "alerts", [{}, {"method": "anytime"}, {"adjust": "holm"}], ids=["fixed", "anytime", "holm"]
)
def test_resampling_widens_the_intervals_and_keeps_the_values(alerts: dict[str, Any]) -> None:
    """Whatever interval the engine gives (fixed, a confidence sequence, Holm-adjusted), and for a
    folded metric too (equalized odds: the larger of two gaps)."""
    pending, _, at = _days(0, labelled=1500, today=8000)
    plain_model = _model(delay=DELAY, nowcast={"enabled": True, "resamples": 0})
    plain = _b(_window(plain_model, pending, at, alerts).estimates)
    wide = _b(_window(_model(delay=DELAY, nowcast={"enabled": True}), pending, at, alerts).estimates)
    assert set(plain) == set(wide) == set(METRICS)
    wider = 0
    for metric, v in plain.items():
        w = wide[metric]
        assert w.value == pytest.approx(v.value, rel=1e-9, abs=1e-12)
        assert (w.n_group, w.n_reference, w.support) == (v.n_group, v.n_reference, v.support)
        assert w.ci_lower <= v.ci_lower + 1e-12 and w.ci_upper >= v.ci_upper - 1e-12
        wider += w.ci_upper - w.ci_lower > 1.05 * (v.ci_upper - v.ci_lower)
    assert wider >= 2  # 1,500 labelled rows: the map's error is not negligible (the AUCs' at least)


def test_identity_calibration_without_group_maps_fits_nothing_and_keeps_its_intervals() -> None:
    pending, _, at = _days(1, labelled=1500, today=8000)
    config = {"enabled": True, "calibration": "identity", "group_map_rows": 0}
    plain = _b(_window(_model(delay=DELAY, nowcast={**config, "resamples": 0}), pending, at).estimates)
    resampled = _b(_window(_model(delay=DELAY, nowcast=config), pending, at).estimates)
    assert plain == resampled


def test_a_group_map_is_resampled_too() -> None:
    """Identity scores, but a's recalibration is fitted (1,050 labelled rows): its error widens too."""
    pending, _, at = _days(1, labelled=1500, today=8000)
    config = {"enabled": True, "calibration": "identity", "group_map_rows": 1000}
    plain = _b(_window(_model(delay=DELAY, nowcast={**config, "resamples": 0}), pending, at).estimates)
    resampled = _b(_window(_model(delay=DELAY, nowcast=config), pending, at).estimates)
    assert {m: v.value for m, v in plain.items()} == pytest.approx({m: v.value for m, v in resampled.items()})
    widths = [
        (resampled[m].ci_upper - resampled[m].ci_lower) / (v.ci_upper - v.ci_lower) for m, v in plain.items()
    ]
    assert max(widths) > 1.05 and min(widths) >= 1.0 - 1e-12


def test_the_aucs_estimated_from_a_small_label_window_cover_the_later_truth() -> None:
    """20 fair days, 1,500 labelled rows to calibrate on: the estimates' intervals must cover the value
    the day's labels give at (about) their level. Without resampling they fall short - the test's
    own check that it can fail."""
    covered = {"resampled": dict.fromkeys(AUCS, 0), "plain": dict.fromkeys(AUCS, 0)}
    days = 20
    for seed in range(days):
        pending, labelled, at = _days(seed, labelled=1500, today=5000)
        truth = _b(_window(_model(delay=timedelta(0)), labelled, at).values)
        for name, resamples in (("resampled", 20), ("plain", 0)):
            nowcast = {"enabled": True, "resamples": resamples}
            estimate = _b(_window(_model(delay=DELAY, nowcast=nowcast), pending, at).estimates)
            for metric in AUCS:
                e = estimate[metric]
                covered[name][metric] += e.ci_lower <= truth[metric].value <= e.ci_upper
    assert all(n >= 18 for n in covered["resampled"].values()), covered
    assert sum(covered["plain"].values()) < sum(covered["resampled"].values()), covered


def test_resamples_below_ten_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"models\[0\]\.nowcast\.resamples.*at least 10"):
        settings_from_dict({"models": [_model(delay=DELAY, nowcast={"enabled": True, "resamples": 5})]})


def test_a_groups_own_map_is_sklearns_logistic_regression_on_the_pooled_logit() -> None:
    """Independent reference: scikit-learn's unpenalised logistic regression of the group's labels on
    the logit of the pooled map's probability; a group below ``group_rows`` keeps the pooled map."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    n = 4000
    group = np.where(rng.random(n) < 0.3, "b", np.where(rng.random(n) < 0.05, "c", "a"))
    p = rng.uniform(0.02, 0.98, n)
    label = (rng.random(n) < np.where(group == "b", p**2, p)).astype(float)
    attr = mc.categorical_attribute("g", group, reference="a")
    calibration = fit_calibration(Labelled(p, label, np.ones(n), [attr]), "identity", group_rows=500)
    assert set(calibration.fits["g"]) == {"g=a", "g=b"}  # c: ~140 rows, below 500
    b = group == "b"
    logit = np.log(p[b] / (1 - p[b]))
    fit = LogisticRegression(C=np.inf, tol=1e-12, max_iter=1000).fit(logit[:, None], label[b])
    intercept, slope = calibration.fits["g"]["g=b"]
    assert (intercept, slope) == (
        pytest.approx(fit.intercept_[0], abs=1e-6),
        pytest.approx(fit.coef_[0][0], rel=1e-6),
    )
    q = calibration.probabilities(p, attr)
    np.testing.assert_allclose(q[b], fit.predict_proba(logit[:, None])[:, 1], rtol=1e-6)
    np.testing.assert_array_equal(q[group == "c"], p[group == "c"])


def _miscalibrated_b(seed: int, n: int = 3000) -> tuple[np.ndarray, np.ndarray, np.ndarray, mc.Attribute]:
    rng = np.random.default_rng(seed)
    group = np.where(rng.random(n) < 0.35, "b", "a")
    p = rng.uniform(0.02, 0.98, n)
    label = (rng.random(n) < np.where(group == "b", p**1.4, p)).astype(float)
    return p, label, group, mc.categorical_attribute("g", group, reference="a")


def test_the_check_uses_the_maps_the_estimates_use() -> None:
    """A review's case: b one row short of ``group_map_rows`` keeps the pooled map for its estimates, but
    the cross-fitted check fitted b a map of its own on each half (half the rows were enough there) and
    passed a group the pooled map does not fit. Identity scores and no group map: the cross-fitted
    probabilities are the scores themselves."""
    p, label, group, attr = _miscalibrated_b(0)
    weight = np.ones(len(p))
    just_short = int((group == "b").sum()) + 1
    calibration = fit_calibration(Labelled(p, label, weight, [attr]), "identity", group_rows=just_short)
    assert "g=b" not in calibration.fits.get("g", {})
    q = cross_fitted(Labelled(p, label, weight, [attr]), calibration)
    np.testing.assert_array_equal(q["g"][group == "b"], p[group == "b"])
    checks = calibration_checks([attr], q, label, weight, confidence=0.95, tolerance=0.1, min_samples=100)
    (b,) = [c for c in checks if c.group == "b"]
    assert not b.passed and not b.own_map  # p^1.4: observed / expected about 0.8


def test_every_resample_refits_the_groups_the_calibration_fitted() -> None:
    """b just above ``group_map_rows``: a resample with fewer of b's rows must still refit b's map (else
    the draws' spread measures "own map or pooled", not the map's error)."""
    p, label, group, attr = _miscalibrated_b(1)
    weight = np.ones(len(p))
    calibration = fit_calibration(
        Labelled(p, label, weight, [attr]), "identity", group_rows=int((group == "b").sum())
    )
    assert set(calibration.fits["g"]) == {"g=a", "g=b"}
    draws = resampled_calibrations(Labelled(p, label, weight, [attr]), calibration, resamples=20)
    assert len(draws) == 20 and all(set(d.fits["g"]) == {"g=a", "g=b"} for d in draws)
