"""``fairwatch``: the command line, the only part of the service that parses argv or prints."""

from monitor.cli.commands import entry, main

__all__ = ["entry", "main"]
