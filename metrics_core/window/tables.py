"""Sufficient statistics: the score table.

A :class:`ScoreTable` holds, for every distinct score of a window, the number of rows
with label 0, label 1 and no label yet, for the whole window and for every group. All
ranking metrics (AUC, AEG, DeLong variances) and all threshold metrics come from
cumulative sums over it, so a window is sorted once and every group reuses that sort.

Groups are stored sparsely: a group only keeps the distinct scores its own rows take,
as indices into the window's sorted score array. The per-group cost of every metric is
then proportional to the number of distinct scores in the group, not to the window.

Tables add (:func:`merge_tables`) so that time panes combine into sliding windows, and
can be built from rows that are already aggregated (``sample_weight`` = a count) so that
a database can do the ``GROUP BY``.

The rows are sorted by :func:`metrics_core.window.sort.sort_scores` (exact, one sort).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.core.types import FloatArray, IntArray
from metrics_core.core.validation import as_labels, as_scores, as_weights
from metrics_core.window.sort import sort_scores

__all__ = ["LABELS", "NEG", "POS", "UNL", "GroupCounts", "ScoreTable", "merge_tables"]

CellArray = NDArray[np.signedinteger]

#: Column order of every count matrix: negatives, positives, rows without a label yet.
LABELS = ("negative", "positive", "unlabeled")
NEG, POS, UNL = 0, 1, 2


@dataclass(frozen=True, eq=False)
class GroupCounts:
    """Counts of one group over the distinct scores of its window.

    ``ids`` are increasing indices into :attr:`ScoreTable.scores`; ``counts`` has one row
    per id and the columns of :data:`LABELS`.
    """

    ids: IntArray
    counts: FloatArray

    @property
    def total(self) -> FloatArray:
        """Rows of the group per label (negative, positive, unlabeled)."""
        return _column_sums(self.counts)

    def dense(self, n_scores: int) -> FloatArray:
        out = _zeros(n_scores)
        out[self.ids] = self.counts
        return out


@dataclass(frozen=True, eq=False)
class ScoreTable:
    """Counts per distinct score, for the window and for each group.

    Attributes
    ----------
    scores : ndarray of shape (K,)
        Distinct scores, strictly increasing, float64.
    counts : ndarray of shape (K, 3)
        Rows of the whole window per score and label (negative, positive, unlabeled).
    groups : mapping of str to GroupCounts
        Sparse counts of every group, keyed by group name.
    binned : bool
        True when scores were rounded or binned before counting (AUCs are then
        approximate: ties by construction).
    """

    scores: FloatArray
    counts: FloatArray
    groups: Mapping[str, GroupCounts] = field(default_factory=dict)
    binned: bool = False

    @property
    def n_scores(self) -> int:
        return int(self.scores.shape[0])

    @property
    def total(self) -> FloatArray:
        """Rows of the window per label (negative, positive, unlabeled)."""
        return _column_sums(self.counts)

    @cached_property
    def cumulative(self) -> FloatArray:
        """Rows below each distinct score: shape (K + 1, 3), ``cumulative[i] = counts[:i].sum(0)``.

        Computed once per table (the complement of every group reads it).

        Examples
        --------
        >>> t = ScoreTable.from_arrays([0.1, 0.4, 0.4, 0.9], [0, 1, 0, 1])
        >>> t.cumulative[:, :2].tolist()
        [[0.0, 0.0], [1.0, 0.0], [2.0, 1.0], [2.0, 2.0]]
        """
        return _cumulative(self.counts)

    @classmethod
    def from_arrays(
        cls,
        y_score: ArrayLike,
        y_true: ArrayLike,
        groups: Mapping[str, ArrayLike] | None = None,
        *,
        sample_weight: ArrayLike | None = None,
        binned: bool = False,
    ) -> ScoreTable:
        """Build the table of a window from one row per prediction.

        Parameters
        ----------
        y_score : array-like of shape (n,)
            Scores, finite; kept in float64.
        y_true : array-like of shape (n,)
            Labels 0/1; NaN (or None) for a row whose label has not arrived.
        groups : mapping of group name to membership
            A boolean (or 0/1) mask of shape (n,).
        sample_weight : array-like of shape (n,), optional
            Non-negative counts (for rows that are already aggregated).
        binned : bool
            Mark the table as built from binned or rounded scores.

        Examples
        --------
        >>> t = ScoreTable.from_arrays([0.1, 0.4, 0.4, 0.9], [0, 1, 0, 1], {"g": [False, True, True, False]})
        >>> t.scores.tolist(), t.counts[:, 1].tolist()
        ([0.1, 0.4, 0.9], [0.0, 1.0, 1.0])
        >>> t.groups["g"].ids.tolist(), t.groups["g"].counts.tolist()
        ([1], [[1.0, 1.0, 0.0]])
        """
        score = as_scores(y_score, "y_score")
        n = score.shape[0]
        label = _labels(y_true, n)
        weight = as_weights(sample_weight, n)
        if weight is not None and (weight == 1.0).all():
            weight = None  # counted rows that are each their own combination: the unweighted sorts
        if np.signbit(score).any():
            score = score + 0.0  # -0.0 and +0.0 are one score; `+ 0.0` turns -0.0 into +0.0
        order, first, edges, distinct = sort_scores(score)
        k = distinct.shape[0]
        label_sorted = label[order]
        cumulative: FloatArray | None
        if weight is None:
            counts, cumulative = _run_counts(label_sorted, edges)
        # cell of a row = 3 * (index of its distinct score) + label column
        cell_sorted: NDArray[np.signedinteger[Any]] = np.cumsum(
            first, dtype=np.int32 if 3 * k + 3 < 2**31 else np.int64
        )
        del first
        cell_sorted -= 1
        cell_sorted *= 3
        cell_sorted += label_sorted
        if weight is not None:
            counts, cumulative = _cell_counts(cell_sorted, weight[order], k), None
        group_counts: dict[str, GroupCounts] = {}
        if groups:
            cell = np.empty(n, dtype=cell_sorted.dtype)
            cell[order] = cell_sorted
            del cell_sorted, order
            for name, member in groups.items():
                group_counts[name] = _sparse_counts(cell, weight, _as_index(member, n, name), k)
        table = cls(distinct, counts, group_counts, binned)
        if cumulative is not None:
            table.__dict__["cumulative"] = cumulative  # the cached_property's slot
        return table

    @classmethod
    def from_aggregated(
        cls,
        y_score: ArrayLike,
        y_true: ArrayLike,
        count: ArrayLike,
        groups: Mapping[str, ArrayLike] | None = None,
        *,
        binned: bool = False,
    ) -> ScoreTable:
        """Build a table from rows ``(score, label, count, group flags)`` of a ``GROUP BY``.

        Rows may repeat a (score, label) pair; their counts add.

        Examples
        --------
        >>> t = ScoreTable.from_aggregated([0.2, 0.2, 0.7], [0, 1, 1], [5, 2, 3], {"g": [1, 0, 1]})
        >>> t.counts.tolist()
        [[5.0, 2.0, 0.0], [0.0, 3.0, 0.0]]
        """
        return cls.from_arrays(y_score, y_true, groups, sample_weight=count, binned=binned)

    def group(self, name: str) -> GroupCounts:
        try:
            return self.groups[name]
        except KeyError:
            raise KeyError(f"no group {name!r} in this table; groups are {sorted(self.groups)}") from None

    def union(self, names: Iterable[str]) -> GroupCounts:
        """Counts of the rows in any of ``names``, for *disjoint* groups (one categorical attribute)."""
        parts = [self.group(name) for name in names]
        if not parts:
            return GroupCounts(np.zeros(0, dtype=np.int64), _zeros(0))
        if len(parts) == 1:
            return parts[0]
        ids = np.concatenate([p.ids for p in parts])
        counts = np.concatenate([p.counts for p in parts])
        return _collapse(ids, counts)


def merge_tables(tables: Sequence[ScoreTable]) -> ScoreTable:
    """Add the tables of several panes of data into the table of their union.

    Examples
    --------
    >>> a = ScoreTable.from_arrays([0.1, 0.5], [0, 1], {"g": [True, False]})
    >>> b = ScoreTable.from_arrays([0.5, 0.9], [0, 1], {"g": [True, True]})
    >>> m = merge_tables([a, b])
    >>> m.scores.tolist(), m.counts[:, :2].tolist()
    ([0.1, 0.5, 0.9], [[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    >>> m.groups["g"].ids.tolist()
    [0, 1, 2]
    """
    if not tables:
        raise ValueError("merge_tables needs at least one table")
    # + 0.0: a table built by hand may hold -0.0
    scores = np.unique(np.concatenate([t.scores for t in tables]) + 0.0)
    k = scores.shape[0]
    counts = _zeros(k)
    pieces: dict[str, list[tuple[IntArray, FloatArray]]] = {}
    for table in tables:
        remap = np.searchsorted(scores, table.scores + 0.0)
        if remap.size > 1 and (np.diff(remap) <= 0).any():  # a hand-built table with repeated scores
            np.add.at(counts, remap, table.counts)
        else:
            counts[remap] += table.counts
        for name, grp in table.groups.items():
            pieces.setdefault(name, []).append((remap[grp.ids], grp.counts))
    groups = {
        name: _collapse(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
        for name, parts in pieces.items()
    }
    return ScoreTable(scores, counts, groups, any(t.binned for t in tables))


# --- counting ---------------------------------------------------------------------------------


def _labels(y_true: ArrayLike, n: int) -> NDArray[np.int8]:
    """Label column per row (0, 1, 2 = unlabeled) as int8; 0/1 integers and booleans skip a copy."""
    arr = np.asarray(y_true)
    if arr.shape == (n,) and arr.dtype.kind in "biu":
        if arr.dtype == np.bool_:
            return arr.view(np.int8)
        if n == 0 or (int(arr.min()) >= 0 and int(arr.max()) <= 1):
            return arr.astype(np.int8, copy=False)
    return as_labels(y_true, "y_true", n).astype(np.int8)


def _cell_counts(cells: CellArray, weight: FloatArray | None, k: int) -> FloatArray:
    """Counts (k, 3) of cell ids ``3 * score id + label``, columns contiguous."""
    flat = np.bincount(cells, weights=weight, minlength=3 * k)
    out = np.empty((3, k))
    for j in range(3):
        out[j] = flat[j::3]
    return out.T


def _run_counts(label_sorted: NDArray[np.int8], edges: IntArray) -> tuple[FloatArray, FloatArray]:
    """Counts per distinct score and label, and their cumulative sums, from the sorted rows.

    ``edges`` holds the sorted position of the first row of every distinct score, then n.
    Rows of label j before sorted position p are a running count of label j, read at the
    edges: all in integers (exact, and far faster than a float64 cumulative sum), written
    once into the two float64 results.
    """
    n = label_sorted.shape[0]
    k = edges.shape[0] - 1
    # zeros: the pages come zeroed from the kernel, so an absent label column costs nothing
    counts = np.zeros((3, k))  # returned transposed: (k, 3) with contiguous columns
    cumulative = np.zeros((k + 1, 3))  # C order: the complement of a group gathers its rows
    running = np.empty(n + 1, dtype=np.int32 if n < 2**31 else np.int64)
    running[0] = 0
    negatives = edges
    for j in (POS, UNL):
        is_j = label_sorted == j
        if j == UNL and not is_j.any():
            continue
        np.cumsum(is_j, out=running[1:])
        below = running[edges]
        cumulative[:, j] = below
        np.subtract(below[1:], below[:-1], out=counts[j])
        negatives = negatives - below  # every row that is not of the other labels
    cumulative[:, NEG] = negatives
    np.subtract(negatives[1:], negatives[:-1], out=counts[NEG])
    return counts.T, cumulative


def _sparse_counts(cell: CellArray, weight: FloatArray | None, rows: IntArray, k: int) -> GroupCounts:
    sub = cell[rows]
    w = None if weight is None else weight[rows]
    if 3 * k <= 2 * sub.shape[0]:
        # Few distinct scores for the group's size: a dense count is cheaper than a sort.
        per_cell = np.bincount(sub, weights=w, minlength=3 * k).reshape(k, 3)
        ids = np.flatnonzero(per_cell.any(axis=1))
        counts = np.empty((3, ids.shape[0]))  # transposed: contiguous columns
        counts[...] = per_cell[ids].T
        return GroupCounts(ids, counts.T)
    if w is None:
        sub.sort()
        cells, sizes = _runs(sub)
        return _collapse_cells(cells, sizes.astype(np.float64))
    by_cell = np.argsort(sub, kind="stable")
    sorted_cells = sub[by_cell]
    cells, sizes = _runs(sorted_cells)
    starts = np.cumsum(sizes) - sizes
    summed = np.add.reduceat(w[by_cell], starts) if cells.size else sizes * 0.0
    return _collapse_cells(cells, np.asarray(summed, dtype=np.float64))


def _runs(sorted_values: CellArray) -> tuple[CellArray, IntArray]:
    """Distinct values of a sorted array and the length of each run."""
    n = sorted_values.shape[0]
    if n == 0:
        return sorted_values, np.zeros(0, dtype=np.int64)
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(sorted_values[1:], sorted_values[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return sorted_values[starts], np.diff(starts, append=n)


def _collapse_cells(cells: CellArray, counts: FloatArray) -> GroupCounts:
    """Turn increasing cell ids (3 * score id + label) and their counts into a GroupCounts."""
    score_id = cells // 3
    label = cells - 3 * score_id
    new_id = np.empty(score_id.shape[0], dtype=bool)
    new_id[:1] = True
    np.not_equal(score_id[1:], score_id[:-1], out=new_id[1:])
    row = np.cumsum(new_id, dtype=np.int64)
    row -= 1
    m = int(row[-1]) + 1 if row.size else 0
    out = np.zeros((3, m))  # transposed: columns of the (m, 3) result are contiguous
    row += label * m  # flat index into out
    out.reshape(-1)[row] = counts
    return GroupCounts(score_id[new_id].astype(np.int64), out.T)


def _collapse(ids: IntArray, counts: FloatArray) -> GroupCounts:
    """Sum rows of ``counts`` that share an id; ids come back increasing."""
    if ids.size == 0:
        return GroupCounts(np.zeros(0, dtype=np.int64), _zeros(0))
    by_id = np.argsort(ids, kind="stable")
    ids_sorted = ids[by_id]
    first = np.empty(ids.shape[0], dtype=bool)
    first[0] = True
    np.not_equal(ids_sorted[1:], ids_sorted[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    summed = np.add.reduceat(np.asarray(counts, dtype=np.float64)[by_id], starts, axis=0)
    return GroupCounts(ids_sorted[starts].astype(np.int64), summed)


def _as_index(member: ArrayLike, n: int, name: str) -> IntArray:
    arr = np.asarray(member)
    if arr.shape != (n,):
        raise ValueError(f"membership of group {name!r} has shape {arr.shape}, expected ({n},)")
    if arr.dtype != bool and (arr.dtype.kind not in "iuf" or not np.isin(arr, (0, 1)).all()):
        raise TypeError(f"membership of group {name!r} must be boolean or 0/1 flags, got {arr.dtype}")
    return np.flatnonzero(arr)


def _zeros(k: int) -> FloatArray:
    """A (k, 3) array of zeros whose columns are contiguous (the kernels read columns)."""
    return np.zeros((3, k)).T


def _column_sums(counts: FloatArray) -> FloatArray:
    # three contiguous column sums: much faster than a (K, 3) sum over axis 0 in C order
    return np.array([counts[:, j].sum() for j in range(counts.shape[1])], dtype=np.float64)


def _cumulative(counts: FloatArray) -> FloatArray:
    k = counts.shape[0]
    out = np.empty((k + 1, 3))  # C order: the complement of a group gathers rows of it
    out[0] = 0.0
    for j in range(3):
        out[1:, j] = np.cumsum(counts[:, j])
    return out
