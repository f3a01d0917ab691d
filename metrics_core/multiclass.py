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
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core import _multiclass_kernels as mk
from metrics_core._family import (
    check_rows,
    distinct_groups,
    label_coverage,
    select_specs,
    side_masks,
)
from metrics_core._labels import encode_labels
from metrics_core._multiclass_kernels import KERNELS
from metrics_core._results import Report
from metrics_core._spec import FairRange, MetricSpec
from metrics_core.groups import Attribute, categorical_attribute
from metrics_core.groupwise import (
    Data,
    GroupMetric,
    GroupPair,
    ModelMetric,
    Undefined,
    evaluate_groupwise,
)
from metrics_core.intervals import basic_interval, poisson_bootstrap_interval

__all__ = [
    "INPUTS",
    "SPECS",
    "evaluate",
    "multiclass_all_pairs",
    "multiclass_average_odds",
    "multiclass_equality_of_opportunity",
    "multiclass_statistical_parity",
    "multiclass_true_positive_difference",
]

FloatArray = NDArray[np.float64]

MetricName = Literal[
    "statistical_parity", "equality_of_opportunity", "average_odds", "true_positive_difference"
]

#: The data keys the family reads: predicted and true class labels.
INPUTS: tuple[str, ...] = ("y_pred", "y_true")


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


# --- registry entries and the evaluator --------------------------------------------------

_FAIR = FairRange(0.0, 0.1)
_SOURCE = "holisticai documentation (fair area [0, 0.1])"
_SP_REQ = frozenset({"y_pred"})
_LABEL_REQ = frozenset({"y_pred", "y_true"})
_BASE: dict[str, tuple[str, str]] = {
    "statistical_parity": (
        "0: the group's predicted classes are distributed like its reference's; 1: no overlap (unsigned)",
        "1/2 * sum_c abs(P(ŷ=c | G) - P(ŷ=c | R))",
    ),
    "equality_of_opportunity": (
        "0: given the true class, the group's predictions are distributed like its reference's (unsigned)",
        "mean over true classes j of 1/2 * sum_i abs(P(ŷ=i | y=j, G) - P(ŷ=i | y=j, R))",
    ),
    "average_odds": (
        "0: averaged over true classes, the group is predicted into each class like its reference (unsigned)",
        "1/2 * sum_i abs(mean over true classes j of (P(ŷ=i | y=j, G) - P(ŷ=i | y=j, R)))",
    ),
    "true_positive_difference": (
        "0: every class is recognised in the group as often as in its reference (unsigned)",
        "mean over true classes j of abs(P(ŷ=j | y=j, G) - P(ŷ=j | y=j, R))",
    ),
}


def _specs() -> tuple[list[MetricSpec], dict[str, tuple[str, str | None]]]:
    out: list[MetricSpec] = []
    plan: dict[str, tuple[str, str | None]] = {}
    for base, (meaning, formula) in _BASE.items():
        req = _SP_REQ if base == "statistical_parity" else _LABEL_REQ
        support = (
            ("group rows", "reference rows")
            if base == "statistical_parity"
            else ("labeled rows per true class",)
        )
        name = f"multiclass_{base}"
        plan[name] = (base, None)
        out.append(
            MetricSpec(
                name,
                "multiclass",
                "group",
                req,
                0.0,
                _FAIR,
                _SOURCE,
                "bootstrap",
                meaning,
                formula,
                "groupwise",
                support=support,
            )
        )
        for agg in ("mean", "max"):
            plan[f"{name}_{agg}"] = (base, agg)
            out.append(
                MetricSpec(
                    f"{name}_{agg}",
                    "multiclass",
                    "model",
                    req,
                    0.0,
                    _FAIR,
                    _SOURCE,
                    "none",
                    f"{agg} over all pairs of the attribute's groups of {name}; 0: every pair alike",
                    f"{agg} over pairs of groups (a, b) of d(a, b), d = {formula.replace('G', 'a').replace('R', 'b')}",
                    "groupwise",
                )
            )
    return out, plan


#: Registry entries of the family (4 group-level, 8 model-level).
SPECS: list[MetricSpec]
SPECS, _PLAN = _specs()


