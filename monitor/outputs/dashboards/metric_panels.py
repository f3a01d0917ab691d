"""One time series per metric: the value, its interval as a shaded band and its fair range as a shaded region.

Which metrics: exactly those :func:`~monitor.tasks.metrics_for` gives the model (the evaluator
asks it too), so a model's dashboard has no panel that could only say "No data". The shipped
dashboard draws what a binary model with the default columns computes.

A per-group metric's panel is repeated for each selected group: Grafana fills between two
series only when it can name them, and within one group's copy the interval's bounds are
always "CI low" and "CI high". The fair range comes from the model's ``fair_ranges`` or the
registry (never typed twice): an absolute range becomes thresholds, green inside and red
outside; a range relative to another value (the AUC family's, ``overall_auc - 0.05``) is
drawn from the ``fairwatch_metric_fair_min``/``_max`` series the service exports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from metrics_core import RATES, REGISTRY, FairRange, MetricSpec, resolve_fair_range
from monitor.outputs.dashboards.widgets import (
    DASHED,
    GROUP,
    WINDOW,
    Panel,
    Query,
    fixed_color,
    override,
    sel,
    thresholds,
    timeseries,
)
from monitor.outputs.prometheus import series
from monitor.tasks import metrics_for

if TYPE_CHECKING:
    from monitor.config import ModelConfig

#: Display names of the interval's bounds; the upper series fills down to the lower one.
CI_LOW, CI_HIGH = "CI low", "CI high"
FAIR_MIN, FAIR_MAX = "fair min", "fair max"
#: Copies of a per-group panel on one line.
GROUPS_PER_LINE = 4

#: Interval methods named after people, as a reader expects them written.
_METHOD_NAMES = {"wilson": "Wilson", "fieller": "Fieller", "zou": "Zou (Fisher z)"}
_VALUE, _BAND, _OUTSIDE = "dark-blue", "blue", "red"


@dataclass(frozen=True)
class MetricPlan:
    """A metric to draw and the fair range in force for the model."""

    spec: MetricSpec
    fair_range: FairRange | None
    configured: bool  # from the model's fair_ranges, not the registry


def metric_plans(model: ModelConfig | None) -> list[MetricPlan]:
    """The metrics ``model`` computes, in registry order; without one, a default binary model's."""
    model = model or default_binary_model()
    names = {spec.name for spec in metrics_for(model)}
    plans = []
    for name, spec in REGISTRY.items():
        if name in names:
            fair_range = resolve_fair_range(name, model.fair_ranges)
            plans.append(MetricPlan(spec, fair_range, configured=fair_range != spec.fair_range))
    return plans


def default_binary_model() -> ModelConfig:
    """A binary model with the default columns (a score and a label): the shipped dashboard's."""
    from monitor.config import ModelConfig

    group = {"attribute": "attribute", "kind": "indicator", "columns": ["group"]}
    source = {"kind": "memory", "name": "binary"}
    return ModelConfig.model_validate({"name": "binary", "source": source, "groups": [group]})


