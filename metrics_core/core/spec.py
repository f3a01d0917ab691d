"""What a metric is: the facts people read, and the callables that compute it.

A :class:`MetricSpec` is the one place a metric is described. Its name is written once;
the registry, the config, the JSON output, the Prometheus family names, the alerting rules
and the docs all read it from here. The callables carry the computation, so no evaluator
dispatches on the metric's name:

- ``statistic`` - the value;
- ``ci`` - its confidence interval (``None``: the family's default, a bootstrap);
- ``count_support`` - the smallest denominator the value depends on, gated by ``min_samples``.

Their signatures belong to the family's evaluator (``metrics_core.binary`` computes every
comparison of a window at once from a score table; the other families compute one
group/reference pair at a time, see :mod:`metrics_core.engine.groupwise`). The spec only
holds them; specs compare and hash by their facts, never by their callables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "SCORE_TABLE_FAMILIES",
    "FairRange",
    "Family",
    "Input",
    "IntervalMethod",
    "Level",
    "MetricSpec",
]

Family = Literal[
    "classification", "ranking", "model", "multiclass", "regression", "recommender", "clustering", "text"
]
Level = Literal["group", "model"]
#: Inputs a metric needs: "y_pred", "y_true", "y_score" for binary models; the other task
#: families name theirs ("y_class", "user", "item", "rank", "cluster", "features", "text", ...).
Input = str
IntervalMethod = Literal[
    "wilson",
    "scas",
    "components",
    "auc_score",
    "normal",
    "fieller",
    "zou",
    "bootstrap",
    "witness",
    "transformed",
    "permutation",
    "none",
]
#: Families evaluated from a binary model's score table (:func:`metrics_core.evaluate`).
SCORE_TABLE_FAMILIES: tuple[Family, ...] = ("classification", "ranking", "model")


@dataclass(frozen=True)
class FairRange:
    """A closed fair range; ``None`` is an open end.

    With ``relative_to`` set, the bounds are offsets from that model-level value of the
    same window (the AUC family: at least the overall AUC minus 0.05).

    >>> FairRange(-0.05, None, relative_to="overall_auc").resolve({"overall_auc": 0.9})
    (0.85, inf)
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


def _no_statistic(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("this metric spec carries no statistic")


@dataclass(frozen=True, kw_only=True)
class MetricSpec:
    """Everything fairwatch knows about one metric.

    Facts: ``name`` (also the Prometheus family ``fairwatch_<name>``), ``family``, ``level``
    (per group, or one value per window), ``requires`` (data inputs), ``ideal``,
    ``fair_range`` (``None``: informational, never alerts) and its ``source``, ``meaning``,
    ``formula``, ``interval`` (the method, as documented), ``support`` (the denominators
    gated by ``min_samples``, as documented), ``aliases``, ``needs`` (group metrics a
    model-level summary is computed from) and ``contrast``: for a difference or a ratio of the
    rate ``support[0]`` between G and R, or an AUC of the two row sets of ``support``, what power
    planning (:mod:`metrics_core.stats.power`) reads.
    """

    name: str
    family: Family
    level: Level = "group"
    requires: frozenset[Input]
    ideal: float | None
    fair_range: FairRange | None
    source: str
    meaning: str
    formula: str
    interval: IntervalMethod
    support: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    contrast: Literal["difference", "ratio", "auc"] | None = None
    statistic: Callable[..., Any] = field(default=_no_statistic, compare=False, repr=False)
    ci: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    count_support: Callable[..., Any] | None = field(default=None, compare=False, repr=False)

    @property
    def informational(self) -> bool:
        """A metric without a fair range: exported, never judged against a range, never alerts."""
        return self.fair_range is None

    @property
    def computation(self) -> str:
        """Which evaluator computes it: ``"score_table"`` (binary models) or ``"groupwise"`` (row sets)."""
        return "score_table" if self.family in SCORE_TABLE_FAMILIES else "groupwise"
