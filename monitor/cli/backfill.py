"""``fairwatch backfill`` at the terminal: the range checked, a progress bar, and the OpenMetrics text
written to a file only once complete (:mod:`monitor.outputs.prometheus.backfill` renders it)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from monitor.config import Settings
from monitor.core.errors import ConfigError
from monitor.outputs.prometheus.backfill import BackfillResult, backfill, backfill_instants

__all__ = ["run_backfill"]


def run_backfill(
    settings: Settings,
    *,
    start: datetime,
    end: datetime,
    step: timedelta,
    output: Path | None,
    models: Sequence[str] | None,
    labels: Mapping[str, str],
    console: Console,
) -> BackfillResult:
    """``fairwatch backfill``: checks the range, shows progress on ``console``, writes ``output`` (a
    file, replaced only once complete) or standard output."""
    instants = backfill_instants(start, end, step, now=datetime.now(UTC))
    if output is not None:  # said now, not after the evaluations, and of this path, not its temporary twin
        if output.is_dir():
            raise ConfigError(f"--output {output} is a directory: name the file to write")
        if not output.parent.is_dir():
            raise ConfigError(f"--output {output}: no directory {output.parent}")
    n_models = len(set(models)) if models else len(settings.models)
    progress = Progress(
        TextColumn("backfill"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=console,
    )
    with progress:
        task = progress.add_task("", total=len(instants) * n_models)

        def advance(description: str) -> None:
            progress.update(task, advance=1, description=description)

        def run(write: Callable[[bytes], object]) -> BackfillResult:
            return backfill(settings, instants, write, models=models, labels=labels, advance=advance)

        if output is None:
            return run(sys.stdout.buffer.write)
        return _write_atomically(output, run)


def _write_atomically(
    path: Path, run: Callable[[Callable[[bytes], object]], BackfillResult]
) -> BackfillResult:
    """``run(write)`` into a temporary file beside ``path``, renamed over it once complete."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as fh:
            result = run(fh.write)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return result
