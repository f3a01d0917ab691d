"""Slow, hanging and trickling alert receivers (real HTTP servers) never hold up an evaluation;
an attempt is bounded as a whole; a slow sink gets the latest state, never a backlog, and every
resolve."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from monitor.config import settings_from_dict
from monitor.core.clock import FakeClock
from monitor.core.errors import AlertDeliveryError
from monitor.evaluation.evaluators import build_evaluators
from monitor.service.alerting import AlertTracker
from monitor.service.delivery import AlertDelivery
from monitor.service.notifiers import RecordingNotifier, WebhookNotifier
from monitor.service.runner import Runner
from monitor.service.snapshot import ActiveAlert
from monitor.sources import MemorySource
from tests.monitor.test_service import T0, drifting_log


class Receiver:
    """A webhook receiver whose answers the test controls: ``hold`` (answer once released),
    ``trickle`` (one byte of the answer every 1.5 s) or ``ok``."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.arrived = threading.Semaphore(0)
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                receiver.paths.append(self.path)
                receiver.bodies.append(json.loads(self.rfile.read(length)))
                receiver.arrived.release()
                answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                if receiver.mode == "hold":
                    receiver.release.wait(60)
                if receiver.mode == "trickle":
                    for byte in answer:
                        if receiver.release.wait(1.5):
                            return
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                else:
                    self.wfile.write(answer)
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[Receiver]:
    r = Receiver(request.param)
    yield r
    r.close()


def _monitor(frame: Any, url: str, *, timeout: float) -> tuple[Runner, FakeClock]:
    settings = settings_from_dict(
        {
            "models": [
                {
                    "name": "tox",
                    "source": {"kind": "memory", "name": "tox"},
                    "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
                    "groups": [{"attribute": "identity", "kind": "indicator", "columns": ["g"]}],
                    "windows": [{"name": "1h", "length": "1h"}],
                    "interval": "10m",
                    "min_samples": 50,
                    "metrics": ["bpsn_auc", "negative_aeg", "statistical_parity_difference"],
                }
            ]
        }
    )
    clock = FakeClock(T0 + timedelta(hours=5))
    monitor = Runner(
        build_evaluators(settings, memory_sources={"tox": MemorySource(frame, timestamp_column="ts")}),
        tracker=AlertTracker(for_=timedelta(0), keep_firing_for=timedelta(0)),
        notifiers=[WebhookNotifier(url, timeout_seconds=timeout)],
        clock=clock,
    )
    return monitor, clock


def _remove_bias(frame: Any) -> None:
    frame.loc[:, "score"] = 1 / (1 + np.exp(-(-1.5 + 3 * frame["label"])))


def _evaluate(monitor: Runner) -> float:
    """Run one evaluation in a thread; its duration, failing the test if it does not return."""
    t0 = time.monotonic()
    job = threading.Thread(target=monitor.run_model, args=["tox"], daemon=True)
    job.start()
    job.join(timeout=30)
    assert not job.is_alive(), "the evaluation waited for the alert receiver"
    return time.monotonic() - t0


