"""HTML blocks of one model's window - the live page and the report draw the same ones.

- :func:`window_view`: a state summary, the group x metric table (value, interval, state and its
  reason per cell; the fair range and the group sizes in the margins) and, per judged metric, a
  card with the current values against the fair range, their recent history and a state timeline;
  informational metrics and model-level values below, folded.
- :func:`alerts_view`: the model's pending and firing alerts.

Everything is escaped here; the only markup that reaches the page is this module's and
:mod:`monitor.outputs.html.charts`'.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from html import escape

import numpy as np

from metrics_core import STATES, MetricSpec, MetricValue, get_metric
from monitor.core.text import fair_range_text, number, state_reason
from monitor.evaluation.incidents import Finding, Incident
from monitor.evaluation.onset import onset_text
from monitor.evaluation.results import ModelEvaluation, WindowResult
from monitor.evaluation.wording import plain_finding, plain_value
from monitor.outputs.html.charts import (
    color_of,
    colour_indices,
    continuation_shift,
    history_chart,
    interval_plot,
    state_timeline,
)
from monitor.service.history import Series
from monitor.service.snapshot import ActiveAlert

__all__ = ["alerts_view", "incidents_view", "seconds", "window_view"]


def seconds(t: datetime | None) -> str:
    """A time as people read it on a status page: to the second, UTC."""
    return "never" if t is None else f"{t:%Y-%m-%d %H:%M:%S} UTC"


def _state(state: str) -> str:
    return state.replace("_", " ")


def _summary(values: Sequence[MetricValue]) -> str:
    counts = Counter(v.state for v in values)
    chips = "".join(
        f'<span class="chip state-{s}">{counts[s]} {_state(s)}</span>' for s in STATES if counts[s]
    )
    return f'<p class="summary">{chips or "no judged values"}</p>'


def _judged(values: Sequence[MetricValue]) -> tuple[list[str], list[str]]:
    """Metric names in the order evaluated: judged ones, then informational ones."""
    judged: list[str] = []
    info: list[str] = []
    for name in dict.fromkeys(v.metric for v in values):
        try:
            informational = get_metric(name).informational
        except ValueError:
            informational = False
        (info if informational else judged).append(name)
    return judged, info


def _table(
    values: Sequence[MetricValue],
    metrics: Sequence[str],
    window: WindowResult,
    min_samples: int,
    model: str,
) -> str:
    groups = list(dict.fromkeys((v.attribute, v.group) for v in values))
    sizes = {(g.attribute, g.group): g for g in window.groups}
    by_cell = {(v.metric, v.attribute, v.group): v for v in values}
    head = "".join(
        f'<th scope="col"><span class="attr">{escape(a)}</span> {escape(g)}'
        f"<small>n = {sizes[(a, g)].n_rows:,}</small></th>"
        if (a, g) in sizes
        else f'<th scope="col"><span class="attr">{escape(a)}</span> {escape(g)}</th>'
        for a, g in groups
    )
    rows = []
    for metric in metrics:
        cells = []
        fair = next((v for v in values if v.metric == metric), None)
        for a, g in groups:
            v = by_cell.get((metric, a, g))
            if v is None:
                cells.append('<td class="none">-</td>')
                continue
            reason = state_reason(v, min_samples)
            interval = (
                f"<small>[{number(v.ci_lower)}, {number(v.ci_upper)}]</small>"
                if math.isfinite(v.ci_lower) and math.isfinite(v.ci_upper)
                else ""
            )
            why = f'<small class="reason">{escape(reason)}</small>' if reason and v.state != "ok" else ""
            title = f"{g} vs {v.reference}: n = {v.n_group:,.0f} / {v.n_reference:,.0f}"
            cells.append(
                f'<td class="state-{v.state}" title="{escape(title)}"><b>{number(v.value)}</b>{interval}'
                f'<small class="state">{_state(v.state)}</small>{why}</td>'
            )
        fair_text = fair_range_text(fair.fair_min, fair.fair_max) if fair else ""
        rows.append(
            f'<tr><th scope="row"><a href="#{_anchor("m", model, window.window, metric)}">{escape(metric)}</a>'
            f"<small>fair {escape(fair_text)}</small></th>{''.join(cells)}</tr>"
        )
    return (
        f'<div class="scroll" data-key="{_anchor("table", model, window.window, *metrics[:1])}">'
        f'<table class="matrix"><thead><tr><th scope="col">metric</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _anchor(*parts: str) -> str:
    """An element id naming a model's window (and metric): unique in a page of several models."""
    return escape("-".join(parts).replace(" ", "_"), quote=True)


