"""Prometheus export: a custom collector that formats the current :class:`Snapshot`.

:class:`SnapshotCollector` follows prometheus_client's custom-collector protocol: each
``collect()`` takes the snapshot reference once and yields metric families built from it
alone, so a group that vanished from the latest evaluation vanishes from ``/metrics``
(module-level labelled gauges would keep its last value forever). Nothing is computed at
scrape time: the values were computed by the scheduled evaluation, and samples carry no
timestamps.

Families (all prefixed ``fairwatch_``):

- ``<metric>`` per group metric, labels ``model, window, attribute, group, reference``;
- ``<metric>`` per model-level value, labels ``model, window, attribute``;
- ``metric_ci_lower``/``_upper``, ``metric_fair_min``/``_max``, ``metric_state`` and
  ``metric_support``, each with a ``metric`` label;
- group and window sizes, label coverage, dropped groups and rows without a group;
- ``alerts`` (as Prometheus' ``ALERTS``) and the service's self-metrics.

The families computed by evaluations (values, companions, sizes, alerts: ~10,000 series for a
large model) are built once per evaluation and reused until an evaluation or the alerts change;
the service's own few families are built at every collect. :mod:`monitor.http.metrics` renders
the text the same way, once per published snapshot.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)

from metrics_core import REGISTRY, STATES, MetricValue, ModelValue
from monitor.evaluation.results import ModelEvaluation, WindowResult
from monitor.service.snapshot import ActiveAlert, ModelStatus, SinkStats, Snapshot

__all__ = [
    "FAMILY_PREFIX",
    "STATE_CODES",
    "SnapshotCollector",
    "build_families",
    "evaluation_families",
]

#: The start of every exported metric family name (``fairwatch_disparate_impact``, ...).
FAMILY_PREFIX = "fairwatch_"

#: ``fairwatch_metric_state`` values: the position in :data:`metrics_core.STATES`.
STATE_CODES: dict[str, int] = {state: code for code, state in enumerate(STATES)}

_SCHEDULED = "Computed on a schedule (every model's interval), not at scrape time."
_VALUE_LABELS = ("model", "window", "attribute", "group", "reference")
_MODEL_VALUE_LABELS = ("model", "window", "attribute")
_COMPANION_LABELS = ("metric", *_VALUE_LABELS)
_GROUP_LABELS = ("model", "window", "attribute", "group")
_WINDOW_LABELS = ("model", "window")
_ATTRIBUTE_LABELS = ("model", "window", "attribute")
# The alert's identity (reference included: one group may be judged against two references).
_ALERT_LABELS = ("model", "window", "attribute", "group", "reference", "metric", "alertstate")
_STATE_HELP = ", ".join(f"{code} {state}" for state, code in STATE_CODES.items())

# Companion families: (name suffix, HELP, MetricValue attribute).
_COMPANIONS = (
    ("metric_ci_lower", "Lower bound of the metric's confidence interval (NaN when undefined).", "ci_lower"),
    ("metric_ci_upper", "Upper bound of the metric's confidence interval (NaN when undefined).", "ci_upper"),
    ("metric_fair_min", "Lower end of the metric's fair range (-Inf: open).", "fair_min"),
    ("metric_fair_max", "Upper end of the metric's fair range (+Inf: open).", "fair_max"),
    ("metric_state", f"State of the metric against its fair range: {_STATE_HELP}.", "state"),
    (
        "metric_support",
        "Smallest denominator the metric depends on (judged against min_samples).",
        "support",
    ),
)


class SnapshotCollector:
    """Yields the metric families of the snapshot returned by ``get_snapshot``.

    Register it on a :class:`prometheus_client.CollectorRegistry`; ``describe()`` returns
    ``[]`` so that registration does not call ``collect()`` (and so ``get_snapshot``)
    before the service has a snapshot. (``/metrics?name[]=...`` filtering then needs a
    registry built with ``support_collectors_without_names=True``.)

    The evaluation families are kept and yielded again while the evaluations and alerts
    stay the same; they are never mutated after being built, so concurrent scrapes may
    share them.
    """

    def __init__(self, get_snapshot: Callable[[], Snapshot], *, version: str) -> None:
        self._get_snapshot = get_snapshot
        self._version = version
        # (key, families): one tuple so a reader never pairs one state with another's families.
        self._cache: tuple[_EvaluationKey, tuple[Metric, ...]] | None = None

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        snapshot = self._get_snapshot()  # once per scrape: every family from one state
        yield from self.evaluation_families(snapshot)
        yield from self.service_families(snapshot)

    def evaluation_families(self, snapshot: Snapshot) -> tuple[Metric, ...]:
        """The fairness values, sizes and alerts: rebuilt only when an evaluation or the alerts
        changed, not when only the service's counters did."""
        key = _evaluation_key(snapshot)
        cache = self._cache
        if cache is None or not _same_key(cache[0], key):
            cache = (key, tuple(evaluation_families(snapshot)))
            self._cache = cache
        return cache[1]

    def service_families(self, snapshot: Snapshot) -> list[Metric]:
        """The service's own metrics (counters, timestamps, source_up): a few series per model."""
        return _self_metrics(snapshot, self._version)


