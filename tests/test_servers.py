"""Smoke tests proving the real-server fixtures of ``tests/servers.py`` work end to end."""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from tests.servers import AlertmanagerServer, PrometheusServer, http_json, http_request, wait_until

pytestmark = pytest.mark.integration


def test_postgres_round_trip_with_bound_parameters(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text("CREATE TABLE smoke (id serial PRIMARY KEY, name text, score double precision)")
            )
            # A value that would break naive string formatting: it must travel as a bound parameter.
            name = "O'Brien; DROP TABLE smoke; --"
            conn.execute(
                sa.text("INSERT INTO smoke (name, score) VALUES (:name, :score)"),
                {"name": name, "score": 0.25},
            )
            row = conn.execute(
                sa.text("SELECT name, score FROM smoke WHERE name = :name"), {"name": name}
            ).one()
            assert tuple(row) == (name, 0.25)
            assert conn.execute(sa.text("SELECT current_user, current_database()")).one() == (
                "fairwatch",
                "fairwatch_test",
            )
            conn.execute(sa.text("DROP TABLE smoke"))
    finally:
        engine.dispose()


def test_postgres_password_is_enforced(postgres_url: str) -> None:
    url = sa.make_url(postgres_url)
    engine = sa.create_engine(url.set(password="wrong-password"))
    try:
        with pytest.raises(sa.exc.OperationalError, match="password authentication failed"):
            engine.connect().close()
    finally:
        engine.dispose()


def _alert(test_id: str, starts_at: datetime, ends_at: datetime | None = None) -> dict[str, Any]:
    alert: dict[str, Any] = {
        "labels": {"alertname": "FairwatchSmokeTest", "severity": "warning", "test_id": test_id},
        "annotations": {"summary": "smoke test alert", "description": "sent by tests/test_servers.py"},
        "startsAt": starts_at.isoformat(),
        "generatorURL": "http://127.0.0.1/fairwatch/smoke",
    }
    if ends_at is not None:
        alert["endsAt"] = ends_at.isoformat()
    return alert


def _notification_for(test_id: str, status: str) -> Callable[[Any], bool]:
    def matches(body: Any) -> bool:
        return body.get("status") == status and any(
            a["labels"].get("test_id") == test_id and a["status"] == status for a in body.get("alerts", [])
        )

    return matches


def test_alertmanager_firing_and_resolved_reach_the_webhook(alertmanager: AlertmanagerServer) -> None:
    test_id = uuid.uuid4().hex
    started = datetime.now(UTC) - timedelta(seconds=5)

    status, body = http_request(f"{alertmanager.url}/api/v2/alerts", "POST", [_alert(test_id, started)])
    assert status == 200, body

    query = urllib.parse.urlencode({"filter": 'alertname="FairwatchSmokeTest"'})
    alerts = http_json(f"{alertmanager.url}/api/v2/alerts?{query}")
    [stored] = [a for a in alerts if a["labels"].get("test_id") == test_id]
    assert stored["annotations"]["summary"] == "smoke test alert"

    firing = alertmanager.receiver.wait_for(_notification_for(test_id, "firing"), timeout=20)
    assert firing["receiver"] == "webhook"
    assert firing["commonLabels"]["alertname"] == "FairwatchSmokeTest"

    # Re-sending the same alert with endsAt in the past resolves it.
    ended = datetime.now(UTC) - timedelta(seconds=1)
    status, body = http_request(
        f"{alertmanager.url}/api/v2/alerts", "POST", [_alert(test_id, started, ended)]
    )
    assert status == 200, body
    alertmanager.receiver.wait_for(_notification_for(test_id, "resolved"), timeout=20)


def test_alertmanager_rejects_alert_without_labels(alertmanager: AlertmanagerServer) -> None:
    status, _ = http_request(f"{alertmanager.url}/api/v2/alerts", "POST", [{"annotations": {"x": "y"}}])
    assert status == 422


PROMETHEUS_CONFIG = """\
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - '{rules_dir}/*.yml'
scrape_configs:
  - job_name: self
    static_configs:
      - targets: ['{listen_address}']
"""

SMOKE_RULES = """\
groups:
  - name: smoke
    rules:
      - record: job:up:sum
        expr: sum by (job) (up{job="self"})
"""


def test_prometheus_scrapes_a_target_and_evaluates_rules(
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    prom = prometheus_factory(PROMETHEUS_CONFIG, {"smoke.yml": SMOKE_RULES})

    up = wait_until(lambda: prom.query('up{job="self"}'), timeout=30, what="a scrape of the self target")
    assert up[0]["metric"]["instance"] == prom.listen_address
    assert up[0]["value"][1] == "1"

    # The rule file written into {rules_dir} is loaded and evaluated.
    recorded = wait_until(lambda: prom.query("job:up:sum"), timeout=20, what="the recording rule")
    assert recorded[0]["value"][1] == "1"
