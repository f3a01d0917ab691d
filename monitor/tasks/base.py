"""What a task is: the shape of an entry of :data:`monitor.tasks.TASKS`, and the pieces entries share.

A :class:`Task` holds everything the service knows about one ``task:`` value - which columns
it needs and reads, its ``options:``, how bad rows are recognised, which registry families
its metrics come from and which ``metrics_core`` function evaluates its windows - so that
config validation, evaluation and the dashboard read one table instead of keeping their
own copies of these facts.
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, Self

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, ValidationError

import metrics_core as mc
from monitor.core.suggest import did_you_mean

__all__ = [
    "ColumnsView",
    "FamilyModule",
    "GroupwiseOptions",
    "ModelView",
    "Rows",
    "Task",
    "TaskName",
    "TaskOptions",
    "WindowEvaluator",
    "WindowRequest",
]

TaskName = Literal["binary", "multiclass", "regression", "recommender", "clustering", "text"]


class ColumnsView(Protocol):
    """The column names a task reads (``columns:`` of a model; :class:`monitor.config.ColumnsConfig`
    has them). Tasks sit below the config layer: they see a model through these read-only views."""

    @property
    def score(self) -> str | None: ...
    @property
    def prediction(self) -> str | None: ...
    @property
    def label(self) -> str | None: ...
    @property
    def user(self) -> str | None: ...
    @property
    def item(self) -> str | None: ...
    @property
    def rank(self) -> str | None: ...
    @property
    def cluster(self) -> str | None: ...
    @property
    def features(self) -> Sequence[str]: ...
    @property
    def text(self) -> str | None: ...


class ModelView(Protocol):
    """What a task reads of a model's config (:class:`monitor.config.ModelConfig` has it)."""

    @property
    def task(self) -> TaskName: ...
    @property
    def columns(self) -> ColumnsView: ...
    @property
    def metrics(self) -> Sequence[str] | None: ...
    @property
    def threshold(self) -> float: ...
    @property
    def score_range(self) -> tuple[float, float] | None: ...
    @property
    def score_decimals(self) -> int | None: ...
    @property
    def thresholds(self) -> Mapping[str, Mapping[str, float]]: ...
    @property
    def favorable(self) -> Literal["positive", "negative"]: ...


#: A cleaned, row-aligned input column of a task (1-D), or a block of them (``features``: 2-D).
InputArray = NDArray[Any]


