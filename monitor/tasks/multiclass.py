"""Multiclass classification: a predicted class per row and, when it has arrived, the true class.

Bad rows: a missing predicted class (``prediction_invalid``). Classes are compared as text,
so ``1`` and ``1.0`` are one class.
"""

from __future__ import annotations

from monitor.tasks.base import FamilyModule, GroupwiseOptions, ModelView, Rows, Task

__all__ = ["TASK", "MulticlassOptions"]


class MulticlassOptions(GroupwiseOptions):
    classes: list[str | int | float] | None = None  # default: every class seen in the window


def clean(rows: Rows, model: ModelView) -> None:
    cols = model.columns
    rows.required_text("y_pred", cols.prediction, "prediction_invalid")
    if cols.label and cols.label in rows.frame.columns:
        rows.inputs["y_true"] = rows.text(cols.label)


TASK = Task(
    name="multiclass",
    families=("multiclass",),
    evaluate=FamilyModule("metrics_core.multiclass"),
    required=(("prediction",),),
    reads={"prediction": ("y_pred",), "label": ("y_true",)},
    optional=("label",),
    options=MulticlassOptions,
    clean=clean,
)
