"""Plumbing shared by the group-vs-reference family modules: metric selection, options, coverage."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core._spec import MetricSpec
from metrics_core.groups import REST, Attribute, membership
from metrics_core.groupwise import GroupPair

__all__ = ["check_rows", "distinct_groups", "label_coverage", "select_specs", "side_masks"]


def select_specs(
    specs: Sequence[MetricSpec], metrics: Sequence[str] | None, available: Collection[str], family: str
) -> list[MetricSpec]:
    """The requested specs (default: every one whose inputs are in ``available``)."""
    if isinstance(metrics, str):
        raise TypeError(f"metrics must be a sequence of names, got the string {metrics!r}")
    by_name = {s.name: s for s in specs}
    if metrics is None:
        return [s for s in specs if s.requires <= set(available)]
    chosen: list[MetricSpec] = []
    for name in metrics:
        spec = by_name.get(name)
        if spec is None:
            raise ValueError(
                f"unknown {family} metric {name!r}; known {family} metrics: {', '.join(by_name)}"
            )
        missing = sorted(spec.requires - set(available))
        if missing:
            raise ValueError(f"metric {name!r} needs the data key(s) {missing}, absent from data")
        if spec not in chosen:
            chosen.append(spec)
    return chosen


def check_rows(arrays: Mapping[str, NDArray[np.generic]], attributes: Sequence[Attribute]) -> int:
    """The common row count of the data columns and the attributes' masks."""
    lengths = {k: v.shape[0] for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"data columns differ in length: {lengths}")
    n = next(iter(lengths.values()), 0)
    for attr in attributes:
        for key in attr.masks:
            size = np.asarray(attr.masks[key]).shape[0]
            if size != n:
                raise ValueError(f"attribute {attr.name!r} has masks of {size} rows, data has {n}")
            break
    return n


def label_coverage(attributes: Sequence[Attribute], labeled: NDArray[np.bool_]) -> dict[str, float]:
    """Share of each compared group's rows that carry a label, by comparison key."""
    out: dict[str, float] = {}
    for attr in attributes:
        for c in attr.comparisons:
            mask = np.asarray(attr.masks[c.key], dtype=bool)
            n = int(mask.sum())
            out[c.key] = float(labeled[mask].sum() / n) if n else math.nan
    return out


def distinct_groups(pairs: Sequence[GroupPair]) -> list[tuple[str, NDArray[np.bool_]]]:
    """The non-empty groups of one attribute: every compared group and a named reference group.

    ``rest`` and the indicator ``background`` are complements, not groups, and are left out.
    """
    seen: dict[str, NDArray[np.bool_]] = {}
    for p in pairs:
        seen.setdefault(p.group, p.group_rows)
        if p.reference not in (REST, "background"):
            seen.setdefault(p.reference, p.reference_rows)
    return [(name, rows) for name, rows in seen.items() if rows.any()]


def side_masks(
    group: ArrayLike, reference: ArrayLike | None, n: int
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Boolean masks of a group and its reference (default: the rows outside the group)."""
    g = membership(group)
    if g.shape != (n,):
        raise ValueError(f"group has shape {g.shape}, expected ({n},)")
    r = ~g if reference is None else membership(reference)
    if r.shape != (n,):
        raise ValueError(f"reference has shape {r.shape}, expected ({n},)")
    return g, r
