"""Analytic intervals of statistics built from means: ratios, standardised differences, correlations.

A bootstrap that re-runs a statistic on row resamples costs ``resamples x rows`` for every
comparison (a 1 M-row window: minutes). Where a standard closed form exists these intervals
replace it; each takes the sides' summaries (means, variances of the means, sizes), so
it costs nothing beyond the one pass that computed the estimate.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from metrics_core.stats.intervals import z_value

__all__ = ["cohens_d_interval", "correlation_difference_interval", "fieller_interval", "mean_and_variance"]


def mean_and_variance(values: ArrayLike) -> tuple[float, float, int]:
    """``(mean, variance of the mean, n)`` of a 1-d float array (sample variance, ``ddof=1``)."""
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return math.nan, math.nan, 0
    mean = float(x.mean())
    return mean, (float(x.var(ddof=1)) / n if n > 1 else math.nan), n


def fieller_interval(
    numerator: float,
    numerator_variance: float,
    denominator: float,
    denominator_variance: float,
    *,
    level: float = 0.95,
    lower_bound: float = -math.inf,
) -> tuple[float, float]:
    """Fieller's interval for the ratio ``a / b`` of two independent, normally distributed means.

    The set of ``t`` with ``(a - t b)^2 <= z^2 (v_a + t^2 v_b)`` (Fieller 1954). When the
    denominator is not clearly away from 0 (``b^2 <= z^2 v_b``) the set is unbounded and the
    interval is ``(lower_bound, inf)``: no evidence either way. Undefined (NaN) without a
    variance on either side.

    >>> lo, hi = fieller_interval(2.0, 0.01, 4.0, 0.04)
    >>> round(lo, 4), round(hi, 4)
    (0.435, 0.5746)
    """
    a, va, b, vb = numerator, numerator_variance, denominator, denominator_variance
    if not all(math.isfinite(x) for x in (a, va, b, vb)):
        return math.nan, math.nan
    z2 = z_value(level) ** 2
    quad = b * b - z2 * vb
    if quad <= 0:
        return lower_bound, math.inf
    half = math.sqrt(z2 * (va * quad + vb * a * a))
    lo, hi = (a * b - half) / quad, (a * b + half) / quad
    return max(lo, lower_bound), max(hi, lower_bound)


def cohens_d_interval(
    d: float, n_group: int, n_reference: int, *, level: float = 0.95
) -> tuple[float, float]:
    """Normal interval of a standardised mean difference (Hedges & Olkin 1985, eq. 5.14).

    ``d +- z sqrt((n_G + n_R) / (n_G n_R) + d^2 / (2 (n_G + n_R)))``.

    >>> lo, hi = cohens_d_interval(0.5, 100, 100)
    >>> round(lo, 4), round(hi, 4)
    (0.2185, 0.7815)
    """
    if not math.isfinite(d) or n_group < 1 or n_reference < 1:
        return math.nan, math.nan
    n = n_group + n_reference
    half = z_value(level) * math.sqrt(n / (n_group * n_reference) + d * d / (2 * n))
    return d - half, d + half


def _fisher(r: float, n: int, z: float) -> tuple[float, float]:
    if abs(r) >= 1:
        return r, r
    centre, half = math.atanh(r), z / math.sqrt(n - 3)
    return math.tanh(centre - half), math.tanh(centre + half)


def correlation_difference_interval(
    r_group: float, n_group: int, r_reference: float, n_reference: int, *, level: float = 0.95
) -> tuple[float, float]:
    """Zou's (2007) interval for the difference of two independent Pearson correlations.

    Built from each side's Fisher-z interval ``(l_i, u_i)``, which respects the bounds of a
    correlation where a normal interval of the difference would not:
    ``L = r_1 - r_2 - sqrt((r_1 - l_1)^2 + (u_2 - r_2)^2)``,
    ``U = r_1 - r_2 + sqrt((u_1 - r_1)^2 + (r_2 - l_2)^2)``. NaN below four rows on a side.

    Two correlations of 100 rows each:

    >>> lo, hi = correlation_difference_interval(0.50, 100, 0.17, 100)
    >>> round(lo, 4), round(hi, 4)
    (0.0835, 0.5686)
    """
    if not (math.isfinite(r_group) and math.isfinite(r_reference)) or min(n_group, n_reference) < 4:
        return math.nan, math.nan
    z = z_value(level)
    l1, u1 = _fisher(r_group, n_group, z)
    l2, u2 = _fisher(r_reference, n_reference, z)
    d = r_group - r_reference
    lo = d - math.sqrt((r_group - l1) ** 2 + (u2 - r_reference) ** 2)
    hi = d + math.sqrt((u1 - r_group) ** 2 + (r_reference - l2) ** 2)
    return max(lo, -2.0), min(hi, 2.0)
