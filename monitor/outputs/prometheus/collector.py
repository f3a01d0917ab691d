"""Prometheus export: a custom collector that formats the current :class:`Snapshot`.

:class:`SnapshotCollector` follows prometheus_client's custom-collector protocol: each
``collect()`` takes the snapshot reference once and yields metric families built from it
alone, so a group that vanished from the latest evaluation vanishes from ``/metrics``
(module-level labelled gauges would keep its last value forever). Nothing is computed at
scrape time: the values were computed by the scheduled evaluation, and samples carry no
timestamps. The families, their labels and HELP are the schema of :mod:`.series`.

The families computed by evaluations (values, companions, sizes, alerts: ~10,000 series for a
large model, ~2,800 for a typical one) are built per model, once per evaluation of that model, and
reused until it is evaluated again; the service's own few families are built at every collect.
:mod:`monitor.http.metrics` renders the text the same way: per model, once per evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)

from metrics_core import REGISTRY, MetricValue, ModelValue
from monitor.evaluation.results import ModelEvaluation, WindowResult
from monitor.outputs.prometheus import series
from monitor.outputs.prometheus.series import (
    FAMILY_PREFIX,
    MODEL_VALUE_LABELS,
    SCHEDULED,
    STATE_CODES,
    VALUE_LABELS,
    Family,
)
from monitor.service.snapshot import ActiveAlert, ModelStatus, SinkStats, Snapshot

__all__ = [
    "FAMILY_PREFIX",
    "STATE_CODES",
    "SnapshotCollector",
    "build_families",
    "evaluation_families",
    "merge_parts",
    "same_parts",
]


class SnapshotCollector:
    """Yields the metric families of the snapshot returned by ``get_snapshot``.

    Register it on a :class:`prometheus_client.CollectorRegistry`; ``describe()`` returns
    ``[]`` so that registration does not call ``collect()`` (and so ``get_snapshot``)
    before the service has a snapshot. (``/metrics?name[]=...`` filtering then needs a
    registry built with ``support_collectors_without_names=True``.)

    The evaluation families are built per model, once per evaluation (:meth:`evaluation_parts`):
    a service of 50 models builds one model's families when that model's evaluation ends, not
    every model's. They are never mutated after being built, so concurrent scrapes may share them.
    """

    def __init__(self, get_snapshot: Callable[[], Snapshot], *, version: str) -> None:
        self._get_snapshot = get_snapshot
        self._version = version
        # (key, value) tuples, replaced whole, so a reader never pairs one state with another's families
        self._models: dict[str, tuple[ModelEvaluation, tuple[Metric, ...]]] = {}
        self._alerts: tuple[tuple[ActiveAlert, ...], tuple[Metric, ...]] | None = None
        self._merged: tuple[tuple[tuple[Metric, ...], ...], tuple[Metric, ...]] | None = None

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        snapshot = self._get_snapshot()  # once per scrape: every family from one state
        yield from self.evaluation_families(snapshot)
        yield from self.service_families(snapshot)

    def evaluation_parts(self, snapshot: Snapshot) -> tuple[tuple[Metric, ...], ...]:
        """The fairness values, sizes and alerts, in parts: each evaluated model's families (only
        its own samples; rebuilt only when that model's evaluation changed), then the alerts'.
        A family name may appear in several parts; :func:`merge_parts` joins them."""
        parts = []
        for status in snapshot.models.values():
            evaluation = status.last_evaluation  # kept after a failed evaluation
            if evaluation is None:
                continue
            cached = self._models.get(status.name)
            if cached is None or cached[0] is not evaluation:  # identity: evaluations are replaced
                cached = (evaluation, _model_families(status.name, evaluation))
                self._models[status.name] = cached
            parts.append(cached[1])
        for gone in self._models.keys() - snapshot.models.keys():  # a model a reload removed
            self._models.pop(gone, None)
        alerts = self._alerts
        if alerts is None or alerts[0] != snapshot.alerts:
            alerts = (snapshot.alerts, (_alerts(snapshot),))
            self._alerts = alerts
        parts.append(alerts[1])
        return tuple(parts)

    def evaluation_families(self, snapshot: Snapshot) -> tuple[Metric, ...]:
        """:meth:`evaluation_parts` merged into one family per name: rebuilt only when an
        evaluation or the alerts changed, not when only the service's counters did."""
        parts = self.evaluation_parts(snapshot)
        merged = self._merged
        if merged is None or not same_parts(merged[0], parts):
            merged = (parts, merge_parts(parts))
            self._merged = merged
        return merged[1]

    def service_families(self, snapshot: Snapshot) -> list[Metric]:
        """The service's own metrics (counters, timestamps, source_up): a few series per model."""
        return _self_metrics(snapshot, self._version)


