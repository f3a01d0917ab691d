"""The values an evaluation produces: plain frozen dataclasses, shared by every task family."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BACKGROUND", "Comparison", "MetricValue", "ModelValue", "Report"]

#: The reference of an indicator group: the window's rows outside the group.
BACKGROUND = "background"


@dataclass(frozen=True)
class Comparison:
    """A monitored group against its reference.

    ``key`` (and ``reference_key`` for a named reference group) are the group names in
    the :class:`ScoreTable`. With ``reference_key=None`` the reference is the rest of the
    attribute's ``universe``: the whole window (``universe=None``, indicator attributes)
    or the union of the named disjoint groups (a categorical attribute vs ``rest``).
    """

    attribute: str
    group: str
    key: str
    reference: str = BACKGROUND
    reference_key: str | None = None
    universe: tuple[str, ...] | None = None


@dataclass(frozen=True)
class MetricValue:
    """One judged value: a metric of one group against its reference in one window."""

    attribute: str
    group: str
    reference: str
    metric: str
    value: float
    ci_lower: float
    ci_upper: float
    fair_min: float
    fair_max: float
    state: str
    n_group: float
    n_reference: float
    support: float
    reason: str | None = None


@dataclass(frozen=True)
class ModelValue:
    """A model-level value (overall AUC, power means, inequality indices)."""

    metric: str
    value: float
    attribute: str = ""
    ci_lower: float = math.nan
    ci_upper: float = math.nan
    reason: str | None = None


@dataclass(frozen=True)
class Report:
    values: tuple[MetricValue, ...]
    model: tuple[ModelValue, ...] = field(default_factory=tuple)
    label_coverage: Mapping[str, float] = field(default_factory=dict)

    def get(self, metric: str, group: str, attribute: str | None = None) -> MetricValue:
        for v in self.values:
            if v.metric == metric and v.group == group and (attribute is None or v.attribute == attribute):
                return v
        raise KeyError(f"no value for metric {metric!r}, group {group!r}")

    def model_value(self, metric: str, attribute: str = "") -> ModelValue:
        for v in self.model:
            if v.metric == metric and v.attribute == attribute:
                return v
        raise KeyError(f"no model-level value {metric!r} for attribute {attribute!r}")

    def to_pandas(self) -> pd.DataFrame:
        """One row per judged value, the :class:`MetricValue` fields as columns (NaN where a value
        is undefined, ``reason`` saying why)."""
        import pandas as pd

        columns = list(MetricValue.__dataclass_fields__)
        return pd.DataFrame([asdict(v) for v in self.values], columns=columns)

    def _repr_html_(self) -> str:
        """A notebook shows the values as a table, one row per group and metric."""
        frame = self.to_pandas()[
            [
                "attribute",
                "group",
                "metric",
                "value",
                "ci_lower",
                "ci_upper",
                "fair_min",
                "fair_max",
                "state",
                "reason",
            ]
        ]
        return str(frame.to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="NaN"))
