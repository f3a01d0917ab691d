"""One time series per metric: the metric per group, its interval and the fair range in force.

The fair ranges come from the registry the service judges with (and the alerting rules are
generated from), or from the models' ``fair_ranges``: never typed twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from metrics_core import RATES, REGISTRY, FairRange, MetricSpec, resolve_fair_range
from monitor.config import Settings
from monitor.dashboard.widgets import (
    DASHED,
    DOTTED,
    GROUP,
    WINDOW,
    Panel,
    Query,
    override,
    sel,
    thresholds,
    timeseries,
)
from monitor.tasks import metrics_for


@dataclass(frozen=True)
class MetricPlan:
    """A metric to draw and the fair ranges in force, each with the models using it."""

    spec: MetricSpec
    ranges: dict[FairRange | None, tuple[str, ...]]

    @property
    def fixed_range(self) -> FairRange | None:
        """The one absolute range of every model, drawable as thresholds; else None."""
        if len(self.ranges) != 1:
            return None
        (only,) = self.ranges
        return only if only is not None and only.relative_to is None else None


# --- which metrics, with which ranges -------------------------------------------------------

#: Interval methods named after people, as a reader expects them written.
_METHOD_NAMES = {"wilson": "Wilson", "fieller": "Fieller", "zou": "Zou (Fisher z)"}


def metric_plans(settings: Settings | None) -> list[MetricPlan]:
    """Every registry metric; with ``settings``, the metrics its models compute (:func:`metrics_for`)."""
    if settings is None:
        return [MetricPlan(spec, {spec.fair_range: ()}) for spec in REGISTRY.values()]
    ranges: dict[str, dict[FairRange | None, list[str]]] = {}
    for model in settings.models:
        for spec in metrics_for(model):
            fair_range = resolve_fair_range(spec.name, model.fair_ranges)
            ranges.setdefault(spec.name, {}).setdefault(fair_range, []).append(model.name)
    return [
        MetricPlan(spec, {r: tuple(models) for r, models in ranges[name].items()})
        for name, spec in REGISTRY.items()
        if name in ranges
    ]


# --- one panel per metric -------------------------------------------------------------------


def metric_panel(plan: MetricPlan) -> Panel:
    """The metric per group (or per window) over time, its interval bounds and its fair range."""
    spec, name = plan.spec, plan.spec.name
    per_group = spec.level == "group"
    labels = GROUP if per_group else WINDOW
    legend = "{{attribute}}={{group}} vs {{reference}}" if per_group else "{{window}} {{attribute}}"
    queries: list[Query] = [(sel(name, labels), legend)]
    overrides, notes = [], []
    if spec.interval != "none":
        queries += [
            (sel("metric_ci_lower", labels, metric=name), f"{legend} CI low"),
            (sel("metric_ci_upper", labels, metric=name), f"{legend} CI high"),
        ]
        hidden = {"legend": True, "tooltip": False, "viz": False}
        overrides += [
            override("byFrameRefID", ref, custom__lineStyle=DOTTED, custom__hideFrom=hidden) for ref in "BC"
        ]
        method = _METHOD_NAMES.get(spec.interval, spec.interval)
        notes.append(f"Dotted: the bounds of the {method} confidence interval.")
    fixed = plan.fixed_range
    custom: dict[str, Any] = {}
    if fixed is not None:
        # Soft axis limits keep the whole fair range in view when the values sit inside it.
        soft = {"axisSoftMin": fixed.min, "axisSoftMax": fixed.max}
        custom = {"thresholdsStyle": {"mode": "line+area"}} | {k: v for k, v in soft.items() if v is not None}
        notes.append("Shaded: green inside the fair range, red outside.")
    elif any(r is not None for r in plan.ranges):
        red = {"mode": "fixed", "fixedColor": "red"}
        for bound, finite in (("min", "> -Inf"), ("max", "< +Inf")):
            if any(r is not None and getattr(r, bound) is not None for r in plan.ranges):
                expr = f"max by (model, window) ({sel(f'metric_fair_{bound}', WINDOW, metric=name)} {finite})"
                queries.append((expr, f"fair {bound} {{{{model}}}} {{{{window}}}}"))
                ref = chr(ord("A") + len(queries) - 1)
                overrides.append(
                    override("byFrameRefID", ref, color=red, custom__lineWidth=2, custom__lineStyle=DASHED)
                )
        notes.append("Dashed red: the fair range in force, as the service exports it.")
    rate = name in RATES  # a per-group rate (selection rate, TPR, ...): drawn as a percentage
    return timeseries(
        name,
        "percentunit" if rate else "none",
        _metric_description(plan, notes),
        *queries,
        custom=custom,
        defaults={"thresholds": thresholds(fixed), "decimals": 1 if rate else 3},
        overrides=overrides,
    )


def _metric_description(plan: MetricPlan, notes: list[str]) -> str:
    spec = plan.spec
    parts = [f"{spec.meaning[0].upper()}{spec.meaning[1:]}. Formula: {spec.formula}."]
    parts.append(
        "One line per group against its reference." if spec.level == "group" else "One line per window."
    )
    for fair_range, models in plan.ranges.items():
        users = f" (models {', '.join(models)})" if len(plan.ranges) > 1 else ""
        if fair_range is None:
            parts.append(f"Informational{users}: no fair range, never alerts ({spec.source}).")
        elif fair_range == spec.fair_range:
            parts.append(f"Fair range{users}: {fair_range.describe()} - {spec.source}.")
        else:
            parts.append(f"Fair range{users}: {fair_range.describe()} (configured in fair_ranges).")
    if spec.ideal is not None:
        parts.append(f"Ideal: {spec.ideal:g}.")
    return " ".join([*parts, *notes, "Gaps: undefined values (see the state table)."])
