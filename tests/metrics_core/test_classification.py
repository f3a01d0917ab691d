"""Binary-classification metrics against plain per-group computations with boolean masks."""

from __future__ import annotations

import math

import numpy as np
import pytest

import metrics_core as mc
from tests.metrics_core.reference import benefit_indices, binary_reference, build, make_window, same

CLASSIFICATION = mc.metric_names(family="classification")
MODEL_INDICES = ("theil_index", "generalized_entropy_index", "coefficient_of_variation")


def test_reference_covers_every_classification_metric():
    """A metric added to the registry without a reference computation fails here."""
    w = make_window(0, n=50)
    g = w.score > 0.4
    assert set(binary_reference(w.score, w.y, g, ~g)) == set(CLASSIFICATION)


# --- hand-computed tiny cases ----------------------------------------------------------------


def _report(score, y, group, *, threshold=0.5, metrics=None):
    attr = mc.indicator_attribute("identity", {"g": group})
    table = mc.table_for(score, y, [attr])
    return mc.evaluate(table, attr.comparisons, metrics=metrics, threshold=threshold, min_samples=1)


def test_selection_metrics_by_hand():
    """G: 10 rows, 6 selected; R: 20 rows, 5 selected."""
    score = [0.9] * 6 + [0.1] * 4 + [0.9] * 5 + [0.1] * 15
    group = [1] * 10 + [0] * 20
    r = _report(score, [0] * 30, group)
    p_g, p_r = 6 / 10, 5 / 20
    pooled_var = (9 * p_g * (1 - p_g) + 19 * p_r * (1 - p_r)) / 28  # = 5.7225 / 28
    p = 11 / 30
    hand = {
        "selection_rate": 0.6,
        "statistical_parity_difference": 0.35,
        "disparate_impact": 2.4,
        "four_fifths_ratio": 1 / 2.4,
        "standardized_selection_rate_difference": 0.35 / math.sqrt(pooled_var),
        "two_sd_rule": 0.35 / math.sqrt(p * (1 - p) * (1 / 10 + 1 / 20)),
    }
    assert hand["standardized_selection_rate_difference"] == pytest.approx(0.774202, abs=1e-6)
    assert hand["two_sd_rule"] == pytest.approx(1.875299, abs=1e-6)
    for name, expected in hand.items():
        assert r.get(name, "g").value == pytest.approx(expected, abs=1e-12), name


def test_opportunity_metrics_by_hand():
    """G: TP=3 FN=1 FP=1 TN=3; R: TP=2 FN=2 FP=2 TN=6 (threshold 0.5)."""
    g_rows = [(0.8, 1)] * 3 + [(0.2, 1)] + [(0.7, 0)] + [(0.3, 0)] * 3
    r_rows = [(0.8, 1)] * 2 + [(0.2, 1)] * 2 + [(0.7, 0)] * 2 + [(0.3, 0)] * 6
    rows = g_rows + r_rows
    score, y = [s for s, _ in rows], [t for _, t in rows]
    group = [1] * len(g_rows) + [0] * len(r_rows)
    r = _report(score, y, group)
    tpr_g, tpr_r, fpr_g, fpr_r = 3 / 4, 2 / 4, 1 / 4, 2 / 8
    ppv_g, ppv_r, acc_g, acc_r = 3 / 4, 2 / 4, 6 / 8, 8 / 12
    hand = {
        "true_positive_rate": tpr_g,
        "false_positive_rate": fpr_g,
        "false_negative_rate": 1 / 4,
        "positive_predictive_value": ppv_g,
        "accuracy": acc_g,
        "equal_opportunity_difference": 0.25,
        "false_positive_rate_difference": 0.0,
        "false_negative_rate_difference": -0.25,
        "average_odds_difference": (0.25 + 0.0) / 2,
        "average_abs_odds_difference": 0.125,
        "equalized_odds_difference": 0.25,
        "accuracy_difference": acc_g - acc_r,
        "precision_ratio": ppv_g / ppv_r,
        "recall_ratio": tpr_g / tpr_r,
    }
    assert (tpr_g - tpr_r, fpr_g - fpr_r) == (0.25, 0.0)
    for name, expected in hand.items():
        assert r.get(name, "g").value == pytest.approx(expected, abs=1e-12), name


