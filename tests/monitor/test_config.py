"""Config loading: the service.md sketch loads as written, errors name the key and line."""

from __future__ import annotations

import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from monitor.config import load_settings, parse_duration
from monitor.core.errors import ConfigError

SKETCH = """\
models:
  - name: toxicity
    source:
      kind: sql                         # sql | files
      url: sqlite:///predictions.db     # any SQLAlchemy URL; postgresql+psycopg://... tested against a real server
      table: predictions                # or query: "SELECT ..."
    labels:                             # optional: labels arriving later, joined on the id
      source: {kind: sql, url: sqlite:///predictions.db, table: labels}
      join_on: id
    columns: {id: id, timestamp: ts, score: score, label: label}
    threshold: 0.5
    groups:
      - attribute: identity
        kind: indicator
        columns: [male, female, homosexual_gay_or_lesbian, christian, jewish, muslim, black, white,
                  psychiatric_or_mental_illness]
      - attribute: race
        kind: categorical
        column: race
        reference: Caucasian            # or: rest
    windows: [{name: 1h, length: 1h}, {name: 24h, length: 24h}]
    label_delay: 0s
    interval: 60s
    metrics: [subgroup_auc, bpsn_auc, bnsp_auc, negative_aeg, positive_aeg, disparate_impact,
              statistical_parity_difference, equal_opportunity_difference, false_positive_rate_difference]
    fair_ranges: {disparate_impact: [0.8, 1.25]}
    min_samples: 100
alerts:
  for: 5m
  confidence: 0.95
  alertmanager: {url: http://alertmanager:9093}
server: {host: 0.0.0.0, port: 9810}
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "fairwatch.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def test_the_service_md_sketch_loads_as_written(tmp_path: Path) -> None:
    s = load_settings(write(tmp_path, SKETCH))
    m = s.models[0]
    assert m.name == "toxicity"
    assert [w.length for w in m.windows] == [timedelta(hours=1), timedelta(hours=24)]
    assert m.interval == timedelta(seconds=60)
    assert s.alerts.for_ == timedelta(minutes=5)
    assert m.groups[1].reference == "Caucasian"
    assert m.fair_ranges == {"disparate_impact": (0.8, 1.25)}
    # sqlite paths are relative to the config file, as a user expects
    assert m.source.url == f"sqlite:///{(tmp_path / 'predictions.db').resolve()}"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("5m", 300),
        ("24h", 86400),
        ("800d", 800 * 86400),
        ("1w", 604800),
        (45, 45),
        ("250ms", 0.25),
    ],
)
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize("bad", ["5 minutes", "-1s", "", "1y", True, "99999999999d", 1e300])
def test_bad_durations_are_refused(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_a_duration_beyond_timedelta_names_its_key(tmp_path: Path) -> None:
    # once an OverflowError from timedelta, which pydantic does not catch: a traceback from validate
    bad = SKETCH.replace("interval: 60s", "interval: 99999999999d")
    with pytest.raises(ConfigError, match=r"models\[0\]\.interval.*at most 999,999,999 days"):
        load_settings(write(tmp_path, bad))


def test_error_names_the_key_and_line(tmp_path: Path) -> None:
    bad = SKETCH.replace("interval: 60s", "interval: sixty")
    with pytest.raises(ConfigError) as info:
        load_settings(write(tmp_path, bad))
    msg = str(info.value)
    assert "models[0].interval" in msg
    line = next(i for i, text in enumerate(bad.splitlines(), 1) if "interval: sixty" in text)
    assert f":{line}:" in msg


def test_unknown_key_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"models\[0\]\.thresold"):
        load_settings(write(tmp_path, SKETCH.replace("threshold: 0.5", "thresold: 0.5")))


def test_unknown_metric_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="disparate_impakt"):
        load_settings(write(tmp_path, SKETCH.replace("metrics: [subgroup_auc", "metrics: [disparate_impakt")))


def test_env_interpolation_and_missing_variable(tmp_path: Path) -> None:
    text = SKETCH.replace(
        "url: sqlite:///predictions.db     #", "url: postgresql+psycopg://u:${DB_PASSWORD}@db/x  #"
    )
    s = load_settings(write(tmp_path, text), environ={"DB_PASSWORD": "s3cret"})
    assert s.models[0].source.url == "postgresql+psycopg://u:s3cret@db/x"
    with pytest.raises(ConfigError, match=r"models\[0\]\.source\.url: environment variable DB_PASSWORD"):
        load_settings(write(tmp_path, text), environ={})
    text_default = text.replace("${DB_PASSWORD}", "${DB_PASSWORD:-fallback}")
    assert "fallback" in (load_settings(write(tmp_path, text_default), environ={}).models[0].source.url or "")


def test_sql_source_needs_exactly_one_of_table_or_query(tmp_path: Path) -> None:
    text = SKETCH.replace(
        "table: predictions                #", 'query: "SELECT 1"\n      table: predictions #'
    )
    with pytest.raises(ConfigError, match="exactly one of `table` or `query`"):
        load_settings(write(tmp_path, text))


def test_several_models_and_duplicate_names(tmp_path: Path) -> None:
    two = SKETCH.replace("models:\n", "models:\n", 1)
    body = SKETCH.split("alerts:")[0].removeprefix("models:\n")
    two = (
        "models:\n"
        + body
        + body.replace("name: toxicity", "name: spam")
        + "alerts:"
        + SKETCH.split("alerts:")[1]
    )
    assert [m.name for m in load_settings(write(tmp_path, two)).models] == ["toxicity", "spam"]
    dup = "models:\n" + body + body + "alerts:" + SKETCH.split("alerts:")[1]
    with pytest.raises(ConfigError, match="model names must be unique"):
        load_settings(write(tmp_path, dup))


def test_not_yaml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(write(tmp_path, "models: [unclosed"))
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_settings(tmp_path / "nope.yaml")


def test_task_needs_its_columns(tmp_path: Path) -> None:
    text = SKETCH.replace("    threshold: 0.5\n", "    threshold: 0.5\n    task: recommender\n")
    with pytest.raises(ConfigError, match=r"task recommender needs columns: user, item"):
        load_settings(write(tmp_path, text))


def test_metrics_must_belong_to_the_task(tmp_path: Path) -> None:
    text = SKETCH.replace("    threshold: 0.5\n", "    threshold: 0.5\n    task: regression\n")
    with pytest.raises(ConfigError, match=r"do not apply to task regression"):
        load_settings(write(tmp_path, text))


def test_unreadable_task_file_names_the_option(tmp_path: Path) -> None:
    from monitor.tasks import TASKS

    with pytest.raises(ConfigError, match=r"options\.lexicon_file"):
        TASKS["text"].parse_options({"lexicon_file": str(tmp_path / "missing.txt")}).evaluate_kwargs()


def test_unknown_task_option_is_named(tmp_path: Path) -> None:
    text = """\
