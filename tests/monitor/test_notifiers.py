"""Alert sinks against real HTTP servers: a loopback webhook receiver, a real Alertmanager, a stub."""

from __future__ import annotations

import base64
import logging
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from monitor.config import AlertsConfig
from monitor.core.errors import AlertDeliveryError, ConfigError
from monitor.service.alerting import ALERTNAME
from monitor.service.notifiers import (
    AlertmanagerNotifier,
    LogNotifier,
    RecordingNotifier,
    WebhookNotifier,
    build_notifiers,
)
from monitor.service.snapshot import ActiveAlert
from tests.servers import AlertmanagerServer, WebhookReceiver, free_port, http_json, wait_until

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def alert(
    group: str = "muslim", *, state: str = "firing", since: datetime = NOW - timedelta(minutes=10)
) -> ActiveAlert:
    return ActiveAlert(
        labels={
            "alertname": ALERTNAME,
            "model": "toxicity",
            "window": "24h",
            "attribute": "identity",
            "group": group,
            "reference": "background",
            "metric": "disparate_impact",
            "severity": "warning",
        },
        annotations={"summary": f"disparate_impact for identity={group} is out of range", "description": "d"},
        state=state,
        active_since=since - timedelta(minutes=5),
        firing_since=since,
        value=0.62,
    )


# -- a stub HTTP server answering what the test asks, recording the requests ------------------------------


@dataclass
class Stub:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    url: str = ""
    status_of: Callable[[bytes], int] | None = None  # the answer's status by the request's body


