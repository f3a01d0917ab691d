"""Multiclass bias metrics: holisticai's four distances, per group and over all pairs of groups.

Each metric is a distance in [0, 1] between two sets of rows, computed from their counts
``cells[..., i, j]`` = rows predicted class ``i`` with true class ``j`` (shape
``(..., C, C + 1)``; the last column holds rows whose label has not arrived). The formulas
are those of holisticai's *code* (``holisticai.bias.metrics._multiclass``):

- statistical parity: total variation distance between the predicted-class distributions;
- equality of opportunity: mean over true classes of the total variation distance between
  the distributions of the prediction given that true class (the columns of the
  confusion matrix normalised per true class);
- average odds: total variation distance between those columns averaged over true classes;
- true positive difference: mean over classes of the absolute gap in per-class recall.

fairwatch reports each one for a group against its reference (``metrics.md`` section 1) and,
as holisticai does, as the mean and the max over all pairs of groups of an attribute. Label
metrics use the labeled rows only; statistical parity uses every row. A true class with
labeled rows on one side only makes the label metrics NaN with a reason (holisticai
silently fills that column with 1/C); a class with labeled rows on neither side is left
out of the average (holisticai counts it as a zero distance). See ``docs/families/multiclass.md``.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from metrics_core.core.undefined import Undefined
from metrics_core.multiclass import kernels as mk
from metrics_core.multiclass.kernels import KERNELS
from metrics_core.window.groups import categorical_attribute
from metrics_core.window.labels import encode_labels
from metrics_core.window.pairs import side_masks

__all__ = [
    "MetricName",
    "multiclass_all_pairs",
    "multiclass_average_odds",
    "multiclass_equality_of_opportunity",
    "multiclass_statistical_parity",
    "multiclass_true_positive_difference",
]

MetricName = Literal[
    "statistical_parity", "equality_of_opportunity", "average_odds", "true_positive_difference"
]

# --- public functions -------------------------------------------------------------------


def _pair(
    name: str,
    y_true: ArrayLike | None,
    y_pred: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike | None,
    classes: ArrayLike | None,
) -> float:
    enc = encode_labels(y_pred, y_true, classes=classes)
    g, r = side_masks(group, reference, enc.y_pred.shape[0])
    c = enc.n_classes
    cg, cr = mk.cells(enc.y_pred[g], enc.y_true[g], c), mk.cells(enc.y_pred[r], enc.y_true[r], c)
    return float(KERNELS[name](cg, cr))


def multiclass_statistical_parity(
    y_pred: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike | None = None,
    *,
    classes: ArrayLike | None = None,
) -> float:
    """Total variation distance between the group's and the reference's predicted classes.

    .. math:: SP(G, R) = \\frac{1}{2} \\sum_c \\left| P(\\hat y = c \\mid G) - P(\\hat y = c \\mid R) \\right|

    ``reference`` defaults to the rows outside ``group``. NaN when a side has no rows.

    >>> multiclass_statistical_parity(["a", "b", "a", "b", "b", "c"], [1, 1, 1, 0, 0, 0])
    0.6666666666666666
    """
    return _pair("statistical_parity", None, y_pred, group, reference, classes)


def multiclass_equality_of_opportunity(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike | None = None,
    *,
    classes: ArrayLike | None = None,
) -> float:
    """Mean over true classes of the distance between the sides' predictions given that class.

    .. math:: EO(G, R) = \\frac{1}{|J|} \\sum_{j \\in J} \\frac{1}{2} \\sum_i
              \\left| P(\\hat y = i \\mid y = j, G) - P(\\hat y = i \\mid y = j, R) \\right|

    ``J``: true classes with labeled rows on both sides. Unlabeled rows (None/NaN) are
    ignored. NaN when a true class is labeled on one side only or no class is shared.

    >>> y_true = ["a", "a", "b", "b", "a", "a", "b", "b"]
    >>> y_pred = ["a", "a", "b", "a", "a", "b", "b", "b"]
    >>> multiclass_equality_of_opportunity(y_true, y_pred, [1, 1, 1, 1, 0, 0, 0, 0])
    0.5
    """
    return _pair("equality_of_opportunity", y_true, y_pred, group, reference, classes)


def multiclass_average_odds(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike | None = None,
    *,
    classes: ArrayLike | None = None,
) -> float:
    """Distance between the sides' prediction distributions averaged over the true classes.

    .. math:: AO(G, R) = \\frac{1}{2} \\sum_i \\left| \\frac{1}{|J|} \\sum_{j \\in J}
              \\left( P(\\hat y = i \\mid y = j, G) - P(\\hat y = i \\mid y = j, R) \\right) \\right|

    With two classes this is the absolute binary average odds difference
    ``|dTPR + dFPR| / 2``. NaN cases as :func:`multiclass_equality_of_opportunity`.

    >>> y_true = ["a", "a", "b", "b", "a", "a", "b", "b"]
    >>> y_pred = ["a", "a", "b", "a", "a", "b", "b", "b"]
    >>> multiclass_average_odds(y_true, y_pred, [1, 1, 1, 1, 0, 0, 0, 0])
    0.5
    """
    return _pair("average_odds", y_true, y_pred, group, reference, classes)


def multiclass_true_positive_difference(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike | None = None,
    *,
    classes: ArrayLike | None = None,
) -> float:
    """Mean over true classes of the absolute gap in per-class recall.

    .. math:: TPD(G, R) = \\frac{1}{|J|} \\sum_{j \\in J}
              \\left| P(\\hat y = j \\mid y = j, G) - P(\\hat y = j \\mid y = j, R) \\right|

    NaN cases as :func:`multiclass_equality_of_opportunity`.

    >>> y_true = ["a", "a", "b", "b", "a", "a", "b", "b"]
    >>> y_pred = ["a", "a", "b", "a", "a", "b", "b", "b"]
    >>> multiclass_true_positive_difference(y_true, y_pred, [1, 1, 1, 1, 0, 0, 0, 0])
    0.5
    """
    return _pair("true_positive_difference", y_true, y_pred, group, reference, classes)


def multiclass_all_pairs(
    y_true: ArrayLike | None,
    y_pred: ArrayLike,
    groups: ArrayLike,
    *,
    metric: MetricName,
    aggregation: Literal["mean", "max"] = "mean",
    classes: ArrayLike | None = None,
) -> float:
    """holisticai's model-level form: the mean or max of ``metric`` over all pairs of groups.

    ``groups`` holds each row's group (missing values: no group); ``y_true`` may be None
    for statistical parity. NaN when there are fewer than two groups or the metric is
    undefined for some pair.

    >>> multiclass_all_pairs(None, [0, 1, 2, 0, 1, 2, 0, 1, 2, 0], list("AAAABBBBCC"),
    ...                      metric="statistical_parity", aggregation="max")
    0.5
    """
    if metric not in KERNELS:
        raise ValueError(f"unknown multiclass metric {metric!r}; known: {', '.join(KERNELS)}")
    if aggregation not in ("mean", "max"):
        raise ValueError(f"aggregation must be 'mean' or 'max', got {aggregation!r}")
    enc = encode_labels(y_pred, y_true, classes=classes)
    attr = categorical_attribute("groups", groups)
    if np.asarray(groups).shape[0] != enc.y_pred.shape[0]:
        raise ValueError("groups must have one entry per row of y_pred")
    names = [c.group for c in attr.comparisons]
    counts = [
        mk.cells(enc.y_pred[m], enc.y_true[m], enc.n_classes)
        for m in (attr.masks[c.key] for c in attr.comparisons)
    ]
    try:
        return mk.all_pairs(metric, counts, names, enc.classes, aggregation)
    except Undefined:
        return math.nan