def same_parts(a: Sequence[Sequence[Metric]], b: Sequence[Sequence[Metric]]) -> bool:
    """Whether two lists of parts are the same parts (by identity: parts are never mutated)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def merge_parts(parts: tuple[tuple[Metric, ...], ...]) -> tuple[Metric, ...]:
    """One family per name, in the order the names first appear, with the samples of every part
    in part order (the order :mod:`monitor.http.metrics` assembles its text in)."""
    merged: dict[str, Metric] = {}
    for part in parts:
        for family in part:
            into = merged.get(family.name)
            if into is None:
                into = Metric(family.name, family.documentation, family.type, family.unit)
                merged[family.name] = into
            into.samples.extend(family.samples)
    return tuple(merged.values())


def build_families(snapshot: Snapshot, *, version: str) -> list[Metric]:
    """Every family exported for ``snapshot``, in a stable order."""
    return [*evaluation_families(snapshot), *_self_metrics(snapshot, version)]


def evaluation_families(snapshot: Snapshot) -> list[Metric]:
    """The families computed by evaluations: values, companions, sizes, alerts."""
    parts = [
        _model_families(status.name, status.last_evaluation)
        for status in snapshot.models.values()
        if status.last_evaluation is not None  # kept after a failed evaluation
    ]
    return [*merge_parts((*parts, (_alerts(snapshot),)))]


def _model_families(model: str, evaluation: ModelEvaluation) -> tuple[Metric, ...]:
    """One model's values, companions and sizes."""
    families = _Families()
    _add_evaluation(families, model, evaluation)
    return tuple(families.families())


class _Families:
    """Families created on first use, so only metrics present in the snapshot appear."""

    def __init__(self) -> None:
        self._values: dict[str, GaugeMetricFamily] = {}
        self._fixed = {
            f.suffix: GaugeMetricFamily(f.name, f"{f.help} {SCHEDULED}", labels=f.labels)
            for f in (*series.COMPANIONS, *series.SIZE_FAMILIES, *series.ESTIMATES, *series.CALIBRATION)
        }

    def fixed(self, family: Family) -> GaugeMetricFamily:
        return self._fixed[family.suffix]

    def value(self, metric: str, labels: tuple[str, ...]) -> GaugeMetricFamily:
        family = self._values.get(metric)
        if family is None:
            family = GaugeMetricFamily(FAMILY_PREFIX + metric, _metric_help(metric), labels=labels)
            self._values[metric] = family
        return family

    def families(self) -> list[GaugeMetricFamily]:
        """Every family with samples; the values' companions and sizes always (a model's series)."""
        optional = {f.suffix for f in (*series.ESTIMATES, *series.CALIBRATION)}
        fixed = [f for suffix, f in self._fixed.items() if suffix not in optional or f.samples]
        return [*self._values.values(), *fixed]


def _metric_help(metric: str) -> str:
    spec = REGISTRY.get(metric)
    if spec is None:  # a metric the registry does not know still gets a HELP line
        return f"fairwatch metric {metric}. {SCHEDULED} NaN: undefined."
    undefined = "NaN: undefined." if spec.level == "model" else "NaN: undefined (see fairwatch_metric_state)."
    return f"{spec.meaning}; {spec.formula}. {SCHEDULED} {undefined}"


def _add_evaluation(families: _Families, model: str, evaluation: ModelEvaluation) -> None:
    for window in evaluation.windows:
        for value in window.values:
            _add_value(families, model, window.window, value)
        for model_value in window.model_values:
            _add_model_value(families, model, window.window, model_value)
        _add_sizes(families, model, window)
        _add_nowcast(families, model, window)


