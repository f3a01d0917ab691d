"""Power planning: how many rows it takes to detect a departure from the fair range.

A value is a violation when its whole interval lies outside the fair range. With fixed-sample
score intervals that is the score test at the bound ``b`` rejecting (test inversion), so for a
true value beyond ``b`` the power is that of the score test (Farrington & Manning 1990):

.. math:: \\text{power} = \\Phi\\Big(\\frac{|E[S(b)]| - (z \\pm \\gamma_b)\\sqrt{V_b}}{sd(S(b))}\\Big),

``S(b)`` the score's numerator, ``V_b`` and the skewness term ``gamma_b`` its null moments at
the expected counts, ``sd`` its spread at the truth. For anytime sequences, the sequence's
inner end at data that look like the truth, moving one-for-one with the estimate. AUCs use
Newcombe's score interval and the Hanley-McNeil variance. The plans are checked against
simulation in ``tests/metrics_core/test_power.py``. :func:`rows_needed` finds the smallest group size with
``power(n) >= 0.9``; :func:`detectable` the smallest departure with that power at a given size.

Sizes: ``n`` rows in the *group's denominator* (all rows for a selection rate, positives for
a TPR, ...); the reference's denominator is ``reference_ratio * n``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from metrics_core.stats.auc import auc_score_interval
from metrics_core.stats.contrasts import Method, contrast_interval
from metrics_core.stats.intervals import z_value
from metrics_core.stats.score import constrained_rates_difference, constrained_rates_ratio

__all__ = ["Plan", "detectable", "power_at", "rows_needed"]

Kind = Literal["difference", "ratio", "auc"]
_MAX_ROWS = 10**10


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What is to be detected, and how the monitor judges it.

    ``kind``: a difference of two rates, a ratio of two rates, or an AUC (against an absolute
    bound). ``reference_rate``: the reference's rate (for an AUC: unused). ``bound``: the fair
    range's bound that is crossed (the lower one when ``truth < bound``). ``reference_ratio``:
    the reference's denominator per row of the group's (for an AUC: the other set's size per
    row of the smaller set).
    """

    kind: Kind
    reference_rate: float = math.nan
    bound: float
    reference_ratio: float
    level: float = 0.95
    method: Method = "fixed"
    power: float = 0.9


def _group_rate(plan: Plan, truth: float) -> float:
    return plan.reference_rate + truth if plan.kind == "difference" else plan.reference_rate * truth


def power_at(plan: Plan, truth: float, n: float) -> float:
    """The chance of a violation with ``n`` rows in the group's denominator, the true value being ``truth``.

    >>> plan = Plan(kind="ratio", reference_rate=0.15, bound=0.8, reference_ratio=49)
    >>> round(power_at(plan, 0.7, 4_739), 3)
    0.9
    """
    from scipy.stats import norm  # scipy is imported when a plan is computed, not at import

    below = truth < plan.bound
    m = plan.reference_ratio * n
    if plan.kind == "auc":
        lo, hi = auc_score_interval(truth, n, m, level=plan.level)
        ns = (n + m) / 2
        var = (
            truth * (1 - truth) * (1 + (ns - 1) * ((1 - truth) / (2 - truth) + truth / (1 + truth))) / (n * m)
        )
        margin = (plan.bound - float(hi)) if below else (float(lo) - plan.bound)
        return float(norm.cdf(margin / math.sqrt(var)))
    p1, p2 = _group_rate(plan, truth), plan.reference_rate
    if not (0 < p1 < 1 and 0 < p2 < 1):
        raise ValueError(f"the group's rate {p1:g} and the reference's {p2:g} must lie strictly in (0, 1)")
    c = 1.0 if plan.kind == "difference" else plan.bound
    # the fluctuation of the score's numerator S = p1^ - c p2^ (- b for a difference) at the truth
    sd = math.sqrt(p1 * (1 - p1) / n + c * c * p2 * (1 - p2) / m)
    shift = (p1 - p2 - plan.bound) if plan.kind == "difference" else (p1 - plan.bound * p2)
    if plan.method == "fixed":
        # test inversion: a violation is the score test at the bound rejecting, Z(b) beyond +-z
        z = z_value(plan.level)
        variance, skew = _null_moments(plan, p1 * n, n, p2 * m, m)
        correction = skew / (6 * variance**1.5) * (z * z - 1)
        if below:
            return float(norm.cdf((-shift - (z - correction) * math.sqrt(variance)) / sd))
        return float(norm.cdf((shift - (z + correction) * math.sqrt(variance)) / sd))
    # anytime: the sequence's inner end at data that look like the truth, moving with the estimate
    lo, hi = contrast_interval(plan.kind, plan.method, p1 * n, n, p2 * m, m, level=plan.level)
    end = float(hi) if below else float(lo)
    margin = (plan.bound - end) if below else (end - plan.bound)
    scale = 1.0 if plan.kind == "difference" else p2  # d(ratio) = d(S) / p2 near the truth
    return float(norm.cdf(margin * scale / sd))


