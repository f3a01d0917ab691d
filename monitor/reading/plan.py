"""How a model's windows leave its sources, decided once per model: its read plan.

A model's windows are computed from *counts* when its task's statistics are counts - the binary
task (every metric comes from a score table, which counts rows by score, label and group) and the
multiclass task (confusion counts by predicted class, true class and group) - and its source can
count (:class:`~monitor.sources.contract.CountingSource`: a database, DuckDB over files, Spark).
The source then returns the windows' distinct combinations of the columns the task reads with a
row count each, and the values are exactly those of reading every row. Labels kept in their own
table are joined by the database while it counts when both tables are in one database
(:meth:`~monitor.sources.contract.LabelJoiningSource.bind_labels`); other label sources are joined
row by row, in Python, so their models read rows. A scheduled evaluation of a model with ``panes``
reads its counts through the sealed panes (:mod:`monitor.reading.panes`): only what can still
change. Everything else reads rows.

All of that depends only on the config and the pair of sources, so :class:`ReadPlan` decides it
when a model's evaluator is built; a tick only calls :meth:`ReadPlan.read`.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from monitor.config import ModelConfig
from monitor.core.errors import SourceError
from monitor.reading.label_join import join_labels
from monitor.reading.panes import Panes
from monitor.reading.publish import Published, Publisher
from monitor.sources.contract import (
    Batch,
    CountingSource,
    CountRequest,
    IndicatorFlags,
    LabelJoin,
    LabelJoiningSource,
    Source,
)
from monitor.tasks import TASKS

__all__ = ["COUNTED_TASKS", "ReadPlan", "WindowsRead", "count_request"]

log = logging.getLogger(__name__)

#: Tasks whose every statistic is a count of rows by the columns the task reads.
COUNTED_TASKS = frozenset({"binary", "multiclass"})
#: Counted windows at least this large whose combinations are more than half their rows are said
#: once in the log: counting them saves little (scores of full precision, nearly one per row).
DISTINCT_ROWS = 10_000


@dataclass(frozen=True)
class WindowsRead:
    """What one read of a model's windows returned: rows, or counted combinations."""

    batch: Batch
    late_rows: int = 0  # rows found in sealed panes since they were kept
    pieces_read: int | None = None  # statements sent for fresh pieces and new panes (None: one whole read)
    changed_panes: int = 0  # sealed panes whose rows changed since they were kept


class ReadPlan:
    """How one model's windows are read: ``rows``, ``counts``, or counts through sealed ``panes``.

    ``panes`` are used only for counts whose labels come with the predictions: a label joined from
    its own table may still arrive after a pane was sealed.
    """

    def __init__(
        self,
        model: ModelConfig,
        source: Source,
        label_source: Source | None = None,
        panes: Panes | None = None,
    ) -> None:
        self.model = model
        self.source = source
        self.label_source = label_source
        labels = self._label_join()
        counts = (
            model.task in COUNTED_TASKS
            and isinstance(source, CountingSource)
            and (label_source is None or labels is not None)
        )
        self._counting = source if counts and isinstance(source, CountingSource) else None
        self._shape = count_request(model, (), labels) if self._counting is not None else None
        self.panes = panes if self._counting is not None and labels is None else None
        self._said_distinct = False

    @property
    def kind(self) -> Literal["rows", "counts", "panes"]:
        return "rows" if self._counting is None else "counts" if self.panes is None else "panes"

    def read(
        self,
        ranges: tuple[tuple[datetime, datetime], ...],
        start: datetime,
        end: datetime,
        now: datetime | None,
    ) -> WindowsRead:
        """``[start, end)``, with the 0/1 columns of ``ranges`` where counted: through the sealed panes
        at a scheduled ``now`` (``None``: an explicit range, read whole). A source that cannot count
        this time (its timestamps are of a form it cannot filter exactly, a column is missing) is
        read as rows; so are the panes' reads they cannot serve."""
        if self._counting is not None and self._shape is not None:
            request = replace(self._shape, ranges=ranges)
            source = self._counting
            if (
                self.panes is not None
                and now is not None
                and (source.reads_narrowly() or self.panes.resumable(request))
            ):
                through_panes = self.panes.read(source, request, start, end, now)
                if through_panes is not None:
                    self._say_if_distinct(through_panes.batch)
                    return WindowsRead(
                        through_panes.batch,
                        through_panes.late_rows,
                        through_panes.pieces_read,
                        through_panes.changed_panes,
                    )
            batch = source.read_counts(request, start, end)
            if batch is not None:
                self._say_if_distinct(batch)
                return WindowsRead(batch)
        return WindowsRead(self._read_rows(start, end))

    def publish(self, publisher: Publisher, now: datetime) -> Published:
        """The model's panes of the horizon ending ``now``, published (``models[].publish``)."""
        if self._counting is None or self._shape is None:
            raise SourceError(f"model {self.model.name}: only counted models publish (its source reads rows)")
        return publisher.publish(self._counting, self._shape, now)

    def _say_if_distinct(self, batch: Batch) -> None:
        """Once: a counted window whose combinations are nearly its rows - raw float scores."""
        rows, combinations = batch.n_rows, len(batch.frame)
        if self._said_distinct or rows < DISTINCT_ROWS or combinations <= rows / 2:
            return
        self._said_distinct = True
        advice = (
            "; score_decimals: 4 rounds the scores in the database to a few thousand values (each AUC "
            "then reports its rounding error), see docs/scaling.md"
            if self.model.score_decimals is None and self.model.columns.score
            else ""
        )
        log.info(
            "model %s: its window's %d rows are %d distinct combinations: counting them saves little%s",
            self.model.name,
            rows,
            combinations,
            advice,
        )

    def _read_rows(self, start: datetime, end: datetime) -> Batch:
        batch = self.source.read(start, end)
        if self.label_source is None:
            return batch
        # only labels that have arrived by `end` (a label table with arrival times is read up to now)
        return join_labels(batch, self.label_source.read(start, end), self.model)

    def _label_join(self) -> LabelJoin | None:
        """How the database joins the model's labels, when the source can join its label source."""
        labels, source = self.model.labels, self.source
        if labels is None or self.label_source is None or self.model.task not in COUNTED_TASKS:
            return None
        if not isinstance(source, LabelJoiningSource) or not source.bind_labels(self.label_source):
            return None
        return LabelJoin(
            labels.columns.id,
            labels.columns.label,
            labels.join_on or self.model.columns.id,
            self.model.columns.label or "label",
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
    if cols.weight:
        raw.append(cols.weight)  # a key: rows of one weight counted, the weight applied when cleaned
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
    return CountRequest(
        cols.timestamp,
        tuple(dict.fromkeys(raw)),
        tuple(flags),
        ranges,
        optional,
        cols.score if "score" in read else None,
        model.score_decimals,
        labels,
        texts=tuple(dict.fromkeys(texts)),
        model=cols.model,
    )
