"""Alert state per judged value: pending, firing, resolved - Prometheus' rules applied to our states.

Each series - one (model, window, attribute, group, reference, metric) - is tracked on its own::

                  violation                  violation held for ``for_``
    (inactive) -------------> pending ---------------------------------> firing
                                 |                                          |
                                 | anything but violation                   | ok, insufficient_data or the
                                 v                                          | series gone, and still so after
                         dropped, nothing sent                              v ``keep_firing_for``
                                                                        resolved (sent once)

- Only ``violation`` (the whole interval outside the fair range, ``metrics.md`` section 5) starts an
  alert. ``inconclusive`` and ``insufficient_data`` never do, and a NaN value never alerts whatever its
  state says.
- A pending alert fires once the violation has lasted ``for_`` (``now - active_since >= for_``), so
  ``for_ = 0`` fires at the first evaluation that sees it. A pending alert whose value is no longer a
  violation is dropped silently: it never fired, so there is nothing to resolve.
- A firing alert stays firing while the value is outside its fair range (``violation`` *or*
  ``inconclusive``): a value hovering at the edge of the range, whose interval reaches back in and out,
  must not make the alert flap. It resolves when the value is back in range (``ok``), cannot be judged
  (``insufficient_data``) or its series vanished from the model's evaluation (the group is gone).
- With ``keep_firing_for > 0`` a firing alert whose condition cleared keeps firing until it has stayed
  clear for that long (Prometheus' ``keep_firing_for``); out of range again meanwhile resets the clock.
  While it is kept, its annotations keep the last out-of-range value: they say why it fired.
- :meth:`AlertTracker.update` touches only the model of the evaluation it is given. A model whose
  source fails is simply not updated, so its alerts stay as they were instead of resolving.

An estimate (``models[].nowcast``: a label metric judged from the scores while its labels are
pending) is a series of its own with the same rules: its alert carries ``basis="estimate"``, the
severity ``alerts.estimate_severity`` and a summary that starts "Estimated, labels pending". An
estimate whose group failed its calibration check is ``insufficient_data`` and cannot alert.

Every alert carries an ``incident`` label: the affected population it belongs to (``race=Black``;
an intersection's alert, ``race_sex=Black&F``, the population of a part of it that is in violation
at the same evaluation - :mod:`monitor.evaluation.incidents`; the incident of its group's alerts
already active, if any), decided when the alert starts and kept for its life. Alertmanager grouped
by ``[model, incident]`` sends one notification per incident, with every metric and window of it
inside. An intersection that crosses before the group it holds names the incident (its own group,
``race_sex=Black&F``: labels do not change), and the group's alerts join it when they start.

The labels of an alert are its identity (``alertname``, model, window, attribute, group, reference,
metric, severity); the annotations carry a readable ``summary``, a ``description`` with the metric's
meaning and, when ``alerts.runbook_url`` is set, a ``runbook_url`` linking to the metric's section
(``<runbook_url>#<metric>``, as the generated rules link), re-rendered at every evaluation while the
alert is active.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from metrics_core import MetricValue, get_metric
from monitor.core.text import fair_range_text, number
from monitor.evaluation.incidents import evidence, populations
from monitor.evaluation.onset import Onset, onset_text
from monitor.evaluation.results import ModelEvaluation
from monitor.evaluation.wording import plain_finding, plain_value
from monitor.service.snapshot import ActiveAlert

__all__ = [
    "ALERTNAME",
    "ESTIMATE",
    "AlertTracker",
    "AlertUpdate",
    "alert_description",
    "alert_summary",
    "incident_summary",
    "runbook_link",
]

#: The name of every fairness alert, raised here and by the generated Prometheus rules (monitor.outputs.prometheus.rules).
ALERTNAME = "FairwatchFairnessViolation"

# States in which a firing alert keeps firing: the point estimate is outside the fair range.
_OUT_OF_RANGE = frozenset({"violation", "inconclusive"})

# (model, window, attribute, group, reference, metric, basis). The reference is part of the identity:
# the same group judged against another reference is another comparison, with other labels. The basis
# ("labels" or "estimate") too: an estimate and the realised value of the same comparison are two
# alerts, the estimate's at its own severity, so that the realised one can inhibit it in Alertmanager.
_Key = tuple[str, str, str, str, str, str, str]

#: The ``basis`` label of an alert raised from an estimate (docs/nowcasting.md); realised alerts have none.
ESTIMATE = "estimate"


@dataclass(frozen=True)
class AlertUpdate:
    """What one :meth:`AlertTracker.update` changed, and what to export and push now.

    ``active`` holds the pending and firing alerts of *every* model (what a snapshot exports);
    ``firing`` only this model's firing alerts, to push to the sinks at every evaluation;
    ``resolved`` this model's alerts that stopped firing now (``state="resolved"``), to push
    once with ``endsAt``. ``started_pending`` and ``dropped`` are the transitions no sink hears
    of (an alert became pending; a pending one cleared before it fired): the service logs them.
    Starting to fire needs no field of its own: the sinks are told of every firing alert, and
    the log sink says once per episode when one starts.
    """

    model: str
    active: tuple[ActiveAlert, ...]
    firing: tuple[ActiveAlert, ...]
    resolved: tuple[ActiveAlert, ...]
    started_pending: tuple[ActiveAlert, ...] = ()
    dropped: tuple[ActiveAlert, ...] = ()


@dataclass
class _Series:
    """The mutable tracking state of one series; the outside world only sees ActiveAlert copies."""

    alert: ActiveAlert
    cleared_since: datetime | None = None  # first evaluation of a firing alert back in range


@dataclass
class _Transitions:
    started_pending: list[ActiveAlert] = field(default_factory=list)
    dropped: list[ActiveAlert] = field(default_factory=list)
    resolved: list[ActiveAlert] = field(default_factory=list)


class AlertTracker:
    """The alert state machine of every (model, window, attribute, group, reference, metric).

    Thread-safe: evaluations of different models may call :meth:`update` concurrently.
    ``confidence`` is the interval level quoted in the annotations; ``runbook_url``, when
    given, is the runbook every alert links to, at its metric's section (``runbook_url#metric``).
    """

    def __init__(
        self,
        *,
        for_: timedelta,
        keep_firing_for: timedelta,
        severity: str = "warning",
        estimate_severity: str = "info",
        confidence: float = 0.95,
        runbook_url: str | None = None,
    ) -> None:
        if for_ < timedelta(0):
            raise ValueError(f"for_ must not be negative, got {for_}")
        if keep_firing_for < timedelta(0):
            raise ValueError(f"keep_firing_for must not be negative, got {keep_firing_for}")
        if not 0 < confidence < 1:
            raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")
        if not severity or not estimate_severity:
            raise ValueError("severity must not be empty")
        self.for_ = for_
        self.keep_firing_for = keep_firing_for
        self.severity = severity
        self.estimate_severity = estimate_severity
        self.confidence = confidence
        self.runbook_url = runbook_url
        self._series: dict[_Key, _Series] = {}
        self._lock = threading.Lock()
        self._evaluation: ModelEvaluation | None = None

    def update(
        self, evaluation: ModelEvaluation, now: datetime, *, onsets: Mapping[str, Onset] | None = None
    ) -> AlertUpdate:
        """Advance every series of ``evaluation.model`` to ``now``; other models are left alone.
        ``onsets``: when each incident (by its ``incident`` label) began, where estimated
        (:mod:`monitor.service.onsets`)."""
        if now.tzinfo is None:
            raise ValueError(f"now must be timezone-aware, got {now!r}")
        model = evaluation.model
        seen = _values_by_key(evaluation)
        now_of = populations(evaluation)  # each group in violation -> the population it is part of now
        changes = _Transitions()
        with self._lock:
            self._evaluation = evaluation  # what this update's annotations quote in plain words
            tracked = {key for key in self._series if key[0] == model}
            # a group's alerts share one incident: a metric or window starting later takes the one
            # its group's active alerts already have
            active = {(k[2], k[3]): self._series[k].alert.labels["incident"] for k in tracked}
            # ... and a group starting now takes the label its population's active alerts already have: an
            # intersection that crossed first (Black&F) named the incident its group (Black) joins now
            held: dict[str, str] = {}
            for k in sorted(tracked, key=lambda k: (self._series[k].alert.active_since, k)):  # the first wins
                if (k[2], k[3]) in now_of:
                    held.setdefault(now_of[k[2], k[3]], self._series[k].alert.labels["incident"])
            incident_of = {g: held.get(p, p) for g, p in now_of.items()} | active
            for key in sorted(tracked | seen.keys()):
                value = seen.get(key)
                series = self._series.get(key)
                if series is None:
                    if value is not None and _is_violation(value):
                        incident = incident_of.get((key[2], key[3]), f"{key[2]}={key[3]}")
                        self._start(key, value, now, changes, incident)
                elif series.alert.state == "pending":
                    self._step_pending(key, series, value, now, changes)
                else:
                    self._step_firing(key, series, value, now, changes)
            changes.resolved = self._describe_incidents(evaluation, seen, onsets or {}, changes.resolved)
            described = {frozenset(s.alert.labels.items()): s.alert for s in self._series.values()}
            changes.started_pending = [
                described.get(frozenset(a.labels.items()), a) for a in changes.started_pending
            ]
            return AlertUpdate(
                model=model,
                active=self._active(),
                firing=self._active(model, state="firing"),
                resolved=tuple(changes.resolved),
                started_pending=tuple(changes.started_pending),
                dropped=tuple(changes.dropped),
            )

    # -- transitions (called with the lock held) -------------------------------------------------------

    def _start(
        self, key: _Key, value: MetricValue, now: datetime, changes: _Transitions, incident: str
    ) -> None:
        alert = ActiveAlert(
            labels={**self._labels(key), "incident": incident},
            annotations=self._annotations(key, value),
            state="pending",
            active_since=now,
            firing_since=None,
            value=value.value,
        )
        series = self._series[key] = _Series(alert)
        changes.started_pending.append(alert)
        self._fire_if_due(series, now)  # for_ = 0 fires at once

    def _step_pending(
        self, key: _Key, series: _Series, value: MetricValue | None, now: datetime, changes: _Transitions
    ) -> None:
        if value is None or not _is_violation(value):
            del self._series[key]
            changes.dropped.append(series.alert)
            return
        series.alert = self._refreshed(series.alert, key, value)
        self._fire_if_due(series, now)

    def _step_firing(
        self, key: _Key, series: _Series, value: MetricValue | None, now: datetime, changes: _Transitions
    ) -> None:
        if value is not None and _is_out_of_range(value):
            series.alert = self._refreshed(series.alert, key, value)
            series.cleared_since = None
            return
        if series.cleared_since is None:
            series.cleared_since = now
        if now - series.cleared_since >= self.keep_firing_for:
            del self._series[key]
            changes.resolved.append(replace(series.alert, state="resolved"))

    def _describe_incidents(
        self,
        evaluation: ModelEvaluation,
        seen: Mapping[_Key, MetricValue],
        onsets: Mapping[str, Onset],
        resolved: list[ActiveAlert],
    ) -> list[ActiveAlert]:
        """Give each active alert of ``model``, and each resolving now, its incident's account
        (``incident_summary``, and ``onset`` where estimated): one text for every alert of an incident,
        so that a notification grouped by ``incident`` carries it among its common annotations (a
        resolved alert with an older text would empty them). Returns ``resolved`` so described."""
        members: dict[str, list[_Key]] = {}
        for key, series in self._series.items():
            if key[0] == evaluation.model:
                members.setdefault(series.alert.labels["incident"], []).append(key)
        gone: dict[str, list[int]] = {}
        for i, alert in enumerate(resolved):
            gone.setdefault(alert.labels["incident"], []).append(i)
        out = list(resolved)
        for incident in dict.fromkeys([*members, *gone]):
            keys = members.get(incident, [])
            values = [(key, seen[key]) for key in keys if key in seen and _is_out_of_range(seen[key])]
            # its onset: estimated for the population it names, or for a member's own (an incident an
            # intersection named before the group it holds joined it)
            groups = [f"{k[2]}={k[3]}" for k in keys] + [
                f"{out[i].labels['attribute']}={out[i].labels['group']}" for i in gone.get(incident, [])
            ]
            onset = onsets.get(incident) or next(
                (o for g in groups if (o := onsets.get(g)) is not None), None
            )
            text = incident_summary(incident, evaluation, values, onset, confidence=self.confidence)
            extra = {"incident_summary": text} | ({"onset": onset_text(onset)} if onset else {})
            for key in keys:
                series = self._series[key]
                series.alert = replace(series.alert, annotations=_noted(series.alert.annotations, extra))
            for i in gone.get(incident, []):
                out[i] = replace(out[i], annotations=_noted(out[i].annotations, extra, keep=onset is None))
        return out

    def _fire_if_due(self, series: _Series, now: datetime) -> None:
        if now - series.alert.active_since >= self.for_:
            series.alert = replace(series.alert, state="firing", firing_since=now)

    def _refreshed(self, alert: ActiveAlert, key: _Key, value: MetricValue) -> ActiveAlert:
        return replace(alert, annotations=self._annotations(key, value), value=value.value)

    def _active(self, model: str | None = None, *, state: str | None = None) -> tuple[ActiveAlert, ...]:
        return tuple(
            self._series[key].alert
            for key in sorted(self._series)
            if (model is None or key[0] == model)
            and (state is None or self._series[key].alert.state == state)
        )

    # -- labels and text -------------------------------------------------------------------------------

    def _labels(self, key: _Key) -> dict[str, str]:
        model, window, attribute, group, reference, metric, basis = key
        labels = {
            "alertname": ALERTNAME,
            "model": model,
            "window": window,
            "attribute": attribute,
            "group": group,
            "reference": reference,
            "metric": metric,
            "severity": self.estimate_severity if basis == ESTIMATE else self.severity,
        }
        if basis == ESTIMATE:
            labels["basis"] = ESTIMATE
        return labels

    def _annotations(self, key: _Key, value: MetricValue) -> dict[str, str]:
        model, window, estimated = key[0], key[1], key[6] == ESTIMATE
        summary = alert_summary(value, model=model, window=window, confidence=self.confidence)
        description = alert_description(value, confidence=self.confidence)
        words = _plain(self._evaluation, key, value, confidence=self.confidence)
        if words:  # what happened, in words, before what the metric means
            description = f"{words[0].upper()}{words[1:]}. {description}"
        if estimated:
            summary = f"Estimated, labels pending: {summary}"
            description += (
                " Estimated from the window's scores through a calibration checked on the rows whose labels "
                "arrived; the labels will confirm or clear it (docs/nowcasting.md)."
            )
        annotations = {"summary": summary, "description": description}
        if self.runbook_url:
            annotations["runbook_url"] = runbook_link(self.runbook_url, key[5])
        return annotations


# -- module helpers ------------------------------------------------------------------------------------


def runbook_link(runbook_url: str, section: str) -> str:
    """The link to one section of the runbook: its heading's anchor, as GitHub and mkdocs make it.

    >>> runbook_link("https://wiki.example/fairwatch-runbook", "disparate_impact")
    'https://wiki.example/fairwatch-runbook#disparate_impact'
    """
    return f"{runbook_url}#{section.lower()}"


def _values_by_key(evaluation: ModelEvaluation) -> dict[_Key, MetricValue]:
    return {
        (evaluation.model, w.window, v.attribute, v.group, v.reference, v.metric, basis): v
        for w in evaluation.windows
        for basis, values in (("labels", w.values), (ESTIMATE, w.estimates))
        for v in values
    }


def _is_violation(value: MetricValue) -> bool:
    return value.state == "violation" and not math.isnan(value.value)


def _is_out_of_range(value: MetricValue) -> bool:
    return value.state in _OUT_OF_RANGE and not math.isnan(value.value)


def alert_summary(value: MetricValue, *, model: str, window: str, confidence: float) -> str:
    """One sentence with the value, its interval, the fair range and the group size.

    >>> v = MetricValue("identity", "muslim", "background", "disparate_impact", 0.62, 0.55, 0.7,
    ...                 0.8, 1.25, "violation", 1234, 50000, 1234)
    >>> alert_summary(v, model="toxicity", window="24h", confidence=0.95)
    'disparate_impact for identity=muslim (vs background) in model toxicity, window 24h: 0.62 (95% CI 0.55 to 0.7), fair range [0.8, 1.25], 1,234 rows in the group'
    """
    return (
        f"{value.metric} for {value.attribute}={value.group} (vs {value.reference}) "
        f"in model {model}, window {window}: {_number(value.value)} "
        f"({_level(confidence)} CI {_number(value.ci_lower)} to {_number(value.ci_upper)}), "
        f"fair range {fair_range_text(value.fair_min, value.fair_max)}, "
        f"{_rows(value.n_group)} in the group"
    )


_INCIDENT_NOTES = ("incident_summary", "onset")


def _noted(annotations: Mapping[str, str], notes: Mapping[str, str], *, keep: bool = False) -> dict[str, str]:
    """``annotations`` with the incident's ``notes`` in place of their older ones (``keep``: an older
    onset stays where none is given now)."""
    dropped = [k for k in _INCIDENT_NOTES if not (keep and k == "onset")]
    return {k: v for k, v in annotations.items() if k not in dropped} | dict(notes)


def incident_summary(
    incident: str,
    evaluation: ModelEvaluation,
    values: Sequence[tuple[_Key, MetricValue]],
    onset: Onset | None,
    *,
    confidence: float,
) -> str:
    """An incident in one paragraph: who, how many values, the strongest in plain words, since when."""
    model = evaluation.model
    if not values:
        head = f"{incident} in model {model}: no value out of its fair range at the last evaluation"
        return head + (f"; began {onset_text(onset)}" if onset else "")
    key, top = max(values, key=lambda kv: (evidence(kv[1]), kv[0]))
    metrics = sorted({v.metric for _, v in values})
    others = sorted({f"{v.attribute}={v.group}" for _, v in values} - {incident})
    holding = f" (with {', '.join(others)})" if others else ""
    count = f"{len(values)} value{'s' if len(values) != 1 else ''}"
    words = _plain(evaluation, key, top, confidence=confidence) or alert_summary(
        top, model=model, window=key[1], confidence=confidence
    )
    return (
        f"{incident} in model {model}{holding}: {count} out of {'its' if len(values) == 1 else 'their'} "
        f"fair range ({', '.join(metrics)}); "
        f"in window {key[1]}, {words}" + (f"; began {onset_text(onset)}" if onset else "")
    )


def _plain(evaluation: ModelEvaluation | None, key: _Key, value: MetricValue, *, confidence: float) -> str:
    """The value in plain words (:mod:`monitor.evaluation.wording`); an estimate without the realised
    rates (they are the labels', not the estimate's)."""
    if evaluation is None or evaluation.model != key[0]:
        return ""
    window = next((w for w in evaluation.windows if w.window == key[1]), None)
    if window is None:
        return ""
    if key[6] == ESTIMATE:
        return plain_value(value, words=evaluation.words, confidence=confidence)
    return plain_finding(value, window, evaluation, confidence=confidence)


def alert_description(value: MetricValue, *, confidence: float) -> str:
    """The metric's meaning, what the state says, and the reference's size."""
    try:
        meaning = f"{value.metric}: {get_metric(value.metric).meaning}. "
    except ValueError:  # a metric unknown to this registry must not break alerting
        meaning = ""
    level = _level(confidence)
    if value.state == "violation":
        why = f"the whole {level} interval lies outside the fair range"
    elif value.state == "inconclusive":
        why = (
            f"the value is outside the fair range but its {level} interval still reaches into it; "
            "a firing alert keeps firing until the value is back in range"
        )
    else:
        why = "the value is not out of range"
    return (
        f"{meaning}State {value.state}: {why}. Group {value.group}: {_rows(value.n_group)}; "
        f"reference {value.reference}: {_rows(value.n_reference)}."
    )


def _number(x: float) -> str:
    return number(x, nan="undefined")


def _rows(n: float) -> str:
    if math.isnan(n):
        return "an unknown number of rows"
    count = round(n)
    return f"{count:,} row" + ("" if count == 1 else "s")


def _level(confidence: float) -> str:
    return f"{round(confidence * 100, 6):g}%"
