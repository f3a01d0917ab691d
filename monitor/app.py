"""The composition root: the one place that builds sources, runner, exporter, notifiers and scheduler.

``build_app(settings)`` -> :class:`App`; ``App.start()`` serves HTTP and schedules one
APScheduler job per model; ``App.stop()`` undoes both. Nothing else in the service reads
the environment or a global registry: everything is injected from here.
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_MISSED,
    JobExecutionEvent,
    JobSubmissionEvent,
)
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from prometheus_client import CollectorRegistry

from monitor.config import Settings
from monitor.core.clock import Clock, SystemClock
from monitor.core.errors import FairwatchError
from monitor.core.version import __version__
from monitor.evaluation.evaluators import Evaluators, build_evaluators
from monitor.http import (
    PROBES,
    LiveView,
    MetricsEndpoint,
    ServerHandle,
    WebConfigFile,
    guard,
    make_app,
    serve,
)
from monitor.outputs.prometheus.collector import SnapshotCollector
from monitor.service.alerting import AlertTracker
from monitor.service.dispatch import Dispatcher
from monitor.service.history import History
from monitor.service.history_store import HistoryStore
from monitor.service.notifiers import Notifier, build_notifiers
from monitor.service.runner import Runner
from monitor.service.snapshot import Snapshot
from monitor.sources.contract import Source

__all__ = ["App", "build_app", "run_forever"]

log = logging.getLogger(__name__)

_DISPATCH = "dispatch"  # the scheduler job (and its one-thread executor) that hands out evaluations
# how often it looks for due models: a fraction of the shortest interval users set (1s), so that a
# tick is handed out within a quarter second of falling due (at 1 s, a 1 s interval lost every other tick)
_DISPATCH_EVERY = 0.25


@dataclass
class App:
    settings: Settings
    evaluators: Evaluators
    runner: Runner
    registry: CollectorRegistry
    collector: SnapshotCollector
    scheduler: BackgroundScheduler
    clock: Clock
    history: History
    workers: int = 2
    web: WebConfigFile | None = None  # server.web_config_file: TLS, basic auth, headers, rate limit
    server: ServerHandle | None = None
    _ready: threading.Event = field(default_factory=threading.Event)
    dispatcher: Dispatcher = field(init=False)

    def __post_init__(self) -> None:
        self.dispatcher = Dispatcher(
            {m.name: m.interval.total_seconds() for m in self.settings.models},
            workers=self.workers,
            run=self.runner.run_model,
            submit=self._submit,
            skipped=self.runner.record_skipped,
        )

    def start(self, *, serve_http: bool = True, schedule: bool = True) -> None:
        """Serve HTTP, then schedule every model (the first run of each starts at once); without
        ``schedule`` the caller runs ``runner.run_model`` itself (the demo's :class:`~monitor.cli.demo.pacer.Pacer`)."""
        if serve_http:
            metrics = MetricsEndpoint(self.collector, self.runner.snapshot, registry=self.registry)
            self.runner.subscribe(metrics.publish)  # rendered when published, not when scraped
            wsgi = make_app(
                registry=self.registry,
                get_snapshot=self.runner.snapshot,
                ready=self._ready.is_set,
                metrics=metrics,
                plans=self._plans,
                live=LiveView(
                    self.history,
                    {m.name: m.min_samples for m in self.settings.models},
                    self._details,
                    self.settings.alerts.confidence,
                ),
                details=self._details,
            )
            if self.web is not None:
                open_paths = PROBES if self.settings.server.unauthenticated_probes else frozenset()
                wsgi = guard(wsgi, self.web, open_paths=open_paths)
            self.server = serve(
                wsgi,
                self.settings.server.host,
                self.settings.server.port,
                web=self.web,
                busy=lambda: bool(self.dispatcher.running),  # evaluations come first
            )
            log.info("serving on %s", self.server.url)
        if not schedule:
            self._ready.set()
            return
        # one timer hands the workers the due models, oldest due first (monitor.service.dispatch)
        self.scheduler.add_job(
            self.dispatcher.tick,
            "interval",
            seconds=_DISPATCH_EVERY,
            id=_DISPATCH,
            executor=_DISPATCH,
            next_run_time=datetime.now(UTC),
            # a tick starved of the GIL for a moment by busy workers must not log APScheduler's
            # "maximum number of running instances reached": the ticks take the dispatcher's lock in turn
            max_instances=4,
            misfire_grace_time=None,  # a tick that started late is still a tick (no "was missed by")
            coalesce=True,
        )
        self.scheduler.start()
        self._ready.set()

    def _details(self) -> bool:
        """Whether / and /api/v1/results show a failed source's error in full (server.error_details)."""
        wanted = self.settings.server.error_details
        if wanted != "auto":
            return wanted == "shown"
        return self.web is not None and self.web.current().authenticates

    def _submit(self, job: Callable[[], None]) -> None:
        """Run one evaluation on a worker now (never dropped as misfired: the dispatcher waits for it)."""
        self.scheduler.add_job(job, misfire_grace_time=None, name="evaluate")

    def _plans(self, snapshot: Snapshot) -> list[dict[str, object]]:
        """Power plans of every model's last evaluation (``/api/v1/power``), at 90% power."""
        from monitor.outputs.power import snapshot_plans

        return snapshot_plans(snapshot, self.settings)

    def stop(self) -> None:
        """Stop scheduling (a running read ends within its ``source.timeout``), give queued alerts
        one last attempt bounded by the sinks' timeouts, close the server and the sources."""
        self.dispatcher.stop()  # before the shutdown, which waits for running evaluations holding its locks
        if self.scheduler.running:
            self.scheduler.shutdown(wait=True)
        self.runner.close(timeout=_delivery_timeout(self.settings) + 1)
        if self.server is not None:
            self.server.shutdown()
        self.evaluators.close()


def _delivery_timeout(settings: Settings) -> float:
    sinks = (settings.alerts.alertmanager, settings.alerts.webhook)
    return max((s.timeout.total_seconds() for s in sinks if s is not None), default=0.0)


def run_forever(load_settings: Callable[[], Settings]) -> None:
    """Run the service until SIGINT or SIGTERM; on SIGHUP reload the config (Prometheus' convention).

    A reload reads and validates the file again: a valid config that differs replaces the
    running service (sources, schedules and alert state start afresh; the HTTP port is
    re-bound), an invalid one - or one that cannot be built or started - is logged in one line
    and the running config stays.
    """
    signals: queue.SimpleQueue[int] = queue.SimpleQueue()

    def handle(signum: int, _frame: Any) -> None:
        signals.put(signum)

    for handled in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(handled, handle)
    app = build_app(load_settings())
    app.start()
    try:
        while True:
            try:
                signum = signals.get(timeout=1.0)
            except queue.Empty:
                continue
            if signum != signal.SIGHUP:
                log.info("received signal %d, stopping", signum)
                return
            try:
                settings = load_settings()
            except FairwatchError as exc:
                log.error("config reload failed, keeping the running config: %s", _one_line(exc))
                continue
            if settings == app.settings:
                log.info("config reloaded: unchanged")
                continue
            app = _replace(app, settings)
    finally:
        app.stop()


def _replace(app: App, settings: Settings) -> App:
    """The service running ``settings`` in place of ``app`` - or ``app``'s own config again, if the
    new one cannot be built (a folder it cannot write) or started (a port it cannot bind): a
    reload never takes the service down (Prometheus keeps its running config the same way)."""
    try:
        new = build_app(settings)
    except FairwatchError as exc:
        log.error("config reload failed, keeping the running config: %s", _one_line(exc))
        return app
    app.stop()
    try:
        new.start()
    except FairwatchError as exc:
        new.stop()
        log.error("config reload failed, restarting the running config: %s", _one_line(exc))
        old = build_app(app.settings)
        try:
            old.start()
        except FairwatchError as again:  # the old port taken meanwhile: nothing runs, say so and stop
            old.stop()
            log.error("the running config cannot be started again either, stopping: %s", _one_line(again))
            raise
        return old
    log.info("config reloaded: %d model(s)", len(settings.models))
    return new


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).strip().splitlines())[:500]


