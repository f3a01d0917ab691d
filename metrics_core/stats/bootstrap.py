"""Bootstrap intervals: a Poisson bootstrap of count cells, and intervals from replicates.

Giving every row a Poisson(1) weight makes each cell count Poisson(count) and independent,
so resampling a window costs one draw per cell, not per row.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from metrics_core.core.types import FloatArray
from metrics_core.core.validation import check_level
from metrics_core.stats.intervals import Interval, basic_interval

__all__ = ["MAX_RESAMPLES", "percentile_interval", "poisson_bootstrap_interval", "resamples_for"]

#: The most resamples one interval draws, however far into the tail its level reaches.
MAX_RESAMPLES = 50_000
#: Resamples beyond each bound of an interval: the default 200 resamples at a 95% level hold 5 per tail.
PER_TAIL = 5


def poisson_bootstrap_interval(
    statistic: Callable[[FloatArray], FloatArray],
    cells: ArrayLike,
    *,
    level: float = 0.95,
    n_resamples: int = 400,
    seed: int = 0,
) -> Interval:
    """Percentile interval of ``statistic`` under the Poisson bootstrap of count cells.

    Giving every row a Poisson(1) weight makes each cell count Poisson(count) and
    independent, so resampling a window costs one draw per cell, not per row.
    ``cells`` has shape (..., c); ``statistic`` maps an array of that shape with an extra
    leading resample axis to the statistic with the same leading axes.

    Examples
    --------
    >>> cells = np.array([[30.0, 70.0]])
    >>> lo, hi = poisson_bootstrap_interval(lambda c: c[..., 0] / c.sum(-1), cells, seed=1)
    >>> bool(lo[0] < 0.3 < hi[0])
    True
    """
    check_level(level)
    arr = np.asarray(cells, dtype=float)
    rng = np.random.default_rng(seed)
    draws = rng.poisson(arr, size=(n_resamples, *arr.shape)).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        stats = np.asarray(statistic(draws), dtype=float)
    alpha = (1 - level) / 2
    finite = np.isfinite(stats)
    enough = finite.mean(axis=0) >= 0.5
    safe = np.where(finite, stats, np.nan)
    with np.errstate(invalid="ignore"):
        if safe.size and enough.any():
            lo = np.nanquantile(np.where(enough, safe, 0.0), alpha, axis=0)
            hi = np.nanquantile(np.where(enough, safe, 0.0), 1 - alpha, axis=0)
        else:
            lo = hi = np.full(stats.shape[1:], np.nan)
    return np.where(enough, lo, np.nan), np.where(enough, hi, np.nan)


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


def resamples_for(level: float, at_least: int) -> int:
    """Resamples for a two-sided ``level``: ``at_least``, and enough that each tail holds :data:`PER_TAIL`.

    A Bonferroni or Holm level reaches far into the tails (``1 - 0.05 / 500``): 400 resamples
    cannot resolve a 0.005% tail, and the interval would be the resamples' range. Capped at
    :data:`MAX_RESAMPLES`.

    >>> resamples_for(0.95, 200), resamples_for(0.999, 200), resamples_for(1 - 1e-9, 200)
    (200, 10000, 50000)
    """
    tail = (1 - check_level(level)) / 2
    return int(min(MAX_RESAMPLES, max(at_least, math.ceil(PER_TAIL / tail - 1e-9))))
