"""One evaluation of one model: read its windows, drop bad rows, compute and judge the metrics.

Pure metric code lives in :mod:`metrics_core`; this module is the glue between a source's
rows and it. For each configured window at time ``now``:

- the *outcome window* ``[now - length, now)`` feeds metrics that need only predictions;
- the *label window*, shifted back by ``label_delay``, feeds metrics that need labels, so
  that labels that arrive days later have arrived.

The source is read once per evaluation, for the union of all windows. Everything the model's
``task:`` decides - the columns, how bad rows are recognised, which metrics are computed
(:func:`~monitor.tasks.metrics_for`) and which ``metrics_core`` evaluator computes them - comes
from :data:`monitor.tasks.TASKS`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType

import numpy as np
import pandas as pd

import metrics_core as mc
from metrics_core.engine.adjust import Adjustment
from metrics_core.stats.contrasts import Method
from monitor.config import ModelConfig, Settings
from monitor.core.errors import ConfigError
from monitor.evaluation.attributes import attributes
from monitor.evaluation.results import GroupStats, ModelEvaluation, WindowResult
from monitor.reading.frame import (
    TIMESTAMP,
    clean_rows,
    columns_for_frame,
    count_rows,
    labeled,
    task_data,
    weights,
)
from monitor.reading.label_join import join_labels
from monitor.reading.pane_store import PaneStore
from monitor.reading.panes import Panes, PanesRead
from monitor.reading.plan import count_request, counts_suffice, label_join
from monitor.sources import Batch, CountingSource, Source, build_source
from monitor.sources.count_sql import CountRequest, range_column
from monitor.tasks import TASKS, WindowRequest, metrics_for

__all__ = ["Evaluator", "build_evaluators"]


@dataclass(frozen=True)
class _Span:
    name: str
    start: datetime
    end: datetime
    label_start: datetime
    label_end: datetime


class Evaluator:
    """Evaluates one model's windows from its source (and label source)."""

    def __init__(
        self,
        model: ModelConfig,
        source: Source,
        label_source: Source | None = None,
        *,
        confidence: float = 0.95,
        adjust: Adjustment = "none",
        method: Method = "fixed",
        progress: Callable[[str], None] | None = None,
        pane_store: PaneStore | None = None,
    ) -> None:
        self.model = model
        self.source = source
        self.label_source = label_source
        self.confidence = confidence
        self.adjust = adjust
        self.method = method
        self.options = model.options.evaluate_kwargs()  # files named by options are read once, now
        self.panes = (
            Panes(model.panes, model.label_delay, model.name, pane_store) if model.panes.enabled else None
        )
        self._progress = progress or (lambda _msg: None)

    def spans(self, now: datetime) -> list[_Span]:
        d = self.model.label_delay
        try:
            return [
                _Span(w.name, now - w.length, now, now - d - w.length, now - d) for w in self.model.windows
            ]
        except OverflowError:  # datetime's own message, 'date value out of range', names nothing
            raise ConfigError(
                f"model {self.model.name}: its windows at {now.isoformat()} (less their length and the "
                f"label_delay, {d}) would begin before the year 1"
            ) from None

    def evaluate(
        self, now: datetime, *, start: datetime | None = None, end: datetime | None = None
    ) -> ModelEvaluation:
        """Evaluate every window at ``now``, or one explicit ``[start, end)`` window named ``range``."""
        t0 = time.perf_counter()
        explicit = start is not None and end is not None
        if start is not None and end is not None:
            if start >= end:
                raise ValueError(f"start {start} must be before end {end}")
            spans = [_Span("range", start, end, start, end)]
            now = end
        else:
            spans = self.spans(now)
        read_start = min(min(s.start, s.label_start) for s in spans)
        read_end = max(s.end for s in spans)
        self._progress(f"reading {self.model.name} [{read_start:%Y-%m-%d %H:%M}, {read_end:%Y-%m-%d %H:%M})")
        ranges = tuple(
            dict.fromkeys(r for s in spans for r in ((s.start, s.end), (s.label_start, s.label_end)))
        )
        counted = self._read_counts(ranges, read_start, read_end, None if explicit else now)
        batch = counted.batch if counted is not None else self._read(read_start, read_end)
        model = columns_for_frame(self.model, batch.frame)
        frame, rejected = clean_rows(batch.frame, model, counted=batch.counted)
        rejected.update(batch.rejected)
        t1 = time.perf_counter()
        within = _Ranges(frame, ranges if batch.counted else None)
        windows = []
        for span in spans:
            self._progress(f"computing {self.model.name} window {span.name}")
            windows.append(self._window(frame, span, model, within, batch.flagged))
        t2 = time.perf_counter()
        return ModelEvaluation(
            model=self.model.name,
            evaluated_at=now,
            duration_seconds=t2 - t0,
            windows=tuple(windows),
            rows_read=batch.n_rows,
            rejected=MappingProxyType(dict(rejected)),
            skipped_files=batch.skipped_files,
            read_seconds=t1 - t0,
            compute_seconds=t2 - t1,
            late_rows=counted.late_rows if counted is not None else 0,
            pieces_read=counted.pieces_read if counted is not None else None,
        )

    def _read_counts(
        self,
        ranges: tuple[tuple[datetime, datetime], ...],
        start: datetime,
        end: datetime,
        now: datetime | None,
    ) -> PanesRead | None:
        """The window's rows counted by the database, where the task and the source allow it:
        through the sealed panes at a scheduled ``now`` (``None``: an explicit range, read whole)."""
        source, labels_source = self.source, self.label_source
        if not isinstance(source, CountingSource) or not counts_suffice(self.model, source, labels_source):
            return None
        labels = label_join(self.model, source, labels_source)
        request = count_request(self.model, ranges, labels)
        # panes keep counts by label: a label joined from its own table may still arrive after sealing
        if (
            self.panes is not None
            and now is not None
            and labels is None
            and (source.narrow_reads or self.panes.resumable(request))
        ):
            through_panes = self.panes.read(source, request, start, end, now)
            if through_panes is not None:
                return through_panes
        batch = source.read_counts(request, start, end)
        if batch is not None and labels is not None:
            assert isinstance(labels_source, CountingSource) and self.model.labels is not None
            arrival = self.model.labels.columns.timestamp
            assert arrival is not None, "joins_labels_of requires arrival times"
            # the label rows the row path rejects (arrival times it cannot read), counted alike
            arrived = labels_source.read_counts(CountRequest(arrival, (), (), ((start, end),)), start, end)
            if arrived is None:
                return None
            batch.rejected.update(arrived.rejected)
        return None if batch is None else PanesRead(batch, late_rows=0, pieces_read=None)

    def _read(self, start: datetime, end: datetime) -> Batch:
        batch = self.source.read(start, end)
        if self.label_source is None:
            return batch
        # only labels that have arrived by `end` (a label table with arrival times is read up to now)
        return join_labels(batch, self.label_source.read(start, end), self.model)

    def _window(
        self, frame: pd.DataFrame, span: _Span, model: ModelConfig, within: _Ranges, flagged: frozenset[str]
    ) -> WindowResult:
        """One window; ``model`` has the columns this evaluation's log has (see ``columns_for_frame``)."""
        outcome = frame.loc[within(span.start, span.end)]
        same = span.start == span.label_start and span.end == span.label_end
        labeled_rows = outcome if same else frame.loc[within(span.label_start, span.label_end)]
        specs = metrics_for(model)
        outcome_specs = [s.name for s in specs if "y_true" not in s.requires]
        label_specs = [s.name for s in specs if "y_true" in s.requires]

        values: list[mc.MetricValue] = []
        model_values: list[mc.ModelValue] = []
        n_alerting = sum(1 for s in specs if not s.informational and s.level == "group")
        out_report, out_attrs = self._report(
            outcome, outcome_specs if not same else [s.name for s in specs], n_alerting, model, flagged
        )
        values += out_report.values
        model_values += out_report.model
        if not same and label_specs:
            lab_report, _ = self._report(labeled_rows, label_specs, n_alerting, model, flagged)
            values += lab_report.values
            model_values += lab_report.model
        # The binary engine also reports the overall AUC, the anchor of the AUC family's ranges: never
        # for a model without labels, where it could only ever be NaN (and no dashboard draws it).
        task = TASKS[model.task]
        values = [v for v in values if task.can_compute(v.metric, model.columns)]
        model_values = [v for v in model_values if task.can_compute(v.metric, model.columns)]
        groups = self._group_stats(outcome, labeled_rows, out_attrs, flagged)
        dropped = {a.name: len(a.dropped) for a in out_attrs if a.dropped}
        missing = {a.name: a.n_missing for a in out_attrs if a.n_missing}
        return WindowResult(
            window=span.name,
            start=span.start,
            end=span.end,
            label_start=span.label_start,
            label_end=span.label_end,
            values=tuple(values),
            model_values=tuple(_dedupe_model_values(model_values)),
            groups=tuple(groups),
            n_rows=count_rows(outcome),
            n_labeled=count_rows(labeled_rows, labeled(labeled_rows)),
            dropped_groups=MappingProxyType(dropped),
            missing_group_rows=MappingProxyType(missing),
            n_label_rows=count_rows(labeled_rows),
        )

    def _attributes(self, frame: pd.DataFrame, flagged: frozenset[str]) -> list[mc.Attribute]:
        return attributes(
            self.model.groups, frame, max_groups=self.model.max_groups, weight=weights(frame), flagged=flagged
        )

    def _report(
        self,
        frame: pd.DataFrame,
        metrics: Sequence[str],
        n_alerting: int,
        model: ModelConfig,
        flagged: frozenset[str],
    ) -> tuple[mc.Report, list[mc.Attribute]]:
        attrs = self._attributes(frame, flagged)
        n_comparisons = sum(len(a.comparisons) for a in attrs)
        request = WindowRequest(
            metrics=metrics,
            confidence=self.confidence,
            fair_ranges=model.fair_ranges,
            min_samples=model.min_samples,
            model=model,
            options=self.options,
            # one family per window: every alerting metric of the window (outcome and label) x every group
            adjust=self.adjust,
            family_size=max(1, n_alerting * max(1, n_comparisons)),
            method=self.method,
        )
        return TASKS[model.task].evaluate(task_data(frame), attrs, request), attrs

    def _group_stats(
        self,
        outcome: pd.DataFrame,
        labeled_rows: pd.DataFrame,
        attrs: list[mc.Attribute],
        flagged: frozenset[str],
    ) -> list[GroupStats]:
        """Group sizes in the outcome window; label coverage in the label window (behind label metrics)."""
        label_attrs = (
            {a.name: a for a in self._attributes(labeled_rows, flagged)}
            if labeled_rows is not outcome
            else {}
        )
        has_label = labeled(labeled_rows)
        stats = []
        for a in attrs:
            la = label_attrs.get(a.name, a)
            for c in a.comparisons:
                size = count_rows(outcome, np.asarray(a.masks[c.key]))
                in_label = (
                    np.asarray(la.masks[c.key])
                    if c.key in la.masks
                    else np.zeros(len(labeled_rows), dtype=bool)
                )
                stats.append(
                    GroupStats(
                        c.attribute,
                        c.group,
                        c.reference,
                        size,
                        count_rows(labeled_rows, in_label & has_label),
                        count_rows(labeled_rows, in_label),
                    )
                )
        return stats


