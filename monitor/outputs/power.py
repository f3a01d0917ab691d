"""Power planning for a configured model: how much data each alert needs (``fairwatch power``).

From one evaluation of the model's windows this reads the observed traffic (rows per day of
the longest window), each group's share and the reference's rates, and asks
:mod:`metrics_core.stats.power`, per group and alerting metric:

- how many rows (and days at the observed traffic) it takes to detect a stated departure -
  a true value beyond the fair range - with 90% power, with the service's own intervals
  (level, ``alerts.method``);
- the smallest departure each configured window detects with that power.

Only metrics whose ``contrast`` is declared in the registry can be planned (differences and
ratios of rates, the Jigsaw AUCs). The reference's label denominators (its positives or
negatives) are taken to have the group's label prevalence: a planning assumption, shown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

import metrics_core as mc
from monitor.config import ModelConfig, Settings
from monitor.core.errors import ConfigError
from monitor.evaluation.results import ModelEvaluation, WindowResult
from monitor.service.snapshot import Snapshot

__all__ = [
    "PlanRow",
    "default_departure",
    "parse_effects",
    "plan_model",
    "plans_as_rows",
    "snapshot_plans",
    "with_planning_rates",
]

_DAY = 86400.0


@dataclass(frozen=True)
class PlanRow:
    """One group and metric: what detecting ``departure`` takes, and what each window can detect."""

    model: str
    attribute: str
    group: str
    reference: str
    metric: str
    value: float  # the current estimate (longest window)
    bound: float  # the fair range's bound the departure crosses
    departure: float  # the true value to detect
    rows: float  # rows in the group's denominator needed (inf: out of reach)
    current_rows: float  # ... in the longest window now
    days: float  # at the observed traffic (inf: never; NaN: no traffic)
    detectable: Mapping[str, float]  # window name -> smallest departure detected with the power
    note: str = ""


def default_departure(spec: mc.MetricSpec, bound: float, below: bool) -> float:
    """The departure planned for by default: half the fair range's width beyond its bound.

    A ratio moves by a factor (0.8 -> 0.7, 1.25 -> 1.43); a difference by 0.05 beyond +-0.1; an
    AUC by 0.05 below its bound.

    >>> default_departure(mc.get_metric("disparate_impact"), 0.8, True)
    0.7
    """
    if spec.contrast == "ratio":
        return round(bound * (7 / 8 if below else 8 / 7), 6)
    fair = spec.fair_range
    half_width = 0.05 if fair is None or fair.min is None or fair.max is None else (fair.max - fair.min) / 4
    return round(bound - half_width if below else bound + half_width, 6)


def with_planning_rates(settings: Settings) -> Settings:
    """The settings with every binary model also computing the per-group rates plans read."""
    rates = [name for name in mc.RATES if name in mc.REGISTRY]
    models = [
        m.model_copy(update={"metrics": [*m.metrics, *(r for r in rates if r not in m.metrics)]})
        if m.metrics is not None and m.task == "binary"
        else m
        for m in settings.models
    ]
    return settings.model_copy(update={"models": models})


def _rates(window: WindowResult) -> dict[tuple[str, str, str], mc.MetricValue]:
    return {(v.attribute, v.group, v.metric): v for v in window.values}


def plan_model(
    evaluation: ModelEvaluation,
    model: ModelConfig,
    *,
    departures: Mapping[str, float] | None = None,
    confidence: float = 0.95,
    method: mc.Method = "fixed",
    power: float = 0.9,
) -> list[PlanRow]:
    """The plan of every plannable alerting value of the model's longest window."""
    if not evaluation.windows:
        return []
    lengths = {w.name: w.length for w in model.windows}
    longest = max(evaluation.windows, key=lambda w: lengths.get(w.window, timedelta(0)))
    length = lengths.get(longest.window, longest.end - longest.start)
    per_day = _DAY / max(length.total_seconds(), 1.0)  # rows of the longest window per day of traffic
    values = _rates(longest)
    rows = []
    for v in longest.values:
        spec = mc.get_metric(v.metric)
        if spec.contrast is None or spec.informational or not math.isfinite(v.value):
            continue
        plan_row = _plan_value(
            v, spec, values, evaluation, model, departures or {}, confidence, method, power
        )
        if plan_row is None:
            continue
        # each window's detectable departure, at the rows that window holds for this group
        detect = {}
        for w in evaluation.windows:
            scale = lengths.get(w.window, length).total_seconds() / max(length.total_seconds(), 1.0)
            detect[w.window] = mc.detectable(
                plan_row[0],
                plan_row[1] * scale,
                toward="below" if plan_row[3] < plan_row[0].bound else "above",
            )
        plan, current, needed, departure, note = plan_row
        days = needed / (current * per_day) if current > 0 else math.nan
        rows.append(
            PlanRow(
                model=evaluation.model,
                attribute=v.attribute,
                group=v.group,
                reference=v.reference,
                metric=v.metric,
                value=v.value,
                bound=plan.bound,
                departure=departure,
                rows=needed,
                current_rows=current,
                days=days if math.isfinite(needed) else math.inf,
                detectable=detect,
                note=note,
            )
        )
    return rows


