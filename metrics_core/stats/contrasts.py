"""Which interval a count-based value gets: a fixed-sample interval, or an anytime-valid sequence.

``method="fixed"`` (the default): Wilson for a rate, the skewness-corrected score intervals of
:mod:`metrics_core.stats.score` for a difference or a ratio of two rates - each valid for one
look at the data. ``method="anytime"``: the confidence sequences of
:mod:`metrics_core.stats.sequences`, valid at every sample size at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from numpy.typing import ArrayLike

from metrics_core.stats.intervals import Interval, wilson_interval
from metrics_core.stats.score import scas_difference_interval, scas_ratio_interval
from metrics_core.stats.sequences import bernoulli_sequence, difference_sequence, ratio_sequence

__all__ = ["METHODS", "Contrast", "Method", "contrast_interval", "rate_interval"]

Method = Literal["fixed", "anytime"]
Contrast = Literal["difference", "ratio"]
METHODS: tuple[Method, ...] = ("fixed", "anytime")

ContrastInterval = Callable[..., Interval]

_CONTRASTS: dict[tuple[Contrast, Method], ContrastInterval] = {
    ("difference", "fixed"): scas_difference_interval,
    ("ratio", "fixed"): scas_ratio_interval,
    ("difference", "anytime"): difference_sequence,
    ("ratio", "anytime"): ratio_sequence,
}


def contrast_interval(
    contrast: Contrast,
    method: Method,
    k1: ArrayLike,
    n1: ArrayLike,
    k2: ArrayLike,
    n2: ArrayLike,
    *,
    level: float,
) -> Interval:
    """The interval of ``k1/n1 - k2/n2`` or ``(k1/n1) / (k2/n2)`` under ``method``.

    >>> lo, hi = contrast_interval("difference", "fixed", 56, 70, 48, 80, level=0.95)
    >>> lo_any, hi_any = contrast_interval("difference", "anytime", 56, 70, 48, 80, level=0.95)
    >>> bool(lo_any < lo and hi < hi_any)  # the price of looking as often as one likes
    True
    """
    try:
        solve = _CONTRASTS[(contrast, method)]
    except KeyError:
        raise ValueError(f"contrast must be 'difference' or 'ratio' and method one of {METHODS}") from None
    return solve(k1, n1, k2, n2, level=level)


def rate_interval(method: Method, k: ArrayLike, n: ArrayLike, *, level: float) -> Interval:
    """The interval of a rate ``k / n`` under ``method`` (Wilson, or the rate's confidence sequence)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return wilson_interval(k, n, level=level) if method == "fixed" else bernoulli_sequence(k, n, level=level)
