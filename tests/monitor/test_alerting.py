"""The alert state machine: pending, firing, resolved, driven by hand-built evaluations and a fake clock."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from metrics_core import MetricValue, get_metric
from monitor.core.clock import FakeClock
from monitor.evaluation.results import ModelEvaluation, WindowResult
from monitor.service.alerting import ALERTNAME, AlertTracker, AlertUpdate

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
STEP = timedelta(minutes=1)

# A value per state, all for identity=muslim's disparate impact against the background.
STATES = {
    "violation": (0.62, 0.55, 0.70),
    "inconclusive": (0.75, 0.68, 0.83),
    "ok": (0.95, 0.88, 1.02),
    "insufficient_data": (math.nan, math.nan, math.nan),
}


def value(
    state: str,
    *,
    group: str = "muslim",
    metric: str = "disparate_impact",
    n_group: float = 1234,
    fair: tuple[float, float] = (0.8, 1.25),
) -> MetricValue:
    point, lower, upper = STATES[state]
    return MetricValue(
        attribute="identity",
        group=group,
        reference="background",
        metric=metric,
        value=point,
        ci_lower=lower,
        ci_upper=upper,
        fair_min=fair[0],
        fair_max=fair[1],
        state=state,
        n_group=n_group,
        n_reference=48766,
        support=n_group,
        reason="group has fewer rows than min_samples" if state == "insufficient_data" else None,
    )


def evaluation(*values: MetricValue, model: str = "toxicity", window: str = "24h") -> ModelEvaluation:
    result = WindowResult(
        window=window,
        start=T0 - timedelta(hours=24),
        end=T0,
        label_start=T0 - timedelta(hours=24),
        label_end=T0,
        values=values,
        model_values=(),
        groups=(),
        n_rows=50000,
        n_labeled=50000,
    )
    return ModelEvaluation(model, T0, 0.1, (result,), rows_read=50000)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


def tracker(
    for_: timedelta = 5 * STEP,
    keep_firing_for: timedelta = timedelta(0),
    *,
    severity: str = "warning",
    confidence: float = 0.95,
    runbook_url: str | None = None,
) -> AlertTracker:
    return AlertTracker(
        for_=for_,
        keep_firing_for=keep_firing_for,
        severity=severity,
        confidence=confidence,
        runbook_url=runbook_url,
    )


def run(t: AlertTracker, clock: FakeClock, *states: str) -> list[AlertUpdate]:
    """One update per state, one STEP apart, starting at the clock's current time."""
    updates = []
    for i, state in enumerate(states):
        if i:
            clock.advance(STEP)
        updates.append(t.update(evaluation(value(state)), clock.now()))
    return updates


def test_violation_is_pending_then_fires_once_it_lasted_for(clock: FakeClock) -> None:
    t = tracker(for_=3 * STEP)
    first, *middle, fired = run(t, clock, "violation", "violation", "violation", "violation")

    assert [a.state for a in first.active] == ["pending"]
    assert first.started_pending == first.active and first.firing == ()
    assert all(u.firing == () and u.active[0].state == "pending" for u in middle)
    (alert,) = fired.firing
    assert alert.state == "firing"
    assert alert.active_since == T0
    assert alert.firing_since == T0 + 3 * STEP
    assert alert.value == pytest.approx(0.62)


def test_firing_alert_is_re_reported_at_every_update_but_starts_firing_once(clock: FakeClock) -> None:
    t = tracker(for_=timedelta(0))
    updates = run(t, clock, "violation", "violation", "violation")
    assert [len(u.firing) for u in updates] == [1, 1, 1]
    assert {u.firing[0].firing_since for u in updates} == {T0}


def test_for_zero_fires_at_the_first_violation(clock: FakeClock) -> None:
    (update,) = run(tracker(for_=timedelta(0)), clock, "violation")
    (alert,) = update.firing
    assert alert.active_since == alert.firing_since == T0
    assert len(update.started_pending) == 1


