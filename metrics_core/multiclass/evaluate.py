"""Evaluate the multiclass metrics of every group of a window against its reference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.core.results import Report
from metrics_core.core.validation import as_weights
from metrics_core.engine.adjust import Adjustment
from metrics_core.engine.groupwise import evaluate_groupwise
from metrics_core.engine.select import FairRangeOverrides, fair_ranges_of, select_specs
from metrics_core.multiclass.specs import SPECS, WEIGHT, MulticlassWindow
from metrics_core.stats.contrasts import Method
from metrics_core.stats.judge import DEFAULT_MIN_SAMPLES
from metrics_core.window.groups import Attribute
from metrics_core.window.labels import encode_labels
from metrics_core.window.pairs import check_attribute_rows

__all__ = ["INPUTS", "evaluate"]

#: The data keys the family reads: predicted and true class labels.
INPUTS: tuple[str, ...] = ("y_pred", "y_true")


def evaluate(
    data: Mapping[str, ArrayLike],
    attributes: Sequence[Attribute],
    *,
    metrics: Sequence[str] | None = None,
    confidence: float = 0.95,
    fair_ranges: FairRangeOverrides | None = None,
    min_samples: float = DEFAULT_MIN_SAMPLES,
    n_resamples: int = 200,
    seed: int = 0,
    adjust: Adjustment = "none",
    family_size: int | None = None,
    method: Method = "fixed",
    classes: ArrayLike | None = None,
) -> Report:
    """Multiclass metrics of every group of ``attributes`` against its reference.

    ``data["y_pred"]`` holds predicted class labels (text or integers, no missing values);
    optional ``data["y_true"]`` the true labels, None/NaN where not yet known. The classes
    are every class seen in the window, or ``classes``. Optional ``data["sample_weight"]``: how
    many rows each entry stands for, for data already counted by (prediction, label, groups) -
    the values are those of the rows. Model-level values (all-pairs mean
    and max) come per attribute. Intervals: a Poisson bootstrap of the group's and the
    reference's count cells (``n_resamples``, ``seed``), basic interval.

    ``adjust`` / ``family_size``: multiplicity adjustment (:mod:`metrics_core.engine.adjust`);
    ``method`` is accepted for one API across families - this family's intervals are bootstraps,
    which ``method="anytime"`` does not change.

    >>> from metrics_core.window.groups import categorical_attribute
    >>> race = categorical_attribute("race", list("AAAABBBBCC"), reference="A")
    >>> report = evaluate({"y_pred": [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]}, [race], min_samples=1)
    >>> report.get("multiclass_statistical_parity", "C").value
    0.25
    >>> report.model_value("multiclass_statistical_parity_max", "race").value
    0.5
    """
    if data.get("y_pred") is None:
        raise ValueError("multiclass data needs 'y_pred' (predicted class labels)")
    available = [k for k in INPUTS if data.get(k) is not None]
    specs = select_specs(SPECS, metrics, available=available, family="multiclass")
    enc = encode_labels(data["y_pred"], data.get("y_true"), classes=classes)
    arrays: dict[str, NDArray[np.generic]] = {"y_pred": enc.y_pred, "y_true": enc.y_true}
    n = enc.y_pred.shape[0]
    weight = as_weights(data.get("sample_weight"), n)
    if weight is not None:
        arrays[WEIGHT] = weight
    check_attribute_rows(attributes, n)
    return evaluate_groupwise(
        MulticlassWindow(enc.classes),
        arrays,
        attributes,
        specs,
        fair_ranges=fair_ranges_of(SPECS, fair_ranges, family="multiclass"),
        confidence=confidence,
        min_samples=min_samples,
        n_resamples=n_resamples,
        seed=seed,
        adjust=adjust,
        family_size=family_size,
        labeled=enc.y_true >= 0 if "y_true" in available else None,
        weight=weight,
    )
