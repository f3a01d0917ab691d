"""Calibration of the alerting intervals: exact one-sided errors at the fair-range bounds, and coverage.

A value is a *violation* when its whole interval lies outside the fair range, so what must hold
is each tail: with the true value exactly at a bound, the interval must lie wholly beyond it at
most 2.5% of the time (at the default 95% level). For the count-based metrics this is computed
exactly, by enumerating every pair of binomial outcomes (no Monte-Carlo error); for the rest by
seeded simulation. ``docs/alerts.md`` publishes the same figures (``benchmarks/calibration.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, norm

import metrics_core as mc
from metrics_core.binary.window import ConfusionWindow
from metrics_core.stats.auc import auc_delong, auc_score_interval
from metrics_core.stats.score import (
    _score,
    constrained_rates_difference,
    constrained_rates_ratio,
    scas_difference_interval,
    scas_ratio_interval,
)
from tests.metrics_core.reference import auc_score_interval_slow, constrained_mle_slow, score_interval_slow

Z = float(norm.ppf(0.975))


# --- 1. the intervals are what their definitions say -------------------------------------------


def _tables(seed: int, count: int) -> list[tuple[int, int, int, int]]:
    """Random 2x2 tables, a third of them large (intervals far narrower than any search grid's spacing)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        top = 10**6 if i % 3 == 0 else 2000
        n1, n2 = int(rng.integers(20, top)), int(rng.integers(20, 10 * top))
        out.append((int(rng.integers(1, n1)), n1, int(rng.integers(1, n2)), n2))
    return out


@pytest.mark.parametrize("contrast", ["difference", "ratio"])
@pytest.mark.parametrize("skew", [True, False])
def test_score_intervals_equal_their_definition(contrast: str, skew: bool) -> None:
    fast = scas_difference_interval if contrast == "difference" else scas_ratio_interval
    for k1, n1, k2, n2 in _tables(1, 12):
        lo, hi = fast(k1, n1, k2, n2, skew=skew)
        slow = score_interval_slow(k1, n1, k2, n2, contrast, skew=skew)
        assert (float(lo), float(hi)) == pytest.approx(slow, rel=1e-6, abs=1e-8), (k1, n1, k2, n2)


def test_miettinen_nurminen_published_example() -> None:
    """Newcombe (1998), table II, example (a), method 6 (Miettinen-Nurminen): 0.0528 to 0.3382."""
    lo, hi = scas_difference_interval(56, 70, 48, 80, skew=False)
    assert (round(float(lo), 4), round(float(hi), 4)) == (0.0528, 0.3382)


@pytest.mark.parametrize("contrast", ["difference", "ratio"])
def test_constrained_maximum_likelihood_closed_forms(contrast: str) -> None:
    rng = np.random.default_rng(2)
    for k1, n1, k2, n2 in _tables(3, 20):
        p1h, p2h = k1 / n1, k2 / n2
        theta = (
            (p1h - p2h) * rng.uniform(0, 1.5)
            if contrast == "difference"
            else (p1h / p2h) * rng.uniform(0.3, 2)
        )
        closed = constrained_rates_difference if contrast == "difference" else constrained_rates_ratio
        p1, p2 = closed(*map(np.float64, (k1, n1, k2, n2)), np.float64(theta))
        slow = constrained_mle_slow(k1, n1, k2, n2, contrast, theta)
        assert (float(p1), float(p2)) == pytest.approx(slow, abs=1e-7), (k1, n1, k2, n2, theta)


@pytest.mark.parametrize(("contrast", "theta"), [("difference", 0.1), ("ratio", 1.25), ("ratio", 0.8)])
def test_skewness_term_is_the_third_cumulant_of_the_score(contrast: str, theta: float) -> None:
    """mu3 of the skewness correction equals the exact third central moment of S = p1^ - c p2^."""
    n1, n2, p2 = 40, 90, 0.3
    p1 = p2 + theta if contrast == "difference" else theta * p2
    c = 1.0 if contrast == "difference" else theta
    x1, x2 = np.arange(n1 + 1), np.arange(n2 + 1)
    w = np.outer(binom.pmf(x1, n1, p1), binom.pmf(x2, n2, p2))
    s = x1[:, None] / n1 - c * x2[None, :] / n2
    mean = float((w * s).sum())
    third = float((w * (s - mean) ** 3).sum())
    mu3 = p1 * (1 - p1) * (1 - 2 * p1) / n1**2 - c**3 * p2 * (1 - p2) * (1 - 2 * p2) / n2**2
    assert third == pytest.approx(mu3, rel=1e-9)


def test_auc_score_interval_equals_its_definition() -> None:
    rng = np.random.default_rng(4)
    for i in range(25):
        top = 10**6 if i % 3 == 0 else 500
        auc, nx, ny = rng.uniform(0.3, 1.0), int(rng.integers(1, top)), int(rng.integers(1, 10 * top))
        lo, hi = auc_score_interval(auc, nx, ny)
        assert (float(lo), float(hi)) == pytest.approx(auc_score_interval_slow(auc, nx, ny), abs=1e-9)
    assert all(np.isnan(auc_score_interval(0.7, 0, 10)))


def test_auc_hull_with_the_logit_wald_interval_equals_its_definition() -> None:
    """Given a DeLong variance, the interval is the hull of method 5 and the logit Wald interval: it
    contains both, and equals the slow reference; at AUC 1 there is no logit and method 5 stands."""
    rng = np.random.default_rng(5)
    widened = 0
    for _ in range(40):
        auc, nx, ny = rng.uniform(0.5, 0.99), int(rng.integers(20, 400)), int(rng.integers(20, 4000))
        var = rng.uniform(0.2, 3.0) * auc * (1 - auc) / min(nx, ny)
        lo, hi = auc_score_interval(auc, nx, ny, variance=var)
        m5 = auc_score_interval(auc, nx, ny)
        slow = auc_score_interval_slow(auc, nx, ny, variance=var)
        assert (float(lo), float(hi)) == pytest.approx(slow, abs=1e-9)
        assert lo <= m5[0] and hi >= m5[1]
        widened += bool(lo < m5[0] - 1e-12 or hi > m5[1] + 1e-12)
    assert widened >= 10  # the logit interval is the wider one often enough to matter
    lo, hi = auc_score_interval(1.0, 50, 50, variance=0.0)
    assert (float(lo), float(hi)) == pytest.approx(auc_score_interval_slow(1.0, 50, 50), abs=1e-9)


# --- 2. exact one-sided errors at the fair range's bounds --------------------------------------


def _support(n: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    sd = math.sqrt(n * p * (1 - p)) + 1
    x = np.arange(max(0, int(n * p - 9 * sd)), min(n, int(n * p + 9 * sd) + 1) + 1)
    return x, binom.pmf(x, n, p)


def p_beyond(contrast: str, n1: int, n2: int, p2: float, bound: float, side: str) -> float:
    """P(the interval lies wholly beyond ``bound``) when the true contrast is exactly ``bound``.

    By test inversion, the 95% interval lies above ``bound`` exactly when the score at ``bound``
    exceeds +z (below: when it is under -z); ``test_score_at_the_bound_decides`` checks that.
    """
    p1 = p2 + bound if contrast == "difference" else bound * p2
    x1, w1 = _support(n1, p1)
    x2, w2 = _support(n2, p2)
    k1, k2 = np.meshgrid(x1.astype(float), x2.astype(float), indexing="ij")
    score = _score(
        k1, float(n1), k2, float(n2), np.full(k1.shape, bound), ratio=contrast == "ratio", z=Z, skew=True
    )
    beyond = score > Z if side == "above" else score < -Z
    return float(w1 @ beyond.astype(float) @ w2)


def test_score_at_the_bound_decides() -> None:
    for k1, n1, k2, n2 in _tables(5, 40):
        for contrast, fast, bounds in (
            ("difference", scas_difference_interval, (-0.1, 0.1)),
            ("ratio", scas_ratio_interval, (0.8, 1.25)),
        ):
            lo, hi = fast(k1, n1, k2, n2)
            for b in bounds:
                s = float(
                    _score(
                        *map(np.float64, (k1, n1, k2, n2)),
                        np.float64(b),
                        ratio=contrast == "ratio",
                        z=Z,
                        skew=True,
                    )
                )
                assert (float(lo) > b) == (s > Z) and (float(hi) < b) == (s < -Z)


RATES = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7)
SIZES = [(100, 100), (100, 1000), (300, 3000), (1000, 1000), (1000, 10000), (10000, 100000)]


@pytest.mark.parametrize(("n1", "n2"), SIZES)
@pytest.mark.parametrize(
    ("contrast", "bound", "side"),
    [
        ("ratio", 1.25, "above"),
        ("ratio", 0.8, "below"),
        ("difference", 0.1, "above"),
        ("difference", -0.1, "below"),
    ],
)
def test_one_sided_error_at_the_bounds(contrast: str, bound: float, side: str, n1: int, n2: int) -> None:
    """From min_samples (100) to 10^4 rows in the group, the false-violation probability at a bound stays
    at the nominal 2.5%: at most 3% at any base rate (lattice effects of small counts), and the median
    over base rates within 2.5 +- 0.2% (not needlessly conservative: only near-zero counts are)."""
    errors = [
        p_beyond(contrast, n1, n2, p2, bound, side)
        for p2 in RATES
        if 0 <= (p2 + bound if contrast == "difference" else bound * p2) <= 1
    ]
    assert max(errors) <= 0.030, errors
    assert float(np.median(errors)) == pytest.approx(0.025, abs=0.002), errors


def test_katz_was_anti_conservative_where_the_score_interval_is_not() -> None:
    """The reason for the change (issue 11): Katz's log interval at DI = 1.25, 100 group rows."""
    n1, n2, katz, score = 100, 1000, [], []
    for p2 in RATES:
        x1, w1 = _support(n1, 1.25 * p2)
        x2, w2 = _support(n2, p2)
        k1, k2 = np.meshgrid(x1, x2, indexing="ij")
        katz_lo, _ = mc.katz_log_interval(k1, n1, k2, n2)
        katz.append(float(w1 @ np.nan_to_num(katz_lo > 1.25).astype(float) @ w2))
        score.append(p_beyond("ratio", n1, n2, p2, 1.25, "above"))
    assert max(katz) > 0.04 and max(score) < 0.027, (katz, score)


# --- 3. coverage by simulation ------------------------------------------------------------------


def test_auc_score_interval_covers_at_high_auc() -> None:
    """100 positives, 1,000 negatives (binormal), AUC 0.85 to 0.97: >= 94% coverage, false-alarm tail
    (the interval wholly below the true AUC) <= 2.7% as the alerts use it, with the DeLong variance."""
    rng = np.random.default_rng(6)
    for auc_true in (0.85, 0.95, 0.97):
        delta = float(norm.ppf(auc_true)) * math.sqrt(2)
        covered, below = 0, 0
        reps = 600
        for _ in range(reps):
            x, y = rng.normal(delta, 1, 100), rng.normal(0, 1, 1000)
            scores = np.concatenate([x, y])
            order = np.argsort(scores)
            is_x = np.concatenate([np.ones(100), np.zeros(1000)])[order]
            auc, var = auc_delong(is_x, None, 1 - is_x, None)
            lo, hi = auc_score_interval(auc, 100, 1000, variance=var)
            covered += bool(lo <= auc_true <= hi)
            below += bool(hi < auc_true)
        assert covered / reps >= 0.94 - 0.02, (
            auc_true,
            covered / reps,
        )  # 0.02: Monte-Carlo margin at 600 draws
        assert below / reps <= 0.027 + 0.015, (auc_true, below / reps)  # 0.015: Monte-Carlo margin


def _odds_cells(
    rng: np.random.Generator, reps: int, n: int, tpr: tuple[float, float], fpr: tuple[float, float]
):
    """Confusion cells (reps, side, prediction, label) of G and R with n positives and n negatives each."""
    cells = np.zeros((reps, 2, 2, 3))
    for side in (0, 1):
        tp, fp = rng.binomial(n, tpr[side], reps), rng.binomial(n, fpr[side], reps)
        cells[:, side, 1, 1], cells[:, side, 0, 1] = tp, n - tp
        cells[:, side, 1, 0], cells[:, side, 0, 0] = fp, n - fp
    return cells


@pytest.mark.parametrize(
    ("tpr", "fpr"),
    [((0.7, 0.6), (0.2, 0.1)), ((0.7, 0.6), (0.1, 0.1)), ((0.6, 0.6), (0.1, 0.1)), ((0.9, 0.8), (0.3, 0.2))],
    ids=["both-gaps-at-bound", "one-gap-at-bound", "no-gap", "both-at-bound-high-rates"],
)
def test_odds_summaries_cover_and_their_false_violation_rate_is_nominal(tpr, fpr) -> None:
    """The odds summaries' specs on 4,000 simulated windows (400 positives and negatives per side)."""
    reps, n = 4000, 400
    window = ConfusionWindow(_odds_cells(np.random.default_rng(7), reps, n, tpr, fpr), level=0.95)
    gaps = (abs(tpr[0] - tpr[1]), abs(fpr[0] - fpr[1]))
    truth = {"equalized_odds_difference": max(gaps), "average_abs_odds_difference": sum(gaps) / 2}
    for name, true_value in truth.items():
        spec = mc.get_metric(name)
        value = spec.statistic(window)
        lo, hi = spec.ci(window, value)
        covered = float(np.mean((lo <= true_value) & (true_value <= hi)))
        # both gaps' 97.5% intervals hold together >= 95%; 0.01: Monte-Carlo margin at 4,000 draws
        assert covered >= 0.95 - 0.01, (name, covered)
        assert np.all((lo <= value) & (value <= hi) & (hi > lo)), name  # never a point, always the estimate
        if true_value <= 0.1:  # at or inside the fair range [0, 0.1]: a violation is a false alarm
            assert float(np.mean(lo > 0.1)) <= 0.025 + 0.007, (name, float(np.mean(lo > 0.1)))


def test_issue_example_equalized_odds_is_inconclusive() -> None:
    """TPR 31/32 vs 0.744, FPR 0.095 vs 0.105: the TPR gap alone is out of range, inconclusive; so is the max."""
    cells = {  # (predicted positive, predicted negative)
        "g_pos": (31, 1),  # the group's positives: TPR 31/32
        "r_pos": (112, 38),  # the reference's: TPR 0.747
        "g_neg": (19, 181),  # the group's negatives: FPR 0.095
        "r_neg": (105, 895),  # the reference's: FPR 0.105
    }
    pred, y, g = [], [], []
    for key, (pos, neg) in cells.items():
        label = 1.0 if key.endswith("pos") else 0.0
        pred += [1.0] * pos + [0.0] * neg
        y += [label] * (pos + neg)
        g += [key.startswith("g")] * (pos + neg)
    attr = mc.indicator_attribute("side", {"g": np.array(g, dtype=float)})
    table = mc.table_for(np.array(pred), np.array(y), [attr])
    r = mc.evaluate(
        table,
        attr.comparisons,
        metrics=[
            "equal_opportunity_difference",
            "false_positive_rate_difference",
            "equalized_odds_difference",
        ],
        has_scores=False,
        min_samples=30,
    )
    eo, tpr_gap = r.get("equalized_odds_difference", "g"), r.get("equal_opportunity_difference", "g")
    assert tpr_gap.value > 0.1 and tpr_gap.state == "inconclusive"
    assert eo.value == pytest.approx(tpr_gap.value) and eo.state == "inconclusive"
    assert eo.ci_lower < 0.1 < eo.value < eo.ci_upper
