"""``fairwatch report``: one self-contained HTML file of a config's models over a period.

For audits, e-mail and CI artifacts: the same group x metric tables and SVG charts as the live
view (:mod:`monitor.outputs.html`), the config that produced them, and the power figures (how many rows
each alert needs to detect a departure). One file, no script, no link it needs to load: a mail
client or an archive opens it as it was written.

In a notebook, :func:`build_report` returns a :class:`Report`: ``report.to_pandas()`` is one row
per judged value and evaluation, and the report displays itself (``_repr_html_``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from metrics_core import get_metric
from monitor.core.secrets import mask
from monitor.core.text import number
from monitor.core.times import format_duration
from monitor.core.version import __version__
from monitor.evaluation.incidents import Finding, Incident, incidents
from monitor.evaluation.onset import onset_text
from monitor.evaluation.results import ModelEvaluation
from monitor.evaluation.wording import plain_finding, plain_value
from monitor.outputs.csv_rows import rows_csv
from monitor.outputs.html.sections import seconds, window_view
from monitor.outputs.json import evaluation_rows
from monitor.service.history import History

if TYPE_CHECKING:
    import pandas as pd

    from monitor.config import ModelConfig, Settings

__all__ = ["Report", "build_report", "instants"]


@dataclass(frozen=True)
class ModelSummary:
    """What the report says about a model's configuration."""

    name: str
    task: str
    source: str  # described by the source: credentials masked
    windows: tuple[tuple[str, str], ...]  # (name, length)
    label_delay: str
    min_samples: int
    groups: tuple[str, ...]  # each attribute with its kind, columns and reference
    threshold: str = ""  # how a score becomes a decision
    metrics: tuple[str, ...] = ()  # configured (empty: the task's defaults)

    @classmethod
    def of(cls, model: ModelConfig, source: str) -> ModelSummary:
        groups = tuple(
            f"{g.attribute} ({g.kind}: {', '.join(g.columns or [g.column or ''])}; reference "
            f"{g.reference if isinstance(g.reference, str) else '&'.join(g.reference)}"
            + (f"; member at >= {g.threshold:g}" if g.kind == "indicator" else "")
            + ")"
            for g in model.groups
        )
        threshold = f"score >= {model.threshold:g}" if model.columns.score and model.task == "binary" else ""
        return cls(
            model.name,
            model.task,
            without_folders(source),
            tuple((w.name, format_duration(w.length)) for w in model.windows),
            format_duration(model.label_delay),
            model.min_samples,
            groups,
            threshold,
            tuple(model.metrics or ()),
        )


def without_folders(text: str) -> str:
    r"""``text`` with the folders of every local path it names left out: a report travels further
    than the machine it was made on. Remote URLs (``postgresql://host/db``, ``s3://bucket/key``) stay.

    >>> without_folders("sql table 'loans' in sqlite:////srv/data/loans.db")
    "sql table 'loans' in sqlite:///.../loans.db"
    >>> without_folders("parquet files /var/lib/logs/*.parquet, duckdb:////home/a/log.duckdb")
    'parquet files .../*.parquet, duckdb:///.../log.duckdb'
    >>> without_folders("published:/srv/panes/pub, file:///srv/x.csv, C:\\Users\\alice\\x.db, ~/logs/y.db")
    'published:.../pub, file:///.../x.csv, .../x.db, .../y.db'
    >>> without_folders("postgresql://fw:***@db.internal/logs, s3://bucket/a/b.parquet")
    'postgresql://fw:***@db.internal/logs, s3://bucket/a/b.parquet'
    """
    segment = r"[^/\\\s'\"]+"
    text = re.sub(rf"(\b[a-z][\w+.-]*:///)/?(?:{segment}/)+", r"\1.../", text)  # sqlite:////srv/x.db
    text = re.sub(rf"(\b[a-z][\w+.-]*:)/(?!/)(?:{segment}/)+", r"\1.../", text)  # published:/srv/x
    text = re.sub(rf"\b[A-Za-z]:[\\\\/](?:{segment}[\\\\/])+", ".../", text)  # C:\Users\x.db
    text = re.sub(rf"~/(?:{segment}/)+", ".../", text)
    return re.sub(rf"(?<![\w:/.])/(?:{segment}/)+", ".../", text)  # /var/lib/x


def _write_atomically(target: Path, text: str) -> Path:
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return target