def _plan_value(
    v: mc.MetricValue,
    spec: mc.MetricSpec,
    values: Mapping[tuple[str, str, str], mc.MetricValue],
    evaluation: ModelEvaluation,
    model: ModelConfig,
    departures: Mapping[str, float],
    confidence: float,
    method: mc.Method,
    power: float,
) -> tuple[mc.Plan, float, float, float, str] | None:
    """``(plan, current rows, rows needed, departure, note)`` for one value, or None when unplannable."""
    below = v.value < _ideal(spec)
    bound = v.fair_min if below else v.fair_max
    if not math.isfinite(bound):
        below, bound = not below, (v.fair_max if below else v.fair_min)
    if not math.isfinite(bound):
        return None
    departure = departures.get(spec.name, default_departure(spec, bound, below))
    if (departure - bound) * (-1 if below else 1) <= 0:
        below = departure < bound  # a stated departure decides the side
    note = ""
    if spec.contrast == "auc":
        sizes = _auc_sets(v, values)
        if sizes is None:
            return None
        n, m = sizes
        plan = mc.Plan(kind="auc", bound=bound, reference_ratio=m / n, level=confidence, power=power)
        note = "AUC: Newcombe's score interval (Hanley-McNeil variance)"
    else:
        rate = values.get((v.attribute, v.group, spec.support[0]))
        if rate is None or not math.isfinite(rate.value) or rate.support <= 0:
            return None
        group_rate, n = rate.value, rate.support
        ref_rate = group_rate - v.value if spec.contrast == "difference" else group_rate / v.value
        ratio = v.n_reference / max(v.n_group, 1.0)
        if spec.support[0] != "selection_rate":
            note = "reference's labels assumed at the group's prevalence"
        if not 0 < ref_rate < 1:
            return None
        plan = mc.Plan(
            kind="difference" if spec.contrast == "difference" else "ratio",
            reference_rate=ref_rate,
            bound=bound,
            reference_ratio=ratio,
            level=confidence,
            method=method,
            power=power,
        )
    try:
        needed = mc.rows_needed(plan, departure)
    except ValueError:  # the departure is impossible at this reference rate (a rate beyond [0, 1])
        return None
    return plan, float(n), needed, departure, note


def _ideal(spec: mc.MetricSpec) -> float:
    return spec.ideal if spec.ideal is not None else 0.0


def _auc_sets(
    v: mc.MetricValue, values: Mapping[tuple[str, str, str], mc.MetricValue]
) -> tuple[float, float] | None:
    """Rows in the AUC's two sets: group positives / negatives from the group's TPR and FPR supports."""
    tpr = values.get((v.attribute, v.group, "true_positive_rate"))
    fpr = values.get((v.attribute, v.group, "false_positive_rate"))
    if tpr is None or fpr is None or tpr.support <= 0 or fpr.support <= 0:
        return None
    positives, negatives = tpr.support, fpr.support
    scale = v.n_reference / max(v.n_group, 1.0)  # the reference at the group's prevalence
    sets = {
        "group+": positives,
        "group-": negatives,
        "reference+": positives * scale,
        "reference-": negatives * scale,
    }
    x, y = (sets[name] for name in mc.get_metric(v.metric).support)
    return (x, y) if x <= y else (y, x)


def plans_as_rows(plans: Sequence[PlanRow]) -> list[dict[str, object]]:
    """JSON-ready rows (``fairwatch power --format json``); inf and NaN as null."""

    def number(x: float) -> float | None:
        return float(x) if math.isfinite(x) else None

    return [
        {
            "model": p.model,
            "attribute": p.attribute,
            "group": p.group,
            "reference": p.reference,
            "metric": p.metric,
            "value": number(p.value),
            "bound": number(p.bound),
            "departure": p.departure,
            "rows_needed": number(p.rows),
            "rows_now": number(p.current_rows),
            "days_needed": number(p.days),
            "detectable": {k: number(x) for k, x in p.detectable.items()},
            "note": p.note,
        }
        for p in plans
    ]


def parse_effects(effects: Sequence[str]) -> dict[str, float]:
    """``["disparate_impact=0.7", ...]`` -> ``{"disparate_impact": 0.7}``; a bad one names itself.

    >>> parse_effects(["air=0.7"])
    {'disparate_impact': 0.7}
    """
    out = {}
    for text in effects:
        name, _, value = text.partition("=")
        try:
            spec = mc.get_metric(name.strip())
            out[spec.name] = float(value)
        except ValueError as exc:
            raise ConfigError(
                f"--effect {text!r}: {exc if name and value else 'write METRIC=VALUE'}"
            ) from None
        if spec.contrast is None:
            raise ConfigError(
                f"--effect {text!r}: {spec.name} cannot be planned (not a contrast of rates or an AUC)"
            )
    return out


def snapshot_plans(snapshot: Snapshot, settings: Settings) -> list[dict[str, object]]:
    """Power plans of every model's last evaluation in ``snapshot``, at 90% power (``/api/v1/power``)."""
    configs = {m.name: m for m in settings.models}
    plans = []
    for status in snapshot.models.values():
        if status.last_evaluation is None or status.name not in configs:
            continue
        plans += plan_model(
            status.last_evaluation,
            configs[status.name],
            confidence=settings.alerts.confidence,
            method=settings.alerts.method,
        )
    return plans_as_rows(plans)
