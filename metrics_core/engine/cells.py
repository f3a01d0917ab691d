"""The row bootstrap on counts: each side's rows as counts over cells, resampled as counts.

A statistic that reads a side's rows only through how many fall in each cell (clusters,
distinct scores, score bins) has the same bootstrap distribution whether the rows are
drawn with replacement or the counts drawn from a multinomial with the side's size and
shares: resampling ``n`` rows costs one draw per *cell*, not per row, and a 1 M-row window
costs what a 1 k-row one does. ``Cells`` carries the two count vectors and the statistic of
counts; a family's ``ci`` is ``cell_bootstrap(cells_of, bounds=...)``.

Where the cells merge rows that differ (score bins), the statistic of the cells may differ
from the rows' by at most ``slack``, computed from the counts: the interval is centred on
the rows' estimate and widened by that bound, so binning can only make it wider.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from metrics_core.core.types import Data, FloatArray
from metrics_core.core.undefined import or_nan
from metrics_core.engine.groupwise import Resampling
from metrics_core.stats.bootstrap import percentile_interval

__all__ = ["Cells", "cell_bootstrap"]

#: Draws held at once: resamples x cells x 2 sides (a 50,000-resample Bonferroni interval is drawn in chunks).
_CHUNK = 1 << 21


@dataclass(frozen=True)
class Cells:
    """Both sides of a comparison as counts over the same cells, and the statistic of such counts.

    ``estimate`` is the rows' own value where the cells merge rows (NaN: take the cells');
    ``slack`` bounds how far the statistic of the cells can be from that of the rows.
    """

    group: FloatArray
    reference: FloatArray
    statistic: Callable[[FloatArray, FloatArray], float]
    estimate: float = math.nan
    slack: float = 0.0

    def __post_init__(self) -> None:
        for side in (self.group, self.reference):
            if side.size and (side.min() < 0 or not np.array_equal(side, np.round(side))):
                raise ValueError("cell counts are whole, non-negative numbers of rows (or users)")


def _draw(counts: FloatArray, size: int, rng: np.random.Generator) -> FloatArray:
    """``size`` resamples of a side's counts: its rows drawn with replacement, counted per cell.

    As multinomial draws over the cells, or - when there are not many more rows than cells
    (one user per cell) - as the rows themselves, whichever draws fewer numbers.
    """
    n = round(float(counts.sum()))
    if n <= 4 * counts.size:
        cell_of_row = np.repeat(np.arange(counts.size), np.round(counts).astype(np.int64))
        rows = rng.integers(0, n, size=(size, n))
        offsets = np.arange(size)[:, None] * counts.size
        flat = np.bincount((cell_of_row[rows] + offsets).ravel(), minlength=size * counts.size)
        return flat.reshape(size, counts.size).astype(np.float64)
    return rng.multinomial(n, counts / n, size=size).astype(np.float64)


def _replicates(cells: Cells, n_resamples: int, rng: np.random.Generator) -> FloatArray:
    out = np.empty(n_resamples)
    step = max(1, _CHUNK // max(cells.group.size + cells.reference.size, 1))
    for start in range(0, n_resamples, step):
        size = min(step, n_resamples - start)
        g, r = _draw(cells.group, size, rng), _draw(cells.reference, size, rng)
        for b in range(size):
            out[start + b] = or_nan(cells.statistic, g[b], r[b])
    return out


def cell_bootstrap(
    cells_of: Callable[[Any, Data, Data], Cells], *, bounds: tuple[float, float] | None = None
) -> Callable[[Any, Data, Data, float, Resampling], tuple[float, float]]:
    """A ``ci`` callable: the stratified row bootstrap, drawn as multinomial counts over each side's cells.

    The percentile interval, or with ``bounds`` the *basic* interval clipped to them (for
    unsigned gaps, distances and minima, whose plug-in bias the resamples repeat; see
    :func:`metrics_core.stats.intervals.basic_interval`). NaN when a side is empty or fewer
    than half of the resamples give a finite value.
    """

    def interval(window: Any, g: Data, r: Data, level: float, resampling: Resampling) -> tuple[float, float]:
        cells = cells_of(window, g, r)
        if cells.group.sum() <= 0 or cells.reference.sum() <= 0:
            return math.nan, math.nan
        rng = np.random.default_rng(resampling.seed)
        stats = _replicates(cells, resampling.count(level), rng)
        observed = or_nan(cells.statistic, cells.group, cells.reference)
        estimate = observed if math.isnan(cells.estimate) else cells.estimate
        lo, hi = percentile_interval(stats, level)
        if not (math.isfinite(lo) and math.isfinite(observed) and math.isfinite(estimate)):
            return math.nan, math.nan
        if bounds is None:  # percentile: the replicates' spread, moved to the rows' estimate
            lo, hi = lo + estimate - observed, hi + estimate - observed
        else:  # basic: reflected around the estimate
            lo, hi = estimate - (hi - observed), estimate - (lo - observed)
        lo, hi = lo - cells.slack, hi + cells.slack
        if bounds is not None:
            lo, hi = min(max(lo, bounds[0]), bounds[1]), min(max(hi, bounds[0]), bounds[1])
        return lo, hi

    return interval
