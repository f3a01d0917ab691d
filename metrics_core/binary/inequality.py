"""Model-level inequality indices of individual benefit (AIF360's definitions).

The benefit of a prediction is ``b = ŷ - y + 1``: 0 for a false negative, 1 for a correct
prediction, 2 for a false positive. The indices measure how unequally it is spread.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "coefficient_of_variation",
    "generalized_entropy_from_counts",
    "generalized_entropy_index",
    "theil_index",
]


def generalized_entropy_from_counts(counts: ArrayLike, *, alpha: float = 2.0) -> float:
    """Generalized entropy index of benefits 0, 1, 2 taken ``counts[0..2]`` times.

    .. math:: GE(\\alpha) = \\frac{1}{n\\,\\alpha(\\alpha-1)} \\sum_i \\left((b_i/\\mu)^\\alpha - 1\\right),
              \\quad GE(1) = \\frac{1}{n} \\sum_i \\frac{b_i}{\\mu} \\ln\\frac{b_i}{\\mu}

    NaN when there is no row or the mean benefit is 0.

    >>> round(generalized_entropy_from_counts([1, 2, 1], alpha=2), 6)
    0.25
    """
    c = np.asarray(counts, dtype=float)
    n = c.sum()
    b = np.array([0.0, 1.0, 2.0])
    if n <= 0:
        return math.nan
    mu = float(c @ b) / n
    if mu <= 0:
        return math.nan
    ratio = b / mu
    if alpha == 1.0:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(ratio > 0, ratio * np.log(ratio), 0.0)  # 0 ln 0 = 0
        return float(c @ terms / n)
    if alpha == 0.0:
        if c[0] > 0:
            return math.nan  # the log of a zero benefit is undefined
        return float(-(c[1:] @ np.log(ratio[1:])) / n)
    return float(c @ (ratio**alpha - 1) / (n * alpha * (alpha - 1)))


def _benefit_counts(y_true: ArrayLike, y_pred: ArrayLike) -> np.ndarray:
    yt = np.asarray(y_true, dtype=float)
    yp = np.asarray(y_pred, dtype=float)
    if yt.shape != yp.shape:
        raise ValueError(f"y_true has shape {yt.shape} but y_pred has shape {yp.shape}")
    labeled = ~np.isnan(yt)  # a label not yet known: the row has no benefit to count
    yt, yp = yt[labeled], yp[labeled]
    for name, arr in (("y_true", yt), ("y_pred", yp)):
        if not np.isin(arr, (0.0, 1.0)).all():
            raise ValueError(f"{name} must hold 0/1 values (NaN for an unknown label)")
    b = (yp - yt + 1).astype(int)
    return np.bincount(b, minlength=3)[:3].astype(float)


def generalized_entropy_index(y_true: ArrayLike, y_pred: ArrayLike, *, alpha: float = 2.0) -> float:
    """GE(alpha) of the benefits of 0/1 predictions ``y_pred`` against labels ``y_true``.

    >>> round(generalized_entropy_index([1, 0, 1, 0], [1, 1, 0, 0]), 6)
    0.25
    """
    return generalized_entropy_from_counts(_benefit_counts(y_true, y_pred), alpha=alpha)


def theil_index(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """GE(1), the Theil index.

    >>> round(theil_index([1, 0, 1, 0], [1, 1, 0, 0]), 6)
    0.346574
    """
    return generalized_entropy_from_counts(_benefit_counts(y_true, y_pred), alpha=1.0)


def coefficient_of_variation(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """``sqrt(2 GE(2))`` (AIF360; holisticai's code has ``2 sqrt(GE(2))``).

    >>> round(coefficient_of_variation([1, 0, 1, 0], [1, 1, 0, 0]), 6)
    0.707107
    """
    ge2 = generalized_entropy_index(y_true, y_pred, alpha=2.0)
    return math.sqrt(2 * ge2) if not math.isnan(ge2) else math.nan
