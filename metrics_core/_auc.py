"""The one AUC kernel: Mann-Whitney AUC and its DeLong variance from counts on a score grid.

Every ranking metric is the AUC of two sets of rows X ("should score higher") and Y:

    AUC(X, Y) = P(s_x > s_y) + 1/2 P(s_x = s_y),

ties counted as one half, exactly as ``sklearn.metrics.roc_auc_score`` and the
normalised ``scipy.stats.mannwhitneyu`` U do. Both sets are given as counts on a *grid*
of score ids: mass ``at`` each grid score and mass in the open ``gap`` between
consecutive grid scores. A group's own scores make the grid; the group's reference
(background) then has mass between them, but the group never does. That is what lets a
comparison cost O(distinct scores of the group) although the background spans the window.

The DeLong (1988) variance uses the structural components
V10(x) = P(s_y < x) + 1/2 P(s_y = x) and V01(y) = P(s_x > y) + 1/2 P(s_x = y):

    Var(AUC) = S10 / n_x + S01 / n_y,

with S10, S01 their sample variances. Both are constant on a grid score and on a gap, so
they are summed with the masses as weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from metrics_core._tables import GroupCounts

__all__ = ["Grid", "Side", "auc_delong", "complement_side", "grid_for"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Side:
    """Counts of one set of rows on a grid: ``at`` has shape (m, 3), ``gap`` shape (m + 1, 3)."""

    at: FloatArray
    gap: FloatArray | None  # None: no mass between grid scores

    def column(self, label: int) -> tuple[FloatArray, FloatArray | None]:
        return self.at[:, label], None if self.gap is None else self.gap[:, label]


@dataclass(frozen=True, eq=False)
class Grid:
    ids: NDArray[np.int64]


def grid_for(*parts: GroupCounts) -> tuple[Grid, list[Side]]:
    """The union grid of sparse parts, and each part as a :class:`Side` on it."""
    if len(parts) == 1:
        return Grid(parts[0].ids), [Side(parts[0].counts, None)]
    ids = np.unique(np.concatenate([p.ids for p in parts]))
    sides = []
    for p in parts:
        at = np.zeros((ids.shape[0], 3))
        at[np.searchsorted(ids, p.ids)] = p.counts
        sides.append(Side(at, None))
    return Grid(ids), sides


def complement_side(grid: Grid, group_at: FloatArray, universe: FloatArray, universe_cum: FloatArray) -> Side:
    """Rows of ``universe`` not in the group, on the group's grid.

    ``universe`` has shape (K, 3) and ``universe_cum`` shape (K + 1, 3) with
    ``universe_cum[i] = universe[:i].sum(0)``. The grid must hold every score of the group.
    """
    ids = grid.ids
    at = universe[ids] - group_at
    # mass strictly between consecutive grid scores (the group has none there)
    lower = np.concatenate([np.zeros((1, 3)), universe_cum[ids + 1]])
    upper = np.concatenate([universe_cum[ids], universe_cum[-1:]])
    return Side(at, upper - lower)


def auc_delong(
    x_at: FloatArray, x_gap: FloatArray | None, y_at: FloatArray, y_gap: FloatArray | None
) -> tuple[float, float]:
    """AUC of X over Y and its DeLong variance; NaN when either set is empty.

    At most one of ``x_gap`` and ``y_gap`` may be given: pairs inside one gap are not
    resolved by the grid.
    """
    if x_gap is not None and y_gap is not None:
        raise ValueError("only one side of an AUC may have mass between grid scores")
    m = x_at.shape[0]
    zeros = np.zeros(m + 1)
    xg = zeros if x_gap is None else x_gap
    yg = zeros if y_gap is None else y_gap
    nx = float(x_at.sum() + xg.sum())
    ny = float(y_at.sum() + yg.sum())
    if nx == 0 or ny == 0:
        return float("nan"), float("nan")

    cy_at = np.cumsum(y_at)
    cy_gap = np.cumsum(yg)
    y_below_point = (cy_at - y_at) + cy_gap[:m]
    y_below_gap = np.concatenate([[0.0], cy_at]) + np.concatenate([[0.0], cy_gap[:m]])
    v10_point = (y_below_point + 0.5 * y_at) / ny
    v10_gap = y_below_gap / ny
    auc = float((x_at @ v10_point + xg @ v10_gap) / nx)

    cx_at = np.cumsum(x_at)
    cx_gap = np.cumsum(xg)
    x_above_point = nx - cx_at - cx_gap[:m]
    x_above_gap = nx - np.concatenate([[0.0], cx_at]) - cx_gap
    v01_point = (x_above_point + 0.5 * x_at) / nx
    v01_gap = x_above_gap / nx

    var = float("nan")
    if nx > 1 and ny > 1:
        s10 = (x_at @ (v10_point - auc) ** 2 + xg @ (v10_gap - auc) ** 2) / (nx - 1)
        s01 = (y_at @ (v01_point - auc) ** 2 + yg @ (v01_gap - auc) ** 2) / (ny - 1)
        var = float(s10 / nx + s01 / ny)
    return min(max(auc, 0.0), 1.0), var
