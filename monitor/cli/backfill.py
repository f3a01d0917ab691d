"""``fairwatch backfill`` at the terminal: the range checked, a progress bar, and the OpenMetrics text
written to a file only once complete (:mod:`monitor.outputs.prometheus.backfill` renders it)."""

from __future__ import annotations

import os
import stat
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
        output = writable_file(output)
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


_KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def writable_file(output: Path) -> Path:
    """The regular file ``--output`` names: itself, or the file a symbolic link points to (followed
    explicitly, so that the link is kept and its target written). Anything else is a
    :class:`ConfigError`: the output is written beside it and renamed over it, which would replace a
    device, a FIFO (its reader left waiting) or the link itself."""
    target = Path(os.path.realpath(output)) if output.is_symlink() else output
    via = f" (the link's target {target})" if target != output else ""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        hint = "name the file to write" if stat.S_ISDIR(mode) else "omit --output to write to standard output"
        raise ConfigError(f"--output {output}{via} is {kind}: fairwatch writes regular files only; {hint}")
    if not target.parent.is_dir():
        raise ConfigError(f"--output {output}{via}: no directory {target.parent}")
    return target


def _write_atomically(
    path: Path, run: Callable[[Callable[[bytes], object]], BackfillResult]
) -> BackfillResult:
    """``run(write)`` into a temporary file beside ``path``, renamed over it once complete (and once
    more checked to be a regular file or absent: it may have changed while the evaluations ran)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as fh:
            result = run(fh.write)
        if path.is_symlink() or (path.exists() and not path.is_file()):
            writable_file(path)  # raises, naming what it became
            raise ConfigError(f"--output {path} became a symbolic link while the backfill ran")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return result
