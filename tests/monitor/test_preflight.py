"""``fairwatch validate --connect``: the tables, files and columns a config names exist, or each
missing one is named with its config key and the name meant."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from monitor.cli import main
from monitor.cli.demo.run import write_demo_config, write_demo_log


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("demo")
    write_demo_log(d / "predictions.db", start=datetime(2026, 11, 1, tzinfo=UTC), rows_per_hour=50)
    return write_demo_config(d, port=0)


def _validate(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    status = main(["validate", "--config", str(config), "--connect"])
    return status, " ".join(capsys.readouterr().err.split()).replace(" error: ", "\nerror: ").splitlines()


def test_the_demo_config_connects(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, lines = _validate(demo, capsys)
    assert status == 0
    text = " ".join(lines)
    # the demo's table has id, ts, score, action and the nine identity columns; its labels id, label, labeled_at
    assert "ok: models[0].source: table 'predictions' in sqlite:///" in text and "13 column(s)" in text
    assert "ok: models[0].labels.source: table 'labels'" in text and "3 column(s)" in text


def test_missing_tables_and_columns_are_named_with_their_keys(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = demo.read_text()
    for old, new in [
        ("score: score,", "score: scroe,"),
        ("jewish, ", "jewsh, "),
        ("table: labels}", "table: label}"),
        (
            "table: predictions}\n    columns: {id: id, timestamp: ts, prediction: action",
            "table: predictons}\n    columns: {id: id, timestamp: ts, prediction: action",
        ),
    ]:
        assert old in text
        text = text.replace(old, new)
    bad = tmp_path / "config.yaml"
    bad.write_text(text.replace("sqlite:///predictions.db", f"sqlite:///{demo.parent / 'predictions.db'}"))
    status, lines = _validate(bad, capsys)
    assert status == 1
    errors = sorted(line for line in lines if line.startswith("error:"))
    db = f"sqlite:///{demo.parent / 'predictions.db'}"
    assert errors == sorted(
        [
            f"error: models[0].columns.score: no column `scroe` in table 'predictions' in {db} (did you mean `score`?)",
            f"error: models[0].groups[0].columns[4]: no column `jewsh` in table 'predictions' in {db} "
            "(did you mean `jewish`?)",
            f"error: models[0].labels.source.table: no table or view 'label' in {db} (did you mean `labels`?)",
            f"error: models[1].source.table: no table or view 'predictons' in {db} (did you mean `predictions`?)",
        ]
    )


def test_a_missing_sqlite_file_is_reported_not_created(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(demo.read_text())  # sqlite:///predictions.db, relative to this directory: none here
    status, lines = _validate(config, capsys)
    assert status == 1
    assert any(
        f"the SQLite database file {tmp_path / 'predictions.db'} does not exist" in line for line in lines
    )
    assert not (tmp_path / "predictions.db").exists()
    (tmp_path / "predictions.db").mkdir()  # a folder where the file should be
    status, lines = _validate(config, capsys)
    assert status == 1
    assert any(
        f"the SQLite database file {tmp_path / 'predictions.db'} is a directory, not a database file" in line
        for line in lines
    )


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        # once tracebacks from sa.make_url and sa.create_engine, outside the checks' error handling
        ("nosuchdialect://fw:hunter2@db/log", "cannot use nosuchdialect://fw:***@db/log: Can't load plugin"),
        (
            "mssql+pyodbc://fw:hunter2@db/log",
            "cannot use mssql+pyodbc://fw:***@db/log: No module named 'pyodbc'",
        ),
        ("not a url, hunter2", "not a valid SQLAlchemy URL (dialect+driver://...)"),
    ],
)
def test_a_url_that_cannot_be_used_is_named_with_its_key(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, problem: str
) -> None:
    if "pyodbc" in url and importlib.util.find_spec("pyodbc") is not None:
        pytest.skip("pyodbc is installed here: its driver is not missing")
    config = tmp_path / "config.yaml"
    config.write_text(demo.read_text().replace("sqlite:///predictions.db", url))
    status, lines = _validate(config, capsys)
    assert status == 1 and not any("Traceback" in line or "hunter2" in line for line in lines)
    assert f"error: models[0].source.url: {problem}" in "\n".join(lines)


FILES_CONFIG = """\
models:
  - name: m
    source: {{kind: files, path: "{path}"}}
    columns: {{id: id, timestamp: ts, score: score, label: label}}
    groups: [{{attribute: race, kind: categorical, column: race}}]
