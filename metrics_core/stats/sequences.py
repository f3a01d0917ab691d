"""Anytime-valid confidence sequences for rates, and for differences and ratios of two rates.

A confidence interval at 95% holds for *one* look at the data. A monitor looks again at every
evaluation, at windows that share rows, so the chance that some look shows a false violation
grows with the number of looks. A *confidence sequence* (Howard, Ramdas, McAuliffe & Sekhon
2021, "Time-uniform, nonparametric, nonasymptotic confidence sequences") holds at every sample
size at once:

.. math:: P\\big(\\exists n: p \\notin C_n\\big) \\le \\alpha,

so along a growing stream of rows the false-alarm guarantee does not depend on how often one
looks. For a rate, :func:`bernoulli_sequence` uses Robbins' conjugate mixture martingale: with
a Beta(a, b) mixing distribution,

.. math:: M_n(p) = \\frac{B(a + k_n, b + n - k_n)}{B(a, b)\\, p^{k_n} (1 - p)^{n - k_n}},
   \\qquad C_n = \\{p : M_n(p) < 1 / \\alpha\\},

and Ville's inequality bounds ``P(sup_n M_n(p) >= 1/alpha)`` by ``alpha`` at the true ``p``. A
difference or a ratio of two independent rates takes each rate's sequence at ``alpha / 2`` and
combines them by interval arithmetic (both hold together with probability ``1 - alpha``).

The price is width: the bound grows like ``sqrt(log(n) / n)`` instead of ``sqrt(1 / n)``, so
detection takes more rows (``docs/alerts.md`` measures how many).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from metrics_core.core.types import FloatArray
from metrics_core.core.validation import check_level
from metrics_core.stats.intervals import Interval
from metrics_core.stats.roots import grid_with, outermost_crossing

__all__ = ["bernoulli_sequence", "difference_sequence", "ratio_sequence"]

#: Jeffreys' Beta(1/2, 1/2) mixing distribution: no rate favoured, tight from small samples on.
PRIOR = (0.5, 0.5)
_GRID = 65


def bernoulli_sequence(k: ArrayLike, n: ArrayLike, *, level: float = 0.95) -> Interval:
    """The confidence sequence of a rate ``k / n`` at ``n`` rows (NaN where ``n = 0``).

    >>> lo, hi = bernoulli_sequence(30, 100)
    >>> round(float(lo), 3), round(float(hi), 3)
    (0.166, 0.463)
    """
    from scipy.special import betaln  # scipy is imported when an interval is computed, not at import

    alpha = 1 - check_level(level)
    ka, na = (np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(k, n))
    shape = ka.shape
    defined = na > 0
    ka, na = (np.where(defined, v, 1.0).reshape(-1) for v in (ka, na))
    a, b = PRIOR
    log_mixture = betaln(a + ka, b + na - ka) - betaln(a, b)
    threshold = math.log(1 / alpha)

    def inside(logit_p: FloatArray) -> FloatArray:
        log_p = -np.logaddexp(0.0, -logit_p)  # log(p), stable for both signs
        log_q = -np.logaddexp(0.0, logit_p)  # log(1 - p)
        out: FloatArray = threshold - (log_mixture - ka * log_p - (na - ka) * log_q)
        return out

    with np.errstate(divide="ignore"):
        estimate = np.log(ka) - np.log(na - ka)  # the rate's own logit: always inside (M_n <= 1 there)
    grid = grid_with(-40.0, 40.0, _GRID, estimate)
    lo = 1 / (1 + np.exp(-outermost_crossing(inside, grid, upper=False)))
    hi = 1 / (1 + np.exp(-outermost_crossing(inside, grid, upper=True)))
    lo = np.where(ka == 0, 0.0, lo)
    hi = np.where(ka == na, 1.0, hi)
    mask = defined.reshape(shape)
    return np.where(mask, lo.reshape(shape), np.nan), np.where(mask, hi.reshape(shape), np.nan)


def difference_sequence(
    k1: ArrayLike, n1: ArrayLike, k2: ArrayLike, n2: ArrayLike, *, level: float = 0.95
) -> Interval:
    """``k1/n1 - k2/n2``: the two rates' sequences at ``1 - alpha/2``, subtracted.

    >>> lo, hi = difference_sequence(56, 70, 48, 80)
    >>> round(float(lo), 3), round(float(hi), 3)
    (-0.168, 0.523)
    """
    half = 1 - (1 - check_level(level)) / 2
    lo1, hi1 = bernoulli_sequence(k1, n1, level=half)
    lo2, hi2 = bernoulli_sequence(k2, n2, level=half)
    return lo1 - hi2, hi1 - lo2


def ratio_sequence(
    k1: ArrayLike, n1: ArrayLike, k2: ArrayLike, n2: ArrayLike, *, level: float = 0.95
) -> Interval:
    """``(k1/n1) / (k2/n2)``: the two rates' sequences at ``1 - alpha/2``, divided; NaN where ``k2 = 0``.

    >>> lo, hi = ratio_sequence(20, 100, 40, 100)
    >>> round(float(lo), 3), round(float(hi), 3)
    (0.149, 1.505)
    """
    half = 1 - (1 - check_level(level)) / 2
    lo1, hi1 = bernoulli_sequence(k1, n1, level=half)
    lo2, hi2 = bernoulli_sequence(k2, n2, level=half)
    undefined = ~(np.asarray(k2, dtype=np.float64) > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = lo1 / hi2, np.where(lo2 > 0, hi1 / lo2, np.inf)
    return np.where(undefined, np.nan, lo), np.where(undefined, np.nan, hi)