def test_orientation_is_group_minus_reference():
    # G selected less than R: difference negative, ratio below 1 (AIF360's unprivileged - privileged)
    r = _report([0.9, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9, 0.1], [0] * 8, [1, 1, 1, 1, 0, 0, 0, 0])
    assert r.get("statistical_parity_difference", "g").value == pytest.approx(0.25 - 0.75)
    assert r.get("disparate_impact", "g").value == pytest.approx(1 / 3)
    assert r.get("four_fifths_ratio", "g").value == pytest.approx(1 / 3)
    assert (
        r.get("standardized_selection_rate_difference", "g").value < 0 and r.get("two_sd_rule", "g").value < 0
    )


def test_threshold_is_inclusive():
    """ŷ = 1 iff score >= threshold: a score equal to the threshold is predicted positive."""
    score = [0.5, 0.5, 0.4999999999, 0.7, 0.5, 0.2]
    group = [1, 1, 1, 1, 0, 0]
    r = _report(score, [1, 0, 1, 0, 1, 0], group, metrics=["selection_rate", "true_positive_rate"])
    assert r.get("selection_rate", "g").value == 3 / 4
    assert r.get("true_positive_rate", "g").value == 1 / 2  # 0.5 (y=1) caught, 0.4999999999 missed
    r = _report(score, [1, 0, 1, 0, 1, 0], group, threshold=0.7, metrics=["selection_rate"])
    assert r.get("selection_rate", "g").value == 1 / 4
    r = _report(score, [1, 0, 1, 0, 1, 0], group, threshold=0.2, metrics=["statistical_parity_difference"])
    assert r.get("statistical_parity_difference", "g").value == 0.0  # everything selected


def test_unlabeled_rows_count_in_selection_rate_only():
    """Rows whose label has not arrived (NaN) are predictions: in SR, not in label metrics."""
    nan = math.nan
    score = [0.9, 0.9, 0.9, 0.1, 0.9, 0.9, 0.1, 0.1]
    y = [1, nan, nan, 0, 1, 0, 1, 0]
    group = [1, 1, 1, 1, 0, 0, 0, 0]
    r = _report(score, y, group)
    assert r.get("selection_rate", "g").value == 3 / 4
    assert r.get("true_positive_rate", "g").value == 1.0  # 1 labeled positive, selected
    assert r.get("false_positive_rate", "g").value == 0.0  # 1 labeled negative, not selected
    assert r.get("positive_predictive_value", "g").value == 1.0  # 1 labeled selected row
    assert r.get("accuracy", "g").value == 1.0  # 2 labeled rows, both right
    assert r.get("accuracy", "g").support == 2
    assert r.get("selection_rate", "g").support == 4
    assert r.label_coverage["identity=g"] == 0.5


def test_smd_uses_the_window_sd_by_hand():
    """SMD = (mean_G - mean_R) / sd(all window scores); with a named reference the rows of
    other groups still count in the sd (metrics.md section 2)."""
    score = np.array([0.2, 0.4, 0.6, 0.8, 0.1, 0.9])
    race = ["b", "b", "a", "a", "c", "c"]
    attr = mc.categorical_attribute("race", race, reference="a")
    table = mc.table_for(score, [0, 1, 0, 1, 0, 1], [attr])
    r = mc.evaluate(table, attr.comparisons, metrics=["standardized_mean_difference"], min_samples=1)
    window_sd = math.sqrt(sum((s - 0.5) ** 2 for s in score) / 5)  # mean 0.5, ddof 1: sqrt(0.5 / 5)
    assert r.get("standardized_mean_difference", "b").value == pytest.approx(
        (0.3 - 0.7) / window_sd, abs=1e-12
    )
    assert r.get("standardized_mean_difference", "c").value == pytest.approx(
        (0.5 - 0.7) / window_sd, abs=1e-12
    )


# --- per-group references on seeded random data ---------------------------------------------

DATA = [(seed, threshold) for seed in (0, 1, 2) for threshold in (0.5, 0.3, 0.7)]


