"""SqlSource against real SQLite files and a real PostgreSQL server.

Every window read is checked twice: the rows returned are exactly ``[start, end)``, and the
statement sent to the database carries the bounds as bound parameters, never as SQL text.
"""

from __future__ import annotations

import random
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from monitor.config import SourceConfig
from monitor.core.errors import ConfigError, SourceError
from monitor.sources import build_source
from monitor.sources.contract import CountingSource, CountRequest, FleetSource
from monitor.sources.sql.source import SqlSource, TimestampEncoding, detect_encoding
from tests.servers import free_port

START = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
END = datetime(2026, 11, 22, 4, 0, tzinfo=UTC)

# (id, event time): the edges of the half-open window [START, END) and the days around it.
EVENTS = [
    (1, START - timedelta(days=1)),
    (2, START - timedelta(microseconds=1)),
    (3, START),
    (4, START + timedelta(minutes=30, microseconds=500_000)),
    (5, END - timedelta(microseconds=1)),
    (6, END),
    (7, END + timedelta(seconds=1)),
    (8, END + timedelta(hours=20)),
]
IN_WINDOW = [3, 4, 5]

MakeSource = Callable[..., SqlSource]
Seen = list[tuple[str, Any]]


def _tz(hours: int) -> timezone:
    return timezone(timedelta(hours=hours))


@pytest.fixture
def make_source() -> Iterator[MakeSource]:
    """``make_source(url, timestamp_column="ts", **config)``; every source is closed at teardown.

    Rows are read through SQLAlchemy's engine (``arrow: false``) so that the statements can be
    seen as sent; the Arrow path sends the same statement (``test_arrow_reads``)."""
    sources: list[SqlSource] = []

    def make(url: str, timestamp_column: str | None = "ts", **fields: Any) -> SqlSource:
        config = SourceConfig.model_validate({"kind": "sql", "url": url, "arrow": False, **fields})
        source = SqlSource(config, timestamp_column=timestamp_column)
        sources.append(source)
        return source

    yield make
    for source in sources:
        source.close()


@contextmanager
def captured_statements(engine: sa.Engine) -> Iterator[Seen]:
    """Every (statement, parameters) the engine sends to the driver."""
    seen: Seen = []

    def hook(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", hook)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", hook)


def data_reads(seen: Seen, prefix: str = "SELECT * \nFROM") -> Seen:
    """The statements that read rows (not reflection, dialect set-up or the min/max probe)."""
    return [(s, p) for s, p in seen if s.startswith(prefix)]


def window_statement(seen: Seen) -> tuple[str, list[Any]]:
    """The one statement that read the window, and its parameter values in order."""
    ((statement, params),) = data_reads(seen)
    assert "WHERE" in statement, statement
    return statement, list(params.values() if isinstance(params, dict) else params)


def read_ids(source: SqlSource, start: datetime = START, end: datetime = END) -> list[int]:
    batch = source.read(start, end)
    assert not batch.rejected
    return sorted(int(i) for i in batch.frame["id"])