"""


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_files_sources_glob_and_columns(tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    frame = pd.DataFrame(
        {
            "id": [1, 2],
            "ts": ["2026-11-01T00:00:00Z"] * 2,
            "score": [0.2, 0.9],
            "lable": [0, 1],
            "race": ["a", "b"],
        }
    )
    path = logs / f"predictions-1.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")) + '{"torn": ')
    elif fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    config = tmp_path / "config.yaml"
    config.write_text(FILES_CONFIG.format(path=f"logs/predictions-*.{fmt}"))
    status, lines = _validate(config, capsys)
    assert status == 1
    assert [line for line in lines if line.startswith("error:")] == [
        f"error: models[0].columns.label: no column `label` in {path} (1 file(s) match) (did you mean `lable`?)"
    ]
    config.write_text(FILES_CONFIG.format(path=f"logs/nothing-*.{fmt}"))
    status, lines = _validate(config, capsys)
    assert status == 1 and f"error: models[0].source.path: no file matches {logs}/nothing-*.{fmt}" in lines


def test_postgresql_schema_tables_and_queries(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema, table = f"fw_{uuid.uuid4().hex[:8]}", "predictions"
    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        conn.execute(
            sa.text(
                f'CREATE TABLE "{schema}".{table} (id int, ts timestamptz, score float8, label int, race text)'
            )
        )
    try:
        config = tmp_path / "config.yaml"
        base = FILES_CONFIG.replace('{{kind: files, path: "{path}"}}', "{{kind: sql, url: '{url}', {where}}}")
        config.write_text(base.format(url=postgres_url, where=f"schema: {schema}, table: {table}"))
        status, lines = _validate(config, capsys)
        assert status == 0, lines
        assert any(
            f"ok: models[0].source: table '{schema}.{table}'" in line and "5 column(s)" in line
            for line in lines
        )
        query = f'"SELECT id, ts, score, race AS ethnicity FROM \\"{schema}\\".{table} WHERE ts >= :start AND ts < :end"'
        config.write_text(base.format(url=postgres_url, where=f"query: {query}"))
        status, lines = _validate(config, capsys)
        assert status == 1
        errors = [line for line in lines if line.startswith("error:")]
        assert len(errors) == 2
        assert errors[0].startswith(
            "error: models[0].columns.label: no column `label` in the query's result on "
        )
        assert errors[1].startswith(
            "error: models[0].groups[0].column: no column `race` in the query's result on "
        )
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


def test_sqlite_views_count_as_tables(demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "v.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (id, ts, score, label, race)")
        conn.execute("CREATE VIEW recent AS SELECT * FROM t")
    conn.close()
    config = tmp_path / "config.yaml"
    config.write_text(
        FILES_CONFIG.replace(
            '{{kind: files, path: "{path}"}}', "{{kind: sql, url: 'sqlite:///v.db', table: recent}}"
        ).format()
    )
    status, lines = _validate(config, capsys)
    assert status == 0, lines


def test_a_csv_header_the_csv_reader_refuses_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an unterminated quote in the header reads the rest of the file as one field: past the csv
    # module's field limit (128 KiB) that was a csv.Error traceback
    path = tmp_path / "predictions.csv"
    path.write_text('id,ts,"score,label,race\n' + "1,2026-11-01T00:00:00Z,0.5,1,a\n" * 6000)
    config = tmp_path / "config.yaml"
    config.write_text(FILES_CONFIG.format(path=path))
    status, lines = _validate(config, capsys)
    assert status == 1 and not any("Traceback" in line for line in lines)
    assert f"error: models[0].source.path: cannot read {path}: field larger than field limit" in "\n".join(
        lines
    )


REFERENCE_CONFIG = """
models:
  - name: loans
    source: {source}
    columns: {{id: id, timestamp: ts, score: score, label: label, model: model}}
    groups:
      - {{attribute: race, kind: categorical, column: race, reference: {race}}}
      - {{attribute: grade, kind: categorical, column: grade, reference: '{grade}'}}
      - {{attribute: race_sex, kind: intersection, columns: [race, sex], reference: [White, {sex}]}}
