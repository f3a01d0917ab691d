"""How each kind of binary metric is computed from a :class:`~metrics_core.binary.window.BinaryWindow`.

A binary metric's spec carries three callables, all vectorised over the window's comparisons
(a :class:`~metrics_core.binary.window.BinaryWindow`; the threshold metrics need only its
confusion cells, so they also take a :class:`~metrics_core.binary.window.ConfusionWindow`):

- ``statistic(window) -> estimates``;
- ``ci(window, estimates) -> (lower, upper)``, at ``window.level``;
- ``count_support(window) -> (support, reasons)``: the smallest denominator the value
  depends on, and why the value is undefined where it is NaN.

Each function here builds that triple, with the interval method and the documented
denominators, for one kind of metric (a per-group rate, a difference or ratio of rates, an
AUC of two row sets, ...). :mod:`metrics_core.binary.specs` pairs each with a metric's facts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from metrics_core.binary import rates
from metrics_core.binary.window import BinaryWindow, ConfusionWindow
from metrics_core.core.spec import IntervalMethod
from metrics_core.core.types import FloatArray
from metrics_core.stats.auc import auc_score_interval
from metrics_core.stats.contrasts import rate_interval
from metrics_core.stats.intervals import Interval, normal_interval

__all__ = [
    "Computation",
    "auc",
    "components",
    "four_fifths",
    "group_rate",
    "rate_difference",
    "rate_ratio",
    "scaled_parity",
    "standardized_mean_difference",
]

Statistic = Callable[[BinaryWindow], FloatArray]
ConfidenceInterval = Callable[[BinaryWindow, FloatArray], Interval]
Support = Callable[[BinaryWindow], tuple[FloatArray, list[str]]]


@dataclass(frozen=True)
class Computation:
    """The computing half of a binary metric's spec."""

    interval: IntervalMethod
    support: tuple[str, ...]
    statistic: Statistic
    ci: ConfidenceInterval
    count_support: Support
    contrast: Literal["difference", "ratio", "auc"] | None = None


def _denominators(names: Sequence[str], *, group_only: bool = False, otherwise: str = "") -> Support:
    """Support = the smallest of the named rates' denominators, on the group (and reference) side.

    Where one is zero the reason names it ("reference has no positive labels"); where the
    value is NaN for another cause, the reason is ``otherwise``.
    """
    sides = ((0, "group"),) if group_only else ((0, "group"), (1, "reference"))

    def count(window: ConfusionWindow) -> tuple[FloatArray, list[str]]:
        n = len(window)
        support = np.full(n, np.inf)
        reasons = [""] * n
        for name in names:
            rate = rates.RATES[name]
            for side, who in sides:
                den = rate.denominator(window.cells[:, side])
                support = np.minimum(support, den)
                for i in np.flatnonzero(den == 0):
                    reasons[i] = reasons[i] or f"{who} has no {rate.empty}"
        return support, [r or otherwise for r in reasons]

    return count


def group_rate(rate: str) -> Computation:
    """The group's own rate (informational), with its Wilson interval."""

    def ci(window: ConfusionWindow, estimate: FloatArray) -> Interval:
        _, num, den = rates.rate(window.rate_cells(rate), rate)
        return rate_interval(window.method, num, den, level=window.level)

    return Computation(
        "wilson",
        (rate,),
        lambda window: rates.rate(window.rate_cells(rate), rate)[0],
        ci,
        _denominators((rate,), group_only=True),
    )


def rate_difference(rate: str) -> Computation:
    """``rate_G - rate_R`` with the skewness-corrected score interval (:mod:`metrics_core.stats.score`)."""
    return Computation(
        "scas",
        (rate,),
        lambda window: rates.rate_difference(window.rate_cells(rate), rate),
        lambda window, _: window.rate_interval("difference", rate),
        _denominators((rate,)),
        "difference",
    )


def rate_ratio(rate: str) -> Computation:
    """``rate_G / rate_R`` with the skewness-corrected score interval; undefined when the reference rate is 0."""
    return Computation(
        "scas",
        (rate,),
        lambda window: rates.rate_ratio(window.rate_cells(rate), rate),
        lambda window, _: window.rate_interval("ratio", rate),
        _denominators((rate,), otherwise="reference rate is 0: the ratio is undefined"),
        "ratio",
    )


