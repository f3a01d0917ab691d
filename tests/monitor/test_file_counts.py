"""Log files counted by DuckDB - Parquet, CSV, JSON Lines - give exactly what reading every row gives."""

from __future__ import annotations

import glob
import gzip
import itertools
import json
import math
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from monitor.evaluation.evaluators import build_evaluators
from monitor.sources.count_sql import DOLLAR_DIALECT
from monitor.sources.files import parquet_counts as file_counts
from monitor.sources.files import text_counts, text_files, text_values
from monitor.sources.files.text_timestamps import TextInstant
from monitor.sources.frames import normalize_timestamps
from tests.monitor.test_counts import NOW, comparable, config, dirty_log


def write_parquet(folder: Path, frame: pd.DataFrame, parts: int = 3) -> str:
    """The log as ``parts`` rotated Parquet files (several row groups each)."""
    folder.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, len(frame), parts + 1).astype(int)
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        part = frame.iloc[lo:hi]
        pq.write_table(
            pa.Table.from_pandas(part, preserve_index=False), folder / f"log-{i}.parquet", row_group_size=400
        )
    return str(folder / "log-*.parquet")


def evaluate(path: str, *, aggregate: bool, task: str = "binary") -> tuple[Any, int]:
    """One evaluation, and how many times DuckDB was asked to count (a failed count is -1: a count
    that fails and falls back to the row path must not pass for a count)."""
    calls = []
    original = file_counts.count_parquet

    def spy(*args: Any, **kwargs: Any) -> Any:
        try:
            counted = original(*args, **kwargs)
        except Exception:
            calls.append(-1)
            raise
        calls.append(1)
        return counted

    evaluator = build_evaluators(config({"kind": "files", "path": path}, aggregate=aggregate, task=task))[
        "tox"
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("monitor.sources.files.source.count_parquet", spy)
        result = evaluator.evaluate(NOW)
    return result, sum(calls)


@pytest.mark.parametrize("task", ["binary", "multiclass"])
@pytest.mark.parametrize("zone", ["UTC", None])
def test_parquet_counts_equal_rows(tmp_path: Path, task: str, zone: str | None) -> None:
    frame = dirty_log()
    frame.loc[frame.index % 101 == 3, "ts"] = pd.NaT  # timestamps nothing can read: rejected either way
    if zone is None:
        frame["ts"] = frame["ts"].dt.tz_localize(None)  # naive: UTC wall time
    path = write_parquet(tmp_path / "logs", frame)
    counted, duckdb_calls = evaluate(path, aggregate=True, task=task)
    rows, no_calls = evaluate(path, aggregate=False, task=task)
    assert (duckdb_calls, no_calls) == (1, 0)
    assert comparable(counted) == comparable(rows)
    assert counted.rejected["timestamp_invalid"] > 0
    assert any(not math.isnan(v.value) for v in counted.windows[1].values)


def test_epoch_timestamps_in_parquet_are_read_as_rows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    frame = dirty_log()
    frame["ts"] = frame["ts"].astype("int64") // 10**9
    path = write_parquet(tmp_path / "logs", frame)
    with caplog.at_level("INFO", logger="monitor"):
        counted, _ = evaluate(path, aggregate=True)
    rows, _ = evaluate(path, aggregate=False)
    assert comparable(counted) == comparable(rows)
    assert "reading rows, not counts: timestamps stored as int64" in caplog.text


def test_a_half_written_file_sends_the_window_to_the_row_path(tmp_path: Path) -> None:
    """DuckDB cannot read a Parquet file without its footer: the row path skips and names it."""
    path = write_parquet(tmp_path / "logs", dirty_log())
    torn = tmp_path / "logs" / "log-9.parquet"
    torn.write_bytes((tmp_path / "logs" / "log-0.parquet").read_bytes()[:500])
    counted, calls = evaluate(path, aggregate=True)
    assert calls == -1 and counted.skipped_files == (str(torn),)
    assert counted.windows[1].values


# -- CSV and JSON Lines ------------------------------------------------------------------------------

ON_BOUNDS = [
    NOW - timedelta(hours=1),
    NOW - timedelta(hours=2),
    NOW - timedelta(hours=3),
    NOW - timedelta(hours=6),
]
OLD = NOW + timedelta(minutes=1)  # the mtime of a rotated file: no writer touches it any more


def text_timestamps(frame: pd.DataFrame, rng: np.random.Generator) -> list[str | float | None]:
    """The instants written in every form a log may hold: ISO (Z, offset, naive, T or space, ns),
    epoch seconds (whole and fractional, numbers or text), forms only pandas reads, and garbage."""
    out: list[str | float | None] = []
    for i, t in enumerate(frame["ts"]):
        t = pd.Timestamp(ON_BOUNDS[i % 4]) if i % 97 == 5 else t  # rows exactly on window bounds
        form = rng.integers(0, 12)
        if form == 0:
            out.append(f"{t.timestamp():.3f}")
        elif form == 1:
            out.append(float(t.timestamp()) if i % 2 else str(int(t.timestamp())))
        elif form == 2:
            out.append(t.tz_localize(None).isoformat())  # naive: UTC
        elif form == 3:
            out.append(t.tz_convert(timezone(timedelta(hours=5, minutes=30))).isoformat())
        elif form == 4:
            out.append(t.strftime("%Y%m%dT%H%M%S.%f"))  # basic ISO: only pandas reads it
        elif form == 5:
            out.append(rng.choice(["soon", "", "NA", "2026-02-30T01:00:00", "1e9", None]))
        elif form == 6:
            out.append((t + pd.Timedelta(nanoseconds=int(rng.integers(0, 999)))).isoformat())
        else:
            out.append(t.isoformat().replace("+00:00", "Z"))
    return out


def dirty_text_log(rows: int = 3000, seed: int = 11) -> pd.DataFrame:
    """``dirty_log`` with the dirt of text logs: mixed timestamp forms, NA strings, numbers that
    are not plain (`` 1``, ``1e0``), words where numbers belong, classes written two ways."""
    rng = np.random.default_rng(seed)
    frame = dirty_log(rows, seed).astype(object)
    frame["ts"] = text_timestamps(dirty_log(rows, seed), rng)
    for column in ["male", "female", "black", "score", "label"]:
        values = frame[column].to_numpy(dtype=object, copy=True)
        values[rng.random(rows) < 0.03] = "NA"
        values[rng.random(rows) < 0.02] = "n/a"
        values[rng.random(rows) < 0.01] = rng.choice(["unknown", " 1", "1e0", "0.50"])
        frame[column] = values
    frame.loc[frame.index % 37 == 4, "race"] = "a, b"  # quoted in CSV
    return frame


def thirds(frame: pd.DataFrame) -> list[pd.DataFrame]:
    bounds = np.linspace(0, len(frame), 4).astype(int)
    return [frame.iloc[lo:hi] for lo, hi in itertools.pairwise(bounds)]


def write_csv(folder: Path, frame: pd.DataFrame, *, gz: bool, torn: bool = True) -> str:
    """The log as three rotated CSV files, an empty and a header-only one, and (plain files) one
    whose last row was never finished (its writer died: no recent change)."""
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".csv.gz" if gz else ".csv"
    for i, part in enumerate(thirds(frame)):
        data = part.to_csv(index=False, lineterminator="\n").encode()
        if gz:  # an appending writer: one gzip member per flush
            half = data.index(b"\n", len(data) // 2) + 1
            data = gzip.compress(data[:half]) + gzip.compress(data[half:])
        written = folder / f"log-{i}{suffix}"
        written.write_bytes(data)
        if i < 2:
            os.utime(written, (OLD.timestamp(), OLD.timestamp()))
    header = frame.head(0).to_csv(index=False).encode()
    (folder / f"log-empty{suffix}").write_bytes(gzip.compress(b"") if gz else b"")
    (folder / f"log-header{suffix}").write_bytes(gzip.compress(header) if gz else header)
    if torn and not gz:
        last = frame.tail(5).to_csv(index=False, header=False, lineterminator="\n").encode()
        torn_file = folder / "log-torn.csv"
        torn_file.write_bytes(header + last[:-9])
        os.utime(torn_file, (OLD.timestamp(), OLD.timestamp()))
    return str(folder / f"log-*{suffix}")


def write_jsonl(folder: Path, frame: pd.DataFrame, *, gz: bool, torn: bool = True) -> str:
    """The log as JSON Lines: NaN as NaN or null, numbers as strings, booleans, lists, missing keys,
    blank lines; (plain files) a file whose writer is mid-line."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    suffix = ".jsonl.gz" if gz else ".jsonl"
    for i, part in enumerate(thirds(frame)):
        lines = []
        for record in part.to_dict("records"):
            record = {k: v for k, v in record.items() if v is not None or rng.random() < 0.5}
            draw = rng.random()
            if draw < 0.05 and isinstance(record.get("label"), float) and record["label"] in (0.0, 1.0):
                record["label"] = bool(record["label"])
            elif draw < 0.1 and isinstance(record.get("score"), float):
                record["score"] = str(record["score"])
            elif draw < 0.12:
                record["race"] = [record.get("race")]
            elif draw < 0.14:
                record.pop("male", None)
            nan_as_null = {
                k: None if isinstance(v, float) and math.isnan(v) else v for k, v in record.items()
            }
            lines.append(json.dumps(nan_as_null if i == 1 else record))
        data = ("\n".join(lines[:10]) + "\n\n  \n" + "\n".join(lines[10:]) + "\n").encode()
        written = folder / f"log-{i}{suffix}"
        written.write_bytes(gzip.compress(data) if gz else data)
        if i < 2:
            os.utime(written, (OLD.timestamp(), OLD.timestamp()))
    if torn and not gz:
        (folder / "log-live.jsonl").write_bytes(data[:-40])
    return str(folder / f"log-*{suffix}")


@contextmanager
def counted_by_duckdb() -> Iterator[list[str]]:
    """What each text count did: ``counted``, or the reason it gave up (or failed)."""
    outcomes: list[str] = []
    original = text_counts.count_text

    def spy(*args: Any, **kwargs: Any) -> Any:
        try:
            counted = original(*args, **kwargs)
        except file_counts.Uncountable as exc:
            outcomes.append(str(exc))
            raise
        except Exception as exc:
            outcomes.append(f"failed: {type(exc).__name__}: {exc}")
            raise
        outcomes.append("counted")
        return counted

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("monitor.sources.files.source.count_text", spy)
        yield outcomes


def evaluate_text(path: str, *, task: str = "binary") -> tuple[Any, Any, list[str]]:
    """The window counted (and what the count did), and read as rows."""
    results = []
    with counted_by_duckdb() as outcomes:
        for aggregate in (True, False):
            evaluator = build_evaluators(
                config({"kind": "files", "path": path}, aggregate=aggregate, task=task)
            )
            results.append(evaluator["tox"].evaluate(NOW))
    return results[0], results[1], outcomes


@contextmanager
def calls_to(owner: Any, name: str) -> Iterator[list[Any]]:
    """The arguments of each call to ``owner.name`` (which still runs)."""
    seen: list[Any] = []
    original = getattr(owner, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(args)
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(owner, name, spy)
        yield seen


@pytest.mark.parametrize(
    ("fmt", "gz", "task"),
    [
        ("csv", False, "binary"),
        ("csv", True, "multiclass"),
        ("jsonl", False, "multiclass"),
        ("jsonl", True, "binary"),
    ],
)
def test_text_counts_equal_rows(tmp_path: Path, fmt: str, gz: bool, task: str) -> None:
    frame = dirty_text_log()
    path = (write_csv if fmt == "csv" else write_jsonl)(tmp_path / "logs", frame, gz=gz)
    with (
        calls_to(text_counts, "place") as placed,
        calls_to(text_counts._Count, "_csv_type") as typed,
    ):
        counted, rows, outcomes = evaluate_text(path, task=task)
    assert outcomes == ["counted"]
    assert comparable(counted) == comparable(rows)
    assert counted.rejected["timestamp_invalid"] > 0 and counted.rejected.get("line_invalid", 0) == (
        0 if gz else 1
    )
    assert any(not math.isnan(v.value) for v in counted.windows[1].values)
    assert placed and len(placed[0][0]) > 10  # timestamps only pandas reads were placed by pandas
    if fmt == "csv" and task == "multiclass":
        assert typed  # "1" and "1.0": the files' type of the class column was asked for


def small_log(rows: int = 240) -> pd.DataFrame:
    """A log of text files with no trouble in it: counted (the cases below add one each)."""
    frame = dirty_log(rows).astype(object)
    frame["ts"] = [t.isoformat() for t in dirty_log(rows)["ts"]]
    return frame


def csv_files(folder: Path, frame: pd.DataFrame, *, gz: bool = False) -> str:
    return write_csv(folder, frame, gz=gz, torn=False)


def jsonl_files(folder: Path, frame: pd.DataFrame, *, gz: bool = False) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    for i, part in enumerate(thirds(frame)):
        data = "".join(json.dumps(r) + "\n" for r in part.to_dict("records")).encode()
        (folder / f"log-{i}.jsonl{'.gz' if gz else ''}").write_bytes(gzip.compress(data) if gz else data)
    return str(folder / f"log-*.jsonl{'.gz' if gz else ''}")


def append(path: str, data: bytes) -> None:
    """Append to the last of the glob's files."""
    last = sorted(glob.glob(path))[-1]
    with open(last, "ab") as fh:
        fh.write(data)


def with_value(column: str, value: Any) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """The log with ``value`` in ``column`` of its last rows (inside the window)."""

    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.copy()
        frame[column] = frame[column].astype(object)
        frame.iloc[-3:, frame.columns.get_loc(column)] = value
        return frame

    return change


def csv_case(
    change: Callable[[pd.DataFrame], pd.DataFrame] = lambda f: f, then: Callable[[str], None] = lambda p: None
) -> Callable[[Path], str]:
    def make(folder: Path) -> str:
        path = csv_files(folder, change(small_log()))
        then(path)
        return path

    return make


def jsonl_case(
    change: Callable[[pd.DataFrame], pd.DataFrame] = lambda f: f, then: Callable[[str], None] = lambda p: None
) -> Callable[[Path], str]:
    def make(folder: Path) -> str:
        path = jsonl_files(folder, change(small_log()))
        then(path)
        return path

    return make


def gzip_case(data: Callable[[bytes], bytes]) -> Callable[[Path], str]:
    def make(folder: Path) -> str:
        path = csv_files(folder, small_log(), gz=True)
        last = folder / "log-2.csv.gz"
        last.write_bytes(data(last.read_bytes()))
        return path

    return make


def two_formats(folder: Path) -> str:
    csv_files(folder, small_log())
    jsonl_files(folder, small_log())
    return str(folder / "log-*")


def typed_two_ways(folder: Path) -> str:
    """Classes "1" and "1.0": numbers in one file, text in another (pandas: 1.0 and "1.0")."""
    frame = small_log(300)
    frame["pred"] = ["1.0" if i % 2 else "2" for i in range(300)]  # files 0 and 1: numbers
    frame.iloc[200:290, frame.columns.get_loc("pred")] = "x"  # file 2: text
    return csv_files(folder, frame)


FALLBACKS: dict[str, tuple[Callable[[Path], str], str, str]] = {
    # CSV that DuckDB reads differently from pandas, or refuses
    "csv-space-before-quote": (
        csv_case(then=lambda p: append(p, b'9,2026-11-22T11:00:00Z,tox,0.5,1, "x",,,a,f,x,y\n')),
        "binary",
        "a quoted CSV field after spaces",
    ),
    "csv-space-after-quote": (
        csv_case(then=lambda p: append(p, b'9,2026-11-22T11:00:00Z,tox,0.5,1,"1" ,,,a,f,x,y\n')),
        "binary",
        "spaces after a quoted CSV field",
    ),
    "csv-blank-before-header": (
        csv_case(
            then=lambda p: Path(sorted(glob.glob(p))[0]).write_bytes(
                b"\n" + Path(sorted(glob.glob(p))[0]).read_bytes()
            )
        ),
        "binary",
        "blank lines before the CSV header",
    ),
    "csv-other-header": (
        csv_case(
            then=lambda p: small_log(9)[
                [
                    "ts",
                    "id",
                    "model",
                    "score",
                    "label",
                    "male",
                    "female",
                    "black",
                    "race",
                    "sex",
                    "pred",
                    "cls",
                ]
            ].to_csv(Path(p).parent / "log-9.csv", index=False)
        ),
        "binary",
        "different headers",
    ),
    "csv-too-many-fields": (
        csv_case(then=lambda p: append(p, b"9,2026-11-22T11:00:00Z,tox,0.5,1,,,,a,f,x,y,EXTRA\n")),
        "binary",
        "failed: InvalidInputException",
    ),
    "csv-no-complete-row": (
        lambda folder: (
            (folder.mkdir(), (folder / "log-0.csv").write_bytes(b"id,ts,mod"))[0] or str(folder / "log-*.csv")
        ),
        "binary",
        "no complete rows",
    ),
    "csv-boolean-indicator": (
        csv_case(with_value("male", "True")),
        "binary",
        "an indicator text whose meaning depends",
    ),
    "csv-boolean-timestamp": (
        csv_case(with_value("ts", "true")),
        "binary",
        "a timestamp text whose meaning depends",
    ),
    "csv-number-model": (csv_case(with_value("model", "7")), "binary", "in the model column"),
    "csv-typed-two-ways": (typed_two_ways, "multiclass", "typed differently across files"),
    "csv-year-2300": (
        csv_case(with_value("ts", "2300-01-01T00:00:00")),
        "binary",
        "outside the years 1678-2261",
    ),
    "gzip-truncated": (gzip_case(lambda data: data[:-30]), "binary", "truncated gzip member"),
    "gzip-trailing-bytes": (
        gzip_case(lambda data: data + b"\0\0\0\0"),
        "binary",
        "bytes after the gzip data",
    ),
    "gzip-damaged": (
        gzip_case(lambda data: data[:20] + bytes(60) + data[80:]),
        "binary",
        "damaged gzip data",
    ),
    "gzip-unterminated-row": (
        gzip_case(lambda data: data + gzip.compress(b"9,2026-11-22T11:00:00Z,tox")),
        "binary",
        "gzip data ending in an unterminated line",
    ),
    "several-formats": (two_formats, "binary", "files of several formats"),
    # JSON Lines that DuckDB reads differently from json.loads, or refuses
    "jsonl-trailing-comma": (
        jsonl_case(then=lambda p: append(p, b'{"id": 9, "ts": "2026-11-22T11:00:00Z",}\n')),
        "binary",
        "trailing comma",
    ),
    "jsonl-lowercase-nan": (
        jsonl_case(then=lambda p: append(p, b'{"id": 9, "ts": "2026-11-22T11:00:00Z", "score": nan}\n')),
        "binary",
        "nan or inf spelled",
    ),
    "jsonl-null-line": (jsonl_case(then=lambda p: append(p, b"null\n")), "binary", "just null"),
    "jsonl-form-feed": (
        jsonl_case(then=lambda p: append(p, b'{"id": 9}\x0c\n')),
        "binary",
        "vertical tab or form feed",
    ),
    "jsonl-malformed-line": (
        jsonl_case(then=lambda p: append(p, b'{"id": 9, "ts": \n{"id": 10}\n')),
        "binary",
        "failed: InvalidInputException",
    ),
    "jsonl-duplicate-key": (
        jsonl_case(then=lambda p: append(p, b'{"id": 9, "score": 0.1, "score": 0.9}\n')),
        "binary",
        "failed: InvalidInputException",
    ),
    "jsonl-torn-in-parts": (
        jsonl_case(then=lambda p: append(p, b'{"id": 9}\r{"id": ')),
        "binary",
        "unterminated last line of several parts",
    ),
    "jsonl-boolean-timestamp": (jsonl_case(with_value("ts", True)), "binary", "a boolean timestamp"),
    "jsonl-number-model": (jsonl_case(with_value("model", 7)), "binary", "a number in the model column"),
    "jsonl-huge-class": (jsonl_case(with_value("pred", 2**60)), "multiclass", "a whole number beyond 2**53"),
    "jsonl-no-such-key": (
        jsonl_case(lambda f: f.drop(columns=["black"])),
        "binary",
        "have no value in the files",
    ),
}


def read_counts(path: str, task: str = "binary") -> Any:
    """What the evaluation at NOW reads when it counts (``None``: it read rows)."""
    evaluator = build_evaluators(config({"kind": "files", "path": path}, aggregate=True, task=task))["tox"]
    spans = evaluator.spans(NOW)
    ranges = tuple(dict.fromkeys(r for s in spans for r in ((s.start, s.end), (s.label_start, s.label_end))))
    read = evaluator.plan.read(ranges, min(s.label_start for s in spans), NOW, None)
    return read if read.batch.counted else None


@pytest.mark.parametrize("case", FALLBACKS)
def test_what_duckdb_would_read_differently_is_read_as_rows(
    tmp_path: Path, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    make, task, reason = FALLBACKS[case]
    path = make(tmp_path / "logs")
    with caplog.at_level("INFO", logger="monitor"), counted_by_duckdb() as outcomes:
        assert read_counts(path, task) is None
    assert len(outcomes) <= 1 and all(reason in o for o in outcomes)
    assert "reading rows, not counts" in caplog.text
    assert reason.removeprefix("failed: InvalidInputException") in caplog.text


def test_the_fallback_cases_count_once_their_trouble_is_gone(tmp_path: Path) -> None:
    """The logs the cases above start from are counted (the trouble is what each case adds)."""
    assert read_counts(csv_files(tmp_path / "csv", small_log())) is not None
    assert read_counts(jsonl_files(tmp_path / "jsonl", small_log())) is not None
    assert read_counts(csv_files(tmp_path / "gz", small_log(), gz=True)) is not None


def test_a_file_written_during_the_count_is_counted_again_from_a_copy(tmp_path: Path) -> None:
    """A writer appends (a whole row and half of the next) while DuckDB counts a file it reads in
    place: the count is repeated from copies up to each file's last newline."""
    path = csv_files(tmp_path / "logs", small_log())
    for name in glob.glob(path):
        os.utime(name, (OLD.timestamp(), OLD.timestamp()))  # rotated long ago: read in place
    checks: list[bool] = []
    unchanged = text_files.TextFiles.unchanged

    def writer_appends(files: text_files.TextFiles) -> bool:
        if not checks:
            append(path, b"9,2026-11-22T11:30:00Z,tox,0.9,1,1,,,a,f,x,y\n10,2026-11-22T11:31:00Z,tox,0.")
        checks.append(unchanged(files))
        return checks[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_files.TextFiles, "unchanged", writer_appends)
        counted, rows, outcomes = evaluate_text(path)
    assert outcomes == ["counted"] and checks == [False, True]
    assert comparable(counted) == comparable(rows)
    assert counted.rejected["line_invalid"] == 1 and counted.rows_read == rows.rows_read


def test_files_that_keep_changing_are_read_as_rows(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = csv_files(tmp_path / "logs", small_log())
    with (
        pytest.MonkeyPatch.context() as patch,
        caplog.at_level("INFO", logger="monitor"),
        counted_by_duckdb() as outcomes,
    ):
        patch.setattr(text_files.TextFiles, "unchanged", lambda files: False)
        assert read_counts(path) is None
    assert outcomes == ["files kept changing while being counted"]
    assert "reading rows, not counts: files kept changing" in caplog.text


def test_a_whole_last_object_without_its_newline_is_a_row(tmp_path: Path) -> None:
    path = jsonl_files(tmp_path / "logs", small_log())
    append(path, json.dumps({**small_log().iloc[-1].to_dict(), "id": 999}).encode())  # no newline yet
    with counted_by_duckdb() as outcomes:
        counted = read_counts(path)
    evaluator = build_evaluators(config({"kind": "files", "path": path}, aggregate=False))["tox"]
    rows = evaluator.source.read(min(s.label_start for s in evaluator.spans(NOW)), NOW)
    assert outcomes == ["counted"] and 999 in rows.frame["id"].tolist()
    assert counted.batch.n_rows == rows.n_rows and counted.batch.rejected == rows.rejected == {}


def duckdb_rows(statement: Any, texts: list[str]) -> list[tuple[Any, ...]]:
    import duckdb

    compiled = statement.compile(dialect=DOLLAR_DIALECT, compile_kwargs={"render_postcompile": True})
    with duckdb.connect() as conn:
        conn.execute("CREATE TABLE v AS SELECT unnest($1::VARCHAR[]) AS t", [texts])
        return conn.execute(compiled.string, [compiled.params[n] for n in compiled.positiontup]).fetchall()


def test_text_timestamps_are_placed_where_pandas_places_them() -> None:
    """ISO text (to the nanosecond, any offset) and epoch seconds (fractions to the last bit) next to
    window bounds: DuckDB's decision is pandas' reading of the text, or left to pandas."""
    rng = np.random.default_rng(8)
    bounds = [NOW - timedelta(hours=h, microseconds=u) for h, u in ((1, 0), (2, 123457), (0, 999999))]
    texts: list[str] = []
    for bound in bounds:
        for _ in range(300):
            t = pd.Timestamp(bound) + pd.Timedelta(nanoseconds=int(rng.integers(-3000, 3000)))
            offset = timezone(timedelta(minutes=int(rng.integers(-12 * 60, 14 * 60))))
            texts.append(
                t.tz_convert(offset).isoformat() if rng.random() < 0.5 else t.tz_localize(None).isoformat()
            )
        seconds = (bound - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(seconds=1)
        near = [seconds]
        for step in (np.inf, -np.inf):
            x = seconds
            for _ in range(6):
                x = float(np.nextafter(x, step))
                near.append(x)
        texts += [repr(x) for x in near] + [f"{x:.6f}" for x in near] + [f"{x:.9f}" for x in near]
    texts += ["2026-02-30T00:00:00", "2026-11-22", "1e9", " 1795348800", "soon"]  # left to pandas
    table = sa.table("v", sa.column("t"))
    read = sa.select(table.c.t, *TextInstant.read(table.c.t)).subquery()
    instant = TextInstant.of(read)
    ranges = [(b, NOW + timedelta(days=1)) for b in bounds] + [(NOW - timedelta(days=1), b) for b in bounds]
    flags = [
        sa.case((instant.between(lo, hi, f"lo_{i}", f"hi_{i}"), 1), else_=0)
        for i, (lo, hi) in enumerate(ranges)
    ]
    decided = duckdb_rows(sa.select(read.c.t, instant.decided, *flags), texts)
    moments = dict(zip(texts, normalize_timestamps(pd.Series(texts, dtype=object)), strict=True))
    assert {row[0] for row in decided if not row[1]} == set(texts[-5:])
    for text, was_decided, *placed in decided:
        if was_decided:
            moment = moments[text]
            assert placed == [int(pd.Timestamp(lo) <= moment < pd.Timestamp(hi)) for lo, hi in ranges], text
    # the bound .000001 s after a second: the nearest float64 reads as 46 ns before it
    assert next(row[2:] for row in decided if row[0] == "1795348799.000001") == (1, 1, 0, 0, 0, 1)


def test_duckdb_and_pandas_read_the_same_float64_from_the_same_digits(tmp_path: Path) -> None:
    """The premise of reading numbers as text: DuckDB's cast, pandas' read_csv and to_numeric, and
    json.loads of DuckDB's JSON for a number all give Python's correctly rounded float64."""
    import duckdb

    rng = np.random.default_rng(9)
    digits = np.array(list("0123456789"))
    texts = [
        "".join(rng.choice(digits, rng.integers(1, 21)))
        + "."
        + "".join(rng.choice(digits, rng.integers(1, 21)))
        for _ in range(3000)
    ]
    texts += [
        f"{m}e{k}" for m, k in zip(rng.integers(1, 10**17, 2000), rng.integers(-99, 99, 2000), strict=True)
    ]
    texts += [repr(float(x)) for x in rng.random(2000)] + [f"{1.7e9 + x:.7f}" for x in rng.random(2000) * 1e8]
    texts = [t for t in texts if re.fullmatch(text_values.NUMBER_TEXT, t)]
    expected = [float(t) for t in texts]
    cast = duckdb_rows(sa.select(sa.cast(sa.column("t"), sa.Double())).select_from(sa.table("v")), texts)
    assert [c for (c,) in cast] == expected
    assert pd.to_numeric(pd.Series(texts, dtype=object)).tolist() == expected
    (tmp_path / "n.csv").write_text("x\n" + "\n".join(texts) + "\n")
    assert pd.read_csv(tmp_path / "n.csv")["x"].tolist() == expected
    numbers = [
        t for t in texts if re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?", t)
    ]  # JSON's
    (tmp_path / "n.jsonl").write_text("".join(f'{{"x": {t}}}\n' for t in numbers))
    with duckdb.connect() as conn:
        relation = conn.read_json(
            str(tmp_path / "n.jsonl"), format="newline_delimited", columns={"x": "JSON"}
        )
        assert [json.loads(x) for (x,) in relation.fetchall()] == [json.loads(t) for t in numbers]
    assert len(numbers) > 4000


def test_csv_texts_whose_meaning_depends_on_the_column_type() -> None:
    """What read_csv would type otherwise than the text reads: such texts send the counted path to
    the files' column types (or to the row path)."""
    texts = ["0.5", "1", "1.0", "x", "True", "true", "+3e23", " 1", "inf"]
    assert text_values.csv_ambiguous(texts, as_number=True, as_text=False) == ["True", "true", "+3e23"]
    assert text_values.csv_ambiguous(texts, as_number=False, as_text=True) == ["1.0", "true", "+3e23", " 1"]
    assert pd.to_numeric(pd.Series(["+3e23"], dtype=object))[0] != 3e23  # to_numeric's reading...
    assert text_values.csv_typed(["+3e23", "1.0"], "number") == [3e23, 1.0]  # ... and read_csv's
    assert text_values.csv_typed(["True", "false"], "bool") == [True, False]
    assert text_values.csv_type(number=True, word=False, text=False, other=False) == "number"
    assert text_values.csv_type(number=True, word=True, text=False, other=False) == "text"
    assert text_values.csv_type(number=True, word=False, text=False, other=True) is None
