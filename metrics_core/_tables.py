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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core._validation import as_labels, as_scores, as_weights

__all__ = ["LABELS", "GroupCounts", "ScoreTable", "merge_tables"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

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
        return self.counts.sum(axis=0)  # type: ignore[no-any-return]

    def dense(self, n_scores: int) -> FloatArray:
        out = np.zeros((n_scores, 3))
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
        return self.counts.sum(axis=0)  # type: ignore[no-any-return]

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
        label = as_labels(y_true, "y_true", n)
        weight = as_weights(sample_weight, n)
        # -0.0 and +0.0 are one score; `+ 0.0` turns -0.0 into +0.0.
        score = score + 0.0
        order = np.argsort(score, kind="quicksort")
        sorted_scores = score[order]
        new_value = np.empty(n, dtype=bool)
        new_value[:1] = True
        np.not_equal(sorted_scores[1:], sorted_scores[:-1], out=new_value[1:])
        distinct = sorted_scores[new_value]
        rank_sorted = np.cumsum(new_value) - 1
        k = distinct.shape[0]
        # cell of each row = 3 * (rank of its score) + label column
        cell = np.empty(n, dtype=np.int64)
        cell[order] = rank_sorted * 3
        cell += label
        counts = _bincount(cell, weight, 3 * k).reshape(k, 3)
        group_counts = {
            name: _sparse_counts(cell, weight, _as_index(member, n, name), k)
            for name, member in (groups or {}).items()
        }
        return cls(distinct, counts, group_counts, binned)

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
            return GroupCounts(np.zeros(0, dtype=np.int64), np.zeros((0, 3)))
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
    scores = np.unique(np.concatenate([t.scores for t in tables]))
    k = scores.shape[0]
    counts = np.zeros((k, 3))
    pieces: dict[str, list[tuple[IntArray, FloatArray]]] = {}
    for table in tables:
        remap = np.searchsorted(scores, table.scores)
        counts[remap] += table.counts
        for name, grp in table.groups.items():
            pieces.setdefault(name, []).append((remap[grp.ids], grp.counts))
    groups = {
        name: _collapse(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
        for name, parts in pieces.items()
    }
    return ScoreTable(scores, counts, groups, any(t.binned for t in tables))


def _as_index(member: ArrayLike, n: int, name: str) -> IntArray:
    arr = np.asarray(member)
    if arr.shape != (n,):
        raise ValueError(f"membership of group {name!r} has shape {arr.shape}, expected ({n},)")
    if arr.dtype != bool and (arr.dtype.kind not in "iuf" or not np.isin(arr, (0, 1)).all()):
        raise TypeError(f"membership of group {name!r} must be boolean or 0/1 flags, got {arr.dtype}")
    return np.flatnonzero(arr)


def _bincount(cell: IntArray, weight: FloatArray | None, size: int) -> FloatArray:
    return np.bincount(cell, weights=weight, minlength=size).astype(np.float64, copy=False)


def _sparse_counts(cell: IntArray, weight: FloatArray | None, rows: IntArray, k: int) -> GroupCounts:
    sub = cell[rows]
    w = None if weight is None else weight[rows]
    if 3 * k <= 8 * max(sub.shape[0], 1):
        # Few distinct scores for the group's size: a dense count is cheaper than a sort.
        dense = _bincount(sub, w, 3 * k).reshape(k, 3)
        ids = np.flatnonzero(dense.any(axis=1))
        return GroupCounts(ids, dense[ids])
    ids3, inverse = np.unique(sub, return_inverse=True)
    counts3 = np.bincount(inverse, weights=w, minlength=ids3.shape[0]).astype(np.float64)
    return _collapse_cells(ids3, counts3)


def _collapse_cells(cells: IntArray, counts: FloatArray) -> GroupCounts:
    """Turn sorted cell ids (3 * score id + label) and their counts into a GroupCounts."""
    score_id = cells // 3
    ids, start = np.unique(score_id, return_index=True)
    out = np.zeros((ids.shape[0], 3))
    rows = np.repeat(np.arange(ids.shape[0]), np.diff(np.append(start, score_id.shape[0])))
    np.add.at(out, (rows, cells % 3), counts)
    return GroupCounts(ids.astype(np.int64), out)


def _collapse(ids: IntArray, counts: FloatArray) -> GroupCounts:
    """Sum rows of ``counts`` that share an id; ids come back increasing."""
    uniq, inverse = np.unique(ids, return_inverse=True)
    out = np.zeros((uniq.shape[0], 3))
    np.add.at(out, inverse, counts)
    return GroupCounts(uniq.astype(np.int64), out)