@pytest.mark.parametrize("cleared", ["ok", "inconclusive", "insufficient_data"])
def test_pending_alert_is_dropped_silently_when_the_violation_clears(clock: FakeClock, cleared: str) -> None:
    t = tracker(for_=3 * STEP)
    *_, update = run(t, clock, "violation", "violation", cleared)
    assert update.active == update.firing == update.resolved == ()
    assert [a.state for a in update.dropped] == ["pending"]
    # A new violation starts a new pending period: the old one does not count towards for_.
    clock.advance(STEP)
    *_, later = run(t, clock, "violation", "violation", "violation")
    assert later.firing == ()
    assert later.active[0].active_since == clock.now() - 2 * STEP


def test_pending_alert_is_dropped_when_its_group_vanishes(clock: FakeClock) -> None:
    t = tracker()
    t.update(evaluation(value("violation")), clock.now())
    update = t.update(evaluation(value("ok", group="jewish")), clock.advance(STEP))
    assert update.active == () and len(update.dropped) == 1 and update.resolved == ()


@pytest.mark.parametrize("state", ["inconclusive", "insufficient_data", "ok"])
def test_only_violation_starts_an_alert(clock: FakeClock, state: str) -> None:
    updates = run(tracker(for_=timedelta(0)), clock, state, state, state)
    assert all(u.active == () and u.started_pending == () for u in updates)


def test_nan_never_alerts_even_if_judged_a_violation(clock: FakeClock) -> None:
    nan_violation = replace(value("violation"), value=math.nan, ci_lower=math.nan, ci_upper=math.nan)
    update = tracker(for_=timedelta(0)).update(evaluation(nan_violation), clock.now())
    assert update.active == ()


def test_inconclusive_keeps_a_firing_alert_firing(clock: FakeClock) -> None:
    t = tracker(for_=timedelta(0))
    updates = run(t, clock, "violation", "inconclusive", "inconclusive", "violation")
    assert all(len(u.firing) == 1 and u.resolved == () for u in updates)
    # The annotations follow the current value while it fires.
    assert "0.75" in updates[1].firing[0].annotations["summary"]
    assert "State inconclusive" in updates[1].firing[0].annotations["description"]
    assert updates[1].firing[0].value == pytest.approx(0.75)


@pytest.mark.parametrize("cleared", ["ok", "insufficient_data"])
def test_firing_alert_resolves_when_back_in_range_or_undecidable(clock: FakeClock, cleared: str) -> None:
    t = tracker(for_=timedelta(0))
    *_, update = run(t, clock, "violation", "violation", cleared)
    assert update.active == update.firing == ()
    (resolved,) = update.resolved
    assert resolved.state == "resolved"
    assert resolved.firing_since == T0
    assert resolved.labels["group"] == "muslim"
    # It resolves once: the next update has nothing more to say.
    again = t.update(evaluation(value(cleared)), clock.advance(STEP))
    assert again.resolved == ()


def test_firing_alert_resolves_when_its_group_vanishes(clock: FakeClock) -> None:
    t = tracker(for_=timedelta(0))
    t.update(evaluation(value("violation"), value("ok", group="jewish")), clock.now())
    update = t.update(evaluation(value("ok", group="jewish")), clock.advance(STEP))
    assert [a.labels["group"] for a in update.resolved] == ["muslim"]
    assert update.active == ()


def test_keep_firing_for_holds_a_cleared_alert_then_resolves(clock: FakeClock) -> None:
    t = tracker(for_=timedelta(0), keep_firing_for=2 * STEP)
    updates = run(t, clock, "violation", "ok", "ok", "ok")
    assert [len(u.firing) for u in updates] == [1, 1, 1, 0]
    assert [len(u.resolved) for u in updates] == [0, 0, 0, 1]
    # While kept, the alert still describes the value that made it fire.
    assert "0.62" in updates[2].firing[0].annotations["summary"]


def test_keep_firing_for_clock_restarts_when_the_value_is_out_of_range_again(clock: FakeClock) -> None:
    t = tracker(for_=timedelta(0), keep_firing_for=2 * STEP)
    updates = run(t, clock, "violation", "ok", "inconclusive", "ok", "ok", "ok")
    assert [len(u.firing) for u in updates] == [1, 1, 1, 1, 1, 0]
    assert updates[-1].resolved[0].firing_since == T0


