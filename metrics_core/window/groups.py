"""Groups of an identity attribute and the comparisons they make.

Three kinds (``metrics.md`` section 1):

- *indicator*: one column per group (Jigsaw's ``male``, ``muslim``, ...); a row is a
  member when the value is true or, for probabilities and annotator fractions, >= 0.5.
  Groups may overlap; the reference of each is the *background*, the window's other rows.
- *categorical*: one column whose values are the groups; the reference is a named value
  (the privileged group) or ``"rest"`` (the rows with another value). Missing values (None,
  NaN, and empty or blank text) form no group and are counted.
- *intersections*: tuples of values of several categorical columns (race x sex), with the
  same reference choices, pruned below a minimum size.

Each builder returns an :class:`Attribute`: the membership masks to count into a
:class:`~metrics_core.ScoreTable` and the :class:`~metrics_core.Comparison` list to
evaluate. ``max_groups`` keeps the largest groups and lists the others as dropped, chosen
from the group sizes before any mask is made: a column with 100,000 distinct values costs
one counting pass, not 100,000 masks. Every builder takes an optional ``weight``: the number of
rows each entry stands for, when the rows come already aggregated (a database's ``GROUP BY``);
sizes, ``min_size``, ``max_groups`` and the missing count are then counted in rows.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.core.results import BACKGROUND, Comparison
from metrics_core.core.types import BoolArray
from metrics_core.window.tables import ScoreTable

__all__ = [
    "BACKGROUND",
    "REST",
    "Attribute",
    "categorical_attribute",
    "category_name",
    "indicator_attribute",
    "intersection_attribute",
    "membership",
    "table_for",
]

REST = "rest"


@dataclass(frozen=True)
class Attribute:
    """The groups of one attribute in one window.

    ``masks`` maps table keys to boolean row masks (built lazily for categorical
    attributes); ``comparisons`` are the group-vs-reference pairs to evaluate.
    ``n_missing`` counts rows with no value; ``dropped`` lists groups pruned below
    ``min_size`` or beyond ``max_groups``.
    """

    name: str
    kind: Literal["indicator", "categorical"]
    masks: Mapping[str, BoolArray]
    comparisons: tuple[Comparison, ...]
    n_missing: int = 0
    dropped: tuple[str, ...] = field(default_factory=tuple)

    @property
    def groups(self) -> list[str]:
        return [c.group for c in self.comparisons]

    def sums(self, values: ArrayLike, keys: Sequence[str] | None = None) -> dict[str, float]:
        """``values`` (one per row) summed over the rows of each group key (default: the compared
        groups'; 0 for a key the attribute has no mask for): one pass over the codes of a categorical
        attribute, one mask per group of an indicator attribute.

        >>> a = categorical_attribute("race", ["a", "b", "b", "c"], reference="a")
        >>> a.sums([1.0, 2.0, 3.0, 4.0])
        {'race=b': 5.0, 'race=c': 4.0}
        """
        v = np.asarray(values, dtype=np.float64)
        wanted = [c.key for c in self.comparisons] if keys is None else list(keys)
        if isinstance(self.masks, _CodeMasks):
            return self.masks.sums(v, wanted)
        return {k: float(v[np.asarray(self.masks[k])].sum()) if k in self.masks else 0.0 for k in wanted}


def membership(values: ArrayLike) -> BoolArray:
    """A group mask from booleans, 0/1 flags or membership fractions: member iff >= 0.5, NaN is not.

    >>> membership([True, False]).tolist(), membership([0.0, 0.6, float("nan"), 0.1]).tolist()
    ([True, False], [False, True, False, False])
    """
    arr = np.asarray(values)
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"a group mask must be boolean or numeric (>= 0.5 is a member), got {arr.dtype}")
    with np.errstate(invalid="ignore"):
        mask: BoolArray = arr.astype(np.float64) >= 0.5
    return mask


def _key(attribute: str, group: str) -> str:
    return f"{attribute}={group}"


def _largest(sizes: Sequence[int], max_groups: int | None) -> set[int]:
    """Positions of the ``max_groups`` largest sizes (ties: the earlier), all if no cap."""
    if max_groups is not None and max_groups < 1:
        raise ValueError(f"max_groups must be at least 1, got {max_groups}")
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
    return set(order if max_groups is None else order[:max_groups])


def _weights(weight: ArrayLike | None, n: int) -> NDArray[np.float64] | None:
    if weight is None:
        return None
    w = np.asarray(weight, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"weight must have one entry per row ({n}), got shape {w.shape}")
    return w


def _size(mask: BoolArray, weight: NDArray[np.float64] | None) -> int:
    """Rows in ``mask``: entries, or the sum of their weights."""
    return int(np.count_nonzero(mask)) if weight is None else round(float(weight[mask].sum()))


def indicator_attribute(
    name: str,
    columns: Mapping[str, ArrayLike],
    *,
    threshold: float = 0.5,
    min_size: int = 0,
    max_groups: int | None = None,
    weight: ArrayLike | None = None,
) -> Attribute:
    """One group per column; member iff the value is >= ``threshold`` (NaN: not a member).

    >>> a = indicator_attribute("identity", {"male": [1.0, 0.0, 0.7], "female": [0, 1, float("nan")]})
    >>> [c.group for c in a.comparisons], a.masks["identity=male"].tolist()
    (['male', 'female'], [True, False, True])
    """
    masks: dict[str, BoolArray] = {}
    comparisons = []
    dropped = []
    n = None
    all_missing: BoolArray | None = None
    for group, values in columns.items():
        arr = np.asarray(values)
        if arr.ndim != 1:
            raise ValueError(f"indicator column {group!r} must be 1-dimensional, got shape {arr.shape}")
        if n is not None and arr.shape[0] != n:
            raise ValueError(f"indicator column {group!r} has {arr.shape[0]} rows, expected {n}")
        n = arr.shape[0]
        as_float = arr.astype(np.float64, copy=False)  # no copy of a float64 column (~1 ms per group)
        missing = np.isnan(as_float)
        all_missing = missing if all_missing is None else all_missing & missing
        with np.errstate(invalid="ignore"):
            mask = as_float >= threshold
        if _size(mask, w := _weights(weight, n)) < min_size:
            dropped.append(group)
            continue
        key = _key(name, group)
        masks[key] = mask
        comparisons.append(Comparison(name, group, key))
    w = None if n is None else _weights(weight, n)
    keep = _largest([_size(masks[c.key], w) for c in comparisons], max_groups)
    dropped += [c.group for i, c in enumerate(comparisons) if i not in keep]
    comparisons = [c for i, c in enumerate(comparisons) if i in keep]
    masks = {c.key: masks[c.key] for c in comparisons}
    n_missing = 0 if all_missing is None else _size(all_missing, w)
    return Attribute(name, "indicator", masks, tuple(comparisons), n_missing, tuple(dropped))


class _CodeMasks(Mapping[str, BoolArray]):
    """Masks ``codes == i`` made on access, so 200 categories do not hold 200 masks at once."""

    def __init__(self, codes: NDArray[np.int64], keys: Mapping[str, int]) -> None:
        self._codes = codes
        self._keys = dict(keys)

    def __getitem__(self, key: str) -> BoolArray:
        code = self._keys[key]
        # code -2 is the attribute's universe: every row with a value
        mask: BoolArray = self._codes >= 0 if code == -2 else self._codes == code
        return mask

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def sums(self, values: NDArray[np.float64], keys: Sequence[str]) -> dict[str, float]:
        """``values`` summed per key in one pass (a key of no code, or the universe, by its mask)."""
        present = self._codes >= 0
        totals = np.bincount(
            self._codes[present], values[present], minlength=max(self._keys.values(), default=-1) + 1
        )
        out = {}
        for k in keys:
            code = self._keys.get(k)
            if code is None:
                out[k] = 0.0
            elif code >= 0:
                out[k] = float(totals[code])
            else:
                out[k] = float(values[self[k]].sum())
        return out

    def __len__(self) -> int:
        return len(self._keys)


def _is_missing(v: object) -> bool:
    if v is None:
        return True
    if isinstance(v, str):
        return not v.strip()  # "" and "  " alike: a blank cell names no group
    try:
        return bool(v != v)  # NaN is the one value unequal to itself
    except (TypeError, ValueError):  # pandas.NA and friends refuse to be truth-tested: missing
        return True


def _missing(values: NDArray[np.generic]) -> BoolArray:
    mask: BoolArray
    if values.dtype.kind in "biu":
        return np.zeros(values.shape, dtype=bool)
    if values.dtype.kind == "f":
        mask = np.isnan(values)
        return mask
    if values.dtype.kind == "U":
        mask = np.char.strip(values.astype(np.str_)) == ""
        return mask
    return np.frompyfunc(_is_missing, 1, 1)(values).astype(bool)  # type: ignore[no-any-return]


def category_name(value: object) -> str:
    """The group name of a value: whole numbers without a decimal point, so 1, 1.0 and "1" are one group.

    A column with a NULL reads as float (1.0) in one window and as int (1) in the next; the
    group must keep one name across windows.

    >>> category_name(1.0), category_name(np.int64(2)), category_name(2.5), category_name("a"), category_name(True)
    ('1', '2', '2.5', 'a', 'True')
    """
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _factorize(
    values: ArrayLike, categories: Sequence[object] | None = None
) -> tuple[NDArray[np.int64], list[str], int]:
    """Integer codes (-1 for missing), category names as text (sorted), number missing.

    With ``categories``, ``values`` are already codes into them (-1: missing), as
    ``pandas.factorize`` returns them: only the categories are named and told missing, one call
    per distinct value, not per row; categories whose names coincide (1, 1.0 and "1") merge.
    """
    if categories is not None:
        return _from_codes(np.asarray(values), categories)
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"a categorical column must be 1-dimensional, got shape {arr.shape}")
    missing = _missing(arr)
    present = arr[~missing]
    if present.dtype.kind in "US":
        text = present.astype(str)
    else:
        text = (
            np.frompyfunc(category_name, 1, 1)(present).astype(str) if present.size else present.astype(str)
        )
    names, inverse = np.unique(text, return_inverse=True)
    codes = np.full(arr.shape[0], -1, dtype=np.int64)
    codes[~missing] = inverse
    return codes, [str(n) for n in names], int(missing.sum())


def _from_codes(
    codes: NDArray[np.generic], categories: Sequence[object]
) -> tuple[NDArray[np.int64], list[str], int]:
    if codes.ndim != 1 or codes.dtype.kind not in "iu":
        raise ValueError(
            f"codes must be a 1-dimensional integer array, got {codes.dtype} of shape {codes.shape}"
        )
    if codes.size and (codes.min() < -1 or codes.max() >= len(categories)):
        raise ValueError(f"codes must lie in [-1, {len(categories)}) (-1: missing)")
    named = [None if _is_missing(c) else category_name(c) for c in categories]
    names = sorted({n for n in named if n is not None})
    position = {n: i for i, n in enumerate(names)}
    # the last entry answers code -1
    remap = np.array([-1 if n is None else position[n] for n in named] + [-1], dtype=np.int64)
    out: NDArray[np.int64] = remap[codes.astype(np.int64)]
    return out, names, int(np.count_nonzero(out < 0))


def _categorical(
    name: str,
    codes: NDArray[np.int64],
    names: Sequence[str],
    n_missing: int,
    reference: str,
    min_size: int,
    max_groups: int | None,
    weight: NDArray[np.float64] | None = None,
) -> Attribute:
    present = codes >= 0
    sizes = np.bincount(codes[present], None if weight is None else weight[present], minlength=len(names))
    if weight is not None:
        sizes = np.rint(sizes).astype(np.int64)
    keys = {_key(name, g): i for i, g in enumerate(names)}
    dropped = [g for g, size in zip(names, sizes, strict=True) if size < min_size]
    # the groups compared: big enough, not the reference, and among the max_groups largest
    candidates = [i for i, g in enumerate(names) if sizes[i] >= min_size and g != reference]
    keep = _largest([int(sizes[i]) for i in candidates], max_groups)
    dropped += [names[i] for k, i in enumerate(candidates) if k not in keep]
    compared = [names[i] for k, i in enumerate(candidates) if k in keep]
    comparisons: list[Comparison] = []
    if reference == REST:
        universe = _key(name, "*")
        keys[universe] = -2
        comparisons = [Comparison(name, g, _key(name, g), REST, None, (universe,)) for g in compared]
    else:
        ref_key = _key(name, reference)
        if ref_key not in keys:  # absent from this window: an empty reference, values NaN
            keys[ref_key] = -3
        comparisons = [Comparison(name, g, _key(name, g), reference, ref_key) for g in compared]
    kept = {c.key for c in comparisons} | {c.reference_key for c in comparisons if c.reference_key}
    kept |= {u for c in comparisons for u in (c.universe or ())}
    masks = _CodeMasks(codes, {k: v for k, v in keys.items() if k in kept})
    return Attribute(name, "categorical", masks, tuple(comparisons), n_missing, tuple(dropped))


def categorical_attribute(
    name: str,
    values: ArrayLike,
    *,
    reference: str | int | float = REST,
    min_size: int = 0,
    max_groups: int | None = None,
    weight: ArrayLike | None = None,
    categories: Sequence[object] | None = None,
) -> Attribute:
    """One group per distinct value, each compared with ``reference`` (a value, or ``"rest"``).

    ``categories``: ``values`` are integer codes into them (-1: missing), as ``pandas.factorize``
    returns them - the fast way for a large column: values are named once each, not once per row.

    >>> a = categorical_attribute("race", ["a", "b", None, "a", "c"], reference="a")
    >>> [(c.group, c.reference) for c in a.comparisons], a.n_missing
    ([('b', 'a'), ('c', 'a')], 1)
    >>> b = categorical_attribute("race", [0, 1, -1, 0, 2], reference="a", categories=["a", "b", "c"])
    >>> [(c.group, c.reference) for c in b.comparisons] == [(c.group, c.reference) for c in a.comparisons]
    True
    """
    codes, names, n_missing = _factorize(values, categories)
    w = _weights(weight, codes.shape[0])
    if w is not None:
        n_missing = _size(codes < 0, w)
    return _categorical(name, codes, names, n_missing, category_name(reference), min_size, max_groups, w)


def intersection_attribute(
    columns: Mapping[str, ArrayLike],
    *,
    reference: str | Sequence[str] = REST,
    min_size: int = 0,
    max_groups: int | None = None,
    separator: str = "&",
    weight: ArrayLike | None = None,
    categories: Mapping[str, Sequence[object]] | None = None,
) -> Attribute:
    """Groups of value tuples across categorical columns (``race&sex = Black&Female``).

    A row with a missing value in any column belongs to no intersection. Groups smaller
    than ``min_size`` are pruned and listed in ``dropped``. ``categories``: the columns it names
    are integer codes into those categories (see :func:`categorical_attribute`).

    >>> a = intersection_attribute({"race": ["a", "a", "b", "b"], "sex": ["f", "m", "f", "f"]}, min_size=2)
    >>> a.name, a.groups, a.dropped
    ('race&sex', ['b&f'], ('a&f', 'a&m'))
    """
    if len(columns) < 2:
        raise ValueError("an intersection needs at least two columns")
    name = separator.join(columns)
    parts = [_factorize(v, (categories or {}).get(c)) for c, v in columns.items()]
    n = parts[0][0].shape[0]
    if any(p[0].shape[0] != n for p in parts):
        raise ValueError("intersection columns must have the same length")
    missing = np.zeros(n, dtype=bool)
    combined = np.zeros(n, dtype=np.int64)
    for codes, names, _ in parts:
        missing |= codes < 0
        combined = combined * (len(names) + 1) + (codes + 1)
    present = combined[~missing]
    uniq, inverse = np.unique(present, return_inverse=True)
    codes = np.full(n, -1, dtype=np.int64)
    codes[~missing] = inverse
    labels = []
    for combo in uniq:
        rest, pieces = int(combo), []
        for _, names_i, _ in reversed(parts):  # undo the mixed-radix packing, last column first
            rest, digit = divmod(rest, len(names_i) + 1)
            pieces.append(names_i[digit - 1])
        labels.append(separator.join(reversed(pieces)))
    ref = reference if isinstance(reference, str) else separator.join(category_name(r) for r in reference)
    w = _weights(weight, n)
    return _categorical(name, codes, labels, _size(missing, w), ref, min_size, max_groups, w)


def table_for(
    y_score: ArrayLike,
    y_true: ArrayLike,
    attributes: Sequence[Attribute],
    *,
    sample_weight: ArrayLike | None = None,
) -> ScoreTable:
    """The :class:`ScoreTable` of a window with every group of ``attributes``."""
    # A ChainMap looks masks up one at a time: categorical masks are made and dropped in turn.
    # ChainMap is typed for mutable maps but only reads here; the lazy masks are read-only.
    maps = (a.masks if not isinstance(a.masks, dict) else dict(a.masks) for a in attributes)
    masks = ChainMap(*(cast("MutableMapping[str, BoolArray]", m) for m in maps))
    return ScoreTable.from_arrays(y_score, y_true, masks, sample_weight=sample_weight)