# The evaluations (by identity: they are immutable and replaced, never mutated) and the alerts.
_EvaluationKey = tuple[tuple[ModelEvaluation | None, ...], tuple[ActiveAlert, ...]]


def _evaluation_key(snapshot: Snapshot) -> _EvaluationKey:
    return tuple(s.last_evaluation for s in snapshot.models.values()), snapshot.alerts


def _same_key(a: _EvaluationKey, b: _EvaluationKey) -> bool:
    return len(a[0]) == len(b[0]) and all(x is y for x, y in zip(a[0], b[0], strict=True)) and a[1] == b[1]


def build_families(snapshot: Snapshot, *, version: str) -> list[Metric]:
    """Every family exported for ``snapshot``, in a stable order."""
    return [*evaluation_families(snapshot), *_self_metrics(snapshot, version)]


def evaluation_families(snapshot: Snapshot) -> list[Metric]:
    """The families computed by evaluations: values, companions, sizes, alerts."""
    values = _Families()
    for status in snapshot.models.values():
        if status.last_evaluation is not None:  # kept after a failed evaluation
            _add_evaluation(values, status.name, status.last_evaluation)
    return [*values.families(), _alerts(snapshot)]


class _Families:
    """Families created on first use, so only metrics present in the snapshot appear."""

    def __init__(self) -> None:
        self._values: dict[str, GaugeMetricFamily] = {}
        self._fixed: dict[str, GaugeMetricFamily] = {}
        for suffix, help_text, _ in _COMPANIONS:
            self._gauge(suffix, help_text, _COMPANION_LABELS)
        self._gauge("group_rows", "Rows of the group in the window.", _GROUP_LABELS)
        self._gauge("group_labeled_rows", "Rows of the group in the window with a label.", _GROUP_LABELS)
        self._gauge(
            "group_label_coverage_ratio", "Share of the group's rows with a label (0..1).", _GROUP_LABELS
        )
        self._gauge("window_rows", "Rows in the window.", _WINDOW_LABELS)
        self._gauge("window_label_coverage_ratio", "Share of the window's rows with a label.", _WINDOW_LABELS)
        self._gauge(
            "groups_dropped",
            "Groups of the attribute not exported (intersection cap or minimum size).",
            _ATTRIBUTE_LABELS,
        )
        self._gauge(
            "group_missing_rows", "Rows of the window with no value for the attribute.", _ATTRIBUTE_LABELS
        )

    def _gauge(self, suffix: str, help_text: str, labels: tuple[str, ...]) -> None:
        self._fixed[suffix] = GaugeMetricFamily(
            FAMILY_PREFIX + suffix, f"{help_text} {_SCHEDULED}", labels=labels
        )

    def fixed(self, suffix: str) -> GaugeMetricFamily:
        return self._fixed[suffix]

    def value(self, metric: str, labels: tuple[str, ...]) -> GaugeMetricFamily:
        family = self._values.get(metric)
        if family is None:
            family = GaugeMetricFamily(FAMILY_PREFIX + metric, _metric_help(metric), labels=labels)
            self._values[metric] = family
        return family

    def families(self) -> list[GaugeMetricFamily]:
        return [*self._values.values(), *self._fixed.values()]


