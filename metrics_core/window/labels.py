"""Class labels of a multiclass window as integer codes over one shared, sorted class list.

Logged class labels arrive as strings, ints, or floats with NaN for a label that has not
arrived yet (a pandas column with missing values). ``1``, ``1.0`` and ``np.int64(1)`` are
one class; when one column holds text and the other numbers, both are compared as text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["EncodedLabels", "encode_labels"]

BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class EncodedLabels:
    """``y_pred`` and ``y_true`` as codes into ``classes`` (``-1``: no label yet)."""

    classes: tuple[Any, ...]
    y_pred: NDArray[np.int64]
    y_true: NDArray[np.int64]

    @property
    def n_classes(self) -> int:
        return len(self.classes)


def _is_missing(v: object) -> bool:
    return v is None or (isinstance(v, float | np.floating) and v != v) or (isinstance(v, str) and v == "")


def _keys(values: ArrayLike, name: str, *, allow_missing: bool) -> tuple[NDArray[Any], BoolArray]:
    """Comparable keys (int64, float64 or str) and the mask of missing entries."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    kind = arr.dtype.kind
    keys: NDArray[Any]
    if kind in "biu":
        keys, missing = arr.astype(np.int64), np.zeros(arr.shape, dtype=bool)
    elif kind == "f":
        missing = np.isnan(arr)
        if np.isinf(arr).any():
            raise ValueError(f"{name} holds an infinite class label")
        keys = np.where(missing, 0.0, arr)
        if np.all(keys == np.round(keys)):
            keys = keys.astype(np.int64)  # 1.0 (from a column with NaN) and 1 are one class
    elif kind in "US":
        keys = arr.astype(str)
        missing = keys == ""
    elif kind == "O":
        items = arr.tolist()
        missing = np.fromiter((_is_missing(v) for v in items), dtype=bool, count=len(items))
        present = [v for v, m in zip(items, missing, strict=True) if not m]
        if all(isinstance(v, int | float | np.integer | np.floating) for v in present):
            as_float = np.array(
                [np.nan if m else v for v, m in zip(items, missing, strict=True)], dtype=float
            )
            return _keys(as_float, name, allow_missing=allow_missing)
        keys = np.array(["" if m else str(v) for v, m in zip(items, missing, strict=True)], dtype=str)
    else:
        raise TypeError(f"{name} must hold class labels (text or numbers), got dtype {arr.dtype}")
    if missing.any() and not allow_missing:
        raise ValueError(f"{name} has {int(missing.sum())} missing values; drop those rows first")
    return keys, missing


def _as_text(keys: NDArray[Any]) -> NDArray[np.str_]:
    return keys if keys.dtype.kind == "U" else keys.astype(str)


def encode_labels(
    y_pred: ArrayLike, y_true: ArrayLike | None = None, *, classes: ArrayLike | None = None
) -> EncodedLabels:
    """Codes of predictions and labels; ``classes`` defaults to every class seen in either.

    >>> enc = encode_labels(["b", "a", "c"], ["a", None, "b"])
    >>> enc.classes, enc.y_pred.tolist(), enc.y_true.tolist()
    (('a', 'b', 'c'), [1, 0, 2], [0, -1, 1])
    >>> encode_labels([1, 2], [1.0, float("nan")]).y_true.tolist()
    [0, -1]
    """
    pred, _ = _keys(y_pred, "y_pred", allow_missing=False)
    n = pred.shape[0]
    if y_true is None:
        true, unlabeled = np.zeros(n, dtype=pred.dtype), np.ones(n, dtype=bool)
    else:
        true, unlabeled = _keys(y_true, "y_true", allow_missing=True)
        if true.shape[0] != n:
            raise ValueError(f"y_true has {true.shape[0]} rows, y_pred has {n}")
    given = None if classes is None else _keys(classes, "classes", allow_missing=False)[0]
    parts = [pred, true] + ([given] if given is not None else [])
    if any(p.dtype.kind == "U" for p in parts):
        pred, true = _as_text(pred), _as_text(true)
        given = None if given is None else _as_text(given)
    if given is None:
        uniq = np.unique(np.concatenate([pred, true[~unlabeled]]))
    else:
        uniq = np.unique(given)
        if uniq.shape[0] != given.shape[0]:
            raise ValueError("classes must not repeat a class")
    pred_codes = _lookup(uniq, pred, "y_pred")
    true_codes = np.full(n, -1, dtype=np.int64)
    true_codes[~unlabeled] = _lookup(uniq, true[~unlabeled], "y_true")
    return EncodedLabels(tuple(uniq.tolist()), pred_codes, true_codes)


def _lookup(classes: NDArray[Any], keys: NDArray[Any], name: str) -> NDArray[np.int64]:
    if classes.shape[0] == 0:
        if keys.shape[0]:
            raise ValueError(f"{name} holds class {keys[0]!r}, which is not in classes")
        return np.zeros(0, dtype=np.int64)
    pos = np.searchsorted(classes, keys)
    pos_clipped = np.minimum(pos, classes.shape[0] - 1)
    unknown = classes[pos_clipped] != keys
    if unknown.any():
        raise ValueError(f"{name} holds class {keys[unknown][0].item()!r}, which is not in classes")
    codes: NDArray[np.int64] = pos_clipped.astype(np.int64)
    return codes