def _null_moments(plan: Plan, k1: float, n1: float, k2: float, n2: float) -> tuple[float, float]:
    """Variance and third cumulant of the score's numerator under the bound, at the expected counts."""
    args = tuple(np.asarray(v, dtype=np.float64) for v in (k1, n1, k2, n2, plan.bound))
    if plan.kind == "difference":
        q1, q2 = constrained_rates_difference(*args)
        c = 1.0
    else:
        q1, q2 = constrained_rates_ratio(*args)
        c = plan.bound
    big_n = n1 + n2
    variance = (
        (float(q1) * (1 - float(q1)) / n1 + c * c * float(q2) * (1 - float(q2)) / n2) * big_n / (big_n - 1)
    )
    mu3 = float(q1 * (1 - q1) * (1 - 2 * q1)) / n1**2 - c**3 * float(q2 * (1 - q2) * (1 - 2 * q2)) / n2**2
    return variance, mu3


def rows_needed(plan: Plan, truth: float) -> float:
    """The smallest ``n`` (group rows in the denominator) detecting ``truth`` with ``plan.power``; inf beyond 10^10.

    The issue's example: disparate impact 0.70 in a group holding 2% of the traffic (reference
    = the other 98%), reference selection rate 0.15.

    >>> n = rows_needed(Plan(kind="ratio", reference_rate=0.15, bound=0.8, reference_ratio=49), 0.7)
    >>> n, n / 0.02 / 5000  # group rows; days at 5,000 predictions a day
    (4739.0, 47.39)
    """
    if truth == plan.bound:
        return math.inf
    lo, hi = 2.0, 4.0
    while power_at(plan, truth, hi) < plan.power:
        lo, hi = hi, hi * 2
        if hi > _MAX_ROWS:
            return math.inf
    while hi - lo > 1:
        mid = math.floor((lo + hi) / 2)
        if power_at(plan, truth, mid) >= plan.power:
            hi = mid
        else:
            lo = mid
    return float(hi)


def detectable(plan: Plan, n: float, *, toward: Literal["below", "above"]) -> float:
    """The departure nearest the bound that ``n`` rows detect with ``plan.power`` (NaN if none can be).

    >>> plan = Plan(kind="difference", reference_rate=0.3, bound=-0.1, reference_ratio=9)
    >>> round(detectable(plan, 2_000, toward="below"), 3)
    -0.13
    """
    step = -1.0 if toward == "below" else 1.0
    if plan.kind == "difference":
        far = -plan.reference_rate + 1e-6 if toward == "below" else 1 - plan.reference_rate - 1e-6
    elif plan.kind == "ratio":
        far = 1e-6 if toward == "below" else (1 - 1e-6) / plan.reference_rate
    else:
        far = 1e-6 if toward == "below" else 1 - 1e-6
    if (far - plan.bound) * step <= 0 or power_at(plan, far, n) < plan.power:
        return math.nan
    near = plan.bound
    for _ in range(60):
        mid = (near + far) / 2
        if power_at(plan, mid, n) >= plan.power:
            far = mid
        else:
            near = mid
    return float(far)