@dataclass(frozen=True)
class Report:
    """Each model's evaluations over the period (oldest first), its configuration, power plans."""

    title: str
    generated_at: datetime
    evaluations: dict[str, list[ModelEvaluation]]
    models: dict[str, ModelSummary]
    plans: list[dict[str, object]] = field(default_factory=list)
    confidence: float = 0.95
    incidents: tuple[Incident, ...] | None = None  # with their onsets (None: found from the evaluations)

    def to_pandas(self) -> pd.DataFrame:
        """One row per (model, evaluation, window, group, metric), as ``fairwatch evaluate --format
        json`` writes each value (NaN where undefined, with its reason)."""
        import pandas as pd

        rows = [
            {
                "model": ev.model,
                "evaluated_at": ev.evaluated_at,
                "window": w.window,
                "attribute": v.attribute,
                "group": v.group,
                "reference": v.reference,
                "metric": v.metric,
                "value": v.value,
                "ci_lower": v.ci_lower,
                "ci_upper": v.ci_upper,
                "fair_min": v.fair_min,
                "fair_max": v.fair_max,
                "state": v.state,
                "n_group": v.n_group,
                "n_reference": v.n_reference,
                "reason": v.reason,
            }
            for evaluations in self.evaluations.values()
            for ev in evaluations
            for w in ev.windows
            for v in w.values
        ]
        return pd.DataFrame(rows)

    def to_html(self) -> str:
        """The whole file: a document with its style sheet inlined."""
        return (
            '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(self.title)}</title><style>{_css()}</style></head><body>"
            # a document, not a page: every folded section open, so that reading or printing it
            # shows everything (a printed closed <details> shows nothing of it)
            f"<header><h1>{escape(self.title)}</h1></header><main>{self._body().replace('<details', '<details open')}</main>"
            f"<footer>fairwatch {escape(__version__)} · generated {seconds(self.generated_at)}</footer>"
            "</body></html>\n"
        )

    def _repr_html_(self) -> str:
        return f'<div class="fairwatch-report"><style>{_css()}</style>{self._body()}</div>'

    def write(self, path: str | Path) -> Path:
        """The page into ``path``, atomically: under a temporary name beside it, renamed over it
        (interrupted, an earlier report there stays whole)."""
        return _write_atomically(Path(path), self.to_html())

    def write_csv(self, path: str | Path) -> Path:
        """Every judged value of every evaluation of the report, as ``fairwatch evaluate --format
        csv`` writes them (one row each, ``evaluated_at`` telling the instants apart), atomically."""
        evaluations = [e for per_model in self.evaluations.values() for e in per_model]
        return _write_atomically(Path(path), rows_csv(evaluation_rows(evaluations)))

    def _body(self) -> str:
        parts = [self._overview(), self._what_happened()]
        for name, evaluations in self.evaluations.items():
            parts.append(self._model(name, evaluations))
        parts.append(self._methodology())
        parts.append(self._config())
        if self.plans:
            parts.append(self._power())
        return "".join(parts)

    def _overview(self) -> str:
        rows = []
        for name, evaluations in self.evaluations.items():
            last = evaluations[-1] if evaluations else None
            counts = {s: 0 for s in ("ok", "inconclusive", "violation", "insufficient_data")}
            if last:
                for w in last.windows:
                    for v in w.values:
                        counts[v.state] = counts.get(v.state, 0) + 1
            period = (
                f"{seconds(evaluations[0].evaluated_at)} to {seconds(last.evaluated_at)}" if last else "-"
            )
            chips = "".join(
                f'<span class="chip state-{s}">{n} {s.replace("_", " ")}</span>'
                for s, n in counts.items()
                if n
            )
            rows.append(
                f'<tr><th scope="row"><a href="#{_model_id(name)}">{escape(name)}</a></th>'
                f"<td>{len(evaluations)}</td><td>{period}</td><td>{chips}</td></tr>"
            )
        return (
            '<h2>Summary</h2><p class="facts">The last evaluation\'s states per model; every table and '
            "chart below is drawn from the evaluations listed.</p>"
            '<div class="scroll"><table><thead><tr><th>model</th><th>evaluations</th><th>period</th>'
            f"<th>states at the end</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        )

    def _what_happened(self) -> str:
        """The first page's account: each incident (:mod:`monitor.evaluation.incidents`) in words, with its
        values, since when, and how many rows stand behind it."""
        found = (
            self.incidents
            if self.incidents is not None
            else incidents([e for per_model in self.evaluations.values() for e in per_model])
        )
        if not found:
            return (
                '<h2 id="what-happened">What happened</h2><p class="facts">No value was in violation at the '
                "last evaluation of any model.</p>"
            )
        items = []
        for incident in found:
            others = [p for p in incident.populations[1:]]
            holding = f" <small>with {escape(', '.join(others))}</small>" if others else ""
            evaluations = self.evaluations[incident.model]
            last = evaluations[-1]
            own = [
                f
                for f in incident.findings
                if (f.value.attribute, f.value.group) == (incident.attribute, incident.group)
            ]
            lead = _plain(own[0] if own else incident.findings[0], last, self.confidence)
            items.append(
                f"<li><p><b>{escape(incident.attribute)}={escape(incident.group)}</b> in model "
                f"{escape(incident.model)}{holding}</p>"
                f'<p class="plain">{escape(lead[0].upper() + lead[1:])}.</p>'
                f'<p class="since">{_since_text(incident, evaluations)}.</p>'
                f"<ul>{''.join(_finding_text(f, last, self.confidence) for f in incident.findings)}</ul></li>"
            )
        return (
            '<h2 id="what-happened">What happened</h2><p class="facts">The values in violation at the last '
            "evaluation, one entry per affected group (an intersection is listed under a group it holds "
            "when that group is in violation too), the strongest evidence first.</p>"
            f'<ol class="incidents">{"".join(items)}</ol>'
        )

    def _methodology(self) -> str:
        metrics = sorted(
            {
                v.metric
                for per_model in self.evaluations.values()
                for e in per_model
                for w in e.windows
                for v in w.values
            }
        )
        rows = []
        for name in metrics:
            try:
                spec = get_metric(name)
            except ValueError:
                continue
            fair = "informational" if spec.fair_range is None else spec.fair_range.describe()
            rows.append(
                f'<tr><th scope="row">{escape(name)}</th><td>{escape(spec.formula)}</td><td>{escape(fair)}</td>'
                f"<td>{escape(spec.interval)}</td><td>{escape(spec.source)}</td></tr>"
            )
        level = f"{number(100 * self.confidence)}%"
        return (
            '<h2 id="methodology">Methodology</h2>'
            f'<p class="facts">Each value is judged by its {level} interval against its fair range: '
            "<b>violation</b> when the whole interval lies outside it, <b>inconclusive</b> when the value is "
            "outside but the interval reaches in, <b>ok</b> inside, <b>insufficient data</b> when a "
            "denominator has fewer rows than the model's min_samples (below). Metrics that need labels "
            "are computed on the window shifted back by the model's label delay, so that the labels have "
            "arrived. Undefined values are never counted as fair. The metrics of this report:</p>"
            '<div class="scroll"><table><thead><tr><th>metric</th><th>formula</th><th>fair range</th>'
            f"<th>interval</th><th>source of the range</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        )

    def _model(self, name: str, evaluations: Sequence[ModelEvaluation]) -> str:
        head = f'<section id="{_model_id(name)}"><h2>Model {escape(name)}</h2>'
        if not evaluations:
            return head + '<p class="empty">No evaluation.</p></section>'
        history = History(len(evaluations))
        for ev in evaluations:
            history.add(ev)
        last = evaluations[-1]
        summary = self.models.get(name)
        min_samples = summary.min_samples if summary else 100
        rejected = sum(last.rejected.values())
        parts = [
            head,
            f'<p class="facts">last evaluation {seconds(last.evaluated_at)} · {last.rows_read:,} rows read, '
            f"{rejected:,} rejected · {len(evaluations)} evaluation(s)</p>",
        ]
        series = history.series(name)
        for w in last.windows:
            parts.append(f"<h3>Window {escape(w.window)}</h3>")
            parts.append(window_view(w, series, model=name, min_samples=min_samples))
        return "".join(parts) + "</section>"

    def _config(self) -> str:
        rows = "".join(
            f'<tr><th scope="row">{escape(m.name)}</th><td>{escape(m.task)}</td><td>{escape(m.source)}</td>'
            f"<td>{escape(', '.join(f'{n} ({length})' for n, length in m.windows))}</td>"
            f"<td>{escape(m.label_delay)}</td><td>{m.min_samples}</td><td>{escape(m.threshold or '-')}</td>"
            f"<td>{escape('; '.join(m.groups))}</td><td>{escape(', '.join(m.metrics) or 'the defaults')}</td></tr>"
            for m in self.models.values()
        )
        return (
            f'<h2 id="config">Configuration</h2><p class="facts">Alerts judge each value by its '
            f"{number(100 * self.confidence)}% interval against the fair range. Credentials are masked and "
            "local folders left out.</p>"
            '<div class="scroll"><table><thead><tr><th>model</th><th>task</th><th>source</th><th>windows</th>'
            "<th>label delay</th><th>min_samples</th><th>decision</th><th>groups</th><th>metrics</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>"
        )

    def _power(self) -> str:
        def cell(x: object) -> str:
            return number(float(x)) if isinstance(x, int | float) else "-" if x is None else escape(str(x))

        rows = "".join(
            f"<tr><td>{escape(str(p['model']))}</td><td>{escape(str(p['metric']))}</td>"
            f"<td>{escape(str(p['attribute']))}={escape(str(p['group']))}</td><td>{cell(p['value'])}</td>"
            f"<td>{cell(p['departure'])}</td><td>{cell(p['rows_needed'])}</td><td>{cell(p['rows_now'])}</td>"
            f"<td>{cell(p['days_needed'])}</td><td>{escape(str(p['note'] or ''))}</td></tr>"
            for p in self.plans
        )
        return (
            '<h2 id="power">Power</h2><p class="facts">How many rows (and days at the observed traffic) '
            "each alert needs to detect a departure of the stated size from its fair range with 90% power, "
            "from each model's last evaluation (<code>fairwatch power</code>).</p>"
            '<details><summary>the figures</summary><div class="scroll"><table><thead><tr><th>model</th>'
            "<th>metric</th><th>group</th><th>value</th><th>departure</th><th>rows needed</th><th>rows now</th>"
            f"<th>days needed</th><th>note</th></tr></thead><tbody>{rows}</tbody></table></div></details>"
        )


def instants(start: datetime | None, end: datetime, step: timedelta | None) -> list[datetime]:
    """The evaluation times of a report: ``end`` alone without ``start``; else every ``step``
    from ``start`` to ``end`` (``end`` included), by default 24 steps.

    >>> t = datetime(2026, 1, 1, tzinfo=UTC)
    >>> [x.hour for x in instants(t, t + timedelta(hours=3), timedelta(hours=1))]
    [1, 2, 3]
    """
    if start is None:
        if step is not None:  # else silently one evaluation where the user asked for a series
            raise ValueError("--step needs --start: without it the report is one evaluation, at --end")
        return [end]
    if step is None:
        step = (end - start) / 24
    if step <= timedelta(0):
        raise ValueError("--step must be positive")
    count = math.floor((end - start) / step)
    if count == 0:  # else a report of no evaluation, written as if all were well
        raise ValueError(
            f"--step {format_duration(step)} is longer than the period from --start to --end "
            f"({format_duration(end - start)}): no evaluation in it"
        )
    if count > 10_000:
        raise ValueError(f"{count} evaluations: choose a longer --step (at most 10,000 per model)")
    times = [end - step * i for i in range(count)]
    return sorted(times)


def build_report(
    settings: Settings,
    *,
    at: Sequence[datetime],
    models: Sequence[str] | None = None,
    title: str | None = None,
    progress: Callable[[str], None] | None = None,
    evaluations: dict[str, list[ModelEvaluation]] | None = None,
) -> Report:
    """Evaluate each model (or those named) at each instant of ``at`` and gather the report, with
    the power figures at the last instant (one more evaluation, with the rates planning reads);
    ``evaluations`` already made (``fairwatch check``) are used as they are, without power figures."""
    from monitor.evaluation.evaluators import Evaluators, build_evaluators
    from monitor.evaluation.onsets import with_onsets
    from monitor.outputs.power import plan_model, plans_as_rows, with_planning_rates

    configs = {m.name: m for m in settings.models if models is None or m.name in models}
    summaries: dict[str, ModelSummary] = {}
    plans: list[dict[str, object]] = []
    made, evaluations = evaluations is None, evaluations or {}
    with ExitStack() as closing:
        evaluators = closing.enter_context(build_evaluators(settings, models=list(configs)))
        planners = closing.enter_context(
            build_evaluators(with_planning_rates(settings), models=list(configs))
            if made and at
            else Evaluators({})
        )
        for name, model in configs.items():
            evaluator, planner = evaluators[name], planners.get(name)
            summaries[name] = ModelSummary.of(model, mask(evaluator.source.describe(), settings.secrets()))
            if not made:
                continue
            done = []
            for i, t in enumerate(at, 1):
                if progress:
                    progress(f"{name}: evaluation {i} of {len(at)} ({seconds(t)})")
                done.append(evaluator.evaluate(t))
            evaluations[name] = done
            if planner is not None:
                last = planner.evaluate(at[-1])
                plans += plans_as_rows(
                    plan_model(
                        last, model, confidence=settings.alerts.confidence, method=settings.alerts.method
                    )
                )
        found = incidents([e for name in configs for e in evaluations.get(name, ())])
        if found and progress:
            progress(f"estimating when {len(found)} incident(s) began")
        found = with_onsets(found, evaluators, {n: e[-1] for n, e in evaluations.items() if e})
    return Report(
        title=title or f"fairwatch report: {', '.join(evaluations)}",
        generated_at=datetime.now(UTC),
        evaluations=evaluations,
        models=summaries,
        plans=plans,
        confidence=settings.alerts.confidence,
        incidents=tuple(found),
    )


def _since_text(incident: Incident, evaluations: Sequence[ModelEvaluation]) -> str:
    """Since when: the onset estimated from the log, then as the evaluations tell it - between the last
    evaluation that was not in violation and the first that was."""
    judged = _judged_since(incident, evaluations)
    if incident.onset is None:
        return judged[0].upper() + judged[1:]
    began, _, how = onset_text(incident.onset).partition(" (")
    return f"<b>Began {escape(began)}</b> <small>({escape(how)}</small>. {judged[0].upper()}{judged[1:]}"


def _judged_since(incident: Incident, evaluations: Sequence[ModelEvaluation]) -> str:
    since = incident.since
    if since is None:
        return "in violation at the last evaluation"
    if incident.since_bounded:
        return (
            f"in violation at every evaluation of this report, since its first ({seconds(since)}) or earlier"
        )
    before = max(
        (e for e in evaluations if e.evaluated_at < since), key=lambda e: e.evaluated_at, default=None
    )
    if before is None:
        return f"in violation since {seconds(since)}"
    first = next(f for f in incident.findings if f.since == since)
    key = (first.value.attribute, first.value.group, first.value.reference, first.value.metric)
    state = next(
        (
            v.state
            for w in before.windows
            if w.window == first.window
            for v in w.values
            if (v.attribute, v.group, v.reference, v.metric) == key
        ),
        "not judged",
    )
    return (
        f"in violation at every evaluation since {seconds(since)}; at the one before, "
        f"{seconds(before.evaluated_at)}, its {escape(first.value.metric)} was {state.replace('_', ' ')}"
    )


def _plain(finding: Finding, evaluation: ModelEvaluation, confidence: float) -> str:
    """The finding in plain words (:mod:`monitor.evaluation.wording`), with its window's rates."""
    window = next((w for w in evaluation.windows if w.window == finding.window), None)
    if window is None:
        return plain_value(finding.value, words=evaluation.words, confidence=confidence)
    return plain_finding(finding.value, window, evaluation, confidence=confidence)


def _finding_text(finding: Finding, evaluation: ModelEvaluation, confidence: float) -> str:
    v = finding.value
    try:
        meaning = get_metric(v.metric).meaning
    except ValueError:
        meaning = ""
    words = _plain(finding, evaluation, confidence)
    facts = [
        f"{v.metric} of {v.attribute}={v.group}",
        f"window {finding.window}",
        f"{v.n_group:,.0f} rows in the group, {v.n_reference:,.0f} in the reference",
        *([meaning] if meaning else []),
    ]
    return f"<li>{escape(words[0].upper() + words[1:])}. <small>{escape(' · '.join(facts))}</small></li>"


def _css() -> str:
    return files("monitor.outputs.html").joinpath("static", "fairwatch.css").read_text(encoding="utf-8")


def _model_id(name: str) -> str:
    return escape(f"model-{name}".replace(" ", "_"), quote=True)
