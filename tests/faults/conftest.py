"""Shared helpers of the fault suite: the demo's SQLite log and config, edited per fault."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.cli.demo.run import write_demo_config, write_demo_log
from tests.monitor.test_source_files import make_source  # noqa: F401 - the file sources' fixture

NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)

EditConfig = Callable[[Callable[[dict[str, Any]], None]], Path]


@pytest.fixture
def demo_dir(tmp_path: Path) -> Path:
    """A directory holding the demo's prediction log (3 h up to ``NOW``) and its config."""
    write_demo_log(tmp_path / "predictions.db", start=NOW, history=timedelta(hours=3), future=timedelta(0))
    write_demo_config(tmp_path, port=0)
    return tmp_path


@pytest.fixture
def edit_config(demo_dir: Path) -> EditConfig:
    """``edit_config(change)``: apply ``change`` to the demo config's data; return the new file."""

    def edit(change: Callable[[dict[str, Any]], None]) -> Path:
        data = yaml.safe_load((demo_dir / "config.yaml").read_text())
        change(data)
        path = demo_dir / "fault.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    return edit
