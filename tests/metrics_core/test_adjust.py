"""Multiplicity adjustment: Bonferroni and Holm over the alerting values of an evaluation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

import metrics_core as mc
from metrics_core.engine.adjust import Block, adjusted_intervals


def _normal_block(estimates: list[float], se: float) -> Block:
    """Values with normal intervals ``x +- z se`` and the fair range (-inf, 0]: outside iff ``lo > 0``."""
    x = np.array(estimates)

    def interval(level: float, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        z = norm.ppf(0.5 + level / 2)
        sel = x if rows is None else x[rows]
        return sel - z * se, sel + z * se

    def outside(lo: np.ndarray, hi: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        return lo > 0

    return Block(len(x), interval, outside)


def _holm_by_hand(p: np.ndarray, alpha: float) -> set[int]:
    order = np.argsort(p)
    rejected = set()
    for k, i in enumerate(order):
        if p[i] > alpha / (len(p) - k):
            break
        rejected.add(int(i))
    return rejected


def test_holm_matches_the_textbook_step_down_on_exact_p_values() -> None:
    rng = np.random.default_rng(0)
    estimates = list(rng.uniform(0.0, 5.0, 40))
    block = _normal_block(estimates, se=1.0)
    lo, _ = adjusted_intervals([block], confidence=0.95, adjust="holm")[0]
    p = 2 * (1 - norm.cdf(np.array(estimates)))  # two-sided p of "the value is <= 0"
    expected = _holm_by_hand(p, 0.05)
    assert {int(i) for i in np.flatnonzero(lo > 0)} == expected
    assert 0 < len(expected) < 40
    bonferroni = {int(i) for i in np.flatnonzero(p <= 0.05 / 40)}
    unadjusted = {int(i) for i in np.flatnonzero(p <= 0.05)}
    assert bonferroni <= expected <= unadjusted and bonferroni != unadjusted


def test_holm_reports_each_interval_at_the_level_that_judged_it() -> None:
    estimates = [4.0, 3.5, 2.5, 0.5, -1.0]
    lo, _ = adjusted_intervals([_normal_block(estimates, 1.0)], confidence=0.95, adjust="holm")[0]
    m, alpha = 5, 0.05
    p = 2 * (1 - norm.cdf(np.array(estimates)))
    rejected = sorted(_holm_by_hand(p, alpha), key=lambda i: p[i])
    for k, i in enumerate(rejected):  # a violation: at its own Holm level 1 - alpha / (m - k)
        assert lo[i] == pytest.approx(estimates[i] - norm.ppf(1 - alpha / (m - k) / 2))
    stop = norm.ppf(1 - alpha / (m - len(rejected)) / 2)
    for i in set(range(m)) - set(rejected):  # the rest: where the step-down stopped
        assert lo[i] == pytest.approx(estimates[i] - stop) and lo[i] <= 0


def test_bonferroni_is_every_interval_at_level_one_minus_alpha_over_m() -> None:
    estimates = [3.0, 1.0]
    lo, _ = adjusted_intervals(
        [_normal_block(estimates, 1.0)], confidence=0.9, adjust="bonferroni", family_size=10
    )[0]
    assert lo == pytest.approx(np.array(estimates) - norm.ppf(1 - 0.1 / 10 / 2))


def test_unknown_adjustment_names_itself() -> None:
    with pytest.raises(ValueError, match="'sidak'"):
        adjusted_intervals([], confidence=0.95, adjust="sidak")  # type: ignore[arg-type]


def _window(
    rng: np.random.Generator, n_groups: int, size: int, di: float
) -> tuple[mc.ScoreTable, list[mc.Comparison]]:
    """Groups of ``size`` rows selected at ``di`` times the background's 0.3."""
    groups = np.repeat(np.arange(n_groups + 1), size)  # the last "group" is the background only
    rate = np.where(groups < n_groups, 0.3 * di, 0.3)
    pred = (rng.random(groups.size) < rate).astype(float)
    attr = mc.categorical_attribute("g", groups.astype(str), reference=str(n_groups))
    return mc.table_for(pred, np.full(pred.size, np.nan), [attr]), list(attr.comparisons)


def test_family_wise_false_violations_are_bounded() -> None:
    """20 groups each exactly at the bound DI = 1.25: unadjusted, some group is falsely a violation in most
    windows; under Bonferroni and Holm in at most ~5% of them (the family-wise bound)."""
    rng = np.random.default_rng(3)
    windows = 100
    any_violation = {"none": 0, "bonferroni": 0, "holm": 0}
    for _ in range(windows):
        table, comparisons = _window(rng, 20, 300, 1.25)
        for adjust in any_violation:
            r = mc.evaluate(table, comparisons, metrics=["disparate_impact"], has_scores=False, adjust=adjust)
            any_violation[adjust] += any(v.state == "violation" for v in r.values)
    assert any_violation["none"] / windows > 0.12  # 2.5% per group, 20 groups sharing one reference
    assert any_violation["bonferroni"] / windows <= 0.05 + 0.04  # 0.04: Monte-Carlo margin at 100 windows
    assert any_violation["holm"] / windows <= 0.05 + 0.04
    assert any_violation["holm"] >= any_violation["bonferroni"]


def test_holm_finds_real_violations_bonferroni_misses() -> None:
    """Several groups truly out of range: Holm rejects at least as many as Bonferroni, and states agree with intervals."""
    rng = np.random.default_rng(4)
    table, comparisons = _window(rng, 12, 900, 1.55)
    results = {
        adjust: mc.evaluate(table, comparisons, metrics=["disparate_impact"], has_scores=False, adjust=adjust)
        for adjust in ("bonferroni", "holm")
    }
    counts = {a: sum(v.state == "violation" for v in r.values) for a, r in results.items()}
    assert counts["holm"] >= counts["bonferroni"] > 0
    for v in results["holm"].values:
        outside = v.ci_lower > v.fair_max or v.ci_upper < v.fair_min
        assert (v.state == "violation") == outside, v
