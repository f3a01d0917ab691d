"""Spark sources: a table or a Parquet/Delta path counted by a Spark cluster (:class:`SparkSource`)."""

from monitor.sources.spark.source import SparkSource

__all__ = ["SparkSource"]
