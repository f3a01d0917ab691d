"""Rows read as Arrow columns (ADBC) give exactly what ``pandas.read_sql`` gives, or pandas reads them."""

from __future__ import annotations

import logging
import sqlite3
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from monitor.config import SourceConfig
from monitor.core.errors import SourceError
from monitor.evaluation.evaluators import build_evaluators
from monitor.reading.plan import count_request
from monitor.sources import frames as frames_module
from monitor.sources.contract import WEIGHT
from monitor.sources.frames import count_keys
from monitor.sources.sql.arrow import ArrowReader
from monitor.sources.sql.source import SqlSource
from tests.monitor.test_counts import (
    NOW,
    PG_TIMESTAMPS,
    arrow_statements,
    comparable,
    config,
    dirty_log,
    sqlite_log,
)


def _evaluate(source: dict[str, Any], *, arrow: bool, task: str = "binary") -> tuple[Any, str]:
    settings = config({**source, "arrow": arrow}, aggregate=False, task=task)
    evaluator = build_evaluators(settings)["tox"]
    try:
        return evaluator.evaluate(NOW), evaluator.source.reader  # type: ignore[attr-defined]
    finally:
        evaluator.source.close()


def _clean_sqlite(tmp_path: Path) -> str:
    frame = dirty_log()
    frame["ts"] = frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
    db = tmp_path / "clean.db"
    with sqlite3.connect(db) as conn:
        frame.to_sql("predictions", conn, index=False)  # typed columns, NULL for missing values
    return f"sqlite:///{db}"


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_sqlite_rows_through_arrow_equal_pandas(tmp_path: Path, task: str) -> None:
    source = {"kind": "sql", "url": _clean_sqlite(tmp_path), "table": "predictions"}
    arrow, reader = _evaluate(source, arrow=True, task=task)
    pandas_, pandas_reader = _evaluate(source, arrow=False, task=task)
    assert (reader, pandas_reader) == ("arrow", "pandas")
    assert comparable(arrow) == comparable(pandas_)
    assert arrow.rows_read > 2000 and sum(arrow.rejected.values()) > 0  # dirty rows counted alike


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_sqlite_counts_in_python_equal_the_rows(tmp_path: Path, task: str) -> None:
    """On SQLite each row's keys come as Arrow columns and pandas counts them (SQLite's GROUP BY sorts):
    the same evaluation as reading every row through pandas, and no GROUP BY sent to SQLite."""
    source = {"kind": "sql", "url": _clean_sqlite(tmp_path), "table": "predictions"}
    evaluator = build_evaluators(config(source, aggregate=True, task=task))["tox"]
    try:
        with arrow_statements() as sent:
            counted = evaluator.evaluate(NOW)
        assert evaluator.source.reader == "arrow"  # type: ignore[attr-defined]
    finally:
        evaluator.source.close()
    rows, _ = _evaluate(source, arrow=False, task=task)
    assert comparable(counted) == comparable(rows)
    assert len(sent) == 1 and "GROUP BY" not in sent[0] and "CASE WHEN" in sent[0]


def test_mixed_types_in_a_sqlite_column_fall_back_to_pandas_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Text in a REAL column cannot be one Arrow column: pandas reads it, and reads this source from then on."""
    url = sqlite_log(tmp_path, dirty_log(), "TEXT", lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z")
    source = SqlSource(SourceConfig(kind="sql", url=url, table="predictions"), timestamp_column="ts")
    try:
        assert source.reader == "arrow"
        with caplog.at_level(logging.INFO, logger="monitor.sources.sql"):
            first = source.read(NOW - timedelta(hours=9), NOW)
            second = source.read(NOW - timedelta(hours=9), NOW)
        assert source.reader == "pandas"
        lines = [r.getMessage() for r in caplog.records if "through pandas" in r.getMessage()]
        assert len(lines) == 1 and "Arrow read failed" in lines[0]
        assert len(first.frame) == len(second.frame) == 3000
        assert (first.frame["score"] == "oops").sum() > 0  # the stored text kept, as pandas reads it
    finally:
        source.close()


def test_the_arrow_read_binds_the_window_bounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same statement as through SQLAlchemy: quoted identifiers, the bounds bound, never pasted."""
    db = tmp_path / "quoted.db"
    frame = pd.DataFrame({"ts": ["2026-11-22T10:30:00Z", "2026-11-22T11:30:00Z"], "score": [0.1, 0.2]})
    with sqlite3.connect(db) as conn:
        frame.to_sql("my log", conn, index=False)
    source = SqlSource(SourceConfig(kind="sql", url=f"sqlite:///{db}", table="my log"), timestamp_column="ts")
    sent: list[tuple[str, list[Any]]] = []
    compile_ = ArrowReader.compile

    def spy(self: ArrowReader, statement: Any) -> tuple[str, list[Any]]:
        sent.append(compile_(self, statement))
        return sent[-1]

    monkeypatch.setattr(ArrowReader, "compile", spy)
    try:
        batch = source.read(NOW - timedelta(hours=1), NOW)
    finally:
        source.close()
    assert source.reader == "arrow" and list(batch.frame["score"]) == [0.2]
    ((sql, params),) = sent
    assert '"my log"' in sql and sql.count("?") == len(params) == 4 and "2026" not in sql
    # whole days, widened (TimestampEncoding), then the instants as Julian days, a second's slack each side
    assert params[:2] == ["2026-11-21", "2026-11-24"]
    day = 86400
    epoch_jd = 2440587.5
    lo, hi = ((NOW - timedelta(hours=1)).timestamp(), NOW.timestamp())
    assert params[2:] == pytest.approx(
        [lo / day + epoch_jd - 1 / day, hi / day + epoch_jd + 1 / day], abs=1e-9
    )