def test_keep_firing_for_also_covers_a_vanished_group(clock: FakeClock) -> None:
    t = tracker(for_=timedelta(0), keep_firing_for=STEP)
    t.update(evaluation(value("violation")), clock.now())
    kept = t.update(evaluation(), clock.advance(STEP))
    gone = t.update(evaluation(), clock.advance(STEP))
    assert len(kept.firing) == 1 and kept.resolved == ()
    assert gone.firing == () and len(gone.resolved) == 1


def test_models_are_independent(clock: FakeClock) -> None:
    t = tracker(for_=timedelta(0))
    t.update(evaluation(value("violation"), model="toxicity"), clock.now())
    t.update(evaluation(value("violation"), model="spam"), clock.now())

    # toxicity clears; spam, not evaluated (its source failed), keeps firing.
    update = t.update(evaluation(value("ok"), model="toxicity"), clock.advance(STEP))
    assert [a.labels["model"] for a in update.resolved] == ["toxicity"]
    assert update.firing == ()  # only this model's alerts are pushed
    assert [(a.labels["model"], a.state) for a in update.active] == [("spam", "firing")]


def test_windows_metrics_and_groups_are_separate_series(clock: FakeClock) -> None:
    t = tracker(for_=timedelta(0))
    ev_24h = evaluation(value("violation"), value("violation", group="jewish"), window="24h")
    ev_1h = evaluation(
        value("violation", metric="statistical_parity_difference", fair=(-0.1, 0.1)), window="1h"
    )
    merged = ModelEvaluation("toxicity", T0, 0.1, ev_24h.windows + ev_1h.windows, rows_read=1)
    update = t.update(merged, clock.now())
    keys = [(a.labels["window"], a.labels["group"], a.labels["metric"]) for a in update.firing]
    assert keys == [
        ("1h", "muslim", "statistical_parity_difference"),
        ("24h", "jewish", "disparate_impact"),
        ("24h", "muslim", "disparate_impact"),
    ]


def test_labels_identify_the_series(clock: FakeClock) -> None:
    (update,) = run(tracker(for_=timedelta(0), severity="critical"), clock, "violation")
    assert dict(update.firing[0].labels) == {
        "alertname": ALERTNAME,
        "model": "toxicity",
        "window": "24h",
        "attribute": "identity",
        "group": "muslim",
        "reference": "background",
        "metric": "disparate_impact",
        "severity": "critical",
        "incident": "identity=muslim",
    }


def test_an_intersections_alert_joins_the_incident_of_the_group_it_holds(clock: FakeClock) -> None:
    """Its ``incident`` label names the population its incident is of: race=Black for Black&F when
    Black is in violation too; its own group when no part of it is (and for every alert after it
    started: labels do not change)."""
    t = tracker(for_=timedelta(0))
    columns = {"race": ("race",), "grade": ("grade",), "race_sex": ("race", "sex")}
    black = replace(value("violation"), attribute="race", group="Black")
    black_f = replace(value("violation"), attribute="race_sex", group="Black&F")
    asian_f = replace(value("violation"), attribute="race_sex", group="Asian&F")
    # a grade F far out of range: another column's F, never Black&F's part
    grade_f = replace(value("violation"), attribute="grade", group="F", ci_lower=0.1, ci_upper=0.2)
    found = replace(evaluation(black, black_f, asian_f, grade_f), attribute_columns=columns)
    update = t.update(found, clock.now())
    incident = {a.labels["group"]: a.labels["incident"] for a in update.firing}
    assert incident == {
        "Black": "race=Black", "Black&F": "race=Black", "Asian&F": "race_sex=Asian&F", "F": "grade=F"
    }  # fmt: skip
    # a metric of Black&F starting later joins the incident Black&F's alerts have, whatever happens now
    later = replace(
        evaluation(black_f, replace(black_f, metric="four_fifths_ratio")), attribute_columns=columns
    )
    update = t.update(later, clock.now() + STEP)
    assert {a.labels["incident"] for a in update.firing if a.labels["group"] == "Black&F"} == {"race=Black"}