class TaskOptions(BaseModel):
    """A task's ``options:``. The base class takes none: binary models have no options.

    Subclasses declare each keyword option of their family's ``evaluate`` as a field with the
    same default, so that an option left out behaves as if the family had not been given it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    def relative_to(self, base: Path) -> Self:
        """These options with file paths made relative to ``base`` (the config file's folder)."""
        return self

    def evaluate_kwargs(self) -> dict[str, object]:
        """The keyword options to pass to the family's ``evaluate``, files read where options name them."""
        return self.model_dump()


class GroupwiseOptions(TaskOptions):
    """Options every group-vs-reference family takes: its bootstrap's size and seed."""

    n_resamples: int = 200
    seed: int = 0


class Rows:
    """One cleaning pass over a frame: inputs by name, and bad rows dropped and counted by reason.

    A row rejected for several reasons is counted once, under the first. With ``weight``, each
    entry of the frame stands for that many rows (counted by the database) and counts so.
    """

    def __init__(self, frame: pd.DataFrame, weight: NDArray[np.float64] | None = None) -> None:
        self.frame = frame
        self.weight = weight
        self.keep = np.ones(len(frame), dtype=bool)
        self.rejected: Counter[str] = Counter()
        self.inputs: dict[str, InputArray] = {}

    def reject(self, mask: NDArray[np.bool_], reason: str) -> None:
        new = mask & self.keep
        if new.any():
            self.rejected[reason] += int(new.sum() if self.weight is None else round(self.weight[new].sum()))
            self.keep[new] = False

    def numeric(self, column: str) -> NDArray[np.float64]:
        """The column as floats; what does not parse is NaN."""
        values = pd.to_numeric(self.frame[column], errors="coerce")
        return np.asarray(values.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)

    def text(self, column: str) -> NDArray[np.object_]:
        """Class labels and ids as text (1 and 1.0 are one class); missing stays None."""
        values = self.frame[column]
        cells = values.astype(object).where(values.notna(), None)
        return np.array(
            [
                None if v is None else (str(int(v)) if isinstance(v, float) and v.is_integer() else str(v))
                for v in cells
            ],
            dtype=object,
        )

    def required_text(self, key: str, column: str | None, reason: str) -> None:
        """Input ``key`` from a text column that every row needs: a missing value rejects the row."""
        assert column is not None, "config validation makes sure a required column is named"
        values = self.text(column)
        self.reject(np.array([v is None for v in values], dtype=bool), reason)
        self.inputs[key] = values


#: Reads the model's columns from ``rows.frame`` into ``rows.inputs``, rejecting bad rows.
Cleaner = Callable[[Rows, ModelView], None]


@dataclass(frozen=True, kw_only=True)
class WindowRequest:
    """What one evaluation of one window asks of a task's evaluator, besides the data."""

    metrics: Sequence[str]
    confidence: float
    fair_ranges: Mapping[str, tuple[float | None, float | None]]
    min_samples: float
    model: ModelView  # with the columns this window's log has (see monitor.reading.frame.columns_for_frame)
    options: Mapping[str, object]  # TaskOptions.evaluate_kwargs(), read once at start-up
    adjust: mc.Adjustment = "none"  # multiplicity adjustment of the alerting values (alerts.adjust)
    family_size: int | None = None  # alerting values the adjustment covers (the whole window's)
    method: mc.Method = "fixed"  # fixed-sample intervals or anytime-valid sequences (alerts.method)
    # the window's model values fair ranges are relative to (the overall AUC), when the data is a part
    # of the window (a comparison on its own rows); default: computed from the data
    anchors: Mapping[str, float] | None = None


class WindowEvaluator(Protocol):
    """Evaluates one window's cleaned inputs for every group of ``attributes``."""

    @property
    def module(self) -> str:
        """The ``metrics_core`` module that does the work."""
        ...

    def __call__(
        self, data: Mapping[str, InputArray], attributes: Sequence[mc.Attribute], request: WindowRequest
    ) -> mc.Report: ...


@dataclass(frozen=True)
class FamilyModule:
    """A group-vs-reference family module's ``evaluate``, imported by its path when first used."""

    module: str

    def __call__(
        self, data: Mapping[str, InputArray], attributes: Sequence[mc.Attribute], request: WindowRequest
    ) -> mc.Report:
        evaluate: Callable[..., mc.Report] = importlib.import_module(self.module).evaluate
        return evaluate(
            data,
            attributes,
            metrics=list(request.metrics),
            confidence=request.confidence,
            fair_ranges=request.fair_ranges,
            min_samples=request.min_samples,
            adjust=request.adjust,
            family_size=request.family_size,
            method=request.method,
            **request.options,
        )


@dataclass(frozen=True, kw_only=True)
class Task:
    """One ``task:`` value: its columns, options, row cleaner, metric families and evaluator.

    ``required``: groups of column keys of which at least one must be named
    (``(("rank", "score"),)``: rank or score). ``reads``: every column key the task reads,
    with the metric inputs it feeds. ``optional``: keys whose *default* name may be missing
    from the log (their metrics are then skipped); a name the user wrote must be there.
    """

    name: TaskName
    families: tuple[str, ...]  # the registry families its metrics belong to
    evaluate: WindowEvaluator
    required: tuple[tuple[str, ...], ...]
    reads: Mapping[str, tuple[str, ...]]
    optional: tuple[str, ...] = ()
    options: type[TaskOptions] = TaskOptions
    clean: Cleaner

    @property
    def inputs(self) -> frozenset[str]:
        """Every input a column of the task can feed."""
        return frozenset(i for fed in self.reads.values() for i in fed)

    def missing_columns(self, columns: ColumnsView) -> list[str]:
        """The required column keys (``"rank or score"`` for a choice) ``columns`` leaves unnamed."""
        return [" or ".join(keys) for keys in self.required if not any(getattr(columns, k) for k in keys)]

    def available_inputs(self, columns: ColumnsView) -> frozenset[str]:
        """The inputs the named columns feed."""
        return frozenset(i for key, fed in self.reads.items() if getattr(columns, key) for i in fed)

    def can_compute(self, metric: str, columns: ColumnsView) -> bool:
        """Whether the named columns feed every input ``metric`` needs (its options aside)."""
        requires = mc.get_metric(metric).requires
        return (requires & self.inputs) <= self.available_inputs(columns)

    def parse_options(self, raw: Mapping[str, object]) -> TaskOptions:
        """Validate an ``options:`` mapping; a ValueError names unknown keys and the allowed ones."""
        allowed = sorted(self.options.model_fields)
        unknown = sorted(set(raw) - set(allowed))
        if unknown:
            hints = "".join(did_you_mean(key, allowed) for key in unknown)
            raise ValueError(
                f"options {unknown} are not options of task {self.name}{hints}; "
                f"its options are: {', '.join(allowed) or 'none'}"
            )
        try:
            return self.options.model_validate(raw)
        except ValidationError as exc:
            problems = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
            raise ValueError("; ".join(problems)) from None
