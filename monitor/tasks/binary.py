"""Binary classification: a score and/or a 0/1 prediction, a 0/1 label; evaluated from a score table.

Bad rows, counted by reason: a score that is not a finite number (``score_invalid``) or lies
outside ``score_range`` (``score_out_of_range``, judged after ``score_decimals`` rounding, when
set: :func:`round_scores`); a predicted class other than 0/1
(``prediction_invalid``); a label that is not a number in [0, 1] (``label_invalid``; a
missing label is not bad: it has not arrived yet). Probability labels (Jigsaw's ``target``)
are binarised at >= 0.5.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

import metrics_core as mc
from monitor.tasks.base import InputArray, ModelView, Rows, Task, WindowRequest

__all__ = ["ROUNDABLE", "TASK", "round_scores"]

#: ``|score| * 10^k`` below this is rounded: ``y + 1/2`` is then exact, so rounding twice changes nothing.
ROUNDABLE = float(2**48)


def round_scores(score: np.ndarray, decimals: int) -> np.ndarray:
    """``floor(score * 10^decimals + 1/2) / 10^decimals``: half up, in IEEE doubles.

    The definition every engine computes alike (SQL's ``round`` differs between databases,
    numpy's rounds half to even): each step is one correctly rounded double operation, so SQLite,
    PostgreSQL, DuckDB and numpy give the same bits (:func:`monitor.sources.count_sql.rounded_score`
    is its SQL twin), and rounding a rounded score changes nothing. NaN, infinities and scores
    at or beyond ``2^48 / 10^decimals`` (where ``score * 10^k + 1/2`` is no longer exact) stay.

    >>> round_scores(np.array([0.125, 0.12499, -0.125, 0.5, np.nan]), 2).tolist()
    [0.13, 0.12, -0.12, 0.5, nan]
    """
    scale = float(10**decimals)
    x = score.astype(np.float64)
    with np.errstate(invalid="ignore"):
        rounded = np.floor(x * scale + 0.5) / scale
        out: np.ndarray = np.where(np.abs(x) < ROUNDABLE / scale, rounded, x)
    return out


def clean(rows: Rows, model: ModelView) -> None:
    cols = model.columns
    if cols.score:
        score = rows.numeric(cols.score)
        if model.score_decimals is not None:
            score = round_scores(score, model.score_decimals)
        rows.reject(~np.isfinite(score), "score_invalid")
        if model.score_range is not None:
            lo, hi = model.score_range
            with np.errstate(invalid="ignore"):
                rows.reject((score < lo) | (score > hi), "score_out_of_range")
        rows.inputs["y_score"] = score
        if model.thresholds:  # per-group decision thresholds: each row's decision, made here
            rows.inputs["y_decision"] = decisions(rows.frame, score, model.thresholds, model.threshold)
    if cols.prediction:
        pred = rows.numeric(cols.prediction)
        rows.reject(~np.isin(pred, (0.0, 1.0)), "prediction_invalid")
        rows.inputs["y_pred"] = pred
    if cols.label:
        label = rows.numeric(cols.label)
        unparseable = np.isnan(label) & rows.frame[cols.label].notna().to_numpy()
        with np.errstate(invalid="ignore"):
            rows.reject(unparseable | (label < 0) | (label > 1), "label_invalid")
            rows.inputs["y_true"] = np.where(np.isnan(label), np.nan, (label >= 0.5).astype(np.float64))


def decisions(
    frame: pd.DataFrame, score: np.ndarray, thresholds: Mapping[str, Mapping[str, float]], default: float
) -> np.ndarray:
    """``score >= t`` per row, ``t`` the threshold of the row's value in the thresholds' column (by
    its text: ``1`` and ``1.0`` name the value 1) or ``default``; 0/1 as floats, NaN where the score is.

    >>> frame = pd.DataFrame({"race": ["Black", "White", None]})
    >>> decisions(frame, np.array([0.46, 0.46, 0.6]), {"race": {"Black": 0.45}}, 0.5).tolist()
    [1.0, 0.0, 1.0]
    """
    ((column, by_value),) = thresholds.items()
    codes, uniques = pd.factorize(frame[column], use_na_sentinel=True)
    per_value = np.array([by_value.get(_text(u), default) for u in uniques] + [default], dtype=np.float64)
    with np.errstate(invalid="ignore"):
        decided = (score >= per_value[codes]).astype(np.float64)  # code -1 (missing): the last, default
    return np.where(np.isnan(score), np.nan, decided)


def _text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass(frozen=True)
class ScoreTableEvaluator:
    """One sort of the window into a score table, then every binary metric from its counts."""

    module: str = "metrics_core"

    def __call__(
        self, data: Mapping[str, InputArray], attributes: Sequence[mc.Attribute], request: WindowRequest
    ) -> mc.Report:
        model = request.model
        has_scores = model.columns.score is not None
        y_true = data.get("y_true", np.full(len(data.get("y_score", data.get("y_pred", ()))), np.nan))
        if "y_decision" in data:
            return self._per_group_thresholds(data, y_true, attributes, request)
        # without scores the 0/1 predictions are the scores, thresholded at 0.5
        y_score = data["y_score"] if has_scores else data["y_pred"]
        table = mc.table_for(y_score, y_true, attributes, sample_weight=data.get("sample_weight"))
        return self._evaluate(table, attributes, request, request.metrics, has_scores=has_scores)

    def _per_group_thresholds(
        self,
        data: Mapping[str, InputArray],
        y_true: InputArray,
        attributes: Sequence[mc.Attribute],
        request: WindowRequest,
    ) -> mc.Report:
        """Decisions made at each group's threshold: the decision metrics from the decisions (as a
        model that logs predictions), the ranking metrics from the scores; one report."""
        weight = data.get("sample_weight")
        # [] asks for none (the model values only: the overall AUC of a label window), None for all
        asked = (
            request.metrics
            if request.metrics is not None
            else [s.name for s in mc.REGISTRY.values() if s.family in TASK.families]
        )
        ranking = [name for name in asked if "y_score" in mc.REGISTRY[name].requires]
        deciding = [name for name in asked if "y_score" not in mc.REGISTRY[name].requires]
        scored = mc.table_for(data["y_score"], y_true, attributes, sample_weight=weight)
        ranked = self._evaluate(scored, attributes, request, ranking, has_scores=True)  # and the anchors
        if not deciding:
            return ranked
        decided = mc.table_for(data["y_decision"], y_true, attributes, sample_weight=weight)
        report = self._evaluate(decided, attributes, request, deciding, has_scores=False)
        return dataclasses.replace(
            ranked, values=report.values + ranked.values, model=report.model + ranked.model
        )

    @staticmethod
    def _evaluate(
        table: mc.ScoreTable,
        attributes: Sequence[mc.Attribute],
        request: WindowRequest,
        metrics: Sequence[str] | None,
        *,
        has_scores: bool,
    ) -> mc.Report:
        model = request.model
        return mc.evaluate(
            table,
            [c for a in attributes for c in a.comparisons],
            metrics=metrics,
            threshold=model.threshold if has_scores else 0.5,
            has_scores=has_scores,
            confidence=request.confidence,
            fair_ranges=request.fair_ranges,
            min_samples=request.min_samples,
            adjust=request.adjust,
            family_size=request.family_size,
            method=request.method,
            anchors=request.anchors,
            favorable=model.favorable,
        )


TASK = Task(
    name="binary",
    families=("classification", "ranking", "model"),
    evaluate=ScoreTableEvaluator(),
    required=(("score", "prediction"),),
    # ŷ comes from the score (thresholded) or from the logged prediction
    reads={"score": ("y_score", "y_pred"), "prediction": ("y_pred",), "label": ("y_true",)},
    clean=clean,
)
