"""Multiplicity: judging a family of values so that false violations stay rare across all of them.

An evaluation judges many values at once (metrics x groups x windows). At a 95% level each
value at a fair-range bound has a 2.5% chance of a false violation, so the chance that *some*
value is falsely a violation grows with their number ``m``. Two adjustments bound that
family-wise rate by ``alpha = 1 - confidence``:

- ``bonferroni``: every interval at level ``1 - alpha / m``;
- ``holm`` (Holm 1979, step-down): as powerful as Bonferroni or more, with the same bound. The
  p-value of a value is ``1 - L*``, ``L*`` the highest level at which its interval still lies
  wholly outside the fair range. Sorted ascending, the k-th (from 0) is a violation while every
  p-value so far is at most ``alpha / (m - k)``. Each violation is reported with its interval at
  its own level ``1 - alpha / (m - k)``; every other value at the level where the procedure
  stopped, ``1 - alpha / (m - r)`` for ``r`` violations - so a value's state always agrees with
  the interval reported beside it.

Only values that are violations at the unadjusted level can be Holm violations, so p-values
are searched for those few alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from metrics_core.core.types import BoolArray, FloatArray, IntArray

__all__ = ["Adjustment", "Block", "adjusted_intervals"]

Adjustment = Literal["none", "bonferroni", "holm"]
#: Smallest p-value resolved: levels are searched up to 1 - 1e-12.
_P_FLOOR = 1e-12
_BISECTIONS = 30


@dataclass(frozen=True)
class Block:
    """One metric's values in an evaluation.

    ``interval(level, rows)`` gives the intervals of the values at ``rows`` (all when ``None``)
    at a two-sided ``level``; ``outside(lo, hi, rows)`` says which of them lie wholly outside
    the fair range and can be judged (enough support, a defined value).
    """

    size: int
    interval: Callable[[float, IntArray | None], tuple[FloatArray, FloatArray]]
    outside: Callable[[FloatArray, FloatArray, IntArray | None], BoolArray]


def adjusted_intervals(
    blocks: Sequence[Block], *, confidence: float, adjust: Adjustment, family_size: int | None = None
) -> list[tuple[FloatArray, FloatArray]]:
    """Each block's intervals at the level its adjustment gives every value.

    ``family_size`` is ``m``, the number of alerting values the family-wise bound covers
    (default: every value of ``blocks``).
    """
    if adjust not in ("none", "bonferroni", "holm"):
        raise ValueError(f"adjust must be 'none', 'bonferroni' or 'holm', got {adjust!r}")
    m = max(1, family_size if family_size is not None else sum(b.size for b in blocks))
    alpha = 1 - confidence
    if adjust == "none":
        return [b.interval(confidence, None) for b in blocks]
    if adjust == "bonferroni":
        return [b.interval(1 - alpha / m, None) for b in blocks]
    p_values = _candidate_p_values(blocks, confidence)
    rejected: list[tuple[int, int]] = []
    for k, (p, key) in enumerate(sorted(p_values)):
        if k >= m or p > alpha / (m - k):
            break
        rejected.append(key)
    stop_level = 1 - alpha / (m - len(rejected)) if len(rejected) < m else 1 - alpha
    out = [b.interval(stop_level, None) for b in blocks]
    for k, (i, j) in enumerate(rejected):
        lo, hi = blocks[i].interval(1 - alpha / (m - k), np.array([j]))
        out[i][0][j], out[i][1][j] = lo[0], hi[0]
    return out


def _candidate_p_values(blocks: Sequence[Block], confidence: float) -> list[tuple[float, tuple[int, int]]]:
    """``(p, (block, row))`` of every value that is a violation at ``confidence``."""
    out = []
    for i, block in enumerate(blocks):
        lo, hi = block.interval(confidence, None)
        for j in np.flatnonzero(block.outside(lo, hi, None)):
            out.append((_p_value(block, int(j), confidence), (i, int(j))))
    return out


def _p_value(block: Block, row: int, confidence: float) -> float:
    """``1 - L*``: bisection on ``log(1 - level)`` between ``confidence`` (outside) and ``1 - 1e-12``."""
    rows = np.array([row])

    def outside(log_tail: float) -> bool:
        lo, hi = block.interval(1 - math.exp(log_tail), rows)
        return bool(block.outside(lo, hi, rows)[0])

    inside_at, outside_at = math.log(_P_FLOOR), math.log(1 - confidence)
    if outside(inside_at):
        return _P_FLOOR
    for _ in range(_BISECTIONS):
        mid = (inside_at + outside_at) / 2
        if outside(mid):
            outside_at = mid
        else:
            inside_at = mid
    return math.exp(outside_at)
