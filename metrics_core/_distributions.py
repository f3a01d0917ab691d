"""Kernels shared by the recommender and clustering families.

Both families compare *distributions over categories* (items recommended to a group,
clusters a group falls in) and average per-unit quantities. The kernels raise
:class:`~metrics_core.groupwise.Undefined` with a reason; the public metric functions turn
that into NaN, the evaluator keeps the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.groups import Attribute, membership
from metrics_core.groupwise import Data, Undefined, bootstrap_interval
from metrics_core.intervals import basic_interval

__all__ = [
    "as_mask",
    "check_attribute_rows",
    "codes_of",
    "kl_divergence_counts",
    "or_nan",
    "percentile_interval",
    "row_bootstrap",
    "total_variation_counts",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def or_nan(kernel: Callable[..., float], *args: object, **kwargs: object) -> float:
    """``kernel(*args, **kwargs)``, or NaN when it raises :class:`Undefined`."""
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(kernel(*args, **kwargs))
    except Undefined:
        return math.nan
    return value if math.isfinite(value) else math.nan


def codes_of(values: ArrayLike, name: str) -> tuple[IntArray, int]:
    """Integer codes ``0..m-1`` of the distinct values of a 1-d column, and ``m``."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(f"{name} has {int(np.isnan(arr).sum())} missing values (NaN); drop those rows first")
    if arr.dtype == object and any(v is None for v in arr):
        raise ValueError(f"{name} has missing values (None); drop those rows first")
    uniq, inverse = np.unique(arr, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), int(uniq.size)


def as_mask(values: ArrayLike, name: str, n: int) -> NDArray[np.bool_]:
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ValueError(f"{name} has shape {arr.shape}, expected ({n},)")
    return membership(arr)


def check_attribute_rows(attributes: Sequence[Attribute], n: int) -> None:
    """Refuse attributes whose masks do not have one entry per row of the window."""
    for attr in attributes:
        for mask in attr.masks.values():
            shape = np.asarray(mask).shape
            if shape != (n,):
                raise ValueError(f"attribute {attr.name!r} has masks of shape {shape}, expected ({n},)")
            break


def total_variation_counts(p_counts: FloatArray, q_counts: FloatArray) -> float:
    """``0.5 * sum |p - q|`` of two count vectors over the same categories, normalised."""
    n_p, n_q = float(p_counts.sum()), float(q_counts.sum())
    if n_p <= 0:
        raise Undefined("the group has no observation to form a distribution")
    if n_q <= 0:
        raise Undefined("the reference has no observation to form a distribution")
    return 0.5 * float(np.abs(p_counts / n_p - q_counts / n_q).sum())


def kl_divergence_counts(p_counts: FloatArray, q_counts: FloatArray, *, smoothing: float) -> float:
    """``KL(P || Q)`` (natural log) of count vectors with ``smoothing`` added to every cell of both.

    With ``smoothing = 0`` this is the plug-in divergence (holisticai's); a category the
    group has and the reference lacks makes it infinite, which is reported as undefined.
    """
    if smoothing < 0 or not math.isfinite(smoothing):
        raise ValueError(f"smoothing must be a finite number >= 0, got {smoothing!r}")
    if float(p_counts.sum()) <= 0:
        raise Undefined("the group has no observation to form a distribution")
    if float(q_counts.sum()) <= 0:
        raise Undefined("the reference has no observation to form a distribution")
    p = p_counts + smoothing
    q = q_counts + smoothing
    p = p / p.sum()
    q = q / q.sum()
    used = p > 0
    if (q[used] == 0).any():
        raise Undefined(
            "the reference has no observation in a category the group has (KL is infinite); use smoothing > 0"
        )
    return float(np.sum(p[used] * np.log(p[used] / q[used])))


def percentile_interval(
    stats: FloatArray,
    level: float,
    *,
    estimate: float | None = None,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> tuple[float, float]:
    """Bootstrap interval from replicates; NaN when fewer than half are finite.

    Percentile interval by default. With ``estimate``, the *basic* (reverse percentile)
    interval ``[2 t - q_hi, 2 t - q_lo]``, clipped to ``bounds``: for plug-in distances and
    minima, whose bias the replicates repeat (a total variation between two samples of one
    distribution is above 0, its replicates further above), the percentile interval can
    miss the estimate itself; the basic interval moves against that bias.
    """
    finite = stats[np.isfinite(stats)]
    if finite.size == 0 or finite.size < stats.size / 2:
        return math.nan, math.nan
    alpha = (1 - level) / 2
    lo, hi = float(np.quantile(finite, alpha)), float(np.quantile(finite, 1 - alpha))
    if estimate is not None:
        return basic_interval(estimate, lo, hi, bounds=bounds)
    return min(max(lo, bounds[0]), bounds[1]), min(max(hi, bounds[0]), bounds[1])


def row_bootstrap(
    statistic: Callable[[Data, Data], float],
    *,
    n_resamples: int,
    seed: int,
    bounds: tuple[float, float],
) -> Callable[[Data, Data, float], tuple[float, float]]:
    """Basic bootstrap interval, rows resampled within the group and within the reference."""

    def interval(g: Data, r: Data, level: float) -> tuple[float, float]:
        lo, hi = bootstrap_interval(statistic, g, r, level=level, n_resamples=n_resamples, seed=seed)
        return basic_interval(or_nan(statistic, g, r), lo, hi, bounds=bounds)

    return interval
