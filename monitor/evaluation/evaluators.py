"""A config's evaluators, built together and closed together, and one evaluation of each.

The service builds :class:`Evaluators` once per config (the composition root) and evaluates one
model per scheduled tick; the commands that evaluate without a service - ``evaluate``, ``check``,
``power``, ``report``, ``backfill`` - build the models they were asked for (``--model``, checked
here with a did-you-mean), evaluate them and close every source they opened, whatever happens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Self

from monitor.config import ModelConfig, Settings
from monitor.core.errors import ConfigError
from monitor.core.suggest import did_you_mean
from monitor.evaluation.evaluator import Evaluator
from monitor.evaluation.results import ModelEvaluation
from monitor.reading.pane_store import PaneStore
from monitor.sources import build_source
from monitor.sources.contract import PaneCountingSource, Source

__all__ = ["Evaluators", "build_evaluators", "evaluate_once", "select_models"]


class Evaluators(Mapping[str, Evaluator]):
    """Evaluators by model name; closing them closes every source they opened."""

    def __init__(self, evaluators: Mapping[str, Evaluator]) -> None:
        self._evaluators = dict(evaluators)

    def __getitem__(self, name: str) -> Evaluator:
        return self._evaluators[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._evaluators)

    def __len__(self) -> int:
        return len(self._evaluators)

    def close(self) -> None:
        for evaluator in self._evaluators.values():
            evaluator.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def select_models(settings: Settings, wanted: Sequence[str] | None, where: str = "the config") -> list[str]:
    """The names of the models ``wanted`` (``--model``; ``None`` or empty: every model), in config
    order. A name the config does not have is a :class:`ConfigError` naming it, what was meant and
    the models there are: a typo must not turn ``check`` into a passing gate."""
    names = [m.name for m in settings.models]
    unknown = sorted(set(wanted or ()) - set(names))
    if unknown:
        hints = "".join(did_you_mean(name, names) for name in unknown)
        raise ConfigError(
            f"--model: no model named {', '.join(unknown)} in {where}{hints}; its models are: {', '.join(names)}"
        )
    return [name for name in names if not wanted or name in wanted]


def build_evaluators(
    settings: Settings,
    *,
    models: Sequence[str] | None = None,
    memory_sources: Mapping[str, Source] | None = None,
    progress: Callable[[str], None] | None = None,
    persist_panes: bool = False,
) -> Evaluators:
    """An :class:`Evaluator` per configured model, or per model of ``models`` (sources are created,
    not yet read). A model that cannot be built closes the sources built before it.

    ``persist_panes``: models with ``panes.directory`` keep their sealed panes there too (the
    service; one-off commands keep them in memory, so they never touch the service's files). A
    folder that cannot be written is a :class:`~monitor.core.errors.ConfigError`.
    """
    chosen = set(select_models(settings, models))
    built: dict[str, Evaluator] = {}
    try:
        for i, model in enumerate(settings.models):
            if model.name not in chosen:
                continue
            store = None
            if persist_panes and model.panes.enabled and model.panes.directory:
                key = f"models[{i}].panes.directory"
                store = PaneStore.open(model.panes.directory, model.name, model.source, key)
            built[model.name] = _evaluator(model, settings, memory_sources, progress, store)
    except BaseException:
        Evaluators(built).close()
        raise
    return Evaluators(built)


def _evaluator(
    model: ModelConfig,
    settings: Settings,
    memory: Mapping[str, Source] | None,
    progress: Callable[[str], None] | None,
    pane_store: PaneStore | None,
) -> Evaluator:
    rows_of = (model.columns.model, model.name) if model.columns.model else None
    config = model.source
    if config.kind == "published" and config.name is None:  # the counts published under this model's name
        config = config.model_copy(update={"name": model.name})
    source = build_source(config, timestamp_column=model.columns.timestamp, model=rows_of, memory=memory)
    if pane_store is not None and isinstance(source, PaneCountingSource):  # a tailed log's running counts
        source.keep_counts_in(pane_store.root / "tail")
    try:
        label_source = None
        if model.labels is not None:
            label_source = build_source(
                model.labels.source, timestamp_column=model.labels.columns.timestamp, memory=memory
            )
        return Evaluator(
            model,
            source,
            label_source,
            confidence=settings.alerts.confidence,
            adjust=settings.alerts.adjust,
            method=settings.alerts.method,
            progress=progress,
            pane_store=pane_store,
        )
    except BaseException:
        source.close()
        raise


def evaluate_once(
    settings: Settings,
    *,
    at: datetime | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    models: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[ModelEvaluation]:
    """Evaluate each model (or each of ``models``) once: its windows ending ``at`` (default: now),
    or the one ``[start, end)`` range (``end`` defaults to now); every source is closed after."""
    if end is not None and start is None:
        raise ConfigError("--end needs --start")
    if start is not None:
        end = end or datetime.now(UTC)
        if start >= end:
            raise ConfigError(f"--start {start.isoformat()} must be before --end {end.isoformat()}")
    with build_evaluators(settings, models=models, progress=progress) as evaluators:
        return [ev.evaluate(at or datetime.now(UTC), start=start, end=end) for ev in evaluators.values()]
