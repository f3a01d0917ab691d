"""Power planning: the planned group sizes detect the stated departures ~90% of the time, by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from metrics_core.stats.auc import auc_delong, auc_score_interval
from metrics_core.stats.contrasts import contrast_interval
from metrics_core.stats.power import Plan, detectable, power_at, rows_needed

REPS = 2000


@pytest.mark.parametrize(
    ("plan", "truth"),
    [
        (Plan(kind="ratio", reference_rate=0.15, bound=0.8, reference_ratio=49), 0.7),  # the example
        (Plan(kind="ratio", reference_rate=0.15, bound=0.8, reference_ratio=49, method="anytime"), 0.7),
        (Plan(kind="ratio", reference_rate=0.3, bound=1.25, reference_ratio=4), 1.5),
        (Plan(kind="difference", reference_rate=0.3, bound=-0.1, reference_ratio=9), -0.16),
        (Plan(kind="difference", reference_rate=0.1, bound=0.1, reference_ratio=1), 0.17),
    ],
    ids=["di-0.7", "di-0.7-anytime", "di-1.5", "spd--0.16", "fpr-diff+0.17"],
)
def test_planned_rows_detect_the_departure_nine_times_in_ten(plan: Plan, truth: float) -> None:
    n = rows_needed(plan, truth)
    m = round(plan.reference_ratio * n)
    rng = np.random.default_rng(1)
    p1 = plan.reference_rate + truth if plan.kind == "difference" else plan.reference_rate * truth
    k1, k2 = rng.binomial(int(n), p1, REPS), rng.binomial(m, plan.reference_rate, REPS)
    lo, hi = contrast_interval(plan.kind, plan.method, k1, n, k2, m, level=plan.level)
    detected = float(np.mean(hi < plan.bound)) if truth < plan.bound else float(np.mean(lo > plan.bound))
    assert detected == pytest.approx(0.9, abs=0.025), (
        n,
        detected,
    )  # 0.025: ~3.7 Monte-Carlo SE at 2,000 draws


def test_planned_rows_for_an_auc_drop() -> None:
    """Subgroup AUC 0.85 against a bound of 0.90, negatives 20 times the positives (binormal scores)."""
    plan = Plan(kind="auc", bound=0.90, reference_ratio=20)
    n = int(rows_needed(plan, 0.85))
    m = 20 * n
    delta = float(norm.ppf(0.85)) * math.sqrt(2)
    rng = np.random.default_rng(2)
    detected = 0
    reps = 800
    for _ in range(reps):
        scores = np.concatenate([rng.normal(delta, 1, n), rng.normal(0, 1, m)])
        is_pos = np.concatenate([np.ones(n), np.zeros(m)])[np.argsort(scores)]
        auc, _ = auc_delong(is_pos, None, 1 - is_pos, None)
        _, hi = auc_score_interval(auc, n, m)
        detected += bool(hi < 0.90)
    # Hanley-McNeil's variance (an exponential model) is larger than binormal scores' own: the plan is
    # conservative here, never short (0.03: Monte-Carlo margin at 800 draws)
    assert 0.9 - 0.03 <= detected / reps <= 0.98, (n, detected / reps)


def test_plans_are_monotone_and_consistent() -> None:
    plan = Plan(kind="ratio", reference_rate=0.2, bound=0.8, reference_ratio=9)
    sizes = [rows_needed(plan, truth) for truth in (0.75, 0.7, 0.6, 0.5)]
    assert sizes == sorted(sizes, reverse=True) and all(math.isfinite(s) for s in sizes)
    n = rows_needed(plan, 0.7)
    assert detectable(plan, n, toward="below") == pytest.approx(0.7, abs=2e-3)
    assert power_at(plan, 0.7, n) >= 0.9 > power_at(plan, 0.7, n - 1)
    anytime = Plan(kind="ratio", reference_rate=0.2, bound=0.8, reference_ratio=9, method="anytime")
    assert rows_needed(anytime, 0.7) > 2 * n  # the price of looking as often as one likes
    assert rows_needed(plan, 0.8) == math.inf
    assert math.isnan(detectable(plan, 10, toward="below"))  # ten rows detect nothing
