"""The one AUC kernel: Mann-Whitney AUC and its DeLong variance from counts on a score grid.

Every ranking metric is the AUC of two sets of rows X ("should score higher") and Y:

    AUC(X, Y) = P(s_x > s_y) + 1/2 P(s_x = s_y),

ties counted as one half, exactly as ``sklearn.metrics.roc_auc_score`` and the
normalised ``scipy.stats.mannwhitneyu`` U do. Both sets are given as counts on a *grid*
of score ids: mass ``at`` each grid score and mass in the open ``gap`` between
consecutive grid scores (:mod:`metrics_core.window.grid` lays a score table's groups out
so). A group's own scores make the grid; the group's reference (background) then has mass
between them, but the group never does. That is what lets a comparison cost O(distinct
scores of the group) although the background spans the window.

The DeLong (1988) variance uses the structural components
V10(x) = P(s_y < x) + 1/2 P(s_y = x) and V01(y) = P(s_x > y) + 1/2 P(s_x = y):

    Var(AUC) = S10 / n_x + S01 / n_y,

with S10, S01 their sample variances. Both are constant on a grid score and on a gap, so
they are summed with the masses as weights.

Exactness: with integer counts the kernel forms ``2 U`` (twice the Mann-Whitney U) as a
dot product of integer-valued float64 arrays, which is exact while ``2 n_x n_y < 2**53``
(about 9e15: 67 million rows on each side), and divides once; beyond that it is still
correct to float64 rounding. The grid is also
thinned to the scores where X has mass: between two such scores V01 is constant, so the
Y mass there is merged into one gap without changing any sum.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.core.types import FloatArray
from metrics_core.stats.intervals import z_value
from metrics_core.stats.roots import grid_with, outermost_crossing

__all__ = ["auc_delong", "auc_score_interval"]


def auc_delong(
    x_at: FloatArray, x_gap: FloatArray | None, y_at: FloatArray, y_gap: FloatArray | None
) -> tuple[float, float]:
    """AUC of X over Y and its DeLong variance; NaN when either set is empty.

    At most one of ``x_gap`` and ``y_gap`` may be given: pairs inside one gap are not
    resolved by the grid.

    Examples
    --------
    Scores 0.1 < 0.4 < 0.9 make the grid; X = {0.4, 0.9}, Y = {0.1, 0.4}: of the four
    pairs, three are ordered and one is tied.

    >>> auc, var = auc_delong(np.array([0.0, 1, 1]), None, np.array([1.0, 1, 0]), None)
    >>> auc, round(var, 6)
    (0.875, 0.03125)
    """
    if x_gap is not None and y_gap is not None:
        raise ValueError("only one side of an AUC may have mass between grid scores")
    flip = x_gap is not None
    if not flip and y_gap is None and np.count_nonzero(y_at != 0) < np.count_nonzero(x_at != 0):
        flip = True  # thin the grid to the sparser side (counting booleans: several times faster)
    if flip:
        # AUC(X over Y) = 1 - AUC(Y over X), with the same variance
        twice_u, scale, var = _points_over(y_at, x_at, x_gap)
        twice_u = scale - twice_u
    else:
        twice_u, scale, var = _points_over(x_at, y_at, y_gap)
    if scale == 0:
        return math.nan, math.nan
    return min(max(twice_u / scale, 0.0), 1.0), var


def _points_over(a: FloatArray, b: FloatArray, b_gap: FloatArray | None) -> tuple[float, float, float]:
    """``(2 U, 2 n_x n_y, DeLong variance)`` of X over Y, X only at grid scores.

    ``a``: X at the m grid scores; ``b``: Y at them; ``b_gap``: Y in the m + 1 gaps (gap j
    lies just below grid score j, gap m above the last one).
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    gap = None if b_gap is None else np.ascontiguousarray(b_gap, dtype=np.float64)
    m = a.shape[0]
    nx = float(a.sum())
    if nx == 0:
        return 0.0, 0.0, math.nan
    has_x = a != 0  # nonzero() of a boolean array is several times faster than of floats
    if 2 * np.count_nonzero(has_x) < m:
        # Thin the grid to the scores where X has mass: Y strictly between two kept scores
        # (where V01 is constant) becomes one gap. Sums over the segments that end at kept
        # scores replace a cumulative sum over the whole grid.
        keep = np.flatnonzero(has_x)
        c, ny = _kept_cumsum(b, keep)  # c: Y at or below each kept score
        if gap is not None:
            c_gap, ny_gap = _kept_cumsum(gap[:m], keep)
            c += c_gap
            ny += ny_gap + float(gap[m])
        a, b = a[keep], b[keep]
        gap = np.empty(keep.shape[0] + 1)
        gap[:-1] = c
        gap[:-1] -= b
        gap[1:-1] -= c[:-1]
        gap[-1] = ny - c[-1]
    else:
        c = b.copy() if gap is None else b + gap[:m]
        c = _cumsum(c)
        ny = float(c[-1]) + (0.0 if gap is None else float(gap[m]))
    if ny == 0:
        return 0.0, 0.0, math.nan

    # t = 2 ny V10 at each grid score = 2 (Y below) + (Y at)
    t = c
    t *= 2.0
    t -= b
    twice_u = _dot(a, t)
    scale = 2.0 * nx * ny
    if not (nx > 1 and ny > 1):
        return twice_u, scale, math.nan

    t -= twice_u / nx  # 2 ny (V10 - AUC)
    s10 = _dot(a, t * t) / (4.0 * ny * ny * (nx - 1.0))
    centre = twice_u / ny  # 2 nx AUC
    # p = 2 nx (V01 - AUC) of Y at each grid score, 2 nx V01 = 2 (X above) + (X at)
    p = _cumsum(a.copy())
    p *= -2.0
    p += 2.0 * nx - centre
    p += a
    sum01 = _dot(b, p * p)
    if gap is not None:
        # Y in gap j >= 1 sits just above grid score j - 1: 2 nx V01 = p[j - 1] - a[j - 1]
        q = p - a
        sum01 += _dot(gap[1:], q * q) + float(gap[0]) * (2.0 * nx - centre) ** 2
    s01 = sum01 / (4.0 * nx * nx * (ny - 1.0))
    return twice_u, scale, s10 / nx + s01 / ny


