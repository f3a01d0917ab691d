"""Regression family: hand-computed values, loop references, holisticai's code, NaN cases, evaluate()."""

from __future__ import annotations

import math
import re
import statistics

import numpy as np
import pytest
from scipy import stats

from metrics_core import regression as rg
from metrics_core.regression import (
    regression_average_score_difference,
    regression_average_score_ratio,
    regression_correlation_difference,
    regression_disparate_impact,
    regression_mae_ratio,
    regression_max_statistical_parity,
    regression_no_disparate_impact_level,
    regression_rmse_ratio,
    regression_statistical_parity,
    regression_statistical_parity_auc,
    regression_zscore_difference,
)
from metrics_core.window.groups import categorical_attribute
from tests.metrics_core.reference import score_interval_slow

# holisticai's docstring examples (group_a = G, group_b = R)
Y10 = np.array([0.8, 0.9, 0.2, 0.1, 0.7, 0.9, 0.8, 0.6, 0.3, 0.5])
G10 = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], dtype=bool)
LIN = np.linspace(-1, 1, 50)
G100 = np.array([1] * 50 + [0] * 50, dtype=bool)


# --- 1. hand-computed values ------------------------------------------------------------


def test_quantile_metrics_by_hand():
    # sorted window 0.1 0.2 0.3 0.5 0.6 0.7 0.8 0.8 0.9 0.9; Q(0.7) = 0.8, Q(0.8) = 0.82, Q(0.5) = 0.65
    assert regression_disparate_impact(Y10, G10, q=0.7) == pytest.approx(1.5)  # (2/4) / (2/6)
    assert regression_statistical_parity(Y10, G10, q=0.7) == pytest.approx(1 / 6)
    assert regression_disparate_impact(Y10, G10, q=0.8) == pytest.approx(1.5)  # (1/4) / (1/6)
    assert regression_statistical_parity(Y10, G10, q=0.8) == pytest.approx(1 / 12)
    assert regression_disparate_impact(Y10, G10, q=0.5) == pytest.approx(1.0)  # (2/4) / (3/6)
    assert regression_statistical_parity(Y10, G10, q=0.5) == pytest.approx(0.0, abs=1e-15)
    # DI is 1.5 from Q(q) in (0.7, 0.9]; at Q(5/9) = 0.7 it is (2/4) / (3/6) = 1: first grid q <= 5/9
    assert regression_no_disparate_impact_level(Y10, G10) == 0.55


def test_score_metrics_by_hand():
    assert regression_average_score_difference(Y10, G10) == pytest.approx(0.5 - 3.8 / 6)
    assert regression_average_score_ratio(Y10, G10) == pytest.approx(0.5 / (3.8 / 6))
    y, g = np.array([1.0, 2.0, 3.0, 2.0, 3.0, 4.0]), np.array([1, 1, 1, 0, 0, 0], dtype=bool)
    assert regression_zscore_difference(y, g) == pytest.approx(-1.0)  # means 2, 3; pooled sd sqrt(4/4)
    assert regression_max_statistical_parity(y, g) == pytest.approx(1 / 3)
    # window 1 2 2 3 3 4: reach of 1, 2, 3, 4 = 0, 2/5, 4/5, 1; gaps 1/3 on (0, 2/5], (2/5, 4/5], (4/5, 1]
    assert regression_statistical_parity_auc(y, g) == pytest.approx(1 / 3)


def test_label_metrics_by_hand_and_holisticai_docstring_values():
    assert regression_rmse_ratio([1.0, 2.0, 1.0, 2.0], [3.0, 2.0, 2.0, 2.0], [1, 1, 0, 0]) == pytest.approx(
        2.0
    )
    assert regression_mae_ratio([1.0, 2.0, 1.0, 2.0], [3.0, 2.0, 2.0, 2.0], [1, 1, 0, 0]) == pytest.approx(
        2.0
    )
    y_pred, y_true = np.concatenate((LIN, LIN)), np.concatenate((LIN**2, LIN**3))
    assert regression_rmse_ratio(y_true, y_pred, G100) == pytest.approx(2.7471209467641367, abs=1e-14)
    assert regression_mae_ratio(y_true, y_pred, G100) == pytest.approx(2.084201388888889, abs=1e-14)
    y_pred, y_true = np.concatenate((LIN, LIN**3)), np.concatenate((LIN, LIN**2))
    assert regression_correlation_difference(y_true, y_pred, G100) == pytest.approx(1.0, abs=1e-14)