def _metric_help(metric: str) -> str:
    spec = REGISTRY.get(metric)
    if spec is None:  # a metric the registry does not know still gets a HELP line
        return f"fairwatch metric {metric}. {_SCHEDULED} NaN: undefined."
    undefined = "NaN: undefined." if spec.level == "model" else "NaN: undefined (see fairwatch_metric_state)."
    return f"{spec.meaning}; {spec.formula}. {_SCHEDULED} {undefined}"


def _add_evaluation(families: _Families, model: str, evaluation: ModelEvaluation) -> None:
    for window in evaluation.windows:
        for value in window.values:
            _add_value(families, model, window.window, value)
        for model_value in window.model_values:
            _add_model_value(families, model, window.window, model_value)
        _add_sizes(families, model, window)


def _add_value(families: _Families, model: str, window: str, v: MetricValue) -> None:
    labels = [model, window, v.attribute, v.group, v.reference]
    families.value(v.metric, _VALUE_LABELS).add_metric(labels, v.value)
    companion_labels = [v.metric, *labels]
    for suffix, _, field in _COMPANIONS:
        raw = getattr(v, field)
        number = STATE_CODES[raw] if field == "state" else raw
        families.fixed(suffix).add_metric(companion_labels, number)


def _add_model_value(families: _Families, model: str, window: str, m: ModelValue) -> None:
    families.value(m.metric, _MODEL_VALUE_LABELS).add_metric([model, window, m.attribute], m.value)
    spec = REGISTRY.get(m.metric)
    # Only metrics with an interval method get CI series: the others would be all-NaN noise.
    if spec is not None and spec.interval != "none":
        labels = [m.metric, model, window, m.attribute, "", ""]  # no group, no reference
        families.fixed("metric_ci_lower").add_metric(labels, m.ci_lower)
        families.fixed("metric_ci_upper").add_metric(labels, m.ci_upper)


def _add_sizes(families: _Families, model: str, w: WindowResult) -> None:
    for g in w.groups:
        labels = [model, w.window, g.attribute, g.group]
        families.fixed("group_rows").add_metric(labels, g.n_rows)
        families.fixed("group_labeled_rows").add_metric(labels, g.n_labeled)
        families.fixed("group_label_coverage_ratio").add_metric(labels, g.label_coverage)
    families.fixed("window_rows").add_metric([model, w.window], w.n_rows)
    families.fixed("window_label_coverage_ratio").add_metric([model, w.window], w.label_coverage)
    for attribute, n in w.dropped_groups.items():
        families.fixed("groups_dropped").add_metric([model, w.window, attribute], n)
    for attribute, n in w.missing_group_rows.items():
        families.fixed("group_missing_rows").add_metric([model, w.window, attribute], n)


def _alerts(snapshot: Snapshot) -> GaugeMetricFamily:
    family = GaugeMetricFamily(
        FAMILY_PREFIX + "alerts",
        "1 for each pending or firing fairwatch alert, as Prometheus' ALERTS. " + _SCHEDULED,
        labels=_ALERT_LABELS,
    )
    seen: set[tuple[str, ...]] = set()
    for alert in snapshot.alerts:
        key = (*(alert.labels.get(name, "") for name in _ALERT_LABELS[:-1]), alert.state)
        if key not in seen:  # two alerts differing only in other labels would be one series
            seen.add(key)
            family.add_metric(list(key), 1)
    return family