@pytest.fixture
def stub() -> Iterator[Stub]:
    state = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            state.requests.append((self.path, dict(self.headers), body))
            self.send_response(state.status_of(body) if state.status_of else state.status)
            for name, value in state.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(state.body)))
            self.end_headers()
            self.wfile.write(state.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# -- webhook -------------------------------------------------------------------------------------------


def test_webhook_posts_firing_and_resolved_alerts(webhook_receiver: WebhookReceiver) -> None:
    hook = WebhookNotifier(webhook_receiver.url, timeout_seconds=5, generator_url="http://fairwatch:9810/")
    hook.send([alert("muslim")], [alert("jewish", state="resolved")], NOW)

    (body,) = webhook_receiver.received
    assert body["version"] == "1"
    assert body["receiver"] == "fairwatch"
    assert body["status"] == "firing"
    firing, resolved = body["alerts"]
    assert firing["status"] == "firing"
    assert firing["labels"]["group"] == "muslim"
    assert firing["annotations"]["summary"].startswith("disparate_impact for identity=muslim")
    assert firing["startsAt"] == "2026-03-01T11:50:00.000Z"
    assert firing["endsAt"] == "0001-01-01T00:00:00Z"
    assert firing["generatorURL"] == "http://fairwatch:9810/"
    assert resolved["status"] == "resolved"
    assert resolved["labels"]["group"] == "jewish"
    assert resolved["endsAt"] == "2026-03-01T12:00:00.000Z"


def test_webhook_posts_one_notification_per_incident(webhook_receiver: WebhookReceiver) -> None:
    def of(group: str, incident: str, metric: str, state: str = "firing") -> ActiveAlert:
        a = alert(group, state=state)
        return replace(
            a,
            labels={**a.labels, "incident": incident, "metric": metric},
            annotations={**a.annotations, "incident_summary": f"{incident}: what happened"},
        )

    black = [of("muslim", "identity=muslim", "disparate_impact"), of("muslim", "identity=muslim", "tpr")]
    other = of("jewish", "identity=jewish", "disparate_impact", state="resolved")
    WebhookNotifier(webhook_receiver.url, timeout_seconds=5).send(black, [other], NOW)

    first, second = webhook_receiver.received
    assert first["groupLabels"] == {"model": "toxicity", "incident": "identity=muslim"}
    assert first["status"] == "firing" and len(first["alerts"]) == 2
    assert first["commonAnnotations"]["incident_summary"] == "identity=muslim: what happened"
    assert "metric" not in first["commonLabels"] and first["commonLabels"]["group"] == "muslim"
    assert second["groupLabels"]["incident"] == "identity=jewish" and second["status"] == "resolved"


def test_an_incident_the_webhook_refuses_holds_no_other_back(stub: Stub) -> None:
    """A review: one incident's payload refused (413) raised out of send, the incidents after it were
    never posted and the resolves already delivered were put back. Now every incident is tried, and
    only the refused one's resolves are undelivered."""
    import json

    from monitor.core.errors import AlertDeliveryError
    from monitor.service.delivery import AlertDelivery

    def of(group: str, state: str = "firing") -> ActiveAlert:
        a = alert(group, state=state)
        return replace(a, labels={**a.labels, "incident": f"identity={group}"})

    stub.status_of = lambda body: (
        413 if json.loads(body)["groupLabels"]["incident"] == "identity=big" else 200
    )
    hook = WebhookNotifier(stub.url, timeout_seconds=5)
    firing, resolved = [of("big"), of("muslim")], [of("big", "resolved"), of("jewish", "resolved")]
    with pytest.raises(AlertDeliveryError) as raised:
        hook.send(firing, resolved, NOW)
    posted = [json.loads(body)["groupLabels"]["incident"] for _, _, body in stub.requests]
    assert sorted(posted) == ["identity=big", "identity=jewish", "identity=muslim"]
    assert [a.labels["group"] for a in raised.value.undelivered or ()] == ["big"]
    # the delivery keeps only the undelivered resolve for the next attempt
    delivery = AlertDelivery([hook])
    try:
        stub.requests.clear()
        delivery.submit("toxicity", (), tuple(resolved), NOW)
        assert delivery.flush(timeout=10)
        delivery.submit("toxicity", (), (), NOW)  # the next evaluation: nothing new
        assert delivery.flush(timeout=10)
        retried = [json.loads(body)["groupLabels"]["incident"] for _, _, body in stub.requests]
        assert retried.count("identity=jewish") == 1 and retried.count("identity=big") == 2
    finally:
        delivery.stop(timeout=5)


def test_webhook_status_is_resolved_when_nothing_fires(webhook_receiver: WebhookReceiver) -> None:
    WebhookNotifier(webhook_receiver.url, timeout_seconds=5).send([], [alert(state="resolved")], NOW)
    (body,) = webhook_receiver.received
    assert body["status"] == "resolved"


def test_webhook_sends_nothing_when_there_is_nothing_to_say(webhook_receiver: WebhookReceiver) -> None:
    WebhookNotifier(webhook_receiver.url, timeout_seconds=5).send([], [], NOW)
    assert webhook_receiver.received == []


# -- Alertmanager ----------------------------------------------------------------------------------------


def test_alertmanager_payload_is_what_prometheus_sends(webhook_receiver: WebhookReceiver) -> None:
    # The receiver records any POST, so it shows the exact array Alertmanager would get.
    notifier = AlertmanagerNotifier(
        webhook_receiver.url, timeout_seconds=5, resend_seconds=60, generator_url="http://fw/"
    )
    notifier.send([alert("muslim")], [alert("jewish", state="resolved")], NOW)

    (body,) = webhook_receiver.received
    firing, resolved = body
    assert firing == {
        "labels": dict(alert("muslim").labels),
        "annotations": dict(alert("muslim").annotations),
        "startsAt": "2026-03-01T11:50:00.000Z",
        "endsAt": "2026-03-01T12:04:00.000Z",  # now + 4 x resend
        "generatorURL": "http://fw/",
    }
    assert resolved["labels"]["group"] == "jewish"
    assert resolved["endsAt"] == "2026-03-01T12:00:00.000Z"


def test_alertmanager_posts_to_the_v2_api_and_skips_empty_batches(stub: Stub) -> None:
    notifier = AlertmanagerNotifier(stub.url + "/", timeout_seconds=5, resend_seconds=60)
    notifier.send([], [], NOW)
    assert stub.requests == []
    notifier.send([alert()], [], NOW)
    ((path, headers, _),) = stub.requests
    assert path == "/api/v2/alerts"
    assert headers["Content-Type"] == "application/json"


def _alertmanager_alerts(server: AlertmanagerServer) -> list[Any]:
    query = urllib.parse.urlencode({"filter": f'alertname="{ALERTNAME}"'})
    alerts: list[Any] = http_json(f"{server.url}/api/v2/alerts?{query}")
    return alerts


def _notification(status: str, group: str) -> Any:
    def matches(body: Any) -> bool:
        return body.get("status") == status and any(
            a["status"] == status and a["labels"].get("group") == group for a in body.get("alerts", [])
        )

    return matches


@pytest.mark.integration
def test_alertmanager_receives_firing_then_resolved(alertmanager: AlertmanagerServer) -> None:
    notifier = AlertmanagerNotifier(
        alertmanager.url, timeout_seconds=5, resend_seconds=60, generator_url="http://fairwatch:9810/"
    )
    # Alertmanager judges endsAt against its own clock: use the real time here.
    now = datetime.now(UTC)
    firing = alert("muslim", since=now - timedelta(minutes=1))
    notifier.send([firing], [], now)

    (stored,) = wait_until(lambda: _alertmanager_alerts(alertmanager), timeout=20, what="the pushed alert")
    assert stored["labels"] == dict(firing.labels)
    assert stored["annotations"]["summary"] == firing.annotations["summary"]
    assert stored["generatorURL"] == "http://fairwatch:9810/"
    assert stored["status"]["state"] == "active"

    notified = alertmanager.receiver.wait_for(_notification("firing", "muslim"), timeout=20)
    assert notified["commonLabels"]["alertname"] == ALERTNAME
    assert notified["commonLabels"]["model"] == "toxicity"

    notifier.send([], [replace(firing, state="resolved")], datetime.now(UTC))
    resolved = alertmanager.receiver.wait_for(_notification("resolved", "muslim"), timeout=30)
    assert resolved["alerts"][0]["labels"]["metric"] == "disparate_impact"


@pytest.mark.integration
def test_one_alert_name_from_two_sources_stays_two_alerts(alertmanager: AlertmanagerServer) -> None:
    """The service and Prometheus' rules raise FairwatchFairnessViolation for the same value; the rule's
    alert also carries the series' job and instance, so Alertmanager keeps two alerts and the service's
    resolve ends only its own."""
    notifier = AlertmanagerNotifier(alertmanager.url, timeout_seconds=5, resend_seconds=60)
    now = datetime.now(UTC)
    service = alert("muslim", since=now - timedelta(minutes=1))
    notifier.send([service], [], now)
    from_rule = {
        "labels": {**service.labels, "job": "fairwatch", "instance": "fairwatch:9810"},
        "annotations": {"summary": "from Prometheus"},
        "startsAt": (now - timedelta(minutes=1)).isoformat(),
        "endsAt": (now + timedelta(hours=1)).isoformat(),
    }
    http_json(f"{alertmanager.url}/api/v2/alerts", method="POST", json_body=[from_rule])

    def count(n: int) -> list[Any] | None:
        alerts = _alertmanager_alerts(alertmanager)
        return alerts if len(alerts) == n else None

    both = wait_until(lambda: count(2), timeout=20, what="two alerts")
    assert {a["labels"]["alertname"] for a in both} == {ALERTNAME}
    notifier.send([], [replace(service, state="resolved")], datetime.now(UTC))
    (left,) = wait_until(lambda: count(1), timeout=20, what="the service's alert resolved")
    assert left["labels"]["job"] == "fairwatch" and left["status"]["state"] == "active"


@pytest.mark.integration
def test_alertmanager_4xx_raises_delivery_error(alertmanager: AlertmanagerServer) -> None:
    notifier = AlertmanagerNotifier(alertmanager.url, timeout_seconds=5, resend_seconds=60)
    bad = replace(alert(), labels={"alertname": ALERTNAME, "not a label name": "x"})
    with pytest.raises(AlertDeliveryError, match=r"alertmanager: POST .*/api/v2/alerts answered HTTP 4\d\d"):
        notifier.send([bad], [], datetime.now(UTC))


# -- failures ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["alertmanager", "webhook"])
def test_refused_connection_raises_delivery_error(kind: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    notifier: AlertmanagerNotifier | WebhookNotifier = (
        AlertmanagerNotifier(url, timeout_seconds=5, resend_seconds=60)
        if kind == "alertmanager"
        else WebhookNotifier(url, timeout_seconds=5)
    )
    with pytest.raises(AlertDeliveryError, match=f"{kind}: cannot reach http://127.0.0.1"):
        notifier.send([alert()], [], NOW)


def test_error_messages_never_show_credentials() -> None:
    url = f"http://fairwatch:s3cret-token@127.0.0.1:{free_port()}/hook"
    notifier = WebhookNotifier(url, timeout_seconds=5)
    assert "s3cret" not in notifier.url
    with pytest.raises(AlertDeliveryError) as caught:
        notifier.send([alert()], [], NOW)
    assert "s3cret" not in str(caught.value)


def test_credentials_in_the_url_become_basic_auth(stub: Stub) -> None:
    host = stub.url.removeprefix("http://")
    WebhookNotifier(f"http://fairwatch:p%40ss@{host}/hook", timeout_seconds=5).send([alert()], [], NOW)
    ((path, headers, _),) = stub.requests
    assert path == "/hook"
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"fairwatch:p@ss").decode()


def test_http_error_reports_status_and_a_short_body(stub: Stub) -> None:
    stub.status, stub.body = 400, b"bad request:\n" + b"x" * 5000
    with pytest.raises(
        AlertDeliveryError, match=r"webhook: POST .* answered HTTP 400: bad request: x+\.\.\.$"
    ):
        WebhookNotifier(stub.url, timeout_seconds=5).send([alert()], [], NOW)


def test_redirect_is_not_followed(stub: Stub) -> None:
    stub.status, stub.headers = 307, {"Location": "http://127.0.0.1:1/elsewhere"}
    with pytest.raises(AlertDeliveryError, match="HTTP 307"):
        WebhookNotifier(stub.url, timeout_seconds=5).send([alert()], [], NOW)


@pytest.mark.parametrize("url", ["alertmanager:9093", "ftp://host/x", "http://127.0.0.1:99999"])
def test_bad_url_is_rejected_at_construction(url: str) -> None:
    with pytest.raises(ValueError):
        WebhookNotifier(url, timeout_seconds=5)


# -- log, recording, build -----------------------------------------------------------------------------


def test_log_notifier_logs_each_firing_episode_once_and_the_resolution(
    caplog: pytest.LogCaptureFixture,
) -> None:
    notifier = LogNotifier(logging.getLogger("fairwatch.test.alerts"))
    first = alert("muslim")
    with caplog.at_level(logging.INFO, logger="fairwatch.test.alerts"):
        notifier.send([first], [], NOW)
        notifier.send([first], [], NOW + timedelta(minutes=1))  # re-sent: not logged again
        notifier.send([], [replace(first, state="resolved")], NOW + timedelta(minutes=2))
        notifier.send([alert("muslim", since=NOW + timedelta(minutes=3))], [], NOW + timedelta(minutes=3))
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, "fairness alert firing: disparate_impact for identity=muslim is out of range"),
        (logging.INFO, "fairness alert resolved: disparate_impact for identity=muslim is out of range"),
        (logging.WARNING, "fairness alert firing: disparate_impact for identity=muslim is out of range"),
    ]


