"""Prometheus alerting rules generated from the metric registry (``fairwatch rules``).

Two rule groups:

- ``fairwatch-fairness``: one rule per group-level registry metric that has a fair range, all named
  :data:`ALERTNAME` and told apart by a ``metric`` label (Alertmanager routes, groups, silences and
  inhibits on labels, so one name plus ``metric`` needs one route, not one per metric);
- ``fairwatch-health``: the monitor watching itself - values gone stale, a source down, the
  service absent, many rejected rows.

Why the condition is ``fairwatch_metric_state == 2`` and not a PromQL copy of the judgement
------------------------------------------------------------------------------------------
The service already judges every value with the registry's fair range (or the model's
``fair_ranges`` override), the relative range of the AUC family (overall AUC - 0.05), the
``min_samples`` gate and NaN handling, and exports the verdict as ``fairwatch_metric_state``
(0 ok, 1 inconclusive, 2 violation, 3 insufficient_data). Restating ``ci_upper < 0.8 or
ci_lower > 1.25`` in PromQL would be a second implementation of that judgement, missing the
``min_samples`` gate (it is not exported) and silently disagreeing with the running service the
day its config changes without the rules being regenerated. Alerting on the exported state makes
the condition impossible to drift: a value too small to judge is ``insufficient_data`` and never
fires. The fair ranges still appear in the rules, generated from the same registry and config, in
the annotations a person reads (per model when a model overrides a range); the live interval and,
for relative ranges, the live bound are read from the exported companion series.

The rule reproduces the service's alert lifecycle (:mod:`monitor.service.alerting`) too: ``for`` and
``keep_firing_for`` come from ``alerts:``; only ``violation`` starts an alert; a *firing* alert keeps
firing while the value is still out of range (``inconclusive``), found by joining Prometheus' own
``ALERTS`` series - a pending alert is dropped on ``inconclusive``; ``ok``, ``insufficient_data`` or a
vanished series resolve it. The alert's value is the metric's value, not the state code.

The fairness alert has one name, :data:`monitor.service.alerting.ALERTNAME`, whether Prometheus raises it from
these rules or the service pushes it itself: one name to route, silence and inhibit. The two stay two
alerts in Alertmanager, which tells alerts apart by their whole label set: a rule's alert carries the
``job`` and ``instance`` of the series it fired on, the service's own never does, so neither source can
resolve the other's. Both link to the same runbook section when ``alerts.runbook_url`` is set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import NotRequired, TypedDict

import yaml

from metrics_core import REGISTRY, FairRange, MetricSpec, resolve_fair_range
from monitor.config import AlertsConfig, Settings
from monitor.core.text import fair_range_text
from monitor.core.times import format_duration
from monitor.outputs.prometheus import series
from monitor.outputs.prometheus.series import FAMILY_PREFIX, STATE_CODES, VALUE_LABELS
from monitor.service.alerting import ALERTNAME, runbook_link

__all__ = [
    "ALERTNAME",
    "HEALTH_ALERTS",
    "alerting_metrics",
    "build_rules",
    "render_rules",
]

#: Names of the ``fairwatch-health`` alerts, in the order they are written.
HEALTH_ALERTS = (
    "FairwatchEvaluationStale",
    "FairwatchSourceDown",
    "FairwatchAbsent",
    "FairwatchRowsRejected",
)

# Values older than this many evaluation intervals are stale.
STALE_INTERVALS = 3
# Share of the rows read that may be rejected before anyone is told.
REJECTED_RATIO = 0.05
_HEALTH_FOR = timedelta(minutes=5)
_REJECTED_FOR = timedelta(minutes=15)
_REJECTED_RATE_WINDOW = "15m"

# Labels ALERTS has that the state series has not.
_ALERT_ONLY_LABELS = "alertname, alertstate, severity, incident"

_HEADER = """\
# Prometheus alerting rules for fairwatch, generated from the metric registry by `fairwatch rules`.
# Do not edit: regenerate with `fairwatch rules [--config CONFIG] -o rules.yml`.
# Fairness alerts fire on fairwatch_metric_state, the service's own verdict; see docs/runbook.md.
"""


def render_rules(settings: Settings | None = None) -> str:
    """The rule file as YAML text: the registry's defaults, or ``settings``' ranges and ``alerts:``
    (``alerts.runbook_url``: every alert links to its section of the runbook).

    >>> text = render_rules()
    >>> "alert: FairwatchFairnessViolation" in text and "alert: FairwatchEvaluationStale" in text
    True
    """
    body = yaml.dump(
        build_rules(settings),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=4096,
    )
    return _HEADER + body


def build_rules(settings: Settings | None = None) -> RuleFile:
    """The rule file as plain data (``{"groups": [...]}``), in a stable order."""
    alerts = settings.alerts if settings is not None else AlertsConfig()
    fairness = [
        _fairness_rule(spec, variant, alerts)
        for spec in alerting_metrics()
        for variant in _range_variants(spec, settings)
    ]
    return {
        "groups": [
            {"name": "fairwatch-fairness", "rules": fairness},
            {"name": "fairwatch-health", "rules": _health_rules(alerts.severity, alerts.runbook_url)},
        ]
    }


def alerting_metrics() -> list[MetricSpec]:
    """Registry metrics that can raise an alert: judged per group and not informational."""
    return [spec for spec in REGISTRY.values() if spec.level == "group" and not spec.informational]


#: One Prometheus alerting rule, as the rule file writes it (``for`` is a Python keyword).
AlertRule = TypedDict(
    "AlertRule",
    {
        "alert": str,
        "expr": str,
        "for": str,
        "keep_firing_for": NotRequired[str],
        "labels": dict[str, str],
        "annotations": dict[str, str],
    },
)


class RuleGroup(TypedDict):
    name: str
    rules: list[AlertRule]


class RuleFile(TypedDict):
    groups: list[RuleGroup]


# -- fair ranges per model --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Variant:
    """One rule of a metric: the fair range in force for the models its matcher selects."""

    fair_range: FairRange
    matcher: str  # a PromQL label matcher on `model`, or "" for every model
    configured: bool  # the range comes from a model's `fair_ranges`, not the registry


def _range_variants(spec: MetricSpec, settings: Settings | None) -> list[_Variant]:
    """The registry's range for every model, plus one variant per distinct configured override.

    The default variant excludes the overriding models (``model!~"a|b"``), so that a model the
    config does not know - another fairwatch scraped by the same Prometheus - still gets the
    registry's range.
    """
    default = spec.fair_range
    assert default is not None  # alerting_metrics() keeps only metrics with a range
    overrides: dict[FairRange, list[str]] = {}
    for model in settings.models if settings is not None else ():
        fair_range = resolve_fair_range(spec.name, model.fair_ranges)
        if fair_range is not None and fair_range != default:
            overrides.setdefault(fair_range, []).append(model.name)
    others = [name for names in overrides.values() for name in names]
    variants = [_Variant(default, _model_matcher(others, negate=True), configured=False)]
    variants += [_Variant(fr, _model_matcher(names), configured=True) for fr, names in overrides.items()]
    return variants


def _model_matcher(models: Sequence[str], *, negate: bool = False) -> str:
    if not models:
        return ""
    if len(models) == 1:
        return f'model{"!=" if negate else "="}"{models[0]}"'
    # RE2 pattern, then a PromQL string literal: the regex's backslashes are escaped once more
    pattern = "|".join(re.escape(name) for name in models).replace("\\", "\\\\")
    return f'model{"!~" if negate else "=~"}"{pattern}"'


# -- fairness rules ---------------------------------------------------------------------------------------


def _fairness_rule(spec: MetricSpec, variant: _Variant, alerts: AlertsConfig) -> AlertRule:
    expr = _fairness_expr(spec.name, variant.matcher)
    for_ = format_duration(alerts.for_)
    # the incident the service's own alerts name (monitor.evaluation.incidents): the group itself here -
    # a rule sees one series, not whether a part of an intersection is in violation too
    labels = {
        "severity": alerts.severity,
        "metric": spec.name,
        "incident": "{{ $labels.attribute }}={{ $labels.group }}",
    }
    annotations = {
        "summary": _fairness_summary(spec.name, variant.fair_range),
        "description": _fairness_description(spec, variant, alerts.confidence),
    }
    if alerts.runbook_url:
        annotations["runbook_url"] = runbook_link(alerts.runbook_url, spec.name)
    if alerts.keep_firing_for > timedelta(0):  # written after `for`, where people look for it
        keep = format_duration(alerts.keep_firing_for)
        return {
            "alert": ALERTNAME,
            "expr": expr,
            "for": for_,
            "keep_firing_for": keep,
            "labels": labels,
            "annotations": annotations,
        }
    return {"alert": ALERTNAME, "expr": expr, "for": for_, "labels": labels, "annotations": annotations}


def _fairness_expr(metric: str, model_matcher: str) -> str:
    """The metric's value where fairwatch judged it a violation, or a firing alert is still out of range."""
    extra = f", {model_matcher}" if model_matcher else ""
    value = f"{FAMILY_PREFIX}{metric}{{{model_matcher}}}" if model_matcher else f"{FAMILY_PREFIX}{metric}"
    state = f'{series.METRIC_STATE.name}{{metric="{metric}"{extra}}}'
    firing = f'ALERTS{{alertname="{ALERTNAME}", alertstate="firing", metric="{metric}"{extra}}}'
    return (
        f"{value}\n"
        "  and ignoring(metric)\n"
        "(\n"
        f"    {state} == {STATE_CODES['violation']}\n"
        "  or\n"
        "    (\n"
        f"        {state} == {STATE_CODES['inconclusive']}\n"
        f"      and ignoring({_ALERT_ONLY_LABELS})\n"
        f"        {firing}\n"
        "    )\n"
        ")\n"
    )