def test_a_group_crossing_after_its_intersection_joins_the_incident_the_intersection_named(
    clock: FakeClock,
) -> None:
    """Black&F (a smaller group) crosses first and names its incident; when race=Black crosses an
    evaluation later its alerts join that incident: one notification group for the one bias, however
    the crossings fell."""
    t = tracker(for_=timedelta(0))
    columns = {"race": ("race",), "race_sex": ("race", "sex")}
    black = replace(value("violation"), attribute="race", group="Black")
    black_f = replace(value("violation"), attribute="race_sex", group="Black&F")
    first = t.update(replace(evaluation(black_f), attribute_columns=columns), clock.now())
    assert {a.labels["incident"] for a in first.firing} == {"race_sex=Black&F"}
    both = t.update(replace(evaluation(black, black_f), attribute_columns=columns), clock.now() + STEP)
    assert {a.labels["group"]: a.labels["incident"] for a in both.firing} == {
        "Black": "race_sex=Black&F",
        "Black&F": "race_sex=Black&F",
    }
    # two intersections that crossed first, each its own incident: the group joins the first to have
    # started, whatever the dict order (a review saw it depend on it)
    t2 = tracker(for_=timedelta(0))
    black_m = replace(value("violation"), attribute="race_sex", group="Black&M")
    t2.update(replace(evaluation(black_m), attribute_columns=columns), clock.now())
    t2.update(replace(evaluation(black_m, black_f), attribute_columns=columns), clock.now() + STEP)
    joined = t2.update(
        replace(evaluation(black, black_m, black_f), attribute_columns=columns), clock.now() + 2 * STEP
    )
    assert {a.labels["group"]: a.labels["incident"] for a in joined.firing} == {
        "Black": "race_sex=Black&M",
        "Black&M": "race_sex=Black&M",
        "Black&F": "race_sex=Black&F",  # labels never change: its own, as it crossed alone
    }
    # another population is another incident
    white = replace(value("violation"), attribute="race", group="White")
    other = t.update(
        replace(evaluation(black, black_f, white), attribute_columns=columns), clock.now() + 2 * STEP
    )
    assert {a.labels["group"]: a.labels["incident"] for a in other.firing}["White"] == "race=White"


def test_an_alert_resolving_carries_its_incidents_current_account(clock: FakeClock) -> None:
    """A review: the resolving alert kept the last evaluation's incident_summary, so the notification
    of its incident (firing and resolved together) had no common annotation."""
    t = tracker(for_=timedelta(0))
    di = replace(value("violation"), attribute="race", group="Black")
    spd = replace(
        di,
        metric="statistical_parity_difference",
        value=-0.2,
        ci_lower=-0.25,
        ci_upper=-0.15,
        fair_min=-0.1,
        fair_max=0.1,
    )
    t.update(evaluation(di, spd), clock.now())
    later = t.update(
        evaluation(di, replace(spd, state="ok", value=0.0, ci_lower=-0.05, ci_upper=0.05)), clock.now() + STEP
    )
    (firing,), (resolved,) = later.firing, later.resolved
    assert resolved.labels["metric"] == "statistical_parity_difference"
    assert resolved.annotations["incident_summary"] == firing.annotations["incident_summary"]
    assert "1 value out of its fair range" in firing.annotations["incident_summary"]


def test_summary_says_value_interval_fair_range_and_group_size(clock: FakeClock) -> None:
    (update,) = run(tracker(for_=timedelta(0)), clock, "violation")
    summary = update.firing[0].annotations["summary"]
    assert summary == (
        "disparate_impact for identity=muslim (vs background) in model toxicity, window 24h: "
        "0.62 (95% CI 0.55 to 0.7), fair range [0.8, 1.25], 1,234 rows in the group"
    )