# --- 2. slow, obviously correct references ------------------------------------------------


def _random_window(seed, n=400):
    rng = np.random.default_rng(seed)
    attr = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    y_score = np.round(rng.normal(3, 1, n) + 0.3 * (attr == "b"), 1)  # rounded: many ties
    y_true = y_score + rng.normal(0, 0.5 + 0.3 * (attr == "c"), n)
    y_true[rng.random(n) < 0.25] = np.nan
    return y_score, y_true, attr


def _sides(attr, group, reference):
    g = attr == group
    return g, (~g if reference is None else attr == reference)


def share_at_least(values, t):
    return sum(1 for v in values if v >= t) / len(values)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(("group", "reference"), [("b", "a"), ("c", None)])
def test_score_metrics_match_loop_references(seed, group, reference):
    y, _, attr = _random_window(seed)
    g, r = _sides(attr, group, reference)
    yg, yr = list(y[g]), list(y[r])
    for q in (0.5, 0.8, 0.9, 0.37):
        t = float(np.quantile(y, q))  # the q-quantile of the whole window
        sg, sr = share_at_least(yg, t), share_at_least(yr, t)
        assert regression_disparate_impact(y, g, r, q=q) == pytest.approx(sg / sr, abs=1e-12)
        assert regression_statistical_parity(y, g, r, q=q) == pytest.approx(sg - sr, abs=1e-12)
    assert regression_average_score_difference(y, g, r) == pytest.approx(
        statistics.fmean(yg) - statistics.fmean(yr)
    )
    assert regression_average_score_ratio(y, g, r) == pytest.approx(
        statistics.fmean(yg) / statistics.fmean(yr)
    )
    pooled = ((len(yg) - 1) * statistics.variance(yg) + (len(yr) - 1) * statistics.variance(yr)) / (
        len(yg) + len(yr) - 2
    )
    z = (statistics.fmean(yg) - statistics.fmean(yr)) / math.sqrt(pooled)
    assert regression_zscore_difference(y, g, r) == pytest.approx(z, abs=1e-12)
    gaps = [abs(share_at_least(yg, t) - share_at_least(yr, t)) for t in set(yg + yr)]
    assert regression_max_statistical_parity(y, g, r) == pytest.approx(max(gaps), abs=1e-12)
    assert regression_max_statistical_parity(y, g, r) == pytest.approx(
        stats.ks_2samp(yg, yr).statistic, abs=1e-12
    )
    # the SP curve is constant between the levels k/(N-1); evaluate it at the midpoints
    n = len(y)
    area = 0.0
    for k in range(1, n):
        t = float(np.quantile(y, (k - 0.5) / (n - 1)))
        area += abs(share_at_least(yg, t) - share_at_least(yr, t)) / (n - 1)
    assert regression_statistical_parity_auc(y, g, r) == pytest.approx(area, abs=1e-12)
    level = next(
        q
        for q in np.round(np.linspace(1, 0, 101), 2)
        if share_at_least(yr, np.quantile(y, q)) > 0
        and 0.8 <= share_at_least(yg, np.quantile(y, q)) / share_at_least(yr, np.quantile(y, q)) <= 1.25
    )
    assert regression_no_disparate_impact_level(y, g, r) == level