def _fairness_summary(metric: str, fair_range: FairRange) -> str:
    where = (
        "{{ $labels.attribute }}={{ $labels.group }} (vs {{ $labels.reference }}) "
        "in model {{ $labels.model }}, window {{ $labels.window }}"
    )
    text = f'{metric} for {where}: {{{{ $value | printf "%.3g" }}}}, fair range {_range_text(fair_range)}'
    return _with_series(metric, text)


def _fairness_description(spec: MetricSpec, variant: _Variant, confidence: float) -> str:
    level = f"{round(confidence * 100, 6):g}%"
    lower, upper = _companion_value(series.METRIC_CI_LOWER), _companion_value(series.METRIC_CI_UPPER)
    source = "configured in the model's fair_ranges" if variant.configured else "registry default"
    text = (
        f"{spec.meaning} ({spec.formula}). fairwatch judged the whole {level} interval, {lower} to "
        f"{upper}, to lie outside the fair range {_range_text(variant.fair_range)} ({source}), with "
        "enough rows (min_samples). A firing alert keeps firing while the value stays out of range."
    )
    return _with_series(spec.name, text)


def _range_text(fair_range: FairRange) -> str:
    """``[0.8, 1.25]`` as the service writes it; a relative range with its live bounds."""
    if fair_range.relative_to is None:
        return fair_range_text(*fair_range.resolve())
    anchor, parts, live = fair_range.relative_to, [], []
    if fair_range.min is not None:
        parts.append(f"at least {anchor} {_offset(fair_range.min)}")
        live.append(f"at least {_companion_value(series.METRIC_FAIR_MIN)}")
    if fair_range.max is not None:
        parts.append(f"at most {anchor} {_offset(fair_range.max)}")
        live.append(f"at most {_companion_value(series.METRIC_FAIR_MAX)}")
    return f"{' and '.join(parts)} (now {' and '.join(live)})"


