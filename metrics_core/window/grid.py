"""A comparison's two sides laid out on one grid of scores, for the AUC kernel.

The kernel (:func:`metrics_core.stats.auc.auc_delong`) takes each set of rows as counts on a
*grid* of score ids: mass ``at`` each grid score and mass in the open ``gap`` between
consecutive grid scores. A group's own scores make the grid; its complement (the rest of
the window) is read from the window's cumulative counts and has mass between them, so a
comparison costs O(distinct scores of the group), not O(window).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from metrics_core.core.types import FloatArray
from metrics_core.window.tables import GroupCounts

__all__ = ["Grid", "Side", "complement_side", "grid_for"]


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
    ids = _union(*(p.ids for p in parts))
    sides = []
    for p in parts:
        at = np.zeros((3, ids.shape[0])).T
        at[np.searchsorted(ids, p.ids)] = p.counts
        sides.append(Side(at, None))
    return Grid(ids), sides


def _union(*ids: NDArray[np.int64]) -> NDArray[np.int64]:
    """The sorted union of sorted, distinct id arrays (a group's ids increase): a stable sort of their
    concatenation is a merge of sorted runs, linear here where ``np.unique`` sorts from scratch (~25x)."""
    both = np.concatenate(ids)
    both.sort(kind="stable")
    keep = np.empty(both.shape[0], dtype=bool)
    keep[:1] = True
    np.not_equal(both[1:], both[:-1], out=keep[1:])
    union: NDArray[np.int64] = both[keep]
    return union


def complement_side(
    grid: Grid, group_at: FloatArray | None, universe: FloatArray, universe_cum: FloatArray
) -> Side:
    """Rows of ``universe`` not in the group, on the group's grid (``group_at`` ``None``: no row of the
    universe is in the group - a named reference, read on the group's grid).

    ``universe`` has shape (K, 3) and ``universe_cum`` shape (K + 1, 3) with
    ``universe_cum[i] = universe[:i].sum(0)``. The grid must hold every score of the group.
    """
    ids = grid.ids
    m = ids.shape[0]
    # np.take of whole rows is several times faster than fancy indexing here; rows i and
    # i + 1 of the cumulative counts share cache lines, so the second gather is cheap.
    below = np.take(universe_cum, ids, axis=0)  # universe rows strictly below each grid score
    upto = np.take(universe_cum, ids + 1, axis=0)  # ... and at or below it
    at = np.empty((3, m))  # built transposed: the kernel reads one label (column) at a time
    np.subtract(upto.T, below.T, out=at)
    if group_at is not None:
        at -= group_at.T
    # mass strictly between consecutive grid scores (the group has none there):
    # gap j = (below grid score j) - (at or below grid score j - 1)
    gap = np.empty((3, m + 1))
    gap[:, :m] = below.T
    gap[:, m] = universe_cum[-1]
    gap[:, 1:] -= upto.T
    return Side(at.T, gap.T)