@pytest.mark.parametrize(("seed", "threshold"), DATA, ids=[f"seed{s}-t{t}" for s, t in DATA])
def test_classification_metrics_equal_mask_reference(seed, threshold):
    w = make_window(seed, n=500, decimals=1, unlabeled=0.15)
    assert (w.score == threshold).sum() > 10  # the inclusive boundary is exercised
    built = build(w)
    report = mc.evaluate(
        built.table, built.comparisons, metrics=CLASSIFICATION, threshold=threshold, min_samples=1
    )
    checked = 0
    for case in built.cases:
        expected = binary_reference(w.score, w.y, case.g, case.r, threshold=threshold)
        for metric in CLASSIFICATION:
            got = report.get(metric, case.group, case.attribute)
            assert got.reference == case.reference
            assert same(got.value, expected[metric]), (
                case.attribute,
                case.group,
                metric,
                got,
                expected[metric],
            )
            checked += not math.isnan(expected[metric])
    assert checked > 0.8 * len(built.cases) * len(CLASSIFICATION)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("threshold", [0.5, 0.3])
def test_model_inequality_indices_equal_per_row_benefits(seed, threshold):
    w = make_window(seed, n=400, decimals=2, unlabeled=0.1)
    built = build(w)
    report = mc.evaluate(built.table, built.comparisons, metrics=MODEL_INDICES, threshold=threshold)
    expected = benefit_indices(w.score, w.y, threshold)
    labeled = ~np.isnan(w.y)
    y_pred = (w.score[labeled] >= threshold).astype(int)
    functions = {
        "theil_index": mc.theil_index,
        "generalized_entropy_index": mc.generalized_entropy_index,
        "coefficient_of_variation": mc.coefficient_of_variation,
    }
    for name in MODEL_INDICES:
        assert report.model_value(name).value == pytest.approx(expected[name], abs=1e-12), name
        assert functions[name](w.y[labeled], y_pred) == pytest.approx(expected[name], abs=1e-12), name


def test_inequality_indices_by_hand():
    """y = (1, 0, 1, 0), ŷ = (1, 1, 0, 0): b = (1, 2, 0, 1), mean 1.
    GE(2) = mean(b^2 - 1) / 2 = 2 / 4 / 2; Theil = mean(b ln b) = 2 ln 2 / 4; CV = sd / mean."""
    y, yhat = [1, 0, 1, 0], [1, 1, 0, 0]
    assert mc.generalized_entropy_index(y, yhat) == pytest.approx(0.25, abs=1e-15)
    assert mc.theil_index(y, yhat) == pytest.approx(math.log(2) / 2, abs=1e-15)
    assert mc.coefficient_of_variation(y, yhat) == pytest.approx(math.sqrt(0.5), abs=1e-15)
    report = mc.evaluate(mc.ScoreTable.from_arrays([0.9, 0.9, 0.1, 0.1], y), [], metrics=MODEL_INDICES)
    assert report.model_value("theil_index").value == pytest.approx(math.log(2) / 2, abs=1e-15)


@pytest.mark.parametrize("alpha", [0.5, 3.0, 0.0])
def test_generalized_entropy_alpha_equals_per_row_formula(alpha):
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 300).astype(float)
    y_pred = rng.integers(0, 2, 300).astype(float)
    if alpha == 0.0:
        y_pred[y == 1] = 1  # GE(0) takes log(b): no false negatives (b = 0) allowed
    b = y_pred - y + 1
    ratio = b / b.mean()
    if alpha == 0.0:
        expected = -float(np.mean(np.log(ratio)))
    else:
        expected = float(np.mean(ratio**alpha - 1) / (alpha * (alpha - 1)))
    assert mc.generalized_entropy_index(y, y_pred, alpha=alpha) == pytest.approx(expected, abs=1e-12)


