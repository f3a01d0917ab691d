"""``fairwatch backfill``: the history a new installation would have recorded, as OpenMetrics.

Every model is evaluated at each instant ``start, start + step, ...`` up to ``end`` (inclusive) as the
service would have evaluated it then - :meth:`Evaluator.evaluate` at that ``now``, its windows, label
delay and sealed panes included - and each evaluation is rendered by the live exporter
(:func:`monitor.outputs.prometheus.collector.evaluation_families`): the same family names, labels and HELP as ``/metrics``,
one sample per instant, stamped with that instant. ``promtool tsdb create-blocks-from openmetrics FILE
DIR`` turns the file into TSDB blocks for Prometheus' data directory.

OpenMetrics wants every family in one piece and the points of each series together, in ascending time.
The evaluations come one instant at a time, so the points are gathered per series in two arrays of
doubles (16 bytes a point) and written family by family, series by series, at the end; a failed
evaluation stops the run before anything is written. ``prometheus_client`` renders the lines (its
escaping and number format, as ``/metrics``).

Not backfilled: alerts (``fairwatch_alerts``; Prometheus evaluates its rules on the imported series,
and ``promtool tsdb create-blocks-from rules`` can record their history) and the service's own counters
and timestamps, which describe a process that did not run then.

With ``server.history.directory`` set, every evaluation is also written into the service's kept history
(:mod:`monitor.service.history_store`; its newest ``server.history.size`` kept), so the live view's charts
start with the backfilled period once the service (re)starts. Those are written as they are made: a run
stopped half-way leaves the evaluations it made there. The log is read as it is today, so a
row or label that arrived late counts at instants the live service would have evaluated without it.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType

from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Sample

from monitor.config import Settings
from monitor.core.errors import ConfigError, FairwatchError
from monitor.core.times import iso_z
from monitor.evaluation.evaluator import Evaluator
from monitor.evaluation.evaluators import build_evaluators
from monitor.evaluation.results import ModelEvaluation
from monitor.outputs.prometheus.collector import evaluation_families
from monitor.service.history import judged
from monitor.service.history_store import HistoryStore
from monitor.service.snapshot import ModelStatus, Snapshot

__all__ = ["MAX_INSTANTS", "BackfillResult", "backfill", "backfill_instants", "parse_labels"]

#: More evaluations than this in one run is a typo (``--step 1s`` over a year), not a plan.
MAX_INSTANTS = 100_000

_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_EOF = b"# EOF\n"
# The encoder /metrics answers an OpenMetrics scrape with.
_ENCODE = choose_encoder("application/openmetrics-text")[0]


def backfill_instants(start: datetime, end: datetime, step: timedelta, *, now: datetime) -> list[datetime]:
    """``start, start + step, ...`` up to ``end`` inclusive; a clear error for a range that makes no sense.

    >>> from datetime import UTC
    >>> t = datetime(2026, 1, 1, tzinfo=UTC)
    >>> [x.hour for x in backfill_instants(t, t + timedelta(hours=2), timedelta(hours=1), now=t + timedelta(days=1))]
    [0, 1, 2]
    """
    if step <= timedelta(0):
        raise ConfigError(f"--step must be positive, got {step}")
    if start >= end:
        raise ConfigError(f"--start {iso_z(start)} must be before --end {iso_z(end)}")
    if end > now:
        raise ConfigError(
            f"--end {iso_z(end)} is in the future (now {iso_z(now)}): the running service records from now on"
        )
    count = (end - start) // step + 1
    if count > MAX_INSTANTS:
        raise ConfigError(
            f"--step {step} from {iso_z(start)} to {iso_z(end)} makes {count:,} evaluations "
            f"(at most {MAX_INSTANTS:,}): use a larger --step"
        )
    return [start + i * step for i in range(count)]


def parse_labels(pairs: Sequence[str]) -> dict[str, str]:
    """``["job=fairwatch", "instance=host:9810"]`` as a dict, each name a valid Prometheus label name.

    >>> parse_labels(["job=fairwatch", "instance=fw:9810"])
    {'job': 'fairwatch', 'instance': 'fw:9810'}
    """
    labels: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not _LABEL_NAME.match(name) or name.startswith("__"):
            raise ConfigError(
                f"--label {pair!r}: write NAME=VALUE with a Prometheus label name (job=fairwatch)"
            )
        if name in labels:
            raise ConfigError(f"--label {name} is given twice")
        labels[name] = value
    return labels


@dataclass
class _Series:
    times: array[float] = field(default_factory=lambda: array("d"))
    values: array[float] = field(default_factory=lambda: array("d"))


@dataclass
class _Family:
    """One metric family's metadata (from its first appearance) and its series' points."""

    name: str
    documentation: str
    type: str
    unit: str
    series: dict[tuple[str, tuple[tuple[str, str], ...]], _Series] = field(default_factory=dict)


class _History:
    """Every point of every family, gathered instant by instant, written in OpenMetrics order."""

    def __init__(self, extra_labels: Mapping[str, str]) -> None:
        self._extra = dict(extra_labels)
        self._families: dict[str, _Family] = {}
        self.points = 0

    def add(self, families: Sequence[Metric], at: datetime) -> None:
        t = at.timestamp()
        for metric in families:
            family = self._families.get(metric.name)
            if family is None:
                family = _Family(metric.name, metric.documentation, metric.type, metric.unit)
                self._families[metric.name] = family
            for sample in metric.samples:
                clash = self._extra.keys() & sample.labels.keys()
                if clash:
                    raise ConfigError(
                        f"--label {', '.join(sorted(clash))}: fairwatch's own label, cannot be set"
                    )
                key = (sample.name, tuple({**sample.labels, **self._extra}.items()))
                series = family.series.get(key)
                if series is None:
                    series = family.series[key] = _Series()
                series.times.append(t)
                series.values.append(sample.value)
                self.points += 1

    @property
    def series_count(self) -> int:
        return sum(len(f.series) for f in self._families.values())

    def render(self) -> Iterator[bytes]:
        """The OpenMetrics text in pieces: each family's header once, then its series one by one."""
        for family in self._families.values():
            first = True
            for (sample_name, labels), series in family.series.items():
                metric = Metric(family.name, family.documentation, family.type, family.unit)
                label_dict = dict(labels)
                metric.samples = [
                    Sample(sample_name, label_dict, value, t)
                    for t, value in zip(series.times, series.values, strict=True)
                ]
                text = _ENCODE(_OneFamily(metric)).removesuffix(_EOF)
                if not first:  # the header lines (HELP, TYPE, UNIT) start with '#', samples never do
                    text = b"".join(
                        line for line in text.splitlines(keepends=True) if not line.startswith(b"#")
                    )
                first = False
                yield text
        yield _EOF


