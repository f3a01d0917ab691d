"""The installed distribution's version (``fairwatch --version``, ``fairwatch_build``, alert payloads)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("fairwatch")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
