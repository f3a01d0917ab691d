"""Confidence intervals (hand values, scipy, published examples, coverage) and judge()."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, norm
from scipy.stats.contingency import relative_risk

import metrics_core as mc

Z95 = float(norm.ppf(0.975))
COVERAGE_FLOOR = 0.93  # nominal 95%


# --- Wilson --------------------------------------------------------------------------------


def test_wilson_by_hand():
    """8/10: centre (0.8 + z^2/20) / (1 + z^2/10), half z/(1 + z^2/10) sqrt(0.016 + z^2/400)."""
    z = Z95
    denom = 1 + z**2 / 10
    centre = (0.8 + z**2 / 20) / denom
    half = z / denom * math.sqrt(0.8 * 0.2 / 10 + z**2 / 400)
    lo, hi = mc.wilson_interval(8, 10)
    assert float(lo) == pytest.approx(centre - half, abs=1e-12)
    assert float(hi) == pytest.approx(centre + half, abs=1e-12)
    assert (round(float(lo), 4), round(float(hi), 4)) == (0.4902, 0.9433)


@pytest.mark.parametrize("level", [0.95, 0.9, 0.99])
def test_wilson_equals_scipy(level):
    ks, ns = np.meshgrid(np.arange(0, 41), np.array([40, 57, 100, 1000]))
    ks, ns = ks.ravel(), ns.ravel()
    lo, hi = mc.wilson_interval(ks, ns, level=level)
    assert lo.shape == ks.shape
    for k, n, a, b in zip(ks, ns, lo, hi, strict=True):
        ref = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
        assert a == pytest.approx(ref.low, abs=1e-12) and b == pytest.approx(ref.high, abs=1e-12), (k, n)


def test_wilson_empty_group_is_nan():
    lo, hi = mc.wilson_interval([0, 3], [0, 5])
    assert np.isnan(lo[0]) and np.isnan(hi[0]) and np.isfinite(lo[1])


# --- Newcombe ------------------------------------------------------------------------------

# Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10 (score, no CC).
NEWCOMBE_TABLE_II = [
    ((56, 70, 48, 80), (0.0524, 0.3339)),
    ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((6, 7, 2, 7), (0.0582, 0.8062)),
    ((5, 56, 0, 29), (-0.0381, 0.1926)),
    ((0, 10, 0, 20), (-0.1611, 0.2775)),
    ((0, 10, 0, 10), (-0.2775, 0.2775)),
    ((10, 10, 0, 20), (0.6791, 1.0000)),
    ((10, 10, 0, 10), (0.6075, 1.0000)),
]


@pytest.mark.parametrize(("counts", "published"), NEWCOMBE_TABLE_II)
def test_newcombe_published_examples(counts, published):
    lo, hi = mc.newcombe_interval(*counts)
    assert (round(float(lo), 4), round(float(hi), 4)) == published


def test_newcombe_equals_hybrid_of_scipy_wilson():
    rng = np.random.default_rng(7)
    n1, n2 = rng.integers(1, 200, 50), rng.integers(1, 200, 50)
    k1, k2 = rng.integers(0, n1 + 1), rng.integers(0, n2 + 1)
    lo, hi = mc.newcombe_interval(k1, n1, k2, n2)
    for i in range(50):
        w1 = binomtest(int(k1[i]), int(n1[i])).proportion_ci(method="wilson")
        w2 = binomtest(int(k2[i]), int(n2[i])).proportion_ci(method="wilson")
        p1, p2 = k1[i] / n1[i], k2[i] / n2[i]
        exp_lo = p1 - p2 - math.sqrt((p1 - w1.low) ** 2 + (w2.high - p2) ** 2)
        exp_hi = p1 - p2 + math.sqrt((w1.high - p1) ** 2 + (p2 - w2.low) ** 2)
        assert lo[i] == pytest.approx(exp_lo, abs=1e-12) and hi[i] == pytest.approx(exp_hi, abs=1e-12)


# --- Katz log --------------------------------------------------------------------------------


def test_katz_by_hand():
    """20/100 over 40/100: RR 0.5, se = sqrt(1/20 - 1/100 + 1/40 - 1/100) = sqrt(0.055)."""
    lo, hi = mc.katz_log_interval(20, 100, 40, 100)
    se = math.sqrt(0.055)
    assert float(lo) == pytest.approx(0.5 * math.exp(-Z95 * se), abs=1e-12)
    assert float(hi) == pytest.approx(0.5 * math.exp(Z95 * se), abs=1e-12)


def test_katz_equals_scipy_relative_risk():
    rng = np.random.default_rng(3)
    n1, n2 = rng.integers(5, 300, 60), rng.integers(5, 300, 60)
    k1, k2 = rng.integers(1, n1), rng.integers(1, n2)  # no empty cell
    for level in (0.95, 0.9):
        lo, hi = mc.katz_log_interval(k1, n1, k2, n2, level=level)
        for i in range(60):
            ci = relative_risk(int(k1[i]), int(n1[i]), int(k2[i]), int(n2[i])).confidence_interval(level)
            assert lo[i] == pytest.approx(ci.low, rel=1e-12) and hi[i] == pytest.approx(ci.high, rel=1e-12)


def test_katz_zero_cells_add_one_half():
    """A zero cell adds 0.5 to every cell: a = k1 + 0.5 of n1 + 1, c = k2 + 0.5 of n2 + 1."""
    # k1 = 0: the ratio is 0, the lower bound 0, the upper from the corrected table
    lo, hi = mc.katz_log_interval(0, 20, 5, 40)
    a, b, c, d = 0.5, 21.0, 5.5, 41.0
    se = math.sqrt(1 / a - 1 / b + 1 / c - 1 / d)
    assert float(lo) == 0.0
    assert float(hi) == pytest.approx((a / b) / (c / d) * math.exp(Z95 * se), abs=1e-12)
    # k1 = n1 (a zero "not selected" cell): centre stays the observed ratio, se corrected
    lo, hi = mc.katz_log_interval(10, 10, 5, 10)
    a, b, c, d = 10.5, 11.0, 5.5, 11.0
    se = math.sqrt(1 / a - 1 / b + 1 / c - 1 / d)
    assert float(lo) == pytest.approx(2.0 * math.exp(-Z95 * se), abs=1e-12)
    assert float(hi) == pytest.approx(2.0 * math.exp(Z95 * se), abs=1e-12)
    # k2 = 0: the ratio itself is undefined
    lo, hi = mc.katz_log_interval(3, 10, 0, 10)
    assert np.isnan(lo) and np.isnan(hi)


# --- other intervals -------------------------------------------------------------------------


def test_normal_interval_and_bonferroni():
    lo, hi = mc.normal_interval(0.1, 0.0025)
    assert float(lo) == pytest.approx(0.1 - Z95 * 0.05, abs=1e-12)
    assert float(hi) == pytest.approx(0.1 + Z95 * 0.05, abs=1e-12)
    lo, hi = mc.normal_interval([0.98], [0.0004], bounds=(0.0, 1.0))
    assert hi[0] == 1.0
    assert mc.bonferroni_level(0.95, 10) == pytest.approx(0.995)
    with pytest.raises(ValueError, match="level"):
        mc.wilson_interval(1, 2, level=1.5)
    with pytest.raises(ValueError, match="n_comparisons"):
        mc.bonferroni_level(0.95, 0)


def test_poisson_bootstrap_is_seeded():
    cells = np.array([[30.0, 70.0], [5.0, 15.0]])

    def share(c):
        return c[..., 0] / c.sum(-1)

    a = mc.poisson_bootstrap_interval(share, cells, seed=1)
    b = mc.poisson_bootstrap_interval(share, cells, seed=1)
    c = mc.poisson_bootstrap_interval(share, cells, seed=2)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    assert np.all(a[0] < [0.3, 0.25]) and np.all(a[1] > [0.3, 0.25])


# --- coverage ----------------------------------------------------------------------------------

REPS = 2000


def _coverage(lo, hi, truth):
    return float(np.mean((lo <= truth) & (truth <= hi)))


@pytest.mark.parametrize(("n", "p"), [(50, 0.3), (200, 0.1), (30, 0.5), (100, 0.05)])
def test_wilson_coverage(n, p):
    k = np.random.default_rng(1).binomial(n, p, REPS)
    assert _coverage(*mc.wilson_interval(k, n), p) >= COVERAGE_FLOOR


@pytest.mark.parametrize(
    ("n1", "p1", "n2", "p2"), [(60, 0.3, 80, 0.5), (40, 0.2, 200, 0.25), (100, 0.5, 100, 0.5)]
)
def test_newcombe_coverage(n1, p1, n2, p2):
    rng = np.random.default_rng(2)
    k1, k2 = rng.binomial(n1, p1, REPS), rng.binomial(n2, p2, REPS)
    assert _coverage(*mc.newcombe_interval(k1, n1, k2, n2), p1 - p2) >= COVERAGE_FLOOR


@pytest.mark.parametrize(
    ("n1", "p1", "n2", "p2"), [(100, 0.3, 100, 0.4), (60, 0.2, 150, 0.3), (200, 0.5, 80, 0.6)]
)
def test_katz_coverage(n1, p1, n2, p2):
    rng = np.random.default_rng(3)
    k1, k2 = rng.binomial(n1, p1, REPS), rng.binomial(n2, p2, REPS)
    assert _coverage(*mc.katz_log_interval(k1, n1, k2, n2), p1 / p2) >= COVERAGE_FLOOR


AUC_TRUE = float(norm.cdf(1 / math.sqrt(2)))
# metric -> its true value when every group has the same score distribution as the rest
COVERED = {
    "subgroup_auc": AUC_TRUE,  # DeLong
    "bpsn_auc": AUC_TRUE,
    "bnsp_auc": AUC_TRUE,
    "negative_aeg": 0.0,
    "positive_aeg": 0.0,
    "statistical_parity_difference": 0.0,  # Newcombe
    "equal_opportunity_difference": 0.0,
    "false_positive_rate_difference": 0.0,
    "accuracy_difference": 0.0,
    "disparate_impact": 1.0,  # Katz
    "precision_ratio": 1.0,
    "recall_ratio": 1.0,
    "four_fifths_ratio": 1.0,  # Katz, transformed
    "average_odds_difference": 0.0,  # normal, summed variances
    "standardized_mean_difference": 0.0,  # normal
    "standardized_selection_rate_difference": 0.0,  # Poisson bootstrap
    "two_sd_rule": 0.0,
}


@pytest.fixture(scope="module")
def simulated_groups():
    """1000 groups of 100 positives and 100 negatives with binormal scores (shift d = 1), each a
    categorical group compared with the rest: true AUC Phi(d / sqrt 2), true AEG 0, and
    (threshold 0.5) true selection-rate difference 0, ratio 1."""
    rng = np.random.default_rng(2024)
    groups, per = 1000, 100
    y = np.tile(np.r_[np.ones(per), np.zeros(per)], groups)
    score = rng.normal(size=y.size) + 1.0 * y
    attr = mc.categorical_attribute("sim", np.repeat(np.arange(groups), 2 * per))
    table = mc.table_for(score, y, [attr])
    return mc.evaluate(table, attr.comparisons, metrics=list(COVERED), min_samples=1)


@pytest.mark.parametrize(("metric", "truth"), list(COVERED.items()))
def test_evaluate_interval_coverage(simulated_groups, metric, truth):
    values = [v for v in simulated_groups.values if v.metric == metric]
    assert len(values) == 1000
    lo = np.array([v.ci_lower for v in values])
    hi = np.array([v.ci_upper for v in values])
    assert _coverage(lo, hi, truth) >= COVERAGE_FLOOR
    assert np.all(hi - lo > 0)


def test_intervals_contain_the_estimate():
    """Every analytic interval (all but the bootstrap ones) contains its point estimate."""
    from tests.metrics_core.reference import build, make_window

    w = make_window(8, n=600, decimals=2, unlabeled=0.1)
    built = build(w)
    report = mc.evaluate(built.table, built.comparisons, min_samples=1)
    checked = 0
    for v in report.values:
        if mc.get_metric(v.metric).interval == "bootstrap" or math.isnan(v.ci_lower):
            continue
        assert v.ci_lower - 1e-12 <= v.value <= v.ci_upper + 1e-12, v
        checked += 1
    assert checked > 500


def test_higher_level_gives_wider_intervals():
    from tests.metrics_core.reference import build, make_window

    built = build(make_window(9, n=400))
    narrow = mc.evaluate(built.table, built.comparisons, confidence=0.8, min_samples=1)
    wide = mc.evaluate(built.table, built.comparisons, confidence=0.99, min_samples=1)
    for a, b in zip(narrow.values, wide.values, strict=True):
        assert a.value == b.value or (math.isnan(a.value) and math.isnan(b.value))
        if not (math.isnan(a.ci_lower) or math.isnan(b.ci_lower)):
            assert b.ci_lower <= a.ci_lower + 1e-12 and a.ci_upper <= b.ci_upper + 1e-12, (a, b)


# --- judge ----------------------------------------------------------------------------------------


def test_judge_states_by_hand():
    value = [0.9, 1.3, 0.7, 0.5, 1.25, 0.79, math.nan, 0.9, 0.5, 2.0]
    lo = [0.85, 1.1, 0.6, 0.4, 1.2, 0.5, math.nan, 0.85, math.nan, 1.25]
    hi = [0.95, 1.4, 0.9, 0.79, 1.3, 0.8, math.nan, 0.95, math.nan, 3.0]
    support = [500, 500, 500, 500, 500, 500, 500, 10, 500, 500]
    states = mc.judge(value, lo, hi, 0.8, 1.25, support=support, min_samples=30).tolist()
    assert states == [
        "ok",  # inside
        "inconclusive",  # above, interval reaches 1.25
        "inconclusive",  # below, interval reaches 0.8
        "violation",  # the whole interval below 0.8
        "ok",  # on the closed upper bound
        "inconclusive",  # interval touches 0.8 exactly (closed range)
        "insufficient_data",  # NaN never alerts
        "insufficient_data",  # 10 < min_samples, even though inside
        "inconclusive",  # outside with no interval: not a violation
        "inconclusive",  # interval touches 1.25
    ]


def test_judge_open_and_informational_ranges():
    # AUC family: at least overall - 0.05, no upper bound
    states = mc.judge(
        [0.99, 0.7, 0.7], [0.98, 0.6, 0.66], [1.0, 0.74, 0.8], 0.8, math.inf, support=100, min_samples=1
    )
    assert states.tolist() == ["ok", "violation", "inconclusive"]
    # informational: no range at all
    states = mc.judge(
        [123.0, math.nan], [0.0, 0.0], [1.0, 1.0], -math.inf, math.inf, support=100, min_samples=1
    )
    assert states.tolist() == ["ok", "insufficient_data"]


def test_min_samples_gates_evaluate():
    rng = np.random.default_rng(5)
    n = 400
    group = rng.random(n) < 0.5
    score = np.where(group, rng.random(n) * 0.5, rng.random(n))  # G selected far less often
    y = (rng.random(n) < 0.5).astype(float)
    attr = mc.indicator_attribute("identity", {"g": group})
    table = mc.table_for(score, y, [attr])
    metric = ["statistical_parity_difference"]
    judged = mc.evaluate(table, attr.comparisons, metrics=metric, min_samples=30).get(metric[0], "g")
    assert judged.state == "violation"  # about 0 vs 0.5 selected, with ~200 rows a side
    gated = mc.evaluate(table, attr.comparisons, metrics=metric, min_samples=1000).get(metric[0], "g")
    assert gated.state == "insufficient_data" and gated.value == judged.value
    assert gated.reason is None  # a defined value held back by the gate, not an undefined one
