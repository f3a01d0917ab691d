"""A real Prometheus scrapes a real ``fairwatch run`` over TLS: with basic auth, then with a client certificate.

fairwatch is started with ``--web.config.file`` (exporter-toolkit's format); Prometheus' scrape jobs
use ``scheme: https`` with ``tls_config`` and ``basic_auth`` as a user would write them. Jobs with
the wrong password, without a certificate or over plain HTTP must end ``up == 0``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import bcrypt
import pytest
import yaml

from monitor.cli.demo.run import write_demo_config, write_demo_log
from tests.servers import ManagedProcess, PrometheusServer, free_port, http_json, wait_until
from tests.tls import PKI, make_pki

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def fairwatch(tmp_path: Path) -> Iterator[Callable[[dict[str, object]], int]]:
    """``fairwatch(web_config) -> port``: ``fairwatch run --web.config.file`` on a small demo log."""
    started: list[ManagedProcess] = []

    def start(web_config: dict[str, object]) -> int:
        now = datetime.now(UTC)
        write_demo_log(
            tmp_path / "predictions.db", start=now - timedelta(hours=1), history=timedelta(hours=2),
            future=timedelta(0), rows_per_hour=500,
        )  # fmt: skip
        port = free_port()
        config = write_demo_config(tmp_path, port=port)
        config.write_text(config.read_text().replace("interval: 1s", "interval: 5s"))
        web_file = tmp_path / "web.yml"
        web_file.write_text(yaml.safe_dump(web_config))
        argv = [
            sys.executable,
            "-m",
            "monitor.cli",
            "run",
            "--config",
            str(config),
            "--web.config.file",
            str(web_file),
        ]
        process = ManagedProcess("fairwatch", argv, tmp_path / "fairwatch.log", cwd=tmp_path).start()
        started.append(process)
        return port

    try:
        yield start
    finally:
        for process in started:
            process.stop()


def _targets(prometheus: PrometheusServer) -> dict[str, dict[str, str]]:
    """Each scrape job's health and last error, once every job has been scraped."""
    active = http_json(f"{prometheus.url}/api/v1/targets")["data"]["activeTargets"]
    found = {t["labels"]["job"]: {"health": t["health"], "error": t["lastError"]} for t in active}
    return found if all(t["health"] != "unknown" for t in found.values()) else {}


def _job(name: str, port: int, **extra: object) -> dict[str, object]:
    return {
        "job_name": name,
        "scrape_interval": "1s",
        "static_configs": [{"targets": [f"127.0.0.1:{port}"]}],
        **extra,
    }


def _scrape_config(jobs: list[dict[str, object]]) -> str:
    return yaml.safe_dump({"global": {"scrape_interval": "1s"}, "scrape_configs": jobs})


def test_prometheus_scrapes_over_tls_with_basic_auth(
    fairwatch: Callable[[dict[str, object]], int],
    prometheus_factory: Callable[..., PrometheusServer],
    pki: PKI,
    tmp_path: Path,
) -> None:
    hashed = bcrypt.hashpw(b"scrape-s3cret", bcrypt.gensalt(rounds=10)).decode()
    port = fairwatch({
        "tls_server_config": {"cert_file": str(pki.server_cert), "key_file": str(pki.server_key)},
        "basic_auth_users": {"prometheus": hashed},
    })  # fmt: skip
    password_file = tmp_path / "password"
    password_file.write_text("scrape-s3cret")
    tls = {"ca_file": str(pki.ca)}
    prometheus = prometheus_factory(_scrape_config([
        _job("fairwatch", port, scheme="https", tls_config=tls,
             basic_auth={"username": "prometheus", "password_file": str(password_file)}),
        _job("wrong-password", port, scheme="https", tls_config=tls,
             basic_auth={"username": "prometheus", "password": "guess"}),
        _job("no-credentials", port, scheme="https", tls_config=tls),
        _job("plain-http", port),
    ]))  # fmt: skip
    wait_until(
        lambda: prometheus.query('fairwatch_build_info{job="fairwatch"}'),
        timeout=90,
        what="a scrape over TLS",
    )
    targets = wait_until(lambda: _targets(prometheus), timeout=30, what="every job scraped")
    assert targets["fairwatch"]["health"] == "up"
    assert "401 Unauthorized" in targets["wrong-password"]["error"]
    assert "401 Unauthorized" in targets["no-credentials"]["error"]
    assert "400 Bad Request" in targets["plain-http"]["error"]
    up = {r["metric"]["job"]: r["value"][1] for r in prometheus.query("up")}
    assert up == {"fairwatch": "1", "wrong-password": "0", "no-credentials": "0", "plain-http": "0"}
    # the values themselves came through: the same series a plain scrape carries
    assert prometheus.query('fairwatch_bpsn_auc{job="fairwatch", model="toxicity"}')


def test_prometheus_scrapes_with_a_client_certificate(
    fairwatch: Callable[[dict[str, object]], int],
    prometheus_factory: Callable[..., PrometheusServer],
    pki: PKI,
) -> None:
    port = fairwatch({
        "tls_server_config": {
            "cert_file": str(pki.server_cert), "key_file": str(pki.server_key),
            "client_auth_type": "RequireAndVerifyClientCert", "client_ca_file": str(pki.ca),
            "client_allowed_sans": ["prometheus.monitoring.svc"],
        },
    })  # fmt: skip
    prometheus = prometheus_factory(_scrape_config([
        _job("fairwatch", port, scheme="https",
             tls_config={"ca_file": str(pki.ca), "cert_file": str(pki.client_cert), "key_file": str(pki.client_key)}),
        _job("other-certificate", port, scheme="https",
             tls_config={"ca_file": str(pki.ca), "cert_file": str(pki.other_cert), "key_file": str(pki.other_key)}),
        _job("no-certificate", port, scheme="https", tls_config={"ca_file": str(pki.ca)}),
    ]))  # fmt: skip
    wait_until(
        lambda: prometheus.query('fairwatch_build_info{job="fairwatch"}'),
        timeout=90,
        what="a scrape with mTLS",
    )
    wait_until(lambda: _targets(prometheus), timeout=30, what="every job scraped")
    up = {r["metric"]["job"]: r["value"][1] for r in prometheus.query("up")}
    assert up == {"fairwatch": "1", "other-certificate": "0", "no-certificate": "0"}
