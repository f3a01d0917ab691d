"""Distances between two count vectors over the same categories (items, clusters, classes).

The kernels raise :class:`~metrics_core.core.undefined.Undefined` with a reason when a
side has no observation; callers turn that into NaN and keep the reason.
"""

from __future__ import annotations

import math

import numpy as np

from metrics_core.core.types import FloatArray
from metrics_core.core.undefined import Undefined

__all__ = ["kl_divergence_counts", "total_variation_counts"]


def total_variation_counts(p_counts: FloatArray, q_counts: FloatArray) -> float:
    """``0.5 * sum |p - q|`` of two count vectors over the same categories, normalised."""
    n_p, n_q = float(p_counts.sum()), float(q_counts.sum())
    if n_p <= 0:
        raise Undefined("the group has no observation to form a distribution")
    if n_q <= 0:
        raise Undefined("the reference has no observation to form a distribution")
    return 0.5 * float(np.abs(p_counts / n_p - q_counts / n_q).sum())


def kl_divergence_counts(p_counts: FloatArray, q_counts: FloatArray, *, smoothing: float) -> float:
    """``KL(P || Q)`` (natural log) of count vectors with ``smoothing`` added to every cell of both.

    With ``smoothing = 0`` this is the plug-in divergence (holisticai's); a category the
    group has and the reference lacks makes it infinite, which is reported as undefined.
    """
    if smoothing < 0 or not math.isfinite(smoothing):
        raise ValueError(f"smoothing must be a finite number >= 0, got {smoothing!r}")
    if float(p_counts.sum()) <= 0:
        raise Undefined("the group has no observation to form a distribution")
    if float(q_counts.sum()) <= 0:
        raise Undefined("the reference has no observation to form a distribution")
    p = p_counts + smoothing
    q = q_counts + smoothing
    p = p / p.sum()
    q = q / q.sum()
    used = p > 0
    if (q[used] == 0).any():
        raise Undefined(
            "the reference has no observation in a category the group has (KL is infinite); use smoothing > 0"
        )
    return float(np.sum(p[used] * np.log(p[used] / q[used])))
