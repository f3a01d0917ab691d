"""Prediction and label sources, chosen by the ``kind:`` of a source config."""

from __future__ import annotations

from collections.abc import Mapping

from monitor.config import SourceConfig
from monitor.core.errors import ConfigError
from monitor.sources.contract import Batch, CountingSource, Source, normalize_timestamps
from monitor.sources.memory import MemorySource

__all__ = ["Batch", "CountingSource", "MemorySource", "Source", "build_source", "normalize_timestamps"]


def build_source(
    config: SourceConfig, *, timestamp_column: str | None, memory: Mapping[str, Source] | None = None
) -> Source:
    """The source a config describes. ``timestamp_column=None`` reads without a time filter."""
    if config.kind == "sql":
        from monitor.sources.sql.source import SqlSource

        return SqlSource(config, timestamp_column=timestamp_column)
    if config.kind == "files":
        from monitor.sources.files.source import FileSource

        return FileSource(config, timestamp_column=timestamp_column)
    if config.kind == "spark":
        from monitor.sources.spark.source import SparkSource

        return SparkSource(config, timestamp_column=timestamp_column)
    if config.kind == "memory":
        name = config.name or "default"
        if memory is None or name not in memory:
            raise ConfigError(f"source.name: no in-memory source named {name!r} was registered")
        return memory[name]
    raise ConfigError(f"source.kind: unknown kind {config.kind!r}")
