"""`fairwatch demo` from nothing but the package: it stays until Ctrl-C, its story repeats, and what it
prints into a pipe is plain, whole and free of library warnings."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.servers import free_port

pytestmark = pytest.mark.integration

ALERT = re.compile(r"^(\d\d:\d\d) alert (\w+) \(muslim, (\w+)\) is (pending|firing|resolved)$")


def start_demo(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    """``fairwatch demo`` in ``tmp_path/demo`` on a free port, its output piped (80 columns)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monitor.cli",
            "demo",
            "--dir",
            str(tmp_path / "demo"),
            "--port",
            str(free_port()),
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
    )


def test_the_demo_stays_until_ctrl_c_and_its_story_repeats(tmp_path: Path) -> None:
    """At a simulated hour a second, the demo's first 12-hour story (bias from hour 1 to 6) ends after
    12 s; the old demo's log ran out at simulated hour 12. The demo runs with no --duration until
    its second bias has fired an alert, and then until a SIGINT (Ctrl-C) ends it."""
    proc = start_demo(tmp_path, "--speed", "3600")
    lines: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    deadline = time.monotonic() + 150
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            events = [m.groups() for m in map(ALERT.match, (line.rstrip("\n") for line in list(lines))) if m]
            resolved = [i for i, e in enumerate(events) if e[3] == "resolved"]
            if resolved and any(e[3] == "firing" for e in events[resolved[0] :]):
                break  # a firing after a resolve: the second bias, beyond the log first written
            time.sleep(0.5)
        assert proc.poll() is None, "the demo ended by itself"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(5)
    out = "".join(lines)
    assert proc.returncode == 0, err
    events = [m.groups() for m in map(ALERT.match, out.splitlines()) if m]
    resolved = next(i for i, e in enumerate(events) if e[3] == "resolved")
    assert any(e[3] == "firing" for e in events[:resolved]) and any(
        e[3] == "firing" for e in events[resolved:]
    )
    assert "demo finished" in err and "bpsn_auc" in err.split("demo finished")[1]

    # the terminal shows tables and alert lines only: no log lines, no library warnings, no colour codes
    text = out + err
    assert (
        "Traceback" not in text
        and "WARNING" not in text
        and "maximum number of running instances" not in text
    )
    assert "\x1b[" not in text and "…" not in text
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert rows and all(
        re.search(r"│ (ok|inconclusive|violation|insufficient_data \(.+\)) +│$", r) for r in rows
    )
    metrics = {r.split("│")[4].strip() for r in rows}
    assert metrics == {
        "bpsn_auc",
        "negative_aeg",
        "statistical_parity_difference",
        "multiclass_statistical_parity",
    }
    # the footer counts the evaluations the demo paced (and the ticks it skipped, if any)
    assert re.search(r"evaluations: toxicity \d+, moderation \d+", out)
    assert "demo.log" in out and (tmp_path / "demo" / "demo.log").exists()

    # the log grew past the hours first written and dropped what no window reads any more
    with sqlite3.connect(tmp_path / "demo" / "predictions.db") as conn:
        first, last = conn.execute("SELECT MIN(ts), MAX(ts) FROM predictions").fetchone()
    span = datetime.fromisoformat(last) - datetime.fromisoformat(first)
    assert 7.5 * 3600 <= span.total_seconds() <= 9 * 3600, span  # kept: 6 h behind, 2-3 h ahead


def test_sigterm_ends_the_demo_as_ctrl_c_does(tmp_path: Path) -> None:
    """``docker stop`` sends SIGTERM: the demo stops its service and says so, exit status 0."""
    proc = start_demo(tmp_path)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            if (tmp_path / "demo" / "demo.log").exists():  # written once the service runs
                break
            time.sleep(0.2)
        time.sleep(2)
        assert proc.poll() is None, "the demo ended by itself"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "demo finished" in err and "Traceback" not in err
