"""The shipped ``alertmanager.yml`` in a real Alertmanager: a realised fairness alert inhibits the
estimate of the same value (``basis="estimate"``, docs/nowcasting.md), and nothing else; one bias is
one notification (grouped by ``incident``).

The alerts are the service's own (:class:`~monitor.service.alerting.AlertTracker`), pushed as
fairwatch's Alertmanager sink pushes them; only the example receiver's URL is replaced.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from metrics_core import MetricValue
from monitor.evaluation.results import ModelEvaluation, WindowResult
from monitor.service.alerting import AlertTracker
from tests.servers import (
    ManagedProcess,
    WebhookReceiver,
    _start_http_server,
    alertmanager_bin,
    free_port,
    http_json,
    wait_until,
)

pytestmark = pytest.mark.integration

SHIPPED = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alertmanager.yml"
T0 = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture
def shipped_alertmanager(webhook_receiver: WebhookReceiver) -> Iterator[str]:
    workdir = Path(tempfile.mkdtemp(prefix="fairwatch-am-shipped-"))
    cleanup: list[ManagedProcess] = []
    try:
        config = SHIPPED.read_text(encoding="utf-8")
        example = "http://fairness-webhook.example.internal:8080/alerts"
        assert example in config
        # grouping is what is tested, not its timing: the first notification of a group after 1 s
        config = config.replace(example, webhook_receiver.url).replace("group_wait: 30s", "group_wait: 1s")
        (workdir / "alertmanager.yml").write_text(config)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        argv = [
            alertmanager_bin(),
            f"--config.file={workdir / 'alertmanager.yml'}",
            f"--storage.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ]
        _start_http_server("alertmanager", argv, workdir, f"{url}/-/ready", cleanup)
        yield url
    finally:
        for process in cleanup:
            process.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def _value(group: str, state: str, metric: str = "disparate_impact", attribute: str = "race") -> MetricValue:
    point, lower, upper = (0.6, 0.5, 0.7) if state == "violation" else (0.95, 0.9, 1.0)
    reference = "White" if attribute == "race" else "rest"
    return MetricValue(
        attribute, group, reference, metric, point, lower, upper, 0.8, 1.25, state, 900, 9000, 900
    )


def _pushed(realised: list[MetricValue], estimates: list[MetricValue]) -> list[dict[str, Any]]:
    """The firing alerts of one evaluation, as the Alertmanager sink posts them."""
    window = WindowResult(
        window="1d",
        start=T0 - timedelta(days=1),
        end=T0,
        label_start=T0 - timedelta(days=3),
        label_end=T0 - timedelta(days=2),
        values=tuple(realised),
        model_values=(),
        groups=(),
        n_rows=10_000,
        n_labeled=10_000,
    )
    columns = {"race": ("race",), "race_sex": ("race", "sex")}
    evaluation = ModelEvaluation("loans", T0, 0.1, (window,), rows_read=10_000, attribute_columns=columns)
    tracker = AlertTracker(for_=timedelta(0), keep_firing_for=timedelta(0), severity="page")
    update = tracker.update(replace(evaluation, windows=(replace(window, estimates=tuple(estimates)),)), T0)
    return [
        {"labels": a.labels, "annotations": a.annotations, "startsAt": T0.isoformat()} for a in update.firing
    ]


def test_the_realised_alert_inhibits_the_estimate_of_the_same_value(shipped_alertmanager: str) -> None:
    alerts = _pushed(
        realised=[_value("Black", "violation")],
        # Black: confirmed by the labels; Asian: only estimated so far
        estimates=[_value("Black", "violation"), _value("Asian", "violation")],
    )
    assert len(alerts) == 3
    http_json(f"{shipped_alertmanager}/api/v2/alerts", "POST", alerts)

    def states() -> dict[tuple[str, str], str]:
        got = http_json(f"{shipped_alertmanager}/api/v2/alerts")
        return {(a["labels"]["group"], a["labels"].get("basis", "labels")): a["status"]["state"] for a in got}

    wait_until(lambda: len(states()) == 3, timeout=20, what="three alerts in Alertmanager")
    expected = {
        ("Black", "labels"): "active",
        ("Black", "estimate"): "suppressed",  # inhibited by the realised one
        ("Asian", "estimate"): "active",  # nothing confirms or clears it yet
    }
    wait_until(lambda: states() == expected, timeout=20, what=f"inhibition {expected}")


def test_one_bias_is_one_notification(shipped_alertmanager: str, webhook_receiver: WebhookReceiver) -> None:
    """Black's disparate impact and four-fifths ratio, and Black&F's: one incident (race=Black), one
    notification holding the three; Asian&F alone: another."""
    alerts = _pushed(
        realised=[
            _value("Black", "violation"),
            _value("Black", "violation", metric="four_fifths_ratio"),
            _value("Black&F", "violation", attribute="race_sex"),
            _value("Asian&F", "violation", attribute="race_sex"),
        ],
        estimates=[],
    )
    assert {a["labels"]["incident"] for a in alerts} == {"race=Black", "race_sex=Asian&F"}
    http_json(f"{shipped_alertmanager}/api/v2/alerts", "POST", alerts)

    def notifications() -> list[Any]:
        return [b for b in webhook_receiver.received if b.get("status") == "firing"]

    wait_until(lambda: len(notifications()) >= 2, timeout=30, what="two notifications")
    time.sleep(2)  # no third one comes: every alert is in one of the two
    sent = notifications()
    assert len(sent) == 2
    by_incident = {n["groupLabels"]["incident"]: n for n in sent}
    assert sorted(a["labels"]["group"] for a in by_incident["race=Black"]["alerts"]) == [
        "Black",
        "Black",
        "Black&F",
    ]
    assert [a["labels"]["group"] for a in by_incident["race_sex=Asian&F"]["alerts"]] == ["Asian&F"]
    # the incident's account is the same on its every alert: Alertmanager's common annotations carry it,
    # what a notification template opens with ({{ .CommonAnnotations.incident_summary }})
    summary = by_incident["race=Black"]["commonAnnotations"]["incident_summary"]
    assert summary.startswith(
        "race=Black in model loans (with race_sex=Black&F): 3 values out of their fair range"
    )