"""

LOANS = pd.DataFrame(
    {
        "id": range(6),
        "ts": ["2026-11-01T00:00:00Z"] * 6,
        "score": [0.1, 0.5, 0.9, 0.4, 0.3, 0.8],
        "label": [0, 1, 1, 0, 0, 1],
        "model": ["loans"] * 5 + ["other"],
        "race": ["White", "Black", "Asian", "White", None, "Hispanic"],  # Hispanic: another model's only
        "grade": [1, 2, 3, 1, 2, 3],  # numbers: reference "2" names group 2
        "sex": ["M", "F", "M", "F", "M", "F"],
    }
)


def _reference_errors(
    config: Path, source: str, capsys: pytest.CaptureFixture[str], **refs: str
) -> list[str]:
    config.write_text(REFERENCE_CONFIG.format(source=source, **refs))
    status, lines = _validate(config, capsys)
    errors = [line for line in lines if line.startswith("error:")]
    assert status == (1 if errors else 0), lines
    return errors


def _check_references(config: Path, source: str, what: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _reference_errors(config, source, capsys, race="White", grade="2", sex="F") == []
    # as the service names groups: 2 and 2.0 stored are group "2", the text "2.0" is no group
    assert len(_reference_errors(config, source, capsys, race="White", grade="2.0", sex="M")) == 1
    errors = _reference_errors(config, source, capsys, race="Whte", grade="7", sex="m")
    assert errors == [
        f"error: models[0].groups[0].reference: `Whte` is no value of column `race` in {what} "
        "(did you mean `White`?) (its values: Asian, Black, White); every comparison with it would be undefined",
        f"error: models[0].groups[1].reference: `7` is no value of column `grade` in {what} "
        "(its values: 1, 2, 3); every comparison with it would be undefined",
        f"error: models[0].groups[2].reference[1]: `m` is no value of column `sex` in {what} "
        "(did you mean `M`?) (its values: F, M); every comparison with it would be undefined",
    ]
    # another model's value is not this model's
    assert len(_reference_errors(config, source, capsys, race="Hispanic", grade="1", sex="F")) == 1


def test_a_reference_that_names_no_value_is_an_error_sqlite_and_parquet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``reference: Whte`` passed validate and turned every comparison undefined at run time."""
    db = tmp_path / "loans.db"
    with sqlite3.connect(db) as conn:
        LOANS.to_sql("predictions", conn, index=False)
    config = tmp_path / "config.yaml"
    url = f"sqlite:///{db}"
    _check_references(
        config, f"{{kind: sql, url: '{url}', table: predictions}}", f"table 'predictions' in {url}", capsys
    )
    parquet = tmp_path / "loans.parquet"
    LOANS.to_parquet(parquet)
    _check_references(config, f"{{kind: files, path: '{parquet}'}}", f"{parquet} (1 file(s) match)", capsys)


def test_a_reference_that_names_no_value_is_an_error_postgresql(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = f"loans_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(postgres_url)
    LOANS.to_sql(table, engine, index=False)  # grade: bigint, compared with the text "2"
    try:
        shown = sa.make_url(postgres_url).render_as_string(hide_password=True)
        source = f"{{kind: sql, url: '{postgres_url}', table: {table}}}"
        _check_references(tmp_path / "config.yaml", source, f"table '{table}' in {shown}", capsys)
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP TABLE "{table}"'))
        engine.dispose()


def test_a_query_over_a_time_range_or_a_reference_list_of_another_length(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A query that reads :start/:end is not judged from a moment's rows; an intersection's
    reference must name one value per column (else every comparison was silently undefined)."""
    db = tmp_path / "loans.db"
    with sqlite3.connect(db) as conn:
        LOANS.to_sql("predictions", conn, index=False)
    query = '"SELECT * FROM predictions WHERE ts >= :start AND ts < :end"'
    source = f"{{kind: sql, url: 'sqlite:///{db}', query: {query}}}"
    assert _reference_errors(tmp_path / "c.yaml", source, capsys, race="Whte", grade="2", sex="F") == []
    config = tmp_path / "bad.yaml"
    config.write_text(
        REFERENCE_CONFIG.format(source=source, race="White", grade="2", sex="F").replace(
            "reference: [White, F]", "reference: [White]"
        )
    )
    status = main(["validate", "--config", str(config)])
    err = capsys.readouterr().err
    assert status == 2 and "`reference` names one value per column: 2 column(s), 1 value(s)" in err


def test_a_threshold_for_no_value_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``thresholds: {race: {Blak: 0.44}}`` decided nobody at 0.44, silently (a review)."""
    db = tmp_path / "loans.db"
    with sqlite3.connect(db) as conn:
        LOANS.to_sql("predictions", conn, index=False)
    config = tmp_path / "config.yaml"
    text = REFERENCE_CONFIG.format(
        source=f"{{kind: sql, url: 'sqlite:///{db}', table: predictions}}", race="White", grade="2", sex="F"
    )
    config.write_text(text + "    thresholds: {race: {Blak: 0.44, Asian: 0.5}, }\n")
    status, lines = _validate(config, capsys)
    errors = [line for line in lines if line.startswith("error:")]
    assert status == 1 and errors == [
        f"error: models[0].thresholds.race.Blak: `Blak` is no value of column `race` in table 'predictions' in "
        f"sqlite:///{db} (did you mean `Black`?) (its values: Asian, Black, White); its threshold would never apply"
    ]
    config.write_text(text + "    thresholds: {grade: {2: 0.44}}\n")  # an int key names the value 2
    assert _validate(config, capsys)[0] == 0
