"""What the JSON and HTML routes say: ``/api/v1/results`` and the landing page, read from one snapshot."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from typing import TypedDict, TypeVar

from metrics_core import STATES
from monitor.results import WindowResult
from monitor.secrets import mask
from monitor.serialize import EvaluationRow, ModelValueRow, evaluation_rows, finite_or_none, model_value_rows
from monitor.snapshot import ActiveAlert, ModelStatus, Snapshot
from monitor.timestamps import iso_z

__all__ = ["FILTERS", "ResultsData", "landing_page", "redact", "results_data"]

#: Query parameters of ``/api/v1/results`` that filter its rows.
FILTERS = ("model", "window", "metric", "state")

_Row = TypeVar("_Row", bound=Mapping[str, object])


class GroupJson(TypedDict):
    attribute: str
    group: str
    reference: str
    n_rows: int
    n_labeled: int
    label_coverage: float | None


class WindowJson(TypedDict):
    window: str
    start: str
    end: str
    label_start: str
    label_end: str
    n_rows: int
    n_labeled: int
    label_coverage: float | None
    dropped_groups: dict[str, int]
    missing_group_rows: dict[str, int]
    groups: list[GroupJson]


class ModelJson(TypedDict):
    name: str
    source_up: bool
    interval_seconds: float
    last_success: str | None
    last_attempt: str | None
    last_error: str | None
    evaluated_at: str | None
    evaluations_total: int
    failures_total: int
    rows_read_total: int
    rows_rejected_total: dict[str, int]
    late_rows_total: int
    last_read_rows_rejected: dict[str, int]
    skipped_files: list[str]
    last_duration_seconds: float | None
    windows: list[WindowJson]


class AlertJson(TypedDict):
    labels: dict[str, str]
    annotations: dict[str, str]
    state: str
    active_since: str
    firing_since: str | None
    value: float | None


class ResultsData(TypedDict):
    """The ``data`` object of ``/api/v1/results``."""

    generated_at: str | None
    models: list[ModelJson]
    results: list[EvaluationRow]
    model_values: list[ModelValueRow]
    alerts: list[AlertJson]


def results_data(snapshot: Snapshot, filters: Mapping[str, set[str]] | None = None) -> ResultsData:
    """The ``data`` object of ``/api/v1/results``.

    ``filters`` maps ``model``, ``window``, ``metric`` and ``state`` to accepted values;
    each applies to ``results`` and, where the rows have the field, ``model_values``.
    """
    filters = filters or {}
    evaluations = [s.last_evaluation for s in snapshot.models.values() if s.last_evaluation is not None]
    return {
        "generated_at": _iso_z_or_none(snapshot.created_at),
        "models": [_model_json(status) for status in snapshot.models.values()],
        "results": _filtered(evaluation_rows(evaluations), filters),
        "model_values": _filtered(model_value_rows(evaluations), filters),
        "alerts": [_alert_json(alert) for alert in snapshot.alerts],
    }


def _filtered(rows: list[_Row], filters: Mapping[str, set[str]]) -> list[_Row]:
    return [
        row for row in rows if all(row[name] in accepted for name, accepted in filters.items() if name in row)
    ]


def _model_json(status: ModelStatus) -> ModelJson:
    evaluation = status.last_evaluation
    return {
        "name": status.name,
        "source_up": status.source_up,
        "interval_seconds": status.interval_seconds,
        "last_success": _iso_z_or_none(status.last_success),
        "last_attempt": _iso_z_or_none(status.last_attempt),
        "last_error": redact(status.last_error) if status.last_error else None,
        "evaluated_at": iso_z(evaluation.evaluated_at) if evaluation else None,
        "evaluations_total": status.evaluations_total,
        "failures_total": status.failures_total,
        "rows_read_total": status.rows_read_total,
        "rows_rejected_total": dict(status.rows_rejected_total),
        "late_rows_total": status.late_rows_total,
        "last_read_rows_rejected": dict(evaluation.rejected) if evaluation else {},
        "skipped_files": list(evaluation.skipped_files) if evaluation else [],
        "last_duration_seconds": finite_or_none(status.last_duration_seconds),
        "windows": [_window_json(w) for w in evaluation.windows] if evaluation else [],
    }


def _window_json(w: WindowResult) -> WindowJson:
    return {
        "window": w.window,
        "start": iso_z(w.start),
        "end": iso_z(w.end),
        "label_start": iso_z(w.label_start),
        "label_end": iso_z(w.label_end),
        "n_rows": w.n_rows,
        "n_labeled": w.n_labeled,
        "label_coverage": finite_or_none(w.label_coverage),
        "dropped_groups": dict(w.dropped_groups),
        "missing_group_rows": dict(w.missing_group_rows),
        "groups": [
            {
                "attribute": g.attribute,
                "group": g.group,
                "reference": g.reference,
                "n_rows": g.n_rows,
                "n_labeled": g.n_labeled,
                "label_coverage": finite_or_none(g.label_coverage),
            }
            for g in w.groups
        ],
    }


def _alert_json(alert: ActiveAlert) -> AlertJson:
    return {
        "labels": dict(alert.labels),
        "annotations": dict(alert.annotations),
        "state": alert.state,
        "active_since": iso_z(alert.active_since),
        "firing_since": _iso_z_or_none(alert.firing_since),
        "value": finite_or_none(alert.value),
    }


def redact(text: str) -> str:
    """``text`` with URL credentials masked (:func:`monitor.secrets.mask`): the source has masked
    its configured secrets already; this is a second line.

    >>> redact("cannot read postgresql://u:secret@h/db?password=two")
    'cannot read postgresql://u:***@h/db?password=***'
    """
    return mask(text)


def _iso_z_or_none(t: datetime | None) -> str | None:
    return None if t is None else iso_z(t)


def landing_page(snapshot: Snapshot) -> str:
    """A small HTML overview: per model, its source, last evaluation and state counts."""
    rows = "".join(_model_row(status, snapshot.alerts) for status in snapshot.models.values())
    links = "".join(
        f'<li><a href="{path}">{path}</a> - {html.escape(what)}</li>'
        for path, what in (
            ("/metrics", "Prometheus metrics"),
            ("/api/v1/results", "latest results as JSON"),
            ("/api/v1/power", "rows and days each alert needs to detect a departure"),
            ("/healthz", "liveness"),
            ("/readyz", "readiness"),
        )
    )
    columns = ("model", "source", "last evaluation", "alerts", *STATES)
    headers = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'><title>fairwatch</title></head><body>"
        "<h1>fairwatch</h1>"
        f"<p>Snapshot of {html.escape(_iso_z_or_none(snapshot.created_at) or 'never')}; "
        f"{len(snapshot.alerts)} active alert(s).</p>"
        f"<table><tr>{headers}</tr>{rows}</table>"
        f"<ul>{links}</ul></body></html>\n"
    )


def _model_row(status: ModelStatus, alerts: tuple[ActiveAlert, ...]) -> str:
    evaluation = status.last_evaluation
    counts: Counter[str] = Counter()
    if evaluation is not None:
        counts.update(v.state for w in evaluation.windows for v in w.values)
    n_alerts = sum(1 for a in alerts if a.labels.get("model") == status.name)
    source = "up" if status.source_up else f"down: {redact(status.last_error or '')}"
    cells = [
        status.name,
        source,
        iso_z(evaluation.evaluated_at) if evaluation else "never",
        str(n_alerts),
        *(str(counts[state]) for state in STATES),
    ]
    return "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
