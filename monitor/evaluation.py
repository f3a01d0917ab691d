"""One evaluation of one model: read its windows, drop bad rows, compute and judge the metrics.

Pure metric code lives in :mod:`metrics_core`; this module is the glue between a source's
rows and it. For each configured window at time ``now``:

- the *outcome window* ``[now - length, now)`` feeds metrics that need only predictions;
- the *label window*, shifted back by ``label_delay``, feeds metrics that need labels, so
  that labels that arrive days later have arrived.

The source is read once per evaluation, for the union of all windows.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType

import numpy as np
import pandas as pd

import metrics_core as mc
from monitor.config import TASK_COLUMNS, GroupConfig, ModelConfig, Settings
from monitor.errors import SourceError
from monitor.results import GroupStats, ModelEvaluation, WindowResult
from monitor.sources import Batch, Source, build_source
from monitor.tasks import PREFIX, clean_task_rows, evaluate_task, family_module, load_task_options, task_data

__all__ = ["Evaluator", "build_evaluators", "clean_rows"]

_BINARY_FAMILIES = ("classification", "ranking", "model")

# Canonical column names inside the pipeline.
SCORE, PRED, LABEL, TS = "__score", "__pred", "__label", "__ts"


@dataclass(frozen=True)
class _Span:
    name: str
    start: datetime
    end: datetime
    label_start: datetime
    label_end: datetime


def clean_rows(frame: pd.DataFrame, model: ModelConfig) -> tuple[pd.DataFrame, Counter[str]]:
    """Canonical score / prediction / label columns; bad rows dropped and counted by reason.

    - score not a finite number (or outside ``score_range``): ``score_invalid`` /
      ``score_out_of_range``;
    - predicted class not 0/1: ``prediction_invalid``;
    - label not a number in [0, 1]: ``label_invalid`` (a missing label is not bad: it has
      not arrived yet); probability labels (Jigsaw's ``target``) are binarised at >= 0.5.
    """
    model = _columns_for_frame(model, frame)
    cols = model.columns
    rejected: Counter[str] = Counter()
    needed = [c for c in _task_columns(model) if c]
    if cols.model:
        needed.append(cols.model)  # a missing model column must not silently mix every model's rows
    needed += [c for g in model.groups for c in _group_columns(g)]
    missing = [c for c in dict.fromkeys(needed) if c not in frame.columns]
    if missing and frame.empty:
        # nothing logged yet in this window (a files source with no rows has no columns to show)
        frame = frame.assign(**{c: pd.Series(dtype="float64") for c in missing})
        missing = []
    if missing:
        raise SourceError(f"column(s) {missing} missing from the source; it has {list(frame.columns)}")
    if cols.model and cols.model in frame.columns:
        frame = frame.loc[frame[cols.model].astype("string") == model.name]
    if model.task != "binary":
        out_task, rejected = clean_task_rows(frame, model)
        out_task[TS] = frame.loc[out_task.index, cols.timestamp]
        for c in dict.fromkeys(c for g in model.groups for c in _group_columns(g)):
            out_task[c] = frame.loc[out_task.index, c]
        return out_task.reset_index(drop=True), rejected
    keep = np.ones(len(frame), dtype=bool)
    out = pd.DataFrame(index=frame.index)

    def reject(mask: np.ndarray, reason: str) -> None:
        new = mask & keep
        if new.any():
            rejected[reason] += int(new.sum())
            keep[new] = False

    if cols.score:
        score = pd.to_numeric(frame[cols.score], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        reject(~np.isfinite(score), "score_invalid")
        if model.score_range is not None:
            lo, hi = model.score_range
            with np.errstate(invalid="ignore"):
                reject((score < lo) | (score > hi), "score_out_of_range")
        out[SCORE] = score
    if cols.prediction:
        pred = pd.to_numeric(frame[cols.prediction], errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
        reject(~np.isin(pred, (0.0, 1.0)), "prediction_invalid")
        out[PRED] = pred
    if cols.label:
        raw = frame[cols.label]
        label = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        unparseable = np.isnan(label) & raw.notna().to_numpy()
        with np.errstate(invalid="ignore"):
            reject(unparseable | (label < 0) | (label > 1), "label_invalid")
            out[LABEL] = np.where(np.isnan(label), np.nan, (label >= 0.5).astype(np.float64))
    else:
        out[LABEL] = np.nan
    out[TS] = frame[cols.timestamp]
    for c in dict.fromkeys(c for g in model.groups for c in _group_columns(g)):
        out[c] = frame[c]
    return out.loc[keep].reset_index(drop=True), rejected


def _id_text(values: pd.Series) -> pd.Series:
    """Ids as text, so that 17, 17.0 (an integer column with a NULL) and "17" join; missing stays NA."""

    def text(v: object) -> str | None:
        if v is None or (isinstance(v, float) and v != v):
            return None
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    return values.astype(object).map(text).astype("string")


#: The columns each task reads (binary: score, prediction, label).
_TASK_READS: dict[str, tuple[str, ...]] = {
    "binary": ("score", "prediction", "label"),
    "multiclass": ("prediction", "label"),
    "regression": ("score", "label"),
    "recommender": ("user", "item", "rank", "score", "label"),
    "clustering": ("cluster",),
    "text": ("text",),
}


def _columns_for_frame(model: ModelConfig, frame: pd.DataFrame) -> ModelConfig:
    """Drop the columns a task does not read, and optional defaults (``score``, ``label``) the log lacks.

    A multiclass config written without ``score: null`` must not require a ``score`` column it
    never reads; a column the user named explicitly stays required.
    """
    if model.task == "binary":
        return model
    cols = model.columns
    reads = _TASK_READS[model.task]
    update: dict[str, None] = {}
    for name in ("score", "prediction", "label"):
        value = getattr(cols, name)
        if value is None:
            continue
        unread = name not in reads
        absent_default = name not in cols.model_fields_set and name not in TASK_COLUMNS[model.task]
        if unread or (absent_default and value not in frame.columns):
            update[name] = None
    return model.model_copy(update={"columns": cols.model_copy(update=update)}) if update else model


def _task_columns(model: ModelConfig) -> list[str | None]:
    cols = model.columns
    return [getattr(cols, name) for name in _TASK_READS[model.task]] + list(cols.features)


def _labeled(frame: pd.DataFrame) -> np.ndarray:
    for column in (LABEL, PREFIX + "y_true"):
        if column in frame.columns:
            return frame[column].notna().to_numpy()
    return np.zeros(len(frame), dtype=bool)


def _group_values(values: pd.Series) -> np.ndarray:
    """Categorical values with missing ones as None; a non-scalar cell (a JSON list) counts as missing."""

    def scalar(v: object) -> object:
        if v is None or isinstance(v, list | tuple | dict | set | np.ndarray):
            return None
        return None if isinstance(v, float) and v != v else v

    return np.array([scalar(v) for v in values.astype(object)], dtype=object)


def _group_columns(g: GroupConfig) -> list[str]:
    return list(g.columns) if g.kind != "categorical" else [g.column or ""]


class Evaluator:
    """Evaluates one model's windows from its source (and label source)."""

    def __init__(
        self,
        model: ModelConfig,
        source: Source,
        label_source: Source | None = None,
        *,
        confidence: float = 0.95,
        adjust: str = "none",
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.model = model
        self.source = source
        self.label_source = label_source
        self.confidence = confidence
        self.adjust = adjust
        self.options = load_task_options(model.task, model.options)
        self._progress = progress or (lambda _msg: None)

    def spans(self, now: datetime) -> list[_Span]:
        d = self.model.label_delay
        return [_Span(w.name, now - w.length, now, now - d - w.length, now - d) for w in self.model.windows]

    def evaluate(
        self, now: datetime, *, start: datetime | None = None, end: datetime | None = None
    ) -> ModelEvaluation:
        """Evaluate every window at ``now``, or one explicit ``[start, end)`` window named ``range``."""
        t0 = time.perf_counter()
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
        batch = self._read(read_start, read_end)
        rows_read = len(batch.frame)
        frame, rejected = clean_rows(batch.frame, self.model)
        rejected.update(batch.rejected)
        t1 = time.perf_counter()
        windows = []
        for span in spans:
            self._progress(f"computing {self.model.name} window {span.name}")
            windows.append(self._window(frame, span))
        t2 = time.perf_counter()
        return ModelEvaluation(
            model=self.model.name,
            evaluated_at=now,
            duration_seconds=t2 - t0,
            windows=tuple(windows),
            rows_read=rows_read,
            rejected=MappingProxyType(dict(rejected)),
            read_seconds=t1 - t0,
            compute_seconds=t2 - t1,
        )

    def _read(self, start: datetime, end: datetime) -> Batch:
        batch = self.source.read(start, end)
        if self.label_source is None:
            return batch
        labels_cfg = self.model.labels
        assert labels_cfg is not None
        # only labels that have arrived by `end` (a label table with arrival times is read up to now)
        lab = self.label_source.read(start, end)
        id_col, label_col = labels_cfg.columns.id, labels_cfg.columns.label
        missing = [c for c in (id_col, label_col) if c not in lab.frame.columns]
        if missing:
            raise SourceError(f"label source: column(s) {missing} missing; it has {list(lab.frame.columns)}")
        labels = lab.frame
        if labels_cfg.columns.timestamp is not None:
            # the latest label of an id wins (a relabel replaces the first judgement): order by arrival
            labels = labels.sort_values(labels_cfg.columns.timestamp, kind="stable")
        labels = labels.assign(__join_key=_id_text(labels[id_col]))
        labels = labels.dropna(subset=["__join_key"]).drop_duplicates("__join_key", keep="last")
        labels = labels[["__join_key", label_col]].rename(columns={label_col: "__joined_label"})
        frame = batch.frame
        pred_id = labels_cfg.join_on or self.model.columns.id
        if pred_id not in frame.columns:
            raise SourceError(f"column {pred_id!r} (the prediction id to join labels on) is missing")
        frame = frame.assign(__join_key=_id_text(frame[pred_id]))
        merged = frame.merge(labels, on="__join_key", how="left")
        label_name = self.model.columns.label or "label"
        if label_name in merged.columns:
            merged[label_name] = merged[label_name].where(
                merged[label_name].notna(), merged["__joined_label"]
            )
        else:
            merged[label_name] = merged["__joined_label"]
        merged = merged.drop(columns=["__join_key", "__joined_label"])
        rejected = batch.rejected + lab.rejected
        return Batch(merged, rejected)

    def _window(self, frame: pd.DataFrame, span: _Span) -> WindowResult:
        ts = frame[TS]
        outcome = frame.loc[((ts >= span.start) & (ts < span.end)).to_numpy()]
        same = span.start == span.label_start and span.end == span.label_end
        labeled = (
            outcome if same else frame.loc[((ts >= span.label_start) & (ts < span.label_end)).to_numpy()]
        )
        specs = self._specs()
        if self.model.task != "binary":
            # optional inputs (labels, scores, features) the log does not have: their metrics are skipped
            available = {c.removeprefix(PREFIX) for c in frame.columns if c.startswith(PREFIX)}
            available |= {"features"} if any(c.startswith("features") for c in available) else set()
            inputs = set(family_module(self.model.task).INPUTS)
            specs = [s for s in specs if (s.requires & inputs) <= available]
        outcome_specs = [s.name for s in specs if "y_true" not in s.requires]
        label_specs = [s.name for s in specs if "y_true" in s.requires]

        values: list[mc.MetricValue] = []
        model_values: list[mc.ModelValue] = []
        n_alerting = sum(1 for s in specs if not s.informational and s.level == "group")
        out_report, out_attrs = self._report(
            outcome, outcome_specs if not same else [s.name for s in specs], n_alerting
        )
        values += out_report.values
        model_values += out_report.model
        if not same and label_specs:
            lab_report, _ = self._report(labeled, label_specs, n_alerting)
            values += lab_report.values
            model_values += lab_report.model
        groups = self._group_stats(outcome, labeled, out_attrs)
        dropped = {a.name: len(a.dropped) for a in out_attrs if a.dropped}
        missing = {a.name: a.n_missing for a in out_attrs if a.n_missing}
        n_labeled = int(_labeled(labeled).sum())
        return WindowResult(
            window=span.name,
            start=span.start,
            end=span.end,
            label_start=span.label_start,
            label_end=span.label_end,
            values=tuple(values),
            model_values=tuple(_dedupe_model_values(model_values)),
            groups=tuple(groups),
            n_rows=len(outcome),
            n_labeled=n_labeled,
            dropped_groups=MappingProxyType(dropped),
            missing_group_rows=MappingProxyType(missing),
            n_label_rows=len(labeled),
        )

    def _specs(self) -> list[mc.MetricSpec]:
        """The metrics this model's windows compute: configured, or all its inputs allow."""
        model = self.model
        if model.task == "binary":
            names = model.metrics or [
                n for n in mc.metric_names() if mc.get_metric(n).family in _BINARY_FAMILIES
            ]
            specs = [mc.get_metric(m) for m in names]
            if model.columns.score is None:
                specs = [s for s in specs if "y_score" not in s.requires]
        else:
            family = family_module(model.task).SPECS
            chosen = set(model.metrics) if model.metrics else None
            specs = [s for s in family if chosen is None or s.name in chosen]
        if not model.columns.label:
            specs = [s for s in specs if "y_true" not in s.requires]
        return specs

    def _attributes(self, frame: pd.DataFrame) -> list[mc.Attribute]:
        attrs = []
        for g in self.model.groups:
            if g.kind == "indicator":
                cols = {
                    c: pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
                    for c in g.columns
                }
                attr = mc.indicator_attribute(g.attribute, cols, threshold=g.threshold, min_size=g.min_size)
            elif g.kind == "categorical":
                values = _group_values(frame[g.column])
                ref = g.reference if isinstance(g.reference, str) else "&".join(g.reference)
                attr = mc.categorical_attribute(g.attribute, values, reference=ref, min_size=g.min_size)
            else:
                cols = {c: _group_values(frame[c]) for c in g.columns}
                attr = mc.intersection_attribute(cols, reference=g.reference, min_size=g.min_size)
                attr = _renamed(attr, g.attribute)
            attrs.append(_capped(attr, self.model.max_groups))
        return attrs

    def _report(
        self, frame: pd.DataFrame, metrics: Sequence[str], n_alerting: int
    ) -> tuple[mc.Report, list[mc.Attribute]]:
        attrs = self._attributes(frame)
        comparisons = [c for a in attrs for c in a.comparisons]
        level = self.confidence
        if self.adjust == "bonferroni":
            level = mc.bonferroni_level(level, max(1, n_alerting * max(1, len(comparisons))))
        if self.model.task != "binary":
            report = evaluate_task(
                self.model.task,
                task_data(frame, self.model),
                attrs,
                metrics=metrics,
                confidence=level,
                fair_ranges=self.model.fair_ranges,
                min_samples=self.model.min_samples,
                options=self.options,
            )
            return report, attrs
        has_scores = self.model.columns.score is not None
        y_score = frame[SCORE].to_numpy() if has_scores else frame[PRED].to_numpy()
        threshold = self.model.threshold if has_scores else 0.5
        table = mc.table_for(y_score, frame[LABEL].to_numpy(), attrs)
        report = mc.evaluate(
            table,
            comparisons,
            metrics=metrics,
            threshold=threshold,
            has_scores=has_scores,
            confidence=level,
            fair_ranges=self.model.fair_ranges,
            min_samples=self.model.min_samples,
        )
        return report, attrs

    def _group_stats(
        self, outcome: pd.DataFrame, labeled: pd.DataFrame, attrs: list[mc.Attribute]
    ) -> list[GroupStats]:
        """Group sizes in the outcome window; label coverage in the label window (behind label metrics)."""
        label_attrs = {a.name: a for a in self._attributes(labeled)} if labeled is not outcome else {}
        has_label = _labeled(labeled)
        stats = []
        for a in attrs:
            la = label_attrs.get(a.name, a)
            for c in a.comparisons:
                size = int(np.asarray(a.masks[c.key]).sum())
                in_label = (
                    np.asarray(la.masks[c.key]) if c.key in la.masks else np.zeros(len(labeled), dtype=bool)
                )
                stats.append(
                    GroupStats(
                        c.attribute,
                        c.group,
                        c.reference,
                        size,
                        int((in_label & has_label).sum()),
                        int(in_label.sum()),
                    )
                )
        return stats


def _renamed(attr: mc.Attribute, name: str) -> mc.Attribute:
    from dataclasses import replace

    comparisons = tuple(replace(c, attribute=name) for c in attr.comparisons)
    return replace(attr, name=name, comparisons=comparisons)


def _capped(attr: mc.Attribute, max_groups: int) -> mc.Attribute:
    """Keep the ``max_groups`` largest groups: label values stay bounded; the rest are counted."""
    from dataclasses import replace

    if len(attr.comparisons) <= max_groups:
        return attr
    sizes = [(int(np.asarray(attr.masks[c.key]).sum()), i) for i, c in enumerate(attr.comparisons)]
    keep = sorted(i for _, i in sorted(sizes, reverse=True)[:max_groups])
    kept = tuple(attr.comparisons[i] for i in keep)
    dropped = attr.dropped + tuple(c.group for i, c in enumerate(attr.comparisons) if i not in set(keep))
    return replace(attr, comparisons=kept, dropped=dropped)


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
) -> dict[str, Evaluator]:
    """An :class:`Evaluator` per configured model (sources are created, not yet read)."""
    out = {}
    for model in settings.models:
        out[model.name] = _evaluator(model, settings, memory_sources, progress)
    return out


def _evaluator(
    model: ModelConfig,
    settings: Settings,
    memory: Mapping[str, Source] | None,
    progress: Callable[[str], None] | None,
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
        progress=progress,
    )
