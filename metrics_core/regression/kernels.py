"""Statistics of the regression family on the rows of a group and of its reference.

Each kernel takes two row subsets (``{"y_score": ..., "y_true": ...}``, float64; NaN
target = not yet labeled) plus window-level constants, and returns a float or raises
:class:`~metrics_core.core.undefined.Undefined` with the reason. :mod:`metrics_core.regression`
wraps them as public functions and as group metrics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from metrics_core.core.types import Data, FloatArray
from metrics_core.core.undefined import Undefined

#: The quantile levels of the quantile metrics, one metric name each (``..._q50``).
QUANTILES: tuple[float, ...] = (0.5, 0.8, 0.9)
#: The quantile grid of the no-disparate-impact level, searched from the top.
NO_DI_GRID: FloatArray = np.round(np.linspace(1.0, 0.0, 101), 2)
#: The disparate-impact range the no-disparate-impact level searches for (closed).
DEFAULT_NO_DI_BOUNDS: tuple[float, float] = (0.8, 1.25)
#: The most cells the rank statistics' bootstrap counts rows in: the window's distinct predictions
#: up to this many (exact), else as many bins between the window's quantiles (within a computed bound).
MAX_CELLS = 2048


def as_targets(y_true: ArrayLike, n: int) -> FloatArray:
    """Targets as float64 (NaN: not yet known), refusing non-numbers and infinities."""
    arr = np.asarray(y_true)
    if arr.dtype == object:
        arr = np.array([np.nan if v is None else v for v in arr.tolist()], dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"y_true has shape {arr.shape}, expected ({n},) like y_score")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"y_true must be numeric (NaN for a target not yet known), got dtype {arr.dtype}")
    out = arr.astype(np.float64, copy=False)
    if np.isinf(out).any():
        raise ValueError("y_true has infinite values")
    return out


def check_no_di_bounds(bounds: Sequence[float]) -> tuple[float, float]:
    lo, hi = (float(b) for b in bounds)
    if not lo <= hi:
        raise ValueError(f"no-disparate-impact bounds must be (low, high) with low <= high, got {bounds!r}")
    return lo, hi


def scores(d: Data) -> FloatArray:
    return np.asarray(d["y_score"], dtype=np.float64)


def labeled(d: Data) -> tuple[FloatArray, FloatArray]:
    """Predictions and targets of the rows whose target has arrived."""
    s = scores(d)
    if "y_true" not in d:
        raise Undefined("no targets (y_true) in the data")
    t = np.asarray(d["y_true"], dtype=np.float64)
    keep = ~np.isnan(t)
    return s[keep], t[keep]


def _nonempty(g: FloatArray, r: FloatArray, what: str = "rows") -> None:
    if g.size == 0:
        raise Undefined(f"the group has no {what}")
    if r.size == 0:
        raise Undefined(f"the reference has no {what}")


def success_counts(g: Data, r: Data, threshold: float) -> tuple[int, int, int, int]:
    """``(k_G, n_G, k_R, n_R)``: rows with a prediction >= ``threshold``, and rows."""
    sg, sr = scores(g), scores(r)
    return int((sg >= threshold).sum()), sg.size, int((sr >= threshold).sum()), sr.size


def disparate_impact(g: Data, r: Data, threshold: float, q: float) -> float:
    kg, ng, kr, nr = success_counts(g, r, threshold)
    _nonempty(scores(g), scores(r))
    if kr == 0:
        raise Undefined(f"no reference row reaches the {q:g}-quantile of the window's predictions")
    return (kg / ng) / (kr / nr)


def statistical_parity(g: Data, r: Data, threshold: float) -> float:
    kg, ng, kr, nr = success_counts(g, r, threshold)
    _nonempty(scores(g), scores(r))
    return kg / ng - kr / nr


def _share_at_least(sorted_values: FloatArray, cuts: FloatArray) -> FloatArray:
    """Share of ``sorted_values`` that are >= each cut."""
    n = sorted_values.size
    below = np.searchsorted(sorted_values, cuts, side="left")
    shares: FloatArray = (n - below) / n
    return shares


def no_disparate_impact_level(
    g: Data, r: Data, thresholds: FloatArray, grid: FloatArray, bounds: tuple[float, float]
) -> float:
    """The first quantile of ``grid`` (descending) whose disparate impact is within ``bounds``."""
    sg, sr = np.sort(scores(g)), np.sort(scores(r))
    _nonempty(sg, sr)
    share_g, share_r = _share_at_least(sg, thresholds), _share_at_least(sr, thresholds)
    with np.errstate(divide="ignore", invalid="ignore"):
        di = share_g / share_r
    fair = (share_r > 0) & (di >= bounds[0]) & (di <= bounds[1])
    if not fair.any():
        raise Undefined(f"the disparate impact is outside [{bounds[0]:g}, {bounds[1]:g}] at every quantile")
    return float(grid[int(np.argmax(fair))])


def _moments(g: Data, r: Data) -> tuple[FloatArray, FloatArray]:
    sg, sr = scores(g), scores(r)
    _nonempty(sg, sr)
    return sg, sr


def average_score_difference(g: Data, r: Data) -> float:
    sg, sr = _moments(g, r)
    return float(sg.mean() - sr.mean())


def average_score_difference_variance(g: Data, r: Data) -> float:
    """Welch's variance of the difference of means (NaN below two rows on a side)."""
    sg, sr = scores(g), scores(r)
    if sg.size < 2 or sr.size < 2:
        return math.nan
    return float(sg.var(ddof=1) / sg.size + sr.var(ddof=1) / sr.size)


