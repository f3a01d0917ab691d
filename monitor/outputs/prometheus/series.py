"""The names fairwatch exports, in one place: every family's name, labels and HELP text.

The collector (``/metrics`` and backfills), the generated alerting rules and the Grafana dashboards
all read this schema, so a family renamed or a label added here changes all of them at once.

Families (all prefixed ``fairwatch_``):

- ``<metric>`` per group metric, labels :data:`VALUE_LABELS`; per model-level value,
  :data:`MODEL_VALUE_LABELS`;
- the companions of each value (:data:`COMPANIONS`: interval, fair range, state, support), each
  with a ``metric`` label;
- group and window sizes, label coverage, dropped groups and rows without a group;
- ``alerts`` (as Prometheus' ``ALERTS``) and the service's own metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from metrics_core import STATES

__all__ = [
    "ALERTS",
    "ALERT_LABELS",
    "ATTRIBUTE_LABELS",
    "CALIBRATION",
    "COMPANIONS",
    "COMPANION_LABELS",
    "ESTIMATES",
    "FAMILY_PREFIX",
    "GROUP_LABELS",
    "MODEL_LABELS",
    "MODEL_VALUE_LABELS",
    "SCHEDULED",
    "SERVICE_FAMILIES",
    "SINK_FAMILIES",
    "SIZE_FAMILIES",
    "STATE_CODES",
    "VALUE_LABELS",
    "WINDOW_LABELS",
    "Family",
]

#: The start of every exported metric family name (``fairwatch_disparate_impact``, ...).
FAMILY_PREFIX = "fairwatch_"

#: ``fairwatch_metric_state`` values: the position in :data:`metrics_core.STATES`.
STATE_CODES: dict[str, int] = {state: code for code, state in enumerate(STATES)}

#: Said in the HELP of every family an evaluation computes.
SCHEDULED = "Computed on a schedule (every model's interval), not at scrape time."

# Labels by family shape.
VALUE_LABELS = ("model", "window", "attribute", "group", "reference")
MODEL_VALUE_LABELS = ("model", "window", "attribute")
COMPANION_LABELS = ("metric", *VALUE_LABELS)
GROUP_LABELS = ("model", "window", "attribute", "group")
WINDOW_LABELS = ("model", "window")
ATTRIBUTE_LABELS = ("model", "window", "attribute")
MODEL_LABELS = ("model",)
# The alert's identity (reference included: one group may be judged against two references; basis:
# labels, or estimate for an alert raised from a value estimated before its labels).
ALERT_LABELS = ("model", "window", "attribute", "group", "reference", "metric", "basis", "alertstate")


@dataclass(frozen=True)
class Family:
    """One exported family: ``fairwatch_<suffix>``, its HELP, labels and type."""

    suffix: str
    help: str
    labels: tuple[str, ...]
    kind: Literal["gauge", "counter", "info"] = "gauge"
    field: str = ""  # the attribute its value comes from (a MetricValue's, ModelStatus', SinkStats')

    @property
    def name(self) -> str:
        return FAMILY_PREFIX + self.suffix


_STATE_HELP = ", ".join(f"{code} {state}" for state, code in STATE_CODES.items())

#: Each judged value's companions: its interval, fair range, state and support.
METRIC_CI_LOWER = Family(
    "metric_ci_lower",
    "Lower bound of the metric's confidence interval (NaN when undefined).",
    COMPANION_LABELS,
    field="ci_lower",
)
METRIC_CI_UPPER = Family(
    "metric_ci_upper",
    "Upper bound of the metric's confidence interval (NaN when undefined).",
    COMPANION_LABELS,
    field="ci_upper",
)
METRIC_FAIR_MIN = Family(
    "metric_fair_min",
    "Lower end of the metric's fair range (-Inf: open).",
    COMPANION_LABELS,
    field="fair_min",
)
METRIC_FAIR_MAX = Family(
    "metric_fair_max",
    "Upper end of the metric's fair range (+Inf: open).",
    COMPANION_LABELS,
    field="fair_max",
)
METRIC_STATE = Family(
    "metric_state",
    f"State of the metric against its fair range: {_STATE_HELP}.",
    COMPANION_LABELS,
    field="state",
)
METRIC_SUPPORT = Family(
    "metric_support",
    "Smallest denominator the metric depends on (judged against min_samples).",
    COMPANION_LABELS,
    field="support",
)
COMPANIONS = (
    METRIC_CI_LOWER,
    METRIC_CI_UPPER,
    METRIC_FAIR_MIN,
    METRIC_FAIR_MAX,
    METRIC_STATE,
    METRIC_SUPPORT,
)

#: Group and window sizes.
GROUP_ROWS = Family("group_rows", "Rows of the group in the window.", GROUP_LABELS)
GROUP_LABELED_ROWS = Family(
    "group_labeled_rows", "Rows of the group in the window with a label.", GROUP_LABELS
)
GROUP_LABEL_COVERAGE = Family(
    "group_label_coverage_ratio", "Share of the group's rows with a label (0..1).", GROUP_LABELS
)
WINDOW_ROWS = Family("window_rows", "Rows in the window.", WINDOW_LABELS)
WINDOW_LABEL_COVERAGE = Family(
    "window_label_coverage_ratio", "Share of the window's rows with a label.", WINDOW_LABELS
)
GROUPS_DROPPED = Family(
    "groups_dropped",
    "Groups of the attribute not exported (intersection cap or minimum size).",
    ATTRIBUTE_LABELS,
)
GROUP_MISSING_ROWS = Family(
    "group_missing_rows", "Rows of the window with no value for the attribute.", ATTRIBUTE_LABELS
)
SIZE_FAMILIES = (
    GROUP_ROWS,
    GROUP_LABELED_ROWS,
    GROUP_LABEL_COVERAGE,
    WINDOW_ROWS,
    WINDOW_LABEL_COVERAGE,
    GROUPS_DROPPED,
    GROUP_MISSING_ROWS,
)

#: models[].nowcast: label metrics estimated from the scores while the labels are pending - their own
#: families, never the realised series - and each group's calibration on the labelled rows.
ESTIMATE = Family(
    "estimate",
    "A label metric of the window estimated from calibrated scores, its labels pending (docs/nowcasting.md); "
    "NaN: undefined, or its group's calibration failed (see fairwatch_calibration_passed).",
    COMPANION_LABELS,
    field="value",
)
ESTIMATE_CI_LOWER = Family(
    "estimate_ci_lower", "Lower bound of the estimate's interval.", COMPANION_LABELS, field="ci_lower"
)
ESTIMATE_CI_UPPER = Family(
    "estimate_ci_upper", "Upper bound of the estimate's interval.", COMPANION_LABELS, field="ci_upper"
)
ESTIMATE_STATE = Family(
    "estimate_state",
    f"State of the estimate against its fair range: {_STATE_HELP}.",
    COMPANION_LABELS,
    field="state",
)
ESTIMATES = (ESTIMATE, ESTIMATE_CI_LOWER, ESTIMATE_CI_UPPER, ESTIMATE_STATE)
CALIBRATION_RATIO = Family(
    "calibration_ratio",
    "Observed over expected positives of the group's labelled rows under the nowcast's calibration (1: fits).",
    GROUP_LABELS,
    field="ratio",
)
CALIBRATION_RATIO_LOWER = Family(
    "calibration_ratio_lower",
    "Lower bound of the calibration ratio's interval.",
    GROUP_LABELS,
    field="ratio_lower",
)
CALIBRATION_RATIO_UPPER = Family(
    "calibration_ratio_upper",
    "Upper bound of the calibration ratio's interval.",
    GROUP_LABELS,
    field="ratio_upper",
)
CALIBRATION_SLOPE = Family(
    "calibration_slope",
    "Slope of the group's labels regressed on logit(calibrated probability) (1: fits).",
    GROUP_LABELS,
    field="slope",
)
CALIBRATION_PASSED = Family(
    "calibration_passed",
    "1 when the group's calibration check passed (its estimates are judged), else 0.",
    GROUP_LABELS,
    field="passed",
)
CALIBRATION = (
    CALIBRATION_RATIO,
    CALIBRATION_RATIO_LOWER,
    CALIBRATION_RATIO_UPPER,
    CALIBRATION_SLOPE,
    CALIBRATION_PASSED,
)

ALERTS = Family(
    "alerts",
    "1 for each pending or firing fairwatch alert, as Prometheus' ALERTS; basis is estimate for an alert "
    "raised from a value estimated before its labels, else labels.",
    ALERT_LABELS,
)

#: The service's own metrics.
BUILD = Family("build", "fairwatch build information.", ("version",), "info")
JOB_ERRORS = Family("job_errors_total", "Unexpected errors in scheduled jobs (see the log).", (), "counter")
EVALUATIONS = Family(
    "evaluations_total", "Evaluations attempted.", MODEL_LABELS, "counter", "evaluations_total"
)
EVALUATION_FAILURES = Family(
    "evaluation_failures_total", "Evaluations that failed.", MODEL_LABELS, "counter", "failures_total"
)
ROWS_READ = Family(
    "rows_read_total", "Prediction rows read from the source.", MODEL_LABELS, "counter", "rows_read_total"
)
ROWS_REJECTED = Family(
    "rows_rejected_total",
    "Rows dropped as invalid, by reason, counted per read like rows_read_total: every evaluation "
    "re-reads its windows, so a bad row is counted again while it stays in a window.",
    ("model", "reason"),
    "counter",
)
LATE_ROWS = Family(
    "late_rows_total",
    "Rows found in sealed panes after their counts were kept (arrived later than "
    "label_delay + panes.lateness); each was folded in by reading its panes again.",
    MODEL_LABELS,
    "counter",
    "late_rows_total",
)
CHANGED_PANES = Family(
    "sealed_panes_changed_total",
    "Sealed panes whose rows changed after their counts were kept - a corrected label, a label "
    "written into an existing row, rows replaced or written late - found by counting each kept "
    "pane again at least once every panes.recheck; each was replaced by its new counts.",
    MODEL_LABELS,
    "counter",
    "changed_panes_total",
)
EVALUATION_SKIPPED = Family(
    "evaluation_skipped_total",
    "Scheduled evaluations of the model that were skipped, by reason: busy (it waited for a free worker: "
    "more models were due than workers) or slow (its own evaluation ran longer than its interval); "
    "it is evaluated again at its first tick still ahead, oldest due first.",
    ("model", "reason"),
    "counter",
)
LAST_READ_REJECTED = Family(
    "last_read_rows_rejected",
    "Invalid rows, by reason, among the rows the model's last successful evaluation read "
    "(the span of its longest window): each bad row counted once.",
    ("model", "reason"),
)
LAST_READ_FILES_SKIPPED = Family(
    "last_read_files_skipped",
    "Files the model's last successful evaluation skipped because they could not be parsed "
    "(half written, corrupt); they are tried again at every evaluation.",
    MODEL_LABELS,
)
EVALUATION_DURATION = Family(
    "evaluation_duration_seconds", "Duration of the model's last evaluation.", MODEL_LABELS
)
LAST_SUCCESS = Family(
    "last_evaluation_success_timestamp_seconds",
    "Unix time of the model's last successful evaluation; absent before the first.",
    MODEL_LABELS,
)
LAST_ATTEMPT = Family(
    "last_evaluation_timestamp_seconds",
    "Unix time of the model's last evaluation attempt, successful or not.",
    MODEL_LABELS,
)
SOURCE_UP = Family(
    "source_up",
    "1 if the model's last evaluation read its source, 0 if it failed (last values stay exported).",
    MODEL_LABELS,
)
MODEL_INTERVAL = Family(
    "model_interval_seconds", "Configured evaluation interval of the model.", MODEL_LABELS
)
PANE_STORE_UP = Family(
    "pane_store_up",
    "1 if the model's sealed panes were written to panes.directory at its last evaluation, 0 if "
    "writing failed (a full disk, a read-only volume: the panes stay in memory and writing is tried "
    "again at every evaluation); absent without panes.directory.",
    MODEL_LABELS,
)
LAST_PUBLISHED_PANES = Family(
    "last_published_panes",
    "Pane files the model's last evaluation published to its store (models[].publish: open panes again "
    "at every tick, sealed ones once); absent for a model that does not publish.",
    MODEL_LABELS,
)
PUBLISHERS = Family(
    "publishers",
    "Publishers of the model's counts a published source read at its last evaluation, by state: "
    "fresh, or stale (silent for longer than source.stale_after; their panes still count until they "
    "leave the windows).",
    ("model", "state"),
)
PUBLISHER_LAST_SEEN = Family(
    "publisher_last_seen_timestamp_seconds",
    "Unix time (the publisher's clock) of the publisher's last publication of the model's counts, as "
    "the published source read it at its last evaluation.",
    ("model", "publisher"),
)

#: Per alert sink (``SinkStats`` fields).
ALERTS_SENT = Family("alerts_sent_total", "Alert notifications delivered.", ("sink",), "counter", "sent")
ALERT_DELIVERY_FAILURES = Family(
    "alert_delivery_failures_total",
    "Delivery attempts a sink refused, could not be reached for, or did not answer in time.",
    ("sink",),
    "counter",
    "failures",
)
ALERT_NOTIFICATIONS_DROPPED = Family(
    "alert_notifications_dropped_total",
    "Undelivered resolves dropped because the sink's outbox was full.",
    ("sink",),
    "counter",
    "dropped",
)
ALERT_QUEUE_LENGTH = Family(
    "alert_queue_length", "Alerts waiting in the sink's outbox.", ("sink",), field="queued"
)
SINK_FAMILIES = (ALERTS_SENT, ALERT_DELIVERY_FAILURES, ALERT_NOTIFICATIONS_DROPPED, ALERT_QUEUE_LENGTH)

SERVICE_FAMILIES = (
    BUILD,
    EVALUATIONS,
    EVALUATION_FAILURES,
    EVALUATION_SKIPPED,
    ROWS_READ,
    ROWS_REJECTED,
    LATE_ROWS,
    CHANGED_PANES,
    LAST_READ_REJECTED,
    LAST_READ_FILES_SKIPPED,
    JOB_ERRORS,
    *SINK_FAMILIES,
    EVALUATION_DURATION,
    LAST_SUCCESS,
    LAST_ATTEMPT,
    SOURCE_UP,
    MODEL_INTERVAL,
    PANE_STORE_UP,
    LAST_PUBLISHED_PANES,
    PUBLISHERS,
    PUBLISHER_LAST_SEEN,
)
