"""``fairwatch backfill``: history as OpenMetrics that promtool imports and a real Prometheus serves.

The reference values come from ``fairwatch evaluate --start T-1h --end T --format json`` - an explicit
range read whole - while the backfill evaluates each instant as the service does (scheduled windows,
the sealed panes of an epoch-timestamped SQLite log); the file is checked by prometheus_client's strict
OpenMetrics parser and by promtool, and the values are read back from Prometheus' HTTP API.
"""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import urllib.parse
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from monitor.cli import main
from monitor.outputs.prometheus.collector import STATE_CODES
from tests.servers import PrometheusServer, http_json, promtool_bin

# Whole hours, three of them evaluated; the log spans six hours before NOW.
NOW = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
FIRST = NOW - timedelta(hours=3)
INSTANTS = [FIRST, FIRST + timedelta(hours=1), FIRST + timedelta(hours=2)]


def _write_log(path: Path) -> None:
    """3,600 rows over six hours; group b is selected less often; epoch-second timestamps."""
    rng = np.random.default_rng(12)
    n = 3600
    ts = (NOW - timedelta(hours=6)).timestamp() + np.sort(rng.uniform(0, 6 * 3600, n))
    group = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    label = rng.random(n) < 0.3
    score = np.clip(0.3 + 0.4 * label - 0.15 * (group == "b") + rng.normal(0, 0.2, n), 0, 1).round(3)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE predictions (id INTEGER, ts REAL, score REAL, label INTEGER, grp TEXT)")
        conn.executemany(
            "INSERT INTO predictions VALUES (?, ?, ?, ?, ?)",
            zip(
                range(n), ts.tolist(), score.tolist(), label.astype(int).tolist(), group.tolist(), strict=True
            ),
        )


