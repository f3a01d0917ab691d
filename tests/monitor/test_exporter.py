"""The Prometheus collector: families, labels and values from hand-built snapshots, linted by promtool.

The builders at the top are shared with ``test_http.py``.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric

from metrics_core import REGISTRY, STATES, MetricValue, ModelValue
from monitor.evaluation.results import GroupStats, ModelEvaluation, WindowResult
from monitor.outputs.prometheus.collector import STATE_CODES, SnapshotCollector, build_families
from monitor.service.snapshot import ActiveAlert, ModelStatus, SinkStats, Snapshot
from tests.servers import promtool_bin

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NAN, INF = math.nan, math.inf

# --------------------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------------------


def metric_value(
    group: str = "black",
    metric: str = "disparate_impact",
    *,
    value: float = 0.95,
    state: str = "ok",
    ci: tuple[float, float] = (0.88, 1.02),
    fair: tuple[float, float] = (0.8, 1.25),
    attribute: str = "identity",
    reference: str = "rest",
    n_group: float = 500,
    support: float = 500,
) -> MetricValue:
    return MetricValue(
        attribute=attribute,
        group=group,
        reference=reference,
        metric=metric,
        value=value,
        ci_lower=ci[0],
        ci_upper=ci[1],
        fair_min=fair[0],
        fair_max=fair[1],
        state=state,
        n_group=n_group,
        n_reference=5000,
        support=support,
        reason="group has fewer rows than min_samples" if math.isnan(value) else None,
    )


def window_result(
    name: str,
    values: Iterable[MetricValue],
    model_values: Iterable[ModelValue] = (),
    *,
    n_rows: int = 10_000,
    n_labeled: int = 8_000,
    dropped: dict[str, int] | None = None,
    missing: dict[str, int] | None = None,
) -> WindowResult:
    """A window whose groups are those of ``values``, each with 80% of its rows labeled."""
    values = tuple(values)
    sizes = {(v.attribute, v.group, v.reference): int(v.n_group) for v in values}
    groups = tuple(GroupStats(a, g, r, n, int(n * 0.8)) for (a, g, r), n in sizes.items())
    return WindowResult(
        window=name,
        start=T0 - timedelta(hours=1),
        end=T0,
        label_start=T0 - timedelta(hours=1),
        label_end=T0,
        values=values,
        model_values=tuple(model_values),
        groups=groups,
        n_rows=n_rows,
        n_labeled=n_labeled,
        dropped_groups=MappingProxyType(dropped or {}),
        missing_group_rows=MappingProxyType(missing or {}),
    )


def model_evaluation(model: str, *windows: WindowResult, at: datetime = T0) -> ModelEvaluation:
    return ModelEvaluation(
        model=model,
        evaluated_at=at,
        duration_seconds=0.25,
        windows=windows,
        rows_read=10_000,
        rejected=MappingProxyType({"score_invalid": 1}),
    )


def model_status(name: str, evaluation: ModelEvaluation | None, **changes: object) -> ModelStatus:
    status = ModelStatus(
        name=name,
        interval_seconds=60.0,
        last_evaluation=evaluation,
        last_success=evaluation.evaluated_at if evaluation else None,
        last_attempt=evaluation.evaluated_at if evaluation else None,
        evaluations_total=3,
        failures_total=1,
        rows_read_total=12_345,
        rows_rejected_total=MappingProxyType({"score_invalid": 3, "label_invalid": 2}),
        late_rows_total=25,
        last_duration_seconds=0.25,
    )
    return replace(status, **changes)  # type: ignore[arg-type]


def make_snapshot(*statuses: ModelStatus, alerts: Iterable[ActiveAlert] = (), **changes: object) -> Snapshot:
    snapshot = Snapshot(
        models=MappingProxyType({s.name: s for s in statuses}),
        alerts=tuple(alerts),
        job_errors_total=2,
        alert_sinks=MappingProxyType(
            {"alertmanager": SinkStats(sent=4), "webhook": SinkStats(failures=1, dropped=2, queued=3)}
        ),
        created_at=T0,
    )
    return replace(snapshot, **changes)  # type: ignore[arg-type]


def alert(
    group: str, state: str, *, model: str = "toxicity", metric: str = "disparate_impact"
) -> ActiveAlert:
    return ActiveAlert(
        labels=MappingProxyType(
            {
                "alertname": "FairwatchFairnessViolation",
                "model": model,
                "window": "1h",
                "attribute": "identity",
                "group": group,
                "reference": "rest",
                "metric": metric,
                "severity": "warning",
            }
        ),
        annotations=MappingProxyType({"summary": f"{metric} of {group} out of range"}),
        state=state,
        active_since=T0 - timedelta(minutes=10),
        firing_since=T0 - timedelta(minutes=5) if state == "firing" else None,
        value=0.6,
    )


def rich_values() -> list[MetricValue]:
    """One value per state, an informational rate and an AUC."""
    return [
        metric_value("black"),
        metric_value("white", value=0.6, state="violation", ci=(0.55, 0.66)),
        metric_value("asian", value=0.75, state="inconclusive", ci=(0.68, 0.83)),
        metric_value("muslim", value=NAN, state="insufficient_data", ci=(NAN, NAN), n_group=12, support=12),
        metric_value("black", "selection_rate", value=0.3, ci=(0.26, 0.34), fair=(-INF, INF)),
        metric_value("black", "subgroup_auc", value=0.88, ci=(0.85, 0.91), fair=(0.87, INF)),
    ]


def rich_snapshot(
    *, groups: Iterable[MetricValue] | None = None, alerts: Iterable[ActiveAlert] | None = None
) -> Snapshot:
    values = list(rich_values() if groups is None else groups)
    model_values = [
        ModelValue("overall_auc", 0.92, ci_lower=0.91, ci_upper=0.93),
        ModelValue("power_mean_subgroup_auc", 0.86, "identity"),
        ModelValue("theil_index", 0.07),
    ]
    evaluation = model_evaluation(
        "toxicity",
        window_result("1h", values, model_values, dropped={"identity": 2}, missing={"identity": 7}),
        window_result("24h", values[:1], model_values[:1]),
    )
    return make_snapshot(
        model_status("toxicity", evaluation),
        alerts=[alert("white", "firing"), alert("asian", "pending")] if alerts is None else alerts,
    )


def registry_for(snapshot: Snapshot, version: str = "1.2.3") -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: snapshot, version=version))
    return registry


def families_of(snapshot: Snapshot) -> dict[str, Metric]:
    return {f.name: f for f in build_families(snapshot, version="1.2.3")}


def value_labels(group: str, *, window: str = "1h", reference: str = "rest") -> dict[str, str]:
    return {
        "model": "toxicity",
        "window": window,
        "attribute": "identity",
        "group": group,
        "reference": reference,
    }


# --------------------------------------------------------------------------------------------------------
# Fairness values and companions
# --------------------------------------------------------------------------------------------------------


def test_one_gauge_family_per_metric_with_registry_help() -> None:
    families = families_of(rich_snapshot())
    di = families["fairwatch_disparate_impact"]
    assert di.type == "gauge"
    assert "below 1: the group is selected less often" in di.documentation
    assert "SR_G / SR_R" in di.documentation
    assert "schedule" in di.documentation
    assert {s.labels["group"] for s in di.samples} == {"black", "white", "asian", "muslim"}
    assert set(di.samples[0].labels) == {"model", "window", "attribute", "group", "reference"}
    for name in ("fairwatch_selection_rate", "fairwatch_subgroup_auc"):
        assert families[name].type == "gauge"
    assert "fairwatch_statistical_parity_difference" not in families  # only metrics present


def test_values_and_companions() -> None:
    registry = registry_for(rich_snapshot())
    labels = value_labels("white")
    assert registry.get_sample_value("fairwatch_disparate_impact", labels) == 0.6
    companion = {"metric": "disparate_impact", **labels}
    assert registry.get_sample_value("fairwatch_metric_ci_lower", companion) == 0.55
    assert registry.get_sample_value("fairwatch_metric_ci_upper", companion) == 0.66
    assert registry.get_sample_value("fairwatch_metric_fair_min", companion) == 0.8
    assert registry.get_sample_value("fairwatch_metric_fair_max", companion) == 1.25
    assert registry.get_sample_value("fairwatch_metric_support", companion) == 500


def test_open_fair_range_ends_are_infinities() -> None:
    registry = registry_for(rich_snapshot())
    rate = {"metric": "selection_rate", **value_labels("black")}
    assert registry.get_sample_value("fairwatch_metric_fair_min", rate) == -INF
    assert registry.get_sample_value("fairwatch_metric_fair_max", rate) == INF
    auc = {"metric": "subgroup_auc", **value_labels("black")}
    assert registry.get_sample_value("fairwatch_metric_fair_max", auc) == INF


def test_undefined_value_is_nan_with_insufficient_data_state() -> None:
    registry = registry_for(rich_snapshot())
    labels = value_labels("muslim")
    value = registry.get_sample_value("fairwatch_disparate_impact", labels)
    assert value is not None and math.isnan(value)
    state = registry.get_sample_value("fairwatch_metric_state", {"metric": "disparate_impact", **labels})
    assert state == 3


@pytest.mark.parametrize(
    ("group", "code"), [("black", 0), ("asian", 1), ("white", 2), ("muslim", 3)], ids=list(STATES)
)
def test_state_codes_follow_states_order(group: str, code: int) -> None:
    registry = registry_for(rich_snapshot())
    labels = {"metric": "disparate_impact", **value_labels(group)}
    assert registry.get_sample_value("fairwatch_metric_state", labels) == code
    assert STATE_CODES[STATES[code]] == code


def test_state_help_spells_out_the_codes() -> None:
    doc = families_of(rich_snapshot())["fairwatch_metric_state"].documentation
    assert "0 ok, 1 inconclusive, 2 violation, 3 insufficient_data" in doc


def test_model_level_values() -> None:
    registry = registry_for(rich_snapshot())
    window_wide = {"model": "toxicity", "window": "1h", "attribute": ""}
    assert registry.get_sample_value("fairwatch_overall_auc", window_wide) == 0.92
    assert registry.get_sample_value("fairwatch_theil_index", window_wide) == 0.07
    per_attribute = {**window_wide, "attribute": "identity"}
    assert registry.get_sample_value("fairwatch_power_mean_subgroup_auc", per_attribute) == 0.86
    auc_ci = {"metric": "overall_auc", **window_wide, "group": "", "reference": ""}
    assert registry.get_sample_value("fairwatch_metric_ci_lower", auc_ci) == 0.91
    assert registry.get_sample_value("fairwatch_metric_ci_upper", auc_ci) == 0.93
    # No interval method: no all-NaN CI series.
    theil_ci = {"metric": "theil_index", **window_wide, "group": "", "reference": ""}
    assert registry.get_sample_value("fairwatch_metric_ci_lower", theil_ci) is None


# --------------------------------------------------------------------------------------------------------
# Sizes, coverage, alerts
# --------------------------------------------------------------------------------------------------------


def test_group_and_window_sizes() -> None:
    registry = registry_for(rich_snapshot())
    group = {"model": "toxicity", "window": "1h", "attribute": "identity", "group": "muslim"}
    assert registry.get_sample_value("fairwatch_group_rows", group) == 12
    assert registry.get_sample_value("fairwatch_group_labeled_rows", group) == 9
    assert registry.get_sample_value("fairwatch_group_label_coverage_ratio", group) == 0.75
    window = {"model": "toxicity", "window": "24h"}
    assert registry.get_sample_value("fairwatch_window_rows", window) == 10_000
    assert registry.get_sample_value("fairwatch_window_label_coverage_ratio", window) == 0.8
    attribute = {"model": "toxicity", "window": "1h", "attribute": "identity"}
    assert registry.get_sample_value("fairwatch_groups_dropped", attribute) == 2
    assert registry.get_sample_value("fairwatch_group_missing_rows", attribute) == 7


def test_alerts_mirror_prometheus_alerts() -> None:
    samples = families_of(rich_snapshot())["fairwatch_alerts"].samples
    states = {s.labels["group"]: s.labels["alertstate"] for s in samples}
    assert states == {"white": "firing", "asian": "pending"}
    assert all(s.value == 1 for s in samples)
    assert set(samples[0].labels) == {
        "model", "window", "attribute", "group", "reference", "metric", "basis", "alertstate"
    }  # fmt: skip
    assert {s.labels["basis"] for s in samples} == {"labels"}  # realised alerts carry no basis label


def test_an_estimate_alert_and_its_realised_twin_are_two_series() -> None:
    from dataclasses import replace

    snapshot = rich_snapshot()
    firing = next(a for a in snapshot.alerts if a.state == "firing")
    twin = replace(firing, labels={**firing.labels, "basis": "estimate", "severity": "info"})
    samples = families_of(replace(snapshot, alerts=(*snapshot.alerts, twin)))["fairwatch_alerts"].samples
    bases = sorted(s.labels["basis"] for s in samples if s.labels["group"] == firing.labels["group"])
    assert bases == ["estimate", "labels"]


# --------------------------------------------------------------------------------------------------------
# Self-metrics
# --------------------------------------------------------------------------------------------------------


def test_self_metrics() -> None:
    registry = registry_for(rich_snapshot(), version="9.8.7")
    get = registry.get_sample_value
    model = {"model": "toxicity"}
    assert get("fairwatch_build_info", {"version": "9.8.7"}) == 1
    assert get("fairwatch_evaluations_total", model) == 3
    assert get("fairwatch_evaluation_failures_total", model) == 1
    assert get("fairwatch_rows_read_total", model) == 12_345
    assert get("fairwatch_late_rows_total", model) == 25
    assert get("fairwatch_rows_rejected_total", {**model, "reason": "score_invalid"}) == 3
    assert get("fairwatch_rows_rejected_total", {**model, "reason": "label_invalid"}) == 2
    # the last read's bad rows, each counted once (the counter above counts them per read)
    assert get("fairwatch_last_read_rows_rejected", {**model, "reason": "score_invalid"}) == 1
    assert get("fairwatch_last_read_rows_rejected", {**model, "reason": "label_invalid"}) is None
    assert get("fairwatch_job_errors_total") == 2
    assert get("fairwatch_alerts_sent_total", {"sink": "alertmanager"}) == 4
    assert get("fairwatch_alert_delivery_failures_total", {"sink": "webhook"}) == 1
    assert get("fairwatch_alert_delivery_failures_total", {"sink": "alertmanager"}) == 0
    assert get("fairwatch_alert_notifications_dropped_total", {"sink": "webhook"}) == 2
    assert get("fairwatch_alert_queue_length", {"sink": "webhook"}) == 3
    assert get("fairwatch_evaluation_duration_seconds", model) == 0.25
    assert get("fairwatch_last_evaluation_success_timestamp_seconds", model) == T0.timestamp()
    assert get("fairwatch_last_evaluation_timestamp_seconds", model) == T0.timestamp()
    assert get("fairwatch_source_up", model) == 1
    assert get("fairwatch_model_interval_seconds", model) == 60


def test_counter_and_info_types() -> None:
    families = families_of(rich_snapshot())
    assert families["fairwatch_evaluations"].type == "counter"
    assert families["fairwatch_job_errors"].type == "counter"
    assert families["fairwatch_build"].type == "info"


def test_timestamps_absent_before_first_evaluation() -> None:
    fresh = model_status("new", None, evaluations_total=0, failures_total=0, last_duration_seconds=NAN)
    registry = registry_for(make_snapshot(fresh))
    model = {"model": "new"}
    assert registry.get_sample_value("fairwatch_last_evaluation_success_timestamp_seconds", model) is None
    assert registry.get_sample_value("fairwatch_last_evaluation_timestamp_seconds", model) is None
    assert registry.get_sample_value("fairwatch_evaluation_duration_seconds", model) is None
    assert registry.get_sample_value("fairwatch_evaluations_total", model) == 0
    assert registry.get_sample_value("fairwatch_source_up", model) == 1


def test_no_sample_has_a_timestamp() -> None:
    assert all(s.timestamp is None for f in build_families(rich_snapshot(), version="x") for s in f.samples)


# --------------------------------------------------------------------------------------------------------
# Snapshot swaps
# --------------------------------------------------------------------------------------------------------


def test_vanished_group_vanishes() -> None:
    current = [rich_snapshot()]
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: current[0], version="x"))
    assert registry.get_sample_value("fairwatch_disparate_impact", value_labels("white")) == 0.6

    current[0] = rich_snapshot(groups=[v for v in rich_values() if v.group != "white"], alerts=())
    text = generate_latest(registry).decode()
    assert 'group="white"' not in text
    assert 'group="black"' in text


def test_failed_model_keeps_last_values_and_reports_source_down() -> None:
    good = rich_snapshot()
    status = good.models["toxicity"]
    failed = replace(
        status,
        source_up=False,
        last_attempt=T0 + timedelta(minutes=1),
        last_error="SourceError: table predictions not found",
        failures_total=status.failures_total + 1,
    )
    registry = registry_for(make_snapshot(failed))
    assert registry.get_sample_value("fairwatch_disparate_impact", value_labels("white")) == 0.6
    model = {"model": "toxicity"}
    assert registry.get_sample_value("fairwatch_source_up", model) == 0
    assert registry.get_sample_value("fairwatch_last_evaluation_success_timestamp_seconds", model) == (
        T0.timestamp()
    )
    assert (
        registry.get_sample_value("fairwatch_last_evaluation_timestamp_seconds", model)
        == (T0 + timedelta(minutes=1)).timestamp()
    )
    assert registry.get_sample_value("fairwatch_evaluation_failures_total", model) == 2


def test_registration_does_not_collect() -> None:
    def no_snapshot_yet() -> Snapshot:
        raise AssertionError("collect() called at registration")

    collector = SnapshotCollector(no_snapshot_yet, version="x")
    assert collector.describe() == []
    CollectorRegistry().register(collector)


def test_snapshot_read_once_per_scrape_and_evaluation_families_reused() -> None:
    snapshot = rich_snapshot()
    calls = []

    def get_snapshot() -> Snapshot:
        calls.append(1)
        return snapshot

    collector = SnapshotCollector(get_snapshot, version="x")
    first = list(collector.collect())
    second = list(collector.collect())
    assert len(calls) == 2
    evaluation = len(collector.evaluation_families(snapshot))
    assert 0 < evaluation < len(first)
    assert all(a is b for a, b in zip(first[:evaluation], second[:evaluation], strict=True))

    # only the service's counters changed: the evaluation families are reused, the counters are new
    snapshot = replace(snapshot, job_errors_total=snapshot.job_errors_total + 1)
    third = list(collector.collect())
    assert all(a is b for a, b in zip(first[:evaluation], third[:evaluation], strict=True))
    (job_errors,) = [f for f in third if f.name == "fairwatch_job_errors"]
    assert job_errors.samples[0].value == 3

    snapshot = rich_snapshot()  # an equal but new evaluation is rebuilt: identity, not equality
    fourth = list(collector.collect())
    assert fourth[0] is not first[0]


# --------------------------------------------------------------------------------------------------------
# The real linter
# --------------------------------------------------------------------------------------------------------


def promtool_check_metrics(exposition: bytes) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool_bin(), "check", "metrics"],
        input=exposition.decode("utf-8"),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.integration
def test_promtool_finds_no_problems() -> None:
    failed = replace(rich_snapshot().models["toxicity"], source_up=False)
    other = model_status("other", None, last_duration_seconds=NAN)
    snapshot = replace(rich_snapshot(), models=MappingProxyType({"toxicity": failed, "other": other}))
    exposition = generate_latest(registry_for(snapshot))
    assert b"fairwatch_disparate_impact{" in exposition
    result = promtool_check_metrics(exposition)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.integration
def test_promtool_accepts_the_family_of_every_registry_metric() -> None:
    """Every metric the registry can export, group and model level, under promtool's naming lint."""
    values = [metric_value(metric=name) for name, spec in REGISTRY.items() if spec.level == "group"]
    model_values = [ModelValue(name, 0.5) for name, spec in REGISTRY.items() if spec.level == "model"]
    evaluation = model_evaluation("toxicity", window_result("1h", values, model_values))
    exposition = generate_latest(registry_for(make_snapshot(model_status("toxicity", evaluation))))
    for name in REGISTRY:
        assert f"\nfairwatch_{name}{{".encode() in exposition, name
    result = promtool_check_metrics(exposition)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.integration
def test_promtool_reports_a_bad_exposition() -> None:
    """The check is live: a counter without ``_total`` is reported."""
    bad = b"# HELP requests Requests.\n# TYPE requests counter\nrequests 1\n"
    result = promtool_check_metrics(bad)
    assert result.returncode != 0
    assert "_total" in result.stdout + result.stderr


@pytest.mark.parametrize(("up", "exported"), [(True, 1.0), (False, 0.0), (None, None)])
def test_pane_store_up(up: bool | None, exported: float | None) -> None:
    """1 or 0 as the last evaluation wrote its sealed panes to panes.directory or could not; absent
    for a model without a directory (not "down")."""
    evaluation = replace(rich_snapshot().models["toxicity"].last_evaluation, pane_store_up=up)  # type: ignore[type-var]
    registry = registry_for(make_snapshot(model_status("toxicity", evaluation)))
    assert registry.get_sample_value("fairwatch_pane_store_up", {"model": "toxicity"}) == exported
