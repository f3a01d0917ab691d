"""What the JSON routes say: ``/api/v1/results`` (from one snapshot) and ``/api/v1/history``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import PurePath
from typing import TypedDict, TypeVar

from monitor.core.secrets import mask
from monitor.core.times import iso_z
from monitor.evaluation.results import WindowResult
from monitor.outputs.json import (
    EvaluationRow,
    ModelValueRow,
    evaluation_rows,
    finite_or_none,
    model_value_rows,
)
from monitor.service.history import History, SeriesKey
from monitor.service.snapshot import ActiveAlert, ModelStatus, Snapshot

__all__ = [
    "FILTERS",
    "UNDISCLOSED_ERROR",
    "HistoryData",
    "ResultsData",
    "disclosed_error",
    "history_data",
    "redact",
    "results_data",
]

#: Query parameters of ``/api/v1/results`` that filter its rows.
FILTERS = ("model", "window", "metric", "state", "basis")

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


def results_data(
    snapshot: Snapshot, filters: Mapping[str, set[str]] | None = None, *, details: bool = True
) -> ResultsData:
    """The ``data`` object of ``/api/v1/results``.

    Without ``details`` (``server.error_details``), a failed source's error and skipped files
    are served without what they name (hosts, databases, tables, directories): see
    :func:`disclosed_error`.

    ``filters`` maps ``model``, ``window``, ``metric``, ``state`` and ``basis`` (``labels`` or
    ``estimate``) to accepted values;
    each applies to ``results`` and, where the rows have the field, ``model_values``.
    """
    filters = filters or {}
    evaluations = [s.last_evaluation for s in snapshot.models.values() if s.last_evaluation is not None]
    return {
        "generated_at": _iso_z_or_none(snapshot.created_at),
        "models": [_model_json(status, details) for status in snapshot.models.values()],
        "results": _filtered(evaluation_rows(evaluations), filters),
        "model_values": _filtered(model_value_rows(evaluations), filters),
        "alerts": [_alert_json(alert) for alert in snapshot.alerts],
    }


class SeriesJson(TypedDict):
    model: str
    window: str
    metric: str
    attribute: str
    group: str
    basis: str  # labels, or estimate (models[].nowcast)
    points: list[list[str | float | None]]


class HistoryData(TypedDict):
    """The ``data`` object of ``/api/v1/history``."""

    columns: list[str]
    series: list[SeriesJson]


#: What each point of ``/api/v1/history`` holds, in order.
HISTORY_COLUMNS = ["evaluated_at", "value", "ci_lower", "ci_upper", "fair_min", "fair_max", "state"]


_PLUS_OFFSET = re.compile(r"(?<=\d) (\d\d(?::?\d\d)?)$")


def history_data(history: History, params: Mapping[str, list[str]]) -> HistoryData:
    """The ``data`` object of ``/api/v1/history``: every kept series of the ``model`` parameters
    (default: all), filtered by ``window``, ``metric``, ``attribute``, ``group`` and ``basis`` and from
    ``since`` (ISO 8601) on. Raises ValueError naming a bad parameter."""
    since = None
    if "since" in params:
        text = params["since"][0]
        # a '+' typed into the URL arrives as a space (form encoding): ...T12:00:00 02:00 is +02:00
        try:
            since = datetime.fromisoformat(_PLUS_OFFSET.sub(r"+\1", text).replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"since: not an ISO 8601 time: {_short(text)}") from None
        if since.tzinfo is None:
            raise ValueError(f"since: give a UTC offset (Z or +00:00): {_short(text)}")
    known = history.models()
    models = params.get("model", known)
    if unknown := [m for m in models if m not in known]:
        raise ValueError(f"model: no history for {_short(unknown[0])}; models: {', '.join(known)}")
    where = {name: params[name] for name in SeriesKey._fields if name in params}
    series: list[SeriesJson] = []
    for model in models:
        for s in history.series(model, since=since, where=where):
            points: list[list[str | float | None]] = [
                [iso_z(t), *(finite_or_none(float(x)) for x in row), state]
                for t, row, state in zip(s.times, s.values, s.states, strict=True)
            ]
            series.append({"model": model, **s.key._asdict(), "points": points})  # type: ignore[typeddict-item]
    return {"columns": HISTORY_COLUMNS, "series": series}


def _short(text: str, length: int = 40) -> str:
    return repr(text if len(text) <= length else text[:length] + "...")


def _filtered(rows: list[_Row], filters: Mapping[str, set[str]]) -> list[_Row]:
    return [
        row for row in rows if all(row[name] in accepted for name, accepted in filters.items() if name in row)
    ]


def _model_json(status: ModelStatus, details: bool) -> ModelJson:
    evaluation = status.last_evaluation
    skipped = list(evaluation.skipped_files) if evaluation else []
    return {
        "name": status.name,
        "source_up": status.source_up,
        "interval_seconds": status.interval_seconds,
        "last_success": _iso_z_or_none(status.last_success),
        "last_attempt": _iso_z_or_none(status.last_attempt),
        "last_error": disclosed_error(status.last_error, details) if status.last_error else None,
        "evaluated_at": iso_z(evaluation.evaluated_at) if evaluation else None,
        "evaluations_total": status.evaluations_total,
        "failures_total": status.failures_total,
        "rows_read_total": status.rows_read_total,
        "rows_rejected_total": dict(status.rows_rejected_total),
        "late_rows_total": status.late_rows_total,
        "last_read_rows_rejected": dict(evaluation.rejected) if evaluation else {},
        "skipped_files": skipped if details else [PurePath(f).name for f in skipped],
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


#: What a failed source's error says where its details are withheld (``server.error_details``).
UNDISCLOSED_ERROR = (
    "the source failed; the details are in fairwatch's log (server.error_details: shown serves them)"
)


def disclosed_error(text: str, details: bool) -> str:
    """A source's error as served: credentials masked (:func:`redact`), and without ``details``
    nothing of it at all - its hosts, ports, users, databases, tables and file paths are for the
    log, not for whoever reaches the port.

    >>> disclosed_error("cannot connect to db.internal:5432 as fairwatch", details=False)
    "the source failed; the details are in fairwatch's log (server.error_details: shown serves them)"
    """
    return redact(text) if details else UNDISCLOSED_ERROR


def redact(text: str) -> str:
    """``text`` with URL credentials masked (:func:`monitor.core.secrets.mask`): the source has masked
    its configured secrets already; this is a second line.

    >>> redact("cannot read postgresql://u:secret@h/db?password=two")
    'cannot read postgresql://u:***@h/db?password=***'
    """
    return mask(text)


def _iso_z_or_none(t: datetime | None) -> str | None:
    return None if t is None else iso_z(t)
