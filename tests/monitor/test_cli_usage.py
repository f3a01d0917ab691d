"""The command line as a new user meets it: help for everything, bad arguments refused in one line,
tables whole when piped, a closed pipe no traceback."""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from metrics_core import REGISTRY
from monitor.cli import main
from monitor.cli.demo.run import write_demo_config, write_demo_log
from monitor.cli.parser import build_parser
from monitor.cli.terminal import EXIT_BROKEN_PIPE

START = datetime(2026, 11, 1, tzinfo=UTC)


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("demo")
    write_demo_log(d / "predictions.db", start=START, rows_per_hour=1000)
    return write_demo_config(d, port=0)


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_every_subcommand_has_a_description_an_example_and_help_for_every_option(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = _subcommands()[command]
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert parser.description and parser.description.split()[0] in text
    examples = text.split("examples:\n", 1)[1]
    assert f"fairwatch {command}" in examples
    # each option's block: its line and the indented lines of its help
    blocks = re.split(r"\n  (?=-)", text.split("options:", 1)[1].split("examples:", 1)[0])
    for action in parser._actions:
        if not action.option_strings or action.dest == "help":
            continue
        assert action.help, f"{command} {action.option_strings[0]} has no help"
        block = " ".join(next(b for b in blocks if b.startswith(action.option_strings[0])).split())
        if action.default not in (None, False, []):  # a default worth knowing is printed with the option
            assert f"(default: {action.default})" in block, f"{command}: {block}"
        else:
            assert "(default: None)" not in block and "(default: False)" not in block, block


def test_the_top_level_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for command in _subcommands():
        assert re.search(rf"^\s+{command}\s+\S", text, re.M), command


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--speed", "-5"], "argument --speed: must be above 0, got -5"),
        (["demo", "--speed", "0"], "argument --speed: must be above 0, got 0"),
        (["demo", "--speed", "fast"], "argument --speed: not a number: 'fast'"),
        # once an OverflowError from the simulated clock, a traceback
        (["demo", "--speed", "1e308"], "argument --speed: must be at most 86400, got 1e308"),
        (["demo", "--duration", "-1"], "argument --duration: must be at least 0, got -1"),
        (["demo", "--duration", "nan"], "argument --duration: must be a finite number"),
        (["demo", "--port", "70000"], "argument --port: a port lies between 0 and 65535, got 70000"),
        (["demo", "--port", "http"], "argument --port: not a port number: 'http'"),
        (["power", "--config", "x.yaml", "--power", "0"], "argument --power: must be above 0"),
        (["power", "--config", "x.yaml", "--power", "1"], "argument --power: must lie between 0 and 1"),
        (["evaluate", "--config", "x.yaml", "--start", "yesterday"], "argument --start: not a time"),
        (["evaluate", "--config", "x.yaml", "--format", "xml"], "argument --format: invalid choice: 'xml'"),
        (["evaluate"], "the following arguments are required: --config"),
        (["evalute", "--config", "x.yaml"], "invalid choice: 'evalute'"),
    ],
)
def test_a_bad_argument_is_one_line_naming_it(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_files_that_cannot_be_written_are_errors_not_tracebacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rules", "-o", str(tmp_path / "no" / "such" / "dir" / "rules.yml")]) == 1
    err = capsys.readouterr().err
    assert "No such file or directory" in err and "rules.yml" in err


def test_the_real_cli_refuses_a_negative_speed_without_a_traceback() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "demo", "--speed", "-5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == (
        "fairwatch demo: error: argument --speed: must be above 0, got -5"
    )
    assert "Traceback" not in out.stderr


def _piped(argv: list[str], **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "monitor.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def _into_closed_pipe(argv: list[str]) -> subprocess.Popen[str]:
    """The command writing into a pipe whose reader is already gone (``| head`` that ended first):
    closed before the process starts, so its first write fails however busy the machine is."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "monitor.cli", *argv], stdout=write_end, stderr=subprocess.PIPE, text=True
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("columns", [80, 120])
def test_tables_are_whole_and_plain_when_piped(
    demo: Path, columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Output that is not a terminal (a pipe, a file, pytest's capture), whatever COLUMNS says: no colour
    codes, no cut name, one row per line."""
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    assert "\x1b[" not in out and "…" not in out
    assert [_cells(row)[0] for row in _rows(out)] == list(REGISTRY)
    if columns == 80:
        window = [
            "--start",
            (START + timedelta(hours=2)).isoformat(),
            "--end",
            (START + timedelta(hours=4)).isoformat(),
        ]
        assert main(["evaluate", "--config", str(demo), *window]) == 0
        out = capsys.readouterr().out
        assert "\x1b[" not in out and "…" not in out
        cells = [_cells(row) for row in _rows(out)]
        assert {"bpsn_auc", "multiclass_statistical_parity", "equal_opportunity_difference"} <= {
            c[2] for c in cells
        }
        assert "psychiatric_or_mental_illness" in {c[1] for c in cells}


def _rows(table: str) -> list[str]:
    return [line for line in table.splitlines() if line.startswith("│")]


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip("│").split("│")]


