"""End to end: `fairwatch run` on a SQLite log, scraped over HTTP, agrees with `fairwatch evaluate`."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from monitor.cli.demo.run import write_demo_config, write_demo_log
from tests.servers import free_port

pytestmark = pytest.mark.integration


def _get(url: str) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as resp:
        return resp.read().decode()


def test_run_serves_what_evaluate_prints(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    # a log that ended an hour ago: every evaluation from now on sees the same rows
    write_demo_log(
        tmp_path / "predictions.db",
        start=now - timedelta(hours=1),
        history=timedelta(hours=4),
        future=timedelta(0),
        rows_per_hour=3000,
    )
    port = free_port()
    cfg = write_demo_config(tmp_path, port=port)
    cfg.write_text(
        cfg.read_text().replace(
            "windows: [{name: 1h, length: 1h}, {name: 3h, length: 3h}]",
            "windows: [{name: all, length: 800d}]",
        )
    )
    log_path = tmp_path / "run.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "monitor.cli", "run", "--config", str(cfg)],
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        deadline = time.monotonic() + 60
        metrics = ""
        while time.monotonic() < deadline:
            try:
                metrics = _get(f"http://127.0.0.1:{port}/metrics")
                if "fairwatch_bpsn_auc{" in metrics:
                    break
            except OSError:
                pass
            time.sleep(0.3)
        assert "fairwatch_bpsn_auc{" in metrics, f"no values on /metrics; log:\n{log_path.read_text()}"
        assert _get(f"http://127.0.0.1:{port}/healthz").strip() == "ok"
        served = json.loads(_get(f"http://127.0.0.1:{port}/api/v1/results"))["data"]["results"]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, "fairwatch run did not stop cleanly on SIGTERM"

    out = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "evaluate", "--config", str(cfg), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    printed = json.loads(out.stdout)
    key = lambda r: (r["model"], r["window"], r["attribute"], r["group"], r["metric"])  # noqa: E731
    served_by_key = {key(r): r for r in served}
    assert len(printed) == len(served) > 50
    for row in printed:
        twin = served_by_key[key(row)]
        for field in (
            "value",
            "ci_lower",
            "ci_upper",
            "fair_min",
            "fair_max",
            "state",
            "n_group",
            "n_reference",
        ):
            assert twin[field] == row[field], (key(row), field)


def _history_times(port: int) -> set[str]:
    data = json.loads(_get(f"http://127.0.0.1:{port}/api/v1/history"))["data"]
    return {point[0] for series in data["series"] for point in series["points"]}


def test_a_restarted_service_keeps_its_history(tmp_path: Path) -> None:
    """``server.history.directory``: a real process evaluates, is stopped, and its successor serves the
    points the first kept (the issue: "a restart forgets it, and the charts cover two minutes")."""
    now = datetime.now(UTC)
    write_demo_log(
        tmp_path / "predictions.db",
        start=now - timedelta(hours=1),
        history=timedelta(hours=2),
        future=timedelta(0),
    )
    port = free_port()
    cfg = write_demo_config(tmp_path, port=port)
    text = cfg.read_text()
    assert f'server: {{host: "127.0.0.1", port: {port}}}' in text
    cfg.write_text(
        text.replace(
            f'server: {{host: "127.0.0.1", port: {port}}}',
            f'server: {{host: "127.0.0.1", port: {port}, history: {{size: 50, directory: kept}}}}',
        )
    )

    def run_until(enough: Callable[[set[str]], bool]) -> set[str]:
        with (tmp_path / "run.log").open("a") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "monitor.cli", "run", "--config", str(cfg)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline, seen = time.monotonic() + 60, set()
            while time.monotonic() < deadline and not enough(seen):
                with contextlib.suppress(OSError):
                    seen = _history_times(port)
                time.sleep(0.2)
            assert enough(seen), (tmp_path / "run.log").read_text()
            return seen
        finally:
            proc.terminate()
            proc.wait(timeout=15)

    first = run_until(lambda seen: len(seen) >= 3)
    kept = run_until(lambda seen: bool(seen))  # its first answer with any point
    assert first <= kept, sorted(first - kept)
    assert list((tmp_path / "kept").iterdir())  # one folder per model
