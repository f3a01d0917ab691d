"""Binary-classification bias metrics from confusion cells, vectorised over comparisons.

A *comparison* is a monitored group G against its reference R. Its counts are the
``cells`` array of shape (..., 2, 2, 3): side (G, R) x prediction (0, 1) x label
(negative, positive, unlabeled). Leading axes are free: one entry per comparison, and a
resample axis in front of that for the bootstrap. Every function here is pure and
returns NaN where a value is undefined; the evaluator says why (:mod:`metrics_core.binary.computations`).

Orientation (``metrics.md`` section 1): difference = f(G) - f(R), ratio = f(G) / f(R).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "RATES",
    "Favorable",
    "Rate",
    "average_abs_odds_difference",
    "average_odds_difference",
    "average_odds_variance",
    "equalized_odds_difference",
    "favorable_cells",
    "four_fifths_ratio",
    "pooled_sd",
    "pooled_se",
    "rate",
    "rate_difference",
    "rate_ratio",
    "standardized_selection_rate_difference",
    "two_sd_rule",
]

FloatArray = NDArray[np.float64]
G, R = 0, 1
NEG, POS, UNL = 0, 1, 2


@dataclass(frozen=True)
class Rate:
    """A per-group rate ``numerator / denominator`` over confusion cells of one side.

    ``numerator`` and ``denominator`` take a (..., 2, 3) array (prediction x label).
    ``empty`` names what the group lacks when the denominator is zero.
    """

    name: str
    numerator: Callable[[FloatArray], FloatArray]
    denominator: Callable[[FloatArray], FloatArray]
    empty: str


def _labeled(c: FloatArray) -> FloatArray:
    return c[..., NEG] + c[..., POS]


RATES: dict[str, Rate] = {
    r.name: r
    for r in (
        # Outcome rates use every row of the window, labeled or not.
        Rate("selection_rate", lambda c: c[..., 1, :].sum(-1), lambda c: c.sum((-1, -2)), "rows"),
        Rate(
            "true_positive_rate",
            lambda c: c[..., 1, POS],
            lambda c: c[..., :, POS].sum(-1),
            "positive labels",
        ),
        Rate(
            "false_positive_rate",
            lambda c: c[..., 1, NEG],
            lambda c: c[..., :, NEG].sum(-1),
            "negative labels",
        ),
        Rate(
            "false_negative_rate",
            lambda c: c[..., 0, POS],
            lambda c: c[..., :, POS].sum(-1),
            "positive labels",
        ),
        Rate(
            "true_negative_rate",
            lambda c: c[..., 0, NEG],
            lambda c: c[..., :, NEG].sum(-1),
            "negative labels",
        ),
        Rate(
            "positive_predictive_value",
            lambda c: c[..., 1, POS],
            lambda c: _labeled(c[..., 1, :]),
            "labeled predicted positives",
        ),
        Rate(
            "accuracy",
            lambda c: c[..., 1, POS] + c[..., 0, NEG],
            lambda c: _labeled(c).sum(-1),
            "labeled rows",
        ),
    )
}


Favorable = Literal["positive", "negative"]
"""Which prediction is the good outcome for the person predicted about: ``positive`` (a loan approved:
the default) or ``negative`` (a comment flagged, a transaction blocked). The selection rate is the rate
of the favourable outcome (AIF360's ``favorable_label``), so the selection family - statistical parity,
disparate impact, the four-fifths ratio, the standardized selection-rate difference, the 2-SD rule -
compares who gets the good outcome: below 1 (or 0) always means the group gets it less often. The
standardized mean difference compares mean scores and does not turn."""


def favorable_cells(cells: FloatArray, favorable: Favorable) -> FloatArray:
    """``cells`` with the prediction axis turned so that the favourable prediction is 1 (``negative``:
    reversed; ``positive``: as they are)."""
    return cells[..., ::-1, :] if favorable == "negative" else cells


def rate(cells: FloatArray, name: str, side: int = G) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(value, numerator, denominator)`` of rate ``name`` on one side of the comparison."""
    r = RATES[name]
    c = cells[..., side, :, :]
    num, den = r.numerator(c), r.denominator(c)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(den > 0, num / den, np.nan)
    return value, num, den


def rate_difference(cells: FloatArray, name: str) -> FloatArray:
    """``rate_G - rate_R``; e.g. statistical parity difference for ``selection_rate``."""
    return rate(cells, name, G)[0] - rate(cells, name, R)[0]


def rate_ratio(cells: FloatArray, name: str) -> FloatArray:
    """``rate_G / rate_R``; NaN (not inf) when the reference rate is 0."""
    g, r = rate(cells, name, G)[0], rate(cells, name, R)[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(r > 0, g / r, np.nan)


def four_fifths_ratio(cells: FloatArray) -> FloatArray:
    """``min(DI, 1/DI) = min(SR_G, SR_R) / max(SR_G, SR_R)`` (holisticai's code): 1 is parity.

    Symmetric in G and R: 0 when either side selects nobody and the other does; NaN only when
    neither selects anyone (or a side is empty).
    """
    g = rate(cells, "selection_rate", G)[0]
    r = rate(cells, "selection_rate", R)[0]
    hi = np.maximum(g, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(hi > 0, np.minimum(g, r) / hi, np.nan)


def pooled_sd(cells: FloatArray) -> FloatArray:
    """Pooled Bernoulli standard deviation of the selection of G and R (Cohen's d's denominator).

    .. math:: \\sqrt{((n_G-1) p_G(1-p_G) + (n_R-1) p_R(1-p_R)) / (n_G+n_R-2)}
    """
    pg, _, ng = rate(cells, "selection_rate", G)
    pr, _, nr = rate(cells, "selection_rate", R)
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = ((ng - 1) * pg * (1 - pg) + (nr - 1) * pr * (1 - pr)) / (ng + nr - 2)
        return np.where(pooled > 0, np.sqrt(pooled), np.nan)


def pooled_se(cells: FloatArray) -> FloatArray:
    """Standard error of the selection-rate difference with the pooled rate (the 2-SD rule's denominator).

    .. math:: \\sqrt{p(1-p)(1/n_G + 1/n_R)}, \\quad p = \\text{pooled } SR
    """
    _, kg, ng = rate(cells, "selection_rate", G)
    _, kr, nr = rate(cells, "selection_rate", R)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (kg + kr) / (ng + nr)
        se = np.sqrt(p * (1 - p) * (1 / ng + 1 / nr))
        return np.where(se > 0, se, np.nan)


def standardized_selection_rate_difference(cells: FloatArray) -> FloatArray:
    """Cohen's d of the selection rates: their difference over the pooled Bernoulli standard deviation."""
    return rate_difference(cells, "selection_rate") / pooled_sd(cells)


def two_sd_rule(cells: FloatArray) -> FloatArray:
    """z statistic of the selection-rate difference with the pooled rate (holisticai's code)."""
    return rate_difference(cells, "selection_rate") / pooled_se(cells)


def average_odds_difference(cells: FloatArray) -> FloatArray:
    """``((TPR_G - TPR_R) + (FPR_G - FPR_R)) / 2``."""
    return (rate_difference(cells, "true_positive_rate") + rate_difference(cells, "false_positive_rate")) / 2


def average_odds_variance(cells: FloatArray) -> FloatArray:
    """Normal-approximation variance of :func:`average_odds_difference` (four independent rates).

    Each rate's variance uses the Agresti-Caffo adjusted rate ``(k + 1) / (n + 2)``: the plain
    ``p(1-p)/n`` is 0 when a rate is 0 or 1, which would make the interval collapse to a point.
    """
    total = np.zeros(cells.shape[:-3])
    for name in ("true_positive_rate", "false_positive_rate"):
        for side in (G, R):
            _, k, n = rate(cells, name, side)
            with np.errstate(divide="ignore", invalid="ignore"):
                adjusted = (k + 1) / (n + 2)
                total = total + np.where(n > 0, adjusted * (1 - adjusted) / (n + 2), np.nan)
    return total / 4


def average_abs_odds_difference(cells: FloatArray) -> FloatArray:
    """``(|TPR_G - TPR_R| + |FPR_G - FPR_R|) / 2`` (AIF360)."""
    return (
        np.abs(rate_difference(cells, "true_positive_rate"))
        + np.abs(rate_difference(cells, "false_positive_rate"))
    ) / 2


def equalized_odds_difference(cells: FloatArray) -> FloatArray:
    """``max(|TPR_G - TPR_R|, |FPR_G - FPR_R|)`` (fairlearn / AIF360); NaN if either is."""
    tpr = np.abs(rate_difference(cells, "true_positive_rate"))
    fpr = np.abs(rate_difference(cells, "false_positive_rate"))
    return np.maximum(tpr, fpr)  # NaN propagates: an undefined part leaves the max undefined