def four_fifths() -> Computation:
    """``min(DI, 1/DI)`` with the disparate-impact interval mapped through ``x -> min(x, 1/x)``."""

    def ci(window: ConfusionWindow, estimate: FloatArray) -> Interval:
        k1, n1, k2, n2 = window.rate_counts("selection_rate")
        # min(x, 1/x) is the same for DI and 1/DI: where SR_R = 0 the interval of SR_R / SR_G serves
        di_lo, di_hi = window.rate_interval("ratio", "selection_rate")
        inv_lo, inv_hi = window.contrast("ratio", k2, n2, k1, n1)
        use_inverse = np.isnan(di_lo) & ~np.isnan(inv_lo)
        lo, hi = _min_inverse(np.where(use_inverse, inv_lo, di_lo), np.where(use_inverse, inv_hi, di_hi))
        return np.where(np.isnan(estimate), np.nan, lo), np.where(np.isnan(estimate), np.nan, hi)

    return Computation(
        "transformed",
        ("selection_rate",),
        lambda window: rates.four_fifths_ratio(window.rate_cells("selection_rate")),
        ci,
        _denominators(("selection_rate",), otherwise="neither side selects anyone: the ratio is undefined"),
    )


def _min_inverse(lo: FloatArray, hi: FloatArray) -> Interval:
    """Image of an interval under x -> min(x, 1/x) (increasing below 1, decreasing above)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_lo, inv_hi = 1 / hi, np.where(lo > 0, 1 / lo, np.inf)
    below = hi <= 1
    above = lo >= 1
    out_lo = np.where(below, lo, np.where(above, inv_lo, np.minimum(lo, inv_lo)))
    out_hi = np.where(below, hi, np.where(above, inv_hi, 1.0))
    return out_lo, out_hi


def _abs_interval(lo: FloatArray, hi: FloatArray) -> Interval:
    """The image of ``[lo, hi]`` under ``x -> |x|``."""
    straddles = (lo <= 0) & (hi >= 0)
    low = np.where(straddles, 0.0, np.minimum(np.abs(lo), np.abs(hi)))
    return low, np.maximum(np.abs(lo), np.abs(hi))


def components(combine: str) -> Computation:
    """A summary of the TPR and FPR gaps, judged through the gaps themselves.

    Each gap gets its skewness-corrected score interval at the Bonferroni level
    ``1 - (1 - level) / 2``, so both hold together at ``level``; the summary's interval is
    their image, by interval arithmetic:

    - ``"mean"``: average odds difference ``(dTPR + dFPR) / 2``, from the two intervals;
    - ``"mean_abs"``: average absolute odds difference, from the intervals of ``|dTPR|``, ``|dFPR|``;
    - ``"max_abs"``: equalized odds difference ``max(|dTPR|, |dFPR|)``: it lies wholly above the
      fair range exactly when one gap's interval does (an intersection-union test), and it is
      never a point around a non-zero estimate.
    """
    statistic = {
        "mean": rates.average_odds_difference,
        "mean_abs": rates.average_abs_odds_difference,
        "max_abs": rates.equalized_odds_difference,
    }[combine]

    def ci(window: ConfusionWindow, estimate: FloatArray) -> Interval:
        both = window.at_level(1 - (1 - window.level) / 2)
        (tl, th), (fl, fh) = (
            both.rate_interval("difference", gap) for gap in ("true_positive_rate", "false_positive_rate")
        )
        if combine == "mean":
            return (tl + fl) / 2, (th + fh) / 2
        (tl, th), (fl, fh) = _abs_interval(tl, th), _abs_interval(fl, fh)
        if combine == "mean_abs":
            return (tl + fl) / 2, (th + fh) / 2
        return np.maximum(tl, fl), np.maximum(th, fh)

    return Computation(
        "components",
        ("true_positive_rate", "false_positive_rate"),
        lambda window: statistic(window.cells),
        ci,
        _denominators(("true_positive_rate", "false_positive_rate")),
    )


def scaled_parity(scale: Callable[[FloatArray], FloatArray]) -> Computation:
    """The selection-rate difference over a scale of the window (Cohen's d, the 2-SD rule's z).

    The interval is the difference's skewness-corrected score interval over the same scale,
    the scale taken as known (as the window sd of the standardized mean difference).
    """

    def statistic(window: ConfusionWindow) -> FloatArray:
        cells = window.rate_cells("selection_rate")
        return rates.rate_difference(cells, "selection_rate") / scale(cells)

    def ci(window: ConfusionWindow, estimate: FloatArray) -> Interval:
        lo, hi = window.rate_interval("difference", "selection_rate")
        scaled = scale(window.rate_cells("selection_rate"))
        return lo / scaled, hi / scaled

    return Computation(
        "scas",
        ("selection_rate",),
        statistic,
        ci,
        _denominators(
            ("selection_rate",),
            otherwise="pooled standard deviation is 0: both sides are all selected or all not",
        ),
    )


def standardized_mean_difference() -> Computation:
    """Difference of mean scores over the window's score sd, treated as known; normal interval.

    The sd is that of *every* score of the window (``metrics.md``), not of G and R only:
    with a named reference or a categorical attribute with missing values, G and R do not
    cover the window.
    """

    def parts(window: BinaryWindow) -> tuple[FloatArray, FloatArray]:
        mom = window.moments
        n, s, ss = mom[..., 0], mom[..., 1], mom[..., 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = s / n
            var_side = np.maximum(ss / n - mean**2, 0.0) * n / (n - 1)
            sd_all = np.full(len(window), window.score_sd)
            est = np.where(sd_all > 0, (mean[:, 0] - mean[:, 1]) / sd_all, np.nan)
            variance = (var_side[:, 0] / n[:, 0] + var_side[:, 1] / n[:, 1]) / sd_all**2
        return est, variance

    return Computation(
        "normal",
        ("selection_rate",),
        lambda window: parts(window)[0],
        lambda window, estimate: normal_interval(estimate, parts(window)[1], level=window.level),
        _denominators(
            ("selection_rate",), otherwise="all scores in the window are equal: no standard deviation"
        ),
    )


def tie_bound(x: str, y: str) -> Computation:
    """Half the share of tied (``x``, ``y``) pairs: how far the AUC of ``x`` over ``y`` can be from
    the AUC of the scores before they were rounded.

    Rounding is monotone, so pairs in different bins keep their order; a tied pair counts 1/2
    where its unrounded scores would count 0 or 1. No interval: a bound, not an estimate.
    """

    def no_interval(window: BinaryWindow, estimate: FloatArray) -> Interval:
        return np.full_like(estimate, np.nan), np.full_like(estimate, np.nan)

    def count(window: BinaryWindow) -> tuple[FloatArray, list[str]]:
        fit = window.auc(x, y)
        return fit.support, fit.reasons

    return Computation("none", (x, y), lambda window: 0.5 * window.auc(x, y).ties, no_interval, count, None)


def auc(x: str, y: str, *, offset: float = 0.0) -> Computation:
    """AUC of row set ``x`` over ``y`` (ties 1/2) plus ``offset``, with Newcombe's score interval.

    Sets are ``"group+"``, ``"group-"``, ``"reference+"``, ``"reference-"``; an AEG is an
    AUC minus 1/2. The interval is :func:`~metrics_core.stats.auc.auc_score_interval` with the
    DeLong variance (the hull of Newcombe's score interval and the logit Wald interval).
    """

    def ci(window: BinaryWindow, estimate: FloatArray) -> Interval:
        fit = window.auc(x, y)
        lo, hi = auc_score_interval(fit.estimate, fit.n_x, fit.n_y, level=window.level, variance=fit.variance)
        return lo + offset, hi + offset

    def count(window: BinaryWindow) -> tuple[FloatArray, list[str]]:
        fit = window.auc(x, y)
        return fit.support, fit.reasons

    return Computation(
        "auc_score",
        (x, y),
        lambda window: window.auc(x, y).estimate + offset,
        ci,
        count,
        "auc" if not offset else None,
    )
