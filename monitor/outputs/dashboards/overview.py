"""The dashboard's fixed parts: the overview (states, alerts, current values), each group's state
timeline, the alert annotations, groups and service health."""

from __future__ import annotations

import math
from typing import Any

from monitor.outputs.dashboards.widgets import (
    ATTRIBUTE,
    COMPANION,
    DATASOURCE,
    MODEL,
    RATE,
    STATE_COLORS,
    STATE_MAPPINGS,
    WINDOW,
    Panel,
    matchers,
    override,
    panel,
    sel,
    stat,
    table,
    target,
    timeseries,
)
from monitor.outputs.prometheus import series
from monitor.outputs.prometheus.rules import ALERTNAME, build_rules
from monitor.outputs.prometheus.series import FAMILY_PREFIX, STATE_CODES

# --- overview -------------------------------------------------------------------------------


def overview_panels(group_metrics: list[str]) -> list[Panel]:
    stats = [
        stat(
            title,
            f"Number of (model, window, attribute, group, reference, metric) values in state {state} now.",
            f"count({sel(series.METRIC_STATE, COMPANION)} == {STATE_CODES[state]}) or vector(0)",
            STATE_COLORS[state],
        )
        for title, state in (
            ("Values ok", "ok"),
            ("Inconclusive", "inconclusive"),
            ("In violation", "violation"),
            ("Insufficient data", "insufficient_data"),
        )
    ]
    firing = sel(series.ALERTS, COMPANION, alertstate="firing", basis="labels")
    age = f"time() - {sel(series.LAST_SUCCESS, MODEL)}"
    stats += [
        stat(
            "Firing alerts",
            'fairwatch alerts firing now on realised values (alerts from estimates, basis="estimate", '
            "are in the Alerts table).",
            f"count({firing}) or vector(0)",
            "red",
        ),
        stat(
            "Models behind schedule",
            "Models whose values are older than twice their evaluation interval: their numbers on this "
            "dashboard are stale (see Service health).",
            f"count(({age}) > 2 * {sel(series.MODEL_INTERVAL, MODEL)}) or vector(0)",
            "red",
        ),
    ]
    return [*stats, _alerts_table(), _state_table(group_metrics)]


def _alerts_table() -> Panel:
    expr = f"max by (model, window, attribute, group, reference, metric, basis, alertstate) ({sel(series.ALERTS, COMPANION)})"
    colors = {"type": "value", "options": {"firing": {"color": "red"}, "pending": {"color": "orange"}}}
    return table(
        "Alerts",
        "Pending and firing fairwatch alerts (fairwatch_alerts, as Prometheus' ALERTS): a value whose "
        "interval lies entirely outside its fair range, for the configured `for` duration. basis: labels "
        "(realised) or estimate (estimated before the labels, docs/nowcasting.md).",
        [target("A", expr, table=True)],
        size=(24, 6),
        overrides=[
            override("byName", "alertstate", mappings=[colors], custom__cellOptions={"type": "color-text"})
        ],
        transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True}}}],
    )


def _state_table(group_metrics: list[str]) -> Panel:
    by = "max by (model, window, attribute, group, reference, metric)"
    state = f"{by} ({sel(series.METRIC_STATE, COMPANION)})"
    # The value families have no `metric` label: it is taken from the family name, and the
    # `and` keeps the values of the metrics selected in $metric.
    values = f'{{__name__=~"{FAMILY_PREFIX}({"|".join(group_metrics)})",{matchers()}}}'
    columns = {
        "state": state,
        "value": f'{by} (label_replace({values}, "metric", "$1", "__name__", "{FAMILY_PREFIX}(.+)")) and {state}',
        **{
            name: f"{by} ({sel(family, COMPANION)})"
            for name, family in (
                ("CI low", "metric_ci_lower"),
                ("CI high", "metric_ci_upper"),
                ("fair min", "metric_fair_min"),
                ("fair max", "metric_fair_max"),
                ("support", "metric_support"),
            )
        },
    }
    refs = dict(zip("ABCDEFG", columns, strict=True))
    order = [*COMPANION[:4], "reference", "metric", *columns]
    organize = {
        "excludeByName": {"Time": True},
        "indexByName": {name: i for i, name in enumerate(order)},
        "renameByName": {f"Value #{ref}": name for ref, name in refs.items()},
    }
    return table(
        "Current values and states",
        "Every value of the selected groups and metrics now: the value, its confidence interval, the fair "
        "range in force (-Inf/+Inf: open end) and the support (smallest denominator, gated by "
        "min_samples). State: ok (inside the fair range), inconclusive (the interval straddles a bound), "
        "violation (the interval lies entirely outside), insufficient data (support below min_samples, or "
        "undefined).",
        [target(ref, columns[name], table=True) for ref, name in refs.items()],
        size=(24, 10),
        defaults={"decimals": 3, "custom": {"align": "auto", "filterable": True}},
        overrides=[
            override(
                "byName", "state", mappings=STATE_MAPPINGS, custom__cellOptions={"type": "color-background"}
            ),
            override("byName", "support", unit="short", decimals=0),
        ],
        options={"sortBy": [{"displayName": "state", "desc": True}]},
        transformations=[{"id": "merge", "options": {}}, {"id": "organize", "options": organize}],
    )


