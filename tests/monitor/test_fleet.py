"""The fleet: replicas publish their counts, one central fairwatch judges them all.

The reference is one evaluation over the union of the replicas' logs (itself pinned to the row path
in test_counts): the central's evaluation of the published counts must equal it value for value.
The logs are test_counts' dirty log (NULL and text in numeric columns, blank and missing categories,
two models in one table), dealt to three replicas by row.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from monitor.cli.preflight import check_sources
from monitor.config import settings_from_dict
from monitor.core.errors import SourceError
from monitor.evaluation.evaluators import build_evaluators
from monitor.evaluation.results import ModelEvaluation
from monitor.reading import publish as publish_module
from monitor.sources import count_files
from monitor.sources.published import directory as directory_module
from monitor.sources.published.directory import HEARTBEAT
from tests.monitor.test_counts import NOW, SQLITE_TIMESTAMPS, comparable, dirty_log, model_config, sqlite_log
from tests.monitor.test_file_counts import dirty_text_log, write_jsonl

PODS = ("pod-a", "pod-b", "pod-c")


def _model(source: dict[str, Any], **keys: Any) -> dict[str, Any]:
    """test_counts' model reading ``source``, with more ``keys``."""
    return model_config(source) | keys


def _settings(model: dict[str, Any]) -> Any:
    return settings_from_dict({"models": [model]})


def _logs(tmp_path: Path, frame: pd.DataFrame) -> list[str]:
    """The dirty log dealt to the replicas by row (each its own SQLite file)."""
    ts_type, to_stored = SQLITE_TIMESTAMPS["iso-text"]
    return [sqlite_log(tmp_path, frame.iloc[i :: len(PODS)], ts_type, to_stored) for i in range(len(PODS))]


def _table(url: str) -> dict[str, Any]:
    return {"kind": "sql", "url": url, "table": "predictions", "timestamp_format": "iso_utc"}


def _evaluate(model: dict[str, Any], at: Any, **explicit: Any) -> ModelEvaluation:
    with build_evaluators(_settings(model)) as evaluators:
        return evaluators["tox"].evaluate(at, **explicit)


def _publish(
    tmp_path: Path, store: Path, at: Any, frame: pd.DataFrame | None = None
) -> list[ModelEvaluation]:
    frame = dirty_log() if frame is None else frame
    return [
        _evaluate(_model(_table(url), publish={"url": str(store), "publisher": pod}), at)
        for url, pod in zip(_logs(tmp_path, frame), PODS, strict=True)
    ]


def _union(tmp_path: Path, at: Any, **explicit: Any) -> ModelEvaluation:
    ts_type, to_stored = SQLITE_TIMESTAMPS["iso-text"]
    url = sqlite_log(tmp_path, dirty_log(), ts_type, to_stored)
    return _evaluate(_model(_table(url)), at, **explicit)


def test_the_central_equals_one_evaluation_of_the_union(tmp_path: Path) -> None:
    """Scheduled windows ending on a pane boundary, and an explicit range of whole panes."""
    store = tmp_path / "store"
    published = _publish(tmp_path, store, NOW)
    # a sidecar publishes and judges nothing itself: no windows, no series, no alerts
    assert all(p.windows == () and p.published_panes for p in published)
    assert sum(p.rows_read for p in published) > 0
    central = _model({"kind": "published", "url": str(store)})
    fleet = _evaluate(central, NOW)
    union = _union(tmp_path, NOW)
    assert comparable(fleet) == comparable(union)
    assert fleet.windows and fleet.windows[0].values  # something was computed
    assert sorted(fleet.publishers or {}) == list(PODS) and fleet.stale_publishers == ()
    start, end = NOW - timedelta(hours=7), NOW - timedelta(hours=1)
    ranged = _evaluate(central, NOW, start=start, end=end)
    assert comparable(ranged) == comparable(_union(tmp_path, NOW, start=start, end=end))


