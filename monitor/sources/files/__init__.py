"""File sources: Parquet, CSV and JSON Lines logs, one file or a folder of them (:class:`FileSource`)."""

from monitor.sources.files.source import FileSource

__all__ = ["FileSource"]
