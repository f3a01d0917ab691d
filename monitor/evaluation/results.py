"""What one evaluation of one model produces: immutable values, safe to share across threads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from metrics_core import MetricValue, ModelValue
from monitor.evaluation.nowcast import CalibrationCheck

__all__ = ["GroupStats", "ModelEvaluation", "WindowResult"]


@dataclass(frozen=True)
class GroupStats:
    """Size and label coverage of one group in one window."""

    attribute: str
    group: str
    reference: str
    n_rows: int
    n_labeled: int
    n_label_rows: int | None = None  # rows of the label window (None: the same window)

    @property
    def label_coverage(self) -> float:
        """Share of the label window's rows that have their label (the data behind label metrics)."""
        return label_coverage(self.n_labeled, self.n_rows, self.n_label_rows)


@dataclass(frozen=True)
class WindowResult:
    """The judged metrics of one window.

    ``start``/``end`` bound the outcome window (metrics that need only predictions);
    ``label_start``/``label_end`` the label window, shifted back by the model's
    ``label_delay`` so that labels have had time to arrive.
    """

    window: str
    start: datetime
    end: datetime
    label_start: datetime
    label_end: datetime
    values: tuple[MetricValue, ...]
    model_values: tuple[ModelValue, ...]
    groups: tuple[GroupStats, ...]
    n_rows: int
    n_labeled: int  # labeled rows of the label window
    dropped_groups: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    missing_group_rows: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    n_label_rows: int | None = None  # rows of the label window (None: the same window)
    # nowcast: the label metrics of the outcome window estimated from the scores, labels pending
    estimates: tuple[MetricValue, ...] = ()
    # nowcast: each group's calibration on the label window's labelled rows
    calibration: tuple[CalibrationCheck, ...] = ()
    # each group's own rate behind a judged difference or ratio of rates (selection_rate for disparate
    # impact, true_positive_rate for equal opportunity) where it is not a configured metric: what plain
    # words quote ("40% vs 59%"), never exported (:mod:`monitor.evaluation.wording`)
    rates: tuple[MetricValue, ...] = ()
    needs_labels: bool = True  # a metric of the model needs labels (False: it logs decisions only)

    @property
    def label_coverage(self) -> float:
        """Share of the label window's rows that have their label (the data behind label metrics)."""
        return label_coverage(self.n_labeled, self.n_rows, self.n_label_rows)


@dataclass(frozen=True)
class ModelEvaluation:
    """All windows of one model at one evaluation time."""

    model: str
    evaluated_at: datetime
    duration_seconds: float
    windows: tuple[WindowResult, ...]
    rows_read: int
    rejected: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    skipped_files: tuple[str, ...] = ()  # files that could not be parsed (tried again next time)
    read_seconds: float = 0.0
    compute_seconds: float = 0.0
    late_rows: int = 0  # rows found in sealed panes since they were kept (monitor.reading.panes)
    pieces_read: int | None = None  # statements sent through sealed panes (None: whole windows read)
    pane_store_up: bool | None = None  # the sealed panes written to panes.directory (None: no directory)
    changed_panes: int = 0  # sealed panes whose rows changed since they were kept (counted again)
    # models[].publish: pane files this evaluation published (None: the model does not publish)
    published_panes: int | None = None
    # source kind published: each publisher and when it last published (Unix seconds; NaN: unknown)
    publishers: Mapping[str, float] | None = None
    stale_publishers: tuple[str, ...] = ()  # publishers silent for longer than source.stale_after
    # the columns each categorical and intersection attribute reads, in order (indicator attributes:
    # none): how an intersection's group ("Black&F") names a group of another attribute (incidents)
    attribute_columns: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    words: Words = field(default_factory=lambda: Words())  # the model's wording (plain words)


@dataclass(frozen=True)
class Words:
    """A model's words (``models[].wording``): its favourable outcome, a noun (``approval``), and who
    it predicts about (``applicants``)."""

    outcome: str = "positive prediction"
    subjects: str = "rows"


def label_coverage(n_labeled: int, n_rows: int, n_label_rows: int | None) -> float:
    """``n_labeled`` of the label window's rows (``n_label_rows``; ``None``: the outcome window's
    ``n_rows``), NaN for an empty window."""
    rows = n_rows if n_label_rows is None else n_label_rows
    return n_labeled / rows if rows else float("nan")
