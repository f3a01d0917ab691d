"""Comparisons as row masks: each group of a window and its reference, for the row-set families.

The binary family compares groups through a score table (:mod:`metrics_core.window.tables`);
the other families take the rows of the group and the rows of its reference. This module
turns an :class:`~metrics_core.window.groups.Attribute`'s comparisons into those row masks
and checks that data and masks describe the same rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.core.types import BoolArray, Data, IntArray
from metrics_core.window.groups import BACKGROUND, REST, Attribute, membership

__all__ = [
    "GroupPair",
    "as_mask",
    "check_attribute_rows",
    "codes_of",
    "distinct_groups",
    "label_coverage",
    "pairs_of",
    "row_count",
    "side_masks",
]


@dataclass(frozen=True)
class GroupPair:
    """A group and its reference as row masks of one window."""

    attribute: str
    group: str
    reference: str
    group_rows: BoolArray
    reference_rows: BoolArray


def pairs_of(attributes: Sequence[Attribute], n: int) -> list[GroupPair]:
    """Row masks of every comparison of ``attributes`` (reference: named group or rest of the universe)."""
    out = []
    for attr in attributes:
        for c in attr.comparisons:
            g = np.asarray(attr.masks[c.key], dtype=bool)
            if c.reference_key is not None:
                r = np.asarray(attr.masks[c.reference_key], dtype=bool)
            else:
                universe = np.ones(n, dtype=bool)
                for key in c.universe or ():
                    universe = np.asarray(attr.masks[key], dtype=bool)
                r = universe & ~g
            out.append(GroupPair(c.attribute, c.group, c.reference, g, r))
    return out


def distinct_groups(pairs: Sequence[GroupPair]) -> list[tuple[str, BoolArray]]:
    """The non-empty groups of one attribute: every compared group and a named reference group.

    ``rest`` and the indicator ``background`` are complements, not groups, and are left out.
    """
    seen: dict[str, BoolArray] = {}
    for p in pairs:
        seen.setdefault(p.group, p.group_rows)
        if p.reference not in (REST, BACKGROUND):
            seen.setdefault(p.reference, p.reference_rows)
    return [(name, rows) for name, rows in seen.items() if rows.any()]


def label_coverage(
    attributes: Sequence[Attribute], labeled: BoolArray, weight: NDArray[np.float64] | None = None
) -> dict[str, float]:
    """Share of each compared group's rows that carry a label, by comparison key (``weight``: rows per entry)."""
    w = np.ones(labeled.shape[0]) if weight is None else weight
    out: dict[str, float] = {}
    for attr in attributes:
        for c in attr.comparisons:
            mask = np.asarray(attr.masks[c.key], dtype=bool)
            n = float(w[mask].sum())
            out[c.key] = float(w[mask & labeled].sum() / n) if n else math.nan
    return out


def row_count(data: Data) -> int:
    """The common length of the columns of ``data`` (0 for no column); refuses ragged columns."""
    lengths = {k: np.asarray(v).shape[0] for k, v in data.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"data columns differ in length: {lengths}")
    return next(iter(lengths.values()), 0)


def check_attribute_rows(attributes: Sequence[Attribute], n: int) -> None:
    """Refuse attributes whose masks do not have one entry per row of the window."""
    for attr in attributes:
        for key in list(attr.masks)[:1]:  # masks of one attribute share a length; lazy masks built once
            shape = np.asarray(attr.masks[key]).shape
            if shape != (n,):
                raise ValueError(f"attribute {attr.name!r} has masks of shape {shape}, expected ({n},)")


def side_masks(group: ArrayLike, reference: ArrayLike | None, n: int) -> tuple[BoolArray, BoolArray]:
    """Boolean masks of a group and its reference (default: the rows outside the group)."""
    g = membership(group)
    if g.shape != (n,):
        raise ValueError(f"group has shape {g.shape}, expected ({n},)")
    r = ~g if reference is None else membership(reference)
    if r.shape != (n,):
        raise ValueError(f"reference has shape {r.shape}, expected ({n},)")
    return g, r


def as_mask(values: ArrayLike, name: str, n: int) -> BoolArray:
    """``values`` as a membership mask of ``n`` rows (``>= 0.5`` is a member), naming ``name`` if misshapen."""
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ValueError(f"{name} has shape {arr.shape}, expected ({n},)")
    return membership(arr)


def codes_of(values: ArrayLike, name: str) -> tuple[IntArray, int]:
    """Integer codes ``0..m-1`` of the distinct values of a 1-d column, and ``m``."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(f"{name} has {int(np.isnan(arr).sum())} missing values (NaN); drop those rows first")
    if arr.dtype == object and any(v is None for v in arr):
        raise ValueError(f"{name} has missing values (None); drop those rows first")
    if arr.dtype == object and all(isinstance(v, str) for v in arr):
        arr = arr.astype(str)  # fixed-width text sorts in C, ~4x faster than comparing objects; same order
    uniq, inverse = np.unique(arr, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), int(uniq.size)