def _add_nowcast(families: _Families, model: str, w: WindowResult) -> None:
    """``models[].nowcast``: the estimates, apart from the realised values, and the calibration checks."""
    for v in w.estimates:
        labels = [v.metric, model, w.window, v.attribute, v.group, v.reference]
        for family in series.ESTIMATES:
            raw = getattr(v, family.field)
            families.fixed(family).add_metric(
                labels, STATE_CODES[raw] if family is series.ESTIMATE_STATE else raw
            )
    for check in w.calibration:
        labels = [model, w.window, check.attribute, check.group]
        for family in series.CALIBRATION:
            families.fixed(family).add_metric(labels, float(getattr(check, family.field)))


def _add_value(families: _Families, model: str, window: str, v: MetricValue) -> None:
    labels = [model, window, v.attribute, v.group, v.reference]
    families.value(v.metric, VALUE_LABELS).add_metric(labels, v.value)
    companion_labels = [v.metric, *labels]
    for companion in series.COMPANIONS:
        raw = getattr(v, companion.field)
        number = STATE_CODES[raw] if companion is series.METRIC_STATE else raw
        families.fixed(companion).add_metric(companion_labels, number)


def _add_model_value(families: _Families, model: str, window: str, m: ModelValue) -> None:
    families.value(m.metric, MODEL_VALUE_LABELS).add_metric([model, window, m.attribute], m.value)
    spec = REGISTRY.get(m.metric)
    # Only metrics with an interval method get CI series: the others would be all-NaN noise.
    if spec is not None and spec.interval != "none":
        labels = [m.metric, model, window, m.attribute, "", ""]  # no group, no reference
        families.fixed(series.METRIC_CI_LOWER).add_metric(labels, m.ci_lower)
        families.fixed(series.METRIC_CI_UPPER).add_metric(labels, m.ci_upper)


def _add_sizes(families: _Families, model: str, w: WindowResult) -> None:
    for g in w.groups:
        labels = [model, w.window, g.attribute, g.group]
        families.fixed(series.GROUP_ROWS).add_metric(labels, g.n_rows)
        families.fixed(series.GROUP_LABELED_ROWS).add_metric(labels, g.n_labeled)
        families.fixed(series.GROUP_LABEL_COVERAGE).add_metric(labels, g.label_coverage)
    families.fixed(series.WINDOW_ROWS).add_metric([model, w.window], w.n_rows)
    families.fixed(series.WINDOW_LABEL_COVERAGE).add_metric([model, w.window], w.label_coverage)
    for attribute, n in w.dropped_groups.items():
        families.fixed(series.GROUPS_DROPPED).add_metric([model, w.window, attribute], n)
    for attribute, n in w.missing_group_rows.items():
        families.fixed(series.GROUP_MISSING_ROWS).add_metric([model, w.window, attribute], n)


def _alerts(snapshot: Snapshot) -> GaugeMetricFamily:
    alerts = series.ALERTS
    family = GaugeMetricFamily(alerts.name, f"{alerts.help} {SCHEDULED}", labels=alerts.labels)
    seen: set[tuple[str, ...]] = set()
    for alert in snapshot.alerts:
        labels = {"basis": "labels", **alert.labels}  # realised alerts carry no basis label
        key = (*(labels.get(name, "") for name in alerts.labels[:-1]), alert.state)
        if key not in seen:  # two alerts differing only in other labels would be one series
            seen.add(key)
            family.add_metric(list(key), 1)
    return family


