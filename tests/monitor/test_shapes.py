"""Users' shapes: one model among several in a shared log, and categorical groups from dirty columns.

References are independent of the code under test: a model's rows are picked out with pandas from the
whole log and evaluated from memory (no database filter at all); categories are named by a slow
per-row loop written here.
"""

from __future__ import annotations

import math
import sqlite3
import time
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

import metrics_core as mc
from monitor.app import build_app
from monitor.evaluation.attributes import group_codes
from monitor.evaluation.evaluators import build_evaluators
from monitor.sources import MemorySource
from tests.monitor.test_counts import NOW, arrow_statements, comparable, config, dirty_log
from tests.monitor.test_file_counts import write_parquet
from tests.monitor.test_source_sql import captured_statements

#: Model column values a shared log holds: ours ("tox"), others, and values that differ from ours only
#: in case or whitespace - another model's rows as far as the row path (text equality) can tell.
MODELS = ["tox", "other", "Tox", " tox", "tox ", "TOX", None]


def shared_log(rows: int = 6000, seed: int = 3) -> pd.DataFrame:
    """The dirty log of test_counts, its rows spread over several models, with dirty categories:
    values that differ only in case or whitespace, numbers, blanks and NULLs."""
    frame = dirty_log(rows, seed)
    rng = np.random.default_rng(seed)
    frame["model"] = rng.choice(
        np.array(MODELS, dtype=object), rows, p=[0.4, 0.2, 0.1, 0.1, 0.08, 0.07, 0.05]
    )
    frame["race"] = rng.choice(
        np.array(["a", "A", " a", "a ", "b", "", "  ", None, "1", "1.0", "2.5"], dtype=object),
        rows,
        p=[0.3, 0.1, 0.05, 0.05, 0.2, 0.05, 0.03, 0.05, 0.07, 0.05, 0.05],
    )
    return frame


def only_ours(frame: pd.DataFrame) -> pd.DataFrame:
    """The reference's idea of the model's rows: its name, exactly."""
    return frame.loc[frame["model"].map(lambda m: m == "tox")].reset_index(drop=True)


def reference(frame: pd.DataFrame) -> dict[str, Any]:
    """The model evaluated from memory over its own rows only."""
    settings = config({"kind": "memory", "name": "log"}, aggregate=False)
    ours = only_ours(frame).drop(columns="model")
    model = settings.models[0]
    columns = model.columns.model_copy(update={"model": None})
    settings = settings.model_copy(update={"models": [model.model_copy(update={"columns": columns})]})
    evaluator = build_evaluators(settings, memory_sources={"log": MemorySource(ours, timestamp_column="ts")})[
        "tox"
    ]
    with evaluator:
        return without_rejects(comparable(evaluator.evaluate(NOW)))


def without_rejects(result: dict[str, Any]) -> dict[str, Any]:
    """The memory source parses no timestamps (the stores' text ones are), so rejected rows differ."""
    return {k: v for k, v in result.items() if k != "rejected"}


def evaluate(source: dict[str, Any], *, aggregate: bool) -> tuple[dict[str, Any], list[str]]:
    evaluator = build_evaluators(config(source, aggregate=aggregate))["tox"]
    with evaluator:
        engine = getattr(evaluator.source, "engine", None)
        if engine is None:
            return comparable(evaluator.evaluate(NOW)), []
        with captured_statements(engine) as seen, arrow_statements() as by_arrow:
            result = comparable(evaluator.evaluate(NOW))
        return result, [s for s, _ in seen] + by_arrow


def assert_reads_only_its_rows(source: dict[str, Any], frame: pd.DataFrame) -> list[str]:
    counted, statements = evaluate(source, aggregate=True)
    rows, _ = evaluate(source, aggregate=False)
    assert counted == rows
    assert without_rejects(counted) == reference(frame)
    return statements


# -- one model of a shared log --------------------------------------------------------------------------


def sqlite_shared(tmp_path: Path, frame: pd.DataFrame, model_type: str = "TEXT") -> str:
    db = tmp_path / f"shared-{uuid.uuid4().hex[:6]}.db"
    stored = frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z")
    types = {"model": model_type, "ts": "TEXT", "race": "TEXT", "sex": "TEXT", "pred": "TEXT", "cls": "TEXT"}
    columns = ", ".join(f'"{c}" {types.get(c, "REAL")}' for c in stored.columns)
    stored = stored.astype(object).where(stored.notna(), None)
    with sqlite3.connect(db) as conn:
        conn.execute(f"CREATE TABLE predictions ({columns})")
        conn.executemany(
            f"INSERT INTO predictions VALUES ({', '.join('?' * len(stored.columns))})",
            stored.itertuples(index=False),
        )
        conn.execute("CREATE INDEX predictions_model_ts ON predictions (model, ts)")
    return f"sqlite:///{db}"


