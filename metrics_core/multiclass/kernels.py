"""Counts and distances of the multiclass family (vectorised over pairs and resamples).

A side (group or reference) is summarised by ``cells[..., i, j]``: rows predicted class ``i``
with true class ``j``, shape ``(..., C, C + 1)``; the last column holds unlabeled rows. The
distances are those of holisticai's ``_multiclass`` code; :mod:`metrics_core.multiclass.metrics`
documents them and the departures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from metrics_core.core.undefined import Undefined

FloatArray = NDArray[np.float64]
Kernel = Callable[[FloatArray, FloatArray], FloatArray]


def cells(
    y_pred: NDArray[np.generic],
    y_true: NDArray[np.generic],
    n_classes: int,
    weight: NDArray[np.float64] | None = None,
) -> FloatArray:
    """Counts (C, C + 1) of predicted class x true class; true code -1 (unlabeled) goes last.

    ``weight``: the rows each entry stands for (counted data), 1 each by default.
    """
    pred = np.asarray(y_pred, dtype=np.int64)
    true = np.asarray(y_true, dtype=np.int64)
    flat = pred * (n_classes + 1) + np.where(true < 0, n_classes, true)
    counts = np.bincount(flat, weights=weight, minlength=n_classes * (n_classes + 1))
    return counts.reshape(n_classes, n_classes + 1).astype(np.float64)


def _statistical_parity(cg: FloatArray, cr: FloatArray) -> FloatArray:
    def rates(c: FloatArray) -> FloatArray:
        per_class = c.sum(-1)
        shares: FloatArray = per_class / per_class.sum(-1, keepdims=True)  # NaN for an empty side
        return shares

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(0.5 * np.abs(rates(cg) - rates(cr)).sum(-1))


def _conditional_gaps(cg: FloatArray, cr: FloatArray) -> tuple[FloatArray, FloatArray, NDArray[np.bool_]]:
    """``P(pred=i | true=j, G) - P(pred=i | true=j, R)`` over the true classes both sides have.

    Returns the gaps (0 in columns not shared), the number of shared true classes, and
    where the value is undefined (a class labeled on one side only, or none shared).
    """
    lg, lr = cg[..., :-1], cr[..., :-1]
    ng, nr = lg.sum(-2), lr.sum(-2)
    shared = (ng > 0) & (nr > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        gaps = np.where(shared[..., None, :], lg / ng[..., None, :] - lr / nr[..., None, :], 0.0)
    k = shared.sum(-1).astype(np.float64)
    undefined = ((ng > 0) != (nr > 0)).any(-1) | (k == 0)
    return gaps, k, undefined


def _equality_of_opportunity(cg: FloatArray, cr: FloatArray) -> FloatArray:
    gaps, k, undefined = _conditional_gaps(cg, cr)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(undefined, np.nan, np.abs(gaps).sum((-2, -1)) / (2 * k))


def _average_odds(cg: FloatArray, cr: FloatArray) -> FloatArray:
    gaps, k, undefined = _conditional_gaps(cg, cr)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(undefined, np.nan, np.abs(gaps.sum(-1)).sum(-1) / (2 * k))


def _true_positive_difference(cg: FloatArray, cr: FloatArray) -> FloatArray:
    gaps, k, undefined = _conditional_gaps(cg, cr)
    diagonal = np.diagonal(gaps, axis1=-2, axis2=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(undefined, np.nan, np.abs(diagonal).sum(-1) / k)


KERNELS: dict[str, Kernel] = {
    "statistical_parity": _statistical_parity,
    "equality_of_opportunity": _equality_of_opportunity,
    "average_odds": _average_odds,
    "true_positive_difference": _true_positive_difference,
}


def reason(
    name: str, cg: FloatArray, cr: FloatArray, classes: Sequence[Any], a: str = "group", b: str = "reference"
) -> str | None:
    """Why ``name`` is undefined for these two sides (None: it is defined)."""
    if name == "statistical_parity":
        for side, c in ((a, cg), (b, cr)):
            if c.sum() == 0:
                return f"the {side} has no rows"
        return None
    ng, nr = cg[:, :-1].sum(0), cr[:, :-1].sum(0)
    for side, n in ((a, ng), (b, nr)):
        if n.sum() == 0:
            return f"the {side} has no labeled rows"
    for side, other, n, m in ((a, b, ng, nr), (b, a, nr, ng)):
        lacking = np.flatnonzero((n == 0) & (m > 0))
        if lacking.size:
            return f"the {side} has no labeled rows of true class {classes[lacking[0]]!r} (the {other} has)"
    return None


def support(name: str, cg: FloatArray, cr: FloatArray) -> float:
    """The smallest denominator: side size, or labeled rows of a true class on either side."""
    if name == "statistical_parity":
        return float(min(cg.sum(), cr.sum()))
    ng, nr = cg[:, :-1].sum(0), cr[:, :-1].sum(0)
    present = (ng > 0) | (nr > 0)
    return float(np.minimum(ng, nr)[present].min()) if present.any() else 0.0


def all_pairs(
    name: str, cells: Sequence[FloatArray], names: Sequence[str], classes: Sequence[Any], aggregation: str
) -> float:
    if len(cells) < 2:
        raise Undefined("fewer than two non-empty groups")
    stacked = np.stack(cells)
    first, second = np.triu_indices(len(cells), 1)
    values = KERNELS[name](stacked[first], stacked[second])
    bad = np.flatnonzero(np.isnan(values))
    if bad.size:
        i, j = first[bad[0]], second[bad[0]]
        why = reason(name, stacked[i], stacked[j], classes, f"group {names[i]!r}", f"group {names[j]!r}")
        raise Undefined(f"undefined for groups {names[i]!r} and {names[j]!r}: {why}")
    return float(values.max() if aggregation == "max" else values.mean())