def metric_panel(plan: MetricPlan) -> Panel:
    """The metric over time with its interval and fair range: one copy per group, or one per window."""
    spec, name = plan.spec, plan.spec.name
    per_group = spec.level == "group"
    labels = GROUP if per_group else WINDOW
    legend = "{{attribute}}={{group}} vs {{reference}}" if per_group else "{{window}} {{attribute}}"
    queries: list[Query] = [(sel(name, labels), legend)]
    overrides, notes = [], []
    if spec.interval != "none":
        queries += [
            (sel(series.METRIC_CI_LOWER, labels, metric=name), CI_LOW),
            (sel(series.METRIC_CI_UPPER, labels, metric=name), CI_HIGH),
        ]
        band = {"color": fixed_color(_BAND), "custom__lineWidth": 0}
        band |= {"custom__hideFrom": {"legend": True, "tooltip": False, "viz": False}}
        overrides += [
            override("byFrameRefID", "B", **band),
            override("byFrameRefID", "C", **band, custom__fillBelowTo=CI_LOW, custom__fillOpacity=25),
        ]
        notes.append(f"Blue band: the {_METHOD_NAMES.get(spec.interval, spec.interval)} confidence interval.")
    fair = plan.fair_range
    custom: dict[str, Any] = {}
    absolute = fair if fair is not None and fair.relative_to is None else None
    if absolute is not None:
        # Soft axis limits keep the whole fair range in view when the values sit inside it.
        soft = {"axisSoftMin": absolute.min, "axisSoftMax": absolute.max}
        custom = {"thresholdsStyle": {"mode": "line+area"}} | {k: v for k, v in soft.items() if v is not None}
        notes.append("Background: green inside the fair range, red outside.")
    elif fair is not None:
        queries_before = len(queries)
        overrides += _exported_range(name, fair, queries)
        notes.append(
            "Dashed red: the fair range in force, as the service exports it"
            + (", shaded below its lower end." if len(queries) - queries_before == 1 else ".")
        )
    rate = name in RATES  # a per-group rate (selection rate, TPR, ...): drawn as a percentage
    color = fixed_color(_VALUE) if per_group else {"mode": "palette-classic"}
    return timeseries(
        f"{name}: $group" if per_group else name,
        "percentunit" if rate else "none",
        _metric_description(plan, notes),
        *queries,
        custom=custom,
        defaults={"thresholds": thresholds(absolute), "decimals": 1 if rate else 3, "color": color},
        overrides=overrides,
        per_group=GROUPS_PER_LINE if per_group else 0,
    )


def _exported_range(name: str, fair: FairRange, queries: list[Query]) -> list[dict[str, Any]]:
    """Queries (appended) and overrides drawing a relative fair range from the exported bounds.

    Both ends: the fair region between them is shaded. Only a lower end: the region below it,
    outside the range, is shaded (a series fills down to the axis).
    """
    refs = {}
    bounds = (
        ("min", series.METRIC_FAIR_MIN, "> -Inf", FAIR_MIN),
        ("max", series.METRIC_FAIR_MAX, "< +Inf", FAIR_MAX),
    )
    for bound, family, finite, title in bounds:
        if getattr(fair, bound) is not None:
            queries.append((f"{sel(family, GROUP, metric=name)} {finite}", title))
            refs[title] = chr(ord("A") + len(queries) - 1)
    line = {"color": fixed_color(_OUTSIDE), "custom__lineWidth": 2, "custom__lineStyle": DASHED}
    shade: dict[str, dict[str, Any]] = {}
    if len(refs) == 2:
        shade[FAIR_MAX] = {"custom__fillBelowTo": FAIR_MIN, "custom__fillOpacity": 10}
    elif FAIR_MIN in refs:
        shade[FAIR_MIN] = {"custom__fillOpacity": 10}
    overrides = [override("byFrameRefID", ref, **line, **shade.get(title, {})) for title, ref in refs.items()]
    return overrides


def _metric_description(plan: MetricPlan, notes: list[str]) -> str:
    spec, fair_range = plan.spec, plan.fair_range
    parts = [f"{spec.meaning[0].upper()}{spec.meaning[1:]}. Formula: {spec.formula}."]
    parts.append(
        "One panel per selected group, against its reference."
        if spec.level == "group"
        else "One line per window."
    )
    if fair_range is None:
        parts.append(f"Informational: no fair range, never alerts ({spec.source}).")
    elif plan.configured:
        parts.append(f"Fair range: {fair_range.describe()} (configured in fair_ranges).")
    else:
        parts.append(f"Fair range: {fair_range.describe()} - {spec.source}.")
    if spec.ideal is not None:
        parts.append(f"Ideal: {spec.ideal:g}.")
    return " ".join([*parts, *notes, "Gaps: undefined values (see the state table)."])