def test_sqlite_a_model_of_a_shared_log_reads_only_its_rows_through_the_model_index(tmp_path: Path) -> None:
    frame = shared_log()
    url = sqlite_shared(tmp_path, frame)
    statements = assert_reads_only_its_rows({"kind": "sql", "url": url, "table": "predictions"}, frame)
    # the model is a bound parameter of the statements that read the log
    reads = [s for s in statements if "FROM predictions" in s and "min(" not in s]
    assert reads and all("predictions.model = ?" in s for s in reads), reads
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        where = "WHERE model = 'tox' AND ts >= '2026-11-22' AND ts < '2026-11-23'"
        plan = " ".join(
            str(r) for r in conn.execute(f"EXPLAIN QUERY PLAN SELECT score FROM predictions {where}")
        )
    assert "predictions_model_ts" in plan


def test_sqlite_a_model_column_of_numbers_is_filtered_as_the_row_path_reads_it(tmp_path: Path) -> None:
    """An INTEGER model column: the database would compare '1' with 1.0 otherwise than pandas' text, so
    it is not filtered there; the values are the row path's."""
    frame = shared_log(3000)
    frame["model"] = np.where(frame["model"] == "tox", "1", np.where(frame.index % 2 == 0, "2", "1.5"))
    url = sqlite_shared(tmp_path, frame, "REAL")  # 1 is stored as 1.0: "1.0" as text, not our "1"
    counted, statements = evaluate({"kind": "sql", "url": url, "table": "predictions"}, aggregate=True)
    rows, _ = evaluate({"kind": "sql", "url": url, "table": "predictions"}, aggregate=False)
    assert counted == rows
    assert not any("model = ?" in s for s in statements)


@pytest.mark.integration
def test_postgres_a_model_of_a_shared_log_reads_only_its_rows(postgres_url: str) -> None:
    frame = shared_log()
    table = f"shared {uuid.uuid4().hex[:6]}"
    engine = sa.create_engine(postgres_url)
    try:
        frame.to_sql(table, engine, index=False)
        quoted = engine.dialect.identifier_preparer.quote(table)
        with engine.begin() as conn:
            conn.execute(sa.text(f"CREATE INDEX ON {quoted} (model, ts)"))
    finally:
        engine.dispose()
    statements = assert_reads_only_its_rows({"kind": "sql", "url": postgres_url, "table": table}, frame)
    assert any(f"{quoted}.model = $" in s for s in statements), statements


def test_duckdb_a_model_of_a_shared_log_reads_only_its_rows(tmp_path: Path) -> None:
    frame = shared_log()
    path = tmp_path / "shared.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.register("frame", frame)
        conn.execute("CREATE TABLE predictions AS SELECT * FROM frame")
    assert_reads_only_its_rows({"kind": "sql", "url": f"duckdb:///{path}", "table": "predictions"}, frame)