@pytest.mark.parametrize("receiver", ["trickle"], indirect=True)
def test_a_trickling_receiver_is_cut_off_at_the_timeout(receiver: Receiver) -> None:
    """urllib's timeout bounds each read: a byte every 1.5 s would keep an attempt going for
    a minute and a half. The attempt's deadline bounds the whole of it."""
    notifier = WebhookNotifier(receiver.url, timeout_seconds=2)
    t0 = time.monotonic()
    with pytest.raises(AlertDeliveryError, match="no complete answer within 2 s"):
        notifier.send([_alert()], [], T0)
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize("receiver", ["hold"], indirect=True)
def test_evaluations_never_wait_for_a_hanging_receiver(receiver: Receiver) -> None:
    frame = drifting_log()
    monitor, clock = _monitor(frame, receiver.url, timeout=60)
    try:
        _evaluate(monitor)  # an alert fires: its push hangs in the receiver
        assert receiver.arrived.acquire(timeout=10)
        for _ in range(4):  # four more evaluations while the receiver holds the first push
            clock.advance(timedelta(minutes=10))
            _evaluate(monitor)
        _remove_bias(frame)
        clock.advance(timedelta(minutes=10))
        _evaluate(monitor)  # the alert resolves while the receiver still hangs
        snapshot = monitor.snapshot()
        assert snapshot.models["tox"].evaluations_total == 6 and not snapshot.alerts
        assert len(receiver.bodies) == 1
        assert monitor.delivery.stats()["webhook"].queued >= 1  # the resolve waits in the outbox

        receiver.mode = "ok"
        receiver.release.set()
        assert monitor.delivery.flush(timeout=30)
        # the five held-back states were coalesced into one attempt carrying the latest: the resolve
        assert len(receiver.bodies) == 2
        latest = receiver.bodies[-1]
        assert latest["status"] == "resolved"
        assert {a["status"] for a in latest["alerts"]} == {"resolved"}
        assert {a["labels"]["group"] for a in latest["alerts"]} == {"g"}
        stats = monitor.delivery.stats()["webhook"]
        assert (stats.failures, stats.dropped, stats.queued) == (0, 0, 0)
    finally:
        receiver.release.set()
        monitor.close(timeout=5)


@pytest.mark.parametrize("receiver", ["hold"], indirect=True)
def test_a_resolve_outlives_a_receiver_that_times_out(receiver: Receiver) -> None:
    frame = drifting_log()
    monitor, clock = _monitor(frame, receiver.url, timeout=1)
    try:
        _evaluate(monitor)
        assert monitor.delivery.flush(timeout=30)
        _remove_bias(frame)
        clock.advance(timedelta(minutes=10))
        _evaluate(monitor)  # resolved; the attempt times out
        assert monitor.delivery.flush(timeout=30)
        stats = monitor.delivery.stats()["webhook"]
        fired = {a["labels"]["metric"] for a in receiver.bodies[0]["alerts"]}
        assert stats.failures == 2 and stats.queued == len(fired)  # the resolves are kept
        assert monitor.snapshot().alert_sinks["webhook"].failures == 2  # and exported

        receiver.mode = "ok"
        receiver.release.set()
        clock.advance(timedelta(minutes=10))
        _evaluate(monitor)  # nothing new: the owed resolve is retried with this evaluation
        assert monitor.delivery.flush(timeout=30)
        assert receiver.bodies[-1]["status"] == "resolved"
        assert {a["labels"]["metric"] for a in receiver.bodies[-1]["alerts"]} == fired
        assert monitor.delivery.stats()["webhook"].queued == 0
    finally:
        receiver.release.set()
        monitor.close(timeout=5)


@pytest.mark.parametrize("receiver", ["hold"], indirect=True)
def test_stopping_is_bounded_by_the_delivery_timeout(receiver: Receiver) -> None:
    monitor, _ = _monitor(drifting_log(), receiver.url, timeout=2)
    _evaluate(monitor)
    assert receiver.arrived.acquire(timeout=10)
    t0 = time.monotonic()
    monitor.close(timeout=3)
    assert time.monotonic() - t0 < 5


def test_a_full_outbox_drops_the_oldest_resolves_and_counts_them() -> None:
    sink = RecordingNotifier(failing=True)
    delivery = AlertDelivery([sink], max_pending=3)
    try:
        resolved = [_alert(group=f"g{i}") for i in range(5)]
        delivery.submit("tox", [], resolved, T0)
        assert delivery.flush(timeout=10)
        stats = delivery.stats()["recording"]
        assert (stats.dropped, stats.queued, stats.failures) == (2, 3, 1)
        sink.failing = False
        delivery.submit("tox", [], [], T0)
        assert delivery.flush(timeout=10)
        assert [a.labels["group"] for a in sink.calls[-1].resolved] == ["g2", "g3", "g4"]
    finally:
        delivery.stop(timeout=5)