def average_score_ratio(g: Data, r: Data) -> float:
    sg, sr = _moments(g, r)
    mg, mr = float(sg.mean()), float(sr.mean())
    if mr <= 0:
        raise Undefined(
            f"the reference's mean prediction ({mr:.6g}) is not positive; the ratio needs positive scores"
        )
    if mg < 0:
        raise Undefined(
            f"the group's mean prediction ({mg:.6g}) is negative; the ratio needs non-negative scores"
        )
    return mg / mr


def zscore_difference(g: Data, r: Data) -> float:
    sg, sr = _moments(g, r)
    dof = sg.size + sr.size - 2
    if dof <= 0:
        raise Undefined("fewer than three rows in the group and its reference together")
    if np.ptp(sg) == 0 and np.ptp(sr) == 0:
        raise Undefined("the predictions are constant within the group and within its reference")
    # scale-free: divided by a power of two (exact) when squares could overflow (a prediction of 1e200)
    top = max(float(np.abs(sg).max()), float(np.abs(sr).max()))
    exponent = math.frexp(top)[1] if math.isfinite(top) else 0
    if exponent > 400:
        sg, sr = np.ldexp(sg, -exponent), np.ldexp(sr, -exponent)
    ss = float(((sg - sg.mean()) ** 2).sum() + ((sr - sr.mean()) ** 2).sum())
    return float(sg.mean() - sr.mean()) / math.sqrt(ss / dof)


def max_statistical_parity(g: Data, r: Data) -> float:
    """``max_t |P(s >= t | G) - P(s >= t | R)|`` over every threshold: the two-sample KS statistic."""
    sg, sr = np.sort(scores(g)), np.sort(scores(r))
    _nonempty(sg, sr)
    cuts = np.unique(np.concatenate([sg, sr]))
    return float(np.abs(_share_at_least(sg, cuts) - _share_at_least(sr, cuts)).max())


def quantile_reach(values: FloatArray, window_sorted: FloatArray) -> FloatArray:
    """``sup {q in [0, 1] : Q(q) <= v}`` for the window's (linear) quantile function ``Q``; -1 if none.

    A row with prediction ``v`` succeeds at quantile level ``q`` (``v >= Q(q)``) exactly when
    ``q <= reach(v)``.
    """
    n = window_sorted.size
    k = np.searchsorted(window_sorted, values, side="right") - 1
    out = np.full(values.shape, -1.0)
    if n == 1:
        return np.where(k >= 0, 1.0, -1.0)
    top = k >= n - 1
    out[top] = 1.0
    mid = (k >= 0) & ~top
    km = k[mid]
    lo, hi = window_sorted[km], window_sorted[km + 1]
    out[mid] = (km + (values[mid] - lo) / (hi - lo)) / (n - 1)
    return out


def statistical_parity_auc(g: Data, r: Data, window_sorted: FloatArray) -> float:
    """Exact area under ``q -> |SR_G(Q(q)) - SR_R(Q(q))|`` on [0, 1]."""
    sg, sr = scores(g), scores(r)
    _nonempty(sg, sr)
    reach_g = np.sort(quantile_reach(sg, window_sorted))
    reach_r = np.sort(quantile_reach(sr, window_sorted))
    edges = np.unique(np.concatenate([reach_g, reach_r, [0.0, 1.0]]))
    edges = edges[(edges >= 0.0) & (edges <= 1.0)]
    right = edges[1:]  # on (edges[k], edges[k+1]] a row succeeds iff its reach >= edges[k+1]
    gap = np.abs(_share_at_least(reach_g, right) - _share_at_least(reach_r, right))
    return float((np.diff(edges) * gap).sum())


