"""`fairwatch demo` shows a firing alert within its run, from nothing but the package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import free_port

pytestmark = pytest.mark.integration


def test_demo_fires_an_alert(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor.cli",
            "demo",
            "--dir",
            str(tmp_path / "demo"),
            "--port",
            str(free_port()),
            "--duration",
            "16",
            "--speed",
            "1200",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    text = out.stdout + out.stderr
    assert "is pending" in text and "is firing" in text, text[-3000:]
    assert "demo finished" in text
    assert "bpsn_auc" in text.split("demo finished")[1]
    assert (tmp_path / "demo" / "predictions.db").exists()
    assert (tmp_path / "demo" / "config.yaml").exists()