def build_app(
    settings: Settings,
    *,
    clock: Clock | None = None,
    memory_sources: Mapping[str, Source] | None = None,
    notifiers: list[Notifier] | None = None,
) -> App:
    """Wire the whole service from validated settings."""
    clock = clock or SystemClock()
    evaluators = build_evaluators(settings, memory_sources=memory_sources, persist_panes=True)
    try:
        return _assemble(settings, evaluators, clock, notifiers)
    except BaseException:  # a sink that cannot be built: the sources built already are closed
        evaluators.close()
        raise


def _assemble(
    settings: Settings, evaluators: Evaluators, clock: Clock, notifiers: list[Notifier] | None
) -> App:
    tracker = AlertTracker(
        for_=settings.alerts.for_,
        keep_firing_for=settings.alerts.keep_firing_for,
        severity=settings.alerts.severity,
        estimate_severity=settings.alerts.estimate_severity,
        confidence=settings.alerts.confidence,
        runbook_url=settings.alerts.runbook_url,
    )
    # firing alerts are re-sent every evaluation; Alertmanager must not expire them in between
    resend = max(m.interval.total_seconds() for m in settings.models)
    if notifiers is None:
        notifiers = build_notifiers(settings.alerts, resend_seconds=resend, logger=log)
    runner = Runner(
        evaluators, tracker=tracker, notifiers=notifiers, clock=clock, log_alerts=settings.alerts.log
    )
    kept = settings.server.history
    history = History(kept.size, HistoryStore.open(kept.directory) if kept.directory else None)  # charted
    if loaded := history.load(m.name for m in settings.models):  # a restart keeps the charts
        log.info("history: %d kept evaluations read back from %s", loaded, kept.directory)
    # read now: a web config that does not load is a config error before anything starts
    web = WebConfigFile(settings.server.web_config_file) if settings.server.web_config_file else None
    runner.subscribe(history.record)
    # the collector describes nothing up front, so /metrics?name[]= filters need this flag
    registry = CollectorRegistry(auto_describe=False, support_collectors_without_names=True)
    collector = SnapshotCollector(runner.snapshot, version=__version__)
    registry.register(collector)
    workers = max(2, min(8, len(settings.models)))
    scheduler = BackgroundScheduler(
        executors={
            "default": ThreadPoolExecutor(max_workers=workers),
            _DISPATCH: ThreadPoolExecutor(max_workers=1),
        },
        timezone=UTC,
    )

    def on_job_event(event: JobExecutionEvent | JobSubmissionEvent) -> None:
        # run_model catches evaluation errors itself; this counts what escapes it. A dispatch tick
        # missed or still running is no error: the next one hands out what is due.
        if event.job_id == _DISPATCH and getattr(event, "exception", None) is None:
            return
        runner.record_job_error()
        if getattr(event, "exception", None) is not None:
            log.error("job %s crashed: %s", event.job_id, event.exception)
        elif event.code == EVENT_JOB_MAX_INSTANCES:
            log.warning("job %s skipped a run: the previous evaluation is still running", event.job_id)
        else:
            log.warning("job %s missed its run time", event.job_id)

    scheduler.add_listener(on_job_event, EVENT_JOB_ERROR | EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES)
    return App(settings, evaluators, runner, registry, collector, scheduler, clock, history, workers, web)