def _legend(series: Sequence[Series], estimates: Sequence[Series] = ()) -> str:
    index = colour_indices(series, estimates)
    named = {(s.key.attribute, s.key.group): s.key.group for s in (*series, *estimates)}
    items = "".join(
        f'<li><span class="swatch" data-color="{color_of(i)}"><svg viewBox="0 0 10 10" aria-hidden="true">'
        f'<rect width="10" height="10" fill="{color_of(i)}"/></svg></span>{escape(named[key])}</li>'
        for key, i in index.items()
    )
    if estimates:  # the history chart draws the estimates too
        items += (
            '<li class="estimate-key"><svg viewBox="0 0 24 10" width="24" height="10" aria-hidden="true">'
            '<line x1="0" y1="5" x2="24" y2="5" stroke="#444" stroke-width="2" stroke-dasharray="6 4"/></svg>'
            "dashed: estimated, labels pending</li>"
        )
    return f'<ul class="legend">{items}</ul>'


def _card(
    metric: str,
    values: Sequence[MetricValue],
    series: Sequence[Series],
    window: str,
    model: str,
    *,
    estimates: Sequence[Series] = (),
    shift: timedelta = timedelta(0),
) -> str:
    try:
        spec = get_metric(metric)
    except ValueError:
        spec = None
    meaning = spec.meaning if spec else ""
    fair = fair_range_text(values[0].fair_min, values[0].fair_max)
    counts = Counter(v.state for v in values)
    worst = next((s for s in ("violation", "inconclusive", "ok", "insufficient_data") if counts[s]), "ok")
    order = {(v.attribute, v.group): i for i, v in enumerate(values)}
    series = sorted(series, key=lambda s: order.get((s.key.attribute, s.key.group), len(order)))
    label = f"{metric}, window {window}"
    shift = continuation_shift(series, estimates, shift)
    # small multiples: one history per attribute, each against its own reference (race vs White and
    # sex vs M in one chart read as one comparison)
    references = {v.attribute: v.reference for v in values}
    histories = []
    for attribute in dict.fromkeys([*(v.attribute for v in values), *(s.key.attribute for s in series)]):
        mine = [s for s in series if s.key.attribute == attribute]
        guessed = [s for s in estimates if s.key.attribute == attribute]
        if not mine and not guessed:
            continue
        about = f"{label}, {attribute}"
        histories.append(
            f'<figure class="attribute"><figcaption>{escape(attribute)} '
            f"<small>vs {escape(references.get(attribute, ''))}</small></figcaption>"
            f"{_legend(mine, guessed)}"
            f"{history_chart(mine, label=f'{about}: recent values by group, intervals shaded', estimates=guessed, shift=shift)}"
            f"{state_timeline(mine, label=f'{about}: state of each group over time', shift=shift)}"
            "</figure>"
        )
    if not histories:
        histories.append(history_chart([], label=f"{label}: recent values by group, intervals shaded"))
    return (
        f'<section class="card state-{worst}" id="{_anchor("m", model, window, metric)}">'
        f"<h3>{escape(metric)} <small>fair {escape(fair)}</small></h3>"
        f'<p class="meaning">{escape(meaning)}</p>'
        f"{interval_plot(values, label=f'{label}: current values, intervals and fair range')}"
        f"{_why_it_moves(spec, series, window, fair)}"
        f"{''.join(histories)}"
        "</section>"
    )


def _why_it_moves(spec: MetricSpec | None, series: Sequence[Series], window: str, fair: str) -> str:
    """A line under the values saying why they move: a sliding window's rows, and a fair range that
    follows a model value (the AUC family's, the overall AUC) when it moved over the charted period."""
    relative = spec is not None and spec.fair_range is not None and spec.fair_range.relative_to
    moved = any(np.unique(bound[np.isfinite(bound)]).size > 1 for s in series for bound in s.fair.T)
    said = [f"Values move as rows enter and leave the {window} window."]
    if relative and moved and spec is not None and spec.fair_range is not None:
        said.append(
            f"The fair range follows the window's {spec.fair_range.relative_to} "
            f"({spec.fair_range.describe()}; now {fair}): it moves as the model's own value does."
        )
    return f'<p class="moves"><small>{escape(" ".join(said))}</small></p>'


