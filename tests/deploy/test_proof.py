"""The proof: a live bias reaches the pager through real Prometheus and Alertmanager, and clears.

On loopback: ``fairwatch run`` on the demo's drifting log (biased against ``muslim`` for the last hour, by
the real clock), a real Prometheus scraping it every second with the rules of ``render_rules(settings)``,
a real Alertmanager sending to a webhook receiver in this process; fairwatch also pushes its own alerts
to that Alertmanager. The test sees the series in Prometheus, the fairness alert firing there, both
alerts (Prometheus' and fairwatch's) delivered to the webhook, then removes the bias from the log and
sees both resolved. Every wait is bounded; every process is stopped by PID in a finaliser.
"""

from __future__ import annotations

import contextlib
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from monitor.cli.demo.run import BIASED, IDENTITIES, DemoLog, write_demo_log
from monitor.config import load_settings
from monitor.outputs.prometheus.rules import ALERTNAME as RULE_ALERTNAME
from monitor.outputs.prometheus.rules import render_rules
from monitor.service.alerting import ALERTNAME as SERVICE_ALERTNAME
from tests.servers import (
    AlertmanagerServer,
    ManagedProcess,
    PrometheusServer,
    WebhookReceiver,
    free_port,
    http_json,
    wait_until,
)

pytestmark = pytest.mark.integration

T = TypeVar("T")

METRIC = "statistical_parity_difference"  # predictions only: live on the current window
WINDOW = "1h"
# Prometheus adds its external labels to the alerts it sends: how the webhook tells its alerts apart.
ORIGIN = {"origin": "prometheus"}
BUDGET = 90.0  # seconds for the whole test; every wait gets what is left of it

PROMETHEUS_CONFIG = """\
global:
  scrape_interval: 1s
  evaluation_interval: 1s
  external_labels: {external_labels}
rule_files: ["{{rules_dir}}/rules.yml"]
alerting:
  alertmanagers:
    - static_configs: [{{targets: ["{alertmanager}"]}}]
scrape_configs:
  - job_name: fairwatch
    static_configs: [{{targets: ["{fairwatch}"]}}]
"""


def _config(directory: Path, *, port: int, alertmanager_url: str) -> Path:
    """The demo's model, one 1h window evaluated every second, alerts after 2s pushed to Alertmanager."""
    sql = {"kind": "sql", "url": "sqlite:///predictions.db"}
    config = {
        "models": [
            {
                "name": "toxicity",
                "source": {**sql, "table": "predictions"},
                "labels": {
                    "source": {**sql, "table": "labels"},
                    "join_on": "id",
                    "columns": {"id": "id", "label": "label", "timestamp": "labeled_at"},
                },
                "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
                "groups": [{"attribute": "identity", "kind": "indicator", "columns": IDENTITIES}],
                "windows": [{"name": WINDOW, "length": "1h"}],
                "label_delay": "30m",
                "interval": "1s",
                "metrics": [METRIC, "disparate_impact"],
                "min_samples": 50,
            }
        ],
        "alerts": {"for": "2s", "alertmanager": {"url": alertmanager_url}, "log": True},
        "server": {"host": "127.0.0.1", "port": port},
    }
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _write_log(path: Path, now: datetime, *, biased: bool) -> DemoLog:
    """The demo log started 2h ago: biased from 1h ago on (the whole 1h window), or never."""
    return write_demo_log(
        path,
        start=now - timedelta(hours=2),
        history=timedelta(hours=1),
        future=timedelta(hours=3),  # rows until an hour from now
        bias_for=timedelta(hours=5) if biased else timedelta(0),
    )


def _remove_bias(log: DemoLog, clean: DemoLog) -> int:
    """Copy the unbiased scores (same seed: same rows) over the live log in one transaction."""
    with contextlib.closing(sqlite3.connect(log.path, timeout=30)) as conn, conn:
        conn.execute("ATTACH DATABASE ? AS clean", (str(clean.path),))
        cursor = conn.execute(
            "UPDATE predictions SET score = c.score FROM clean.predictions AS c "
            "WHERE c.id = predictions.id AND c.score <> predictions.score"
        )
        return cursor.rowcount


def _is_ours(labels: dict[str, str]) -> bool:
    return (labels.get("metric"), labels.get("group"), labels.get("window")) == (METRIC, BIASED, WINDOW)


def _from_prometheus(alert: dict[str, Any]) -> bool:
    labels = alert["labels"]
    return (
        labels.get("alertname") == RULE_ALERTNAME
        and ORIGIN.items() <= labels.items()
        and "/graph?g0.expr=" in alert.get("generatorURL", "")
    )


def _from_fairwatch(alert: dict[str, Any]) -> bool:
    labels = alert["labels"]
    return labels.get("alertname") == SERVICE_ALERTNAME and not ORIGIN.keys() & labels.keys()


def _delivered(source: Callable[[dict[str, Any]], bool], status: str) -> Callable[[Any], bool]:
    """A webhook-body predicate: an alert of ``source`` about the biased group, in ``status``."""

    def match(body: Any) -> bool:
        return any(
            source(a) and _is_ours(a["labels"]) and a["status"] == status for a in body.get("alerts", [])
        )

    return match