@pytest.mark.parametrize(("group", "reference"), [("b", "a"), ("c", None)])
def test_label_metrics_match_loop_references(group, reference):
    y, t, attr = _random_window(3)
    g, r = _sides(attr, group, reference)

    def labeled(mask):
        return [(p, v) for p, v, m in zip(y, t, mask, strict=True) if m and not math.isnan(v)]

    def rmse(rows):
        return math.sqrt(sum((v - p) ** 2 for p, v in rows) / len(rows))

    def mae(rows):
        return sum(abs(v - p) for p, v in rows) / len(rows)

    def corr(rows):
        return float(np.corrcoef([p for p, _ in rows], [v for _, v in rows])[0, 1])

    lg, lr = labeled(g), labeled(r)
    assert regression_rmse_ratio(t, y, g, r) == pytest.approx(rmse(lg) / rmse(lr), abs=1e-12)
    assert regression_mae_ratio(t, y, g, r) == pytest.approx(mae(lg) / mae(lr), abs=1e-12)
    assert regression_correlation_difference(t, y, g, r) == pytest.approx(corr(lg) - corr(lr), abs=1e-12)


# --- 3. holisticai's code, transcribed (holisticai 1.0.14, bias/metrics/_regression.py) -----


def hai_disparate_impact(group_a, group_b, y_pred, q):
    top = y_pred >= np.quantile(y_pred, q)  # slice_arrays_by_quantile
    with np.errstate(divide="ignore", invalid="ignore"):
        return (group_a[top].sum() / group_a.sum()) / (group_b[top].sum() / group_b.sum())


def hai_no_disparate_impact_level(group_a, group_b, y_pred):
    q = np.linspace(1.0, 0.0, 100)
    for v in q:
        pred = np.quantile(y_pred, v)
        pass_members = y_pred >= pred
        a = sum(group_a * pass_members) / group_a.sum()
        b = sum(group_b * pass_members) / group_b.sum()
        lower_bound = 0.8
        upper_bound = 1.2
        if b > 0 and lower_bound < a / b < upper_bound:
            break
    return pred


def hai_zscore_diff(group_a, group_b, y_pred):
    n_a, n_b = group_a.sum(), group_b.sum()
    std_pool = np.sqrt(
        ((n_a - 1) * y_pred[group_a == 1].std() ** 2.0 + (n_b - 1) * y_pred[group_b == 1].std() ** 2.0)
        / (n_b + n_a - 2)
    )
    return (y_pred[group_a == 1].mean() - y_pred[group_b == 1].mean()) / std_pool


def hai_sp_curve(group_a, group_b, y_pred, n_grid=150):
    thresh = np.linspace(1, 0, n_grid)
    pass_value = np.quantile(y_pred, thresh)
    y_binary = y_pred.reshape(-1, 1) >= pass_value.reshape(1, -1)
    pass_a = y_binary[group_a == 1].sum(axis=0) / group_a.sum()
    pass_b = y_binary[group_b == 1].sum(axis=0) / group_b.sum()
    return np.abs(pass_a - pass_b)


def hai_statistical_parity_auc(group_a, group_b, y_pred, n_grid=150):
    return np.sum(hai_sp_curve(group_a, group_b, y_pred, n_grid) * np.array([1 / n_grid] * n_grid))


def hai_rmse_ratio(group_a, group_b, y_pred, y_true):
    rmse_a = np.sqrt(((y_true[group_a == 1] - y_pred[group_a == 1]) ** 2.0).mean())
    rmse_b = np.sqrt(((y_true[group_b == 1] - y_pred[group_b == 1]) ** 2.0).mean())
    return rmse_a / rmse_b


def test_equals_holisticai_where_no_departure_is_documented():
    y, t, attr = _random_window(8, n=600)
    g, r = attr == "b", attr == "a"  # a named reference: rows of "c" still shape the window's quantiles
    for q in (0.5, 0.8, 0.9):
        assert regression_disparate_impact(y, g, r, q=q) == pytest.approx(
            hai_disparate_impact(g, r, y, q), abs=1e-12
        )
    labeled = ~np.isnan(t)
    # holisticai refuses NaN targets; on the labeled rows alone it gives fairwatch's value
    expected = hai_rmse_ratio(g[labeled], r[labeled], y[labeled], t[labeled])
    assert regression_rmse_ratio(t, y, g, r) == pytest.approx(expected, abs=1e-12)


