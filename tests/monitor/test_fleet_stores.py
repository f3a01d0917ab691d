"""Every kind of store the fleet publishes to: a directory, an object store (S3, through pyarrow.fs,
against moto's S3 server), and a database (SQLite, and a real PostgreSQL).

The reference is test_fleet's: one evaluation over the union of the replicas' logs. What is specific
to a store - replacing a pane, telling a pane published again from one already read, heartbeats,
removing the publishers long gone, a pane that cannot be read - is run on each.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from monitor.cli.preflight import check_sources
from monitor.core.errors import SourceError
from monitor.evaluation.evaluators import build_evaluators
from monitor.reading.plan import count_request
from monitor.sources.published.database import PANES, PUBLISHERS
from monitor.sources.published.store import open_store, request_fingerprint
from tests.monitor.test_counts import NOW, comparable, dirty_log
from tests.monitor.test_fleet import PODS, _evaluate, _logs, _model, _settings, _table, _union

STORES = ("directory", "s3", "sqlite", "postgresql")


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty store of each kind: its URL."""
    kind = request.param
    if kind == "directory":
        yield str(tmp_path / "store")
    elif kind == "s3":
        base, query = request.getfixturevalue("s3_url").split("?")
        yield f"{base}/{uuid.uuid4().hex}?{query}"
    else:
        url = (
            f"sqlite:///{tmp_path / 'store.db'}"
            if kind == "sqlite"
            else request.getfixturevalue("postgres_url")
        )
        engine = sa.create_engine(url)
        for table in (PANES, PUBLISHERS):
            table.drop(
                engine, checkfirst=True
            )  # every test starts with no table: the first publisher creates them
        engine.dispose()
        yield url


def _publish(tmp_path: Path, store: str, at: Any, pods: tuple[str, ...] = PODS) -> list[Any]:
    urls = dict(zip(PODS, _logs(tmp_path, dirty_log()), strict=True))
    return [
        _evaluate(_model(_table(urls[pod]), publish={"url": store, "publisher": pod}), at) for pod in pods
    ]


def _central(store: str, **source: Any) -> dict[str, Any]:
    return _model({"kind": "published", "url": store, **source})


def test_the_central_equals_the_union_and_publishing_again_replaces(tmp_path: Path, store: str) -> None:
    first = _publish(tmp_path, store, NOW)
    assert [p.published_panes for p in first] == [8, 8, 8]
    union = _union(tmp_path, NOW)
    with build_evaluators(_settings(_central(store))) as evaluators:
        fleet = evaluators["tox"].evaluate(NOW)
        assert comparable(fleet) == comparable(union) and fleet.windows[0].values
        assert sorted(fleet.publishers or {}) == list(PODS) and fleet.stale_publishers == ()
        # restarted pods publish their open panes again (replacing them, never adding) with other
        # counts: the same central process must read the new ones, keep the others
        again = _publish(tmp_path, store, NOW)
        assert [p.published_panes for p in again] == [3, 3, 3]
        assert comparable(evaluators["tox"].evaluate(NOW)) == comparable(union)
    start, end = NOW - timedelta(hours=7), NOW - timedelta(hours=1)
    ranged = _evaluate(_central(store), NOW, start=start, end=end)
    assert comparable(ranged) == comparable(_union(tmp_path, NOW, start=start, end=end))


def test_a_pane_published_again_with_other_counts_is_read_again(tmp_path: Path, store: str) -> None:
    """One central process, a pod whose open pane changes between two of its reads: the central must
    not keep the counts it read first (a store's version of a pane: a file's time, size and inode;
    an object's time to the second, read again while recent; a row's publication time and total)."""
    urls = _logs(tmp_path, dirty_log())
    whole = dirty_log()
    part = whole[whole["ts"] < NOW - timedelta(minutes=30)]  # the 11:00 pane half full
    (tmp_path / "half").mkdir()
    half = _logs(tmp_path / "half", part)
    sidecar = _model(_table(half[0]), publish={"url": store, "publisher": "pod-a"})
    with build_evaluators(_settings(_central(store))) as central:
        _evaluate(sidecar, NOW)
        central["tox"].evaluate(NOW)
        _evaluate(_model(_table(urls[0]), publish={"url": store, "publisher": "pod-a"}), NOW)
        fleet = central["tox"].evaluate(NOW)
    alone = _evaluate(_model(_table(urls[0])), NOW)
    assert comparable(fleet) == comparable(alone)


