"""The Spark session a spark source runs its jobs in, and how each job is bounded.

A classic session (``master:``) lives on the process' one SparkContext (Spark allows one per
JVM): the first spark source starts it with its ``master`` and ``conf``; each source then works
in its own ``newSession()``, so its settings that Spark can change at run time (``spark.sql.*``,
and ``spark.sql.session.timeZone=UTC``, always) apply to its own reads and no other code's. A
Spark Connect session (``remote:``) is the source's own connection, released when the source
closes. pyspark chooses classic or Connect for the whole process (its functions build one kind
of column or the other), so one config's spark sources use ``remote`` all or none (checked when
the config loads).

Every job runs under a name a timer cancels after ``source.timeout``, and again every half
second until the read returns (a cancel reaches only the jobs running at that moment, and a read
may start its job after a slow analysis): a job group on a classic session
(``SparkSession.interruptTag`` finds no job there - the tag does not reach jobs run by
``collect``), an operation tag on Spark Connect, where ``interruptTag`` reaches the server. A
Connect client retries an unreachable server for ten minutes by default; here its retries end
within the timeout. Errors become :class:`~monitor.core.errors.SourceError` with the first line of
Spark's cause, credentials masked.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from monitor.config import SourceConfig
from monitor.config.schema import SPARK_DEFAULT_MASTER, SPARK_FIXED
from monitor.core.errors import ConfigError, SourceError
from monitor.core.secrets import mask, url_secrets

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SparkJobs", "cause", "retries_within"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The modules of pyspark's ``connect`` extra a Spark Connect client imports.
_CONNECT_CLIENT = ("grpc", "grpc_status", "google.rpc", "zstandard")


class SparkJobs:
    """A source's Spark session (made at the first job) and its bounded jobs."""

    def __init__(self, config: SourceConfig, describe: Callable[[], str]) -> None:
        if config.remote:
            # pyspark's connect extra (imported at the first job: importing pyspark's Connect
            # modules in a process that ran classic Spark fails)
            missing = [m for m in ("pyspark", *_CONNECT_CLIENT) if not _importable(m)]
            if missing:
                raise ConfigError(
                    "source.remote: Spark Connect needs pyspark and its connect client "
                    f"(pip install 'fairwatch[spark]'); missing: {', '.join(missing)}"
                )
        else:
            try:
                import pyspark  # noqa: F401  (fail at start-up, not at the first tick)
            except ImportError:
                raise ConfigError(
                    "source.kind: spark needs pyspark: pip install 'fairwatch[spark]' (and Java 17+)"
                ) from None
        self.config = config
        self.timeout = config.timeout.total_seconds()
        self._describe = describe
        self._session: SparkSession | None = None
        self._lock = threading.Lock()

    @property
    def master(self) -> str:
        return self.config.master or SPARK_DEFAULT_MASTER

    def run(self, job: Callable[[SparkSession], T]) -> T:
        """``job`` on the source's session, cancelled after ``source.timeout``; any failure a
        :class:`SourceError` naming its cause."""
        timed_out, done = threading.Event(), threading.Event()
        try:
            spark = self.session()
            name = f"fairwatch-{uuid.uuid4().hex[:12]}"
            start, cancel, end = (
                _operation_tag(spark, name) if self.config.remote else _job_group(spark, name)
            )

            def expire() -> None:  # until the read ends: a job may start after a cancel
                timed_out.set()
                while not done.is_set():
                    cancel()
                    done.wait(0.5)

            start()
            timer = threading.Timer(self.timeout, expire)
            timer.daemon = True
            timer.start()
            try:
                return job(spark)
            finally:
                done.set()
                timer.cancel()
                end()
        except (SourceError, ConfigError):
            raise
        except Exception as exc:
            self._forget()  # the next read connects afresh (a restarted server, a stopped context)
            if timed_out.is_set():
                raise SourceError(
                    f"cannot read {self._describe()}: cancelled after source.timeout ({self.timeout:g} s)"
                ) from None
            secrets = url_secrets(self.config.remote)
            raise SourceError(f"cannot read {self._describe()}: {mask(cause(exc), secrets)[:300]}") from None

    def session(self) -> SparkSession:
        with self._lock:
            if self._session is None:
                self._session = self._connect() if self.config.remote else self._classic()
            return self._session

    def close(self) -> None:
        """Release a Connect session; a classic one is the process' (only its settings are the source's)."""
        self._forget()

    def _forget(self) -> None:
        with self._lock:
            session, self._session = self._session, None
        if session is not None and self.config.remote:
            _stop(session, self._describe())

    def _classic(self) -> SparkSession:
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName("fairwatch").master(self.master)
        for key, value in {"spark.ui.enabled": "false", **self.config.conf, **SPARK_FIXED}.items():
            builder = builder.config(key, value)
        shared = builder.getOrCreate()  # the running context, if any: its master and conf stay
        running = shared.sparkContext.master
        if running != self.master:
            log.warning(
                "%s: the process' Spark context runs master %s (started first); source.master %s "
                "takes effect after a restart",
                self._describe(),
                running,
                self.master,
            )
        own = shared.newSession()
        for key, value in {**self.config.conf, **SPARK_FIXED}.items():
            if own.conf.isModifiable(key):
                own.conf.set(key, value)
        return own

    def _connect(self) -> SparkSession:
        from pyspark.sql import SparkSession
        from pyspark.sql.connect.client.retries import DefaultPolicy

        remote = self.config.remote
        assert remote is not None
        session = SparkSession.builder.remote(remote).create()  # the source's own connection
        # connection failures are retried within the timeout (Spark's default: ten minutes)
        session.client.set_retry_policies([DefaultPolicy(max_retries=retries_within(self.timeout))])
        try:
            for key, value in {**self.config.conf, **SPARK_FIXED}.items():
                session.conf.set(key, value)
        except Exception:
            _stop(session, self._describe())
            raise
        return session


