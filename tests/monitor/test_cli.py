"""The command line: validate, evaluate --format json, check's exit status."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.cli.demo.run import write_demo_config, write_demo_log

START = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("demo")
    write_demo_log(d / "predictions.db", start=START, rows_per_hour=3000)
    return write_demo_config(d, port=0)


def test_validate(demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--config", str(demo)]) == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(demo.read_text().replace("interval: 1s", "interval: often"))
    assert main(["validate", "--config", str(bad)]) == 2
    assert "models[0].interval" in capsys.readouterr().err


def test_evaluate_json_fields(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    start, end = START - timedelta(hours=2), START
    assert (
        main(
            [
                "evaluate",
                "--config",
                str(demo),
                "--start",
                start.isoformat(),
                "--end",
                end.isoformat(),
                "--format",
                "json",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert rows
    for r in rows:
        assert {
            "model",
            "window",
            "attribute",
            "group",
            "reference",
            "metric",
            "value",
            "ci_lower",
            "ci_upper",
            "fair_min",
            "fair_max",
            "state",
            "n_group",
            "n_reference",
        } <= r.keys()
        assert r["window"] == "range"
        if r["value"] is None:
            assert r["reason"]


def test_check_exit_status_follows_violations(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fair = ["--start", (START - timedelta(hours=2)).isoformat(), "--end", START.isoformat()]
    biased = [
        "--start",
        (START + timedelta(hours=2)).isoformat(),
        "--end",
        (START + timedelta(hours=4)).isoformat(),
    ]
    assert main(["check", "--config", str(demo), *fair]) == 0
    assert main(["check", "--config", str(demo), *biased]) == 1
    out = capsys.readouterr()
    assert "violation" in out.out + out.err


def test_table_output_is_readable(
    demo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert (
        main(
            [
                "evaluate",
                "--config",
                str(demo),
                "--start",
                START.isoformat(),
                "--end",
                (START + timedelta(hours=3)).isoformat(),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "bpsn_auc" in out and "muslim" in out and "label coverage" in out


def test_check_refuses_an_unknown_model(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--config", str(demo), "--model", "toxicty"]) == 2
    assert "no model named toxicty" in capsys.readouterr().err


@pytest.mark.parametrize("args", [["--start", "2026-11-02", "--end", "2026-11-01"], ["--start", "inf"]])
def test_bad_time_range_is_an_error_not_a_traceback(demo: Path, args: list[str]) -> None:
    assert main(["evaluate", "--config", str(demo), *args]) == 2