def test_a_publisher_that_stops_counts_is_reported_stale_and_is_removed_once_gone(
    tmp_path: Path, store: str
) -> None:
    _publish(tmp_path, store, NOW)
    later = NOW + timedelta(hours=1)
    _publish(tmp_path, store, later, pods=PODS[:2])  # pod-c was scaled down
    fleet = _evaluate(_central(store, stale_after="20m"), later)
    assert fleet.stale_publishers == ("pod-c",)
    assert fleet.publishers is not None and fleet.publishers["pod-c"] == NOW.timestamp()
    assert comparable(fleet) == comparable(_union(tmp_path, later))  # its panes still count
    # two days on, pod-a's cleanup removes pod-c (and pod-b, silent as long), never itself
    gone = NOW + timedelta(days=2)
    _publish(tmp_path, store, gone, pods=PODS[:1])
    shape = count_request(_settings(_central(store)).models[0], ())
    published = open_store(store, "tox", "source.url")
    try:
        assert sorted(published.heartbeats(request_fingerprint(shape))) == ["pod-a"]
        assert {p.publisher for p in published.listing(request_fingerprint(shape))} == {"pod-a"}
    finally:
        published.close()


def test_a_pane_that_cannot_be_read_is_not_counted_and_the_rest_are(
    tmp_path: Path, store: str, caplog: pytest.LogCaptureFixture
) -> None:
    _publish(tmp_path, store, NOW)
    settings = _settings(_central(store))
    fingerprint = request_fingerprint(count_request(settings.models[0], ()))
    published = open_store(store, "tox", "source.url")
    try:
        damaged = next(p for p in published.listing(fingerprint) if p.publisher == "pod-b")
        _damage(store, published, damaged.where)
    finally:
        published.close()
    with caplog.at_level(logging.WARNING, logger="monitor"):
        fleet = _evaluate(_central(store), NOW)
    assert "published pane" in caplog.text and "cannot be read" in caplog.text
    union = _union(tmp_path, NOW)
    assert 0 < fleet.rows_read < union.rows_read


def _damage(store: str, published: Any, where: str) -> None:
    """Overwrite one stored pane with bytes that are no Arrow file."""
    if store.startswith(("sqlite", "postgresql")):
        publisher, start = json.loads(where)
        engine = sa.create_engine(store)
        with engine.begin() as conn:
            conn.execute(
                PANES.update()
                .where(PANES.c.publisher == publisher, PANES.c.pane_start == start)
                .values(counts=b"damaged")
            )
        engine.dispose()
    else:
        with published.fs.open_output_stream(where) as sink:
            sink.write(b"damaged")


def test_validate_connect_checks_every_kind_of_store(tmp_path: Path, store: str) -> None:
    def problems(**keys: Any) -> list[str]:
        (check,) = check_sources(_settings(_model({"kind": "published", "url": store}, **keys)))
        return list(check.problems)

    (nothing,) = problems()
    # a directory not made yet, a table not created yet, an empty bucket prefix
    assert any(
        why in nothing for why in ("no directory", "first publisher creates it", "nothing published yet")
    )
    _publish(tmp_path, store, NOW, pods=PODS[:1])
    assert problems() == []
    (other,) = problems(score_decimals=1)
    assert "1 other config(s)" in other


def test_a_database_store_that_cannot_be_reached_fails_the_tick_and_shows_no_password(
    tmp_path: Path, postgres_url: str
) -> None:
    """A wrong password: the sidecar's tick fails with the database's reason, its password masked."""
    wrong = sa.make_url(postgres_url).set(password="not-the-secret-123")
    url = wrong.render_as_string(hide_password=False)
    sidecar = _model(_table(_logs(tmp_path, dirty_log())[0]), publish={"url": url, "publisher": "pod-a"})
    with build_evaluators(_settings(sidecar)) as evaluators, pytest.raises(SourceError) as failure:
        evaluators["tox"].evaluate(NOW)
    assert "password authentication failed" in str(failure.value)
    assert "not-the-secret-123" not in str(failure.value)


# --- found by review: each failed before its fix ------------------------------------------------