def error_ratio(g: Data, r: Data, power: int) -> float:
    """RMSE ratio (``power=2``) or MAE ratio (``power=1``) on labeled rows."""
    e_g, e_r = errors(g, power), errors(r, power)
    _nonempty(e_g, e_r, "labeled rows")
    name = "RMSE" if power == 2 else "MAE"
    eg = math.pow(float(np.mean(e_g)), 1 / power)
    er = math.pow(float(np.mean(e_r)), 1 / power)
    if er == 0:
        raise Undefined(f"the reference's predictions are exact on its labeled rows ({name} 0)")
    return eg / er


def _pearson(s: FloatArray, t: FloatArray, side: str) -> float:
    if s.size < 2:
        raise Undefined(f"the {side} has fewer than two labeled rows")
    for what, x in (("predictions", s), ("targets", t)):
        if np.ptp(x) == 0:
            raise Undefined(f"the {side}'s {what} are constant on its labeled rows")
    ds, dt = s - s.mean(), t - t.mean()
    return float((ds * dt).sum() / math.sqrt(float((ds**2).sum() * (dt**2).sum())))


def correlations(g: Data, r: Data) -> tuple[float, int, float, int]:
    """``(corr_G, n_G, corr_R, n_R)``: each side's Pearson correlation and labeled rows."""
    (sg, tg), (sr, tr) = labeled(g), labeled(r)
    _nonempty(sg, sr, "labeled rows")
    return _pearson(sg, tg, "group"), sg.size, _pearson(sr, tr, "reference"), sr.size


def correlation_difference(g: Data, r: Data) -> float:
    r_g, _, r_r, _ = correlations(g, r)
    return r_g - r_r


def errors(d: Data, power: int) -> FloatArray:
    """``|y - ŷ| ** power`` of a side's labeled rows (the terms of its MAE or MSE)."""
    s, t = labeled(d)
    out: FloatArray = np.abs(t - s) ** power
    return out


# --- the rank statistics of counts over cells (the bootstrap's view of a side) ---


def cell_starts(sorted_scores: FloatArray, max_cells: int = MAX_CELLS) -> tuple[FloatArray, bool]:
    """The cells' lower edges over a window's sorted predictions, and whether each cell is one value.

    Every distinct prediction when there are at most ``max_cells``; otherwise the distinct
    quantiles of the window at ``max_cells`` equal steps (each cell holds ~1/max_cells of it).
    """
    distinct = np.unique(sorted_scores)
    if distinct.size <= max_cells:
        return distinct, True
    return np.unique(np.quantile(sorted_scores, np.linspace(0.0, 1.0, max_cells, endpoint=False))), False


def cell_counts(values: FloatArray, starts: FloatArray) -> FloatArray:
    """Rows of ``values`` per cell (a cell runs from its start to the next one's)."""
    index = np.searchsorted(starts, values, side="right") - 1
    return np.bincount(np.maximum(index, 0), minlength=starts.size).astype(np.float64)


def _suffix_shares(counts: FloatArray, who: str) -> FloatArray:
    total = float(counts.sum())
    if total <= 0:
        raise Undefined(f"the {who} has no rows")
    shares: FloatArray = np.cumsum(counts[::-1])[::-1] / total
    return shares


def max_statistical_parity_of_counts(c_g: FloatArray, c_r: FloatArray) -> float:
    """:func:`max_statistical_parity` of rows counted over ascending cells (each cell one value)."""
    return float(np.abs(_suffix_shares(c_g, "group") - _suffix_shares(c_r, "reference")).max())


def statistical_parity_auc_of_counts(c_g: FloatArray, c_r: FloatArray, reach: FloatArray) -> float:
    """:func:`statistical_parity_auc` of rows counted over ascending cells whose values reach ``reach``.

    On ``(reach[j-1], reach[j]]`` a row succeeds iff it lies in cell ``j`` or above.
    """
    gap = np.abs(_suffix_shares(c_g, "group") - _suffix_shares(c_r, "reference"))
    return float((np.diff(reach) * gap[1:]).sum())


def _worst_share(c_g: FloatArray, c_r: FloatArray) -> FloatArray:
    worst: FloatArray = np.maximum(c_g / max(float(c_g.sum()), 1.0), c_r / max(float(c_r.sum()), 1.0))
    return worst


def max_gap_slack(c_g: FloatArray, c_r: FloatArray) -> float:
    """How far :func:`max_statistical_parity_of_counts` can be from the rows' value when cells are bins.

    Counting a bin's rows at its lower edge moves each side's share above a threshold inside
    the bin by at most the bin's share of that side, both the same way, so the gap moves by
    at most ``max_j max(p_G(j), p_R(j))``.
    """
    return float(_worst_share(c_g, c_r).max(initial=0.0))


def area_slack(c_g: FloatArray, c_r: FloatArray, widths: FloatArray) -> float:
    """As :func:`max_gap_slack` for the area: the gap moves only over a bin's quantile levels, ``widths``."""
    return float((widths * _worst_share(c_g, c_r)).sum())