def test_departure_no_disparate_impact_level_returns_the_quantile_not_the_score():
    assert hai_no_disparate_impact_level(G10, ~G10, Y10) == pytest.approx(0.7)  # a score: Q(55/99)
    assert regression_no_disparate_impact_level(Y10, G10) == 0.55  # the level, on a 0.01 grid


def test_departure_no_disparate_impact_level_bounds_are_closed_and_symmetric():
    # 11 of 50 group rows and 9 of 50 reference rows share the top score: DI at the top = 11/9 = 1.22
    rng = np.random.default_rng(0)
    y = np.concatenate([np.full(11, 10.0), rng.uniform(0, 5, 39), np.full(9, 10.0), rng.uniform(0, 5, 41)])
    g = np.arange(100) < 50
    assert regression_disparate_impact(y, g, q=1.0) == pytest.approx(11 / 9)
    assert regression_no_disparate_impact_level(y, g) == 1.0  # 1.22 is within [0.8, 1.25]
    assert regression_no_disparate_impact_level(y, g, bounds=(0.8, 1.2)) < 1.0
    assert hai_no_disparate_impact_level(g, ~g, y) < 10.0  # holisticai's (0.8, 1.2) rejects the top


def test_departure_zscore_uses_the_usual_pooled_standard_deviation():
    y, g = np.array([1.0, 2.0, 3.0, 2.0, 3.0, 4.0]), np.array([1, 1, 1, 0, 0, 0], dtype=bool)
    ours, theirs = regression_zscore_difference(y, g), hai_zscore_diff(g, ~g, y)
    # holisticai weights the ddof=0 variances by n - 1: its pooled variance is (n-1)/n of ours
    assert theirs == pytest.approx(ours * math.sqrt(3 / 2))
    assert theirs == pytest.approx(-1.224744871391589)


def test_departure_max_statistical_parity_is_exact_not_sampled_at_150_levels():
    y, _, attr = _random_window(4, n=2000)
    g = attr == "b"
    ours, theirs = regression_max_statistical_parity(y, g), hai_sp_curve(g, ~g, y).max()
    assert theirs <= ours + 1e-15  # a grid can only miss the maximum
    assert ours == pytest.approx(stats.ks_2samp(y[g], y[~g]).statistic, abs=1e-12)
    # holisticai's docstring example: there the grid happens to hit the maximum (0.2)
    y_doc = np.concatenate((LIN, LIN**3))
    assert regression_max_statistical_parity(y_doc, G100) == pytest.approx(
        hai_sp_curve(G100, ~G100, y_doc).max()
    )
    # a case the grid misses: 1000 distinct scores, the gap peaks between two of the 150 levels
    z = np.arange(1000.0)
    gz = np.zeros(1000, dtype=bool)
    gz[np.arange(0, 1000, 2)] = True
    gz[500:504] = [True, True, True, True]  # four extra group rows just above the median
    assert hai_sp_curve(gz, ~gz, z).max() < regression_max_statistical_parity(z, gz)


def test_departure_statistical_parity_auc_is_the_exact_area():
    y_doc = np.concatenate((LIN, LIN**3))
    ours = regression_statistical_parity_auc(y_doc, G100)
    assert hai_statistical_parity_auc(G100, ~G100, y_doc) == pytest.approx(
        0.12106666666666668
    )  # its docstring
    assert ours == pytest.approx(0.12202020202020201, abs=1e-12)
    # holisticai's Riemann sum tends to fairwatch's area as its grid is refined
    assert hai_statistical_parity_auc(G100, ~G100, y_doc, n_grid=99_001) == pytest.approx(ours, abs=2e-4)


def test_departure_ratios_are_nan_where_holisticai_returns_a_number_or_inf():
    y = np.array([-1.0, -1.0, -2.0, -2.0])
    g = np.array([1, 1, 0, 0], dtype=bool)
    assert y[g].mean() / y[~g].mean() == 0.5  # holisticai's avg_score_ratio: "fair"-looking 0.5
    assert math.isnan(regression_average_score_ratio(y, g))
    y2 = np.array([5.0, 6.0, 1.0, 2.0])
    assert hai_disparate_impact(g, ~g, y2, 0.9) == math.inf  # no reference row above Q(0.9)
    assert math.isnan(regression_disparate_impact(y2, g, q=0.9))