models:
  - name: recs
    task: recommender
    options: {topk: 5}
    source: {kind: sql, url: "sqlite:///log.db", table: recs}
    columns: {id: id, timestamp: ts, user: u, item: i, rank: r}
    groups: [{attribute: segment, kind: categorical, column: segment}]
"""
    with pytest.raises(ConfigError, match=r"options \['topk'\] are not options of task recommender.*\bk\b"):
        load_settings(write(tmp_path, text))


def test_runbook_url_is_a_url_without_a_fragment(tmp_path: Path) -> None:
    good = SKETCH.replace(
        "alerts:\n", "alerts:\n  runbook_url: https://wiki.example.internal/fairwatch/runbook\n"
    )
    assert (
        load_settings(write(tmp_path, good)).alerts.runbook_url
        == "https://wiki.example.internal/fairwatch/runbook"
    )
    bad = SKETCH.replace("alerts:\n", "alerts:\n  runbook_url: https://wiki.example.internal/runbook#top\n")
    with pytest.raises(ConfigError, match=r"alerts\.runbook_url.*without a #fragment"):
        load_settings(write(tmp_path, bad))


def test_a_config_that_is_not_utf8_is_named_with_its_line(tmp_path: Path) -> None:
    # a comment saved as Latin-1: once a UnicodeDecodeError traceback from validate
    path = tmp_path / "latin1.yaml"
    path.write_bytes(SKETCH.replace("threshold: 0.5", "threshold: 0.5  # seuil fixé").encode("latin-1"))
    line = next(i for i, text in enumerate(SKETCH.splitlines(), 1) if "threshold: 0.5" in text)
    column = len("    threshold: 0.5  # seuil fix") + 1
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert str(info.value) == (
        f"{path}:{line}: not UTF-8 text (byte 0xe9 at line {line}, column {column}): save the config as UTF-8"
    )
