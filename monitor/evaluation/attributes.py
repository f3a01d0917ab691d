"""The identity attributes of a window, from the model's ``groups:`` and the window's group columns."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

import metrics_core as mc
from monitor.config import GroupConfig
from monitor.reading.frame import WEIGHT_SQUARES
from monitor.sources.contract import WEIGHT

__all__ = ["AbsentReference", "attributes", "group_codes"]


def attributes(
    groups: Sequence[GroupConfig],
    frame: pd.DataFrame,
    *,
    max_groups: int,
    weight: np.ndarray | None = None,
    flagged: Collection[str] = (),
    absent: Callable[[AbsentReference], None] | None = None,
) -> list[mc.Attribute]:
    """One attribute per configured group, each capped at its ``max_groups`` largest groups (chosen
    by size before any group is counted; the rest are listed as dropped).

    ``weight``: the row count of each entry of a counted frame. ``flagged``: indicator attributes
    whose columns the database already thresholded into 1/0 flags. ``absent``: told of each named
    reference that is no value of its column in ``frame`` while other values are (a typo in the
    config, or a group that stopped appearing): every comparison with it is undefined.
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
            codes, categories = group_codes(frame[g.column])
            ref = g.reference if isinstance(g.reference, str) else "&".join(g.reference)
            if absent is not None and ref != mc.REST:
                _check_reference(g, g.column or "", ref, categories, absent)
            attr = mc.categorical_attribute(
                g.attribute,
                codes,
                reference=ref,
                min_size=g.min_size,
                max_groups=max_groups,
                weight=weight,
                categories=categories,
            )
        else:
            coded = {c: group_codes(frame[c]) for c in g.columns}
            if absent is not None and not isinstance(g.reference, str):
                for column, value in zip(g.columns, g.reference, strict=False):
                    _check_reference(g, column, value, coded[column][1], absent)
            attr = _renamed(
                mc.intersection_attribute(
                    {c: codes for c, (codes, _) in coded.items()},
                    reference=g.reference,
                    min_size=g.min_size,
                    max_groups=max_groups,
                    weight=weight,
                    categories={c: categories for c, (_, categories) in coded.items()},
                ),
                g.attribute,
            )
        out.append(attr)
    return out


#: Column kinds (``pandas.api.types.infer_dtype``) whose values hash alike exactly when they name the
#: same group. Elsewhere equal hashes can name different groups - True and 1, Decimal 1.0 and 1.00 -
#: and each value is named first, one by one (a mixed column is rare; a column of text is not).
_NAMED_BY_HASH = frozenset(
    {"string", "empty", "boolean", "integer", "floating", "mixed-integer-float", "categorical"}
)


def group_codes(values: pd.Series) -> tuple[np.ndarray, list[object]]:
    """A group column factorised by hashing, not value by value in Python: integer codes (-1:
    missing) and the distinct values they stand for, which ``metrics_core`` names once each.
    Missing are None, NaN and NA, blank text, and a composite cell (a JSON list), which names no group."""
    if pd.api.types.infer_dtype(values, skipna=True) not in _NAMED_BY_HASH:
        values = values.map(_group_name, na_action="ignore")
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return codes.astype(np.int64, copy=False), list(np.asarray(uniques, dtype=object))


@dataclass(frozen=True)
class AbsentReference:
    """A named reference that is no value of its column in a window that has other values."""

    attribute: str
    column: str
    reference: str
    seen: tuple[str, ...]  # the column's values in the window, by name


def _check_reference(
    group: GroupConfig,
    column: str,
    reference: str,
    categories: Sequence[object],
    absent: Callable[[AbsentReference], None],
) -> None:
    names = {name for value in categories if (name := _group_name(value)) is not None}
    if names and mc.category_name(reference) not in names:
        absent(AbsentReference(group.attribute, column, reference, tuple(sorted(names))))


def _group_name(value: object) -> str | None:
    if isinstance(value, list | tuple | dict | set | np.ndarray):
        return None
    return mc.category_name(value)


def _renamed(attr: mc.Attribute, name: str) -> mc.Attribute:
    comparisons = tuple(replace(c, attribute=name) for c in attr.comparisons)
    return replace(attr, name=name, comparisons=comparisons)


def comparison_sample(
    frame: pd.DataFrame, attr: mc.Attribute, comparison: mc.Comparison
) -> tuple[pd.DataFrame, mc.Attribute]:
    """A sampling-weighted window for one comparison: the group's weights and the reference's each
    scaled to their own Kish effective sample size (``sum w / sum w^2``: they then add up to
    ``(sum w)^2 / sum w^2``), every other row's by the window's; the attribute narrowed to that
    comparison.

    A side's weighted rates, AUCs and ratios are unchanged by a factor common to its rows; its
    intervals and ``min_samples`` read the weights as counts, and so see the side's effective sample
    (a denominator within it, such as the side's positives, shares the side's design effect).
    Statistics of the whole window - the standard deviation of every score that scales the
    standardized mean difference - weigh the sides by their effective samples: exact where the
    design effect is the same throughout the window."""
    group = np.asarray(attr.masks[comparison.key], dtype=bool)
    if comparison.reference_key is not None:
        reference = np.asarray(attr.masks[comparison.reference_key], dtype=bool)
    elif comparison.universe is None:  # the background: every other row of the window
        reference = ~group
    else:  # the rest: the attribute's other named groups
        reference = np.zeros(len(frame), dtype=bool)
        for key in comparison.universe:
            reference |= np.asarray(attr.masks[key], dtype=bool)
        reference &= ~group
    weight = frame[WEIGHT].to_numpy(dtype=np.float64)
    squares = frame[WEIGHT_SQUARES].to_numpy(dtype=np.float64)
    scale = np.where(
        group,
        _kish_scale(weight[group], squares[group]),
        np.where(reference, _kish_scale(weight[reference], squares[reference]), _kish_scale(weight, squares)),
    )
    part = frame.assign(**{WEIGHT: weight * scale})
    keys = [comparison.key, *([comparison.reference_key] if comparison.reference_key else [])]
    masks = {
        key: np.asarray(attr.masks[key], dtype=bool)
        for key in dict.fromkeys([*keys, *(comparison.universe or ())])
    }
    return part, mc.Attribute(attr.name, attr.kind, masks, (comparison,))


def _kish_scale(weight: np.ndarray, squares: np.ndarray) -> float:
    total = float(squares.sum())
    return float(weight.sum()) / total if total > 0 else 1.0