def _kept_cumsum(values: FloatArray, keep: NDArray[np.intp]) -> tuple[FloatArray, float]:
    """``np.cumsum(values)[keep]`` for increasing ``keep``, and ``values.sum()``."""
    starts = np.empty(keep.shape[0], dtype=np.intp)
    starts[0] = 0
    starts[1:] = keep[:-1] + 1  # segment j runs from just above keep[j - 1] to keep[j] ...
    out = np.add.reduceat(values, starts)
    np.cumsum(out, out=out)
    total = float(out[-1])
    out[-1] -= values[keep[-1] + 1 :].sum()  # ... but the last one ran to the end
    return out, total


def _cumsum(x: FloatArray) -> FloatArray:
    """``np.cumsum(x)`` in place, through int64 when ``x`` holds integers (counts usually do).

    A float64 cumulative sum is a serial loop; the int64 one is several times faster, and
    both are exact on integers below 2**53.
    """
    with np.errstate(invalid="ignore"):  # NaN or huge values: not integers, the float path
        as_int = x.astype(np.int64)
    if not np.array_equal(as_int, x):
        return np.cumsum(x, out=x)
    np.cumsum(as_int, out=as_int)
    x[...] = as_int
    return x


def _dot(u: FloatArray, v: FloatArray) -> float:
    """Dot product without BLAS: a threaded BLAS ``ddot`` can stall for milliseconds on a
    busy 2-core machine, while einsum's own loop takes microseconds at these sizes."""
    return float(np.einsum("i,i->", u, v))


_AUC_GRID = 65  # coarse grid that brackets each bound (with the estimate; refined by the Illinois method)


def auc_score_interval(
    auc: ArrayLike,
    n_x: ArrayLike,
    n_y: ArrayLike,
    *,
    level: float = 0.95,
    variance: ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Newcombe's (2006) score interval for an AUC (his method 5): every ``theta`` with
    ``(AUC - theta)^2 <= z^2 V(theta)``, ``V`` the Hanley-McNeil variance at ``theta`` with
    ``n* = (n_x + n_y) / 2`` in place of both sizes:

    .. math:: V(\\theta) = \\frac{\\theta (1 - \\theta)}{n_x n_y}
              \\left[1 + (n^* - 1) \\left(\\frac{1 - \\theta}{2 - \\theta} + \\frac{\\theta}{1 + \\theta}\\right)\\right]

    Unlike the Wald interval on the DeLong variance, it stays inside [0, 1] and keeps its
    coverage near 0 and 1 and for small sets. At AUC 1/2 the variance is the exact null
    variance of the Mann-Whitney U. NaN where a set is empty.

    Given the DeLong ``variance``, the interval is the hull of method 5's and the Wald
    interval on the logit scale, ``logit(AUC) +- z sqrt(V) / (AUC (1 - AUC))``: method 5
    assumes the binormal-like shape behind the Hanley-McNeil variance, and where the data's
    own (DeLong) variance is larger, its tail beyond the upper end reached 3.2% at 100
    positives, 100 negatives and AUC 0.85 (nominal 2.5%); the hull's was 2.9% there and at most
    2.6% elsewhere, with coverage 95-98% (2,000 binormal draws per cell, Monte-Carlo standard
    error 0.35%; ``benchmarks/calibration.py``, ``docs/alerts.md``). An AUC of 0 or
    1 has no logit: there method 5 stands alone.

    >>> lo, hi = auc_score_interval(0.9, 50, 50)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.8159, 0.9462)
    """
    z = z_value(level)
    a, nx, ny = (np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(auc, n_x, n_y))
    shape = a.shape
    defined = (nx > 0) & (ny > 0) & np.isfinite(a)
    a, nx, ny = (np.where(defined, v, 1.0).reshape(-1) for v in (a, nx, ny))
    n_star = (nx + ny) / 2

    def excess(theta: FloatArray) -> FloatArray:
        shape_term = (1 - theta) / (2 - theta) + theta / (1 + theta)
        variance = theta * (1 - theta) * (1 + (n_star - 1) * shape_term) / (nx * ny)
        out: FloatArray = (a - theta) ** 2 - z * z * variance
        return out

    grid = grid_with(0.0, 1.0, _AUC_GRID, a)  # the estimate itself is always inside
    lo = outermost_crossing(lambda theta: -excess(theta), grid, upper=False)
    hi = outermost_crossing(lambda theta: -excess(theta), grid, upper=True)
    if variance is not None:
        v = np.broadcast_to(np.asarray(variance, dtype=np.float64), shape).reshape(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            inner = (a > 0) & (a < 1) & np.isfinite(v)
            logit = np.log(a / (1 - a))
            half = z * np.sqrt(np.maximum(v, 0.0)) / (a * (1 - a))
            logit_lo = 1 / (1 + np.exp(-(logit - half)))
            logit_hi = 1 / (1 + np.exp(-(logit + half)))
        lo = np.where(inner, np.minimum(lo, logit_lo), lo)
        hi = np.where(inner, np.maximum(hi, logit_hi), hi)
    lo, hi = lo.reshape(shape), hi.reshape(shape)
    return np.where(defined.reshape(shape), lo, np.nan), np.where(defined.reshape(shape), hi, np.nan)
