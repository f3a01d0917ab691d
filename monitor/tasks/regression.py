"""Regression: the prediction in ``score`` and, when it has arrived, the target in ``label``.

Bad rows: a prediction that is not a finite number (``score_invalid``); a target that is
infinite or does not parse (``label_invalid``; a missing target has not arrived yet).
"""

from __future__ import annotations

import numpy as np

from monitor.tasks.base import FamilyModule, GroupwiseOptions, ModelView, Rows, Task

__all__ = ["TASK", "RegressionOptions"]


class RegressionOptions(GroupwiseOptions):
    no_disparate_impact_bounds: tuple[float, float] = (0.8, 1.25)


def clean(rows: Rows, model: ModelView) -> None:
    cols = model.columns
    score = rows.numeric(cols.score or "")
    rows.reject(~np.isfinite(score), "score_invalid")
    rows.inputs["y_score"] = score
    if cols.label:
        label = rows.numeric(cols.label)
        unparseable = np.isnan(label) & rows.frame[cols.label].notna().to_numpy()
        rows.reject(np.isinf(label) | unparseable, "label_invalid")
        rows.inputs["y_true"] = label


TASK = Task(
    name="regression",
    families=("regression",),
    evaluate=FamilyModule("metrics_core.regression"),
    required=(("score",),),
    reads={"score": ("y_score",), "label": ("y_true",)},
    optional=("label",),
    options=RegressionOptions,
    clean=clean,
)
