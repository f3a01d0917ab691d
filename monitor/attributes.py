"""The identity attributes of a window, from the model's ``groups:`` and the window's group columns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

import metrics_core as mc
from monitor.config import GroupConfig

__all__ = ["attributes"]


def attributes(groups: Sequence[GroupConfig], frame: pd.DataFrame, *, max_groups: int) -> list[mc.Attribute]:
    """One attribute per configured group, each capped at its ``max_groups`` largest groups."""
    out = []
    for g in groups:
        if g.kind == "indicator":
            cols = {
                c: pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
                for c in g.columns
            }
            attr = mc.indicator_attribute(g.attribute, cols, threshold=g.threshold, min_size=g.min_size)
        elif g.kind == "categorical":
            values = _group_values(frame[g.column])
            ref = g.reference if isinstance(g.reference, str) else "&".join(g.reference)
            attr = mc.categorical_attribute(g.attribute, values, reference=ref, min_size=g.min_size)
        else:
            cells = {c: _group_values(frame[c]) for c in g.columns}
            attr = _renamed(
                mc.intersection_attribute(cells, reference=g.reference, min_size=g.min_size), g.attribute
            )
        out.append(_capped(attr, max_groups))
    return out


def _group_values(values: pd.Series) -> np.ndarray:
    """Categorical values with missing ones as None; a non-scalar cell (a JSON list) counts as missing."""

    def scalar(v: object) -> object:
        if v is None or isinstance(v, list | tuple | dict | set | np.ndarray):
            return None
        return None if isinstance(v, float) and v != v else v

    return np.array([scalar(v) for v in values.astype(object)], dtype=object)


def _renamed(attr: mc.Attribute, name: str) -> mc.Attribute:
    comparisons = tuple(replace(c, attribute=name) for c in attr.comparisons)
    return replace(attr, name=name, comparisons=comparisons)


def _capped(attr: mc.Attribute, max_groups: int) -> mc.Attribute:
    """Keep the ``max_groups`` largest groups: label values stay bounded; the rest are counted."""
    if len(attr.comparisons) <= max_groups:
        return attr
    sizes = [(int(np.asarray(attr.masks[c.key]).sum()), i) for i, c in enumerate(attr.comparisons)]
    keep = sorted(i for _, i in sorted(sizes, reverse=True)[:max_groups])
    kept = tuple(attr.comparisons[i] for i in keep)
    dropped = attr.dropped + tuple(c.group for i, c in enumerate(attr.comparisons) if i not in set(keep))
    return replace(attr, comparisons=kept, dropped=dropped)
