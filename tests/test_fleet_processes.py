"""The fleet with real processes: sidecars (``fairwatch run`` with ``publish``), each reading only its own
pod's log, and a central fairwatch reading only the shared store - a directory, and a real PostgreSQL.

The reference is ``fairwatch evaluate`` over the three logs together (one glob over the pods' JSON Lines
files), run as a process too: the central's report must equal it value for value. Sidecars are killed
with SIGKILL mid-run and restarted, added and removed while the central runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
import yaml
from prometheus_client.parser import text_string_to_metric_families

from monitor.sources.published.database import PANES, PUBLISHERS
from tests.servers import ManagedProcess, free_port, http_request, wait_until

pytestmark = pytest.mark.integration


def _hour() -> datetime:
    """The test's hour, taken when its fleet starts (not when the module is collected: a suite
    crossing an hour boundary between the two compared ranges the sidecars no longer published)."""
    return datetime.now(UTC).replace(minute=0, second=0, microsecond=0)


def _span(now: datetime) -> tuple[datetime, datetime]:
    """Whole panes the sidecars publish however the hour turns during the test: their horizon (6 h
    window + 1 h label delay) reaches back to now - 6 h even an hour later."""
    return now - timedelta(hours=6), now - timedelta(hours=1)


FAIRWATCH = str(Path(sys.executable).with_name("fairwatch"))


def _log(rows: int, seed: int, now: datetime) -> list[dict[str, Any]]:
    """A pod's predictions over the last 8 hours: a score that depends on the label, a group whose
    selection rate is lower, labels for most rows, now and then a line nobody can parse."""
    rng = np.random.default_rng(seed)
    ts = now - timedelta(hours=8) + pd.to_timedelta(np.sort(rng.uniform(0, 8 * 3600, rows)), unit="s")
    group = rng.choice(["a", "b", "c"], rows, p=[0.6, 0.3, 0.1])
    label = (rng.random(rows) < 0.3).astype(float)
    score = np.round(1 / (1 + np.exp(-(-1 + 2 * label - 0.5 * (group == "b") + rng.normal(0, 1, rows)))), 3)
    out = []
    for i in range(rows):
        record: dict[str, Any] = {"id": f"{seed}-{i}", "ts": ts[i].isoformat(), "score": float(score[i])}
        record |= {"group": str(group[i])}
        if rng.random() < 0.85:
            record["label"] = float(label[i])
        out.append(record)
    return out


def _write(folder: Path, records: list[dict[str, Any]]) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    half = len(records) // 2
    (folder / "predictions-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[:half]))
    live = "".join(json.dumps(r) + "\n" for r in records[half:]) + '{"id": "torn", "ts": "20'
    (folder / "predictions-2.jsonl").write_text(live)
    return str(folder / "predictions-*.jsonl")


def _model(source: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {
        "name": "loans",
        "source": source,
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "group", "kind": "categorical", "column": "group", "reference": "a"}],
        "windows": [{"name": "1h", "length": "1h"}, {"name": "6h", "length": "6h"}],
        "label_delay": "1h",
        "interval": "2s",
        "min_samples": 20,
        **keys,
    }


def _config(path: Path, model: dict[str, Any], port: int) -> Path:
    path.write_text(yaml.safe_dump({"models": [model], "server": {"port": port}}))
    return path


class Fleet:
    """The pods' logs, their sidecars and the store: a shared directory, or a real PostgreSQL."""

    def __init__(self, root: Path, database: str | None = None) -> None:
        self.root = root
        self.store = root / "store"
        self.database = database
        self.url = database or str(self.store)
        self.sidecars: dict[str, ManagedProcess] = {}
        self.globs: dict[str, str] = {}
        self.now = _hour()

    def add(self, pod: str, seed: int) -> ManagedProcess:
        self.globs[pod] = _write(self.root / "pods" / pod, _log(1500, seed, self.now))
        publish = {"url": self.url, "publisher": pod}
        model = _model({"kind": "files", "path": self.globs[pod]}, publish=publish)
        port = free_port()
        config = _config(self.root / f"{pod}.yaml", model, port)
        sidecar = ManagedProcess(pod, [FAIRWATCH, "run", "--config", str(config)], self.root / f"{pod}.log")
        self.sidecars[pod] = sidecar.start()
        sidecar.wait_http_ok(f"http://127.0.0.1:{port}/readyz")
        return sidecar

    def heartbeat(self, pod: str) -> float:
        """When ``pod`` last published (0: never), as the store says."""
        if self.database is None:
            beats = list(self.store.glob(f"loans/*/{pod}/.published"))
            return max((b.stat().st_mtime for b in beats), default=0.0)
        engine = sa.create_engine(self.database)
        try:
            with engine.connect() as conn:
                if not sa.inspect(conn).has_table(PUBLISHERS.name):
                    return 0.0
                at = conn.execute(
                    sa.select(sa.func.max(PUBLISHERS.c.published_at)).where(PUBLISHERS.c.publisher == pod)
                ).scalar()
        finally:
            engine.dispose()
        return 0.0 if at is None else float(at.timestamp())

    def wait_published(self, pod: str, after: float = 0.0) -> None:
        wait_until(lambda: self.heartbeat(pod) > after or None, 60, f"{pod} to publish")

    def stop(self) -> None:
        for sidecar in self.sidecars.values():
            sidecar.stop()