def test_sidecars_of_json_lines_logs_equal_the_union(tmp_path: Path) -> None:
    """The sidecar's usual log: JSON Lines with test_file_counts' dirt (mixed timestamp forms, NA
    strings, numbers as text, lists, missing keys, a line being written). Unreadable lines and
    timestamps belong to no pane: each publisher says how many its newest read rejected."""
    frame = dirty_text_log()
    store = tmp_path / "store"
    for i, pod in enumerate(PODS):
        path = write_jsonl(tmp_path / "pods" / pod, frame.iloc[i :: len(PODS)], gz=False)
        _evaluate(_model({"kind": "files", "path": path}, publish={"url": str(store), "publisher": pod}), NOW)
    fleet = _evaluate(_model({"kind": "published", "url": str(store)}), NOW)
    union = _evaluate(_model({"kind": "files", "path": str(tmp_path / "pods" / "*" / "log-*.jsonl")}), NOW)
    assert comparable(fleet) == comparable(union)
    assert fleet.rejected["timestamp_invalid"] > 0 and fleet.rejected["line_invalid"] == len(PODS)


def test_publishing_again_replaces_and_a_restart_counts_only_open_panes(tmp_path: Path) -> None:
    """A retried or restarted publisher never counts twice; sealed panes are not published again."""
    store = tmp_path / "store"
    first = _publish(tmp_path, store, NOW)
    files = sorted(p.relative_to(store) for p in store.rglob("*.arrow"))
    again = _publish(tmp_path, store, NOW)  # new processes: nothing in memory
    assert sorted(p.relative_to(store) for p in store.rglob("*.arrow")) == files
    # the 8 panes of 04:00-11:00 (6 h window + 2 h label delay) the first time; again only those not
    # sealed (2 h 10 min after their end) at 12:00: 09:00, 10:00 and 11:00
    assert [p.published_panes for p in first] == [8, 8, 8]
    assert [p.published_panes for p in again] == [3, 3, 3]
    fleet = _evaluate(_model({"kind": "published", "url": str(store)}), NOW)
    assert comparable(fleet) == comparable(_union(tmp_path, NOW))


def test_a_central_window_rounds_out_to_whole_panes(tmp_path: Path) -> None:
    """At 12:20 the central's 1 h window [11:20, 12:20) counts the panes of 11:00 and 12:00: the
    union over [11:00, 13:00) (here: everything up to the last publication)."""
    store = tmp_path / "store"
    _publish(tmp_path, store, NOW + timedelta(minutes=20))
    central = _evaluate(_model({"kind": "published", "url": str(store)}), NOW + timedelta(minutes=20))
    whole = _union(tmp_path, NOW, start=NOW - timedelta(hours=1), end=NOW + timedelta(hours=1))
    (one_hour,) = [w for w in central.windows if w.window == "1h"]
    assert one_hour.n_rows == whole.windows[0].n_rows > 0


