"""The shape of a registry entry (kept apart from the registry so family modules can declare theirs)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["FairRange", "Family", "Input", "IntervalMethod", "MetricSpec", "groupwise_spec"]

Family = Literal[
    "classification", "ranking", "model", "multiclass", "regression", "recommender", "clustering", "text"
]
#: Inputs a metric needs: "y_pred", "y_true", "y_score" for binary models; the other task
#: families name theirs ("y_class", "y_target", "user", "item", "rank", "cluster", "features",
#: "text", "embeddings", ...).
Input = str
IntervalMethod = Literal[
    "wilson", "newcombe", "katz_log", "normal", "delong", "bootstrap", "transformed", "permutation", "none"
]


@dataclass(frozen=True)
class FairRange:
    """A closed fair range; ``None`` is an open end.

    With ``relative_to`` set, the bounds are offsets from that model-level value of the
    same window (the AUC family: at least the overall AUC minus 0.05).
    """

    min: float | None
    max: float | None
    relative_to: str | None = None

    def __post_init__(self) -> None:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"fair range min {self.min} is above max {self.max}")

    def resolve(self, model_values: Mapping[str, float] | None = None) -> tuple[float, float]:
        """Absolute ``(min, max)``, with -inf/inf for open ends and NaN if the anchor is NaN."""
        lo = -math.inf if self.min is None else self.min
        hi = math.inf if self.max is None else self.max
        if self.relative_to is None:
            return lo, hi
        anchor = (model_values or {}).get(self.relative_to, math.nan)
        return lo + anchor, hi + anchor

    def describe(self) -> str:
        lo = "-inf" if self.min is None else f"{self.min:g}"
        hi = "+inf" if self.max is None else f"{self.max:g}"
        if self.relative_to is None:
            return f"[{lo}, {hi}]"
        parts = []
        if self.min is not None:
            parts.append(f">= {self.relative_to} {'-' if self.min < 0 else '+'} {abs(self.min):g}")
        if self.max is not None:
            parts.append(f"<= {self.relative_to} {'-' if self.max < 0 else '+'} {abs(self.max):g}")
        return " and ".join(parts)


@dataclass(frozen=True)
class MetricSpec:
    """Everything fairwatch knows about one metric.

    ``computation`` and ``rate`` / ``sets`` say how the evaluator computes it; the rest is
    for people (docs, alerts, dashboards).
    """

    name: str
    family: Family
    level: Literal["group", "model"]
    requires: frozenset[Input]
    ideal: float | None
    fair_range: FairRange | None  # None: informational, never alerts
    source: str
    interval: IntervalMethod
    meaning: str
    formula: str
    computation: str
    rate: str | None = None
    sets: tuple[str, str] | None = None  # AUC of X over Y: "group+", "group-", "reference+", ...
    offset: float = 0.0
    aliases: tuple[str, ...] = field(default_factory=tuple)
    support: tuple[str, ...] = field(default_factory=tuple)  # denominators gated by min_samples

    @property
    def informational(self) -> bool:
        return self.fair_range is None


def groupwise_spec(
    family: Family,
    name: str,
    level: str,
    requires: frozenset[str],
    ideal: float | None,
    fair_range: FairRange | None,
    source: str,
    meaning: str,
    formula: str,
) -> MetricSpec:
    """A task-family metric: bootstrap interval per group, none at model level."""
    return MetricSpec(
        name,
        family,
        "group" if level == "group" else "model",
        requires,
        ideal,
        fair_range,
        source,
        "bootstrap" if level == "group" else "none",
        meaning,
        formula,
        "groupwise",
    )
