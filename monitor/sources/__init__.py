"""Prediction and label sources, chosen by the ``kind:`` of a source config.

Each kind is a sub-package that imports only the contract (:mod:`~monitor.sources.contract`),
the shared frame helpers (:mod:`~monitor.sources.frames`), the count statement
(:mod:`~monitor.sources.count_sql`) and counts files (:mod:`~monitor.sources.count_files`), never
another kind; :data:`KINDS` names the class of each,
imported only when a config uses it (Spark's and DuckDB's libraries load only for their kinds).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType

from monitor.config import SourceConfig
from monitor.core.errors import ConfigError
from monitor.sources.contract import Batch, CountingSource, LabelJoiningSource, Source
from monitor.sources.frames import normalize_timestamps
from monitor.sources.memory import MemorySource

__all__ = [
    "KINDS",
    "Batch",
    "CountingSource",
    "LabelJoiningSource",
    "MemorySource",
    "Source",
    "build_source",
    "normalize_timestamps",
]

#: ``kind:`` -> the class that reads it, as ``module:class`` (``memory`` sources are registered, not built).
KINDS: Mapping[str, str] = MappingProxyType(
    {
        "sql": "monitor.sources.sql.source:SqlSource",
        "files": "monitor.sources.files.source:FileSource",
        "spark": "monitor.sources.spark.source:SparkSource",
        "published": "monitor.sources.published.source:PublishedSource",
    }
)


def build_source(
    config: SourceConfig,
    *,
    timestamp_column: str | None,
    model: tuple[str, str] | None = None,
    memory: Mapping[str, Source] | None = None,
) -> Source:
    """The source a config describes. ``timestamp_column=None`` reads without a time filter.
    ``model`` (a column and a model's name): the source may leave out the rows of other models of
    the log where it can tell them apart as the row path does (the rows are filtered again)."""
    if config.kind == "memory":
        name = config.name or "default"
        if memory is None or name not in memory:
            raise ConfigError(f"source.name: no in-memory source named {name!r} was registered")
        return memory[name]
    if config.kind not in KINDS:
        raise ConfigError(f"source.kind: unknown kind {config.kind!r}")
    module, _, name = KINDS[config.kind].partition(":")
    kind = getattr(importlib.import_module(module), name)
    source: Source = kind(config, timestamp_column=timestamp_column, model=model)
    return source
