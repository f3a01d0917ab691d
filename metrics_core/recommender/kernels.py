"""Kernels of the recommender family: a side of a comparison, per-user rates and sums for the user bootstrap.

A *side* is the log rows of one group (or of its reference): integer user and item codes,
whether each row counts as a recommendation after binarisation, and the optional score,
relevance and relevant-item count. Kernels raise :class:`Undefined` with a reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from metrics_core.core.types import BoolArray, FloatArray, IntArray
from metrics_core.core.undefined import Undefined
from metrics_core.engine.cells import Cells

if TYPE_CHECKING:
    from scipy import sparse

__all__ = [
    "RATES",
    "Side",
    "average_rate_ratio",
    "exposure_counts",
    "item_counts",
    "mean_of_sums",
    "mean_score_difference",
    "side_of",
    "user_cells",
    "user_exposure",
    "user_rate_sums",
    "user_rates",
    "user_sums",
]

RATES = ("precision", "recall", "f1")


@dataclass(frozen=True)
class Side:
    """Log rows of one side of a comparison (codes are shared by both sides)."""

    user: IntArray
    item: IntArray
    rec: BoolArray
    y_score: FloatArray | None = None
    y_true: FloatArray | None = None  # 0, 1 or NaN (relevance unknown)
    n_relevant: FloatArray | None = None  # the user's total relevant items, repeated on each row


def side_of(d: Mapping[str, NDArray[np.generic]]) -> Side:
    """The side held in an evaluator column dict (keys ``user``, ``item``, ``_rec``, ...)."""

    def opt(key: str) -> FloatArray | None:
        return np.asarray(d[key], dtype=np.float64) if key in d else None

    user = np.asarray(d["user"], dtype=np.int64)
    return Side(
        user,
        np.asarray(d["item"], dtype=np.int64) if "item" in d else np.zeros(user.size, np.int64),
        np.asarray(d["_rec"], dtype=bool) if "_rec" in d else np.ones(user.size, dtype=bool),
        opt("y_score"),
        opt("y_true"),
        opt("n_relevant"),
    )


def _bincount(codes: IntArray, weights: NDArray[np.generic] | None = None, size: int = 0) -> FloatArray:
    return np.bincount(codes, weights=weights, minlength=size).astype(np.float64)


def mean_score_difference(g: Side, r: Side) -> float:
    """Mean score of the group's scored rows minus that of the reference's."""
    means = []
    for side, who in ((g, "group"), (r, "reference")):
        if side.y_score is None:
            raise Undefined("no score column (y_score)")
        s = side.y_score[~np.isnan(side.y_score)]
        if s.size == 0:
            raise Undefined(f"the {who} has no scored row")
        means.append(float(s.mean()))
    return means[0] - means[1]


def exposure_counts(side: Side, support: BoolArray) -> FloatArray:
    """Recommendations per item of ``support`` (items are codes ``0..support.size-1``)."""
    return _bincount(side.item[side.rec], size=support.size)[support]


def item_counts(item: IntArray, rec: BoolArray, n_items: int) -> FloatArray:
    """Recommendations per item code, padded with zeros up to ``n_items`` items."""
    return _bincount(item[rec], size=n_items)


def user_rates(side: Side) -> dict[str, FloatArray]:
    """Per-user precision, recall and F1 of the recommended rows; NaN where undefined.

    precision = hits / recommended rows with a known relevance; recall = hits / relevant
    items (``n_relevant`` if given, else the user's relevant logged rows); F1 = 2 hits /
    (recommended + relevant), the harmonic mean of the two written in counts.
    """
    if side.y_true is None:
        raise Undefined("no relevance column (y_true)")
    size = int(side.user.max()) + 1 if side.user.size else 0
    present = _bincount(side.user, size=size) > 0
    known = ~np.isnan(side.y_true)
    relevant = known & (side.y_true == 1)
    hits = _bincount(side.user, side.rec & relevant, size)[present]
    n_rec = _bincount(side.user, side.rec & known, size)[present]
    if side.n_relevant is None:
        n_rel = _bincount(side.user, relevant, size)[present]
    else:
        per_user = np.zeros(size)
        np.maximum.at(per_user, side.user, side.n_relevant)
        n_rel = per_user[present]
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "precision": np.where(n_rec > 0, hits / n_rec, np.nan),
            "recall": np.where(n_rel > 0, hits / n_rel, np.nan),
            "f1": np.where(n_rec + n_rel > 0, 2 * hits / (n_rec + n_rel), np.nan),
        }


def average_rate_ratio(g: Side, r: Side, rate: str) -> float:
    """Mean over the group's users of ``rate`` over the same mean for the reference."""
    means = []
    for side, who in ((g, "group"), (r, "reference")):
        values = user_rates(side)[rate]
        values = values[~np.isnan(values)]
        if values.size == 0:
            raise Undefined(f"no user of the {who} has a defined {rate}")
        means.append(float(values.mean()))
    if means[1] == 0:
        raise Undefined(f"the reference's average {rate} is 0")
    return means[0] / means[1]


def _compact(user: IntArray) -> tuple[IntArray, int]:
    """Users renumbered ``0..u-1`` (each row's), and ``u``."""
    present = np.bincount(user) > 0  # user codes are 0..m-1 already: renumber without sorting
    renumber = np.cumsum(present) - 1
    return renumber[user].astype(np.int64), int(present.sum())


def user_sums(side: Side, columns: Mapping[str, FloatArray]) -> FloatArray:
    """Per user of the side, the sum of each row column: a ``(users, columns)`` array."""
    index, u = _compact(side.user)
    return np.column_stack([_bincount(index, values, u) for values in columns.values()]).reshape(
        u, len(columns)
    )


def user_rate_sums(side: Side, rate: str) -> FloatArray:
    """Per user with a defined ``rate``: ``(rate, 1)``; else ``(0, 0)`` - weighted sums give the mean."""
    values = user_rates(side)[rate]
    defined = ~np.isnan(values)
    return np.column_stack([np.where(defined, values, 0.0), defined.astype(np.float64)])


def user_exposure(side: Side, support: BoolArray) -> sparse.csr_matrix:
    """Recommendations per (user, item of ``support``): exposure is the sum over users."""
    from scipy import sparse  # scipy costs ~0.2 s to import: only when exposure is computed

    index, u = _compact(side.user)
    column = np.cumsum(support) - 1
    rows = side.rec & support[side.item]
    return sparse.csr_matrix(
        (np.ones(int(rows.sum())), (index[rows], column[side.item[rows]])), shape=(u, int(support.sum()))
    )


def mean_of_sums(sums: FloatArray, who: str, what: str) -> float:
    """``total / count`` from a side's weighted ``(total, count)`` sums."""
    if sums[1] <= 0:
        raise Undefined(f"the {who} has no {what}")
    return float(sums[0] / sums[1])


def user_cells(g: Any, r: Any, statistic: Callable[[FloatArray, FloatArray], float]) -> Cells:
    """The user bootstrap as cells: every user one cell holding their rows' sums ``g``, ``r``.

    Log rows of one user are not independent (one list, one person); resampling rows would
    cut lists apart and understate the variance, so users are resampled within each side.
    A statistic of the two sides' summed rows (``statistic(sum_G, sum_R)``) of a resample
    with user multiplicities ``w`` is ``statistic(g.T @ w_G, r.T @ w_R)``.
    """

    g_t, r_t = g.T, r.T  # transposed once, not per resample

    def of_weights(w_g: FloatArray, w_r: FloatArray) -> float:
        return statistic(np.asarray(g_t @ w_g).ravel(), np.asarray(r_t @ w_r).ravel())

    return Cells(np.ones(g.shape[0]), np.ones(r.shape[0]), of_weights)


# --- model-level kernels ---


def aggregate_diversity_of(counts: FloatArray) -> float:
    if counts.size == 0:
        raise Undefined("the window has no item")
    return float((counts > 0).sum() / counts.size)


def gini_of(counts: FloatArray) -> float:
    if counts.size < 2:
        raise Undefined("the Gini index needs at least two items")
    total = counts.sum()
    if total <= 0:
        raise Undefined("nothing was recommended in the window")
    n = counts.size
    w = 2 * np.arange(1, n + 1) - n - 1
    return float((w * np.sort(counts / total)).sum() / (n - 1))


def entropy_of(counts: FloatArray) -> float:
    total = counts.sum()
    if total <= 0:
        raise Undefined("nothing was recommended in the window")
    p = counts[counts > 0] / total
    return float(-(p * np.log(p)).sum())


def popularity_of(
    user: NDArray[np.int64], item: NDArray[np.int64], rec: BoolArray, pop: FloatArray | None
) -> float:
    if not rec.any():
        raise Undefined("nothing was recommended in the window")
    u, i = user[rec], item[rec]
    if pop is None:
        pairs = np.unique(np.stack([u, i]), axis=1)  # an item's popularity counts each user once
        per_item = np.bincount(pairs[1], minlength=int(item.max()) + 1).astype(np.float64)
        row_pop = per_item[i]
    else:
        row_pop = pop[rec]
    sums = np.bincount(u, weights=row_pop)
    counts = np.bincount(u)
    shown = counts > 0
    return float((sums[shown] / counts[shown]).mean())