def test_parquet_a_model_of_a_shared_log_is_counted_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame = shared_log()
    path = write_parquet(tmp_path / "logs", frame)
    sent: list[str] = []
    execute = duckdb.DuckDBPyConnection.execute

    def spy(self: duckdb.DuckDBPyConnection, query: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(query)
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(duckdb.DuckDBPyConnection, "execute", spy)
    assert_reads_only_its_rows({"kind": "files", "path": path}, frame)
    assert any("logs.model = $" in s for s in sent), sent


# -- categorical groups, named once per distinct value ----------------------------------------------------


DIRTY = [
    "a", "A", " a", "a ", "", "   ", None, float("nan"), pd.NA, 1, 1.0, "1", 2.5, "2.5", True, "True",
    ("x", 1), ["a"], {"k": 1}, np.int64(7), "7",
]  # fmt: skip


def slow_names(values: list[Any]) -> list[str | None]:
    """Each value's group, one by one: missing (None, NaN, NA, blank text, a composite cell) is None;
    whole numbers are written without a decimal point; everything else as its text."""
    out: list[str | None] = []
    for v in values:
        if (
            v is None
            or v is pd.NA
            or (isinstance(v, float) and math.isnan(v))
            or isinstance(v, list | tuple | dict | set)
        ):
            out.append(None)
        elif isinstance(v, str):
            out.append(v if v.strip() else None)
        elif isinstance(v, bool):
            out.append(str(v))
        elif isinstance(v, int | np.integer) or (isinstance(v, float) and v.is_integer()):
            out.append(str(int(v)))
        else:
            out.append(str(v))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_group_codes_name_each_value_as_the_slow_loop_does(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = [DIRTY[i] for i in rng.integers(0, len(DIRTY), 400)]
    codes, categories = group_codes(pd.Series(values, dtype=object))
    attr = mc.categorical_attribute("g", codes, categories=categories, reference="a")
    expected = Counter(n for n in slow_names(values) if n is not None)
    sizes = {c.group: int(attr.masks[c.key].sum()) for c in attr.comparisons}
    assert sizes == {g: n for g, n in expected.items() if g != "a"}
    assert attr.n_missing == sum(n is None for n in slow_names(values))
    # the same attribute as from the values themselves (metrics_core's own per-value path)
    plain = mc.categorical_attribute("g", slow_values(values), reference="a")
    assert [(c.group, c.reference) for c in plain.comparisons] == [
        (c.group, c.reference) for c in attr.comparisons
    ]


def slow_values(values: list[Any]) -> np.ndarray:
    return np.array([None if n is None else n for n in slow_names(values)], dtype=object)


def test_an_intersection_of_coded_columns_equals_one_of_their_values() -> None:
    rng = np.random.default_rng(9)
    race = [DIRTY[i] for i in rng.integers(0, 8, 600)]
    sex = list(rng.choice(np.array(["f", "m", "F", None, ""], dtype=object), 600))
    coded = {name: group_codes(pd.Series(col, dtype=object)) for name, col in (("race", race), ("sex", sex))}
    fast = mc.intersection_attribute(
        {c: codes for c, (codes, _) in coded.items()},
        categories={c: categories for c, (_, categories) in coded.items()},
        min_size=5,
    )
    slow = mc.intersection_attribute({"race": slow_values(race), "sex": slow_values(sex)}, min_size=5)
    assert fast.groups == slow.groups and fast.dropped == slow.dropped and fast.n_missing == slow.n_missing
    for c in fast.comparisons:
        assert (np.asarray(fast.masks[c.key]) == np.asarray(slow.masks[c.key])).all()


def test_coded_values_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError, match="codes must lie"):
        mc.categorical_attribute("g", np.array([0, 3]), categories=["a", "b"])


# -- a service with many models on one log ------------------------------------------------------------------


def test_an_overloaded_service_evaluates_every_model_and_says_what_it_skipped(tmp_path: Path) -> None:
    """Forty models of one shared log every second, more work than the machine can do: every model is
    evaluated again and again (none starved by its place in the config), and the ticks each missed are
    on /metrics. The real scheduler and sources, in-process."""
    names = [f"m{i:02d}" for i in range(40)]
    frame = shared_log(4000)
    frame["model"] = [names[i % len(names)] for i in range(len(frame))]
    settings = config(
        {"kind": "sql", "url": sqlite_shared(tmp_path, frame), "table": "predictions"}, aggregate=True
    )
    every_second = timedelta(seconds=1)
    models = [settings.models[0].model_copy(update={"name": n, "interval": every_second}) for n in names]
    app = build_app(settings.model_copy(update={"models": models}))
    app.start(serve_http=False)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and min(evaluations(app, names)) < 3:
            time.sleep(0.5)
    finally:
        app.stop()
    snapshot = app.runner.snapshot()
    assert min(evaluations(app, names)) >= 3, evaluations(app, names)
    assert all(snapshot.models[n].failures_total == 0 for n in names)
    skipped = sum(sum(snapshot.models[n].skipped_total.values()) for n in names)
    assert skipped > 0  # forty models a second is more than two cores evaluate
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(app.registry).decode())}
    samples = [s for s in families["fairwatch_evaluation_skipped"].samples if s.name.endswith("_total")]
    assert {s.labels["reason"] for s in samples} <= {"busy", "slow"}
    assert sum(s.value for s in samples) == skipped


def evaluations(app: Any, names: list[str]) -> list[int]:
    return [app.runner.snapshot().models[n].evaluations_total for n in names]
