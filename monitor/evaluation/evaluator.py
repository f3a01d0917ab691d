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

import dataclasses
import functools
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import NormalDist
from types import MappingProxyType
from typing import Any, Self

import numpy as np
import pandas as pd

import metrics_core as mc
from monitor.config import GroupConfig, ModelConfig
from monitor.core.errors import ConfigError
from monitor.core.suggest import did_you_mean
from monitor.evaluation.attributes import AbsentReference, attributes, comparison_sample
from monitor.evaluation.nowcast import (
    LABEL,
    SCORE,
    Calibration,
    CalibrationCheck,
    Labelled,
    calibration_checks,
    cross_fitted,
    design_effects,
    distrust,
    fit_calibration,
    recalibrated,
    resampled_calibrations,
    soft_labelled,
    widened,
)
from monitor.evaluation.onset import Segments
from monitor.evaluation.results import GroupStats, ModelEvaluation, WindowResult, Words
from monitor.reading.frame import (
    BIN,
    WEIGHT_SQUARES,
    WindowMasks,
    clean_rows,
    columns_for_frame,
    count_rows,
    effective_sample,
    group_columns,
    labeled,
    per_bin,
    row_counts,
    task_data,
    weights,
)
from monitor.reading.pane_store import PaneStore
from monitor.reading.panes import Panes
from monitor.reading.plan import COUNTED_TASKS, ReadPlan
from monitor.reading.publish import Publisher
from monitor.sources.contract import FleetSource, Source
from monitor.tasks import TASKS, WindowRequest, metrics_for

log = logging.getLogger(__name__)

