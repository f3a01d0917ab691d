"""Evaluate the regression metrics of every group of a window against its reference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.core.results import Report
from metrics_core.core.validation import as_scores
from metrics_core.engine.adjust import Adjustment
from metrics_core.engine.groupwise import evaluate_groupwise
from metrics_core.engine.select import FairRangeOverrides, fair_ranges_of, select_specs
from metrics_core.regression.kernels import DEFAULT_NO_DI_BOUNDS, as_targets, check_no_di_bounds
from metrics_core.regression.specs import SPECS, RegressionWindow
from metrics_core.stats.contrasts import Method
from metrics_core.stats.judge import DEFAULT_MIN_SAMPLES
from metrics_core.window.groups import Attribute
from metrics_core.window.pairs import check_attribute_rows

__all__ = ["INPUTS", "evaluate"]

#: The data keys the family reads: predictions and (optional) targets.
INPUTS: tuple[str, ...] = ("y_score", "y_true")


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
    no_disparate_impact_bounds: Sequence[float] = DEFAULT_NO_DI_BOUNDS,
) -> Report:
    """Regression metrics of every group of ``attributes`` against its reference.

    ``data["y_score"]``: predictions (finite floats); optional ``data["y_true"]``: targets,
    NaN where not yet known. ``no_disparate_impact_bounds``: the disparate-impact range the
    no-disparate-impact level searches for.

    >>> from metrics_core.window.groups import categorical_attribute
    >>> sex = categorical_attribute("sex", list("ffffmmmmmm"), reference="m")
    >>> y = [0.8, 0.9, 0.2, 0.1, 0.7, 0.9, 0.8, 0.6, 0.3, 0.5]
    >>> report = evaluate({"y_score": y}, [sex], metrics=["regression_disparate_impact_q80"], min_samples=1)
    >>> v = report.get("regression_disparate_impact_q80", "f")
    >>> v.value, v.reference
    (1.5, 'm')
    """
    bounds = check_no_di_bounds(no_disparate_impact_bounds)
    if data.get("y_score") is None:
        raise ValueError("regression data needs 'y_score' (the predictions)")
    available = [key for key in INPUTS if data.get(key) is not None]
    specs = select_specs(SPECS, metrics, available=available, family="regression")
    scores = as_scores(data["y_score"], "y_score")
    arrays: dict[str, NDArray[np.generic]] = {"y_score": scores}
    if "y_true" in available:
        arrays["y_true"] = as_targets(data["y_true"], scores.shape[0])
    check_attribute_rows(attributes, scores.shape[0])
    return evaluate_groupwise(
        RegressionWindow.of(scores, bounds, method),
        arrays,
        attributes,
        specs,
        fair_ranges=fair_ranges_of(SPECS, fair_ranges, family="regression"),
        confidence=confidence,
        min_samples=min_samples,
        n_resamples=n_resamples,
        seed=seed,
        adjust=adjust,
        family_size=family_size,
        labeled=~np.isnan(arrays["y_true"]) if "y_true" in arrays else None,
    )