# --- 4. undefined values through evaluate() ---------------------------------------------------


def _report(y_score, y_true, attr_values, reference, **kw):
    data = {"y_score": y_score} if y_true is None else {"y_score": y_score, "y_true": y_true}
    attr = categorical_attribute("g", attr_values, reference=reference)
    return rg.evaluate(data, [attr], min_samples=1, n_resamples=30, **kw)


@pytest.mark.parametrize(
    ("metric", "y_score", "y_true", "reason"),
    [
        (
            "regression_disparate_impact_q90",
            [5.0, 6.0, 1.0, 2.0],
            None,
            "no reference row reaches the 0.9-quantile",
        ),
        (
            "regression_average_score_ratio",
            [1.0, 2.0, -1.0, -2.0],
            None,
            "mean prediction (-1.5) is not positive",
        ),
        ("regression_zscore_difference", [1.0, 1.0, 2.0, 2.0], None, "the predictions are constant"),
        ("regression_rmse_ratio", [1.0, 2.0, 1.0, 2.0], [0.0, 0.0, 1.0, 2.0], "predictions are exact"),
        (
            "regression_mae_ratio",
            [1.0, 2.0, 1.0, 2.0],
            [0.0, np.nan, np.nan, np.nan],
            "the reference has no labeled rows",
        ),
        (
            "regression_correlation_difference",
            [1.0, 2.0, 1.0, 2.0],
            [1.0, 2.0, 3.0, 3.0],
            "targets are constant",
        ),
        (
            "regression_correlation_difference",
            [1.0, 2.0, 1.0, 2.0],
            [1.0, np.nan, 3.0, 4.0],
            "fewer than two labeled",
        ),
    ],
)
def test_undefined_values_are_nan_with_a_reason(metric, y_score, y_true, reason):
    report = _report(
        np.array(y_score), None if y_true is None else np.array(y_true), ["g", "g", "r", "r"], "r"
    )
    v = report.get(metric, "g")
    assert math.isnan(v.value) and reason in v.reason
    assert v.state == "insufficient_data" and math.isnan(v.ci_lower) and math.isnan(v.ci_upper)


def test_an_absent_reference_makes_every_metric_nan():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    report = _report(y, np.array([1.0, 2.0, 3.0, 4.0]), ["g", "g", "h", "h"], "absent")
    assert {v.metric for v in report.values} == {s.name for s in rg.SPECS}
    for v in report.values:
        assert math.isnan(v.value) and v.state == "insufficient_data", v.metric
        assert v.reason in ("the reference has no rows", "the reference has no labeled rows"), v.metric


# --- 5. evaluate() end to end --------------------------------------------------------------


@pytest.fixture(scope="module")
def window():
    y, t, attr = _random_window(12, n=900)
    attr = attr.astype(object)
    attr[::50] = None  # rows without a group still belong to the window (and to its quantiles)
    return y, t, attr