def test_predicted_classes_without_scores():
    """A model logging classes: the table's "scores" are 0/1 and ranking metrics are skipped."""
    w = make_window(4, n=300, unlabeled=0.1)
    yhat = (w.score >= 0.5).astype(float)
    attr = mc.categorical_attribute("race", w.race, reference="rest")
    table = mc.table_for(yhat, w.y, [attr])
    report = mc.evaluate(table, attr.comparisons, has_scores=False, min_samples=1)
    names = {v.metric for v in report.values} | {m.metric for m in report.model}
    assert not names & set(mc.metric_names(family="ranking"))
    assert "overall_auc" not in names and "standardized_mean_difference" not in names
    has_race = np.array([v is not None for v in w.race])
    for value in ("a", "b", "c", "d"):
        g = w.race == value
        expected = binary_reference(yhat, w.y, g, has_race & ~g)
        for metric in CLASSIFICATION:
            if metric == "standardized_mean_difference":
                continue
            assert same(report.get(metric, value).value, expected[metric]), (value, metric)


def test_smd_of_extreme_scores_does_not_overflow():
    """One score of 1e200 (no score_range in the config): its square overflowed, the window sd was
    inf and every group's SMD 0.0 - "perfect parity" - with numpy overflow warnings. The SMD is
    scale-free, so the reference is the same formula by hand on the scores divided by 1e200."""
    import warnings

    score = np.array([1e200, 0.4e200, 0.6e200, 0.8e200, 0.1e200, 0.9e200])
    race = ["b", "b", "a", "a", "c", "c"]
    attr = mc.categorical_attribute("race", race, reference="a")
    table = mc.table_for(score, [0, 1, 0, 1, 0, 1], [attr])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning either
        r = mc.evaluate(table, attr.comparisons, metrics=["standardized_mean_difference"], min_samples=1)
    unit = score / 1e200
    mean = unit.mean()
    window_sd = math.sqrt(sum((s - mean) ** 2 for s in unit) / 5)
    assert r.get("standardized_mean_difference", "b").value == pytest.approx(
        (unit[:2].mean() - unit[2:4].mean()) / window_sd, rel=1e-12
    )
    assert r.get("standardized_mean_difference", "c").value == pytest.approx(
        (unit[4:].mean() - unit[2:4].mean()) / window_sd, rel=1e-12
    )


def test_favorable_negative_compares_the_rates_of_the_good_outcome():
    """A comment flagged (predicted 1) is the bad outcome: the selection family compares the rates of
    *not* being flagged (AIF360's favorable_label), the error rates stay the positive label's. The
    reference: the same evaluation of the flipped predictions, and by hand."""
    score = [0.9] * 6 + [0.1] * 4 + [0.9] * 5 + [0.1] * 15  # G: 6 of 10 flagged; R: 5 of 20
    label = [1, 1, 1, 0, 0, 0, 1, 0, 0, 0] + [1, 1, 0, 0, 0] + [1] * 3 + [0] * 12
    group = [1] * 10 + [0] * 20
    attr = mc.indicator_attribute("identity", {"g": np.array(group, dtype=bool)})
    decided = np.array(score) >= 0.5

    def report(predictions, favorable):
        table = mc.table_for(predictions.astype(float), np.array(label, dtype=float), [attr])
        return mc.evaluate(table, attr.comparisons, has_scores=False, min_samples=1, favorable=favorable)

    negative, flipped, positive = (
        report(decided, "negative"),
        report(~decided, "positive"),
        report(decided, "positive"),
    )
    p_g, p_r = 4 / 10, 15 / 20  # not flagged
    hand = {
        "selection_rate": p_g,
        "statistical_parity_difference": p_g - p_r,
        "disparate_impact": p_g / p_r,
        "four_fifths_ratio": p_g / p_r,
    }
    for name, expected in hand.items():
        assert negative.get(name, "g").value == pytest.approx(expected, abs=1e-12), name
    selection = ["selection_rate", "statistical_parity_difference", "disparate_impact", "four_fifths_ratio",
                 "standardized_selection_rate_difference", "two_sd_rule"]  # fmt: skip
    for name in selection:
        a, b = negative.get(name, "g"), flipped.get(name, "g")
        assert (a.value, a.ci_lower, a.ci_upper, a.state) == (b.value, b.ci_lower, b.ci_upper, b.state), name
    for name in ("equal_opportunity_difference", "false_positive_rate_difference", "accuracy_difference"):
        a, b = negative.get(name, "g"), positive.get(name, "g")
        assert (a.value, a.ci_lower, a.ci_upper) == (b.value, b.ci_lower, b.ci_upper), name