# --- states over time and alert annotations ---------------------------------------------------


def state_timeline(fairness_metrics: list[str]) -> Panel:
    """One state timeline per selected group: a row per fairness metric (and reference)."""
    only = f'metric=~"{"|".join(fairness_metrics)}",'
    expr = f"{series.METRIC_STATE.name}{{{only}{matchers(COMPANION)}}}"
    rows = len(fairness_metrics)
    return panel(
        "state-timeline",
        "States: $group",
        "The state of each fairness metric of the group over time (fairwatch_metric_state): ok (inside "
        "the fair range), inconclusive (the interval straddles a bound), violation (the interval lies "
        "entirely outside), insufficient data. One panel per selected group.",
        [target("A", expr, "{{metric}} vs {{reference}}")],
        unit="none",
        size=(24, max(6, math.ceil((20 * rows + 60) / 30))),  # about 20 px a row, 30 px a grid unit
        defaults={"mappings": STATE_MAPPINGS, "color": {"mode": "thresholds"}},
        options={
            "mergeValues": True,
            "showValue": "never",
            "alignValue": "left",
            "rowHeight": 0.8,
            "legend": {"showLegend": True, "displayMode": "list", "placement": "bottom"},
            "tooltip": {"mode": "single", "sort": "none"},
        },
        per_group=2,
    )


