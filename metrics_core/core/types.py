"""Array aliases and the column mapping every evaluator passes around."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

__all__ = ["BoolArray", "Data", "FloatArray", "IntArray"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]
#: Row-aligned columns of one window (or of one side of a comparison), by data key.
Data = Mapping[str, NDArray[np.generic]]
