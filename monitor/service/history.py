"""A bounded in-memory history of each model's judged values: what the live view charts and
``/api/v1/history`` serves.

Prometheus keeps the long history; this keeps the last ``size`` evaluations of each model so the
page at ``/`` can draw recent values, intervals and states without a Prometheus beside it (a
laptop, the demo, a report). Each evaluation is stored as columns - one float array of (value,
lower, upper and the fair range) and one byte per state - over a tuple of series keys shared with the previous
evaluation when the set of series did not change: about 41 bytes per value, so 720 evaluations of
a model with 500 series take about 15 MB.

:meth:`History.record` is a :meth:`monitor.service.runner.Runner.subscribe` callback: it keeps each
model's ``last_evaluation`` once. With ``server.history.directory`` every kept evaluation is also on disk
(:mod:`monitor.service.history_store`): :meth:`History.load` reads them back at start-up, and
``fairwatch backfill`` writes the evaluations it makes there.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

import numpy as np

from metrics_core import STATES
from monitor.evaluation.results import ModelEvaluation
from monitor.service.history_store import HistoryStore
from monitor.service.snapshot import Snapshot

__all__ = ["History", "Series", "SeriesKey", "judged"]


class SeriesKey(NamedTuple):
    """One judged value's identity across evaluations: ``basis`` ``labels`` for the realised value,
    ``estimate`` for the value estimated before the labels (``models[].nowcast``)."""

    window: str
    metric: str
    attribute: str
    group: str
    basis: str = "labels"


@dataclass(frozen=True)
class Series:
    """One series over the kept evaluations, oldest first (NaN where a value was undefined)."""

    model: str
    key: SeriesKey
    times: tuple[datetime, ...]
    values: np.ndarray  # value, lower, upper, fair_min, fair_max per time: shape (len(times), 5)
    states: tuple[str, ...]

    @property
    def value(self) -> np.ndarray:
        return self.values[:, 0]

    @property
    def lower(self) -> np.ndarray:
        return self.values[:, 1]

    @property
    def upper(self) -> np.ndarray:
        return self.values[:, 2]

    @property
    def fair(self) -> np.ndarray:
        """The fair range at each time, shape (len(times), 2) (it moves where it is relative to
        a model-level value, as the AUCs' is)."""
        return self.values[:, 3:5]


@dataclass(frozen=True)
class _Frame:
    at: datetime
    keys: tuple[SeriesKey, ...]
    values: np.ndarray  # float64, (len(keys), 5)
    states: np.ndarray  # uint8 index into STATES, (len(keys),)


class History:
    """The last ``size`` evaluations of every model (thread-safe: recorded from evaluation
    threads, read by HTTP threads); with a ``store``, also on disk (``server.history.directory``)."""

    def __init__(self, size: int, store: HistoryStore | None = None) -> None:
        if size < 1:
            raise ValueError(f"history size must be at least 1, got {size}")
        self.size = size
        self.store = store
        self._frames: dict[str, deque[_Frame]] = {}
        self._lock = threading.Lock()
        self._disk = threading.Lock()
        self._seen: dict[str, weakref.WeakValueDictionary[int, ModelEvaluation]] = {}  # recorded, still alive
        self._version = 0  # changes whenever what the history holds changes

    def load(self, models: Iterable[str]) -> int:
        """Read the ``models``' kept evaluations back from the store (at start-up); how many."""
        if self.store is None:
            return 0
        loaded = 0
        for model in models:
            frames: deque[_Frame] = deque(maxlen=self.size)
            for at, keys, values, states in self.store.load(model, self.size):
                series = tuple(SeriesKey(*k) for k in keys)
                if frames and frames[-1].keys == series:
                    series = frames[-1].keys
                index = np.array(
                    [_STATE_INDEX.get(s, _STATE_INDEX["insufficient_data"]) for s in states], dtype=np.uint8
                )
                frames.append(_Frame(at, series, values, index))
            with self._lock:
                self._frames[model] = frames
                self._version += 1
            loaded += len(frames)
        return loaded

    @property
    def version(self) -> int:
        """A number that changes whenever an evaluation is kept or a model forgotten (what a
        response drawn from the history may be cached under)."""
        return self._version

    def record(self, snapshot: Snapshot) -> None:
        """Keep each model's last evaluation, once (a snapshot swap for another model or a
        failed evaluation brings no new one); forget the models the snapshot no longer has
        (removed or renamed by a config reload)."""
        with self._lock:
            for gone in self._frames.keys() - snapshot.models.keys():
                del self._frames[gone]
                self._version += 1
        for status in snapshot.models.values():
            if status.last_evaluation is not None:
                self.add(status.last_evaluation)

    def add(self, evaluation: ModelEvaluation) -> None:
        keys, values, states = judged(evaluation)
        gone: list[datetime] = []
        with self._lock:
            frames = self._frames.setdefault(evaluation.model, deque(maxlen=self.size))
            seen = self._seen.setdefault(evaluation.model, weakref.WeakValueDictionary())
            if seen.get(id(evaluation)) is evaluation:
                # kept already - also when it comes late: a snapshot published before a newer one of the
                # same model can reach its subscribers after it (the same evaluation, alive in that
                # snapshot: not a clock that stepped back, which brings a new one)
                return
            seen[id(evaluation)] = evaluation
            while frames and frames[-1].at >= evaluation.evaluated_at:
                gone.append(frames.pop().at)  # the clock stepped back: what was recorded at or after it goes
            if frames and frames[-1].keys == keys:
                keys = frames[-1].keys  # one tuple shared by consecutive evaluations
            if len(frames) == self.size:
                gone.append(frames[0].at)  # leaves the kept evaluations
            index = np.array([_STATE_INDEX[s] for s in states], dtype=np.uint8)
            frames.append(_Frame(evaluation.evaluated_at, keys, values, index))
            self._version += 1
        if self.store is not None:  # outside the readers' lock: they never wait for the disk
            with self._disk:  # one writer at a time: the folder follows memory in order
                for at in gone:  # first: a stepped-back clock's new evaluation may have a removed one's time
                    self.store.remove(evaluation.model, at)
                with self._lock:  # still kept (a later evaluation may have stepped back over it)
                    kept = any(
                        f.at == evaluation.evaluated_at for f in self._frames.get(evaluation.model, ())
                    )
                if kept:
                    self.store.write(evaluation.model, evaluation.evaluated_at, list(keys), values, states)

    def models(self) -> list[str]:
        with self._lock:
            return list(self._frames)

    def latest(self, model: str) -> datetime | None:
        """When the model's newest kept evaluation ran (``None``: none kept)."""
        with self._lock:
            frames = self._frames.get(model)
            return frames[-1].at if frames else None

    def times(self, model: str) -> tuple[datetime, ...]:
        with self._lock:
            return tuple(f.at for f in self._frames.get(model, ()))

    def series(
        self,
        model: str,
        *,
        since: datetime | None = None,
        where: Mapping[str, Iterable[str]] | None = None,
    ) -> list[Series]:
        """The model's series (each key in the order first seen), evaluations at or after ``since``;
        ``where`` keeps keys whose ``window``/``metric``/``attribute``/``group``/``basis`` is among
        the given values."""
        with self._lock:
            frames = [f for f in self._frames.get(model, ()) if since is None or f.at >= since]
        wanted = {name: set(values) for name, values in (where or {}).items()}
        if unknown := set(wanted) - set(SeriesKey._fields):
            raise ValueError(f"unknown series field(s) {sorted(unknown)}; fields: {list(SeriesKey._fields)}")
        points: dict[SeriesKey, list[tuple[int, int]]] = {}  # key -> (frame index, row)
        for i, frame in enumerate(frames):
            for row, key in enumerate(frame.keys):
                if all(getattr(key, name) in accepted for name, accepted in wanted.items()):
                    points.setdefault(key, []).append((i, row))
        out = []
        for key, where_ in points.items():
            out.append(
                Series(
                    model,
                    key,
                    tuple(frames[i].at for i, _ in where_),
                    np.array([frames[i].values[row] for i, row in where_]).reshape(len(where_), 5),
                    tuple(STATES[frames[i].states[row]] for i, row in where_),
                )
            )
        return out


def judged(evaluation: ModelEvaluation) -> tuple[tuple[SeriesKey, ...], np.ndarray, list[str]]:
    """An evaluation's series: their keys, values (value, lower, upper, fair_min, fair_max) and states -
    what the history keeps of it (and ``fairwatch backfill`` writes into its store)."""
    rows = [
        (SeriesKey(w.window, v.metric, v.attribute, v.group, basis), v)
        for w in evaluation.windows
        for basis, values in (("labels", w.values), ("estimate", w.estimates))
        for v in values
    ]
    values = np.array(
        [(v.value, v.ci_lower, v.ci_upper, v.fair_min, v.fair_max) for _, v in rows], dtype=np.float64
    ).reshape(len(rows), 5)
    return tuple(key for key, _ in rows), values, [v.state for _, v in rows]


_STATE_INDEX: dict[str, int] = {state: i for i, state in enumerate(STATES)}
