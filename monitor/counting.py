"""Which evaluations the database may count instead of returning rows, and what it counts.

A model's windows can be computed from counts (:mod:`monitor.sources.counts`) when its task's
statistics are counts - the binary task (every metric comes from a score table, which counts
rows by score, label and group) and the multiclass task (confusion counts by predicted class,
true class and group) - and its labels come with its predictions (a separate label source is
joined row by row, in Python). Everything else reads rows.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from monitor.config import ModelConfig
from monitor.sources import Source
from monitor.sources.counts import CountRequest, IndicatorFlags
from monitor.tasks import TASKS

__all__ = ["count_request", "counts_suffice"]

#: Tasks whose every statistic is a count of rows by the columns the task reads.
COUNTED_TASKS = frozenset({"binary", "multiclass"})


def counts_suffice(model: ModelConfig, label_source: Source | None) -> bool:
    return model.task in COUNTED_TASKS and label_source is None


def count_request(model: ModelConfig, ranges: tuple[tuple[datetime, datetime], ...]) -> CountRequest:
    """The columns to count ``model``'s windows by, over the time ``ranges`` of its windows.

    Only the columns the task reads (a multiclass log's ``score`` column is no key: it would
    make nearly every row its own combination); a default-named optional column (a
    regression's ``label``) may be missing from the log, as on the row path
    (:func:`monitor.rows.columns_for_frame`). An indicator attribute's columns are
    thresholded by the database unless a column also serves elsewhere (another attribute, or
    as a score or label): then they come as stored.
    """
    cols = model.columns
    task = TASKS[model.task]
    read = [key for key in ("score", "prediction", "label") if key in task.reads and getattr(cols, key)]
    raw = [getattr(cols, key) for key in read]
    if cols.model:
        raw.append(cols.model)
    optional = tuple(
        getattr(cols, key) for key in read if key in task.optional and key not in cols.model_fields_set
    )
    indicators = [g for g in model.groups if g.kind == "indicator"]
    texts = [getattr(cols, key) for key in read if model.task == "multiclass"]  # classes, as text
    for g in model.groups:
        if g.kind == "categorical":
            raw.append(g.column or "")
            texts.append(g.column or "")
        elif g.kind == "intersection":
            raw += g.columns
            texts += g.columns
    uses = Counter([*raw, *(c for g in indicators for c in g.columns)])
    flags = []
    for g in indicators:
        if all(uses[c] == 1 for c in g.columns):
            flags.append(IndicatorFlags(g.attribute, tuple(g.columns), g.threshold))
        else:
            raw += g.columns
    return CountRequest(
        cols.timestamp,
        tuple(dict.fromkeys(raw)),
        tuple(flags),
        ranges,
        optional,
        texts=tuple(dict.fromkeys(texts)),
        model=cols.model,
    )
