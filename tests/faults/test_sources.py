"""Every failure to read a source is a source failure: ``source_up`` 0, one sanitised line, the last
values kept, recovery on the next tick without a restart; a held lock or a runaway query is cut
at ``source.timeout``. Real SQLite files and a real PostgreSQL server."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from monitor.app import App, build_app
from monitor.config import load_settings
from monitor.core.clock import FakeClock
from monitor.service.snapshot import ModelStatus
from tests.faults.conftest import NOW, EditConfig


@pytest.fixture
def apps() -> Iterator[list[App]]:
    made: list[App] = []
    yield made
    for app in made:
        app.stop()


def _app(config: Path, apps: list[App]) -> App:
    app = build_app(load_settings(config), clock=FakeClock(NOW))
    apps.append(app)
    return app


def _run(app: App, model: str = "toxicity") -> tuple[ModelStatus, float]:
    t0 = time.monotonic()
    app.runner.run_model(model)
    return app.runner.snapshot().models[model], time.monotonic() - t0


def _assert_one_clean_line(status: ModelStatus, *words: str) -> None:
    assert status.source_up is False
    error = status.last_error or ""
    assert "\n" not in error and len(error) < 600
    assert "SELECT" not in error.upper() and "julianday" not in error  # no SQL, no parameters
    for word in words:
        assert word in error, error


def _timeout(seconds: str) -> Any:
    return lambda data: data["models"][0]["source"].update(timeout=seconds)


def test_a_locked_sqlite_database_is_a_source_failure_cut_at_the_timeout(
    demo_dir: Path, edit_config: EditConfig, apps: list[App]
) -> None:
    app = _app(edit_config(_timeout("1s")), apps)
    good, _ = _run(app)
    assert good.source_up and good.last_evaluation is not None
    writer = sqlite3.connect(demo_dir / "predictions.db", isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")  # a writer holding the database: readers get "database is locked"
    try:
        status, seconds = _run(app)
        _assert_one_clean_line(status, "locked")
        assert seconds < 20  # bounded by source.timeout (1 s), not by the lock
        assert status.last_evaluation is good.last_evaluation  # the last values are kept
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    recovered, _ = _run(app)
    assert recovered.source_up and recovered.last_error is None
    assert recovered.failures_total == 1


def test_a_file_that_is_not_a_database_is_a_source_failure(
    demo_dir: Path, edit_config: EditConfig, apps: list[App]
) -> None:
    app = _app(edit_config(lambda data: None), apps)
    path = demo_dir / "predictions.db"
    original = path.read_bytes()
    path.write_bytes(b"this is not a database" * 100)
    status, _ = _run(app)
    _assert_one_clean_line(status, "not a database")
    path.write_bytes(original)
    assert _run(app)[0].source_up


def test_a_runaway_sqlite_query_is_interrupted_at_the_timeout(
    demo_dir: Path, edit_config: EditConfig, apps: list[App]
) -> None:
    slow = (
        "SELECT p.* FROM predictions AS p JOIN (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL "
        "SELECT i + 1 FROM n WHERE i < 100000000) SELECT max(i) AS m FROM n) AS spin ON spin.m > 0"
    )

    def change(data: dict[str, Any]) -> None:
        source = data["models"][0]["source"]
        source.pop("table")
        source.update(query=slow, timeout="1s")

    app = _app(edit_config(change), apps)
    status, seconds = _run(app)
    _assert_one_clean_line(status, "statement timeout", "source.timeout")
    assert seconds < 20  # the unbounded query would run for minutes


def test_a_postgres_lock_is_cut_by_statement_timeout_and_the_source_recovers(
    postgres_url: str, edit_config: EditConfig, demo_dir: Path, apps: list[App]
) -> None:
    engine = sa.create_engine(postgres_url)
    with sqlite3.connect(demo_dir / "predictions.db") as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(predictions)")]
        rows = conn.execute("SELECT * FROM predictions").fetchall()
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE IF EXISTS predictions"))
        conn.execute(sa.text("CREATE TABLE predictions (" + ", ".join(f'"{c}" text' for c in columns) + ")"))
        table = sa.table("predictions", *(sa.column(c) for c in columns))
        conn.execute(table.insert(), [dict(zip(columns, map(_text, r), strict=True)) for r in rows])
    app = _app(
        edit_config(lambda data: data["models"][0]["source"].update(url=postgres_url, timeout="1s")), apps
    )
    assert _run(app)[0].source_up
    holder = engine.connect()
    holder.begin()
    holder.execute(sa.text("LOCK TABLE predictions IN ACCESS EXCLUSIVE MODE"))
    try:
        status, seconds = _run(app)
        _assert_one_clean_line(status, "statement timeout")
        assert seconds < 20
    finally:
        holder.rollback()
        holder.close()
    assert _run(app)[0].source_up
    engine.dispose()


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def test_a_postgres_connection_killed_mid_query_is_a_source_failure(
    postgres_url: str, edit_config: EditConfig, apps: list[App]
) -> None:
    """The driver's error comes back wrapped; still one line, source_up 0, then recovery."""
    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE IF EXISTS predictions"))
        conn.execute(sa.text("CREATE TABLE predictions (id int, ts timestamptz, score float, label float)"))
    query = "SELECT p.*, pg_sleep(3) AS nap FROM predictions AS p RIGHT JOIN (SELECT 1) AS one ON true"

    def change(data: dict[str, Any]) -> None:
        source = data["models"][0]["source"]
        source.pop("table")
        source.update(url=postgres_url, query=query, timeout="30s")
        data["models"][0]["groups"] = data["models"][0]["groups"][:1]

    app = _app(edit_config(change), apps)

    def kill() -> None:
        time.sleep(1.0)
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE query LIKE '%pg_sleep(3)%' AND pid <> pg_backend_pid()"
                )
            )

    killer = threading.Thread(target=kill)
    killer.start()
    status, _ = _run(app)
    killer.join()
    _assert_one_clean_line(status, "cannot read")
    engine.dispose()


def test_bounded_shutdown_while_a_read_waits_on_a_lock(demo_dir: Path, edit_config: EditConfig) -> None:
    """Stopping waits for the running reads, and each is bounded by its source's timeout."""

    def every_source(data: dict[str, Any]) -> None:
        for model in data["models"]:
            model["source"]["timeout"] = "2s"

    app = build_app(load_settings(edit_config(every_source)), clock=FakeClock(datetime.now(UTC)))
    writer = sqlite3.connect(demo_dir / "predictions.db", isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        app.start(serve_http=False)  # the first evaluation starts at once and waits on the lock
        time.sleep(0.5)
        t0 = time.monotonic()
        app.stop()
        assert time.monotonic() - t0 < 15  # bounded by source.timeout, not by the lock holder
    finally:
        writer.execute("ROLLBACK")
        writer.close()