def alert_annotations() -> dict[str, list[dict[str, Any]]]:
    """Firing fairness alerts (the service's ``fairwatch_alerts``) of the selected groups and
    metrics, and the service's own alerts from the generated rules (Prometheus' ``ALERTS``),
    drawn as regions on every time series."""
    health = "|".join(
        r["alert"] for g in build_rules()["groups"] for r in g["rules"] if r["alert"] != ALERTNAME
    )
    builtin = {"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True}
    builtin |= {
        "hide": True,
        "iconColor": "rgba(0, 211, 255, 1)",
        "name": "Annotations & Alerts",
        "type": "dashboard",
    }
    prometheus = {
        "datasource": DATASOURCE,
        "enable": True,
        "hide": False,
        "step": "1m",
        "useValueForTime": False,
    }
    return {
        "list": [
            builtin,
            prometheus
            | {
                "name": "Fairness alerts",
                "iconColor": "red",
                "expr": sel(series.ALERTS, COMPANION, alertstate="firing", basis="labels"),
                "titleFormat": "{{metric}} alert firing",
                "textFormat": "{{attribute}}={{group}} vs {{reference}}, window {{window}}",
                "tagKeys": "model,metric,group",
            },
            prometheus
            | {
                "name": "Service alerts",
                "iconColor": "orange",
                # FairwatchAbsent has no model label: the empty alternative keeps it
                "expr": f'ALERTS{{alertname=~"{health}",alertstate="firing",model=~"$model|"}}',
                "titleFormat": "{{alertname}}",
                "textFormat": "{{model}}",
                "tagKeys": "alertname,model",
            },
        ]
    }


# --- groups and service health --------------------------------------------------------------


def group_panels() -> list[Panel]:
    groups = "{{attribute}}={{group}}"
    return [
        timeseries(
            "Group sizes",
            "short",
            "Rows of each group in the window (fairwatch_group_rows); a group's values are insufficient "
            "data while their denominators are below min_samples.",
            (sel(series.GROUP_ROWS), groups),
        ),
        timeseries(
            "Label coverage",
            "percentunit",
            "Share of each group's rows with a label (fairwatch_group_label_coverage_ratio): the "
            "label-based metrics rest on these rows only. Dashed: the whole window.",
            (sel(series.GROUP_LABEL_COVERAGE), groups),
            (sel(series.WINDOW_LABEL_COVERAGE, WINDOW), "{{window}} window"),
            dashed="B",
            defaults={"min": 0, "max": 1},
        ),
        timeseries(
            "Window rows",
            "short",
            "Rows in the window (fairwatch_window_rows).",
            (sel(series.WINDOW_ROWS, WINDOW), "{{model}} {{window}}"),
            size=(8, 8),
        ),
        timeseries(
            "Groups dropped",
            "short",
            "Groups of the attribute not exported: beyond the max_groups cap or under min_size "
            "(fairwatch_groups_dropped).",
            (sel(series.GROUPS_DROPPED, ATTRIBUTE), "{{attribute}}"),
            size=(8, 8),
        ),
        timeseries(
            "Rows without a group",
            "short",
            "Rows of the window with no value for a categorical attribute (fairwatch_group_missing_rows).",
            (sel(series.GROUP_MISSING_ROWS, ATTRIBUTE), "{{attribute}}"),
            size=(8, 8),
        ),
    ]


def health_panels() -> list[Panel]:
    up_down = {
        "0": {"text": "down", "color": "red", "index": 0},
        "1": {"text": "up", "color": "green", "index": 1},
    }
    source_up = panel(
        "state-timeline",
        "Source up",
        "Whether each model's last evaluation could read its source (fairwatch_source_up); while it is "
        "down, the last values stay exported.",
        [target("A", sel(series.SOURCE_UP, MODEL), "{{model}}")],
        unit="none",
        size=(8, 6),
        defaults={"mappings": [{"type": "value", "options": up_down}], "color": {"mode": "thresholds"}},
        options={"mergeValues": True, "showValue": "auto", "rowHeight": 0.9, "legend": {"showLegend": False}},
    )
    return [
        timeseries(
            "Evaluation age",
            "s",
            "Seconds since each model's values were last computed (time() - "
            "fairwatch_last_evaluation_success_timestamp_seconds). Dashed: the model's interval; an age "
            "far above it means the numbers on this dashboard are stale.",
            (f"time() - {sel(series.LAST_SUCCESS, MODEL)}", "{{model}}"),
            (sel(series.MODEL_INTERVAL, MODEL), "{{model}} interval"),
            size=(8, 8),
            dashed="B",
        ),
        timeseries(
            "Evaluation duration",
            "s",
            "Duration of each model's last evaluation, reading the source and computing every window "
            "(fairwatch_evaluation_duration_seconds).",
            (sel(series.EVALUATION_DURATION, MODEL), "{{model}}"),
            size=(8, 8),
        ),
        timeseries(
            "Evaluation failures",
            "short",
            "Failed evaluations per model (increase of fairwatch_evaluation_failures_total); the last good "
            "values stay exported meanwhile, so watch the evaluation age too.",
            (f"increase({sel(series.EVALUATION_FAILURES, MODEL)}{RATE})", "{{model}}"),
            size=(8, 8),
            bars=True,
        ),
        timeseries(
            "Rows rejected",
            "cps",
            "Invalid rows dropped per second, by model and reason (rate of fairwatch_rows_rejected_total): "
            "score_invalid, score_out_of_range, prediction_invalid, label_invalid, timestamp_invalid, "
            "line_invalid.",
            (
                f"sum by (model, reason) (rate({sel(series.ROWS_REJECTED, MODEL)}{RATE}))",
                "{{model}} {{reason}}",
            ),
        ),
        timeseries(
            "Rows read",
            "cps",
            "Prediction rows read from each model's source per second (rate of fairwatch_rows_read_total).",
            (f"sum by (model) (rate({sel(series.ROWS_READ, MODEL)}{RATE}))", "{{model}}"),
        ),
        source_up,
        timeseries(
            "Scheduler job errors",
            "short",
            "Scheduled runs that crashed or were missed (increase of fairwatch_job_errors_total); see the "
            "service log.",
            (f"sum(increase({series.JOB_ERRORS.name}{RATE}))", "job errors"),
            size=(8, 6),
            bars=True,
        ),
        timeseries(
            "Alert deliveries",
            "short",
            "Alert notifications delivered and failed, per sink (increase of fairwatch_alerts_sent_total "
            "and fairwatch_alert_delivery_failures_total).",
            (f"sum by (sink) (increase({series.ALERTS_SENT.name}{RATE}))", "{{sink}} sent"),
            (
                f"sum by (sink) (increase({series.ALERT_DELIVERY_FAILURES.name}{RATE}))",
                "{{sink}} failed",
            ),
            size=(8, 6),
            bars=True,
        ),
    ]