def test_an_insufficient_value_shows_its_reason(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With 1,000 rows an hour, a 20-minute window leaves the small groups below min_samples (50): the
    table says so with the value's support, and a group without positives says what is missing."""
    end = START + timedelta(hours=2)
    window = ["--start", (end - timedelta(minutes=20)).isoformat(), "--end", end.isoformat()]
    assert main(["evaluate", "--config", str(demo), "--model", "toxicity", *window]) == 0
    out = capsys.readouterr().out
    states = [line for line in out.splitlines() if "insufficient_data" in line]
    assert states
    for line in states:
        assert re.search(r"insufficient_data \((support \d+ < min_samples 50|[a-z][^)]+)\)", line), line
    assert any(re.search(r"support \d+ < min_samples 50", line) for line in states)


def test_a_closed_pipe_is_no_traceback(demo: Path) -> None:
    """``fairwatch ... | head``: the reader is gone before fairwatch writes (or after the first lines of
    a long output); fairwatch ends quietly with a closed pipe's status."""
    window = ["--start", START.isoformat(), "--end", (START + timedelta(hours=3)).isoformat()]
    commands = [
        ["--help"],
        ["demo", "--help"],
        ["metrics"],
        ["metrics", "--format", "json"],
        ["metrics", "--format", "markdown"],
        ["rules"],
        ["dashboard"],
        ["evaluate", "--config", str(demo), *window],
    ]
    procs = [_into_closed_pipe(argv) for argv in commands]
    midway = _piped(["evaluate", "--config", str(demo), "--format", "json", *window])
    assert midway.stdout is not None
    first = [midway.stdout.readline() for _ in range(3)]
    midway.stdout.close()
    assert first[0] == "[\n"
    for argv, proc in [*zip(commands, procs, strict=True), (["evaluate", "--format", "json"], midway)]:
        _, err = proc.communicate(timeout=120)
        assert "Traceback" not in err and "Exception ignored" not in err, (argv, err)
        # argparse itself ignores a closed pipe while printing help
        expected = 0 if "--help" in argv else EXIT_BROKEN_PIPE
        assert proc.returncode == expected, (argv, proc.returncode, err)


def test_a_busy_port_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        status = main(["demo", "--dir", str(tmp_path / "demo"), "--port", str(port), "--duration", "1"])
    err = " ".join(capsys.readouterr().err.split())
    assert status == 1 and "Traceback" not in err
    assert f"error: cannot serve on 127.0.0.1:{port}: Address already in use (choose another --port)" in err


@pytest.mark.parametrize(
    ("host", "refusal", "expected"),
    [
        # TEST-NET-1 (RFC 5737): an address of no machine here
        ("192.0.2.1", None, "cannot serve on 192.0.2.1:0: Cannot assign requested address (check --host)"),
        # a name that does not resolve (the lookup's answer, without asking a resolver)
        (
            "nonsense.invalid",
            socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
            "cannot serve on nonsense.invalid:0: Name or service not known (check --host)",
        ),
    ],
)
def test_a_bad_host_is_one_line_naming_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    host: str,
    refusal: OSError | None,
    expected: str,
) -> None:
    # was 'Unknown error -2 (choose another --port)' for a name, and sent the reader to the port
    if refusal is not None:

        def refuse(*args: object, **kwargs: object) -> None:
            raise refusal

        monkeypatch.setattr(socket, "getaddrinfo", refuse)
    status = main(["demo", "--dir", str(tmp_path / "demo"), "--host", host, "--port", "0", "--duration", "1"])
    err = " ".join(capsys.readouterr().err.split())
    assert status == 1 and "Traceback" not in err
    assert f"error: {expected}" in err
    assert not (tmp_path / "demo").exists()  # said before the log is written
