"""The live view at ``/``: one model's window - alerts, the group x metric table, charts - that
refreshes itself.

``/?model=M&window=W`` is the whole page; ``&fragment=1`` is its ``<main>`` alone, which
``static/live.js`` fetches every few seconds and swaps in. Both carry an ``ETag`` of the snapshot
they were drawn from, so a poll between two evaluations costs a ``304``. The assets (``live.js``,
``fairwatch.css``, ``favicon.svg``) are package data served under ``/static/``: the page needs no
network beyond the service.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html import escape
from importlib.resources import files
from urllib.parse import urlencode

from monitor.evaluation.incidents import incidents
from monitor.outputs.api import disclosed_error
from monitor.outputs.html.sections import alerts_view, incidents_view, seconds, window_view
from monitor.service.history import History
from monitor.service.snapshot import ModelStatus, Snapshot

__all__ = ["LiveView", "static_asset"]

_STATIC_TYPES = {
    "live.js": "text/javascript; charset=utf-8",
    "fairwatch.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


def static_asset(name: str) -> tuple[bytes, str] | None:
    """A file of ``monitor/outputs/html/static`` and its content type; ``None`` for anything else (no
    path is ever joined from the request)."""
    if name not in _STATIC_TYPES:
        return None
    return files("monitor.outputs.html").joinpath("static", name).read_bytes(), _STATIC_TYPES[name]


@dataclass
class LiveView:
    """Draws the page from a snapshot and the history; ``min_samples`` per model says why a value
    is ``insufficient_data``. What it draws is kept by the route (:class:`~monitor.http.drawing.CachedApp`,
    per ETag: browsers polling the same page share one drawing - a large model's page takes about a
    second)."""

    history: History
    min_samples: Mapping[str, int]
    details: Callable[[], bool] = lambda: True  # server.error_details: a failed source's error in full
    confidence: float = 0.95  # alerts.confidence: the level the intervals are quoted at

    def etag(self, snapshot: Snapshot, model: str | None, window: str | None) -> str:
        """Changes with the snapshot and with the history the page charts (recorded just after the
        snapshot is published: a page drawn in between must not be kept as the new one)."""
        chosen = _choose(snapshot, model)
        latest = self.history.latest(chosen) if chosen else None
        # the model asked for too: an unknown one is shown as the first, with a notice
        key = f"{snapshot.created_at}|{id(snapshot)}|{chosen}|{model}|{window}|{latest}"
        return '"' + hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:20] + '"'

    def page(self, snapshot: Snapshot, model: str | None, window: str | None) -> str:
        chosen = _choose(snapshot, model)
        refresh = _refresh_seconds(snapshot)
        nav = "".join(
            f'<a href="?{urlencode({"model": name})}"{_current(name == chosen)}>{escape(name)}</a>'
            for name in snapshot.models
        )
        links = " · ".join(
            f'<a href="{path}">{escape(what)}</a>'
            for path, what in (
                ("/metrics", "Prometheus metrics"),
                ("/api/v1/results", "results (JSON)"),
                ("/api/v1/history", "history (JSON)"),
                ("/api/v1/power", "power"),
                ("/healthz", "liveness"),
                ("/readyz", "readiness"),
            )
        )
        title = f"fairwatch · {chosen}" if chosen else "fairwatch"
        return (
            '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title>"
            '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'
            '<link rel="stylesheet" href="/static/fairwatch.css">'
            '<script src="/static/live.js" defer></script></head>'
            f'<body data-refresh="{refresh:g}"><header><h1>fairwatch</h1><nav aria-label="models">{nav}</nav>'
            f'<span id="live-status" class="live" aria-live="polite">live · every {refresh:g} s</span></header>'
            f'<main id="live" data-etag="{escape(self.etag(snapshot, model, window))}">'
            f"{self.main(snapshot, model, window)}</main>"
            f"<footer>{links}</footer></body></html>\n"
        )

    def main(self, snapshot: Snapshot, model: str | None, window: str | None) -> str:
        chosen = _choose(snapshot, model)
        if chosen is None:
            return '<p class="empty">No models configured.</p>'
        status = snapshot.models[chosen]
        evaluation = status.last_evaluation
        parts = [f"<h2>{escape(chosen)}</h2>", _facts(status, self.details())]
        if model is not None and model != chosen:  # a stale bookmark, a renamed model: say so
            parts.insert(
                0, f'<p class="notice">No model named {escape(model)}: showing {escape(chosen)}.</p>'
            )
        if evaluation is None or not evaluation.windows:
            parts.append(
                f'<p class="empty">Waiting for the first evaluation of {escape(chosen)} '
                f"(every {status.interval_seconds:g} s).</p>"
            )
            return "".join(parts)
        names = [w.window for w in evaluation.windows]
        shown = window if window in names else names[0]
        tabs = "".join(
            f'<a href="?{urlencode({"model": chosen, "window": name})}"{_current(name == shown)}>'
            f"{escape(name)}</a>"
            for name in names
        )
        parts.append(f'<nav class="tabs" aria-label="windows">{tabs}</nav>')
        alerts = [a for a in snapshot.alerts if a.labels.get("model") == chosen]
        firing = [
            tuple(
                a.labels.get(k, "") for k in ("model", "window", "attribute", "group", "reference", "metric")
            )
            for a in alerts
            if a.state == "firing" and "basis" not in a.labels
        ]
        found = incidents([evaluation], firing=firing)
        parts.append(
            f"<h2>Incidents</h2>{incidents_view(found, alerts, evaluation, confidence=self.confidence)}"
        )
        parts.append(f"<h2>Alerts</h2>{alerts_view(alerts)}")
        result = next(w for w in evaluation.windows if w.window == shown)
        series = self.history.series(chosen, where={"window": [shown]})
        parts.append(window_view(result, series, model=chosen, min_samples=self.min_samples.get(chosen, 100)))
        return "".join(parts)


def _choose(snapshot: Snapshot, model: str | None) -> str | None:
    if model in snapshot.models:
        return model
    return next(iter(snapshot.models), None)


def _current(yes: bool) -> str:
    return ' aria-current="page"' if yes else ""


def _refresh_seconds(snapshot: Snapshot) -> float:
    """As often as the fastest model is evaluated, within 2-15 s."""
    fastest = min((s.interval_seconds for s in snapshot.models.values()), default=15.0)
    return min(max(fastest, 2.0), 15.0)


def _facts(status: ModelStatus, details: bool) -> str:
    evaluation = status.last_evaluation
    source = (
        "source up"
        if status.source_up
        else f'<span class="source-down">source down: {escape(disclosed_error(status.last_error or "", details))}</span>'
    )
    rejected = sum(status.rows_rejected_total.values())
    facts = [
        source,
        f"last evaluation {seconds(evaluation.evaluated_at) if evaluation else 'never'}",
        f"every {status.interval_seconds:g} s",
        f"{status.rows_read_total:,} rows read, {rejected:,} rejected",
    ]
    if not math.isnan(status.last_duration_seconds):
        facts.append(f"took {status.last_duration_seconds:.2f} s")
    if status.last_error and status.source_up:
        facts.append(
            f'<span class="source-down">last error: {escape(disclosed_error(status.last_error, details))}</span>'
        )
    return f'<p class="facts">{" · ".join(facts)}</p>'