def sqlite_table(path: Path, ddl: str, rows: list[tuple[Any, ...]], table: str = "predictions") -> str:
    """Create ``table`` with plain sqlite3 (as a model server would); return the SQLAlchemy URL."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(f"CREATE TABLE {table} ({ddl})")
        marks = ", ".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    conn.close()
    return f"sqlite:///{path}"


def iso(moment: datetime, sep: str = "T", suffix: str = "Z", micros: bool = True) -> str:
    text = moment.astimezone(UTC).replace(tzinfo=None).isoformat(sep=sep)
    if not micros:
        text = text.split(".")[0]
    return text + suffix


# -- timestamps stored as ISO text --------------------------------------------------------------------

ISO_STYLES: dict[str, dict[str, Any]] = {
    "T-Z": {"sep": "T", "suffix": "Z"},
    "T-offset": {"sep": "T", "suffix": "+00:00"},
    "T-naive": {"sep": "T", "suffix": ""},
    "space-naive": {"sep": " ", "suffix": ""},
    "space-Z": {"sep": " ", "suffix": "Z"},
}


@pytest.mark.parametrize("style", ISO_STYLES, ids=list(ISO_STYLES))
def test_iso_text_window_is_half_open_and_bound(tmp_path: Path, make_source: MakeSource, style: str) -> None:
    kw = ISO_STYLES[style]
    rows = [(i, iso(t, **kw), 0.5) for i, t in EVENTS]
    source = make_source(
        sqlite_table(tmp_path / "p.db", "id INTEGER, ts TEXT, score REAL", rows), table="predictions"
    )
    with captured_statements(source.engine) as seen:
        assert read_ids(source) == IN_WINDOW
    statement, params = window_statement(seen)
    assert "2026" not in statement  # the bounds travel as parameters...
    # ...as whole days on the text (an index serves them; rows of another style in between are
    # not lost), and as the window's instants for SQLite's julianday(), to the second
    assert params[:2] == ["2026-11-21", "2026-11-24"]
    julian = (
        sqlite3.connect(":memory:")
        .execute("SELECT julianday('2026-11-22 03:00:00'), julianday('2026-11-22 04:00:00')")
        .fetchone()
    )
    assert params[2:] == pytest.approx(list(julian), abs=1.5 / 86400)


def test_iso_text_with_fractions_and_mixed_utc_suffixes(tmp_path: Path, make_source: MakeSource) -> None:
    suffixes = ["Z", "+00:00", "", "Z", "+00:00", "", "Z", ""]
    rows = [(i, iso(t, suffix=s, micros=i % 2 == 0), 0.5) for (i, t), s in zip(EVENTS, suffixes, strict=True)]
    source = make_source(
        sqlite_table(tmp_path / "p.db", "id INTEGER, ts TEXT, score REAL", rows), table="predictions"
    )
    # Row 2 (odd: fraction cut off) is stored as 02:59:59; row 5 as 03:59:59: still in the window.
    assert read_ids(source) == IN_WINDOW


def test_mixed_separators_and_offsets_widen_the_prefilter(tmp_path: Path, make_source: MakeSource) -> None:
    """' ' sorts before 'T' and '+02:00' is not UTC: text bounds become whole days, the result stays exact."""
    rows = [(i, iso(t, sep=" ") if i % 2 else t.astimezone(_tz(+2)).isoformat(), 0.5) for i, t in EVENTS]
    source = make_source(
        sqlite_table(tmp_path / "p.db", "id INTEGER, ts TEXT, score REAL", rows), table="predictions"
    )
    with captured_statements(source.engine) as seen:
        assert read_ids(source) == IN_WINDOW
    assert window_statement(seen)[1][:2] == ["2026-11-21", "2026-11-24"]


def test_declared_utc_text_is_bound_to_the_second(tmp_path: Path, make_source: MakeSource) -> None:
    """``timestamp_format: iso_utc`` (every row UTC, one style): the text bounds are the window's
    seconds, not whole days, and the window is still exact."""
    rows = [(i, iso(t, suffix="+00:00"), 0.5) for i, t in EVENTS]
    url = sqlite_table(tmp_path / "p.db", "id INTEGER, ts TEXT, score REAL", rows)
    source = make_source(url, table="predictions", timestamp_format="iso_utc")
    with captured_statements(source.engine) as seen:
        assert read_ids(source) == IN_WINDOW
    assert window_statement(seen)[1][:2] == ["2026-11-22T03:00:00", "2026-11-22T04:00:00"]
    assert source.reads_narrowly()


def test_a_source_learns_its_timestamps_before_its_first_read_and_only_when_asked(
    tmp_path: Path, make_source: MakeSource
) -> None:
    """A model's first evaluation goes through sealed panes: the source looks at its stored
    timestamps when asked whether it reads narrowly - never when a protocol check looks at it."""
    rows = [(i, iso(t, suffix="+00:00"), 0.5) for i, t in EVENTS]
    url = sqlite_table(tmp_path / "p.db", "id INTEGER, ts TEXT, score REAL", rows)
    source = make_source(url, table="predictions", timestamp_format="iso_utc")
    with captured_statements(source.engine) as seen:
        assert isinstance(source, CountingSource) and not isinstance(source, FleetSource)
    assert seen == []
    with captured_statements(source.engine) as seen:
        assert source.reads_narrowly()  # before any read
    assert any("max(" in statement.lower() for statement, _ in seen)  # reflected, then its extremes


def test_declared_utc_text_with_offsets_at_the_extremes_keeps_whole_days(
    tmp_path: Path, make_source: MakeSource, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [(i, t.astimezone(_tz(+2)).isoformat(), 0.5) for i, t in EVENTS]
    url = sqlite_table(tmp_path / "p.db", "id INTEGER, ts TEXT, score REAL", rows)
    source = make_source(url, table="predictions", timestamp_format="iso_utc")
    with captured_statements(source.engine) as seen:
        assert read_ids(source) == IN_WINDOW
    assert window_statement(seen)[1][:2] == ["2026-11-21", "2026-11-24"]
    assert "timestamp_format is 'iso_utc'" in caplog.text
    assert not source.reads_narrowly()


def test_the_extremes_probe_uses_the_index(tmp_path: Path, make_source: MakeSource) -> None:
    """SQLite answers a lone min() or max() from an index but scans every row for both in one select."""
    rows = [(i, iso(t), 0.5) for i, t in EVENTS]
    path = tmp_path / "p.db"
    url = sqlite_table(path, "id INTEGER, ts TEXT, score REAL", rows)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")
    source = make_source(url, table="predictions")
    with captured_statements(source.engine) as seen:
        read_ids(source)
    (probe,) = [s for s, _ in seen if "max(" in s]
    with sqlite3.connect(path) as conn:
        plan = [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {probe}")]
    assert not any(step.startswith("SCAN predictions") for step in plan), plan
    assert any("USING COVERING INDEX predictions_ts" in step for step in plan), plan


@pytest.mark.parametrize("index", ["index", "primary key", None])
def test_range_totals_count_each_range_by_the_index(
    tmp_path: Path, make_source: MakeSource, index: str | None
) -> None:
    """The recount of kept panes: rows per range. With an index on the timestamps each range is
    its own index range (one pass would compare every row with every range: an hourly recount of
    24 panes took 2.5 s per million rows on SQLite text); without, one pass."""
    # to the second: SQLite compares text instants through julianday, to the millisecond
    events = [(i, t.replace(microsecond=0)) for i, t in EVENTS]
    rows = [(i, iso(t), 0.5) for i, t in events]
    path = tmp_path / "p.db"
    ts = "ts TEXT PRIMARY KEY" if index == "primary key" else "ts TEXT"  # SQLite's own autoindex
    url = sqlite_table(path, f"id INTEGER, {ts}, score REAL", rows)
    if index == "index":
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")
    source = make_source(url, table="predictions", timestamp_format="iso_utc")
    day = timedelta(days=1)
    ranges = ((START - day, START), (START, END), (END, END + day), (END + day, END + 3 * day))
    request = CountRequest("ts", (), (), ranges)
    with captured_statements(source.engine) as seen:
        totals = source.count_ranges(request, START - day, END + day)
    # by hand: each range clipped to the read range [START - 1 day, END + 1 day), half-open
    expected = tuple(
        sum(max(lo, START - day) <= t < min(hi, END + day) for _, t in events) for lo, hi in ranges
    )
    assert totals == expected == (2, 3, 3, 0)  # the last range lies outside the read
    (statement,) = [s for s, _ in seen if "count(" in s.lower() or "sum(" in s.lower()]
    with sqlite3.connect(path) as conn:
        params = next(p for s, p in seen if s == statement)
        plan = [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}", params)]
    if index:
        assert not any(step.startswith("SCAN predictions") for step in plan), plan
        assert sum("USING COVERING INDEX" in step for step in plan) == 3, plan  # a search per range read
    else:
        assert "sum(CASE" in statement and sum(step.startswith("SCAN predictions") for step in plan) == 1


def test_unrecognised_timestamps_are_filtered_in_pandas_only(
    tmp_path: Path, make_source: MakeSource, caplog: pytest.LogCaptureFixture
) -> None:
    # SQLite stores what it is given: numbers and text in one column have no common order.
    rows = [(i, t.timestamp() if i % 2 else iso(t), 0.5) for i, t in EVENTS]
    source = make_source(
        sqlite_table(tmp_path / "p.db", "id INTEGER, ts, score REAL", rows), table="predictions"
    )
    with captured_statements(source.engine) as seen:
        assert read_ids(source) == IN_WINDOW
    ((statement, _),) = data_reads(seen)
    assert "WHERE" not in statement
    assert "mixed or unrecognised" in caplog.text


@pytest.mark.parametrize("timestamp_format", [None, "iso_utc"])
def test_a_window_that_starts_before_the_year_1000(
    tmp_path: Path, make_source: MakeSource, timestamp_format: str | None
) -> None:
    """strftime's %Y wrote 999 for the year 999: as text it sorts after 2026, and julianday() reads
    no instant from it - a --start before the year 1000 read no rows at all."""
    # to the second: SQLite compares text instants through julianday, to the millisecond
    rows = [(i, iso(t.replace(microsecond=0)), 0.5) for i, t in EVENTS]
    fields = {"timestamp_format": timestamp_format} if timestamp_format else {}
    source = make_source(
        sqlite_table(tmp_path / "p.db", "id INTEGER, ts TEXT, score REAL", rows),
        table="predictions",
        **fields,
    )
    ancient = datetime(999, 1, 1, tzinfo=UTC)
    assert read_ids(source, ancient, END) == [1, 2, 3, 4, 5]  # every event before END, by hand
    request = CountRequest("ts", (), (), ((ancient, START), (START, END)))
    assert source.count_ranges(request, ancient, END) == (2, 3)


def test_text_prefilter_never_drops_a_row_of_the_window() -> None:
    """The bounds of TimestampEncoding compared as text, over random instants and styles."""
    rng = random.Random(7)
    checked = 0
    for _ in range(3000):
        start = START + timedelta(seconds=rng.randrange(-5, 5), microseconds=rng.randrange(0, 10**6))
        end = start + timedelta(seconds=rng.randrange(0, 4), microseconds=rng.randrange(1, 10**6))
        moment = start + (end - start) * rng.random()
        if not start <= moment < end:
            continue
        sep, suffix = rng.choice(["T", " "]), rng.choice(["Z", "+00:00", "", "-00:00"])
        text = moment.replace(tzinfo=None).isoformat(sep=sep, timespec="seconds")
        digits = rng.choice([0, 3, 6])
        if digits:
            text += "." + f"{moment.microsecond:06d}"[:digits]
        bounds = TimestampEncoding("iso", separator=sep).bounds(start, end)
        assert bounds is not None
        assert bounds[0] <= text + suffix < bounds[1], (start, end, text + suffix)
        day = TimestampEncoding("iso_day").bounds(start, end)
        assert day is not None
        for offset in (-14, 0, 14):
            assert day[0] <= moment.astimezone(_tz(offset)).isoformat() < day[1]
        checked += 1
    assert checked > 1000


def test_detect_encoding() -> None:
    assert detect_encoding(None, None) is None
    assert detect_encoding("2026-01-01 00:00:00", "2026-02-01 00:00:00.5Z") == TimestampEncoding(
        "iso", separator=" "
    )
    assert detect_encoding("2026-01-01T00:00+02:00", "2026-02-01T00:00:00Z") == TimestampEncoding("iso_day")
    assert detect_encoding(1.5, 2.5) == TimestampEncoding("epoch", number="float")
    assert detect_encoding(datetime(2026, 1, 1), datetime(2026, 1, 2)) == TimestampEncoding(
        "datetime", aware=False
    )
    assert detect_encoding(1, "2026-01-01") == TimestampEncoding("unknown")
    assert detect_encoding("22/11/2026", "23/11/2026") == TimestampEncoding("unknown")


# -- SQL date-times and epoch seconds on SQLite -------------------------------------------------------


def test_sqlite_datetime_column_written_by_sqlalchemy(tmp_path: Path, make_source: MakeSource) -> None:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    engine = sa.create_engine(url)
    table = sa.Table("predictions", sa.MetaData(), sa.Column("id", sa.Integer), sa.Column("ts", sa.DateTime))
    with engine.begin() as conn:
        table.create(conn)
        conn.execute(table.insert(), [{"id": i, "ts": t.replace(tzinfo=None)} for i, t in EVENTS])
    engine.dispose()
    source = make_source(url, table="predictions", timestamp_format="datetime")
    with captured_statements(source.engine) as seen:
        assert read_ids(source) == IN_WINDOW
    # SQLite keeps DATETIME as "2026-11-22 03:00:00.000000" text: bound as text of the same style.
    assert window_statement(seen)[1][:2] == ["2026-11-21", "2026-11-24"]


@pytest.mark.parametrize("column_type", ["INTEGER", "REAL"])
def test_epoch_seconds(tmp_path: Path, make_source: MakeSource, column_type: str) -> None:
    cast = int if column_type == "INTEGER" else float
    rows = [(i, cast(t.timestamp()), 0.5) for i, t in EVENTS]
    source = make_source(
        sqlite_table(tmp_path / "p.db", f"id INTEGER, ts {column_type}, score REAL", rows),
        table="predictions",
    )
    with captured_statements(source.engine) as seen:
        assert read_ids(source) == IN_WINDOW
    statement, params = window_statement(seen)
    assert str(int(START.timestamp())) not in statement
    assert params == [cast(START.timestamp()), cast(END.timestamp())]
    assert all(type(p) is cast for p in params)


def test_encoding_is_detected_at_every_read(tmp_path: Path, make_source: MakeSource) -> None:
    """Two index lookups per read, so that a writer changing format is followed (issue 10)."""
    rows = [(i, iso(t), 0.5) for i, t in EVENTS]
    source = make_source(
        sqlite_table(tmp_path / "p.db", "id INTEGER, ts TEXT, score REAL", rows), table="predictions"
    )
    with captured_statements(source.engine) as seen:
        for _ in range(3):
            assert read_ids(source) == IN_WINDOW
    assert len([s for s, _ in seen if "min(" in s.lower()]) == 3


def test_empty_table_reads_an_empty_window(tmp_path: Path, make_source: MakeSource) -> None:
    conn = sqlite3.connect(tmp_path / "p.db")
    conn.execute("CREATE TABLE predictions (id INTEGER, ts TEXT, score REAL)")
    conn.close()
    source = make_source(f"sqlite:///{tmp_path / 'p.db'}", table="predictions")
    batch = source.read(START, END)
    assert batch.frame.empty and list(batch.frame.columns) == ["id", "ts", "score"]


def test_read_returns_utc_timestamps(tmp_path: Path, make_source: MakeSource) -> None:
    rows = [(i, iso(t, suffix="+00:00"), 0.5) for i, t in EVENTS]
    source = make_source(
        sqlite_table(tmp_path / "p.db", "id INTEGER, ts TEXT, score REAL", rows), table="predictions"
    )
    frame = source.read(START, END).frame
    assert isinstance(frame["ts"].dtype, pd.DatetimeTZDtype) and str(frame["ts"].dt.tz) == "UTC"
    assert frame["ts"].min() == pd.Timestamp(START)


# -- the user's own query -----------------------------------------------------------------------------


def test_query_is_wrapped_with_bound_window(tmp_path: Path, make_source: MakeSource) -> None:
    rows = [(i, iso(t), i / 10) for i, t in EVENTS]
    url = sqlite_table(tmp_path / "p.db", "id INTEGER, ts TEXT, score REAL", rows)
    source = make_source(url, query="SELECT id, ts, score FROM predictions WHERE score <> 0.4;")
    with captured_statements(source.engine) as seen:
        assert read_ids(source) == [3, 5]
    statement, params = window_statement(seen)
    assert statement.startswith(
        "SELECT * \nFROM (SELECT id, ts, score FROM predictions WHERE score <> 0.4) AS q \nWHERE q.ts >= ?"
    )
    assert "2026" not in statement and params[:2] == ["2026-11-21", "2026-11-24"]


PLACEHOLDER_STORAGE: dict[str, Callable[[datetime], Any]] = {
    "epoch": lambda t: t.timestamp(),
    "iso": iso,
    "datetime": lambda t: t.replace(tzinfo=None).isoformat(sep=" "),  # SQLite's own datetime() style
}


@pytest.mark.parametrize("timestamp_format", PLACEHOLDER_STORAGE)
def test_query_with_its_own_placeholders(
    tmp_path: Path, make_source: MakeSource, timestamp_format: str
) -> None:
    rows = [(i, PLACEHOLDER_STORAGE[timestamp_format](t), 0.5) for i, t in EVENTS]
    url = sqlite_table(tmp_path / "p.db", "id INTEGER, ts, score REAL", rows)
    query = "SELECT * FROM predictions WHERE ts >= :start AND ts < :end ORDER BY id"
    source = make_source(url, query=query, timestamp_format=timestamp_format)
    with captured_statements(source.engine) as seen:
        assert read_ids(source) == IN_WINDOW
    ((statement, params),) = data_reads(seen, prefix="SELECT * FROM predictions")
    assert statement == query.replace(":start", "?").replace(":end", "?")  # run as given, not wrapped
    assert len(params) == 2


def test_placeholders_must_be_start_and_end(tmp_path: Path, make_source: MakeSource) -> None:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    with pytest.raises(ConfigError, match=":start and :end"):
        make_source(url, query="SELECT * FROM t WHERE ts >= :start")
    with pytest.raises(ConfigError, match=":since"):
        make_source(url, query="SELECT * FROM t WHERE ts >= :since")


# -- identifiers, label tables, errors ----------------------------------------------------------------


def test_table_name_with_quote_and_space_is_quoted(tmp_path: Path) -> None:
    name = 'model\'s "log" 2026'
    quoted = '"' + name.replace('"', '""') + '"'
    rows = [(i, iso(t), 0.5) for i, t in EVENTS]
    url = sqlite_table(tmp_path / "p.db", 'id INTEGER, "event time" TEXT, score REAL', rows, table=quoted)
    config = SourceConfig.model_validate({"kind": "sql", "url": url, "table": name})
    source = build_source(config, timestamp_column="event time")
    try:
        assert isinstance(source, SqlSource)
        assert sorted(source.read(START, END).frame["id"]) == IN_WINDOW
        assert "log" in source.describe()
    finally:
        source.close()


def test_label_table_without_timestamps(tmp_path: Path, make_source: MakeSource) -> None:
    url = sqlite_table(
        tmp_path / "p.db", "id INTEGER, label INTEGER", [(1, 0), (2, 1), (3, None)], table="labels"
    )
    source = make_source(url, timestamp_column=None, table="labels")
    with captured_statements(source.engine) as seen:
        batch = source.read(START, END)
    assert batch.frame["id"].tolist() == [1, 2, 3] and not batch.rejected
    ((statement, _),) = data_reads(seen)
    assert "WHERE" not in statement


def test_missing_table_column_and_file_are_source_errors(tmp_path: Path, make_source: MakeSource) -> None:
    url = sqlite_table(tmp_path / "p.db", "id INTEGER, ts TEXT", [(1, iso(START))])
    with pytest.raises(SourceError, match="table 'nope' not found"):
        make_source(url, table="nope").read(START, END)
    with pytest.raises(SourceError, match=r"column 'event_time' not found.*\['id', 'ts'\]"):
        make_source(url, "event_time", table="predictions").read(START, END)
    with pytest.raises(SourceError, match=r"no such column: q\.ts"):
        make_source(url, query="SELECT id FROM predictions").read(START, END)
    missing = tmp_path / "missing.db"
    with pytest.raises(SourceError, match="does not exist"):
        make_source(f"sqlite:///{missing}", table="t").read(START, END)
    assert not missing.exists()  # SQLite was not allowed to create it


def test_source_recovers_once_the_table_exists(tmp_path: Path, make_source: MakeSource) -> None:
    source = make_source(
        sqlite_table(tmp_path / "p.db", "x INTEGER", [(1,)], table="other"), table="predictions"
    )
    with pytest.raises(SourceError):
        source.read(START, END)
    sqlite_table(tmp_path / "p.db", "id INTEGER, ts TEXT", [(i, iso(t)) for i, t in EVENTS])
    assert read_ids(source) == IN_WINDOW


def test_bad_url_does_not_leak_the_password(make_source: MakeSource) -> None:
    for url in ("postgresql+psycopg://u:hunter2@host:notaport/db", "nosuchdialect://u:hunter2@host/db"):
        with pytest.raises(ConfigError, match=r"source\.url") as info:
            make_source(url, table="t")
        assert "hunter2" not in str(info.value)


# -- PostgreSQL ---------------------------------------------------------------------------------------


@pytest.fixture
def pg_engine(postgres_url: str) -> Iterator[sa.Engine]:
    engine = sa.create_engine(postgres_url)
    yield engine
    engine.dispose()


def pg_table(
    engine: sa.Engine, column_type: str, values: list[tuple[int, Any]], *, schema: str | None = None
) -> str:
    """A fresh table ``(id int, ts <column_type>, score float8)``; returns its (unquoted) name."""
    name = f"predictions {uuid.uuid4().hex[:8]}'s"  # a space and a quote: must be quoted, never pasted
    preparer = engine.dialect.identifier_preparer
    full = preparer.format_table(sa.Table(name, sa.MetaData(), schema=schema))
    with engine.begin() as conn:
        if schema:
            conn.execute(sa.text(f"CREATE SCHEMA IF NOT EXISTS {preparer.quote(schema)}"))
        conn.execute(sa.text(f"CREATE TABLE {full} (id integer, ts {column_type}, score float8)"))
        conn.execute(
            sa.text(f"INSERT INTO {full} (id, ts, score) VALUES (:id, :ts, 0.5)"),
            [{"id": i, "ts": v} for i, v in values],
        )
    return name


def in_new_york(postgres_url: str) -> str:
    """A session time zone far from UTC: naive `timestamp` bounds must not be shifted by it."""
    return postgres_url + "?options=-c%20TimeZone%3DAmerica/New_York"


PG_STORAGE: dict[str, tuple[str, Callable[[datetime], Any]]] = {
    "timestamptz": ("timestamptz", lambda t: t.astimezone(_tz(-5))),
    "timestamp": ("timestamp", lambda t: t.replace(tzinfo=None)),
    "text-iso": ("text", iso),
    "bigint-epoch": ("bigint", lambda t: int(t.timestamp())),
    "float8-epoch": ("double precision", lambda t: t.timestamp()),
}
PG_BOUNDS = {
    "timestamptz": [START, END],
    "timestamp": [START.replace(tzinfo=None), END.replace(tzinfo=None)],
    "text-iso": ["2026-11-21", "2026-11-24"],  # text: whole days, lossless for any ISO style
    "bigint-epoch": [int(START.timestamp()), int(END.timestamp())],
    "float8-epoch": [START.timestamp(), END.timestamp()],
}


@pytest.mark.integration
@pytest.mark.parametrize("storage", PG_STORAGE)
def test_postgres_table_window(
    postgres_url: str, pg_engine: sa.Engine, make_source: MakeSource, storage: str
) -> None:
    column_type, store = PG_STORAGE[storage]
    name = pg_table(pg_engine, column_type, [(i, store(t)) for i, t in EVENTS], schema="fair watch")
    source = make_source(in_new_york(postgres_url), table=name, schema="fair watch")
    with captured_statements(source.engine) as seen:
        assert read_ids(source) == IN_WINDOW
    statement, params = window_statement(seen)
    assert "2026" not in statement and str(int(START.timestamp())) not in statement
    assert params == PG_BOUNDS[storage]
    assert f'FROM "fair watch"."{name}"' in statement  # quoted by SQLAlchemy


@pytest.mark.integration
def test_postgres_queries(postgres_url: str, pg_engine: sa.Engine, make_source: MakeSource) -> None:
    name = pg_table(pg_engine, "timestamptz", list(EVENTS))
    quoted = pg_engine.dialect.identifier_preparer.quote(name)
    wrapped = make_source(postgres_url, query=f"SELECT * FROM {quoted} WHERE id <> 4")
    assert read_ids(wrapped) == [3, 5]
    own_query = f"SELECT * FROM {quoted} WHERE ts >= :start AND ts < :end"
    own = make_source(postgres_url, query=own_query)
    with captured_statements(own.engine) as seen:
        assert read_ids(own) == IN_WINDOW
    ((statement, params),) = data_reads(seen, prefix=f"SELECT * FROM {quoted}")
    assert "2026" not in statement and list(params.values()) == [START, END]


@pytest.mark.integration
def test_postgres_label_table_and_missing_objects(
    postgres_url: str, pg_engine: sa.Engine, make_source: MakeSource
) -> None:
    name = pg_table(pg_engine, "timestamptz", list(EVENTS))
    labels = make_source(postgres_url, timestamp_column=None, table=name)
    assert sorted(labels.read(START, END).frame["id"]) == [i for i, _ in EVENTS]
    with pytest.raises(SourceError, match="table 'no_such_table' not found"):
        make_source(postgres_url, table="no_such_table").read(START, END)
    with pytest.raises(SourceError, match="column 'event_time' not found") as info:
        make_source(postgres_url, "event_time", table=name).read(START, END)
    password = sa.make_url(postgres_url).password
    assert password and password not in str(info.value) and "***" in str(info.value)


@pytest.mark.integration
def test_unreachable_database_and_wrong_password_do_not_leak_it(
    postgres_url: str, make_source: MakeSource
) -> None:
    real = sa.make_url(postgres_url)
    secret = "s3cret-" + uuid.uuid4().hex
    for url in (real.set(password=secret, port=free_port()), real.set(password=secret)):
        source = make_source(url.render_as_string(hide_password=False), table="t")
        with pytest.raises(SourceError, match="OperationalError") as info:
            source.read(START, END)
        assert secret not in str(info.value) and "***" in str(info.value)
        assert secret not in source.describe()
