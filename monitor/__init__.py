"""fairwatch's monitoring service: sources, windows, schedule, Prometheus export, alerts."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("fairwatch")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
