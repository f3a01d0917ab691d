"""The monitor under a fake clock: alerts go pending then firing; a failing source keeps last values."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest

from monitor.config import settings_from_dict
from monitor.core.clock import FakeClock
from monitor.evaluation.evaluators import build_evaluators
from monitor.service.alerting import AlertTracker
from monitor.service.notifiers import RecordingNotifier
from monitor.service.runner import Runner
from monitor.sources import MemorySource

T0 = datetime(2026, 11, 22, 0, 0, tzinfo=UTC)


def drifting_log(hours: int = 12, per_hour: int = 3000, bias_from: int = 4, seed: int = 3) -> pd.DataFrame:
    """Group `g` negatives get higher scores from hour `bias_from` on."""
    rng = np.random.default_rng(seed)
    n = hours * per_hour
    ts = T0 + pd.to_timedelta(np.sort(rng.uniform(0, hours * 3600, n)), unit="s")
    y = rng.random(n) < 0.2
    g = rng.random(n) < 0.15
    hour = np.asarray((ts - pd.Timestamp(T0)).total_seconds()) / 3600
    logit = -1.5 + 3 * y + rng.normal(0, 1, n) + 2.5 * (g & ~y & (hour >= bias_from))
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "ts": ts.astype("int64") / 1e9,
            "score": 1 / (1 + np.exp(-logit)),
            "label": y.astype(int),
            "g": g,
        }
    )


def model_config(name: str) -> dict[str, Any]:
    """A memory-source model of the drifting log, evaluated every 10 minutes over one hour."""
    return {
        "name": name,
        "source": {"kind": "memory", "name": name},
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "identity", "kind": "indicator", "columns": ["g"]}],
        "windows": [{"name": "1h", "length": "1h"}],
        "interval": "10m",
        "min_samples": 50,
        "metrics": ["bpsn_auc", "negative_aeg", "statistical_parity_difference"],
    }


def make_monitor(frames: dict[str, pd.DataFrame], *, for_: str = "30m") -> tuple[Runner, FakeClock, Any, Any]:
    models = [model_config(name) for name in frames]
    settings = settings_from_dict({"models": models, "alerts": {"for": for_}})
    sources = {name: MemorySource(f, timestamp_column="ts") for name, f in frames.items()}
    clock = FakeClock(T0 + timedelta(hours=1))
    recorder = RecordingNotifier()
    tracker = AlertTracker(for_=settings.alerts.for_, keep_firing_for=timedelta(0))
    monitor = Runner(
        build_evaluators(settings, memory_sources=sources), tracker=tracker, notifiers=[recorder], clock=clock
    )
    return monitor, clock, recorder, sources


def tick(monitor: Runner, clock: FakeClock, minutes: int = 10) -> None:
    clock.advance(timedelta(minutes=minutes))
    for name in monitor.evaluators:
        monitor.run_model(name)
    assert monitor.delivery.flush(timeout=10)  # sinks are fed from their own threads


def test_alert_goes_pending_then_firing_then_resolves() -> None:
    frame = drifting_log()
    monitor, clock, recorder, _ = make_monitor({"tox": frame})
    states: list[set[str]] = []
    while clock.now() < T0 + timedelta(hours=7):
        tick(monitor, clock)
        states.append({a.state for a in monitor.snapshot().alerts})
    assert states[0] == set()  # no bias yet
    first_pending = next(i for i, s in enumerate(states) if "pending" in s)
    first_firing = next(i for i, s in enumerate(states) if "firing" in s)
    assert first_firing > first_pending  # pending for `for` = 30m = three ticks first
    assert first_firing - first_pending >= 3
    pushed = [a for call in recorder.calls for a in call.firing]
    assert pushed and {a.labels["group"] for a in pushed} == {"g"}
    # remove the bias: the same log without it resolves the alert
    frame.loc[:, "score"] = 1 / (1 + np.exp(-(-1.5 + 3 * frame["label"])))
    for _ in range(8):
        tick(monitor, clock)
    assert monitor.snapshot().alerts == ()
    assert any(call.resolved for call in recorder.calls)


def test_failing_source_keeps_last_values_and_other_models_go_on() -> None:
    monitor, clock, _, sources = make_monitor({"a": drifting_log(seed=1), "b": drifting_log(seed=2)})
    tick(monitor, clock)
    before = monitor.snapshot().models["a"].last_evaluation
    assert before is not None
    sources["a"].fail_with = "database is unreachable"
    tick(monitor, clock)
    tick(monitor, clock)
    snap = monitor.snapshot()
    a, b = snap.models["a"], snap.models["b"]
    assert a.source_up is False and a.failures_total == 2 and a.evaluations_total == 3
    assert a.last_evaluation is before  # last good values stay, their age visible
    assert a.last_success == T0 + timedelta(hours=1, minutes=10)
    assert "unreachable" in (a.last_error or "")
    assert b.source_up and b.failures_total == 0 and b.evaluations_total == 3
    sources["a"].fail_with = None  # the next tick retries and recovers
    tick(monitor, clock)
    a = monitor.snapshot().models["a"]
    assert a.source_up and a.last_evaluation is not before and a.last_error is None


def test_delivery_failure_is_counted_not_fatal() -> None:
    monitor, clock, recorder, _ = make_monitor({"tox": drifting_log()}, for_="0s")
    recorder.failing = True
    clock.set(T0 + timedelta(hours=5))
    monitor.run_model("tox")
    assert monitor.delivery.flush(timeout=10)
    snap = monitor.snapshot()
    assert snap.alert_sinks["recording"].failures == 1 and snap.alert_sinks["recording"].sent == 0
    assert snap.models["tox"].last_evaluation is not None


def test_a_resolve_missed_by_a_sink_is_sent_again() -> None:
    frame = drifting_log()
    monitor, clock, recorder, _ = make_monitor({"tox": frame}, for_="0s")
    clock.set(T0 + timedelta(hours=5))
    monitor.run_model("tox")
    assert monitor.delivery.flush(timeout=10)
    assert monitor.snapshot().alerts
    frame.loc[:, "score"] = 1 / (1 + np.exp(-(-1.5 + 3 * frame["label"])))
    recorder.failing = True
    tick(monitor, clock)  # resolves now, but the sink is down
    recorder.failing = False
    tick(monitor, clock)
    assert recorder.calls[-1].resolved, "the missed resolve is delivered once the sink is back"
    assert not recorder.calls[-2].firing


def test_pending_and_dropped_alerts_are_logged_once_each(caplog: pytest.LogCaptureFixture) -> None:
    frame = drifting_log()
    monitor, clock, _, _ = make_monitor({"tox": frame}, for_="1h")
    clock.set(T0 + timedelta(hours=5))
    with caplog.at_level(logging.INFO, logger="monitor"):
        monitor.run_model("tox")  # the biased hours: pending (for = 1h)
        tick(monitor, clock)  # still pending: nothing new to say
        frame.loc[:, "score"] = 1 / (1 + np.exp(-(-1.5 + 3 * frame["label"])))
        tick(monitor, clock)  # the bias is gone before the alert fired
    pending = [r.getMessage() for r in caplog.records if "alert pending" in r.getMessage()]
    cleared = [r.getMessage() for r in caplog.records if "cleared before it fired" in r.getMessage()]
    assert len(pending) == len(cleared) >= 1
    assert all("identity=g" in m and "model tox" in m for m in pending + cleared)
    assert monitor.snapshot().alerts == ()


def test_a_bad_row_is_counted_per_read_and_once_in_the_last_read() -> None:
    frame = drifting_log()
    in_both_reads = frame.index[(frame["ts"] >= (T0 + timedelta(minutes=20)).timestamp())][:5]
    frame.loc[in_both_reads, "score"] = np.nan
    monitor, clock, _, _ = make_monitor({"tox": frame})
    tick(monitor, clock, minutes=0)
    tick(monitor, clock)  # the next read covers the same five rows
    status = monitor.snapshot().models["tox"]
    assert status.rows_rejected_total == {"score_invalid": 10}  # per read, like rows_read_total
    assert status.last_evaluation is not None
    assert status.last_evaluation.rejected == {"score_invalid": 5}  # fairwatch_last_read_rows_rejected


def test_the_service_alert_and_the_prometheus_rule_share_name_and_runbook_link() -> None:
    """One name and one runbook section per metric, whichever raises the alert (alerts.runbook_url)."""
    from monitor.app import build_app
    from monitor.outputs.prometheus.rules import build_rules

    model = {
        "name": "tox",
        "source": {"kind": "memory", "name": "tox"},
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "identity", "kind": "indicator", "columns": ["g"]}],
        "windows": [{"name": "1h", "length": "1h"}],
        "min_samples": 50,
        "metrics": ["bpsn_auc", "negative_aeg", "statistical_parity_difference"],
    }
    alerts = {"for": "0s", "runbook_url": "https://runbooks.example/fairwatch"}
    settings = settings_from_dict({"models": [model], "alerts": alerts})
    recorder = RecordingNotifier()
    app = build_app(
        settings,
        clock=FakeClock(T0 + timedelta(hours=8)),  # four hours into the bias
        memory_sources={"tox": MemorySource(drifting_log(), timestamp_column="ts")},
        notifiers=[recorder],
    )
    try:
        app.runner.run_model("tox")
        assert app.runner.delivery.flush(timeout=10)
    finally:
        app.stop()
    pushed = [a for call in recorder.calls for a in call.firing]
    assert {a.labels["metric"] for a in pushed} >= {"bpsn_auc", "negative_aeg"}
    rules = {
        rule["labels"]["metric"]: rule
        for group in build_rules(settings)["groups"]
        for rule in group["rules"]
        if "metric" in rule["labels"]
    }
    for alert in pushed:
        metric = alert.labels["metric"]
        assert alert.labels["alertname"] == rules[metric]["alert"] == "FairwatchFairnessViolation"
        link = alert.annotations["runbook_url"]
        assert (
            link
            == rules[metric]["annotations"]["runbook_url"]
            == f"https://runbooks.example/fairwatch#{metric}"
        )


@pytest.mark.parametrize("log_alerts", [True, False])
def test_alerts_log_false_silences_every_alert_line(
    caplog: pytest.LogCaptureFixture, log_alerts: bool
) -> None:
    """``alerts.log: false`` is silent about alerts - pending and cleared lines included (they were
    logged whatever the setting); the notifiers the config builds carry the firing ones."""
    from monitor.app import build_app

    frame = drifting_log()
    settings = settings_from_dict(
        {"models": [model_config("tox")], "alerts": {"for": "1h", "log": log_alerts}}
    )
    clock = FakeClock(T0 + timedelta(hours=5))
    app = build_app(settings, clock=clock, memory_sources={"tox": MemorySource(frame, timestamp_column="ts")})
    try:
        with caplog.at_level(logging.INFO, logger="monitor"):
            app.runner.run_model("tox")  # the biased hours: pending
            frame.loc[:, "score"] = 1 / (1 + np.exp(-(-1.5 + 3 * frame["label"])))
            clock.advance(timedelta(minutes=10))
            app.runner.run_model("tox")  # cleared before it fired
            assert app.runner.delivery.flush(timeout=10)
    finally:
        app.stop()
    said = [r.getMessage() for r in caplog.records if "fairness alert" in r.getMessage()]
    assert bool(said) is log_alerts, said
