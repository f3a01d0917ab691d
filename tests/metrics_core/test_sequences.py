"""Anytime-valid confidence sequences: what they are by definition, and their time-uniform coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import betaln

import metrics_core as mc
from metrics_core.stats.sequences import PRIOR, bernoulli_sequence, difference_sequence, ratio_sequence


def _log_mixture_ratio(k: float, n: float, p: float) -> float:
    a, b = PRIOR
    return betaln(a + k, b + n - k) - betaln(a, b) - k * math.log(p) - (n - k) * math.log1p(-p)


@pytest.mark.parametrize(
    ("k", "n"), [(30, 100), (3, 1000), (970, 1000), (1, 7), (250, 251), (208, 1181), (171_234, 1_000_000)]
)
def test_bounds_are_where_the_mixture_martingale_reaches_one_over_alpha(k: int, n: int) -> None:
    lo, hi = bernoulli_sequence(k, n, level=0.95)
    for bound in (float(lo), float(hi)):
        assert _log_mixture_ratio(k, n, bound) == pytest.approx(math.log(20), abs=1e-6)
    inside = (float(lo) + float(hi)) / 2 if k not in (0, n) else k / n
    assert _log_mixture_ratio(k, n, max(min(inside, 1 - 1e-9), 1e-9)) < math.log(20)


def test_edges() -> None:
    lo, hi = bernoulli_sequence([0, 10, 5], [10, 10, 0])
    assert lo[0] == 0.0 and hi[1] == 1.0 and math.isnan(lo[2]) and math.isnan(hi[2])
    assert all(np.isnan(ratio_sequence(3, 10, 0, 10)))


def _first_miss(p: float, streams: int, length: int, seed: int, interval) -> float:
    """Share of Bernoulli(p) streams whose interval misses p at *some* look (every 10th row)."""
    rng = np.random.default_rng(seed)
    n = np.arange(10, length + 1, 10)
    missed = 0
    for _ in range(streams):
        k = np.cumsum(rng.random(length) < p)[n - 1]
        lo, hi = interval(k, n)
        missed += bool(np.any((p < lo) | (p > hi)))
    return missed / streams


@pytest.mark.parametrize("p", [0.05, 0.3])
def test_coverage_is_time_uniform_where_fixed_intervals_erode(p: float) -> None:
    """500 looks at one growing stream: the sequence misses p at *any* look in <= 5% of streams,
    the Wilson interval (fine for one look) in far more."""
    anytime = _first_miss(p, 300, 5000, 1, lambda k, n: bernoulli_sequence(k, n, level=0.95))
    wilson = _first_miss(p, 300, 5000, 1, lambda k, n: mc.wilson_interval(k, n, level=0.95))
    assert anytime <= 0.05 + 0.02, anytime  # 0.02: Monte-Carlo margin at 300 streams
    assert wilson >= 0.2, wilson


def test_difference_and_ratio_sequences_cover_uniformly() -> None:
    rng = np.random.default_rng(2)
    n = np.arange(20, 3001, 20)
    p1, p2 = 0.12, 0.10
    missed = {"difference": 0, "ratio": 0}
    for _ in range(200):
        k1 = np.cumsum(rng.random(3000) < p1)[n - 1]
        k2 = np.cumsum(rng.random(3000) < p2)[n - 1]
        for name, seq, truth in (
            ("difference", difference_sequence, p1 - p2),
            ("ratio", ratio_sequence, p1 / p2),
        ):
            lo, hi = seq(k1, n, k2, n)
            missed[name] += bool(np.any((truth < lo) | (truth > hi)))
    assert missed["difference"] / 200 <= 0.05 + 0.03 and missed["ratio"] / 200 <= 0.05 + 0.03, missed


def test_anytime_widens_the_count_based_intervals_only() -> None:
    rng = np.random.default_rng(3)
    y = (rng.random(4000) < 0.2).astype(float)
    score = np.round(rng.random(4000) * 0.5 + 0.4 * y, 3)
    attr = mc.indicator_attribute("identity", {"g": (rng.random(4000) < 0.3).astype(float)})
    table = mc.table_for(score, y, [attr])
    fixed, anytime = (mc.evaluate(table, attr.comparisons, method=m) for m in ("fixed", "anytime"))
    for name in (
        "statistical_parity_difference",
        "disparate_impact",
        "equal_opportunity_difference",
        "selection_rate",
    ):
        f, a = fixed.get(name, "g"), anytime.get(name, "g")
        assert a.value == f.value and a.ci_lower < f.ci_lower and a.ci_upper > f.ci_upper, name
    for name in ("subgroup_auc", "standardized_mean_difference"):
        f, a = fixed.get(name, "g"), anytime.get(name, "g")
        assert (a.ci_lower, a.ci_upper) == (f.ci_lower, f.ci_upper), name