def _self_metrics(snapshot: Snapshot, version: str) -> list[Metric]:
    models = list(snapshot.models.values())
    build = InfoMetricFamily(series.BUILD.name, series.BUILD.help, labels=series.BUILD.labels)
    build.add_metric([version], {})
    job_errors = CounterMetricFamily(series.JOB_ERRORS.name, series.JOB_ERRORS.help)
    job_errors.add_metric([], snapshot.job_errors_total)
    return [
        build,
        _per_model_counter(series.EVALUATIONS, models),
        _per_model_counter(series.EVALUATION_FAILURES, models),
        _by_reason(series.EVALUATION_SKIPPED, models, lambda s: s.skipped_total),
        _per_model_counter(series.ROWS_READ, models),
        _rows_rejected(models),
        _per_model_counter(series.LATE_ROWS, models),
        _per_model_counter(series.CHANGED_PANES, models),
        _last_read_rejected(models),
        _per_model_gauge(
            series.LAST_READ_FILES_SKIPPED,
            models,
            lambda s: len(s.last_evaluation.skipped_files) if s.last_evaluation else None,
        ),
        job_errors,
        *_sink_metrics(snapshot.alert_sinks),
        _per_model_gauge(series.EVALUATION_DURATION, models, lambda s: s.last_duration_seconds),
        _per_model_gauge(
            series.LAST_SUCCESS, models, lambda s: s.last_success.timestamp() if s.last_success else None
        ),
        _per_model_gauge(
            series.LAST_ATTEMPT, models, lambda s: s.last_attempt.timestamp() if s.last_attempt else None
        ),
        _per_model_gauge(series.SOURCE_UP, models, lambda s: 1 if s.source_up else 0),
        _per_model_gauge(series.MODEL_INTERVAL, models, lambda s: s.interval_seconds),
        _per_model_gauge(series.PANE_STORE_UP, models, _pane_store_up),
        _per_model_gauge(
            series.LAST_PUBLISHED_PANES,
            models,
            lambda s: s.last_evaluation.published_panes if s.last_evaluation else None,
        ),
        *_publishers(models),
    ]


def _publishers(models: list[ModelStatus]) -> list[Metric]:
    """How many publishers a published source read, fresh and stale, and when each last published."""
    counts = GaugeMetricFamily(
        series.PUBLISHERS.name, series.PUBLISHERS.help, labels=series.PUBLISHERS.labels
    )
    seen = series.PUBLISHER_LAST_SEEN
    last_seen = GaugeMetricFamily(seen.name, seen.help, labels=seen.labels)
    for status in models:
        evaluation = status.last_evaluation
        if evaluation is None or evaluation.publishers is None:
            continue
        stale = len(evaluation.stale_publishers)
        counts.add_metric([status.name, "fresh"], len(evaluation.publishers) - stale)
        counts.add_metric([status.name, "stale"], stale)
        for publisher, at in sorted(evaluation.publishers.items()):
            if not math.isnan(at):
                last_seen.add_metric([status.name, publisher], at)
    return [counts, last_seen]


def _pane_store_up(status: ModelStatus) -> float | None:
    up = status.last_evaluation.pane_store_up if status.last_evaluation else None
    return None if up is None else float(up)


def _per_model_counter(family: Family, models: list[ModelStatus]) -> Metric:
    out = CounterMetricFamily(family.name, family.help, labels=family.labels)
    for status in models:
        out.add_metric([status.name], getattr(status, family.field))
    return out


def _per_model_gauge(
    family: Family, models: list[ModelStatus], value_of: Callable[[ModelStatus], float | None]
) -> Metric:
    out = GaugeMetricFamily(family.name, family.help, labels=family.labels)
    for status in models:
        value = value_of(status)
        if value is not None and not math.isnan(value):  # "not yet known" is absent, not NaN
            out.add_metric([status.name], value)
    return out


def _rows_rejected(models: list[ModelStatus]) -> Metric:
    return _by_reason(series.ROWS_REJECTED, models, lambda s: s.rows_rejected_total)


def _by_reason(
    family: Family, models: list[ModelStatus], counts_of: Callable[[ModelStatus], Mapping[str, int]]
) -> Metric:
    out = CounterMetricFamily(family.name, family.help, labels=family.labels)
    for status in models:
        for reason, n in sorted(counts_of(status).items()):
            out.add_metric([status.name, reason], n)
    return out


def _last_read_rejected(models: list[ModelStatus]) -> Metric:
    last = series.LAST_READ_REJECTED
    family = GaugeMetricFamily(last.name, last.help, labels=last.labels)
    for status in models:
        if status.last_evaluation is not None:
            for reason, n in sorted(status.last_evaluation.rejected.items()):
                family.add_metric([status.name, reason], n)
    return family


def _sink_metrics(sinks: Mapping[str, SinkStats]) -> list[Metric]:
    families: list[Metric] = []
    for sink_family in series.SINK_FAMILIES:
        kind = CounterMetricFamily if sink_family.kind == "counter" else GaugeMetricFamily
        family = kind(sink_family.name, sink_family.help, labels=sink_family.labels)
        for sink, stats in sorted(sinks.items()):
            family.add_metric([sink], getattr(stats, sink_family.field))
        families.append(family)
    return families
