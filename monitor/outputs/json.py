"""Plain-JSON views of results, shared by ``fairwatch evaluate --format json`` and ``/api/v1/results``.

NaN and infinities become ``null`` (JSON has neither); an undefined value keeps its
``reason``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypedDict

from metrics_core import get_metric
from monitor.core.times import iso_z
from monitor.evaluation.results import ModelEvaluation

__all__ = ["EvaluationRow", "ModelValueRow", "evaluation_rows", "finite_or_none", "model_value_rows"]


class EvaluationRow(TypedDict):
    """One judged value: the JSON object of ``fairwatch evaluate --format json`` and ``results``."""

    model: str
    window: str
    attribute: str
    group: str
    reference: str
    metric: str
    value: float | None
    ci_lower: float | None
    ci_upper: float | None
    fair_min: float | None
    fair_max: float | None
    state: str
    n_group: int
    n_reference: int
    support: float | None
    reason: str | None
    # "labels": computed from the labels; "estimate": a label metric estimated from the scores while
    # the window's labels are pending (models[].nowcast)
    basis: str
    window_start: str
    window_end: str
    evaluated_at: str


class ModelValueRow(TypedDict):
    """One model-level value (``model_values`` of ``/api/v1/results``)."""

    model: str
    window: str
    attribute: str
    metric: str
    value: float | None
    ci_lower: float | None
    ci_upper: float | None
    reason: str | None


def finite_or_none(x: float | None) -> float | None:
    """``x``, or None where JSON has no number for it (NaN, infinities, missing)."""
    return float(x) if x is not None and math.isfinite(x) else None


def _needs_labels(metric: str) -> bool:
    try:
        return "y_true" in get_metric(metric).requires
    except ValueError:  # a metric unknown to this build (an older snapshot): keep the outcome window
        return False


def evaluation_rows(evaluations: Iterable[ModelEvaluation]) -> list[EvaluationRow]:
    """One object per (model, window, attribute, group, metric)."""
    rows: list[EvaluationRow] = []
    for ev in evaluations:
        for w in ev.windows:
            judged = [(v, "labels") for v in w.values] + [(v, "estimate") for v in w.estimates]
            for v, basis in judged:
                # label-based metrics are computed on the window shifted back by label_delay; their
                # estimates are of the window itself
                shifted = basis == "labels" and _needs_labels(v.metric)
                rows.append(
                    {
                        "model": ev.model,
                        "window": w.window,
                        "attribute": v.attribute,
                        "group": v.group,
                        "reference": v.reference,
                        "metric": v.metric,
                        "value": finite_or_none(v.value),
                        "ci_lower": finite_or_none(v.ci_lower),
                        "ci_upper": finite_or_none(v.ci_upper),
                        "fair_min": finite_or_none(v.fair_min),
                        "fair_max": finite_or_none(v.fair_max),
                        "state": v.state,
                        "n_group": int(v.n_group),
                        "n_reference": int(v.n_reference),
                        "support": finite_or_none(v.support),
                        "reason": v.reason,
                        "basis": basis,
                        "window_start": iso_z(w.label_start if shifted else w.start),
                        "window_end": iso_z(w.label_end if shifted else w.end),
                        "evaluated_at": iso_z(ev.evaluated_at),
                    }
                )
    return rows


def model_value_rows(evaluations: Iterable[ModelEvaluation]) -> list[ModelValueRow]:
    """Model-level values (overall AUC, power means, inequality indices)."""
    return [
        {
            "model": ev.model,
            "window": w.window,
            "attribute": m.attribute,
            "metric": m.metric,
            "value": finite_or_none(m.value),
            "ci_lower": finite_or_none(m.ci_lower),
            "ci_upper": finite_or_none(m.ci_upper),
            "reason": m.reason,
        }
        for ev in evaluations
        for w in ev.windows
        for m in w.model_values
    ]
