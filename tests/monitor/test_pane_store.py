"""Sealed panes on disk (``panes.directory``): a restarted service starts from the panes the last run
kept - fewer statements at its first tick, the same values as re-reading its whole windows - and
finds the rows written into them while it was down; a damaged file, a changed config and an
unwritable folder cost a re-read, never a wrong value or a crash."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from monitor.app import build_app
from monitor.config import ModelConfig, SourceConfig, load_settings
from monitor.core.errors import ConfigError, SourceError
from monitor.evaluation.evaluator import Evaluator
from monitor.evaluation.evaluators import build_evaluators
from monitor.reading.pane_store import PaneStore, fingerprint
from monitor.sources.contract import CountRequest
from monitor.sources.sql.source import SqlSource
from tests.monitor.test_counts import config
from tests.monitor.test_panes import (
    OPEN,
    PANES,
    TICKS,
    Store,
    growing_log,
    parquet_store,
    same_report,
    sqlite_store,
)

SIZE = timedelta(minutes=30)
PG = "postgresql+psycopg://fw:hunter2@db:5432/logs"


def evaluator(store: Store, directory: Path | None, *, persist: bool = True, **settings: Any) -> Evaluator:
    """The dirty log's model through panes kept in ``directory`` (closed at teardown); ``settings``
    override the panes' or, with ``groups``, the model's."""
    groups = settings.pop("groups", None)
    panes = {**PANES, **settings, **({"directory": str(directory)} if directory else {})}
    built = config(store.source, aggregate=True, panes=panes)
    if groups is not None:
        model = built.models[0].model_copy(update={"groups": groups(built.models[0].groups)})
        built = built.model_copy(update={"models": [model]})
    out = build_evaluators(built, persist_panes=persist)["tox"]
    OPEN.append(out)
    return out


@contextlib.contextmanager
def panes_counted(model: Evaluator) -> Iterator[list[datetime]]:
    """The panes ``model`` counts whole from its source meanwhile (new ones, recounts), by start:
    a statement for panes asks for each pane's range (and no window's)."""
    source = model.source
    counted: list[datetime] = []
    read_counts = source.read_counts  # type: ignore[attr-defined]

    def spy(request: CountRequest, start: datetime, end: datetime) -> Any:
        if request.ranges and all(hi - lo == SIZE for lo, hi in request.ranges):
            counted.extend(lo for lo, _ in request.ranges)
        return read_counts(request, start, end)

    source.read_counts = spy  # type: ignore[attr-defined]
    try:
        yield counted
    finally:
        del source.read_counts  # type: ignore[attr-defined]


def whole(store: Store) -> Evaluator:
    out = build_evaluators(config(store.source, aggregate=True, panes=False))["tox"]
    OPEN.append(out)
    return out


def files(directory: Path) -> dict[str, set[datetime]]:
    """The pane files under ``directory``: fingerprint folder -> pane starts."""
    return {
        folder.name: {datetime.fromtimestamp(int(f.stem), UTC) for f in folder.glob("*.arrow")}
        for folder in sorted((directory / "tox").iterdir())
        if folder.is_dir()  # not the .lock file
    }


def first_run(tmp_path: Path, storage: str = "epoch-float") -> tuple[Store, pd.DataFrame, Path]:
    """A log grown over the first four ticks, evaluated through panes kept on disk."""
    early, frame = growing_log()
    store = sqlite_store(
        tmp_path, early, storage, timestamp_format="iso_utc" if storage == "iso-text" else "auto"
    )
    directory = tmp_path / "panes"
    running = evaluator(store, directory)
    seen = TICKS[0]
    for tick in TICKS[:4]:
        store.append(frame[(frame["ts"] >= seen) & (frame["ts"] < tick)])
        seen = tick
        running.evaluate(tick)
    store.append(frame[(frame["ts"] >= seen) & (frame["ts"] < TICKS[4])])
    return store, frame, directory


@pytest.mark.parametrize("storage", ["epoch-float", "iso-text"])
def test_a_restart_starts_from_the_kept_panes_with_the_same_values(tmp_path: Path, storage: str) -> None:
    """Restarted, a model reads at its first tick what it would have read had it kept running - not
    every pane anew (a cold start's first tick, in one statement per run of consecutive panes)."""
    store, frame, directory = first_run(tmp_path, storage)
    running = OPEN[-1]  # the first run's evaluator, as if it had not stopped
    (kept,) = files(directory).values()
    assert len(kept) >= 8
    restarted, cold = evaluator(store, directory), evaluator(store, None)
    reference = whole(store)
    for second, tick in enumerate(TICKS[4:6]):
        store.append(frame[(frame["ts"] >= TICKS[4]) & (frame["ts"] < tick)] if second else frame[:0])
        with panes_counted(restarted) as warm_counted, panes_counted(cold) as cold_counted:
            warm, again = restarted.evaluate(tick), cold.evaluate(tick)
        kept_running = running.evaluate(tick)
        assert same_report(warm) == same_report(reference.evaluate(tick)) == same_report(again), tick
        assert same_report(warm) == same_report(kept_running)
        assert warm.late_rows == 0
        # what it would have read running: its new pieces, and at most the recounts the running one
        # owes its panes (a restarted one owes none yet: its panes are due within panes.recheck)
        assert warm.pieces_read is not None and warm.pieces_read <= kept_running.pieces_read <= len(kept)
        if not second:
            # the cold one counts every pane anew, in one statement per run of consecutive panes
            assert len(warm_counted) < 8 <= len(cold_counted)
            assert again.pieces_read is not None and again.pieces_read < len(kept)


def test_rows_written_while_down_are_late_at_the_first_tick(tmp_path: Path) -> None:
    store, frame, directory = first_run(tmp_path)
    down = TICKS[4] - timedelta(hours=4, minutes=10)  # inside a sealed pane of the 6 h window
    assert down.replace(minute=30 * (down.minute // 30)) in next(iter(files(directory).values()))
    ours = frame[frame["model"] == "tox"]  # the log's other model's rows are not this model's late rows
    store.append(ours.sample(25, random_state=1).assign(ts=down, id=range(90_000, 90_025)))
    restarted = evaluator(store, directory)
    first = restarted.evaluate(TICKS[4])
    assert first.late_rows == 25
    assert same_report(first) == same_report(whole(store).evaluate(TICKS[4]))
    assert restarted.panes is not None
    assert next(iter(files(directory).values())) == set(restarted.panes._kept)  # read again, written again
    assert restarted.evaluate(TICKS[5]).late_rows == 0
    # the files were rewritten with the late rows: restarted again, nothing is late
    again = evaluator(store, directory).evaluate(TICKS[6])
    assert again.late_rows == 0 and again.pieces_read is not None
    assert same_report(again) == same_report(whole(store).evaluate(TICKS[6]))


def test_late_rows_are_counted_once_when_the_read_after_the_recheck_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recheck drops the pane that gained rows, then the source fails before the tick ends: the
    pane's file goes with it, so a restart reads the pane afresh and does not report the same rows
    as late a second time."""
    store, frame, directory = first_run(tmp_path)
    down = TICKS[4] - timedelta(hours=4, minutes=10)
    ours = frame[frame["model"] == "tox"]  # the log's other model's rows are not this model's late rows
    store.append(ours.sample(25, random_state=1).assign(ts=down, id=range(90_000, 90_025)))
    restarted = evaluator(store, directory)
    fail = SourceError("the database went away")

    def read_counts(self: SqlSource, *args: Any) -> Any:
        raise fail

    with monkeypatch.context() as patch:
        patch.setattr(SqlSource, "read_counts", read_counts)
        with pytest.raises(SourceError):
            restarted.evaluate(TICKS[4])  # the recheck ran (it counts, not reads) and found the 25
    pane = down.replace(minute=30 * (down.minute // 30))
    assert pane not in next(iter(files(directory).values()))
    again = evaluator(store, directory).evaluate(TICKS[4])
    assert again.late_rows == 0
    assert same_report(again) == same_report(whole(store).evaluate(TICKS[4]))


def test_a_damaged_file_is_logged_once_removed_and_read_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, _frame, directory = first_run(tmp_path)
    (folder,) = [f for f in (directory / "tox").iterdir() if f.is_dir()]  # beside the .lock file
    paths = sorted(folder.glob("*.arrow"))
    paths[-1].write_bytes(b"not arrow")
    paths[-2].write_bytes(paths[-2].read_bytes()[:-100])  # cut short
    paths[-3].write_bytes(paths[-4].read_bytes())  # a whole file under another pane's name
    model = evaluator(store, directory)
    with caplog.at_level(logging.WARNING, logger="monitor"), panes_counted(model) as counted:
        restarted = model.evaluate(TICKS[4])
    assert same_report(restarted) == same_report(whole(store).evaluate(TICKS[4]))
    warned = [r for r in caplog.records if "cannot be read" in r.getMessage()]
    assert sorted(r.getMessage().split(" file ")[1].split(" ")[0] for r in warned) == [
        str(p) for p in paths[-3:]
    ]
    assert all(r.exc_info is None for r in warned)
    assert restarted.late_rows == 0
    damaged = {datetime.fromtimestamp(int(p.stem), UTC) for p in paths[-3:]}
    assert damaged <= set(counted)  # counted again from the source


def test_a_changed_config_counts_afresh_and_removes_the_old_files(tmp_path: Path) -> None:
    store, _frame, directory = first_run(tmp_path)
    (old,) = files(directory)

    def other_groups(groups: list[Any]) -> list[Any]:
        return groups[:2]  # without the intersection

    changed, cold = (
        evaluator(store, directory, groups=other_groups),
        evaluator(store, None, groups=other_groups),
    )
    counted: list[Any] = []
    for tick in TICKS[4:6]:  # as a cold start: every pane counted at the first tick
        with panes_counted(changed) as now_counted:
            first, again = changed.evaluate(tick), cold.evaluate(tick)
        counted += now_counted
        assert first.pieces_read == again.pieces_read and same_report(first) == same_report(again)
    (new,) = files(directory)
    assert new != old
    # none of the old files was used: every pane now kept was counted afresh
    assert len(counted) >= 8 and files(directory)[new] <= set(counted)
    # another pane size or table is another config too; another password is not
    shape, source = CountRequest("ts", ("a",), (), ()), SourceConfig(kind="sql", url=PG, table="t")
    assert fingerprint(shape, SIZE, source) != fingerprint(shape, 2 * SIZE, source)
    assert fingerprint(shape, SIZE, source) != fingerprint(
        shape, SIZE, source.model_copy(update={"table": "u"})
    )
    rotated = source.model_copy(update={"url": PG.replace("hunter2", "swordfish")})
    assert fingerprint(shape, SIZE, source) == fingerprint(shape, SIZE, rotated)
    # the score column named in the request changes nothing unless it is rounded
    scored = CountRequest("ts", ("a",), (), (), score="a")
    assert fingerprint(scored, SIZE, source) == fingerprint(shape, SIZE, source)
    rounded = CountRequest("ts", ("a",), (), (), score="a", score_decimals=3)
    assert fingerprint(rounded, SIZE, source) != fingerprint(shape, SIZE, source)


def test_the_folder_holds_exactly_the_kept_panes(tmp_path: Path) -> None:
    """Panes that slide out of every window, are dropped by a recheck or never kept lose their files."""
    store, frame, directory = first_run(tmp_path)
    (first,) = files(directory).values()
    running = evaluator(store, directory)
    seen = TICKS[4]
    for tick in [*TICKS[4:], TICKS[-1] + timedelta(hours=2), TICKS[-1] + timedelta(hours=3)]:
        store.append(frame[(frame["ts"] >= seen) & (frame["ts"] < tick)])
        seen = tick
        running.evaluate(tick)
        assert running.panes is not None
        (on_disk,) = files(directory).values()
        assert on_disk == set(running.panes._kept)
    read_from = tick - timedelta(hours=8)  # the 6 h label window, 2 h label delay
    assert min(on_disk) >= read_from - timedelta(minutes=30)
    assert {p for p in first if p < read_from - timedelta(minutes=30)}  # they were there, and slid out


def test_the_memory_budget_applies_to_loaded_panes(tmp_path: Path) -> None:
    store, _frame, directory = first_run(tmp_path)
    restarted = evaluator(store, directory, max_rows=900)
    assert same_report(restarted.evaluate(TICKS[4])) == same_report(whole(store).evaluate(TICKS[4]))
    assert restarted.panes is not None and 0 < restarted.panes.kept_rows() <= 900
    (on_disk,) = files(directory).values()
    assert on_disk == set(restarted.panes._kept)


def test_values_come_back_as_the_same_types(tmp_path: Path) -> None:
    """Counted frames as sources return them - Python objects of several types in one column
    (SQLite), NumPy and pandas string dtypes (Parquet) - are read back identical, cell by cell."""
    frames = {
        "objects": pd.DataFrame(
            {
                "score": np.array(
                    [0.25, None, "oops", 3, float("nan"), Decimal("0.10"), True, b"x"], dtype=object
                ),
                "label": np.array([np.float64(1.0), np.int64(2), None, "a", 1.5, 0, 1, 2], dtype=object),
                "male": [1.0, 0.0, np.nan, 1.0, 0.0, 1.0, 0.0, 1.0],
                "n": np.arange(8, dtype=np.int64),
                "__rows": np.array([1, 2, 3, 4, 5, 6, 7, 8], dtype=object),
            }
        ),
        "typed": pd.DataFrame(
            {
                "pred": pd.array(["a", None, "c"], dtype="str"),
                "cls": pd.array([1, None, 3], dtype="Int64"),
                "flag": [True, False, True],
                "cat": pd.Categorical(["x", "y", "x"]),
                "__rows": np.array([3, 1, 2], dtype=np.int64),
            }
        ),
        "empty": pd.DataFrame({"score": np.array([], dtype=object), "__rows": np.array([], dtype=object)}),
    }
    _early, log = growing_log()
    for name, source in {
        "sqlite": sqlite_store(tmp_path, log, "epoch-float"),
        "parquet": parquet_store(tmp_path, log),
    }.items():
        through = evaluator(source, None)
        through.evaluate(TICKS[0])
        through.evaluate(TICKS[1])
        assert through.panes is not None
        frames[name] = max((k.frame for k in through.panes._kept.values()), key=len)
    shape = CountRequest("ts", ("score",), (), ())
    panes = {datetime(2026, 1, 1, i, tzinfo=UTC): frame for i, frame in enumerate(frames.values())}
    memory = SourceConfig(kind="memory", name="m")
    writer = PaneStore.open(str(tmp_path / "store"), "m", memory, "key")
    assert writer.load(shape, SIZE) == []
    writer.sync({p: (f, int(f["__rows"].sum())) for p, f in panes.items()}, frozenset({"identity"}))
    read = PaneStore.open(str(tmp_path / "store"), "m", memory, "key").load(shape, SIZE)
    assert [s.pane for s in read] == list(panes)
    for (name, frame), stored in zip(frames.items(), read, strict=True):
        assert stored.flagged == {"identity"} and stored.rows == int(frame["__rows"].sum()), name
        pd.testing.assert_frame_equal(stored.frame, frame, check_exact=True)
        assert dict(stored.frame.dtypes) == dict(frame.dtypes), name
        for column in frame.columns:
            assert [type(v) for v in stored.frame[column]] == [type(v) for v in frame[column]], (name, column)
            assert [repr(v) for v in stored.frame[column]] == [repr(v) for v in frame[column]], (name, column)
    assert len({type(v) for v in frames["sqlite"]["score"]}) == 3  # None, float and text in one column


def test_an_unwritable_directory_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    early, _frame = growing_log()
    store = sqlite_store(tmp_path, early, "epoch-float")
    settings = config(store.source, aggregate=True, panes={"directory": str(tmp_path / "a-file" / "panes")})
    with pytest.raises(ConfigError, match=r"^models\[0\]\.panes\.directory: cannot write .*a-file/panes/tox"):
        build_app(settings)


def test_a_model_that_cannot_be_built_closes_the_sources_built_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("")
    early, _frame = growing_log()
    store = sqlite_store(tmp_path, early, "epoch-float")
    settings = config(store.source, aggregate=True)
    first = settings.models[0]
    second = first.model_copy(
        update={
            "name": "tox2",
            "panes": first.panes.model_copy(update={"enabled": True, "directory": str(tmp_path / "a-file")}),
        }
    )
    closed: list[str] = []
    monkeypatch.setattr(SqlSource, "close", lambda self: closed.append(self.describe()))
    with pytest.raises(ConfigError, match=r"^models\[1\]\.panes\.directory"):
        build_evaluators(settings.model_copy(update={"models": [first, second]}), persist_panes=True)
    assert len(closed) == 1 and "predictions" in closed[0]  # the first model's source, built and closed


def test_a_folder_that_fails_while_running_leaves_the_panes_in_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, frame, directory = first_run(tmp_path)
    running = evaluator(store, directory)
    running.evaluate(TICKS[4])
    (folder,) = [f for f in (directory / "tox").iterdir() if f.is_dir()]  # beside the .lock file
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    folder.write_text("")  # the folder's name is now a file: nothing can be written into it
    seen = TICKS[4]
    with caplog.at_level(logging.WARNING, logger="monitor"):
        for tick in TICKS[5:]:
            store.append(frame[(frame["ts"] >= seen) & (frame["ts"] < tick)])
            seen = tick
            assert same_report(running.evaluate(tick)) == same_report(whole(store).evaluate(tick))
    warned = [r for r in caplog.records if "keeping them in memory" in r.getMessage()]
    assert len(warned) == 1 and warned[0].exc_info is None


def test_one_off_commands_leave_the_folder_alone(tmp_path: Path) -> None:
    early, _frame = growing_log()
    store = sqlite_store(tmp_path, early, "epoch-float")
    evaluator(store, tmp_path / "panes", persist=False).evaluate(TICKS[0])
    assert not (tmp_path / "panes").exists()


def test_a_relative_directory_is_relative_to_the_config_file(tmp_path: Path) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    (folder / "fairwatch.yaml").write_text(
        "models:\n"
        "  - name: m\n"
        "    source: {kind: sql, url: 'sqlite:///log.db', table: predictions}\n"
        "    groups: [{attribute: g, kind: categorical, column: g}]\n"
        "    panes: {directory: state/panes}\n"
    )
    assert load_settings(folder / "fairwatch.yaml").models[0].panes.directory == str(folder / "state/panes")


def test_every_model_name_gets_a_folder_of_its_own_inside_the_directory(tmp_path: Path) -> None:
    """Any name the config accepts - 300 characters (a file name's limit is 255 bytes), dots only,
    names that differ only by case (one folder where names are compared ignoring case, as on
    macOS and Windows) - is a folder directly inside the directory, distinct from every other's
    even ignoring case, and its panes come back."""
    names = ["m" * 300, "m" * 299 + "M", ".", "..", "...", "Tox", "tox", "TOX", "a:b", "-x_y.z"]
    for name in names:  # the schema accepts them all
        source, groups = (
            {"kind": "memory", "name": "m"},
            [{"attribute": "g", "kind": "categorical", "column": "g"}],
        )
        assert ModelConfig.model_validate({"name": name, "source": source, "groups": groups}).name == name
    directory = tmp_path / "panes"
    shape, memory = CountRequest("ts", ("score",), (), ()), SourceConfig(kind="memory", name="m")
    frame = pd.DataFrame({"score": [0.5, 0.25], "__rows": np.array([2, 3], dtype=np.int64)})
    pane = datetime(2026, 1, 1, tzinfo=UTC)
    for i, name in enumerate(names):
        writer = PaneStore.open(str(directory), name, memory, "key")
        assert writer.load(shape, SIZE) == []
        writer.sync({pane: (frame.assign(score=frame["score"] + i), 5)}, frozenset())
    folders = sorted(p.name for p in directory.iterdir())
    assert len(folders) == len(names) and len({f.casefold() for f in folders}) == len(names)
    assert all(len(f.encode()) <= 100 and f.strip(".") for f in folders)
    assert "tox" in folders  # a plain name is its own folder
    for i, name in enumerate(names):
        (stored,) = PaneStore.open(str(directory), name, memory, "key").load(shape, SIZE)
        assert stored.frame["score"].tolist() == [0.5 + i, 0.25 + i] and stored.rows == 5


def test_a_pane_file_that_cannot_be_removed_costs_no_evaluation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An unreadable entry that cannot be removed either (here a folder under a pane file's name; a
    volume remounted read-only does the same to a damaged file) leaves the panes in memory only -
    the first tick after the restart is not lost to the error."""
    store, _frame, directory = first_run(tmp_path)
    (folder,) = [f for f in (directory / "tox").iterdir() if f.is_dir()]  # beside the .lock file
    last = sorted(folder.glob("*.arrow"))[-1]
    last.unlink()
    (last / "x").mkdir(parents=True)
    model = evaluator(store, directory)
    with caplog.at_level(logging.WARNING, logger="monitor"), panes_counted(model):
        restarted = model.evaluate(TICKS[4])
    assert same_report(restarted) == same_report(whole(store).evaluate(TICKS[4]))
    assert [r for r in caplog.records if "keeping them in memory" in r.getMessage()]


def test_pane_files_copied_from_another_model_are_not_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two models of one log with the same source and groups count the same fingerprint: files copied
    from one's folder into the other's matched their row totals and were read as the other's counts."""
    store, _frame, directory = first_run(tmp_path)
    (folder,) = [f for f in (directory / "tox").iterdir() if f.is_dir()]
    other = directory / "other" / folder.name
    other.mkdir(parents=True)
    for path in folder.glob("*.arrow"):
        shutil.copy(path, other / path.name)
    settings = config(store.source, aggregate=True, panes={**PANES, "directory": str(directory)})
    model = settings.models[0].model_copy(update={"name": "other"})
    settings = settings.model_copy(update={"models": [model]})
    with caplog.at_level(logging.WARNING, logger="monitor"):
        evaluator_of_other = build_evaluators(settings, persist_panes=True)["other"]
        OPEN.append(evaluator_of_other)
        evaluator_of_other.evaluate(TICKS[4])
    refused = [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()]
    assert refused and all("written for model 'tox'" in m for m in refused)
    assert not list(other.glob("*.arrow")) or all(
        pa.ipc.open_file(pa.OSFile(str(p)))
        .schema.metadata[b"fairwatch.pane"]
        .decode()
        .count('"model": "other"')
        for p in other.glob("*.arrow")
    )  # what is there now, the model wrote itself


def test_a_second_service_on_the_same_folder_is_refused(tmp_path: Path) -> None:
    """Two services with one panes.directory: the second deleted the first's folder, no lock, no
    warning. Now it is refused at start-up, naming the holder; within one process (a config reload)
    the folder is shared, and released when the last evaluator closes."""
    import subprocess
    import sys

    store, _frame, directory = first_run(tmp_path)  # holds the lock (this process)
    code = (
        "from pathlib import Path\n"
        "from monitor.config import SourceConfig\n"
        "from monitor.core.errors import ConfigError\n"
        "from monitor.reading.pane_store import PaneStore\n"
        "source = SourceConfig.model_validate({'kind': 'sql', 'url': 'sqlite:///x.db', 'table': 't'})\n"
        "try:\n"
        f"    PaneStore.open({str(directory)!r}, 'tox', source, 'models[0].panes.directory')\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
        "else:\n"
        "    print('opened')\n"
    )
    refused = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert refused.startswith("models[0].panes.directory: the sealed panes of model tox in ")
    assert f"in use by fairwatch pid {os.getpid()} on " in refused
    again = evaluator(store, directory)  # the same process: shared
    again.evaluate(TICKS[4])
    for ev in [e for e in OPEN if e.panes is not None]:
        ev.close()
    OPEN.clear()
    opened = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert opened.strip() == "opened"  # every evaluator closed: the folder is free


def test_writing_resumes_when_the_disk_has_room_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk used to end writing for good (and nothing showed it). The file-size limit of the
    process (RLIMIT_FSIZE) makes the operating system refuse the writes as a full disk does: the
    panes stay in memory, fairwatch_pane_store_up says 0, and the next evaluation with room writes
    every kept pane again."""
    import resource
    import signal

    store, frame, directory = first_run(tmp_path)
    running = evaluator(store, directory)
    assert running.evaluate(TICKS[4]).pane_store_up is True
    (folder,) = [f for f in (directory / "tox").iterdir() if f.is_dir()]
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of the signal
    seen, states = TICKS[4], []
    try:
        with caplog.at_level(logging.WARNING, logger="monitor"):
            for tick in TICKS[5:7]:  # a new pane is sealed within these ticks: its file cannot be written
                store.append(frame[(frame["ts"] >= seen) & (frame["ts"] < tick)])  # the log has room
                seen = tick
                resource.setrlimit(resource.RLIMIT_FSIZE, (64, hard))
                try:
                    result = running.evaluate(tick)
                finally:
                    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
                states.append(result.pane_store_up)
                assert same_report(result) == same_report(whole(store).evaluate(tick))
    finally:
        signal.signal(signal.SIGXFSZ, handler)
    assert states[-1] is False
    failed = [r.getMessage() for r in caplog.records if "cannot write sealed panes" in r.getMessage()]
    assert len(failed) == 1  # once per episode
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="monitor"):
        store.append(frame[(frame["ts"] >= seen) & (frame["ts"] < TICKS[7])])
        assert running.evaluate(TICKS[7]).pane_store_up is True
    assert [r for r in caplog.records if "writing sealed panes into" in r.getMessage()]
    assert running.panes is not None
    on_disk = {datetime.fromtimestamp(int(p.stem), UTC) for p in folder.glob("*.arrow")}
    assert on_disk == set(running.panes._kept)  # every kept pane written again
    # and the restarted service starts from them
    restarted = evaluator(store, directory).evaluate(TICKS[7])
    assert same_report(restarted) == same_report(whole(store).evaluate(TICKS[7]))
