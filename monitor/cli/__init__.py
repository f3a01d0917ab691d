"""``fairwatch``: the command line, the only part of the service that parses argv or prints."""

from monitor.cli.commands import main

__all__ = ["main"]
