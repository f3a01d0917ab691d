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

__all__ = ["count_request", "counts_suffice"]

#: Tasks whose every statistic is a count of rows by the columns the task reads.
COUNTED_TASKS = frozenset({"binary", "multiclass"})


def counts_suffice(model: ModelConfig, label_source: Source | None) -> bool:
    return model.task in COUNTED_TASKS and label_source is None


def count_request(model: ModelConfig, ranges: tuple[tuple[datetime, datetime], ...]) -> CountRequest:
    """The columns to count ``model``'s windows by, over the time ``ranges`` of its windows.

    An indicator attribute's columns are thresholded by the database unless a column also
    serves elsewhere (another attribute, or as a score or label): then they come as stored.
    """
    cols = model.columns
    raw = [c for c in (cols.score, cols.prediction, cols.label, cols.model) if c]
    indicators = [g for g in model.groups if g.kind == "indicator"]
    for g in model.groups:
        if g.kind == "categorical":
            raw.append(g.column or "")
        elif g.kind == "intersection":
            raw += g.columns
    uses = Counter([*raw, *(c for g in indicators for c in g.columns)])
    flags = []
    for g in indicators:
        if all(uses[c] == 1 for c in g.columns):
            flags.append(IndicatorFlags(g.attribute, tuple(g.columns), g.threshold))
        else:
            raw += g.columns
    return CountRequest(cols.timestamp, tuple(dict.fromkeys(raw)), tuple(flags), ranges)