def test_recording_notifier_records_every_call_and_can_fail() -> None:
    recorder = RecordingNotifier()
    recorder.send([], [], NOW)
    recorder.failing = True
    with pytest.raises(AlertDeliveryError, match="recording: simulated"):
        recorder.send([alert()], [], NOW)
    assert [(len(c.firing), c.now) for c in recorder.calls] == [(0, NOW), (1, NOW)]


def test_build_notifiers_follows_the_config(webhook_receiver: WebhookReceiver) -> None:
    config = AlertsConfig.model_validate(
        {
            "alertmanager": {"url": "http://127.0.0.1:9093", "timeout": "2s"},
            "webhook": {"url": webhook_receiver.url},
            "external_url": "http://fairwatch:9810/",
        }
    )
    notifiers = build_notifiers(config, resend_seconds=60, logger=logging.getLogger("t"))
    assert [n.name for n in notifiers] == ["alertmanager", "webhook", "log"]
    am = notifiers[0]
    assert isinstance(am, AlertmanagerNotifier)
    assert (am.url, am.timeout_seconds, am.resend_seconds) == ("http://127.0.0.1:9093/api/v2/alerts", 2, 60)
    assert am.generator_url == "http://fairwatch:9810/"

    notifiers[1].send([alert()], [], NOW)
    assert webhook_receiver.received[0]["alerts"][0]["generatorURL"] == "http://fairwatch:9810/"

    only_log = build_notifiers(AlertsConfig(), resend_seconds=60, logger=logging.getLogger("t"))
    assert [n.name for n in only_log] == ["log"]
    assert build_notifiers(AlertsConfig(log=False), resend_seconds=60, logger=logging.getLogger("t")) == []


def test_build_notifiers_names_the_key_of_a_bad_url() -> None:
    config = AlertsConfig.model_validate({"webhook": {"url": "hooks.example:8080"}})
    with pytest.raises(ConfigError, match=r"alerts\.webhook: url must be an http\(s\) URL"):
        build_notifiers(config, resend_seconds=60, logger=logging.getLogger("t"))
