"""SQL sources: a table or query of any SQLAlchemy database (:class:`SqlSource`)."""

from monitor.sources.sql.source import SqlSource

__all__ = ["SqlSource"]
