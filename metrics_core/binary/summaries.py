"""Model-level values of a binary window: the overall AUC, the Jigsaw power means and final score,
and the inequality indices of individual benefit.

Each is a spec's ``statistic(window, values, attributes) -> list of ModelValue``: ``values``
holds the window's judged group values by metric (a power mean summarises its group AUCs),
``attributes`` the attributes they cover, in order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from metrics_core.binary.inequality import generalized_entropy_from_counts
from metrics_core.binary.ranking import power_mean
from metrics_core.binary.window import BinaryWindow
from metrics_core.core.results import MetricValue, ModelValue

__all__ = [
    "JIGSAW_KINDS",
    "ModelStatistic",
    "coefficient_of_variation",
    "generalized_entropy",
    "jigsaw_final_score",
    "overall_auc",
    "power_mean_of",
]

ModelStatistic = Callable[
    [BinaryWindow, Mapping[str, Sequence[MetricValue]], Sequence[str]], list[ModelValue]
]
#: The AUCs the Jigsaw competition averages with power means (seed 001).
JIGSAW_KINDS = ("subgroup", "bpsn", "bnsp")


def overall_auc(
    window: BinaryWindow, values: Mapping[str, Sequence[MetricValue]], attributes: Sequence[str]
) -> list[ModelValue]:
    return [window.overall_auc]


def _power_means(
    window: BinaryWindow, values: Mapping[str, Sequence[MetricValue]], kind: str, attributes: Sequence[str]
) -> dict[str, float]:
    """Power mean of the group AUCs of ``kind`` per attribute that has them."""
    out = {}
    for attr in attributes:
        aucs = np.array([v.value for v in values.get(f"{kind}_auc", ()) if v.attribute == attr])
        if aucs.size:
            out[attr] = power_mean(aucs, p=window.power)
    return out


def power_mean_of(kind: str) -> ModelStatistic:
    """Generalised mean (p = ``window.power``) of the groups' ``<kind>_auc`` per attribute."""

    def statistic(
        window: BinaryWindow, values: Mapping[str, Sequence[MetricValue]], attributes: Sequence[str]
    ) -> list[ModelValue]:
        means = _power_means(window, values, kind, attributes)
        return [
            ModelValue(
                f"power_mean_{kind}_auc",
                m,
                attr,
                reason=None if not math.isnan(m) else "a group AUC is undefined",
            )
            for attr, m in means.items()
        ]

    return statistic


def jigsaw_final_score(
    window: BinaryWindow, values: Mapping[str, Sequence[MetricValue]], attributes: Sequence[str]
) -> list[ModelValue]:
    """``0.25 overall AUC + 0.25 x`` the three power means, per attribute."""
    means = {kind: _power_means(window, values, kind, attributes) for kind in JIGSAW_KINDS}
    out = []
    for attr in attributes:
        parts = [means[kind].get(attr, math.nan) for kind in JIGSAW_KINDS]
        score = 0.25 * window.overall_auc.value + 0.25 * sum(parts)
        reason = None if not math.isnan(score) else "a power mean is undefined"
        out.append(ModelValue("jigsaw_final_score", score, attr, reason=reason))
    return out


def _no_benefit(window: BinaryWindow) -> str:
    if window.benefit_counts.sum() == 0:
        return "no labeled rows"
    return "mean benefit is 0: every labeled row is a false negative"


def generalized_entropy(name: str, alpha: float) -> ModelStatistic:
    """GE(alpha) of the benefits ``b = ŷ - y + 1`` of the labeled rows (alpha = 1: the Theil index)."""

    def statistic(
        window: BinaryWindow, values: Mapping[str, Sequence[MetricValue]], attributes: Sequence[str]
    ) -> list[ModelValue]:
        value = generalized_entropy_from_counts(window.benefit_counts, alpha=alpha)
        return [ModelValue(name, value, reason=None if not math.isnan(value) else _no_benefit(window))]

    return statistic


def coefficient_of_variation(
    window: BinaryWindow, values: Mapping[str, Sequence[MetricValue]], attributes: Sequence[str]
) -> list[ModelValue]:
    """``sqrt(2 GE(2))`` (AIF360)."""
    ge2 = generalized_entropy_from_counts(window.benefit_counts, alpha=2.0)
    defined = not math.isnan(ge2)
    return [
        ModelValue(
            "coefficient_of_variation",
            math.sqrt(2 * ge2) if defined else math.nan,
            reason=None if defined else _no_benefit(window),
        )
    ]