@pytest.fixture(params=["directory", "postgresql"])
def fleet(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Fleet]:
    database = None
    if request.param == "postgresql":
        database = request.getfixturevalue("postgres_url")
        engine = sa.create_engine(database)
        for table in (PANES, PUBLISHERS):
            table.drop(engine, checkfirst=True)  # each test's fleet starts from nothing
        engine.dispose()
    built = Fleet(tmp_path, database)
    try:
        yield built
    finally:
        built.stop()


def _evaluate(config: Path, now: datetime) -> list[dict[str, Any]]:
    start, end = _span(now)
    span = ["--start", start.isoformat(), "--end", end.isoformat()]
    done = subprocess.run(
        [FAIRWATCH, "evaluate", "--config", str(config), *span, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: list[dict[str, Any]] = json.loads(done.stdout)
    return report


def _metrics(port: int) -> dict[str, Any]:
    status, body = http_request(f"http://127.0.0.1:{port}/metrics")[:2]
    assert status == 200
    return {f.name: f for f in text_string_to_metric_families(body.decode())}


def _publishers(port: int) -> dict[str, float]:
    family = _metrics(port).get("fairwatch_publishers")
    return {s.labels["state"]: s.value for s in family.samples} if family else {}


def test_three_sidecars_and_a_central_equal_one_evaluation_of_their_logs(
    fleet: Fleet, tmp_path: Path
) -> None:
    for i, pod in enumerate(("pod-a", "pod-b", "pod-c")):
        fleet.add(pod, seed=i)
    for pod in fleet.sidecars:
        fleet.wait_published(pod)
    # pod-b killed mid-run (SIGKILL: no clean shutdown, maybe mid-write) and started again
    before = fleet.heartbeat("pod-b")
    pid = fleet.sidecars["pod-b"].pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    fleet.sidecars["pod-b"].stop()
    fleet.sidecars["pod-b"].start()
    fleet.wait_published("pod-b", after=before)
    if fleet.database is None:  # a write cut short is cleared (a database has no half writes)
        assert not list(fleet.store.glob("loans/*/pod-b/.*.arrow.*.tmp"))

    central = _config(tmp_path / "central.yaml", _model({"kind": "published", "url": fleet.url}), 0)
    union_glob = str(tmp_path / "pods" / "*" / "predictions-*.jsonl")
    union = _config(tmp_path / "union.yaml", _model({"kind": "files", "path": union_glob}), 0)
    fleet_report, union_report = _evaluate(central, fleet.now), _evaluate(union, fleet.now)
    assert fleet_report == union_report
    assert any(r["metric"] == "disparate_impact" and r["group"] == "b" for r in fleet_report)
    # the sidecars judge nothing themselves: health, no fairness series
    sidecar_port = int(yaml.safe_load((tmp_path / "pod-a.yaml").read_text())["server"]["port"])
    families = _metrics(sidecar_port)
    assert "fairwatch_disparate_impact" not in families
    published = families["fairwatch_last_published_panes"].samples
    assert published and published[0].value >= 1
    for path in ("/", "/api/v1/results", "/readyz"):  # the live view of a model without windows
        status, _body = http_request(f"http://127.0.0.1:{sidecar_port}{path}")
        assert status == 200, path


def test_sidecars_added_and_removed_while_the_central_runs(fleet: Fleet, tmp_path: Path) -> None:
    fleet.add("pod-a", seed=1)
    fleet.add("pod-b", seed=2)
    for pod in fleet.sidecars:
        fleet.wait_published(pod)
    port = free_port()
    model = _model({"kind": "published", "url": fleet.url, "stale_after": "4s"})
    config = _config(tmp_path / "central.yaml", model, port)
    central = ManagedProcess("central", [FAIRWATCH, "run", "--config", str(config)], tmp_path / "central.log")
    central.start()
    try:
        central.wait_http_ok(f"http://127.0.0.1:{port}/readyz")
        wait_until(
            lambda: _publishers(port) == {"fresh": 2.0, "stale": 0.0} or None, 60, "two fresh publishers"
        )
        fleet.add("pod-c", seed=3)
        wait_until(lambda: _publishers(port) == {"fresh": 3.0, "stale": 0.0} or None, 60, "pod-c to be seen")
        fleet.sidecars["pod-a"].stop()  # scaled down
        wait_until(lambda: _publishers(port) == {"fresh": 2.0, "stale": 1.0} or None, 60, "pod-a to go stale")
        last_seen = _metrics(port)["fairwatch_publisher_last_seen_timestamp_seconds"].samples
        assert {s.labels["publisher"] for s in last_seen} == {"pod-a", "pod-b", "pod-c"}
        assert "publisher pod-a has not published" in central.log_path.read_text()
        # the scaled-down pod's rows still count: the central still equals all three logs together
        union_glob = str(tmp_path / "pods" / "*" / "predictions-*.jsonl")
        union = _config(tmp_path / "union.yaml", _model({"kind": "files", "path": union_glob}), 0)
        assert _evaluate(config, fleet.now) == _evaluate(union, fleet.now)
    finally:
        central.stop()
