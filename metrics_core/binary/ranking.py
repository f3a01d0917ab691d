"""Score-ranking bias metrics of Borkan et al. (2019), seeds 000 and 001.

D_g is the group, D its reference (the background: the window's other rows), and the
superscripts + / - are label 1 / 0. Every metric is one AUC of two sets of rows
(:mod:`metrics_core.stats.auc`), ties counted as 1/2:

=============  ==========================  ==================================
metric         AUC of                      low / positive means
=============  ==========================  ==================================
subgroup_auc   D_g+ over D_g-              poor separation inside the group
bpsn_auc       D+ over D_g-                group negatives scored too high
bnsp_auc       D_g+ over D-                group positives scored too low
negative_aeg   D_g- over D-, minus 1/2     group negatives scored higher
positive_aeg   D_g+ over D+, minus 1/2     group positives scored higher
=============  ==========================  ==================================

The functions here take raw arrays for one group; the service evaluates all groups at
once from a shared :class:`~metrics_core.ScoreTable` with :func:`metrics_core.evaluate`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from metrics_core.stats.auc import auc_delong
from metrics_core.window.groups import membership
from metrics_core.window.tables import NEG, POS, ScoreTable

__all__ = [
    "bnsp_auc",
    "bpsn_auc",
    "negative_aeg",
    "overall_auc",
    "positive_aeg",
    "power_mean",
    "subgroup_auc",
]


def power_mean(values: ArrayLike, *, p: float = -5.0) -> float:
    """Generalised mean ``(mean v^p)^(1/p)``; NaN if any value is NaN (as the competition code).

    >>> round(power_mean([0.9, 0.8, 0.95]), 6)
    0.869463
    """
    v = np.asarray(values, dtype=float)
    if v.size == 0 or np.isnan(v).any():
        return math.nan
    if p == 0:
        return float(np.exp(np.log(v).mean()))
    with np.errstate(divide="ignore"):
        return float(np.mean(v**p) ** (1.0 / p))


def _sets_auc(y_true: ArrayLike, y_score: ArrayLike, group: ArrayLike, x: str, y: str) -> float:
    y_arr = np.asarray(y_true)
    g = membership(group)
    table = ScoreTable.from_arrays(y_score, y_arr, {"g": g, "r": ~g})
    dense = {name: table.group(name).dense(table.n_scores) for name in ("g", "r")}

    def column(spec: str) -> np.ndarray:
        side = dense["g" if spec.startswith("group") else "r"]
        return side[:, POS if spec.endswith("+") else NEG]

    return auc_delong(column(x), None, column(y), None)[0]


def subgroup_auc(y_true: ArrayLike, y_score: ArrayLike, group: ArrayLike) -> float:
    """AUC within the group; NaN when the group lacks a class.

    >>> subgroup_auc([0, 1, 0, 1], [0.1, 0.9, 0.8, 0.2], [True, True, False, False])
    1.0
    """
    return _sets_auc(y_true, y_score, group, "group+", "group-")


def bpsn_auc(y_true: ArrayLike, y_score: ArrayLike, group: ArrayLike) -> float:
    """AUC of background positives over group negatives.

    >>> bpsn_auc([0, 1, 0, 1], [0.1, 0.9, 0.8, 0.2], [True, True, False, False])
    1.0
    """
    return _sets_auc(y_true, y_score, group, "reference+", "group-")


def bnsp_auc(y_true: ArrayLike, y_score: ArrayLike, group: ArrayLike) -> float:
    """AUC of group positives over background negatives.

    >>> bnsp_auc([0, 1, 0, 1], [0.1, 0.9, 0.8, 0.2], [True, True, False, False])
    1.0
    """
    return _sets_auc(y_true, y_score, group, "group+", "reference-")


def negative_aeg(y_true: ArrayLike, y_score: ArrayLike, group: ArrayLike) -> float:
    """``P(s(D_g-) > s(D-)) + P(tie)/2 - 1/2``: positive when the group's negatives score higher.

    >>> negative_aeg([0, 1, 0, 1], [0.1, 0.9, 0.8, 0.2], [True, True, False, False])
    -0.5
    """
    return _sets_auc(y_true, y_score, group, "group-", "reference-") - 0.5


def positive_aeg(y_true: ArrayLike, y_score: ArrayLike, group: ArrayLike) -> float:
    """``P(s(D_g+) > s(D+)) + P(tie)/2 - 1/2``: positive when the group's positives score higher.

    >>> positive_aeg([0, 1, 0, 1], [0.1, 0.9, 0.8, 0.2], [True, True, False, False])
    0.5
    """
    return _sets_auc(y_true, y_score, group, "group+", "reference+") - 0.5


def overall_auc(y_true: ArrayLike, y_score: ArrayLike) -> float:
    """ROC AUC of the whole window (equal to ``sklearn.metrics.roc_auc_score``).

    >>> overall_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    table = ScoreTable.from_arrays(y_score, y_true)
    return auc_delong(table.counts[:, POS], None, table.counts[:, NEG], None)[0]
