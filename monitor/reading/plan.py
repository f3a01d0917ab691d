"""Which evaluations the database may count instead of returning rows, and what it counts.

A model's windows can be computed from counts (:mod:`monitor.sources.count_sql`) when its task's
statistics are counts - the binary task (every metric comes from a score table, which counts
rows by score, label and group) and the multiclass task (confusion counts by predicted class,
true class and group) - and its labels come with its predictions, or from a label table the
database can join (:meth:`~monitor.sources.sql.source.SqlSource.joins_labels_of`); other label sources
are joined row by row, in Python. Everything else reads rows.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from monitor.config import ModelConfig
from monitor.sources import Source
from monitor.sources.count_sql import CountRequest, IndicatorFlags, LabelJoin
from monitor.tasks import TASKS

__all__ = ["count_request", "counts_suffice", "label_join"]

#: Tasks whose every statistic is a count of rows by the columns the task reads.
COUNTED_TASKS = frozenset({"binary", "multiclass"})


def counts_suffice(model: ModelConfig, source: Source, label_source: Source | None) -> bool:
    return model.task in COUNTED_TASKS and (
        label_source is None or label_join(model, source, label_source) is not None
    )


def label_join(model: ModelConfig, source: Source, label_source: Source | None) -> LabelJoin | None:
    """How the database joins ``model``'s labels, when both tables are in one database."""
    joins = getattr(source, "joins_labels_of", None)
    if model.labels is None or label_source is None or joins is None or not joins(label_source):
        return None
    columns = model.labels.columns
    return LabelJoin(
        label_source,
        columns.id,
        columns.label,
        model.labels.join_on or model.columns.id,
        model.columns.label or "label",
    )


def count_request(
    model: ModelConfig, ranges: tuple[tuple[datetime, datetime], ...], labels: LabelJoin | None = None
) -> CountRequest:
    """The columns to count ``model``'s windows by, over the time ``ranges`` of its windows.

    Only the columns the task reads (a multiclass log's ``score`` column is no key: it would
    make nearly every row its own combination); a default-named optional column (a
    regression's ``label``) may be missing from the log, as on the row path
    (:func:`monitor.reading.frame.columns_for_frame`). An indicator attribute's columns are
    thresholded by the database unless a column also serves elsewhere (another attribute, or
    as a score or label): then they come as stored.
    """
    cols = model.columns
    task = TASKS[model.task]
    read = [key for key in ("score", "prediction", "label") if key in task.reads and getattr(cols, key)]
    raw = [getattr(cols, key) for key in read]
    if labels is not None and labels.column not in raw:
        read.append("label")  # the joined label, under the name the row path gives it
        raw.append(labels.column)
    if cols.model:
        raw.append(cols.model)
    optional = tuple(
        getattr(cols, key)
        for key in read
        if key in task.optional and key not in cols.model_fields_set and not (labels and key == "label")
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
    rounded = cols.score if model.score_decimals is not None else None
    return CountRequest(
        cols.timestamp,
        tuple(dict.fromkeys(raw)),
        tuple(flags),
        ranges,
        optional,
        rounded,
        model.score_decimals,
        labels,
        texts=tuple(dict.fromkeys(texts)),
        model=cols.model,
    )
