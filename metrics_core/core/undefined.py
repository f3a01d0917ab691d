"""Undefined values: NaN with a reason, never 0 (``metrics.md`` section 1)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["Undefined", "or_nan"]


class Undefined(Exception):
    """Raised by a statistic whose value does not exist for these rows; the message is the reason."""


def or_nan(kernel: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    """``kernel(*args, **kwargs)`` as a float, or NaN when it raises :class:`Undefined` or is not finite.

    >>> def ratio(a, b):
    ...     if b == 0:
    ...         raise Undefined("the reference is 0")
    ...     return a / b
    >>> or_nan(ratio, 1, 2), or_nan(ratio, 1, 0)
    (0.5, nan)
    """
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(kernel(*args, **kwargs))
    except Undefined:
        return math.nan
    return value if math.isfinite(value) else math.nan