__all__ = ["Evaluator"]


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
        adjust: mc.Adjustment = "none",
        method: mc.Method = "fixed",
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
        panes = Panes(model.panes, model.label_delay, model.name, pane_store) if model.panes.enabled else None
        self.plan = ReadPlan(model, source, label_source, panes)  # rows, counts or panes: decided once
        self.publisher = Publisher(model, model.publish) if model.publish is not None else None
        self._stale_said: set[str] = set()  # publishers whose silence was logged
        self._progress = progress or (lambda _msg: None)
        self._absent_said: set[tuple[str, str, str]] = set()  # absent references already warned of

    @property
    def panes(self) -> Panes | None:
        """The sealed panes its counts are read through, if its reads use them."""
        return self.plan.panes

    def close(self) -> None:
        """Close its sources (a source closed twice is closed once) and let its panes' folder go."""
        if self.plan.panes is not None:
            self.plan.panes.close()
        if self.publisher is not None:
            self.publisher.close()
        self.source.close()
        if self.label_source is not None and self.label_source is not self.source:
            self.label_source.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        published = None
        if self.publisher is not None and not explicit:
            published = self.plan.publish(self.publisher, now)
            assert self.model.publish is not None
            if not self.model.publish.evaluate:  # a sidecar: its counts are judged centrally
                return ModelEvaluation(
                    model=self.model.name,
                    evaluated_at=now,
                    duration_seconds=time.perf_counter() - t0,
                    windows=(),
                    rows_read=published.rows,
                    read_seconds=time.perf_counter() - t0,
                    published_panes=published.panes_written,
                )
        read_start = min(min(s.start, s.label_start) for s in spans)
        read_end = max(s.end for s in spans)
        self._progress(f"reading {self.model.name} [{read_start:%Y-%m-%d %H:%M}, {read_end:%Y-%m-%d %H:%M})")
        ranges = tuple(
            dict.fromkeys(r for s in spans for r in ((s.start, s.end), (s.label_start, s.label_end)))
        )
        read = self.plan.read(ranges, read_start, read_end, None if explicit else now)
        batch = read.batch
        model = columns_for_frame(self.model, batch.frame)
        frame, rejected = clean_rows(batch.frame, model, counted=batch.counted)
        rejected.update(batch.rejected)
        t1 = time.perf_counter()
        within = WindowMasks(frame, ranges if batch.counted else None)
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
            attribute_columns=MappingProxyType(
                {
                    g.attribute: (g.column,) if g.kind == "categorical" and g.column else tuple(g.columns)
                    for g in self.model.groups
                    if g.kind != "indicator"
                }
            ),
            rows_read=batch.n_rows,
            words=Words(
                self.model.wording.outcome or f"{self.model.favorable} prediction",
                self.model.wording.subjects,
            ),
            rejected=MappingProxyType(dict(rejected)),
            skipped_files=batch.skipped_files,
            read_seconds=t1 - t0,
            compute_seconds=t2 - t1,
            late_rows=read.late_rows,
            pieces_read=read.pieces_read,
            pane_store_up=None if self.plan.panes is None else self.plan.panes.store_up,
            changed_panes=read.changed_panes,
            published_panes=None if published is None else published.panes_written,
            **self._fleet(now),
        )

    def segments(
        self, start: datetime, end: datetime, step: timedelta, *, attribute: str, group: str, metric: str
    ) -> Segments:
        """``metric`` of ``attribute=group`` on any run of ``step``-long bins of ``[start, end)`` (what
        :func:`~monitor.evaluation.onset.onset` searches): one read of the span, with a 0/1 column per
        bin where counted, its rows then counted per bin for the tasks that count (binary, multiclass);
        each run judged on its own at a fixed, unadjusted level, once."""
        edges = [start]
        while edges[-1] + step < end:
            edges.append(edges[-1] + step)
        edges.append(end)
        bins = tuple(itertools.pairwise(edges))
        read = self.plan.read(bins, start, end, None)
        model = columns_for_frame(self.model, read.batch.frame)
        frame, _ = clean_rows(read.batch.frame, model, counted=read.batch.counted)
        within = WindowMasks(frame, bins if read.batch.counted else None)
        groups = [g for g in self.model.groups if g.attribute == attribute]
        masks = [within(a, b) for a, b in bins]
        # counted per bin where the task's evaluator weighs entries by their counts (binary, multiclass);
        # the others read rows, each once
        frame = per_bin(
            frame,
            masks,
            [c for g in groups for c in group_columns(g)],
            counted=self.model.task in COUNTED_TASKS,
        )
        fixed: dict[str, Any] = {"adjust": "none", "method": "fixed"}

        @functools.cache
        def value(i: int, j: int) -> mc.MetricValue | None:
            rows = frame.loc[(frame[BIN] >= i) & (frame[BIN] < j)]
            attrs = self._attributes(rows, read.batch.flagged, groups)
            report, _ = self._compute(rows, [metric], 1, model, read.batch.flagged, attrs=attrs, **fixed)
            return next((v for v in report.values if v.group == group and v.attribute == attribute), None)

        return Segments(tuple(edges), value, metric)

    def _fleet(self, now: datetime) -> dict[str, Any]:
        """A published source's publishers, when each last published, and which are silent."""
        if not isinstance(self.source, FleetSource):
            return {}
        seen = self.source.publishers()
        stale_after = self.source.config.stale_after
        stale = tuple(sorted(p for p, at in seen.items() if at is None or now - at > stale_after))
        for name in set(stale) - self._stale_said:
            log.warning(
                "model %s: publisher %s has not published for more than %s; its panes still count "
                "until they leave the windows",
                self.model.name,
                name,
                stale_after,
            )
        self._stale_said = set(stale)
        times = {p: float("nan") if at is None else at.timestamp() for p, at in seen.items()}
        return {"publishers": MappingProxyType(times), "stale_publishers": stale}

    def _window(
        self,
        frame: pd.DataFrame,
        span: _Span,
        model: ModelConfig,
        within: WindowMasks,
        flagged: frozenset[str],
    ) -> WindowResult:
        """One window; ``model`` has the columns this evaluation's log has (see ``columns_for_frame``)."""
        outcome = frame.loc[within(span.start, span.end)]
        same = span.start == span.label_start and span.end == span.label_end
        labeled_rows = outcome if same else frame.loc[within(span.label_start, span.label_end)]
        specs = metrics_for(model)
        outcome_specs = [s.name for s in specs if "y_true" not in s.requires]
        label_specs = [s.name for s in specs if "y_true" in s.requires]
        quoted = _quoted_rates(specs)  # computed for the words, kept apart from the values
        outcome_specs += [r for r in quoted if "y_true" not in mc.REGISTRY[r].requires]
        label_specs += [r for r in quoted if "y_true" in mc.REGISTRY[r].requires]

        values: list[mc.MetricValue] = []
        model_values: list[mc.ModelValue] = []
        n_alerting = sum(1 for s in specs if not s.informational and s.level == "group")
        out_report, out_attrs = self._compute(
            outcome,
            outcome_specs if not same else [*(s.name for s in specs), *quoted],
            n_alerting,
            model,
            flagged,
        )
        values += out_report.values
        # a model value that needs labels (the overall AUC, the AUC family's anchor) is the label
        # window's: the outcome window's rows may have no labels yet, or only the first few - also
        # when no group metric of the model needs labels (the overall AUC came from the outcome window)
        out_model = [v for v in out_report.model if same or not _needs_labels(v.metric)]
        if not same and (label_specs or len(out_model) < len(out_report.model)):
            lab_report, _ = self._compute(labeled_rows, label_specs, n_alerting, model, flagged)
            values += lab_report.values
            model_values += [v for v in lab_report.model if _needs_labels(v.metric)]
        model_values += out_model
        # The binary engine also reports the overall AUC, the anchor of the AUC family's ranges: never
        # for a model without labels, where it could only ever be NaN (and no dashboard draws it).
        task = TASKS[model.task]
        metrics = {v.metric for v in values} | {v.metric for v in model_values}
        computable = {
            m for m in metrics if task.can_compute(m, model.columns)
        }  # once per metric, not per value
        rates = [v for v in values if v.metric in quoted and v.metric in computable]
        values = [v for v in values if v.metric in computable and v.metric not in quoted]
        model_values = [v for v in model_values if v.metric in computable]
        label_specs = [m for m in label_specs if m not in quoted]
        estimates, calibration = (
            self._nowcast(outcome, labeled_rows, label_specs, n_alerting, model, flagged)
            if model.nowcast.enabled and label_specs
            else ((), ())
        )
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
            estimates=tuple(estimates),
            calibration=tuple(calibration),
            rates=tuple(rates),
            needs_labels=any("y_true" in s.requires for s in specs),
        )

    def _nowcast(
        self,
        outcome: pd.DataFrame,
        labeled_rows: pd.DataFrame,
        metrics: Sequence[str],
        n_alerting: int,
        model: ModelConfig,
        flagged: frozenset[str],
    ) -> tuple[list[mc.MetricValue], list[CalibrationCheck]]:
        """The outcome window's label metrics estimated from its scores where labels are pending, and
        each group's calibration on the label window's labelled rows (:mod:`.nowcast`)."""
        known = labeled_rows.loc[labeled(labeled_rows)]
        score, label = known[SCORE].to_numpy(dtype=np.float64), known[LABEL].to_numpy(dtype=np.float64)
        weight = row_counts(effective_sample(known))  # sampling weights: as many rows as they are worth
        if count_rows(known) < model.min_samples or label.min(initial=1.0) == label.max(initial=0.0):
            return [], []  # nothing to calibrate on yet (said by the realised values' reasons)
        nowcast = model.nowcast
        known_attrs = self._attributes(known, flagged)
        method, rows = nowcast.calibration, nowcast.group_map_rows
        labelled = Labelled(score, label, weight, known_attrs)
        calibration = fit_calibration(labelled, method, group_rows=rows)
        probabilities = cross_fitted(labelled, calibration)
        checks = calibration_checks(
            known_attrs,
            probabilities,
            label,
            weight,
            confidence=self.confidence,
            tolerance=nowcast.tolerance,
            min_samples=model.min_samples,
            own={name: set(groups) for name, groups in calibration.fits.items()},
        )
        if not outcome[LABEL].isna().any():
            return [], checks  # every label is in: the realised values are the window's
        # every row of the window weighs its probability: the labels that came early are a selection (a
        # default is known before a repayment is), and would be counted beside the pending rows' q
        scores = outcome[SCORE].to_numpy(dtype=np.float64)
        attrs = self._attributes(soft_labelled(outcome, calibration.pooled(scores), every_row=True), flagged)
        estimate = functools.partial(
            self._estimates, outcome, scores, attrs, metrics, n_alerting, model, flagged
        )
        fitted = method == "isotonic" or any(calibration.fits.values())
        resampled = (
            resampled_calibrations(labelled, calibration, resamples=nowcast.resamples) if fitted else []
        )
        if not resampled:  # identity and no group's own map: nothing fitted to be wrong about
            return distrust(estimate(calibration), checks), checks
        # the map's own error: the estimates again with each resampled calibration; their spread against
        # the sampling error (unadjusted fixed intervals, of a known z) gives each estimate its design
        # effect, by whose square root its interval (the engine's: adjusted, anytime) is widened
        fixed: dict[str, Any] = {"adjust": "none", "method": "fixed"}
        draws = [estimate(again, **fixed) for again in resampled]
        z = NormalDist().inv_cdf(0.5 + self.confidence / 2)
        judged = estimate(calibration)
        unadjusted = (
            judged if (self.adjust, self.method) == ("none", "fixed") else estimate(calibration, **fixed)
        )
        estimates = widened(judged, design_effects(unadjusted, draws, z=z), min_samples=model.min_samples)
        return distrust(estimates, checks), checks

    def _estimates(
        self,
        outcome: pd.DataFrame,
        scores: np.ndarray,
        attrs: list[mc.Attribute],
        metrics: Sequence[str],
        n_alerting: int,
        model: ModelConfig,
        flagged: frozenset[str],
        calibration: Calibration,
        **overrides: Any,
    ) -> list[mc.MetricValue]:
        """The outcome window's label metrics with every row soft-labelled by ``calibration`` (``attrs``:
        the soft-labelled frame's attributes): on the pooled map's probabilities, and again per
        attribute whose groups have maps of their own - one family, the pooled window's anchors."""
        pooled = calibration.pooled(scores)
        soft = soft_labelled(outcome, pooled, every_row=True)
        own = [a for a in attrs if calibration.fits.get(a.name)]
        if not own:
            return list(
                self._compute(soft, metrics, n_alerting, model, flagged, attrs=attrs, **overrides)[0].values
            )
        # one family across the runs (Holm within each run is then stricter than over the whole), and
        # the pooled attributes' run holds only their values: a replaced value must not count in it
        overrides["family_size"] = max(1, n_alerting * max(1, sum(len(a.comparisons) for a in attrs)))
        pooled_attrs = [a for a in attrs if not calibration.fits.get(a.name)]
        report, _ = self._compute(soft, metrics, n_alerting, model, flagged, attrs=pooled_attrs, **overrides)
        values = list(report.values)
        overrides["anchors"] = {v.metric: v.value for v in report.model}  # the AUC family's, pooled
        for attr in own:
            soft = soft_labelled(
                outcome, recalibrated(pooled, attr, calibration.fits[attr.name]), every_row=True
            )
            values += self._compute(soft, metrics, n_alerting, model, flagged, attrs=[attr], **overrides)[
                0
            ].values
        return values

    def _attributes(
        self, frame: pd.DataFrame, flagged: frozenset[str], groups: Sequence[GroupConfig] | None = None
    ) -> list[mc.Attribute]:
        # sampling weights: a group's min_size and rank among max_groups by its effective sample
        return attributes(
            self.model.groups if groups is None else groups,
            frame,
            max_groups=self.model.max_groups,
            weight=weights(effective_sample(frame)),
            flagged=flagged,
            absent=self._absent_reference,
        )

    def _absent_reference(self, absent: AbsentReference) -> None:
        """A reference that names no value of its column: loud, once per reference (a typo in
        ``reference`` would otherwise make every comparison undefined, and no alert could fire)."""
        key = (absent.attribute, absent.column, absent.reference)
        if key in self._absent_said:
            return
        self._absent_said.add(key)
        shown = ", ".join(absent.seen[:20]) + (
            f" and {len(absent.seen) - 20} more" if len(absent.seen) > 20 else ""
        )
        log.warning(
            "model %s: the reference %r of attribute %s is no value of column %s in this window%s "
            "(its values: %s): every comparison with it is undefined (insufficient_data) until the "
            "config's reference names a value the log holds",
            self.model.name,
            absent.reference,
            absent.attribute,
            absent.column,
            did_you_mean(absent.reference, absent.seen),
            shown,
        )

    def _compute(
        self,
        frame: pd.DataFrame,
        metrics: Sequence[str],
        n_alerting: int,
        model: ModelConfig,
        flagged: frozenset[str],
        *,
        attrs: list[mc.Attribute] | None = None,
        **overrides: Any,
    ) -> tuple[mc.Report, list[mc.Attribute]]:
        """The report of ``metrics`` on ``frame``; ``attrs``: the frame's attributes, when already
        built; ``overrides``: fields of the request."""
        attrs = attrs if attrs is not None else self._attributes(frame, flagged)
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
        request = dataclasses.replace(request, **overrides)
        task = TASKS[model.task]
        if WEIGHT_SQUARES not in frame.columns:
            return task.evaluate(task_data(frame), attrs, request), attrs
        # sampling weights: the model values on the window's effective sample; each comparison on its
        # own rows, its group and its reference each on its own effective sample
        whole = task.evaluate(task_data(effective_sample(frame)), attrs, request)
        # the fair ranges relative to the window's overall AUC; a step-down (holm) over the whole family
        # would need every value at once: bonferroni, its single-step bound
        anchors = request.anchors or {v.metric: v.value for v in whole.model}
        adjust = "bonferroni" if request.adjust == "holm" else request.adjust
        request = dataclasses.replace(request, anchors=anchors, adjust=adjust)
        values = [
            value
            for attr in attrs
            for comparison in attr.comparisons
            for part, one in [comparison_sample(frame, attr, comparison)]
            for value in task.evaluate(task_data(part), [one], request).values
        ]
        return dataclasses.replace(whole, values=tuple(values)), attrs

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
        outcome_rows = row_counts(outcome)
        label_rows = row_counts(labeled_rows)
        stats = []
        for a in attrs:
            la = label_attrs.get(a.name, a)
            keys = [c.key for c in a.comparisons]
            sizes = a.sums(outcome_rows, keys)
            in_label = la.sums(label_rows, keys)
            with_label = la.sums(label_rows * has_label, keys)
            stats += [
                GroupStats(
                    c.attribute,
                    c.group,
                    c.reference,
                    round(sizes[c.key]),
                    round(with_label[c.key]),
                    round(in_label[c.key]),
                )
                for c in a.comparisons
            ]
        return stats


def _quoted_rates(specs: Sequence[mc.MetricSpec]) -> list[str]:
    """The per-group rates behind the judged differences and ratios of one rate that are not judged
    or exported themselves: selection_rate behind disparate impact, true_positive_rate behind equal
    opportunity (informational, cheap: the same counts)."""
    names = {s.name for s in specs}
    behind = {
        s.support[0]
        for s in specs
        if not s.informational and s.family == "classification" and len(s.support) == 1
    }
    return sorted(
        r for r in behind - names if (spec := mc.REGISTRY.get(r)) is not None and spec.informational
    )


def _needs_labels(metric: str) -> bool:
    spec = mc.REGISTRY.get(metric)
    return spec is not None and "y_true" in spec.requires


def _dedupe_model_values(values: list[mc.ModelValue]) -> list[mc.ModelValue]:
    seen: dict[tuple[str, str], mc.ModelValue] = {}
    for v in values:
        seen.setdefault((v.metric, v.attribute), v)
    return list(seen.values())