def _stop(session: SparkSession, where: str) -> None:
    """Release a Connect session on its server; a server that is gone has nothing left to release."""
    try:
        session.stop()
    except Exception as exc:
        log.debug("%s: closing the Spark Connect session: %s", where, cause(exc))


def _job_group(
    spark: SparkSession, name: str
) -> tuple[Callable[[], None], Callable[[], None], Callable[[], None]]:
    """Start, cancel and end a job group on a classic session (this thread's jobs join it)."""
    context = spark.sparkContext

    def start() -> None:
        context.setJobGroup(name, "fairwatch read", interruptOnCancel=False)

    def end() -> None:
        # null removes the property (pyspark's hint says str)
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]

    return start, lambda: context.cancelJobGroup(name), end


def _operation_tag(
    spark: SparkSession, name: str
) -> tuple[Callable[[], None], Callable[[], None], Callable[[], None]]:
    """Start, cancel and end a Spark Connect operation tag (this thread's operations carry it)."""

    def cancel() -> None:
        spark.interruptTag(name)

    return lambda: spark.addTag(name), cancel, lambda: spark.removeTag(name)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def retries_within(seconds: float) -> int:
    """How many retries of Spark Connect's default policy (50 ms, then x4, at most 60 s apart)
    fit in ``seconds`` of waiting.

    >>> retries_within(60), retries_within(3), retries_within(0.01)
    (5, 3, 0)
    """
    waited, backoff, retries = 0.0, 0.05, 0
    while waited + backoff <= seconds:
        waited += backoff
        backoff = min(backoff * 4, 60.0)
        retries += 1
    return retries


def cause(exc: BaseException) -> str:
    """The first line that says what went wrong (py4j's first line only names the Java call)."""
    text = str(exc)
    for link in (exc, exc.__cause__, exc.__context__):  # pyspark wraps a failed gRPC call (Connect)
        details = getattr(link, "details", None)
        if callable(details) and details():
            text = str(details())
            break
    lines = [line.strip().lstrip(": ").strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    if len(lines) > 1 and lines[0].startswith("An error occurred while calling"):
        return lines[1]
    return lines[0] if lines else type(exc).__name__