def test_a_pane_published_again_at_the_same_time_with_the_same_total_is_read_again(
    tmp_path: Path, store: str
) -> None:
    """Labels written into a pod's rows of its open panes (09:00-12:00) and the sidecar run again at
    the same instant: the panes' row totals and publication times are what they were, their counts
    are not."""
    frame = dirty_log()
    since = (NOW - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")
    url = _logs(tmp_path, frame)[0]
    sidecar = _model(_table(url), publish={"url": store, "publisher": "pod-a"})
    with build_evaluators(_settings(_central(store))) as central:
        _evaluate(sidecar, NOW)
        central["tox"].evaluate(NOW)
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            assert (
                conn.execute(
                    "UPDATE predictions SET label = 1 - label WHERE label IN (0, 1) AND ts >= ?", (since,)
                ).rowcount
                > 100
            )
        _evaluate(sidecar, NOW)  # a new process: every pane published again, same time, same totals
        fleet = central["tox"].evaluate(NOW)
    assert comparable(fleet) == comparable(_evaluate(_model(_table(url)), NOW))


def test_a_publisher_back_while_the_cleanup_runs_keeps_what_it_writes(
    tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A peer's cleanup decided pod-x was gone; pod-x published again before the cleanup deleted
    anything: its new heartbeat and panes stay."""
    urls = _logs(tmp_path, dirty_log())
    old = NOW - timedelta(days=3)
    pod_x = _model(_table(urls[2]), publish={"url": store, "publisher": "pod-x"})
    _evaluate(pod_x, old)
    cleaner = open_store(store, "tox", "publish.url")
    shape = count_request(_settings(_central(store)).models[0], ())
    fingerprint = request_fingerprint(shape)

    def back_meanwhile(decided: Any) -> Any:
        def decide(*args: Any, **kwargs: Any) -> Any:
            chosen = decided(*args, **kwargs)
            _evaluate(pod_x, NOW)  # pod-x is back: heartbeat, then its panes
            return chosen

        return decide

    where = "_silent" if hasattr(cleaner, "_silent") else "_beats"
    monkeypatch.setattr(cleaner, where, back_meanwhile(getattr(cleaner, where)))
    try:
        cleaner.expire("pod-a", NOW - timedelta(hours=10))
        monkeypatch.undo()
        assert "pod-x" in cleaner.heartbeats(fingerprint)
        assert cleaner.pane_starts(fingerprint, "pod-x")
    finally:
        cleaner.close()
    fleet = _evaluate(_central(store), NOW)
    assert comparable(fleet) == comparable(_evaluate(_model(_table(urls[2])), NOW))


def test_a_failed_first_read_of_its_own_panes_is_tried_again(
    tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restarted publisher whose store fails once: the next tick still resumes from what is there
    (it published 3 open panes, not every pane again)."""
    url = _logs(tmp_path, dirty_log())[0]
    sidecar = _model(_table(url), publish={"url": store, "publisher": "pod-a"})
    _evaluate(sidecar, NOW)
    with build_evaluators(_settings(sidecar)) as evaluators:
        publisher = evaluators["tox"].publisher
        assert publisher is not None
        own, calls = publisher.store.own_panes, []

        def failing_once(*args: Any) -> Any:
            calls.append(args)
            if len(calls) == 1:
                raise SourceError("the store is down")
            return own(*args)

        monkeypatch.setattr(publisher.store, "own_panes", failing_once)
        with pytest.raises(SourceError, match="the store is down"):
            evaluators["tox"].evaluate(NOW)
        assert evaluators["tox"].evaluate(NOW).published_panes == 3 and len(calls) == 2


def test_a_locked_database_store_fails_the_tick_in_bounded_time(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from monitor.sources.published import database

    monkeypatch.setattr(database, "_TIMEOUT", 1.0)
    url = _logs(tmp_path, dirty_log())[0]
    sidecar = _model(_table(url), publish={"url": postgres_url, "publisher": "pod-a"})
    _evaluate(sidecar, NOW)  # the tables exist
    engine = sa.create_engine(postgres_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("LOCK TABLE fairwatch_published_panes IN ACCESS EXCLUSIVE MODE"))
            started = time.monotonic()
            with (
                build_evaluators(_settings(sidecar)) as evaluators,
                pytest.raises(SourceError, match="timeout"),
            ):
                evaluators["tox"].evaluate(NOW + timedelta(minutes=1))
            assert time.monotonic() - started < 8
    finally:
        engine.dispose()


def test_store_urls_are_checked_and_their_secrets_never_shown(tmp_path: Path) -> None:
    from monitor.config import load_settings
    from monitor.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"publish\.url: cannot open the store") as bad_port:
        open_store("postgresql+psycopg://fw:hunter2-secret@db:notaport/x", "tox", "publish.url")
    assert "hunter2-secret" not in str(bad_port.value)
    with pytest.raises(ConfigError) as s3:
        open_store("s3://bucket/x?region=us-east-1&secret_key=hunter2-secret&bogus=1", "tox", "publish.url")
    assert "hunter2-secret" not in str(s3.value)
    # a relative SQLite store is the config file's, for the publishers as for the central
    config = tmp_path / "conf" / "fairwatch.yaml"
    config.parent.mkdir()
    model = _model(_table("sqlite:///log.db"), publish={"url": "sqlite:///fleet.db", "publisher": "p"})
    central = _model({"kind": "published", "url": "sqlite:///fleet.db"}) | {"name": "central"}
    config.write_text(json.dumps({"models": [model, central]}))
    settings = load_settings(str(config))
    store = str(config.parent.resolve() / "fleet.db")
    assert settings.models[0].publish is not None and settings.models[0].publish.url == f"sqlite:///{store}"
    assert settings.models[1].source.url == f"sqlite:///{store}"