def window_view(window: WindowResult, series: Sequence[Series], *, model: str, min_samples: int) -> str:
    """One window of ``model``: summary, table, a card per judged metric, the rest folded."""
    values = list(window.values)
    judged, info = _judged(values)
    labels = (
        f"labels {seconds(window.label_start)} to {seconds(window.label_end)}, {window.n_labeled:,} labelled "
        f"({number(100 * window.label_coverage)}%)"
        if window.needs_labels or window.n_labeled
        else "no metric needs labels"  # a model that logs decisions only: nothing is missing
    )
    header = (
        f'<p class="window-facts">window {escape(window.window)}: {seconds(window.start)} to '
        f"{seconds(window.end)} · {window.n_rows:,} rows · {labels}</p>"
    )
    if not values:
        return header + '<p class="empty">No values in this window yet.</p>'
    by_metric: dict[str, list[MetricValue]] = {}
    for v in values:
        by_metric.setdefault(v.metric, []).append(v)
    series_of: dict[str, list[Series]] = {}
    estimated_of: dict[str, list[Series]] = {}
    for s in series:
        if s.key.window == window.window:
            (estimated_of if s.key.basis == "estimate" else series_of).setdefault(s.key.metric, []).append(s)
    judged_values = [v for v in values if v.metric in judged]
    # a metric estimated before its labels: its realised history drawn at its label window's end, the
    # estimates dashed after it, up to now
    shift = window.end - window.label_end
    cards = "".join(
        _card(
            m,
            by_metric[m],
            series_of.get(m, []),
            window.window,
            model,
            estimates=estimated_of.get(m, []),
            shift=shift,
        )
        for m in judged
    )
    parts = [
        header,
        _summary(judged_values),
        _table(values, judged, window, min_samples, model) if judged else "",
        f'<div class="cards">{cards}</div>',
    ]
    if info:
        info_cards = "".join(_card(m, by_metric[m], series_of.get(m, []), window.window, model) for m in info)
        parts.append(
            f'<details class="informational" id="{_anchor("info", model, window.window)}"><summary>{len(info)} '
            f"informational metric(s) (no fair range, never alert)</summary>"
            f"{_table(values, info, window, min_samples, model)}"
            f'<div class="cards">{info_cards}</div></details>'
        )
    if window.estimates or window.calibration:
        parts.append(_estimates_view(window, min_samples, model))
    if window.model_values:
        rows = "".join(
            f"<tr><td>{escape(m.metric)}</td><td>{escape(m.attribute)}</td><td>{number(m.value)}</td>"
            f"<td>[{number(m.ci_lower)}, {number(m.ci_upper)}]</td><td>{escape(m.reason or '')}</td></tr>"
            for m in window.model_values
        )
        parts.append(
            f'<details class="model-values" id="{_anchor("values", model, window.window)}"><summary>model-level values'
            "</summary><table><thead><tr><th>metric</th><th>attribute</th><th>value</th><th>interval</th>"
            f"<th>reason</th></tr></thead><tbody>{rows}</tbody></table></details>"
        )
    return "".join(parts)


def _estimates_view(window: WindowResult, min_samples: int, model: str) -> str:
    """``nowcast``: the window's label metrics estimated from its scores, apart from the realised table
    above (which is the label window's), and each group's calibration check."""
    estimates = list(window.estimates)
    judged, _ = _judged(estimates)
    table = _table(estimates, judged, window, min_samples, model) if judged else ""
    checks = "".join(
        f'<tr class="{"ok" if c.passed else "failed"}"><td>{escape(c.attribute)}</td><td>{escape(c.group)}</td>'
        f"<td>{c.n:,.0f}</td><td>{number(c.ratio)} <small>[{number(c.ratio_lower)}, {number(c.ratio_upper)}]</small></td>"
        f"<td>{number(c.slope)} <small>[{number(c.slope_lower)}, {number(c.slope_upper)}]</small></td>"
        f"<td>{'its own' if c.own_map else 'every row'}</td>"
        f"<td>{'passed' if c.passed else escape(c.reason or 'failed')}</td></tr>"
        for c in window.calibration
    )
    calibration = (
        f'<div class="scroll" data-key="{_anchor("calibration", model, window.window)}">'
        '<table class="calibration"><thead><tr><th>attribute</th><th>group</th>'
        "<th>labelled rows</th><th>observed / expected</th><th>slope</th><th>map</th><th>check</th></tr></thead>"
        f"<tbody>{checks}</tbody></table></div>"
        if checks
        else ""
    )
    return (
        f'<section class="estimates" id="{_anchor("estimates", model, window.window)}">'
        f"<h3>Estimated before the labels <small>labels pending: window {seconds(window.start)} to "
        f"{seconds(window.end)}, from its scores (docs/nowcasting.md)</small></h3>"
        f"{_summary(estimates)}{table}"
        "<p class=\"meaning\">Each group's calibration on the label window's labelled rows (map: its own "
        "recalibration, or the map of every row): a group that fails gets no estimate.</p>"
        f"{calibration}</section>"
    )


