"""Vectorised root finding for interval bounds: a coarse grid brackets, the Illinois method refines.

Score-type intervals are the set of parameters a test does not reject; their bounds are where
a statistic crosses a critical value. Every comparison of a window is solved at once: one
array per iteration, never a Python loop per value.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from metrics_core.core.types import FloatArray

__all__ = ["grid_with", "outermost_crossing"]

_ITERATIONS = 60
_TOLERANCE = 1e-11


def grid_with(start: float, stop: float, points: int, anchor: FloatArray) -> FloatArray:
    """A search grid per entry: ``points`` evenly spaced in ``[start, stop]`` plus ``anchor`` (clipped), sorted.

    The anchor is a point known to satisfy the condition (an interval's own estimate), so an
    interval narrower than the grid's spacing still has a grid point inside it.

    >>> grid_with(0.0, 1.0, 3, np.array([0.2, 0.9])).tolist()
    [[0.0, 0.0], [0.2, 0.5], [0.5, 0.9], [1.0, 1.0]]
    """
    even = np.linspace(start, stop, points)[:, None] * np.ones(anchor.shape)[None, :]
    grid: FloatArray = np.sort(np.vstack([even, np.clip(anchor, start, stop)[None, :]]), axis=0)
    return grid


def outermost_crossing(f: Callable[[FloatArray], FloatArray], grid: FloatArray, *, upper: bool) -> FloatArray:
    """For each column of ``grid`` (shape ``(points, n)``), the outermost ``x`` where ``f(x) >= 0``.

    ``upper=True``: the largest such ``x``; ``upper=False``: the smallest. ``f`` maps an array of
    shape ``(..., n)`` to the same shape. Searching from the outer end keeps the bound right
    where ``f`` is not monotone (a skewness correction bending near a boundary of the parameter
    space). Where ``f >= 0`` holds at the end of the grid, that end is the answer; where it
    holds nowhere on the grid, NaN.

    >>> grid = np.linspace(0.0, 4.0, 9)[:, None] * np.ones((1, 2))
    >>> outermost_crossing(lambda x: 2.0 - x * np.array([1.0, 2.0]), grid, upper=True).round(12).tolist()
    [2.0, 1.0]
    """
    points = grid.shape[0]
    values = f(grid)
    inside = values >= 0
    if upper:
        last = points - 1 - np.argmax(inside[::-1], axis=0)  # the last grid point inside
        inner_idx, outer_idx = last, np.minimum(last + 1, points - 1)
    else:
        first = np.argmax(inside, axis=0)
        inner_idx, outer_idx = first, np.maximum(first - 1, 0)
    pick = np.arange(grid.shape[1])
    a, b = grid[inner_idx, pick], grid[outer_idx, pick]  # a: f >= 0, b: f < 0 (unless at the grid's end)
    fa, fb = values[inner_idx, pick], values[outer_idx, pick]
    open_ended = (inner_idx == outer_idx) | (fb >= 0)
    none_inside = ~inside.any(axis=0)
    side = np.zeros(a.shape, dtype=np.int8)  # which end moved last (Illinois: halve the stale one)
    for _ in range(_ITERATIONS):
        with np.errstate(divide="ignore", invalid="ignore"):
            c = b - fb * (b - a) / (fb - fa)
        bad = ~np.isfinite(c) | ((c - a) * (c - b) >= 0)
        c = np.where(bad, (a + b) / 2, c)
        fc = f(c)
        keep_a = fc >= 0
        # Illinois: when the same end is replaced twice in a row, halve the other end's value
        fb = np.where(keep_a & (side == 1), fb / 2, fb)
        fa = np.where(~keep_a & (side == -1), fa / 2, fa)
        a, fa = np.where(keep_a, c, a), np.where(keep_a, fc, fa)
        b, fb = np.where(keep_a, b, c), np.where(keep_a, fb, fc)
        side = np.where(keep_a, np.int8(1), np.int8(-1)).astype(np.int8)
        if np.all((np.abs(b - a) <= _TOLERANCE * (1 + np.abs(a))) | open_ended):
            break
    out: FloatArray = np.where(none_inside, np.nan, np.where(open_ended, grid[inner_idx, pick], a))
    return out