class _Ranges:
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


def _dedupe_model_values(values: list[mc.ModelValue]) -> list[mc.ModelValue]:
    seen: dict[tuple[str, str], mc.ModelValue] = {}
    for v in values:
        seen.setdefault((v.metric, v.attribute), v)
    return list(seen.values())


def build_evaluators(
    settings: Settings,
    *,
    memory_sources: Mapping[str, Source] | None = None,
    progress: Callable[[str], None] | None = None,
    persist_panes: bool = False,
) -> dict[str, Evaluator]:
    """An :class:`Evaluator` per configured model (sources are created, not yet read).

    ``persist_panes``: models with ``panes.directory`` keep their sealed panes there too (the
    service; one-off commands keep them in memory, so they never touch the service's files). A
    folder that cannot be written is a :class:`~monitor.core.errors.ConfigError`.
    """
    out: dict[str, Evaluator] = {}
    try:
        for i, model in enumerate(settings.models):
            store = None
            if persist_panes and model.panes.enabled and model.panes.directory:
                key = f"models[{i}].panes.directory"
                store = PaneStore.open(model.panes.directory, model.name, model.source, key)
            out[model.name] = _evaluator(model, settings, memory_sources, progress, store)
    except BaseException:  # a later model failed: close the sources already built, then raise
        for built in out.values():
            built.source.close()
            if built.label_source is not None:
                built.label_source.close()
        raise
    return out


def _evaluator(
    model: ModelConfig,
    settings: Settings,
    memory: Mapping[str, Source] | None,
    progress: Callable[[str], None] | None,
    pane_store: PaneStore | None = None,
) -> Evaluator:
    source = build_source(model.source, timestamp_column=model.columns.timestamp, memory=memory)
    label_source = None
    if model.labels is not None:
        label_source = build_source(
            model.labels.source, timestamp_column=model.labels.columns.timestamp, memory=memory
        )
    return Evaluator(
        model,
        source,
        label_source,
        confidence=settings.alerts.confidence,
        adjust=settings.alerts.adjust,
        method=settings.alerts.method,
        progress=progress,
        pane_store=pane_store,
    )