def _prometheus_alerts(prometheus: PrometheusServer) -> list[dict[str, Any]]:
    alerts: list[dict[str, Any]] = http_json(f"{prometheus.url}/api/v1/alerts")["data"]["alerts"]
    return [a for a in alerts if a["labels"]["alertname"] == RULE_ALERTNAME and _is_ours(a["labels"])]


class _Deadline:
    """The test's time budget: each wait gets what is left, and a timeout shows fairwatch's log."""

    def __init__(self, fairwatch: ManagedProcess, seconds: float) -> None:
        self.fairwatch = fairwatch
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(1.0, self.end - time.monotonic())

    def until(self, condition: Callable[[], T | None], what: str) -> T:
        return self._wait(lambda timeout: wait_until(condition, timeout, what))

    def delivered(self, webhook: WebhookReceiver, predicate: Callable[[Any], bool]) -> Any:
        return self._wait(lambda timeout: webhook.wait_for(predicate, timeout=timeout))

    def _wait(self, wait: Callable[[float], T]) -> T:
        try:
            return wait(self.left())
        except pytest.fail.Exception as exc:
            message = str(exc)
        self.fairwatch.fail(message)  # the same failure, with the tail of fairwatch's log
        raise AssertionError(message)  # not reached: fail() raises


@pytest.fixture
def fairwatch_process(tmp_path: Path) -> Iterator[Callable[[Path], ManagedProcess]]:
    """Starts ``fairwatch run --config F``; stopped by PID (SIGTERM, then SIGKILL) at teardown."""
    started: list[ManagedProcess] = []

    def start(config: Path) -> ManagedProcess:
        argv = [sys.executable, "-m", "monitor.cli", "run", "--config", str(config)]
        process = ManagedProcess("fairwatch", argv, tmp_path / "fairwatch.log", cwd=tmp_path)
        started.append(process)
        return process.start()

    try:
        yield start
    finally:
        for process in started:
            process.stop()


def test_bias_alerts_through_prometheus_and_alertmanager_then_resolve(
    tmp_path: Path,
    fairwatch_process: Callable[[Path], ManagedProcess],
    prometheus_factory: Callable[..., PrometheusServer],
    alertmanager: AlertmanagerServer,
) -> None:
    now = datetime.now(UTC)
    log = _write_log(tmp_path / "predictions.db", now, biased=True)
    assert log.bias_start <= now - timedelta(minutes=59) and log.bias_end > now + timedelta(hours=1)
    port = free_port()
    config = _config(tmp_path, port=port, alertmanager_url=alertmanager.url)
    settings = load_settings(config)
    fairwatch = fairwatch_process(config)
    deadline = _Deadline(fairwatch, BUDGET)
    prometheus = prometheus_factory(
        PROMETHEUS_CONFIG.format(
            external_labels=yaml.safe_dump(ORIGIN, default_flow_style=True).strip(),
            alertmanager=alertmanager.url.removeprefix("http://"),
            fairwatch=f"127.0.0.1:{port}",
        ),
        rule_files={"rules.yml": render_rules(settings)},
    )
    fairwatch.wait_http_ok(f"http://127.0.0.1:{port}/healthz")
    webhook: WebhookReceiver = alertmanager.receiver

    # 1. fairwatch's series are in Prometheus, and the biased group is a violation there
    state = f'fairwatch_metric_state{{metric="{METRIC}", group="{BIASED}", window="{WINDOW}"}}'
    deadline.until(lambda: prometheus.query(f"{state} == 2"), "the violation in Prometheus")
    value = prometheus.query(f'fairwatch_{METRIC}{{group="{BIASED}", window="{WINDOW}"}}')
    assert len(value) == 1 and float(value[0]["value"][1]) > 0.1  # the group's harmless comments flagged
    assert prometheus.query('fairwatch_build_info{job="fairwatch"}')

    # 2. the rule fires in Prometheus, after its `for`
    firing = deadline.until(
        lambda: [a for a in _prometheus_alerts(prometheus) if a["state"] == "firing"],
        "the fairness alert firing in Prometheus",
    )
    assert firing[0]["labels"]["severity"] == "warning"
    annotations = firing[0]["annotations"]
    assert "fair range [-0.1, 0.1]" in annotations["summary"]
    assert "unknown" not in annotations["description"], annotations  # the interval, queried live

    # 3. Alertmanager delivers Prometheus' alert and fairwatch's own push to the webhook
    deadline.delivered(webhook, _delivered(_from_prometheus, "firing"))
    deadline.delivered(webhook, _delivered(_from_fairwatch, "firing"))

    # 4. the bias is removed from the log: both alerts resolve, in Prometheus and at the webhook
    changed = _remove_bias(log, _write_log(tmp_path / "unbiased.db", now, biased=False))
    assert changed > 100
    deadline.until(
        lambda: prometheus.query(f"{state} == 0") and not _prometheus_alerts(prometheus),
        "the Prometheus alert to resolve",
    )
    deadline.delivered(webhook, _delivered(_from_prometheus, "resolved"))
    deadline.delivered(webhook, _delivered(_from_fairwatch, "resolved"))
    assert fairwatch.running, "fairwatch exited during the test"