def test_a_publisher_that_stops_still_counts_and_is_reported_stale(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    _publish(tmp_path, store, NOW)
    later = NOW + timedelta(hours=1)  # on a pane boundary: the union's windows are whole panes too
    urls = _logs(tmp_path, dirty_log())
    for url, pod in zip(urls[:2], PODS[:2], strict=True):  # pod-c was scaled down
        _evaluate(_model(_table(url), publish={"url": str(store), "publisher": pod}), later)
    central = _model({"kind": "published", "url": str(store), "stale_after": "20m"})
    with caplog.at_level("WARNING", logger="monitor"):
        fleet = _evaluate(central, later)
    assert fleet.stale_publishers == ("pod-c",)
    assert fleet.publishers is not None and fleet.publishers["pod-c"] == NOW.timestamp()
    assert fleet.publishers["pod-a"] == later.timestamp()
    assert any("publisher pod-c has not published" in r.getMessage() for r in caplog.records)
    # its panes still count: the union of all three logs, not of two
    assert comparable(fleet) == comparable(_union(tmp_path, later))


def test_a_write_cut_short_is_never_read(tmp_path: Path) -> None:
    """A publisher killed mid-write leaves a temporary file: the central ignores it, the publisher's
    next start removes it."""
    store = tmp_path / "store"
    _publish(tmp_path, store, NOW)
    folder = next(p.parent for p in store.rglob("*.arrow") if "pod-a" in str(p))
    cut = folder / f".{int(NOW.timestamp())}.arrow.999.tmp"
    cut.write_bytes(b"ARROW1 half a file")
    (folder / "12345.arrow").write_bytes(b"not arrow at all")  # a damaged file: logged, not counted
    fleet = _evaluate(_model({"kind": "published", "url": str(store)}), NOW)
    assert comparable(fleet) == comparable(_union(tmp_path, NOW))
    _publish(tmp_path, store, NOW)
    assert not cut.exists()
    beat = json.loads((folder / HEARTBEAT).read_text())
    assert beat["publisher"] == "pod-a" and beat["pid"] == os.getpid()


def test_a_central_whose_config_differs_says_so(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _publish(tmp_path, store, NOW)
    other = _model({"kind": "published", "url": str(store)}, score_decimals=1)
    with build_evaluators(_settings(other)) as evaluators, pytest.raises(SourceError) as failure:
        evaluators["tox"].evaluate(NOW)
    assert "other config(s)" in str(failure.value) and "score_decimals" in str(failure.value)


def test_fleet_config_errors_name_the_key(tmp_path: Path) -> None:
    table = _table("sqlite:///x.db")
    with pytest.raises(Exception, match="publish: only counts are published"):
        _settings(
            _model(
                table,
                task="regression",
                columns={"timestamp": "ts", "score": "s", "label": "l"},
                publish={"url": "s"},
            )
        )
    with pytest.raises(Exception, match="needs `url`"):
        _settings(_model({"kind": "published"}))
    with pytest.raises(Exception, match=r"models\[0\]\.publish\.url: 'post gres' is no URL scheme"):
        _settings(_model(table, publish={"url": "post gres://x", "publisher": "p"}))
    with pytest.raises(Exception, match="publish: a published source has no log of its own"):
        _settings(_model({"kind": "published", "url": "s"}, publish={"url": "s"}))


# --- found by review: each failed before its fix ------------------------------------------------


def _central(store: Path, at: Any) -> ModelEvaluation:
    return _evaluate(_model({"kind": "published", "url": str(store)}), at)


def test_a_pane_published_while_open_is_published_again_after_a_restart(tmp_path: Path) -> None:
    """Labels land in the 09:00 pane while its sidecar is down; the pane was open when last published
    and sealed meanwhile: the restarted sidecar counts it again, not just the open panes."""
    store = tmp_path / "store"
    ts_type, to_stored = SQLITE_TIMESTAMPS["iso-text"]
    url = sqlite_log(tmp_path, dirty_log(), ts_type, to_stored)
    sidecar = _model(_table(url), publish={"url": str(store), "publisher": "pod-a"})
    _evaluate(sidecar, NOW)
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        changed = conn.execute(
            "UPDATE predictions SET label = 1 WHERE ts >= '2026-11-22T09:00' AND ts < '2026-11-22T10:00'"
        ).rowcount
    assert changed > 100
    later = NOW + timedelta(hours=1)
    _evaluate(sidecar, later)  # a new process: a restart
    assert comparable(_central(store, later)) == comparable(_evaluate(_model(_table(url)), later))


def test_another_pane_size_replaces_the_old_panes(tmp_path: Path) -> None:
    """Published with 15 min panes, then (a config change) 1 h panes: the old ones overlap the new
    ones and would count every row twice."""
    store = tmp_path / "store"
    ts_type, to_stored = SQLITE_TIMESTAMPS["iso-text"]
    url = sqlite_log(tmp_path, dirty_log(), ts_type, to_stored)
    for size in ("15m", "1h"):
        _evaluate(
            _model(_table(url), publish={"url": str(store), "publisher": "pod-a"}, panes={"size": size}), NOW
        )
    assert len(list(store.rglob("*.arrow"))) == 8  # 04:00-11:00, hourly
    assert comparable(_central(store, NOW)) == comparable(_evaluate(_model(_table(url)), NOW))


def test_json_lines_rows_written_into_a_sealed_pane_are_published_at_the_recheck(tmp_path: Path) -> None:
    """A log file has no row totals to compare: the sealed panes are counted again every recheck."""
    store, log = tmp_path / "store", tmp_path / "pod" / "log.jsonl"
    log.parent.mkdir()
    frame = dirty_log()
    late = (frame["ts"] >= NOW - timedelta(hours=6)) & (frame["ts"] < NOW - timedelta(hours=5))

    def write(part: pd.DataFrame) -> None:
        records = part.assign(ts=part["ts"].map(lambda t: t.isoformat())).astype(object)
        log.write_text(
            "".join(
                json.dumps({k: (None if v != v else v) for k, v in r.items()}) + "\n"
                for r in records.to_dict("records")
            )
        )

    write(frame[~late])
    source = {"kind": "files", "path": str(log)}
    sidecar = _model(source, publish={"url": str(store), "publisher": "pod-a"}, panes={"recheck": "1m"})
    at = NOW + timedelta(hours=1)
    with build_evaluators(_settings(sidecar)) as evaluators:
        evaluators["tox"].evaluate(NOW)
        write(frame)  # the 07:00 pane's rows arrive late (a delayed log shipper)
        evaluators["tox"].evaluate(NOW + timedelta(minutes=2))
        evaluators["tox"].evaluate(at)
    assert comparable(_central(store, at)) == comparable(_evaluate(_model(source), at))


def test_a_publisher_long_gone_is_removed_and_no_longer_matters(tmp_path: Path) -> None:
    """A pod gone two days ago, whose identity columns were text (thresholded differently): its panes
    are outside every window, so they neither fail the central nor count; the next publisher's
    cleanup removes its folder."""
    store = tmp_path / "store"
    ts_type, to_stored = SQLITE_TIMESTAMPS["iso-text"]
    old = sqlite_log(tmp_path, dirty_log(), ts_type, to_stored)
    with sqlite3.connect(old.removeprefix("sqlite:///")) as conn:  # identity columns of text
        conn.execute("UPDATE predictions SET male = 'yes' WHERE male = 1.0")
    later = NOW + timedelta(days=2)
    frame = dirty_log()
    new = sqlite_log(tmp_path, frame.assign(ts=frame["ts"] + timedelta(days=2)), ts_type, to_stored)
    _evaluate(_model(_table(old), publish={"url": str(store), "publisher": "old-pod"}), NOW)
    central = _model({"kind": "published", "url": str(store)})
    with build_evaluators(_settings(central)) as evaluators:  # before the cleanup
        fleet = evaluators["tox"].evaluate(later)
    assert fleet.publishers is not None and "old-pod" not in fleet.publishers
    assert comparable(fleet) != {} and fleet.stale_publishers == ()
    _evaluate(_model(_table(new), publish={"url": str(store), "publisher": "new-pod"}), later)
    assert not list(store.rglob("old-pod"))  # removed by new-pod
    assert comparable(_central(store, later)) == comparable(_evaluate(_model(_table(new)), later))


def test_a_file_that_cannot_be_read_once_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    _publish(tmp_path, store, NOW)
    real, failed = directory_module.PaneDirectory._bytes, []

    def flaky(self: Any, path: str) -> bytes:
        if path.endswith(".arrow") and not failed:
            failed.append(path)
            raise OSError(errno.EIO, "Input/output error")
        data: bytes = real(self, path)
        return data

    monkeypatch.setattr(directory_module.PaneDirectory, "_bytes", flaky)
    with build_evaluators(_settings(_model({"kind": "published", "url": str(store)}))) as evaluators:
        # found by review: the pane was left out and the tick reported part of the fleet; now the
        # tick fails (the last values stay, the source is down) and the next one counts it
        with pytest.raises(SourceError, match=r"cannot be read: .*Input/output error"):
            evaluators["tox"].evaluate(NOW)
        second = evaluators["tox"].evaluate(NOW)
    assert failed
    assert comparable(second) == comparable(_union(tmp_path, NOW))


def test_two_processes_publishing_under_one_name_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A fixed `publisher:` shared by replicas: each would overwrite the other's panes. While the other
    publishes, a process refuses - the newcomer too; once the other has stopped (two intervals), it
    takes over. A config reload (a new evaluator in the same process) is the same process."""
    store = tmp_path / "store"
    urls = _logs(tmp_path, dirty_log())

    def sidecar(url: str) -> Any:
        return build_evaluators(
            _settings(_model(_table(url), publish={"url": str(store), "publisher": "same"}))
        )

    def on_another_host() -> None:  # what a pod elsewhere would have written
        (beat,) = store.rglob(HEARTBEAT)
        beat.write_text(json.dumps(json.loads(beat.read_text()) | {"host": "another-pod", "pid": 1}))

    first, reloaded = sidecar(urls[0]), sidecar(urls[0])
    monkeypatch.setattr(publish_module, "_PROCESS", "another-process")
    second = sidecar(urls[1])
    try:
        first["tox"].evaluate(NOW)
        reloaded["tox"].evaluate(NOW + timedelta(seconds=30))  # the same process: not refused
        on_another_host()
        with pytest.raises(SourceError, match="another process publishes as 'same'"):
            second["tox"].evaluate(NOW + timedelta(minutes=1))  # a newcomer is refused too
        first["tox"].evaluate(NOW + timedelta(minutes=1))
        on_another_host()
        with pytest.raises(SourceError, match="another process publishes as 'same'"):
            second["tox"].evaluate(NOW + timedelta(minutes=2))
        with caplog.at_level("WARNING", logger="monitor"):
            second["tox"].evaluate(NOW + timedelta(minutes=4))  # silent for three minutes: taken over
        assert "it has stopped: publishing again" in caplog.text
    finally:
        for evaluators in (first, reloaded, second):
            evaluators.close()


def test_a_publisher_back_from_a_long_silence_is_not_removed_and_lost_files_come_back(tmp_path: Path) -> None:
    """Found by review: a peer's cleanup ran while a publisher, silent for days, wrote its first panes
    (its heartbeat still old): they were removed and never published again. Now the heartbeat comes
    first, the cleanup reads it again before removing, and a sealed pane whose file is gone, however
    it went, is published again at the recheck."""
    store = tmp_path / "store"
    urls = _logs(tmp_path, dirty_log())
    back = _model(_table(urls[2]), publish={"url": str(store), "publisher": "pod-c"})
    _evaluate(back, NOW - timedelta(days=3))
    with build_evaluators(_settings(back)) as evaluators:
        evaluators["tox"].evaluate(NOW)  # back: heartbeat first, then its panes
        _evaluate(_model(_table(urls[0]), publish={"url": str(store), "publisher": "pod-a"}), NOW)
        assert len(list(store.rglob("pod-c/*.arrow"))) == 8  # not taken for a dead one
        for path in list(store.rglob("pod-c/*.arrow"))[:3]:
            path.unlink()  # removed by hand (or by anything else)
        evaluators["tox"].evaluate(NOW + timedelta(hours=1, minutes=1))  # the recheck puts them back
    start, end = NOW - timedelta(hours=6), NOW
    pods = _evaluate(_model({"kind": "published", "url": str(store)}), NOW, start=start, end=end)
    ts_type, to_stored = SQLITE_TIMESTAMPS["iso-text"]
    frame = dirty_log()
    both = sqlite_log(tmp_path, pd.concat([frame.iloc[0::3], frame.iloc[2::3]]), ts_type, to_stored)
    assert comparable(pods) == comparable(_evaluate(_model(_table(both)), NOW, start=start, end=end))


def test_store_folders_never_leave_the_store() -> None:
    assert "/" not in count_files.folder_name("../../etc/passwd") and count_files.folder_name("..") != ".."
    assert count_files.folder_name("pod-a") == "pod-a"


def test_a_publisher_whose_clock_is_a_minute_off_loses_nothing(tmp_path: Path) -> None:
    """Rows are counted in the panes of their own timestamps: one pod a minute ahead, one a minute
    behind, and the central (on its own clock) still equals the union on whole panes."""
    store = tmp_path / "store"
    offsets = (timedelta(minutes=1), timedelta(0), -timedelta(minutes=1))
    for url, pod, off in zip(_logs(tmp_path, dirty_log()), PODS, offsets, strict=True):
        _evaluate(_model(_table(url), publish={"url": str(store), "publisher": pod}), NOW + off)
    start, end = NOW - timedelta(hours=7), NOW - timedelta(hours=1)
    fleet = _evaluate(_model({"kind": "published", "url": str(store)}), NOW, start=start, end=end)
    assert comparable(fleet) == comparable(_union(tmp_path, NOW, start=start, end=end))
    assert _central(store, NOW).stale_publishers == ()


def test_validate_connect_checks_what_was_published(tmp_path: Path) -> None:
    """`fairwatch validate --connect` on a central: the store, and counts published for its config."""
    store = tmp_path / "store"
    _publish(tmp_path, store, NOW)

    def problems(source: dict[str, Any], **keys: Any) -> list[str]:
        (check,) = check_sources(_settings(_model(source, **keys)))
        return list(check.problems)

    assert problems({"kind": "published", "url": str(store)}) == []
    (missing,) = problems({"kind": "published", "url": str(tmp_path / "nowhere")})
    assert missing.startswith("models[0].source.url: no directory")
    (other,) = problems({"kind": "published", "url": str(store)}, score_decimals=1)
    assert "1 other config(s)" in other
    empty = tmp_path / "empty"
    empty.mkdir()
    (nothing,) = problems({"kind": "published", "url": str(empty)})
    assert "nothing published yet for model 'tox'" in nothing
    for path in store.rglob("*.arrow"):
        path.write_bytes(b"damaged")
    (unreadable,) = problems({"kind": "published", "url": str(store)})
    assert "no pane they published can be read" in unreadable