def test_description_has_the_metric_meaning_state_and_sizes(clock: FakeClock) -> None:
    (update,) = run(tracker(for_=timedelta(0), confidence=0.99), clock, "violation")
    annotations = update.firing[0].annotations
    description = annotations["description"]
    assert get_metric("disparate_impact").meaning in description
    assert "State violation: the whole 99% interval lies outside the fair range" in description
    assert "48,766 rows" in description
    assert "99% CI" in annotations["summary"]
    assert "runbook_url" not in annotations


def test_runbook_url_is_added_when_configured(clock: FakeClock) -> None:
    url = "https://runbooks.example/fairness"
    (update,) = run(tracker(for_=timedelta(0), runbook_url=url), clock, "violation")
    alert = update.firing[0]
    assert alert.annotations["runbook_url"] == f"{url}#{alert.labels['metric']}"  # the metric's section


def test_one_sided_fair_range_reads_as_at_least(clock: FakeClock) -> None:
    t = tracker(for_=timedelta(0))
    auc = value("violation", metric="subgroup_auc", fair=(0.83, math.inf), n_group=1)
    summary = t.update(evaluation(auc), clock.now()).firing[0].annotations["summary"]
    assert "fair range at least 0.83" in summary
    assert "1 row in the group" in summary


def test_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="for_"):
        AlertTracker(for_=-STEP, keep_firing_for=timedelta(0))
    with pytest.raises(ValueError, match="keep_firing_for"):
        AlertTracker(for_=STEP, keep_firing_for=-STEP)
    with pytest.raises(ValueError, match="confidence"):
        AlertTracker(for_=STEP, keep_firing_for=timedelta(0), confidence=95)
    with pytest.raises(ValueError, match="timezone-aware"):
        tracker().update(evaluation(), datetime(2026, 1, 1))


# -- estimates (models[].nowcast) -------------------------------------------------------------------------


def estimated(*values: MetricValue, realised: tuple[MetricValue, ...] = ()) -> ModelEvaluation:
    """An evaluation whose window holds ``values`` as estimates (labels pending) beside ``realised``."""
    plain = evaluation(*realised)
    (window,) = plain.windows
    return replace(plain, windows=(replace(window, estimates=values),))


def test_an_estimated_violation_is_an_alert_of_its_own_at_the_estimate_severity() -> None:
    t = AlertTracker(
        for_=timedelta(0), keep_firing_for=timedelta(0), severity="page", estimate_severity="info"
    )
    update = t.update(estimated(value("violation"), realised=(value("ok"),)), T0)
    (alert,) = update.firing
    assert alert.labels["basis"] == "estimate" and alert.labels["severity"] == "info"
    assert alert.labels["alertname"] == ALERTNAME and alert.labels["metric"] == "disparate_impact"
    assert alert.annotations["summary"].startswith(
        "Estimated, labels pending: disparate_impact for identity=muslim"
    )
    assert "labels will confirm or clear it" in alert.annotations["description"]


def test_an_estimate_and_the_realised_value_of_one_comparison_are_two_alerts() -> None:
    t = AlertTracker(for_=timedelta(0), keep_firing_for=timedelta(0), severity="page")
    update = t.update(estimated(value("violation"), realised=(value("violation"),)), T0)
    labels = sorted((a.labels.get("basis", "-"), a.labels["severity"]) for a in update.firing)
    assert labels == [("-", "page"), ("estimate", "info")]  # realised alerts keep their label set
    # the estimate clears (its group's calibration failed: insufficient_data): only it resolves
    update = t.update(estimated(value("insufficient_data"), realised=(value("violation"),)), T0 + STEP)
    (resolved,) = update.resolved
    assert resolved.labels["basis"] == "estimate"
    assert [a.labels.get("basis") for a in update.firing] == [None]


def test_an_estimate_that_cannot_be_trusted_never_alerts() -> None:
    t = AlertTracker(for_=timedelta(0), keep_firing_for=timedelta(0))
    update = t.update(estimated(value("insufficient_data"), value("inconclusive", group="b")), T0)
    assert update.active == () and update.started_pending == ()
