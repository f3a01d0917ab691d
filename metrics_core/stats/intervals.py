"""Confidence intervals of rates, differences and ratios of rates, and of normal estimates.

All functions are vectorised: counts may be arrays (one entry per group) and the
result has their shape. Undefined estimates give NaN bounds.

Methods (``metrics.md`` section 5):

- a rate: Wilson score interval;
- a difference of two independent rates: Newcombe's hybrid score interval (method 10);
- a ratio of two rates: Katz log interval, 0.5 added to the cells when one is zero;
- sums such as average odds: normal approximation with summed variances;
- AUC and AEG: DeLong variance (:mod:`metrics_core.stats.auc`), normal interval;
- anything else: a bootstrap (:mod:`metrics_core.stats.bootstrap`).
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from metrics_core.core.types import FloatArray
from metrics_core.core.validation import check_level

__all__ = [
    "Interval",
    "basic_interval",
    "bonferroni_level",
    "katz_log_interval",
    "newcombe_interval",
    "normal_interval",
    "wilson_interval",
    "z_value",
]

Interval = tuple[FloatArray, FloatArray]


@functools.lru_cache(maxsize=64)
def z_value(level: float) -> float:
    """Two-sided standard normal quantile: 1.959964 for ``level=0.95``.

    The standard library's quantile (Wichura's AS 241, as ``scipy.special.ndtri``; the two agree
    within 1e-15 relative): importing ``scipy.special`` for it would cost a whole evaluation
    ~0.2 s.

    >>> round(z_value(0.95), 6)
    1.959964
    """
    # a level within an ulp of 1 is infinitely wide, as ndtri says (NormalDist refuses p = 1)
    p = 0.5 + check_level(level) / 2
    return math.inf if p >= 1.0 else NormalDist().inv_cdf(p)


def bonferroni_level(level: float, n_comparisons: int) -> float:
    """Per-comparison level that bounds the family-wise error at ``1 - level``.

    >>> round(bonferroni_level(0.95, 10), 6)
    0.995
    """
    check_level(level)
    if n_comparisons < 1:
        raise ValueError(f"n_comparisons must be >= 1, got {n_comparisons}")
    return 1.0 - (1.0 - level) / n_comparisons


def wilson_interval(k: ArrayLike, n: ArrayLike, *, level: float = 0.95) -> Interval:
    """Wilson score interval of a proportion ``k / n``.

    .. math:: \\frac{\\hat p + z^2/2n \\pm z\\sqrt{\\hat p(1-\\hat p)/n + z^2/4n^2}}{1 + z^2/n}

    Examples
    --------
    >>> lo, hi = wilson_interval(8, 10)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.4902, 0.9433)
    """
    z = z_value(level)
    k_arr, n_arr = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k_arr / n_arr
        denom = 1 + z**2 / n_arr
        centre = (p + z**2 / (2 * n_arr)) / denom
        half = z / denom * np.sqrt(p * (1 - p) / n_arr + z**2 / (4 * n_arr**2))
    bad = ~(n_arr > 0)
    lo = np.where(bad, np.nan, np.clip(centre - half, 0.0, 1.0))
    hi = np.where(bad, np.nan, np.clip(centre + half, 0.0, 1.0))
    return lo, hi


def newcombe_interval(
    k1: ArrayLike, n1: ArrayLike, k2: ArrayLike, n2: ArrayLike, *, level: float = 0.95
) -> Interval:
    """Newcombe's hybrid score interval (method 10) for ``k1/n1 - k2/n2``.

    Examples
    --------
    Newcombe (1998), table II, example (a): 56/70 - 48/80 gives (0.0524, 0.3339).

    >>> lo, hi = newcombe_interval(56, 70, 48, 80)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.0524, 0.3339)
    """
    k1a, n1a, k2a, n2a = (np.asarray(a, dtype=float) for a in (k1, n1, k2, n2))
    l1, u1 = wilson_interval(k1a, n1a, level=level)
    l2, u2 = wilson_interval(k2a, n2a, level=level)
    with np.errstate(divide="ignore", invalid="ignore"):
        p1, p2 = k1a / n1a, k2a / n2a
    d = p1 - p2
    lo = d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    hi = d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return lo, hi


def katz_log_interval(
    k1: ArrayLike, n1: ArrayLike, k2: ArrayLike, n2: ArrayLike, *, level: float = 0.95
) -> Interval:
    """Katz log interval for the ratio of proportions ``(k1/n1) / (k2/n2)``.

    When a cell of the 2x2 table is zero, 0.5 is added to every cell of that table.
    NaN when the ratio itself is undefined (``k2 == 0`` or an empty group).

    Examples
    --------
    >>> lo, hi = katz_log_interval(20, 100, 40, 100)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.3158, 0.7918)
    """
    z = z_value(level)
    k1a, n1a, k2a, n2a = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (k1, n1, k2, n2)))
    undefined = ~((n1a > 0) & (n2a > 0) & (k2a > 0))
    zero_cell = (k1a == 0) | (k2a == 0) | (k1a == n1a) | (k2a == n2a)
    add = np.where(zero_cell, 0.5, 0.0)
    a, b = k1a + add, n1a + 2 * add
    c, d = k2a + add, n2a + 2 * add
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log((k1a / n1a) / (k2a / n2a))
        log_ratio_corr = np.log((a / b) / (c / d))
        se = np.sqrt(1 / a - 1 / b + 1 / c - 1 / d)
        # the point estimate stays the uncorrected ratio; the correction only keeps the
        # interval finite when a cell is empty
        centre = np.where(k1a == 0, log_ratio_corr, log_ratio)
        lo = np.where(k1a == 0, 0.0, np.exp(centre - z * se))
        hi = np.exp(centre + z * se)
    return np.where(undefined, np.nan, lo), np.where(undefined, np.nan, hi)


def normal_interval(
    estimate: ArrayLike,
    variance: ArrayLike,
    *,
    level: float = 0.95,
    bounds: tuple[float, float] = (-np.inf, np.inf),
) -> Interval:
    """``estimate +- z * sqrt(variance)``, clipped to ``bounds``.

    >>> lo, hi = normal_interval(0.1, 0.0025)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.002, 0.198)
    """
    z = z_value(level)
    est = np.asarray(estimate, dtype=float)
    with np.errstate(invalid="ignore"):
        half = z * np.sqrt(np.asarray(variance, dtype=float))
    lo = np.clip(est - half, *bounds)
    hi = np.clip(est + half, *bounds)
    return lo, hi


def basic_interval(
    value: float, lo: float, hi: float, *, bounds: tuple[float, float] = (0.0, 1.0)
) -> tuple[float, float]:
    """The basic (reverse-percentile) bootstrap interval from percentile bounds ``lo, hi``.

    For an estimate biased away from a boundary (a distance, a maximum gap), the resampled
    values are shifted by about the bias: ``(2v - hi, 2v - lo)`` undoes the shift, where the
    percentile interval doubles it (``docs/families/multiclass.md`` measures the difference).
    Clipped to ``bounds``; NaN when the bootstrap gave no interval.

    >>> basic_interval(0.10, 0.12, 0.20)  # resamples centred above the estimate
    (0.0, 0.08000000000000002)
    >>> basic_interval(0.10, float("nan"), float("nan"))
    (nan, nan)
    """
    if not (math.isfinite(value) and math.isfinite(lo) and math.isfinite(hi)):
        return math.nan, math.nan
    return max(bounds[0], min(bounds[1], 2 * value - hi)), max(bounds[0], min(bounds[1], 2 * value - lo))