def incidents_view(
    found: Sequence[Incident],
    alerts: Sequence[ActiveAlert],
    evaluation: ModelEvaluation | None = None,
    *,
    confidence: float = 0.95,
) -> str:
    """One row per incident (:mod:`monitor.evaluation.incidents`): the affected group, the groups it
    holds, its strongest value with interval, fair range and reference, how many values, and since
    when its alerts have been active."""
    if not found:
        return '<p class="incidents none">No value in violation.</p>'
    active: dict[tuple[str, ...], ActiveAlert] = {}
    for a in alerts:
        labels = a.labels
        key = tuple(labels.get(k, "") for k in ("window", "attribute", "group", "reference", "metric"))
        if "basis" not in labels:  # realised alerts: incidents are of the realised values
            active[key] = a
    rows = []
    for incident in found:
        top = incident.findings[0]
        v = top.value
        since = [
            alert.active_since
            for f in incident.findings
            if (
                alert := active.get(
                    (f.window, f.value.attribute, f.value.group, f.value.reference, f.value.metric)
                )
            )
        ]
        others = incident.populations[1:]
        holding = f" <small>with {escape(', '.join(others))}</small>" if others else ""
        onset = incident.onset and onset_text(incident.onset)
        onset = onset or next(  # any alert of the incident's values has it (its label may name a part)
            (
                alert.annotations["onset"]
                for f in incident.findings
                if (
                    alert := active.get(
                        (f.window, f.value.attribute, f.value.group, f.value.reference, f.value.metric)
                    )
                )
                and "onset" in alert.annotations
            ),
            None,
        )
        rows.append(
            f'<li class="incident"><b>{escape(incident.attribute)}={escape(incident.group)}</b>{holding}: '
            f"{escape(v.metric)} {number(v.value)} <small>[{number(v.ci_lower)}, {number(v.ci_upper)}] vs "
            f"{escape(v.reference)}, fair {escape(fair_range_text(v.fair_min, v.fair_max))}, window "
            f"{escape(top.window)}, {v.n_group:,.0f} rows</small>"
            f"{f' and {len(incident.findings) - 1} more value(s) in violation' if len(incident.findings) > 1 else ''}"
            f"{f' <small>alerting since {seconds(min(since))}</small>' if since else ''}"
            + (
                f'<br><span class="plain">{escape(_sentence(top, evaluation, confidence))}</span>'
                if evaluation
                else ""
            )
            + (f'<br><small class="onset">began {escape(onset)}</small>' if onset else "")
            + "</li>"
        )
    return f'<ol class="incidents">{"".join(rows)}</ol>'


def _sentence(finding: Finding, evaluation: ModelEvaluation, confidence: float) -> str:
    """A finding in plain words, as a sentence (:mod:`monitor.evaluation.wording`)."""
    window = next((w for w in evaluation.windows if w.window == finding.window), None)
    words = (
        plain_finding(finding.value, window, evaluation, confidence=confidence)
        if window is not None
        else plain_value(finding.value, words=evaluation.words, confidence=confidence)
    )
    return f"{words[0].upper()}{words[1:]}."


def alerts_view(alerts: Sequence[ActiveAlert], shown: int = 5) -> str:
    """Pending and firing alerts, firing first, one line each; beyond ``shown`` folded."""
    if not alerts:
        return '<p class="alerts none">No active alerts.</p>'
    items = []
    # firing first, realised before estimated
    for a in sorted(alerts, key=lambda a: (a.state != "firing", "basis" in a.labels, a.active_since)):
        labels = a.labels
        since = a.firing_since if a.state == "firing" and a.firing_since else a.active_since
        summary = a.annotations.get("summary", "")
        estimated = labels.get("basis") == "estimate"
        tag = ' <span class="basis">estimated, labels pending</span>' if estimated else ""
        items.append(
            f'<li class="alert {escape(a.state)}{" estimate" if estimated else ""}" title="{escape(summary)}">'
            f"<b>{escape(a.state)}</b>{tag} "
            f"{escape(labels.get('metric', ''))} · {escape(labels.get('attribute', ''))}="
            f"{escape(labels.get('group', ''))} · window {escape(labels.get('window', ''))} · "
            f"value {number(a.value)} <small>since {seconds(since)}</small></li>"
        )
    more = ""
    if len(items) > shown:
        more = (
            f'<details id="more-alerts"><summary>{len(items) - shown} more</summary>'
            f'<ul class="alerts">{"".join(items[shown:])}</ul></details>'
        )
    return f'<ul class="alerts">{"".join(items[:shown])}</ul>{more}'
