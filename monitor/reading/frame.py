"""From the rows a source returned to the canonical frame one evaluation works on.

:func:`clean_rows` keeps the model's rows (when one log holds several models), lets the
model's task clean its columns into named inputs (``y_score``, ``y_true``, ``user``, ...;
bad rows dropped and counted by reason), and keeps the timestamp and the group columns
beside them. :func:`task_data` turns a window of that frame into the arrays a
``metrics_core`` evaluator reads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime

import numpy as np
import pandas as pd

from monitor.config import GroupConfig, ModelConfig
from monitor.core.errors import SourceError
from monitor.sources.contract import RANGE_PREFIX, WEIGHT, range_column
from monitor.tasks import TASKS, Rows
from monitor.tasks.base import InputArray

__all__ = [
    "BIN",
    "INPUT_PREFIX",
    "TIMESTAMP",
    "WEIGHT_SQUARES",
    "WindowMasks",
    "clean_rows",
    "columns_for_frame",
    "count_rows",
    "effective_sample",
    "group_columns",
    "labeled",
    "per_bin",
    "row_counts",
    "task_data",
    "weights",
]

#: Cleaned input ``x`` is the column ``INPUT_PREFIX + x`` of the canonical frame (a block of
#: inputs, such as the features, is ``x:0``, ``x:1``, ...), apart from the log's group columns.
INPUT_PREFIX = "__input_"
#: The event time in the canonical frame.
TIMESTAMP = "__ts"
#: With sampling weights (``weights: sampling``): each entry's sum of its rows' squared weights, for
#: the effective sample size (:func:`effective_sample`).
WEIGHT_SQUARES = "__weight_squares"

# The column keys that name one column each and may carry a default name (see columns_for_frame).
_SINGLE_COLUMNS = ("score", "prediction", "label", "user", "item", "rank", "cluster", "text")


def columns_for_frame(model: ModelConfig, frame: pd.DataFrame) -> ModelConfig:
    """``model`` without the columns its task does not read, nor optional defaults the log lacks.

    A multiclass config written without ``score: null`` must not require a ``score`` column it
    never reads, nor a regression log without labels a ``label`` column; a column the user
    named explicitly stays required.
    """
    task = TASKS[model.task]
    cols = model.columns
    update: dict[str, None] = {}
    for key in _SINGLE_COLUMNS:
        name = getattr(cols, key)
        if name is None:
            continue
        unread = key not in task.reads
        absent_default = key in task.optional and key not in cols.model_fields_set and name not in frame
        if unread or absent_default:
            update[key] = None
    return model.model_copy(update={"columns": cols.model_copy(update=update)}) if update else model


def clean_rows(
    frame: pd.DataFrame, model: ModelConfig, *, counted: bool = False
) -> tuple[pd.DataFrame, Counter[str]]:
    """The canonical frame of ``model`` (see :func:`columns_for_frame`), and the bad rows by reason.

    ``counted``: the frame holds counted combinations (:class:`~monitor.sources.Batch`): their
    row counts weigh the bad rows, and the counts and time-range columns are kept, in place of
    the timestamp.
    """
    cols = model.columns
    task = TASKS[model.task]
    needed = list(_names(getattr(cols, key) for key in task.reads))
    if cols.model:
        needed.append(cols.model)  # a missing model column must not silently mix every model's rows
    if cols.weight:
        needed.append(cols.weight)
    groups = list(dict.fromkeys(c for g in model.groups for c in group_columns(g)))
    missing = [c for c in dict.fromkeys([*needed, *groups]) if c not in frame.columns]
    if missing and frame.empty:
        # nothing logged yet in this window (a files source with no rows has no columns to show)
        frame = frame.assign(**{c: pd.Series(dtype="float64") for c in missing})
        missing = []
    if missing:
        raise SourceError(f"column(s) {missing} missing from the source; it has {list(frame.columns)}")
    if cols.model:
        frame = frame.loc[frame[cols.model].astype("string") == model.name]
    counts = frame[WEIGHT].to_numpy(dtype=np.float64) if counted else None
    # bad rows are counted as rows of the log, whatever their weight (as a source counts the rows
    # whose time it cannot read); each row counts as its weight in every value
    rows = Rows(frame, counts)
    given = _given_weights(frame, model)
    weight = counts
    if given is not None:
        weight = (np.ones(len(frame)) if counts is None else counts) * given[0]
        rows.reject(given[1], "weight_invalid")
    task.clean(rows, model)
    out = pd.DataFrame(_input_columns(rows.inputs), index=frame.index)
    if counted:
        for c in frame.columns:
            if c.startswith(RANGE_PREFIX):
                out[c] = frame[c]
    else:
        out[TIMESTAMP] = frame[cols.timestamp]
    if weight is not None:
        out[WEIGHT] = weight
    if given is not None and weight is not None and model.weights == "sampling":
        out[WEIGHT_SQUARES] = weight * given[0]  # (rows x w) x w: rows x w^2
    for c in groups:
        out[c] = frame[c]
    return out.loc[rows.keep].reset_index(drop=True), rows.rejected


def _given_weights(frame: pd.DataFrame, model: ModelConfig) -> tuple[np.ndarray, np.ndarray] | None:
    """``columns.weight`` as floats (1 where unusable), and which rows' weights are unusable:
    missing, not a number, negative or infinite, and for ``weights: count`` not a whole number
    (``None``: the model has no weights)."""
    column = model.columns.weight
    if not column:
        return None
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (values < 0)
        if model.weights == "count":
            bad |= values != np.round(values)
    return np.where(bad, 1.0, values), bad


def effective_sample(frame: pd.DataFrame) -> pd.DataFrame:
    """A window of sampling-weighted rows with its weights scaled to Kish's effective sample size:
    by ``sum(w) / sum(w^2)``, so that they add up to ``sum(w)^2 / sum(w^2)``. Every weighted rate,
    AUC and ratio is unchanged (a common factor cancels); the intervals, which read the weights as
    counts, are those of the effective sample. Other frames are returned as they are."""
    if WEIGHT_SQUARES not in frame.columns or frame.empty:
        return frame
    squares = float(frame[WEIGHT_SQUARES].sum())
    if squares <= 0:
        return frame  # every weight is 0: nothing counts, nothing to scale
    scale = float(frame[WEIGHT].sum()) / squares
    return frame.assign(**{WEIGHT: frame[WEIGHT].to_numpy(dtype=np.float64) * scale})


def task_data(frame: pd.DataFrame) -> dict[str, InputArray]:
    """The inputs of a (window of a) canonical frame, by name, as a ``metrics_core`` evaluator reads them."""
    blocks: dict[str, list[str]] = {}
    for c in frame.columns:
        if c.startswith(INPUT_PREFIX):
            blocks.setdefault(c.removeprefix(INPUT_PREFIX).partition(":")[0], []).append(c)
    data: dict[str, InputArray] = {}
    if WEIGHT in frame.columns:  # a counted frame: each entry stands for this many rows
        data["sample_weight"] = frame[WEIGHT].to_numpy(dtype=np.float64)
    for name, columns in blocks.items():
        if columns == [INPUT_PREFIX + name]:
            data[name] = frame[columns[0]].to_numpy()
        else:
            data[name] = frame[columns].to_numpy(dtype=np.float64)
    return data


def weights(frame: pd.DataFrame) -> np.ndarray | None:
    """The row count of each entry of a counted frame; ``None`` for a frame of rows."""
    return frame[WEIGHT].to_numpy(dtype=np.float64) if WEIGHT in frame.columns else None


def row_counts(frame: pd.DataFrame) -> np.ndarray:
    """The rows each entry of ``frame`` stands for: its count in a counted frame, else 1."""
    w = weights(frame)
    return np.ones(len(frame)) if w is None else w


def count_rows(frame: pd.DataFrame, mask: np.ndarray | None = None) -> int:
    """Rows of ``frame`` (where ``mask``), counts of a counted frame added up."""
    w = weights(frame)
    if w is None:
        return len(frame) if mask is None else int(np.count_nonzero(mask))
    return round(float(w.sum() if mask is None else w[mask].sum()))


def labeled(frame: pd.DataFrame) -> np.ndarray:
    """Which rows have their label (none, when the task reads no label)."""
    column = INPUT_PREFIX + "y_true"
    if column in frame.columns:
        return frame[column].notna().to_numpy()
    return np.zeros(len(frame), dtype=bool)


def group_columns(g: GroupConfig) -> list[str]:
    return list(g.columns) if g.kind != "categorical" else [g.column or ""]


def _names(values: Iterable[str | list[str] | None]) -> Iterable[str]:
    for v in values:
        if isinstance(v, list):
            yield from v
        elif v:
            yield v


def _input_columns(inputs: dict[str, InputArray]) -> dict[str, InputArray]:
    out: dict[str, InputArray] = {}
    for name, values in inputs.items():
        if values.ndim == 2:
            out |= {f"{INPUT_PREFIX}{name}:{i}": values[:, i] for i in range(values.shape[1])}
        else:
            out[INPUT_PREFIX + name] = values
    return out


class WindowMasks:
    """Which entries of the canonical frame lie in a time range: from the timestamps of rows, or
    from the 0/1 range columns of a counted frame."""

    def __init__(self, frame: pd.DataFrame, counted: tuple[tuple[datetime, datetime], ...] | None) -> None:
        self._frame = frame
        self._counted = counted

    def __call__(self, start: datetime, end: datetime) -> np.ndarray:
        if self._counted is not None:
            column = range_column(self._counted.index((start, end)))
            inside: np.ndarray = self._frame[column].to_numpy() == 1
            return inside
        ts = self._frame[TIMESTAMP]
        return np.asarray((ts >= start) & (ts < end))


#: The bin each entry of a :func:`per_bin` frame lies in.
BIN = "__bin"


def per_bin(
    frame: pd.DataFrame, masks: Sequence[np.ndarray], groups: Sequence[str], *, counted: bool = True
) -> pd.DataFrame:
    """A canonical frame with the bin of each entry (``masks``: which entries lie in each, in order; the
    others are dropped) and, ``counted``, counted per bin: its inputs and the ``groups`` columns as keys,
    the rows each combination stands for as its count (and, sampling-weighted, the sum of squared
    weights) - the same values from fewer entries, for computing one metric on many runs of bins. Not
    ``counted`` (a task whose evaluator reads rows, not counts), the entries stay as they are."""
    bin_of = np.full(len(frame), -1, dtype=np.int64)
    for i, mask in enumerate(masks):
        bin_of[np.asarray(mask, dtype=bool) & (bin_of < 0)] = i
    keep = bin_of >= 0
    frame = frame.loc[keep].assign(**{BIN: bin_of[keep]})
    if not counted:
        return frame.reset_index(drop=True)
    keys = [BIN, *(c for c in frame.columns if c.startswith(INPUT_PREFIX)), *dict.fromkeys(groups)]
    sums = {c: "sum" for c in (WEIGHT, WEIGHT_SQUARES) if c in frame.columns}
    if WEIGHT not in frame.columns:
        frame = frame.assign(**{WEIGHT: 1.0})
        sums[WEIGHT] = "sum"
    out = frame.groupby(keys, dropna=False, sort=False, observed=True).agg(sums).reset_index()
    return out.loc[out[WEIGHT] > 0].reset_index(drop=True)
