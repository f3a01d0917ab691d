"""The tables fairwatch prints: judged values (``evaluate``, ``check``), power plans (``power``) and
the metric registry (``metrics``), through :mod:`monitor.cli.terminal` so that no name is cut."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

import metrics_core as mc
from monitor.cli.terminal import name_column, print_table, text_column
from monitor.core.text import fair_range_text, state_text
from monitor.evaluation.results import ModelEvaluation
from monitor.outputs.power import PlanRow

__all__ = ["print_evaluations", "print_metrics", "print_plans"]

_STATE_STYLE = {"ok": "green", "inconclusive": "yellow", "violation": "bold red", "insufficient_data": "dim"}


def fixed(x: float | None, digits: int = 3) -> str:
    """A value in a column of values: fixed decimals, so that the column's points line up."""
    if x is None or math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    return f"{x:.{digits}f}"


def print_evaluations(
    evaluations: Sequence[ModelEvaluation],
    console: Console,
    *,
    min_samples: Mapping[str, int],
    show_all: bool = False,
) -> None:
    """One table per model and window: each judged value with its interval, fair range and state
    (informational values only with ``show_all``), then the model-level values and rejected rows."""
    for ev in evaluations:
        for w in ev.windows:
            title = (
                f"{ev.model} - window {w.window} [{w.start:%Y-%m-%d %H:%M}, {w.end:%Y-%m-%d %H:%M}) - "
                f"{w.n_rows:,} rows, label coverage {fixed(w.label_coverage * 100, 1)}%"
            )
            print_table(console, _values_table(title, w.values, min_samples[ev.model], show_all))
            if w.estimates:  # nowcast: apart from the realised values, said to be estimates
                title = f"{ev.model} - window {w.window}: estimated from the scores, labels pending"
                print_table(console, _values_table(title, w.estimates, min_samples[ev.model], show_all))
            if w.model_values:
                summary = ", ".join(
                    f"{m.metric}{'[' + m.attribute + ']' if m.attribute else ''}={fixed(m.value)}"
                    for m in w.model_values
                )
                console.print(f"  model level: {summary}", highlight=False, soft_wrap=True)
        if ev.rejected:
            console.print(f"  rejected rows: {dict(ev.rejected)}", highlight=False, soft_wrap=True)


def _values_table(title: str, values: Sequence[mc.MetricValue], min_samples: int, show_all: bool) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold")
    for col in ("attribute", "group", "metric"):
        name_column(table, col)
    for col in ("value", "95% interval", "fair range", "state", "n"):
        text_column(table, col, justify="right" if col in ("value", "n") else "left")
    for v in sorted(values, key=lambda v: (v.attribute, v.group, v.metric)):
        informational = math.isinf(v.fair_min) and math.isinf(v.fair_max)
        if informational and not show_all:
            continue
        style = _STATE_STYLE.get(v.state, "")
        table.add_row(
            v.attribute,
            v.group,
            v.metric,
            fixed(v.value),
            f"[{fixed(v.ci_lower)}, {fixed(v.ci_upper)}]",
            fair_range_text(v.fair_min, v.fair_max),
            f"[{style}]{escape(state_text(v, min_samples))}[/]",
            f"{int(v.n_group):,}",
        )
    return table


def print_plans(plans: Sequence[PlanRow], console: Console, *, power: float) -> None:
    """One table per model: what each alert needs, sorted by the days it takes."""
    for model in dict.fromkeys(p.model for p in plans):
        rows = sorted((p for p in plans if p.model == model), key=lambda p: (p.metric, p.days, p.group))
        windows = list(rows[0].detectable) if rows else []
        table = Table(
            title=f"{model}: rows and days to detect a departure with {power:.0%} power",
            title_justify="left",
            header_style="bold",
        )
        for col in ("attribute", "group", "metric"):
            name_column(table, col)
        for col in ("now", "bound", "detect", "rows needed", "rows now", "days"):
            text_column(table, col, justify="right")
        for w in windows:
            text_column(table, f"detectable in {w}", justify="right")
        for p in rows:
            table.add_row(
                p.attribute,
                p.group,
                p.metric,
                f"{p.value:.3g}",
                f"{p.bound:.3g}",
                f"{p.departure:.3g}",
                _rows(p.rows),
                _rows(p.current_rows),
                _days(p.days),
                *(("-" if math.isnan(p.detectable[w]) else f"{p.detectable[w]:.3g}") for w in windows),
            )
        print_table(console, table)
        notes = sorted({p.note for p in rows if p.note})
        for note in notes:
            console.print(f"  note: {note}", highlight=False, soft_wrap=True)


def print_metrics(console: Console) -> None:
    """The metric registry: each metric's family, ideal, default fair range, interval and meaning."""
    table = Table(title="fairwatch metrics", header_style="bold")
    name_column(table, "metric")
    for col in ("family", "ideal", "fair range", "interval", "meaning"):
        text_column(table, col)
    for m in mc.REGISTRY.values():
        fair = "informational" if m.fair_range is None else m.fair_range.describe()
        table.add_row(
            m.name, m.family, "" if m.ideal is None else f"{m.ideal:g}", fair, m.interval, m.meaning
        )
    print_table(console, table)


def _rows(x: float) -> str:
    return "out of reach" if not math.isfinite(x) else f"{x:,.0f}"


def _days(x: float) -> str:
    if math.isnan(x):
        return "no traffic"
    if not math.isfinite(x):
        return "never"
    return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"
