"""The immutable state that ``/metrics`` and ``/api/v1/results`` serve.

Each evaluation builds a new :class:`Snapshot` and swaps it in with one reference
assignment; readers take the reference once and never see a half-updated state, and a
scrape never computes anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from monitor.evaluation.results import ModelEvaluation

__all__ = ["ActiveAlert", "ModelStatus", "Snapshot"]


@dataclass(frozen=True)
class ModelStatus:
    """Everything known about one model: its last good evaluation and its counters."""

    name: str
    interval_seconds: float
    source_up: bool = True
    last_evaluation: ModelEvaluation | None = None  # kept when a later one fails: age is visible
    last_success: datetime | None = None
    last_attempt: datetime | None = None
    last_error: str | None = None
    evaluations_total: int = 0
    failures_total: int = 0
    rows_read_total: int = 0
    rows_rejected_total: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    late_rows_total: int = 0
    changed_panes_total: int = 0
    last_duration_seconds: float = float("nan")
    skipped_total: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))  # ticks, by reason


@dataclass(frozen=True)
class ActiveAlert:
    """A pending or firing alert, as exported and as pushed to the sinks."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    state: str  # "pending" | "firing"
    active_since: datetime  # when the violation began (pending) - Prometheus' activeAt
    firing_since: datetime | None
    value: float


@dataclass(frozen=True)
class SinkStats:
    """One alert sink's delivery counters (``fairwatch_alert*{sink}``), from :mod:`monitor.service.delivery`."""

    sent: int = 0  # alert notifications delivered
    failures: int = 0  # attempts the sink refused or could not be reached for
    dropped: int = 0  # resolves dropped because the sink's outbox was full
    queued: int = 0  # alerts waiting in the outbox


@dataclass(frozen=True)
class Snapshot:
    models: Mapping[str, ModelStatus]
    alerts: tuple[ActiveAlert, ...] = ()
    job_errors_total: int = 0
    alert_sinks: Mapping[str, SinkStats] = field(default_factory=lambda: MappingProxyType({}))
    created_at: datetime | None = None
