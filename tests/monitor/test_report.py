"""``fairwatch report`` and ``check --report``: one self-contained HTML file whose tables say what
``fairwatch evaluate`` says; :class:`monitor.outputs.html.report.Report` in a notebook."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import main
from monitor.cli.demo.run import write_demo_config, write_demo_log
from monitor.config import load_settings
from monitor.core.text import number
from monitor.evaluation.evaluators import build_evaluators
from monitor.outputs.html.report import build_report, instants
from monitor.outputs.json import evaluation_rows

START = datetime(2026, 11, 1, 0, 0, tzinfo=UTC)
END = START + timedelta(hours=6)


@pytest.fixture(scope="module")
def demo_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's log (bias against muslim from 1 h to 6 h after START) and config."""
    folder = tmp_path_factory.mktemp("report")
    write_demo_log(
        folder / "predictions.db",
        start=START,
        history=timedelta(hours=2),
        future=timedelta(hours=8),
        rows_per_hour=1500,
    )
    return write_demo_config(folder, port=0)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", *args], capture_output=True, text=True, timeout=300, check=False
    )


def evaluate_json(config: Path, at: datetime) -> list[dict[str, Any]]:
    """What the service would have served at ``at``: each model evaluated then, as JSON rows
    (the report's job is to draw these values, not to compute them)."""
    settings = load_settings(config)
    evaluators = build_evaluators(settings)
    try:
        return [dict(r) for r in evaluation_rows([ev.evaluate(at) for ev in evaluators.values()])]
    finally:
        for ev in evaluators.values():
            ev.source.close()
            if ev.label_source is not None:
                ev.label_source.close()


def cell(html: str, window: str, metric: str, group: str) -> str:
    """The text of one table cell (value, interval, state) of the report's ``window``."""
    section = html.split(f'id="m-toxicity-{window}-{metric}"')[0]  # the tables come before the cards
    table = section.rsplit('<table class="matrix">', 1)[1]
    groups = re.findall(r'<th scope="col"><span class="attr">[^<]*</span> ([^<]*)<', table)
    row = re.search(rf'<a href="#m-toxicity-{window}-{metric}">{metric}</a>.*?</tr>', table, re.S)
    assert row, metric
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0))
    return unescape(re.sub(r"<[^>]+>", " ", cells[groups.index(group)]))


