"""A sidecar tailing its pod's text log: each tick counts only the new lines, and what it publishes
equals a whole read of the same files at that moment - through appends, a half-written line,
rotation by rename, gzip'd rotated files, ``copytruncate``, a file rewritten in place.

The reference is test_fleet's: the central's evaluation of the published counts against one
evaluation of the log files as they are (itself pinned to the row path in test_counts and
test_file_counts). The statements the tail runs are counted to show that a tick reads only what is
new.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from monitor.core.errors import SourceError
from monitor.evaluation.evaluators import build_evaluators
from monitor.sources.files.source import FileSource
from monitor.sources.files.tail import TextTail
from tests.monitor.test_counts import NOW, comparable, dirty_log
from tests.monitor.test_fleet import _evaluate, _model, _settings


def _lines(rows: pd.DataFrame) -> bytes:
    """JSON Lines as a model server writes them: ISO timestamps, null for NaN."""
    records = rows.assign(ts=rows["ts"].map(lambda t: t.isoformat())).astype(object)
    return "".join(
        json.dumps({k: (None if v != v else v) for k, v in r.items()}) + "\n"
        for r in records.to_dict("records")
    ).encode()


def _csv(rows: pd.DataFrame, *, header: bool) -> bytes:
    text: str = rows.assign(ts=rows["ts"].map(lambda t: t.isoformat())).to_csv(index=False, header=header)
    return text.encode()


class Sidecar:
    """A publishing sidecar over ``folder/log-*`` that ticks on demand; the tail's statements counted."""

    def __init__(
        self, folder: Path, store: Path, fmt: str = "jsonl", kept: Path | None = None, **keys: Any
    ) -> None:
        self.folder, self.store, self.keys = folder, store, keys
        self.source = {"kind": "files", "path": str(folder / "log-*"), "format": fmt}
        model = _model(self.source, publish={"url": str(store), "publisher": "pod"}, **keys)
        if kept is not None:  # panes.directory: the tail's counts survive a restart there
            model["panes"] = {"directory": str(kept)}
        self._evaluators = build_evaluators(_settings(model), persist_panes=kept is not None)
        self.evaluator = self._evaluators["tox"]

    @property
    def tail(self) -> TextTail | None:
        source = self.evaluator.source
        assert isinstance(source, FileSource)
        return source._tail

    def tick(self, at: datetime) -> int:
        """Publish at ``at``; the statements the tail ran for it."""
        before = self.tail.parts_counted if self.tail else 0
        self.evaluator.evaluate(at)
        assert self.tail is not None, "the sidecar gave up tailing"
        return self.tail.parts_counted - before

    def same_as_whole_read(self, at: datetime) -> None:
        central = _evaluate(_model({"kind": "published", "url": str(self.store)}, **self.keys), at)
        assert comparable(central) == comparable(_evaluate(_model(self.source, **self.keys), at))

    def close(self) -> None:
        self._evaluators.close()


@pytest.fixture
def sidecar(tmp_path: Path) -> Iterator[Sidecar]:
    (tmp_path / "logs").mkdir()
    car = Sidecar(tmp_path / "logs", tmp_path / "store")
    yield car
    car.close()


