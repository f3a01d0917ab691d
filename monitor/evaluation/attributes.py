"""The identity attributes of a window, from the model's ``groups:`` and the window's group columns."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

import metrics_core as mc
from monitor.config import GroupConfig

__all__ = ["attributes"]


def attributes(
    groups: Sequence[GroupConfig],
    frame: pd.DataFrame,
    *,
    max_groups: int,
    weight: np.ndarray | None = None,
    flagged: Collection[str] = (),
) -> list[mc.Attribute]:
    """One attribute per configured group, each capped at its ``max_groups`` largest groups (chosen
    by size before any group is counted; the rest are listed as dropped).

    ``weight``: the row count of each entry of a counted frame. ``flagged``: indicator attributes
    whose columns the database already thresholded into 1/0 flags.
    """
    out = []
    for g in groups:
        if g.kind == "indicator":
            cols = {
                c: pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
                for c in g.columns
            }
            attr = mc.indicator_attribute(
                g.attribute,
                cols,
                threshold=0.5 if g.attribute in flagged else g.threshold,
                min_size=g.min_size,
                max_groups=max_groups,
                weight=weight,
            )
        elif g.kind == "categorical":
            values = _group_values(frame[g.column])
            ref = g.reference if isinstance(g.reference, str) else "&".join(g.reference)
            attr = mc.categorical_attribute(
                g.attribute, values, reference=ref, min_size=g.min_size, max_groups=max_groups, weight=weight
            )
        else:
            cells = {c: _group_values(frame[c]) for c in g.columns}
            attr = _renamed(
                mc.intersection_attribute(
                    cells, reference=g.reference, min_size=g.min_size, max_groups=max_groups, weight=weight
                ),
                g.attribute,
            )
        out.append(attr)
    return out


def _group_values(values: pd.Series) -> np.ndarray:
    """Categorical values with missing ones as None; a non-scalar cell (a JSON list) counts as missing
    (blank text is missing too: metrics_core treats ``""`` and ``"  "`` alike)."""

    def scalar(v: object) -> object:
        if v is None or isinstance(v, list | tuple | dict | set | np.ndarray):
            return None
        return None if isinstance(v, float) and v != v else v

    return np.array([scalar(v) for v in values.astype(object)], dtype=object)


def _renamed(attr: mc.Attribute, name: str) -> mc.Attribute:
    comparisons = tuple(replace(c, attribute=name) for c in attr.comparisons)
    return replace(attr, name=name, comparisons=comparisons)