@pytest.mark.parametrize("counted", [False, True])
def test_a_passing_arrow_failure_keeps_arrow_three_in_a_row_give_it_up(
    tmp_path: Path, counted: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A lock (which SQLite's own driver waits out) must not cost the source its Arrow reads for good."""
    url = _clean_sqlite(tmp_path)
    source = SqlSource(SourceConfig(kind="sql", url=url, table="predictions"), timestamp_column="ts")
    request = count_request(
        config({"kind": "sql", "url": url, "table": "predictions"}, aggregate=True).models[0], ()
    )
    fails = {"left": 0}
    original = ArrowReader.compile

    def flaky(self: ArrowReader, statement: Any) -> tuple[str, list[Any]]:
        if fails["left"]:
            fails["left"] -= 1
            raise OSError("[SQLite] database is locked")
        return original(self, statement)

    def read() -> int:
        if counted:
            batch = source.read_counts(request, NOW - timedelta(hours=9), NOW)
            assert batch is not None
            return batch.n_rows
        return len(source.read(NOW - timedelta(hours=9), NOW).frame)

    try:
        with (
            pytest.MonkeyPatch.context() as patch,
            caplog.at_level(logging.INFO, logger="monitor.sources.sql"),
        ):
            patch.setattr(ArrowReader, "compile", flaky)
            expected = read()
            fails["left"] = 1
            assert read() == expected and source.reader == "arrow"  # read by SQLAlchemy once, Arrow kept
            assert read() == expected and source.reader == "arrow"
            fails["left"] = 3
            for _ in range(3):
                assert read() == expected
            assert source.reader == "pandas"  # three in a row
        assert sum("from now on" in r.getMessage() for r in caplog.records) == 1
    finally:
        source.close()


def test_a_user_query_on_sqlite_is_read_by_pandas(tmp_path: Path) -> None:
    """SQLite's ADBC driver cannot interrupt a statement; a user's query might run away."""
    url = _clean_sqlite(tmp_path)
    source = SqlSource(
        SourceConfig(kind="sql", url=url, query="SELECT * FROM predictions"), timestamp_column="ts"
    )
    assert source.reader == "pandas"
    source.close()


@pytest.mark.integration
@pytest.mark.parametrize("storage", PG_TIMESTAMPS)
@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_postgres_rows_through_arrow_equal_pandas(postgres_url: str, storage: str, task: str) -> None:
    engine = sa.create_engine(postgres_url)
    frame = dirty_log()
    if storage == "bigint-epoch":
        frame["ts"] = frame["ts"].dt.floor("s")
    frame["ts"] = PG_TIMESTAMPS[storage](frame["ts"])
    frame["n_int"] = pd.array(
        np.where(np.arange(len(frame)) % 5 == 0, None, np.arange(len(frame))), dtype="Int64"
    )
    table = f"arrow {uuid.uuid4().hex[:6]}"
    frame.to_sql(table, engine, index=False)
    quoted = engine.dialect.identifier_preparer.quote(table)
    with engine.begin() as conn:
        conn.execute(sa.text(f"UPDATE {quoted} SET score = 'NaN' WHERE id % 61 = 4"))
    engine.dispose()
    source = {"kind": "sql", "url": postgres_url, "table": table}
    arrow, reader = _evaluate(source, arrow=True, task=task)
    pandas_, _ = _evaluate(source, arrow=False, task=task)
    assert reader == "arrow"
    assert comparable(arrow) == comparable(pandas_)
    raw = SqlSource(SourceConfig(kind="sql", url=postgres_url, table=table), timestamp_column="ts")
    plain = SqlSource(
        SourceConfig(kind="sql", url=postgres_url, table=table, arrow=False), timestamp_column="ts"
    )
    try:  # the frames themselves, column by column
        a, p = (s.read(NOW - timedelta(hours=9), NOW).frame for s in (raw, plain))
        pd.testing.assert_frame_equal(a.reset_index(drop=True), p.reset_index(drop=True), check_dtype=False)
    finally:
        raw.close()
        plain.close()


@pytest.mark.integration
@pytest.mark.parametrize("decimals", [None, 2])
def test_postgres_counts_raw_float_scores_in_python(postgres_url: str, decimals: int | None) -> None:
    """A float score not rounded makes nearly every row its own combination: PostgreSQL sends each
    row's keys and pandas counts them (no GROUP BY); rounded by ``score_decimals`` it groups them
    itself. Either way the evaluation equals the row path's."""
    engine = sa.create_engine(postgres_url)
    frame = dirty_log()
    rng = np.random.default_rng(3)
    frame["score"] = np.where(frame["score"].between(0, 1), rng.random(len(frame)), frame["score"])
    table = f"raw {uuid.uuid4().hex[:6]}"
    frame.to_sql(table, engine, index=False)  # score: double precision
    engine.dispose()
    source = {"kind": "sql", "url": postgres_url, "table": table}
    evaluator = build_evaluators(config(source, aggregate=True, score_decimals=decimals))["tox"]
    try:
        with arrow_statements() as sent:
            counted = evaluator.evaluate(NOW)
    finally:
        evaluator.source.close()
    rows_settings = config({**source, "arrow": False}, aggregate=False, score_decimals=decimals)
    rows_evaluator = build_evaluators(rows_settings)["tox"]
    try:
        rows = rows_evaluator.evaluate(NOW)
    finally:
        rows_evaluator.source.close()
    assert comparable(counted) == comparable(rows)
    assert counted.rows_read == rows.rows_read > 2000
    (statement,) = [s for s in sent if "set_config" not in s]
    assert ("GROUP BY" in statement) == (decimals is not None)


@pytest.mark.integration
def test_postgres_groups_a_float_score_of_few_values_once_it_has_seen_them(postgres_url: str) -> None:
    """A double precision score column holding a few values (calibration bins): the first count
    sends each row's keys (a float column is usually one value per row); having seen few
    combinations, the next ones group in the database. Same values either way."""
    engine = sa.create_engine(postgres_url)
    table = f"bins {uuid.uuid4().hex[:6]}"
    frame = dirty_log(20_000)
    frame["score"] = frame["score"].round(1)  # 11 values (and the dirt), stored as double precision
    frame.to_sql(table, engine, index=False)
    engine.dispose()
    source = {"kind": "sql", "url": postgres_url, "table": table}
    evaluator = build_evaluators(config(source, aggregate=True))["tox"]
    try:
        with arrow_statements() as sent:
            first, second = evaluator.evaluate(NOW), evaluator.evaluate(NOW)
    finally:
        evaluator.source.close()
    counts = [s for s in sent if "set_config" not in s]
    assert len(counts) == 2 and "GROUP BY" not in counts[0] and "GROUP BY" in counts[1]
    assert comparable(first) == comparable(second)


@pytest.mark.integration
def test_a_wrong_postgres_password_fails_cleanly(postgres_url: str, caplog: pytest.LogCaptureFixture) -> None:
    url = sa.make_url(postgres_url).set(password="wrong-secret-1234")
    source = SqlSource(
        SourceConfig(kind="sql", url=url.render_as_string(hide_password=False), table="t", timeout="2s"),
        timestamp_column="ts",
    )
    try:
        with caplog.at_level(logging.DEBUG), pytest.raises(SourceError) as failure:
            source.read(NOW - timedelta(hours=1), NOW)
        assert "wrong-secret-1234" not in str(failure.value)
        assert "wrong-secret-1234" not in caplog.text
    finally:
        source.close()


def test_counting_in_chunks_merges_to_the_whole_count() -> None:
    rng = np.random.default_rng(0)
    n = 10_000
    rows = pd.DataFrame(
        {
            "score": np.where(rng.random(n) < 0.05, np.nan, np.round(rng.random(n), 1)),
            "race": rng.choice(["a", "b", None], n),
            "male": rng.integers(0, 2, n),
        }
    )
    chunks = [rows.iloc[i : i + 777] for i in range(0, n, 777)] + [rows.iloc[:0]]
    counted = count_keys(chunks)
    assert counted[WEIGHT].sum() == n
    # reference: one pass over all rows, missing values made comparable
    expect = Counter(zip(rows["score"].fillna(-1), rows["race"].fillna("<none>"), rows["male"], strict=True))
    got = {
        (s, r, m): w
        for s, r, m, w in zip(
            counted["score"].fillna(-1),
            counted["race"].fillna("<none>"),
            counted["male"],
            counted[WEIGHT],
            strict=True,
        )
    }
    assert got == dict(expect)


def test_counting_rows_that_are_nearly_all_distinct_regroups_them_a_logarithmic_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Raw float scores: nearly every row its own combination. Merging the running total at every
    chunk regrouped it each time (quadratic); the counts are merged only when the chunks waiting hold
    as many combinations as the merged ones."""
    rng = np.random.default_rng(1)
    n, chunk = 64_000, 1_000
    rows = pd.DataFrame({"score": rng.random(n), "label": rng.integers(0, 2, n)})
    rows.loc[rows.index % 997 == 0, "score"] = 0.5  # a few repeats
    merged_sizes: list[int] = []
    merge = frames_module.merge_counts

    def spy(counted: list[pd.DataFrame]) -> pd.DataFrame:
        merged_sizes.append(sum(len(c) for c in counted))
        return merge(counted)

    monkeypatch.setattr(frames_module, "merge_counts", spy)
    counted = count_keys(rows.iloc[i : i + chunk] for i in range(0, n, chunk))
    expect = Counter(zip(rows["score"], rows["label"], strict=True))
    assert (
        dict(zip(zip(counted["score"], counted["label"], strict=True), counted[WEIGHT], strict=True))
        == expect
    )
    assert len(merged_sizes) <= 8  # 1 + log2(64), where merging every chunk made 63
    assert sum(merged_sizes) <= 4 * n  # each row regrouped a few times, not once per later chunk


def test_the_two_sqlite_libraries_take_turns_on_a_file(tmp_path: Path) -> None:
    """ADBC's SQLite and Python's are two libraries in one process, and POSIX locks belong to the
    process: one closing its descriptor drops the other's locks. Every connection to the file, of
    either, is made in its library's turn - an Arrow read waits while Python's connections are open
    (the read's own plan, made on a Python connection, shares their turn and goes ahead)."""
    import threading

    from monitor.sources.sql.connection import sqlite_file_lock

    url = _clean_sqlite(tmp_path)
    settings = config({"kind": "sql", "url": url, "table": "predictions", "arrow": True}, aggregate=False)
    evaluator = build_evaluators(settings)["tox"]
    done = threading.Event()
    try:
        with sqlite_file_lock(sa.make_url(url), "python"):
            reader = threading.Thread(target=lambda: (evaluator.evaluate(NOW), done.set()))
            reader.start()
            assert not done.wait(1.0)  # held up: Python's connection is open on the file
        assert done.wait(60)  # its turn: the read runs
        reader.join(10)
        assert evaluator.source.reader == "arrow"  # type: ignore[attr-defined]
    finally:
        evaluator.source.close()


class TestLibraryTurns:
    """Connections of one library share the file; the other library waits, in arrival order."""

    @staticmethod
    def _enter_in_thread(turns: Any, library: str, log: list[str], leave: Any) -> Any:
        import threading

        entered = threading.Event()

        def run() -> None:
            with turns.turn(library):
                log.append(library)
                entered.set()
                leave.wait(30)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread, entered

    def test_one_librarys_connections_overlap(self) -> None:
        import threading

        from monitor.sources.sql.connection import LibraryTurns

        turns, log, leave = LibraryTurns(), [], threading.Event()
        threads = [self._enter_in_thread(turns, "adbc", log, leave) for _ in range(3)]
        assert all(entered.wait(5) for _, entered in threads)  # all three inside at once
        leave.set()
        for thread, _ in threads:
            thread.join(5)

    def test_the_other_library_waits_and_is_not_overtaken(self) -> None:
        import threading
        import time

        from monitor.sources.sql.connection import LibraryTurns

        turns, log = LibraryTurns(), []
        leave_python, leave_adbc = threading.Event(), threading.Event()
        first, first_in = self._enter_in_thread(turns, "python", log, leave_python)
        assert first_in.wait(5)
        waiting, waiting_in = self._enter_in_thread(turns, "adbc", log, leave_adbc)
        assert not waiting_in.wait(0.5)  # Python's connection is open
        time.sleep(0.1)
        leave_late = threading.Event()
        late, late_in = self._enter_in_thread(turns, "python", log, leave_late)
        assert not late_in.wait(0.5)  # would share the open turn, but ADBC came first
        leave_python.set()
        assert waiting_in.wait(5)
        assert not late_in.wait(0.3)  # now ADBC's connection is open
        leave_adbc.set()
        assert late_in.wait(5)
        assert log == ["python", "adbc", "python"]
        leave_late.set()
        for thread in (first, waiting, late):
            thread.join(5)

    def test_a_thread_nests_one_library_and_never_mixes_them(self) -> None:
        from monitor.sources.sql.connection import LibraryTurns

        turns = LibraryTurns()
        with (
            turns.turn("python"),
            turns.turn("python"),
            pytest.raises(RuntimeError, match="python SQLite connection is open"),
            turns.turn("adbc"),
        ):
            pass
        with turns.turn("adbc"):  # every turn was given back
            pass