def _spy_on_copies(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes of each copy the tail makes of new lines, from now on."""
    import monitor.sources.files.tail as tail_module

    copied: list[int] = []
    copy = tail_module._copy

    def counting(fh: Any, out: Any, start: int, end: int) -> None:
        copied.append(end - start)
        copy(fh, out, start, end)

    monkeypatch.setattr(tail_module, "_copy", counting)
    return copied


def _until(frame: pd.DataFrame, lo: datetime, hi: datetime) -> pd.DataFrame:
    return frame[(frame["ts"] >= lo) & (frame["ts"] < hi)]


def test_appends_a_torn_line_and_rotations_equal_a_whole_read(sidecar: Sidecar) -> None:
    frame = dirty_log()
    logs = sidecar.folder
    t = [NOW - timedelta(hours=5 - k) for k in range(6)]  # whole hours: the central's windows are whole panes
    log = logs / "log-b.jsonl"
    first = _lines(_until(frame, NOW - timedelta(hours=9), t[0]))
    torn = _lines(_until(frame, t[0], t[1]).head(1))
    log.write_bytes(first + torn[:-25])  # a line the writer is still writing
    assert sidecar.tick(t[0]) == 1  # the whole file, once
    sidecar.same_as_whole_read(t[0])  # the torn line: no row, and line_invalid on both sides

    with log.open("ab") as out:  # the line finished, and more
        out.write(torn[-25:] + _lines(_until(frame, t[0], t[1]).iloc[1:]))
    assert sidecar.tick(t[1]) == 1
    sidecar.same_as_whole_read(t[1])
    assert sidecar.tick(t[1] + timedelta(seconds=30)) == 0  # nothing new: no statement at all

    # rotation by rename: the renamed file is the same file (not counted again), the new one is new
    log.rename(logs / "log-a.jsonl")
    (logs / "log-b.jsonl").write_bytes(_lines(_until(frame, t[1], t[2])))
    assert sidecar.tick(t[2]) == 1
    sidecar.same_as_whole_read(t[2])

    # the rotated file gzip'd (a new file): counted whole once, then left alone
    with (logs / "log-a.jsonl").open("rb") as raw, gzip.open(logs / "log-a.jsonl.gz", "wb") as packed:
        shutil.copyfileobj(raw, packed)
    (logs / "log-a.jsonl").unlink()
    with (logs / "log-b.jsonl").open("ab") as out:
        out.write(_lines(_until(frame, t[2], t[3])))
    assert sidecar.tick(t[3]) == 2  # the gzip'd file and the new lines
    sidecar.same_as_whole_read(t[3])
    assert sidecar.tick(t[3] + timedelta(seconds=30)) == 0

    # copytruncate: the old lines move to a new file, the log starts again empty
    shutil.copy(logs / "log-b.jsonl", logs / "log-b.1.jsonl")
    with (logs / "log-b.jsonl").open("r+b") as out:
        out.truncate(0)
    (logs / "log-b.jsonl").write_bytes(_lines(_until(frame, t[3], t[4])))
    assert sidecar.tick(t[4]) == 2  # the copy, and the truncated log from its start
    sidecar.same_as_whole_read(t[4])

    # a file gone from the glob takes its rows with it, as in a whole read
    (logs / "log-a.jsonl.gz").unlink()
    with (logs / "log-b.jsonl").open("ab") as out:
        out.write(_lines(_until(frame, t[4], t[5])))
    assert sidecar.tick(t[5]) == 1
    sidecar.same_as_whole_read(t[5])


def test_a_file_rewritten_in_place_is_counted_again_from_its_start(sidecar: Sidecar) -> None:
    """Rows inserted into the middle of the file (same inode, longer, same first bytes): the last
    bytes counted changed, so the file is counted again rather than read from a stale offset."""
    frame = dirty_log()
    log = sidecar.folder / "log-a.jsonl"
    middle = (frame["ts"] >= NOW - timedelta(hours=3)) & (frame["ts"] < NOW - timedelta(hours=2))
    log.write_bytes(_lines(frame[~middle]))
    sidecar.tick(NOW)
    inode = os.stat(log).st_ino
    with log.open("r+b") as out:  # rewritten in place: the same inode
        out.write(_lines(frame))
    assert os.stat(log).st_ino == inode
    assert sidecar.tick(NOW + timedelta(hours=1)) == 1  # at the recheck: the sealed panes changed
    sidecar.same_as_whole_read(NOW + timedelta(hours=1))


def test_csv_logs_are_tailed_with_their_header(tmp_path: Path) -> None:
    frame = dirty_log().drop(columns=["pred", "cls"])
    (tmp_path / "logs").mkdir()
    car = Sidecar(tmp_path / "logs", tmp_path / "store", fmt="csv")
    try:
        log = tmp_path / "logs" / "log-a.csv"
        t0, t1 = NOW - timedelta(hours=1), NOW
        log.write_bytes(_csv(_until(frame, NOW - timedelta(hours=9), t0), header=True))
        assert car.tick(t0) == 1
        car.same_as_whole_read(t0)
        with log.open("ab") as out:
            out.write(_csv(_until(frame, t0, t1), header=False))
        assert car.tick(t1) == 1
        car.same_as_whole_read(t1)
    finally:
        car.close()


def test_what_a_part_cannot_count_is_counted_whole(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A boolean word in a CSV group column: its value depends on how pandas types the whole
    file's column, which the new rows alone cannot tell. The tail says why and the panes are counted whole - the
    published values still equal the whole read."""
    frame = dirty_log().drop(columns=["pred", "cls"])
    (tmp_path / "logs").mkdir()
    car = Sidecar(tmp_path / "logs", tmp_path / "store", fmt="csv")
    try:
        log = tmp_path / "logs" / "log-a.csv"
        t0, t1 = NOW - timedelta(hours=1), NOW
        log.write_bytes(_csv(_until(frame, NOW - timedelta(hours=9), t0), header=True))
        car.tick(t0)
        words = _until(frame, t0, t1).assign(race="True")
        with log.open("ab") as out:
            out.write(_csv(words, header=False))
        with caplog.at_level(logging.INFO, logger="monitor.sources.files.source"):
            car.evaluator.evaluate(t1)
        assert car.tail is None and "not tailing them" in caplog.text and "'race'" in caplog.text
        car.same_as_whole_read(t1)
    finally:
        car.close()


def test_a_row_dated_far_ahead_is_never_lost(sidecar: Sidecar, caplog: pytest.LogCaptureFixture) -> None:
    """A writer whose clock is days ahead: the tail cannot place the row in a pane it keeps, so it
    counts the panes whole instead of dropping the row."""
    frame = dirty_log()
    rows = _until(frame, NOW - timedelta(hours=9), NOW)
    ahead = rows.tail(1).assign(ts=NOW + timedelta(days=3))
    (sidecar.folder / "log-a.jsonl").write_bytes(_lines(rows) + _lines(ahead))
    with caplog.at_level(logging.INFO, logger="monitor.sources.files.source"):
        sidecar.evaluator.evaluate(NOW)
    assert sidecar.tail is None and "after the newest pane" in caplog.text
    sidecar.same_as_whole_read(NOW)


def test_steady_state_reads_only_the_new_bytes(sidecar: Sidecar, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the first tick, a tick copies only the bytes appended since the last one."""

    frame = dirty_log()
    log = sidecar.folder / "log-a.jsonl"
    log.write_bytes(_lines(_until(frame, NOW - timedelta(hours=9), NOW - timedelta(hours=1))))
    sidecar.tick(NOW - timedelta(hours=1))
    copied = _spy_on_copies(monkeypatch)
    new = _lines(_until(frame, NOW - timedelta(hours=1), NOW))
    with log.open("ab") as out:
        out.write(new)
    assert sidecar.tick(NOW) == 1
    assert copied == [len(new)]
    sidecar.same_as_whole_read(NOW)


def test_a_restarted_sidecar_goes_on_from_its_kept_offsets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``panes.directory``, the offsets and counts are kept there: after a restart only the
    lines written meanwhile are read; a log rotated meanwhile is counted again where it changed."""

    frame = dirty_log()
    logs, kept = tmp_path / "logs", tmp_path / "kept"
    logs.mkdir()
    log = logs / "log-a.jsonl"
    t0, t1, t2 = NOW - timedelta(hours=2), NOW - timedelta(hours=1), NOW
    log.write_bytes(_lines(_until(frame, NOW - timedelta(hours=9), t0)))
    car = Sidecar(logs, tmp_path / "store", kept=kept)
    car.tick(t0)
    car.close()  # a restart: the counts are written as the source closes
    assert (kept / "tox" / "tail" / "tail.json").exists()

    new = _lines(_until(frame, t0, t1))
    with log.open("ab") as out:
        out.write(new)
    copied = _spy_on_copies(monkeypatch)
    car = Sidecar(logs, tmp_path / "store", kept=kept)
    assert car.tick(t1) == 1 and copied == [len(new)]  # only what was written while it was down
    car.same_as_whole_read(t1)
    car.close()

    # down again, and the log was rotated by copytruncate meanwhile: what changed is counted again
    shutil.copy(log, logs / "log-b.jsonl")
    with log.open("r+b") as out:
        out.truncate(0)
    log.write_bytes(_lines(_until(frame, t1, t2)))
    copied.clear()
    car = Sidecar(logs, tmp_path / "store", kept=kept)
    assert car.tick(t2) == 2  # the copy (a new file) and the truncated log (from its start)
    car.same_as_whole_read(t2)
    car.close()
    folder = kept / "tox" / "tail"
    named = {n for f in json.loads((folder / "tail.json").read_text())["files"] for n in f["panes"].values()}
    assert {p.name for p in folder.glob("*.arrow")} == named  # the files of earlier saves are gone


def test_counts_kept_for_another_config_are_not_used(tmp_path: Path) -> None:
    frame = dirty_log()
    logs, kept = tmp_path / "logs", tmp_path / "kept"
    logs.mkdir()
    (logs / "log-a.jsonl").write_bytes(_lines(_until(frame, NOW - timedelta(hours=9), NOW)))
    car = Sidecar(logs, tmp_path / "store", kept=kept)
    car.tick(NOW)
    car.close()
    manifest = kept / "tox" / "tail" / "tail.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps(data | {"shape": "another config"}))
    car = Sidecar(logs, tmp_path / "store", kept=kept)
    assert car.tick(NOW) == 1  # counted whole again, not read from a stale offset
    car.same_as_whole_read(NOW)
    car.close()


# --- found by review: each failed before its fix ------------------------------------------------


def test_a_horizon_of_days_is_tailed(tmp_path: Path) -> None:
    """A 2-day window: the oldest run of panes is counted first, and the log's newest rows lie more
    than a day after it - they are kept, not taken for a clock far ahead (which turned tailing off)."""
    frame = dirty_log()
    (tmp_path / "logs").mkdir()
    windows = [{"name": "1h", "length": "1h"}, {"name": "2d", "length": "2d"}]
    car = Sidecar(tmp_path / "logs", tmp_path / "store", windows=windows)
    try:
        log = tmp_path / "logs" / "log-a.jsonl"
        log.write_bytes(_lines(_until(frame, NOW - timedelta(hours=9), NOW - timedelta(hours=1))))
        car.tick(NOW - timedelta(hours=1))
        with log.open("ab") as out:
            out.write(_lines(_until(frame, NOW - timedelta(hours=1), NOW)))
        assert car.tick(NOW) == 1
        car.same_as_whole_read(NOW)
    finally:
        car.close()


def test_a_json_key_no_line_has_is_still_a_missing_column(sidecar: Sidecar) -> None:
    """A typo in the config (a key no line has): a whole read refuses to count it; so does the tail -
    nothing is published with the group as missing on every row."""
    frame = dirty_log().drop(columns=["race"])
    (sidecar.folder / "log-a.jsonl").write_bytes(_lines(_until(frame, NOW - timedelta(hours=9), NOW)))
    with pytest.raises(SourceError, match="cannot count"):
        sidecar.evaluator.evaluate(NOW)
    assert not list(sidecar.store.rglob("*.arrow"))


def test_a_file_rewritten_while_its_lines_are_copied_is_not_gone_on_from(
    sidecar: Sidecar, monkeypatch: pytest.MonkeyPatch
) -> None:
    """copytruncate while the new lines are read, the writer already past the old size: the tick
    counts whole, and the tail never goes on from an offset into other bytes."""
    import monitor.sources.files.tail as tail_module

    frame = dirty_log()
    log = sidecar.folder / "log-a.jsonl"
    t0, t1, t2 = NOW - timedelta(hours=2), NOW - timedelta(hours=1), NOW
    log.write_bytes(_lines(_until(frame, NOW - timedelta(hours=9), t0)))
    sidecar.tick(t0)
    with log.open("ab") as out:
        out.write(_lines(_until(frame, t0, t1)))
    copy = tail_module._copy
    once: list[bool] = []

    def rotated_meanwhile(fh: Any, out: Any, start: int, end: int) -> None:
        copy(fh, out, start, end)
        if once:
            return
        once.append(True)
        shutil.copy(log, sidecar.folder / "log-b.jsonl")
        with log.open("r+b") as rewrite:  # the log starts again, and is soon longer than before
            rewrite.truncate(0)
            rewrite.write(_lines(_until(frame, t1, t2)) * 12)

    monkeypatch.setattr(tail_module, "_copy", rotated_meanwhile)
    sidecar.evaluator.evaluate(t1)  # counted whole this tick (the tail said: try again)
    monkeypatch.setattr(tail_module, "_copy", copy)
    assert sidecar.tail is not None
    sidecar.same_as_whole_read(t1)
    sidecar.tick(t2)
    sidecar.same_as_whole_read(t2)


def test_torn_lines_unreadable_timestamps_and_a_header_being_written(tmp_path: Path) -> None:
    """What a whole read rejects, the tail rejects the same, tick after tick: timestamps that cannot
    be read (in every part), a JSON line complete but for its newline (a row), a torn CSV row, a CSV
    file whose header is not complete yet (no row, nothing rejected)."""
    frame = dirty_log()
    frame["ts"] = frame["ts"].astype(object)
    frame.loc[frame.index % 97 == 5, "ts"] = "not a time"
    lines = _until_text(frame)
    logs = tmp_path / "logs"
    logs.mkdir()
    car = Sidecar(logs, tmp_path / "store")
    try:
        t0, t1 = NOW - timedelta(hours=1), NOW
        first, second = lines(NOW - timedelta(hours=9), t0), lines(t0, t1)
        (logs / "log-a.jsonl").write_bytes(first + second[: second.index(b"\n")])  # no newline yet
        car.tick(t0)
        car.same_as_whole_read(t0)
        with (logs / "log-a.jsonl").open("ab") as out:
            out.write(second[second.index(b"\n") :])
        car.tick(t1)
        car.same_as_whole_read(t1)
    finally:
        car.close()

    csv_logs = tmp_path / "csv"
    csv_logs.mkdir()
    rows = dirty_log().drop(columns=["pred", "cls"])
    text = _csv(_until(rows, NOW - timedelta(hours=9), NOW), header=True)
    (csv_logs / "log-a.csv").write_bytes(text[:-20])  # a torn last row
    (csv_logs / "log-b.csv").write_bytes(text[:6])  # a header still being written
    car = Sidecar(csv_logs, tmp_path / "csv-store", fmt="csv")
    try:
        car.tick(NOW)
        car.same_as_whole_read(NOW)
    finally:
        car.close()


def _until_text(frame: pd.DataFrame) -> Any:
    """JSON Lines of the rows in a range, unreadable timestamps (text) included wherever they lie."""
    stamps = pd.to_datetime(frame["ts"], errors="coerce", utc=True)

    def lines(lo: datetime, hi: datetime) -> bytes:
        rows = frame[
            (stamps.isna() & (frame.index % 2 == int(lo == NOW - timedelta(hours=9))))
            | ((stamps >= lo) & (stamps < hi))
        ]
        records = rows.assign(ts=rows["ts"].map(lambda t: t if isinstance(t, str) else t.isoformat())).astype(
            object
        )
        return "".join(
            json.dumps({k: (None if v != v else v) for k, v in r.items()}) + "\n"
            for r in records.to_dict("records")
        ).encode()

    return lines


def test_a_rewrite_between_the_offset_check_and_the_copy_is_not_gone_on_from(
    sidecar: Sidecar, monkeypatch: pytest.MonkeyPatch
) -> None:
    """copytruncate and regrowth after the old offset's bytes were checked, a line ending right at
    the old offset: the old offset's bytes are checked again after the copy, so the new content's
    first lines are not skipped."""
    import monitor.sources.files.tail as tail_module

    frame = dirty_log()
    log = sidecar.folder / "log-a.jsonl"
    t0, t1, t2 = NOW - timedelta(hours=2), NOW - timedelta(hours=1), NOW
    log.write_bytes(_lines(_until(frame, NOW - timedelta(hours=9), t0)))
    sidecar.tick(t0)
    with log.open("ab") as out:
        out.write(_lines(_until(frame, t0, t1)))
    real, done = tail_module._last_line_end, []

    def racing(fh: Any, offset: int, size: int) -> int:
        if not done and offset:
            done.append(True)
            shutil.copy(log, sidecar.folder / "log-b.jsonl")
            first = _lines(_until(frame, t0, t0 + timedelta(minutes=20)))
            first += b" " * (offset - len(first) - 1) + b"\n"  # a line ends at the old offset
            with log.open("r+b") as rewrite:
                rewrite.truncate(0)
                rewrite.write(first + _lines(_until(frame, t1, t2)))
            size = os.fstat(fh.fileno()).st_size
        return real(fh, offset, size)

    monkeypatch.setattr(tail_module, "_last_line_end", racing)
    sidecar.evaluator.evaluate(t1)
    monkeypatch.setattr(tail_module, "_last_line_end", real)
    assert done and sidecar.tail is not None  # this tick counted whole; the tail goes on
    sidecar.same_as_whole_read(t1)
    sidecar.tick(t2)
    sidecar.same_as_whole_read(t2)


def test_a_file_shrinking_while_copied_costs_one_tick_not_the_tail(
    sidecar: Sidecar, monkeypatch: pytest.MonkeyPatch
) -> None:
    import monitor.sources.files.tail as tail_module

    frame = dirty_log()
    log = sidecar.folder / "log-a.jsonl"
    t0, t1 = NOW - timedelta(hours=1), NOW
    log.write_bytes(_lines(_until(frame, NOW - timedelta(hours=9), t0)))
    sidecar.tick(t0)
    with log.open("ab") as out:
        out.write(_lines(_until(frame, t0, t1)))
    copy, done = tail_module._copy, []

    def shrinking(fh: Any, out: Any, start: int, end: int) -> None:
        if not done:
            done.append(True)
            shutil.copy(log, sidecar.folder / "log-b.jsonl")
            with log.open("r+b") as rewrite:
                rewrite.truncate(0)
        copy(fh, out, start, end)

    monkeypatch.setattr(tail_module, "_copy", shrinking)
    sidecar.evaluator.evaluate(t1)
    monkeypatch.setattr(tail_module, "_copy", copy)
    assert done and sidecar.tail is not None
    sidecar.same_as_whole_read(t1)
    # the tick's later reads tailed again (the copy counted whole once): nothing is left to count
    assert sidecar.tick(t1 + timedelta(minutes=1)) == 0


def test_after_a_restart_the_keys_seen_before_still_count(tmp_path: Path) -> None:
    """The JSON keys the counted lines had are kept with the counts: after a restart, new lines
    without a sparse key (or no new lines) do not make the key look missing from the log."""
    frame = dirty_log()
    logs, kept = tmp_path / "logs", tmp_path / "kept"
    logs.mkdir()
    log = logs / "log-a.jsonl"
    t0, t1 = NOW - timedelta(hours=1), NOW
    log.write_bytes(_lines(_until(frame, NOW - timedelta(hours=9), t0)))
    car = Sidecar(logs, tmp_path / "store", kept=kept)
    car.tick(t0)
    car.close()
    car = Sidecar(logs, tmp_path / "store", kept=kept)
    try:
        assert car.tick(t0 + timedelta(minutes=1)) == 0  # nothing new: no statement, and still tailing
        with log.open("ab") as out:
            out.write(_lines(_until(frame, t0, t1).assign(female=float("nan"))))
        assert car.tick(t1) == 1
        car.same_as_whole_read(t1)
    finally:
        car.close()


def test_a_lone_sidecar_judges_its_own_tailed_counts_in_the_same_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/fleet.md's recipe for a sidecar that judges its own pod as cheaply as it publishes: one
    config, a model that publishes its tailed counts to a folder of the pod and the model that judges
    them (`kind: published`, `name:` the first). It reports what a whole read of the log reports, on
    whole panes; a tick after new lines reads only those."""
    from monitor.config import settings_from_dict

    logs = tmp_path / "logs"
    logs.mkdir()
    log, frame = logs / "log-1.jsonl", dirty_log()
    log.write_bytes(_lines(_until(frame, NOW - timedelta(days=1), NOW - timedelta(hours=1))))
    source = {"kind": "files", "path": str(logs / "log-*"), "format": "jsonl"}
    store = str(tmp_path / "counts")
    counts = _model(source, publish={"url": store, "publisher": "pod"}) | {"name": "tox-counts"}
    judge = _model({"kind": "published", "url": store, "name": "tox-counts"})
    copied = _spy_on_copies(monkeypatch)
    with build_evaluators(settings_from_dict({"models": [counts, judge]})) as evaluators:
        for at in (NOW - timedelta(hours=1), NOW):
            if at == NOW:  # an hour of new lines
                new = _lines(_until(frame, NOW - timedelta(hours=1), NOW))
                with log.open("ab") as out:
                    out.write(new)
                copied.clear()
            evaluators["tox-counts"].evaluate(at)  # the service runs both every interval
            judged = evaluators["tox"].evaluate(at)
            assert comparable(judged) == comparable(_evaluate(_model(source), at))
    assert sum(copied) == len(new)  # the second tick read the new lines, nothing else