def test_the_report_file_stands_alone_and_says_what_evaluate_says(demo_config: Path, tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    out = cli(
        "report",
        "--config",
        str(demo_config),
        "--start",
        START.isoformat(),
        "--end",
        END.isoformat(),
        "--step",
        "2h",
        "-o",
        str(target),
        "--model",
        "toxicity",
    )
    assert out.returncode == 0, out.stderr
    assert "3 evaluation(s) of 1 model(s)" in out.stderr
    # piped, not a terminal: no spinner, but a plain progress line (at most every 5 s), never silent
    progress = out.stderr.split("wrote ")[0]
    assert "toxicity" in progress and "\x1b" not in progress, out.stderr
    # ... and a line as soon as another model's evaluations begin
    both = cli(
        "report", "--config", str(demo_config), "--end", END.isoformat(), "-o", str(tmp_path / "b.html")
    )
    assert both.returncode == 0, both.stderr
    assert "toxicity: evaluation" in both.stderr and "moderation: evaluation" in both.stderr, both.stderr
    html = target.read_text()
    # one file: no script, no stylesheet or image to fetch
    assert "<script" not in html and not re.search(r'(src|href)="(https?:|/)', html)
    assert "<style>" in html and "Model toxicity" in html and "Power" in html and "Configuration" in html
    assert "sql table 'predictions'" in unescape(html)  # the config summary names the source
    # its last evaluation's values are those of fairwatch evaluate at END, window 3h
    rows = evaluate_json(demo_config, END)
    checked = 0
    for r in rows:
        if (
            r["model"] != "toxicity"
            or r["window"] != "3h"
            or r["metric"] not in ("disparate_impact", "bpsn_auc")
        ):
            continue
        text = cell(html, "3h", r["metric"], r["group"])
        value = "-" if r["value"] is None else number(r["value"])
        assert text.split()[0] == value and r["state"].replace("_", " ") in text, (r, text)
        checked += 1
    assert checked == 18  # two metrics, nine groups
    assert "violation" in cell(html, "3h", "bpsn_auc", "muslim")
    # the history: three points per group, the bias visible as a violation in the timeline
    card = html.split('id="m-toxicity-3h-bpsn_auc"')[1].split("</section>")[0]
    assert card.count('class="state-violation"><title>muslim') >= 1


def test_check_writes_the_report_of_its_evaluation(demo_config: Path, tmp_path: Path) -> None:
    target = tmp_path / "check.html"
    out = cli(
        "check",
        "--config",
        str(demo_config),
        "--start",
        (END - timedelta(hours=3)).isoformat(),
        "--end",
        END.isoformat(),
        "--report",
        str(target),
        "--format",
        "json",
    )
    assert out.returncode == 1  # the bias is a violation
    html = target.read_text()
    assert "Model toxicity" in html and "Model moderation" in html
    assert "violation" in cell(html, "range", "bpsn_auc", "muslim")
    # two models with the same window: every link goes to one element of its own model
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1][:5]
    links = set(re.findall(r'href="#([^"]+)"', html))
    assert links and links <= set(ids)
    assert "m-moderation-range-" in html and "m-toxicity-range-" in html


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--step", "0s"], "must be positive"),
        (["--step", "soon"], "--step"),
        (["--start", "2026-11-02T00:00:00Z", "--end", "2026-11-01T00:00:00Z"], "must be before --end"),
        (["--model", "nope"], "no model named nope"),
        (["--step", "1h"], "--step needs --start"),
        (["--start", "2026-01-01T00:00:00Z", "--end", "2026-11-01T00:00:00Z", "--step", "1m"], "--step"),
        (  # a step longer than the period once wrote a report of no evaluation, exit 0
            ["--start", "2026-11-01T04:00:00Z", "--end", "2026-11-01T05:00:00Z", "--step", "2h"],
            "--step 2h is longer than the period from --start to --end (1h)",
        ),
        (["--end", "0001-01-01T00:30:00Z"], "would begin before the year 1"),  # was an OverflowError
    ],
)
def test_bad_report_arguments_are_one_line_errors(
    demo_config: Path, tmp_path: Path, args: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(["report", "--config", str(demo_config), "-o", str(tmp_path / "x.html"), *args])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2 and error in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


def test_a_report_in_a_notebook(demo_config: Path) -> None:
    settings = load_settings(demo_config)
    report = build_report(
        settings, at=instants(END - timedelta(hours=2), END, timedelta(hours=1)), models=["toxicity"]
    )
    frame = report.to_pandas()
    windows = {w.name for w in settings.models[0].windows}
    assert set(frame["window"]) == windows and frame["evaluated_at"].nunique() == 2
    rows = evaluate_json(demo_config, END)
    expected = {(r["window"], r["metric"], r["group"]): r["value"] for r in rows if r["model"] == "toxicity"}
    last = frame[frame["evaluated_at"] == frame["evaluated_at"].max()]
    assert len(last) == len(expected)
    for r in last.itertuples():
        want = expected[(r.window, r.metric, r.group)]
        assert (want is None and math.isnan(r.value)) or r.value == want
    html = report._repr_html_()
    assert html.startswith('<div class="fairwatch-report"><style>') and '<table class="matrix">' in html


def test_the_notebook_api_is_the_package_and_the_old_path_still_works() -> None:
    """The README's ``from monitor import load_settings, build_report, instants``; the path the README
    gave before the service was laid out in layers (``monitor.report``) works, with a warning."""
    code = (
        "import sys, warnings\n"
        "import monitor\n"
        "assert 'monitor.outputs.html.report' not in sys.modules  # loaded on first use, not by import monitor\n"
        "from monitor import build_report, instants, load_settings, Report\n"
        "from monitor.config import load_settings as config_load\n"
        "from monitor.outputs.html import report\n"
        "assert (build_report, instants, load_settings, Report) == "
        "(report.build_report, report.instants, config_load, report.Report)\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from monitor.report import build_report as old, instants as old_instants\n"
        "assert old is build_report and old_instants is instants\n"
        "assert [w.category for w in caught] == [DeprecationWarning] * 2, caught\n"
        "try:\n"
        "    monitor.no_such_name\n"
        "except AttributeError as exc:\n"
        "    assert 'no_such_name' in str(exc)\n"
        "else:\n"
        "    raise AssertionError('an unknown name must not resolve')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


def test_ctrl_c_leaves_an_earlier_report_whole_and_says_so(
    demo_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.html"
    target.write_text("an earlier report", encoding="utf-8")
    write_text = Path.write_text

    def interrupted(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        write_text(self, data[: len(data) // 2], *args, **kwargs)
        raise KeyboardInterrupt  # Ctrl-C while the page is being written

    monkeypatch.setattr(Path, "write_text", interrupted)
    args = ["report", "--config", str(demo_config), "--end", END.isoformat(), "-o", str(target)]
    assert main([*args, "--model", "toxicity"]) == 130
    err = " ".join(capsys.readouterr().err.split())
    assert "Traceback" not in err and f"interrupted: no report was written to {target}" in err
    assert target.read_text(encoding="utf-8") == "an earlier report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left


def test_evaluate_as_csv_is_the_json_rows(demo_config: Path) -> None:
    """``fairwatch evaluate --format csv`` (a real process): the rows of ``--format json``, in the
    same order, every number the same float."""
    import csv
    import io

    from monitor.outputs.csv_rows import COLUMNS

    span = ["--start", (END - timedelta(hours=3)).isoformat(), "--end", END.isoformat()]
    args = ["evaluate", "--config", str(demo_config), *span, "--model", "toxicity"]
    out = cli(*args, "--format", "csv")
    assert out.returncode == 0, out.stderr
    table = list(csv.DictReader(io.StringIO(out.stdout)))
    answer = cli(*args, "--format", "json")
    assert answer.returncode == 0, answer.stderr
    rows = json.loads(answer.stdout)
    assert tuple(table[0]) == COLUMNS and len(table) == len(rows) > 0
    for got, want in zip(table, rows, strict=True):
        for column in COLUMNS:
            value = want[column]
            if value is None:
                assert got[column] == "", (column, got)
            elif isinstance(value, float):
                assert float(got[column]) == value, (column, got)
            else:
                assert got[column] == str(value), (column, got)


def test_no_csv_cell_is_a_formula() -> None:
    """A group value a spreadsheet would run as a formula is quoted with ``'`` (CSV injection);
    numbers never are."""
    import csv
    import io

    from monitor.outputs.csv_rows import rows_csv

    formula = '=HYPERLINK("http://x")'
    rows = [
        {"model": "m", "group": formula, "value": -0.25, "fair_max": None, "n_group": 7},
        {"model": "m", "group": "-1", "value": 0.1 + 0.2, "fair_max": 1.25, "n_group": 0},
        {"model": "m", "group": "@sum", "value": None, "fair_max": None, "n_group": 0},
    ]
    table = list(csv.DictReader(io.StringIO(rows_csv(rows))))
    assert [r["group"] for r in table] == ["'" + formula, "'-1", "'@sum"]
    assert table[0]["value"] == "-0.25" and float(table[1]["value"]) == 0.1 + 0.2
    assert table[0]["fair_max"] == "" and table[2]["value"] == "" and table[1]["n_group"] == "0"


def test_a_report_as_csv_holds_every_evaluations_values(demo_config: Path, tmp_path: Path) -> None:
    """``fairwatch report --format csv``: the judged values of each evaluation of the period (the
    instants told apart by ``evaluated_at``), each equal to that instant's evaluation."""
    import csv

    target = tmp_path / "values.csv"
    span = ["--start", (END - timedelta(hours=4)).isoformat(), "--end", END.isoformat(), "--step", "2h"]
    out = cli(
        "report",
        "--config",
        str(demo_config),
        *span,
        "--format",
        "csv",
        "-o",
        str(target),
        "--model",
        "toxicity",
    )
    assert out.returncode == 0, out.stderr
    with target.open(newline="", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    instants = sorted({r["evaluated_at"] for r in table})
    assert len(instants) == 2  # every --step after --start, up to --end
    for at in (END - timedelta(hours=2), END):
        stamp = at.isoformat().replace("+00:00", "Z")
        got = {
            (r["window"], r["metric"], r["group"]): r["value"] for r in table if r["evaluated_at"] == stamp
        }
        want = {
            (r["window"], r["metric"], r["group"]): r["value"]
            for r in evaluate_json(demo_config, at)
            if r["model"] == "toxicity"
        }
        assert got.keys() == want.keys() and got
        assert all((float(got[k]) if got[k] else None) == want[k] for k in want)