class _OneFamily:
    """The ``collect()`` shape prometheus_client's renderer expects, over one family."""

    def __init__(self, metric: Metric) -> None:
        self._metric = metric

    def collect(self) -> Iterator[Metric]:
        yield self._metric


@dataclass(frozen=True)
class BackfillResult:
    """What a run wrote: instants, evaluations (instants x models), series and points."""

    instants: int
    evaluations: int
    series: int
    points: int


def backfill(
    settings: Settings,
    instants: Sequence[datetime],
    write: Callable[[bytes], object],
    *,
    models: Sequence[str] | None = None,
    labels: Mapping[str, str] = MappingProxyType({}),
    advance: Callable[[str], None] = lambda _msg: None,
) -> BackfillResult:
    """Evaluate ``models`` (default: all) at every instant and ``write`` the OpenMetrics text.

    ``advance(description)`` is called after each evaluation (for a progress bar). Nothing is written
    unless every evaluation succeeded.
    """
    intervals = {m.name: m.interval.total_seconds() for m in settings.models}
    history = _History(labels)
    kept = settings.server.history
    store = HistoryStore.open(kept.directory) if kept.directory else None  # the service's charts, filled too
    with build_evaluators(settings, models=models) as evaluators:
        for at in instants:
            statuses = {}
            for name, evaluator in evaluators.items():
                evaluation = _evaluate(evaluator, name, at)
                statuses[name] = ModelStatus(name, intervals[name], last_evaluation=evaluation)
                if store is not None:
                    keys, values, states = judged(evaluation)
                    store.write(name, at, list(keys), values, states)
                advance(f"{name} at {at:%Y-%m-%d %H:%M}")
            history.add(evaluation_families(Snapshot(MappingProxyType(statuses))), at)
        if store is not None:
            for name in evaluators:
                store.trim(name, kept.size)
    for piece in history.render():
        write(piece)
    return BackfillResult(
        len(instants), len(instants) * len(evaluators), history.series_count, history.points
    )


def _evaluate(evaluator: Evaluator, name: str, at: datetime) -> ModelEvaluation:
    try:
        return evaluator.evaluate(at)
    except FairwatchError as exc:  # the same kind of error, saying where the run stopped
        raise type(exc)(f"model {name} at {iso_z(at)}: {exc}") from exc
