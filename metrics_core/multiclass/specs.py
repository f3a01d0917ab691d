"""The multiclass metrics: each distance per group against its reference, and its all-pairs mean and max.

Names are derived once from the kernels' names: ``multiclass_<distance>`` per group,
``multiclass_<distance>_mean`` / ``_max`` over all pairs of an attribute's groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from metrics_core.core.spec import FairRange, MetricSpec
from metrics_core.core.types import Data, FloatArray
from metrics_core.core.undefined import Undefined
from metrics_core.engine.groupwise import Resampling
from metrics_core.multiclass import kernels as mk
from metrics_core.stats.bootstrap import poisson_bootstrap_interval
from metrics_core.stats.intervals import basic_interval
from metrics_core.window.pairs import GroupPair, distinct_groups

__all__ = ["SPECS", "WEIGHT", "MulticlassWindow"]

#: The data key of the rows each entry stands for (counted data).
WEIGHT = "_weight"

_FAIR = FairRange(0.0, 0.1)
_SOURCE = "holisticai documentation (fair area [0, 0.1])"
_SP_REQ = frozenset({"y_pred"})
_LABEL_REQ = frozenset({"y_pred", "y_true"})
_FACTS: dict[str, tuple[str, str]] = {  # distance -> (meaning, formula)
    "statistical_parity": (
        "0: the group's predicted classes are distributed like its reference's; 1: no overlap (unsigned)",
        "1/2 * sum_c abs(P(ŷ=c | G) - P(ŷ=c | R))",
    ),
    "equality_of_opportunity": (
        "0: given the true class, the group's predictions are distributed like its reference's (unsigned)",
        "mean over true classes j of 1/2 * sum_i abs(P(ŷ=i | y=j, G) - P(ŷ=i | y=j, R))",
    ),
    "average_odds": (
        "0: averaged over true classes, the group is predicted into each class like its reference (unsigned)",
        "1/2 * sum_i abs(mean over true classes j of (P(ŷ=i | y=j, G) - P(ŷ=i | y=j, R)))",
    ),
    "true_positive_difference": (
        "0: every class is recognised in the group as often as in its reference (unsigned)",
        "mean over true classes j of abs(P(ŷ=j | y=j, G) - P(ŷ=j | y=j, R))",
    ),
}


@dataclass(frozen=True)
class MulticlassWindow:
    """The classes of one window (codes ``0..C-1`` of ``y_pred`` / ``y_true``; -1 is unlabeled)."""

    classes: tuple[Any, ...]

    def cells(self, d: Data) -> FloatArray:
        weight = d.get(WEIGHT)
        return mk.cells(
            d["y_pred"], d["y_true"], len(self.classes), None if weight is None else np.asarray(weight)
        )


def _group(distance: str) -> MetricSpec:
    kernel = mk.KERNELS[distance]
    meaning, formula = _FACTS[distance]

    def statistic(w: MulticlassWindow, g: Data, r: Data) -> float:
        cg, cr = w.cells(g), w.cells(r)
        why = mk.reason(distance, cg, cr, w.classes)
        if why is not None:
            raise Undefined(why)
        return float(kernel(cg, cr))

    def ci(
        w: MulticlassWindow, g: Data, r: Data, level: float, resampling: Resampling
    ) -> tuple[float, float]:
        # Poisson bootstrap of the count cells (they are sufficient: a resample costs O(C^2),
        # not O(rows)); basic interval, as the distances are biased upward in small groups
        both = np.stack([w.cells(g), w.cells(r)])
        value = float(kernel(both[0], both[1]))
        lo, hi = poisson_bootstrap_interval(
            lambda x: kernel(x[..., 0, :, :], x[..., 1, :, :]),
            both,
            level=level,
            n_resamples=resampling.count(level),
            seed=resampling.seed,
        )
        return basic_interval(value, float(lo), float(hi))

    def count_support(w: MulticlassWindow, g: Data, r: Data) -> float:
        return mk.support(distance, w.cells(g), w.cells(r))

    parity = distance == "statistical_parity"
    return MetricSpec(
        name=f"multiclass_{distance}",
        family="multiclass",
        requires=_SP_REQ if parity else _LABEL_REQ,
        ideal=0.0,
        fair_range=_FAIR,
        source=_SOURCE,
        meaning=meaning,
        formula=formula,
        interval="bootstrap",
        support=("group rows", "reference rows") if parity else ("labeled rows per true class",),
        statistic=statistic,
        ci=ci,
        count_support=count_support,
    )


def _all_pairs(group: MetricSpec, distance: str, aggregation: str) -> MetricSpec:
    def statistic(w: MulticlassWindow, data: Data, pairs: Sequence[GroupPair]) -> float:
        counts, names = [], []
        for name, rows in distinct_groups(pairs):
            cells = w.cells({k: np.asarray(v)[rows] for k, v in data.items()})
            if cells.sum() > 0:  # entries that stand for no row (a weight of 0) make no group
                counts.append(cells)
                names.append(name)
        return mk.all_pairs(distance, counts, names, w.classes, aggregation)

    pair_formula = group.formula.replace("G", "a").replace("R", "b")
    return MetricSpec(
        name=f"{group.name}_{aggregation}",
        family="multiclass",
        level="model",
        requires=group.requires,
        ideal=0.0,
        fair_range=_FAIR,
        source=_SOURCE,
        meaning=f"{aggregation} over all pairs of the attribute's groups of {group.name}; 0: every pair alike",
        formula=f"{aggregation} over pairs of groups (a, b) of d(a, b), d = {pair_formula}",
        interval="none",
        statistic=statistic,
    )


def _specs() -> list[MetricSpec]:
    out = []
    for distance in mk.KERNELS:
        group = _group(distance)
        out += [group, _all_pairs(group, distance, "mean"), _all_pairs(group, distance, "max")]
    return out


#: Registry entries of the family (4 group-level, 8 model-level).
SPECS: list[MetricSpec] = _specs()