def _alert(group: str = "g") -> ActiveAlert:
    labels = {"alertname": "FairwatchFairnessViolation", "model": "tox", "group": group, "metric": "m"}
    return ActiveAlert(labels, {"summary": "s"}, "firing", T0, T0, 0.5)


class _BuggySink(RecordingNotifier):
    """A sink that fails with something other than AlertDeliveryError, and can hold an attempt
    (``gate``) so that submits arrive while it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.buggy = True
        self.gate = threading.Event()
        self.gate.set()

    def send(self, firing: Any, resolved: Any, now: Any) -> None:
        super().send(firing, resolved, now)
        assert self.gate.wait(10)
        if self.buggy:
            raise UnicodeEncodeError("ascii", "é", 0, 1, "ordinal not in range(128)")


def test_a_sink_raising_anything_keeps_its_sender_and_its_resolves() -> None:
    sink = _BuggySink()
    delivery = AlertDelivery([sink])
    try:
        delivery.submit("tox", [], [_alert("a")], T0)
        assert delivery.flush(timeout=10)  # the attempt ended: not stuck busy
        assert delivery.stats()["recording"].failures == 1
        sink.buggy = False
        delivery.submit("tox", [], [], T0)
        assert delivery.flush(timeout=10)  # the sender is alive and sends the kept resolve
        assert [a.labels["group"] for a in sink.calls[-1].resolved] == ["a"]
        assert delivery.stats()["recording"].sent == 1
    finally:
        delivery.stop(timeout=5)


def test_resolves_put_back_after_a_failure_stay_ahead_of_newer_ones() -> None:
    sink = _BuggySink()
    sink.gate.clear()
    delivery = AlertDelivery([sink], max_pending=2)
    try:
        delivery.submit("tox", [], [replace(_alert("old"), value=1.0), _alert("x")], T0)
        deadline = time.monotonic() + 10
        while not sink.calls and time.monotonic() < deadline:
            time.sleep(0.01)
        # while that attempt runs (and fails), "x" resolves again (a newer episode) and "new" resolves
        delivery.submit("tox", [], [replace(_alert("x"), value=2.0), _alert("new")], T0)
        sink.gate.set()
        assert delivery.flush(timeout=10)  # both attempts failed
        sink.buggy = False
        delivery.submit("tox", [], [], T0)
        assert delivery.flush(timeout=10)
        # the put-back "x" did not overwrite the newer resolve, and the cap of 2 dropped the
        # oldest resolve, which is the put-back "old"
        delivered = sink.calls[-1].resolved
        assert [(a.labels["group"], a.value) for a in delivered] == [("x", 2.0), ("new", 0.5)]
        assert delivery.stats()["recording"].dropped == 1
    finally:
        delivery.stop(timeout=5)


@pytest.mark.parametrize("receiver", ["ok"], indirect=True)
def test_a_webhook_url_with_non_ascii_path_is_sent_percent_encoded(receiver: Receiver) -> None:
    sink = WebhookNotifier(receiver.url + "/équipe?team=données", timeout_seconds=5)
    sink.send([_alert("a")], [], T0)
    assert receiver.arrived.acquire(timeout=5)
    assert receiver.paths == ["/hook/%C3%A9quipe?team=donn%C3%A9es"]


@pytest.mark.parametrize("receiver", ["hold"], indirect=True)
def test_a_webhook_attempt_of_many_incidents_is_bounded_as_a_whole(receiver: Receiver) -> None:
    """A review: one POST per incident, each with the whole timeout, made an attempt at a receiver that
    never answers last incidents x timeout (6 s for 6 at 1 s) - and a reload's stop wait for it."""
    from dataclasses import replace

    alerts = [
        replace(a, labels={**a.labels, "incident": f"identity=g{i}", "group": f"g{i}"})
        for i, a in enumerate([_alert()] * 6)
    ]
    t0 = time.monotonic()
    with pytest.raises(AlertDeliveryError, match="and 5 more incident"):
        WebhookNotifier(receiver.url, timeout_seconds=1).send(alerts, [], T0)
    assert time.monotonic() - t0 < 3