CONFIG = """\
models:
  - name: scorer
    source: {kind: sql, url: "sqlite:///predictions.db", table: predictions}
    columns: {id: id, timestamp: ts, score: score, label: label}
    groups: [{attribute: grp, kind: categorical, column: grp}]
    windows: [{name: 1h, length: 1h}]
    metrics: [disparate_impact, statistical_parity_difference, subgroup_auc, bpsn_auc,
              equal_opportunity_difference]
    min_samples: 20
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    _write_log(tmp_path / "predictions.db")
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def _iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _backfill(config: Path, output: Path, *extra: str) -> int:
    argv = ["backfill", "--config", str(config), "--start", _iso(INSTANTS[0]), "--end", _iso(INSTANTS[-1])]
    return main([*argv, "--output", str(output), *extra])


def _evaluate_json(config: Path, at: datetime, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    argv = ["evaluate", "--config", str(config), "--start", _iso(at - timedelta(hours=1)), "--end", _iso(at)]
    assert main([*argv, "--format", "json"]) == 0
    rows: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    assert rows
    return rows


def _query_at(prometheus: PrometheusServer, expr: str, at: datetime) -> dict[tuple[str, ...], float]:
    """Instant query at ``at``: {(metric label, group, reference, job): value}."""
    query = urllib.parse.urlencode({"query": expr, "time": at.timestamp()})
    answer = http_json(f"{prometheus.url}/api/v1/query?{query}")
    assert answer["status"] == "success", answer
    return {
        (
            r["metric"]["__name__"],
            r["metric"].get("metric", ""),
            r["metric"].get("group", ""),
            r["metric"].get("reference", ""),
            r["metric"]["job"],
        ): float(r["value"][1])
        for r in answer["data"]["result"]
    }


def _same(json_value: float | None, prometheus_value: float) -> bool:
    """JSON writes NaN and infinities as null; Prometheus keeps them."""
    if json_value is None:
        return not math.isfinite(prometheus_value)
    return json_value == prometheus_value  # float64 end to end: exact, not approximate


@pytest.mark.integration
def test_backfill_imports_into_prometheus_with_the_values_of_evaluate(
    config: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    history = tmp_path / "history.om"
    assert _backfill(config, history, "--label", "job=fairwatch") == 0
    assert "backfilled 3 evaluation(s) at 3 instant(s)" in capsys.readouterr().err

    tsdb = tmp_path / "tsdb"
    result = subprocess.run(
        [promtool_bin(), "tsdb", "create-blocks-from", "openmetrics", str(history), str(tsdb)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    prometheus = prometheus_factory("global: {scrape_interval: 1h}\n", tsdb_path=tsdb)

    checked = 0
    for at in INSTANTS:
        rows = _evaluate_json(config, at, capsys)
        values = _query_at(prometheus, '{__name__=~"fairwatch_.+", model="scorer", window="1h"}', at)
        for row in rows:
            key = (row["group"], row["reference"], "fairwatch")
            value = values[(f"fairwatch_{row['metric']}", "", *key)]
            assert _same(row["value"], value), (at, row, value)
            for field in ("ci_lower", "ci_upper", "fair_min", "fair_max"):
                companion = values[(f"fairwatch_metric_{field}", row["metric"], *key)]
                assert _same(row[field], companion), (at, row, field, companion)
            state = values[("fairwatch_metric_state", row["metric"], *key)]
            assert state == STATE_CODES[row["state"]], (at, row, state)
            checked += 1
    # 5 metrics x 3 groups (each against the rest) x 3 instants, not a vacuous loop
    assert checked == 45
    # between two instants Prometheus has no newer sample than the last instant's (5m lookback)
    later = INSTANTS[0] + timedelta(minutes=30)
    assert _query_at(prometheus, "fairwatch_disparate_impact", later) == {}
    # ... and the documented way to graph it carries each point to the next
    held = _query_at(prometheus, "last_over_time(fairwatch_disparate_impact[1h])", later)
    at_first = _query_at(prometheus, "fairwatch_disparate_impact", INSTANTS[0])
    assert len(held) == 3
    assert {key[2:]: v for key, v in held.items()} == {key[2:]: v for key, v in at_first.items()}


def test_output_is_strict_openmetrics_with_one_point_per_instant(config: Path, tmp_path: Path) -> None:
    history = tmp_path / "history.om"
    assert _backfill(config, history) == 0
    text = history.read_text(encoding="utf-8")
    assert text.endswith("\n# EOF\n")
    # the parser refuses interleaved families, split series and timestamps going backwards
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert "fairwatch_disparate_impact" in families and "fairwatch_group_rows" in families
    assert "fairwatch_alerts" not in families and "fairwatch_build" not in families
    expected = [t.timestamp() for t in INSTANTS]
    for family in families.values():
        points: dict[tuple[tuple[str, str], ...], list[float]] = {}
        for sample in family.samples:
            assert "job" not in sample.labels
            points.setdefault(tuple(sorted(sample.labels.items())), []).append(float(sample.timestamp))
        assert all(times == expected for times in points.values()), family.name


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--start", "2026-01-02", "--end", "2026-01-01"], "must be before --end"),
        (["--start", "2026-01-01", "--end", "2999-01-01"], "is in the future"),
        (["--start", "2026-01-01", "--end", "2026-01-02", "--step", "0s"], "--step must be positive"),
        (["--start", "2026-01-01", "--end", "2026-01-02", "--step", "1 hour"], "--step: not a duration"),
        (["--start", "2020-01-01", "--end", "2026-01-01", "--step", "1m"], "use a larger --step"),
        (
            ["--start", "2026-01-01", "--end", "2026-01-02", "--label", "job"],
            "--label 'job': write NAME=VALUE",
        ),
        (["--start", "2026-01-01", "--end", "2026-01-02", "--model", "nope"], "--model: no model named nope"),
    ],
)
def test_bad_arguments_are_named_without_a_traceback(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    output = tmp_path / "history.om"
    assert main(["backfill", "--config", str(config), *argv, "--output", str(output)]) == 2
    err = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
    assert message in err
    assert "Traceback" not in err
    assert not output.exists()


@pytest.mark.parametrize("where", ["a directory", "in no directory"])
def test_an_output_that_cannot_be_a_file_is_named_before_evaluating(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    # was 'Is a directory: .../.out.<pid>.tmp' after every evaluation, naming the temporary file
    base = tmp_path / "target"
    base.mkdir()
    output = base / "out"
    expected = f"--output {output} is a directory"
    if where == "a directory":
        output.mkdir()
    else:
        output = base / "missing" / "history.om"
        expected = f"--output {output}: no directory {output.parent}"
    argv = ["backfill", "--config", str(config), "--start", "2026-01-01", "--end", "2026-01-02"]
    assert main([*argv, "--output", str(output)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert expected in err and "backfill" not in err.split("config error")[0]  # no progress bar drawn
    assert sorted(p.name for p in base.rglob("*")) == (["out"] if where == "a directory" else [])


def test_a_label_fairwatch_sets_itself_is_refused(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "history.om"
    assert _backfill(config, output, "--label", "group=x") == 2
    assert "--label group: fairwatch's own label" in " ".join(capsys.readouterr().err.split())
    assert not output.exists()


def test_a_failing_evaluation_stops_the_run_and_writes_nothing(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config.write_text(CONFIG.replace("table: predictions", "table: missing"), encoding="utf-8")
    output = tmp_path / "history.om"
    output.write_text("an older backfill\n", encoding="utf-8")
    assert _backfill(config, output) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"model scorer at {_iso(INSTANTS[0])}" in err
    assert "missing" in err
    assert output.read_text(encoding="utf-8") == "an older backfill\n"  # replaced only when complete
    assert list(tmp_path.glob(".history.om.*")) == []


def _device(folder: Path) -> tuple[Path, str]:
    """A character device of the test's own (a copy of /dev/null's numbers: never the real one, which an
    output renamed over would turn into a regular file for the whole machine), or, where mknod is not
    allowed, a Unix socket: neither is a regular file."""
    import os
    import socket
    import stat

    path = folder / "device"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        return path, "a character device"
    except PermissionError:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
        return path, "a socket"


@pytest.mark.parametrize("kind", ["fifo", "device", "link to a fifo"])
def test_an_output_that_is_no_regular_file_is_refused_and_left_alone(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """Written beside and renamed over, a device became a regular file (as root /dev/full did), a FIFO
    was replaced and its reader hung, a link was replaced and its target never written - all exit 0."""
    import os
    import stat

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    what = "a FIFO"
    if kind == "device":
        output, what = _device(tmp_path)
    elif kind == "link to a fifo":
        output = tmp_path / "link"
        output.symlink_to(fifo)
    else:
        output = fifo
    mode = os.lstat(output).st_mode
    assert _backfill(config, output) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"is {what}: fairwatch writes regular files only" in err
    assert os.lstat(output).st_mode == mode  # untouched
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symbolic_link_is_followed_and_kept(config: Path, tmp_path: Path, dangling: bool) -> None:
    target = tmp_path / "store" / "history.om"
    target.parent.mkdir()
    if not dangling:
        target.write_text("an older backfill\n", encoding="utf-8")
    link = tmp_path / "latest.om"
    link.symlink_to(target)
    assert _backfill(config, link) == 0
    assert link.is_symlink() and link.resolve() == target  # the link kept...
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# HELP") and text.endswith("# EOF\n")  # ...and its target written
    assert sorted(p.name for p in target.parent.iterdir()) == ["history.om"]


def test_ctrl_c_ends_cleanly_and_says_nothing_was_written(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in the middle of a backfill: no traceback, exit status 130, the output file (written only
    once complete) left as it was, and the message says so."""
    import monitor.cli.backfill as cli_backfill

    history = tmp_path / "history.om"
    history.write_text("an earlier backfill\n", encoding="utf-8")
    real = cli_backfill.backfill
    seen: list[str] = []

    def interrupted(*args: Any, advance: Callable[[str], None], **kwargs: Any) -> Any:
        def once(description: str) -> None:
            seen.append(description)
            advance(description)
            raise KeyboardInterrupt  # what SIGINT raises in the main thread

        return real(*args, advance=once, **kwargs)

    monkeypatch.setattr(cli_backfill, "backfill", interrupted)
    capsys.readouterr()
    assert _backfill(config, history) == 130
    err = capsys.readouterr().err
    assert seen and "Traceback" not in err
    assert f"interrupted: nothing was written to {history}" in " ".join(err.split())
    assert history.read_text(encoding="utf-8") == "an earlier backfill\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") and "history" in p.name]


def test_backfill_fills_the_services_kept_history(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``server.history.directory`` the backfilled evaluations are the history a (re)started
    service charts: read back, each point is the value ``fairwatch evaluate`` gives at that instant."""
    from monitor.service.history import History
    from monitor.service.history_store import HistoryStore

    config.write_text(config.read_text(encoding="utf-8") + "server:\n  history: {size: 2, directory: kept}\n")
    assert _backfill(config, tmp_path / "history.om") == 0
    history = History(2, HistoryStore.open(str(tmp_path / "kept")))
    assert history.load(["scorer"]) == 2  # the newest two of three instants: the kept size
    assert history.times("scorer") == tuple(INSTANTS[1:])
    checked = 0
    for at in INSTANTS[1:]:
        for row in _evaluate_json(config, at, capsys):
            (series,) = history.series(
                "scorer", where={"metric": [row["metric"]], "group": [row["group"]], "window": ["1h"]}
            )
            point = series.times.index(at)
            for column, name in enumerate(("value", "ci_lower", "ci_upper", "fair_min", "fair_max")):
                assert _same(row[name], float(series.values[point, column])), (at, row, name)
            assert series.states[point] == row["state"]
            checked += 1
    assert checked == 30  # 5 metrics x 3 groups x 2 instants
