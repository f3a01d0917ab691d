"""A prefilter may be coarse, never lossy: timestamp text of mixed styles, a writer that changes format
while the service runs, and values no parser can read (counted, not silently dropped). Real SQLite."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from monitor.config import SourceConfig
from monitor.sources.sql.source import SqlSource

START = datetime(2026, 11, 22, 3, tzinfo=UTC)
END = START + timedelta(hours=1)


def _styles(i: int, t: datetime) -> str:
    """Three writers' styles: ISO with T and Z, with a space and no zone, with a +02:00 offset."""
    if i % 3 == 0:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if i % 3 == 1:
        return t.strftime("%Y-%m-%d %H:%M:%S")
    return t.astimezone(timezone(timedelta(hours=2))).isoformat()


def _table(path: Path, rows: list[tuple[int, str]]) -> SqlSource:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS predictions (id INTEGER, ts TEXT, score REAL)")
        conn.executemany("INSERT INTO predictions VALUES (?, ?, 0.5)", rows)
    conn.close()
    config = SourceConfig.model_validate({"kind": "sql", "url": f"sqlite:///{path}", "table": "predictions"})
    return SqlSource(config, timestamp_column="ts")


def test_mixed_styles_between_uniform_extremes_are_all_read(tmp_path: Path) -> None:
    """The issue's case: the extremes are ...T...Z, 2/3 of the rows between use other styles."""
    inside = [(i, _styles(i, START + timedelta(seconds=9 * i))) for i in range(400)]
    edges = [(1000, "2026-11-01T00:00:00Z"), (1001, "2026-12-01T00:00:00Z")]
    source = _table(tmp_path / "p.db", [*inside, *edges])
    batch = source.read(START, END)
    assert sorted(batch.frame["id"]) == list(range(400))
    assert not batch.rejected


def test_a_writer_changing_format_while_the_service_runs_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    first = [(i, (START + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ")) for i in range(60)]
    source = _table(path, first)
    assert len(source.read(START, END).frame) == 60
    # a new writer logs the same hour with a space separator and a +05:30 offset
    later = [
        (
            100 + i,
            (START + timedelta(minutes=i, seconds=30))
            .astimezone(timezone(timedelta(hours=5, minutes=30)))
            .strftime("%Y-%m-%d %H:%M:%S%z"),
        )
        for i in range(60)
    ]
    _table(path, later).close()
    batch = source.read(START, END)
    assert len(batch.frame) == 120 and not batch.rejected
    source.close()


def test_unreadable_timestamps_are_counted(tmp_path: Path) -> None:
    good = [(i, (START + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ")) for i in range(50)]
    bad = [(900, "22/11/2026 03:30"), (901, "not a time"), (902, "2026-11-22T03:99:00Z")]
    source = _table(tmp_path / "p.db", [*good, *bad])
    batch = source.read(START, END)
    assert len(batch.frame) == 50
    assert batch.rejected == {"timestamp_invalid": 3}