def _self_metrics(snapshot: Snapshot, version: str) -> list[Metric]:
    models = list(snapshot.models.values())
    build = InfoMetricFamily(FAMILY_PREFIX + "build", "fairwatch build information.", labels=["version"])
    build.add_metric([version], {})
    job_errors = CounterMetricFamily(
        FAMILY_PREFIX + "job_errors_total", "Unexpected errors in scheduled jobs (see the log)."
    )
    job_errors.add_metric([], snapshot.job_errors_total)
    return [
        build,
        _per_model_counter("evaluations_total", "Evaluations attempted.", models, "evaluations_total"),
        _per_model_counter("evaluation_failures_total", "Evaluations that failed.", models, "failures_total"),
        _per_model_counter(
            "rows_read_total", "Prediction rows read from the source.", models, "rows_read_total"
        ),
        _rows_rejected(models),
        _per_model_counter(
            "late_rows_total",
            "Rows found in sealed panes after their counts were kept (arrived later than "
            "label_delay + panes.lateness); each was folded in by reading its panes again.",
            models,
            "late_rows_total",
        ),
        _last_read_rejected(models),
        _per_model_gauge(
            "last_read_files_skipped",
            "Files the model's last successful evaluation skipped because they could not be parsed "
            "(half written, corrupt); they are tried again at every evaluation.",
            models,
            lambda s: len(s.last_evaluation.skipped_files) if s.last_evaluation else None,
        ),
        job_errors,
        *_sink_metrics(snapshot.alert_sinks),
        _per_model_gauge(
            "evaluation_duration_seconds",
            "Duration of the model's last evaluation.",
            models,
            lambda s: s.last_duration_seconds,
        ),
        _per_model_gauge(
            "last_evaluation_success_timestamp_seconds",
            "Unix time of the model's last successful evaluation; absent before the first.",
            models,
            lambda s: s.last_success.timestamp() if s.last_success else None,
        ),
        _per_model_gauge(
            "last_evaluation_timestamp_seconds",
            "Unix time of the model's last evaluation attempt, successful or not.",
            models,
            lambda s: s.last_attempt.timestamp() if s.last_attempt else None,
        ),
        _per_model_gauge(
            "source_up",
            "1 if the model's last evaluation read its source, 0 if it failed (last values stay exported).",
            models,
            lambda s: 1 if s.source_up else 0,
        ),
        _per_model_gauge(
            "model_interval_seconds",
            "Configured evaluation interval of the model.",
            models,
            lambda s: s.interval_seconds,
        ),
    ]


def _per_model_counter(name: str, help_text: str, models: list[ModelStatus], field: str) -> Metric:
    family = CounterMetricFamily(FAMILY_PREFIX + name, help_text, labels=["model"])
    for status in models:
        family.add_metric([status.name], getattr(status, field))
    return family


def _per_model_gauge(
    name: str, help_text: str, models: list[ModelStatus], value_of: Callable[[ModelStatus], float | None]
) -> Metric:
    family = GaugeMetricFamily(FAMILY_PREFIX + name, help_text, labels=["model"])
    for status in models:
        value = value_of(status)
        if value is not None and not math.isnan(value):  # "not yet known" is absent, not NaN
            family.add_metric([status.name], value)
    return family


def _rows_rejected(models: list[ModelStatus]) -> Metric:
    family = CounterMetricFamily(
        FAMILY_PREFIX + "rows_rejected_total",
        "Rows dropped as invalid, by reason, counted per read like rows_read_total: every evaluation "
        "re-reads its windows, so a bad row is counted again while it stays in a window.",
        labels=["model", "reason"],
    )
    for status in models:
        for reason, n in sorted(status.rows_rejected_total.items()):
            family.add_metric([status.name, reason], n)
    return family


def _last_read_rejected(models: list[ModelStatus]) -> Metric:
    family = GaugeMetricFamily(
        FAMILY_PREFIX + "last_read_rows_rejected",
        "Invalid rows, by reason, among the rows the model's last successful evaluation read "
        "(the span of its longest window): each bad row counted once.",
        labels=["model", "reason"],
    )
    for status in models:
        if status.last_evaluation is not None:
            for reason, n in sorted(status.last_evaluation.rejected.items()):
                family.add_metric([status.name, reason], n)
    return family


# Per-sink families: (name, HELP, SinkStats field); the last one is a gauge.
_SINK_FAMILIES = (
    ("alerts_sent_total", "Alert notifications delivered.", "sent"),
    (
        "alert_delivery_failures_total",
        "Delivery attempts a sink refused, could not be reached for, or did not answer in time.",
        "failures",
    ),
    (
        "alert_notifications_dropped_total",
        "Undelivered resolves dropped because the sink's outbox was full.",
        "dropped",
    ),
    ("alert_queue_length", "Alerts waiting in the sink's outbox.", "queued"),
)


def _sink_metrics(sinks: Mapping[str, SinkStats]) -> list[Metric]:
    families: list[Metric] = []
    for name, help_text, field in _SINK_FAMILIES:
        kind = CounterMetricFamily if name.endswith("_total") else GaugeMetricFamily
        family = kind(FAMILY_PREFIX + name, help_text, labels=["sink"])
        for sink, stats in sorted(sinks.items()):
            family.add_metric([sink], getattr(stats, field))
        families.append(family)
    return families