@pytest.mark.parametrize("reference", ["a", "rest"])
def test_evaluate_matches_the_public_functions(window, reference):
    y, t, attr_values = window
    attr = categorical_attribute("g", attr_values, reference=reference)
    report = rg.evaluate({"y_score": y, "y_true": t}, [attr], n_resamples=60, min_samples=20)
    assert {v.metric for v in report.values} == {s.name for s in rg.SPECS}
    present = np.array([v is not None for v in attr_values])
    for c in attr.comparisons:
        g = attr_values == c.group
        r = present & ~g if reference == "rest" else attr_values == reference
        public = {
            "regression_no_disparate_impact_level": regression_no_disparate_impact_level(y, g, r),
            "regression_average_score_difference": regression_average_score_difference(y, g, r),
            "regression_average_score_ratio": regression_average_score_ratio(y, g, r),
            "regression_zscore_difference": regression_zscore_difference(y, g, r),
            "regression_max_statistical_parity": regression_max_statistical_parity(y, g, r),
            "regression_statistical_parity_auc": regression_statistical_parity_auc(y, g, r),
            "regression_rmse_ratio": regression_rmse_ratio(t, y, g, r),
            "regression_mae_ratio": regression_mae_ratio(t, y, g, r),
            "regression_correlation_difference": regression_correlation_difference(t, y, g, r),
        }
        for q in rg.QUANTILES:
            public[f"regression_disparate_impact_q{round(q * 100)}"] = regression_disparate_impact(
                y, g, r, q=q
            )
            public[f"regression_statistical_parity_q{round(q * 100)}"] = regression_statistical_parity(
                y, g, r, q=q
            )
            tq = np.quantile(y, q)
            counts = tuple(int(x) for x in ((y[g] >= tq).sum(), g.sum(), (y[r] >= tq).sum(), r.sum()))
            di = report.get(f"regression_disparate_impact_q{round(q * 100)}", c.group)
            assert (di.ci_lower, di.ci_upper) == pytest.approx(
                score_interval_slow(*counts, "ratio"), abs=1e-6
            )
            sp = report.get(f"regression_statistical_parity_q{round(q * 100)}", c.group)
            assert (sp.ci_lower, sp.ci_upper) == pytest.approx(
                score_interval_slow(*counts, "difference"), abs=1e-7
            )
        for name, expected in public.items():
            v = report.get(name, c.group)
            assert v.reference == reference and v.n_group == g.sum() and v.n_reference == r.sum()
            assert v.value == pytest.approx(expected, abs=1e-12), name
            if name == "regression_no_disparate_impact_level":
                assert math.isnan(v.ci_lower) and v.state == "ok"  # informational
            else:
                assert v.ci_lower <= v.ci_upper, name
        asd = report.get("regression_average_score_difference", c.group)
        half = 1.959963984540054 * math.sqrt(y[g].var(ddof=1) / g.sum() + y[r].var(ddof=1) / r.sum())
        assert (asd.ci_lower, asd.ci_upper) == pytest.approx((asd.value - half, asd.value + half))
        assert asd.fair_min == -math.inf and asd.state == "ok"  # informational by default
        for name in ("regression_max_statistical_parity", "regression_statistical_parity_auc"):
            v = report.get(name, c.group)
            assert 0.0 <= v.ci_lower <= v.ci_upper <= 1.0
    labeled = ~np.isnan(t)
    assert report.label_coverage["g=b"] == pytest.approx(labeled[attr_values == "b"].mean())


def test_evaluate_flags_a_shifted_group_and_passes_a_fair_one():
    rng = np.random.default_rng(21)
    n = 6000
    attr = rng.choice(["fair", "ref", "shifted"], n)
    y = rng.normal(10, 2, n) - 1.5 * (attr == "shifted")
    t = y + rng.normal(0, 1 + 2 * (attr == "shifted"), n)
    report = rg.evaluate(
        {"y_score": y, "y_true": t}, [categorical_attribute("g", attr, reference="ref")], n_resamples=100
    )
    for name in (
        "regression_disparate_impact_q80",
        "regression_max_statistical_parity",
        "regression_rmse_ratio",
    ):
        assert report.get(name, "shifted").state == "violation", name
        assert report.get(name, "fair").state == "ok", name
    assert report.get("regression_zscore_difference", "shifted").value == pytest.approx(-0.75, abs=0.1)