def _offset(x: float) -> str:
    return f"{'-' if x < 0 else '+'} {abs(x):g}"


# The label matchers of the alert's own series, for the companion queries of its annotations.
_SERIES_VAR = "$series"
# Labels that tell a fairwatch value apart: job and instance, added by the scrape, and its own.
_SERIES_KEYS = ("job", "instance", *VALUE_LABELS)


def _with_series(metric: str, text: str) -> str:
    """Prefix ``text`` with the definition of ``$series`` when it queries companion series."""
    if _SERIES_VAR not in text:
        return text
    matchers = ",".join(f"{name}=%q" for name in _SERIES_KEYS)
    args = " ".join(f"$labels.{name}" for name in _SERIES_KEYS)
    return f'{{{{ {_SERIES_VAR} := printf `metric="{metric}",{matchers}` {args} }}}}{text}'


def _companion_value(companion: series.Family) -> str:
    """A template printing the alert's companion series (interval or fair-range bound), 3 digits."""
    return (
        f'{{{{ with printf "{companion.name}{{%s}}" {_SERIES_VAR} | query }}}}'
        '{{ . | first | value | printf "%.3g" }}{{ else }}unknown{{ end }}'
    )


# -- health rules -----------------------------------------------------------------------------------------


def _health_rules(severity: str, runbook_url: str | None) -> list[AlertRule]:
    """The monitor watching itself. A blind monitor is as urgent as the alerts it can no longer
    raise, so these take the fairness alerts' severity; rejected rows are only ``info``."""
    interval = series.MODEL_INTERVAL.name
    success = series.LAST_SUCCESS.name
    rules = [
        _health_rule(
            "FairwatchEvaluationStale",
            f"(time() - {success}) > {STALE_INTERVALS} * {interval}\nor\n({interval} unless {success})\n",
            _HEALTH_FOR,
            severity,
            "fairwatch has no fresh values for model {{ $labels.model }}",
            f"No successful evaluation of model {{{{ $labels.model }}}} for more than {STALE_INTERVALS} "
            "evaluation intervals (or none since the service started): its dashboards show old values and "
            "its fairness alerts can neither fire nor resolve. Check fairwatch_source_up, "
            "fairwatch_evaluation_failures_total, fairwatch_job_errors_total and the service log.",
        ),
        _health_rule(
            "FairwatchSourceDown",
            f"{series.SOURCE_UP.name} == 0\n",
            _HEALTH_FOR,
            severity,
            "fairwatch cannot read the prediction log of model {{ $labels.model }}",
            "Every evaluation of model {{ $labels.model }} fails to read its source (database unreachable, "
            "table or column missing, bad credentials); the last good values stay exported and grow old. "
            "The cause is in the service log, once per failure streak.",
        ),
        _health_rule(
            "FairwatchAbsent",
            f'absent({series.BUILD.name}_info)\nor\nup{{job=~".*fairwatch.*"}} == 0\n',
            _HEALTH_FOR,
            severity,
            "fairwatch is not being scraped",
            "Prometheus has no fairwatch_build_info series, or a fairwatch target is down: no fairness "
            "value is being watched. Check the fairwatch pod/process, its /healthz and the scrape target "
            "in Prometheus (Status > Targets).",
        ),
        _health_rule(
            "FairwatchRowsRejected",
            f"sum without (reason) (rate({series.ROWS_REJECTED.name}[{_REJECTED_RATE_WINDOW}]))\n"
            f"  / rate({series.ROWS_READ.name}[{_REJECTED_RATE_WINDOW}])\n"
            f"> {REJECTED_RATIO:g}\n",
            _REJECTED_FOR,
            "info",
            "fairwatch rejects {{ $value | humanizePercentage }} of the rows of model {{ $labels.model }}",
            f"More than {REJECTED_RATIO:.0%} of the rows read for model {{{{ $labels.model }}}} are dropped "
            "as invalid (see fairwatch_rows_rejected_total by reason): the metrics describe only the rest, "
            "which may not be representative of every group.",
        ),
    ]
    for rule in rules:
        if runbook_url:
            rule["annotations"]["runbook_url"] = runbook_link(runbook_url, rule["alert"])
    return rules


def _health_rule(
    name: str, expr: str, for_: timedelta, severity: str, summary: str, description: str
) -> AlertRule:
    return {
        "alert": name,
        "expr": expr,
        "for": format_duration(for_),
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "description": description},
    }


# -- YAML -------------------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """SafeDumper writing multi-line strings (the PromQL) as literal blocks, as people write rules."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_representer)
