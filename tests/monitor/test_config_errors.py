"""Config mistakes are answered with the fix: the key meant, the metric meant, the file and line."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from metrics_core import REGISTRY
from monitor.cli import main
from monitor.cli.demo.run import write_demo_config, write_demo_log
from monitor.config import load_settings
from monitor.core.errors import ConfigError

# line numbers below are counted by hand in this text
BASE = """\
models:
  - name: toxicity
    source: {kind: sql, url: "sqlite:///p.db", table: predictions}
    labels:
      source: {kind: sql, url: "sqlite:///p.db", table: labels}
      columns: {id: id, label: label}
    groups: [{attribute: identity, kind: indicator, columns: [a, b]}]
    threshold: 0.5
alerts:
  for: 5m
server: {port: 9810}
"""


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    return str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "line", "where", "meant"),
    [
        ("models:", "model:", 1, "model", "models"),
        ("    threshold:", "    thresold:", 8, "models[0].thresold", "threshold"),
        ("table: predictions}", "tabel: predictions}", 3, "models[0].source.tabel", "table"),
        ("{id: id, label: label}", "{id: id, lable: label}", 6, "models[0].labels.columns.lable", "label"),
        ("  for: 5m", "  fore: 5m", 10, "alerts.fore", "for"),  # the key as written, not pydantic's for_
        ("{port: 9810}", "{prot: 9810}", 11, "server.prot", "port"),
        ("kind: indicator,", "kind: indicator, colums: [c],", 7, "models[0].groups[0].colums", "columns"),
    ],
)
def test_a_misspelt_key_names_the_key_meant(
    tmp_path: Path, old: str, new: str, line: int, where: str, meant: str
) -> None:
    assert old in BASE
    error = _error(tmp_path, BASE.replace(old, new, 1))
    assert (
        f"bad.yaml:{line}: {where}: unknown key `{where.rsplit('.', 1)[-1]}` (did you mean `{meant}`?)"
        in error
    )
    assert "Extra inputs are not permitted" not in error


def test_a_key_like_no_other_lists_the_keys_of_its_place(tmp_path: Path) -> None:
    error = _error(tmp_path, BASE.replace("server: {port: 9810}", "server: {zzz: 1}"))
    assert "bad.yaml:11: server.zzz: unknown key `zzz`; the keys here are: host, port" in error


def test_the_base_config_is_valid(tmp_path: Path) -> None:
    """Each error above comes from the one change made to it."""
    path = tmp_path / "good.yaml"
    path.write_text(BASE)
    assert load_settings(path).models[0].threshold == 0.5


def test_unknown_metrics_in_config_and_options(tmp_path: Path) -> None:
    text = BASE.replace("    threshold: 0.5\n", "    threshold: 0.5\n    metrics: [disparate_impcat]\n")
    error = _error(tmp_path, text)
    assert (
        "bad.yaml:9: models[0].metrics: unknown metric 'disparate_impcat' (did you mean 'disparate_impact'?)"
        in error
    )
    listed = [name for name in REGISTRY if f"{name}," in error or f"{name} " in error]
    assert listed == [], "the message lists metrics beyond the one meant"
    text = BASE.replace("    threshold: 0.5\n", "    fair_ranges: {bpsn: [0.7, null]}\n")
    assert "unknown metric 'bpsn' (did you mean 'bpsn_auc'?)" in _error(tmp_path, text)
    text = BASE.replace("    threshold: 0.5\n", "    task: recommender\n    options: {kk: 5}\n")
    assert "(did you mean `k`?)" in _error(tmp_path, text)


def test_broken_yaml_names_the_file_line_and_column(tmp_path: Path) -> None:
    text = BASE.replace("  for: 5m", "  for: [5m")
    with pytest.raises(yaml.MarkedYAMLError) as parsed:  # where PyYAML itself stops
        yaml.safe_load(text)
    mark = parsed.value.problem_mark
    assert mark is not None and mark.line + 1 == 11  # the flow list opened on line 10 runs into line 11
    head, shown, caret = _error(tmp_path, text).splitlines()
    where = f"{tmp_path / 'bad.yaml'}:11: not valid YAML (line 11, column {mark.column + 1}):"
    assert head.startswith(where) and "line 10" in head  # where the unclosed list began
    assert shown == "    server: {port: 9810}" and caret == "    " + " " * mark.column + "^"


def test_a_yaml_tag_error_names_the_file_not_a_unicode_string(tmp_path: Path) -> None:
    error = _error(tmp_path, BASE.replace("threshold: 0.5", "threshold: !!python/object:os.system x"))
    assert "<unicode string>" not in error
    assert error.startswith(f"{tmp_path / 'bad.yaml'}:8: not valid YAML (line 8, column 16):")
    assert error.splitlines()[2] == " " * (4 + 15) + "^"


def test_a_misspelt_model_names_the_model_meant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_demo_log(tmp_path / "predictions.db", start=datetime(2026, 11, 1, tzinfo=UTC), rows_per_hour=100)
    config = write_demo_config(tmp_path, port=0)
    assert main(["check", "--config", str(config), "--model", "toxicty"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "no model named toxicty" in err and "(did you mean `toxicity`?)" in err
    assert "its models are: toxicity, moderation" in err
    assert main(["power", "--config", str(config), "--effect", "disparate_impcat=0.7"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "unknown metric 'disparate_impcat' (did you mean 'disparate_impact'?)" in err
