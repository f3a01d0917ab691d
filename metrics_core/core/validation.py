"""Argument checks shared by the public entry points.

They run once, where data enters the library, and name the offending argument.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["as_labels", "as_scores", "as_weights", "check_level"]


def as_scores(y_score: ArrayLike, name: str) -> NDArray[np.float64]:
    """Return ``y_score`` as a 1-d float64 array, refusing NaN and infinities."""
    arr = np.asarray(y_score)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    # float32 merges distinct scores into ties; the caller's precision is kept by
    # converting once, to float64, never down.
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        bad = int((~np.isfinite(arr)).sum())
        raise ValueError(f"{name} has {bad} non-finite values (NaN or inf); drop those rows first")
    return arr


def as_labels(y_true: ArrayLike, name: str, n: int) -> NDArray[np.int64]:
    """Return label columns: 0 for negative, 1 for positive, 2 for a missing label (NaN/None)."""
    arr = np.asarray(y_true)
    if arr.shape != (n,):
        raise ValueError(f"{name} has shape {arr.shape}, expected ({n},) like y_score")
    if arr.dtype == object:
        arr = np.array([np.nan if v is None else v for v in arr], dtype=np.float64)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be 0/1 (or NaN for a label not yet known), got dtype {arr.dtype}")
    as_float = arr.astype(np.float64, copy=False)
    missing = np.isnan(as_float)
    known = as_float[~missing]
    bad = (known != 0) & (known != 1)
    if bad.any():
        raise ValueError(
            f"{name} must hold 0, 1 or NaN; found {int(bad.sum())} other values such as {known[bad][0]!r}"
        )
    out = as_float.astype(np.int64) if not missing.any() else np.where(missing, 2, as_float).astype(np.int64)
    return out


def as_weights(sample_weight: ArrayLike | None, n: int) -> NDArray[np.float64] | None:
    if sample_weight is None:
        return None
    arr = np.asarray(sample_weight, dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"sample_weight has shape {arr.shape}, expected ({n},)")
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise ValueError("sample_weight must be finite and non-negative")
    return arr


def check_level(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level!r}")
    return float(level)