def _group_metric(
    spec: MetricSpec, base: str, classes: Sequence[Any], n_resamples: int, seed: int
) -> GroupMetric:
    kernel, c = KERNELS[base], len(classes)

    def cells(d: Data) -> FloatArray:
        return mk.cells(d["y_pred"], d["y_true"], c)

    def statistic(g: Data, r: Data) -> float:
        cg, cr = cells(g), cells(r)
        why = mk.reason(base, cg, cr, classes)
        if why is not None:
            raise Undefined(why)
        return float(kernel(cg, cr))

    def interval(g: Data, r: Data, level: float) -> tuple[float, float]:
        # Poisson bootstrap of the count cells (they are sufficient: a resample costs O(C^2),
        # not O(rows)); basic interval, as the distances are biased upward in small groups
        both = np.stack([cells(g), cells(r)])
        value = float(kernel(both[0], both[1]))
        lo, hi = poisson_bootstrap_interval(
            lambda x: kernel(x[..., 0, :, :], x[..., 1, :, :]),
            both,
            level=level,
            n_resamples=n_resamples,
            seed=seed,
        )
        return basic_interval(value, float(lo), float(hi))

    return GroupMetric(spec, statistic, lambda g, r: mk.support(base, cells(g), cells(r)), interval)


def _model_metric(spec: MetricSpec, base: str, aggregation: str, classes: Sequence[Any]) -> ModelMetric:
    def statistic(data: Data, pairs: Sequence[GroupPair]) -> float:
        groups = distinct_groups(pairs)
        counts = [mk.cells(data["y_pred"][rows], data["y_true"][rows], len(classes)) for _, rows in groups]
        return mk.all_pairs(base, counts, [name for name, _ in groups], classes, aggregation)

    return ModelMetric(spec, statistic)


def evaluate(
    data: Mapping[str, ArrayLike],
    attributes: Sequence[Attribute],
    *,
    metrics: Sequence[str] | None = None,
    confidence: float = 0.95,
    fair_ranges: Mapping[str, Sequence[float | None]] | None = None,
    min_samples: float = 30,
    n_resamples: int = 200,
    seed: int = 0,
    **options: Any,
) -> Report:
    """Multiclass metrics of every group of ``attributes`` against its reference.

    ``data["y_pred"]`` holds predicted class labels (text or integers, no missing values);
    optional ``data["y_true"]`` the true labels, None/NaN where not yet known. The classes
    are every class seen in the window, or ``options["classes"]``. Model-level values
    (all-pairs mean and max) come per attribute.

    >>> from metrics_core.groups import categorical_attribute
    >>> race = categorical_attribute("race", list("AAAABBBBCC"), reference="A")
    >>> report = evaluate({"y_pred": [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]}, [race], min_samples=1)
    >>> report.get("multiclass_statistical_parity", "C").value
    0.25
    >>> report.model_value("multiclass_statistical_parity_max", "race").value
    0.5
    """
    classes = options.pop("classes", None)
    if options:
        raise TypeError(f"unknown multiclass option(s): {', '.join(sorted(options))}")
    if data.get("y_pred") is None:
        raise ValueError("multiclass data needs 'y_pred' (predicted class labels)")
    available = [k for k in INPUTS if data.get(k) is not None]
    specs = select_specs(SPECS, metrics, available, "multiclass")
    enc = encode_labels(data["y_pred"], data.get("y_true"), classes=classes)
    arrays: dict[str, NDArray[np.generic]] = {"y_pred": enc.y_pred, "y_true": enc.y_true}
    check_rows(arrays, attributes)
    group_metrics, model_metrics = [], []
    for spec in specs:
        base, aggregation = _PLAN[spec.name]
        if aggregation is None:
            group_metrics.append(_group_metric(spec, base, enc.classes, n_resamples, seed))
        else:
            model_metrics.append(_model_metric(spec, base, aggregation, enc.classes))
    report = evaluate_groupwise(
        arrays,
        attributes,
        group_metrics,
        model_metrics=model_metrics,
        confidence=confidence,
        fair_ranges=fair_ranges,
        min_samples=min_samples,
        n_resamples=n_resamples,
        seed=seed,
    )
    if "y_true" in available:
        report = replace(report, label_coverage=label_coverage(attributes, enc.y_true >= 0))
    return report