def test_evaluate_options_and_errors(window):
    y, _, attr_values = window
    attr = categorical_attribute("g", attr_values)
    only = rg.evaluate({"y_score": y}, [attr], n_resamples=10)
    assert {v.metric for v in only.values} == {s.name for s in rg.SPECS if "y_true" not in s.requires}
    assert only.label_coverage == {}
    strict = rg.evaluate(
        {"y_score": y},
        [attr],
        metrics=["regression_no_disparate_impact_level"],
        no_disparate_impact_bounds=(0.99, 1.01),
    )
    loose = rg.evaluate({"y_score": y}, [attr], metrics=["regression_no_disparate_impact_level"])
    for a, b in zip(strict.values, loose.values, strict=True):
        assert a.value <= b.value
    with pytest.raises(
        ValueError, match=re.escape("'regression_rmse_ratio' needs the data key(s) ['y_true']")
    ):
        rg.evaluate({"y_score": y}, [attr], metrics=["regression_rmse_ratio"])
    with pytest.raises(ValueError, match=re.escape("unknown regression metric 'q_disparate_impact'")):
        rg.evaluate({"y_score": y}, [attr], metrics=["q_disparate_impact"])
    with pytest.raises(TypeError, match="quantiles"):
        rg.evaluate({"y_score": y}, [attr], quantiles=[0.7])
    with pytest.raises(ValueError, match="non-finite"):
        rg.evaluate({"y_score": np.where(np.arange(y.size) == 3, np.nan, y)}, [attr])
    with pytest.raises(ValueError, match="low <= high"):
        rg.evaluate({"y_score": y}, [attr], no_disparate_impact_bounds=(1.2, 0.8))


def test_evaluate_is_deterministic_and_row_order_invariant(window):
    y, t, attr_values = window
    perm = np.random.default_rng(1).permutation(y.size)
    kw = {"n_resamples": 20, "metrics": [s.name for s in rg.SPECS if s.interval != "bootstrap"]}
    a = rg.evaluate({"y_score": y, "y_true": t}, [categorical_attribute("g", attr_values)], **kw)
    b = rg.evaluate({"y_score": y, "y_true": t}, [categorical_attribute("g", attr_values)], **kw)
    c = rg.evaluate(
        {"y_score": y[perm], "y_true": t[perm]}, [categorical_attribute("g", attr_values[perm])], **kw
    )
    assert repr(a) == repr(b)
    for va, vc in zip(a.values, c.values, strict=True):  # analytic intervals do not see row order
        assert (va.value, va.ci_lower, va.ci_upper) == pytest.approx(
            (vc.value, vc.ci_lower, vc.ci_upper), nan_ok=True
        )


def test_specs_are_complete():
    fair = {
        "regression_disparate_impact_q50": (0.8, 1.25),
        "regression_disparate_impact_q80": (0.8, 1.25),
        "regression_disparate_impact_q90": (0.8, 1.25),
        "regression_statistical_parity_q50": (-0.1, 0.1),
        "regression_statistical_parity_q80": (-0.1, 0.1),
        "regression_statistical_parity_q90": (-0.1, 0.1),
        "regression_no_disparate_impact_level": None,
        "regression_average_score_difference": None,
        "regression_average_score_ratio": (0.8, 1.25),
        "regression_zscore_difference": (-0.2, 0.2),
        "regression_max_statistical_parity": (0.0, 0.1),
        "regression_statistical_parity_auc": (0.0, 0.075),
        "regression_rmse_ratio": (0.8, 1.25),
        "regression_mae_ratio": (0.8, 1.25),
        "regression_correlation_difference": (-0.1, 0.1),
    }
    assert set(fair) == {s.name for s in rg.SPECS}
    for s in rg.SPECS:
        rng = None if s.fair_range is None else (s.fair_range.min, s.fair_range.max)
        assert rng == fair[s.name], s.name
        assert s.family == "regression" and s.level == "group" and s.computation == "groupwise"
        assert s.source and s.meaning and s.formula and s.support
        assert s.requires <= set(rg.INPUTS) and "y_score" in s.requires
        if s.fair_range is not None:
            assert s.fair_range.min <= s.ideal <= s.fair_range.max


def test_zscore_difference_of_extreme_predictions_does_not_overflow():
    """A prediction of 1e200: the squares overflowed and the z-score came out 0. It is scale-free, so
    the reference is the same hand computation on the predictions divided by 1e200."""
    import warnings

    y = np.array([1.0, 2.0, 3.0, 2.0, 3.0, 4.0]) * 1e200
    g = np.array([True, True, True, False, False, False])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = regression_zscore_difference(y, g)
    assert value == pytest.approx(-1.0, rel=1e-12)  # means 2, 3 (x 1e200); pooled sd sqrt(4/4) (x 1e200)
