"""The one sort of a window's scores: exact, by value, in a single ``np.sort`` of 64-bit words.

Scores are sorted by value, never by position, and stay float64 (``metrics.md`` section 6).
The sort is a single ``np.sort`` of 64-bit words: an order-preserving integer key of each
score (its float64 bit pattern, made monotone, with -0.0 normalised to +0.0) shifted left,
with the row number in the low bits. When key and row number do not both fit in 64 bits,
the key's lowest bits are dropped; rows whose truncated keys collide are then put back in
the order of their full keys, so the result is always the exact order by value.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from metrics_core.core.types import BoolArray, FloatArray, IntArray

__all__ = ["sort_scores"]

_SIGN = np.uint64(1 << 63)


def sort_scores(score: FloatArray) -> tuple[IntArray, BoolArray, IntArray, FloatArray]:
    """Sort the rows by score, exactly: equal scores tie, different scores never merge.

    Returns the rows in increasing order of score, a flag per sorted row (the first of its
    score), the k + 1 edges of the runs of equal scores (the sorted position of each run's
    first row, then n), and the k distinct scores. ``score`` must hold no -0.0 (the caller
    normalises it).
    """
    n = score.shape[0]
    flags = np.ones(n + 1, dtype=bool)  # one more: the end of the last run, for the edges
    first = flags[:n]
    if n == 0:
        return np.zeros(0, dtype=np.int64), first, np.zeros(1, dtype=np.int64), score
    key, negative = _monotone_key(score)
    low = int(key.min())
    packed = key - np.uint64(low)
    spread = int(np.bitwise_or.reduce(packed))
    if spread == 0:  # a single distinct score
        first[1:] = False
        return np.arange(n, dtype=np.int64), first, np.array([0, n], dtype=np.int64), score[:1].copy()
    # Bits below the lowest set bit of every (key - low) are zero for all rows (float32
    # scores widened to float64 leave 29 of them): shift them out for free.
    zeros_below = (spread & -spread).bit_length() - 1
    width = (spread >> zeros_below).bit_length()
    row_bits = max((n - 1).bit_length(), 1)
    dropped = max(width + row_bits - 64, 0)
    packed >>= np.uint64(zeros_below)
    lost = None
    if dropped:
        # The lowest `dropped` bits do not fit next to the row number. Keep them, in the
        # smallest integer type, to detect rows whose truncated keys collide.
        lost_type = np.uint16 if dropped <= 16 else np.uint32 if dropped <= 32 else np.uint64
        lost = (packed & np.uint64((1 << dropped) - 1)).astype(lost_type)
        packed >>= np.uint64(dropped)
    packed <<= np.uint64(row_bits)
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    order = (packed & np.uint64((1 << row_bits) - 1)).view(np.int64)
    packed >>= np.uint64(row_bits)  # the sorted (truncated) keys
    np.not_equal(packed[1:], packed[:-1], out=first[1:])
    if lost is not None:
        lost_sorted = lost[order]
        collide = lost_sorted[1:] != lost_sorted[:-1]
        collide &= ~first[1:]
        if collide.any():  # distinct scores share a truncated key: order them by full key
            full = key[order]
            _fix_collisions(order, full, packed)
            np.not_equal(full[1:], full[:-1], out=first[1:])
    edges = np.flatnonzero(flags)
    starts = edges[:-1]
    if lost is None:
        # the distinct scores back from their keys: a sequential read, not a gather by row
        distinct_key = packed[starts]
        distinct_key <<= np.uint64(zeros_below)
        distinct_key += np.uint64(low)
    else:
        distinct_key = key[order[starts]]
    return order, first, edges, _score_of_key(distinct_key, negative)


def _monotone_key(score: FloatArray) -> tuple[NDArray[np.uint64], bool]:
    """Unsigned integers in the same order as the (finite, no -0.0) float64 scores.

    The flag says whether negative scores were present (the key is then transformed).
    """
    bits = score.view(np.uint64)
    if score.min() >= 0:
        return bits, False  # non-negative floats already order as their bit patterns
    # negative: flip every bit; non-negative: set the sign bit
    flip = (bits.view(np.int64) >> np.int64(63)).view(np.uint64)
    flip |= _SIGN
    flip ^= bits
    return flip, True


def _score_of_key(key: NDArray[np.uint64], negative: bool) -> FloatArray:
    """Invert :func:`_monotone_key` (in place)."""
    if negative:
        flip = (key >> np.uint64(63)).astype(np.bool_)  # set: the score was non-negative
        key ^= np.where(flip, _SIGN, ~np.uint64(0))
    return key.view(np.float64)


def _fix_collisions(order: IntArray, full: NDArray[np.uint64], truncated: NDArray[np.uint64]) -> None:
    """Reorder, in place, the runs of equal truncated keys whose full keys are out of order."""
    n = order.shape[0]
    run = np.empty(n, dtype=np.int64)
    run[0] = 0
    np.cumsum(truncated[1:] != truncated[:-1], out=run[1:])
    bad_runs = np.unique(run[1:][full[1:] < full[:-1]])
    rows = np.flatnonzero(np.isin(run, bad_runs))
    resort = np.lexsort((full[rows], run[rows]))
    order[rows] = order[rows[resort]]
    full[rows] = full[rows[resort]]
