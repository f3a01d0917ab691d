"""The kept history on disk (``server.history.directory``): a restarted service keeps its charts, and
``fairwatch backfill`` fills them.

Layout: ``<directory>/<model>/<evaluated at, Unix microseconds>.arrow`` (a model's folder named as the
panes' are: :func:`~monitor.sources.count_files.folder_name`). Each file is one evaluation's judged
values - one row per series (window, metric, attribute, group, basis) with its value, interval, fair
range and state - as an Arrow IPC file written atomically (:mod:`monitor.sources.count_files`), the
model and the instant in its metadata.

The folder mirrors memory (:class:`monitor.service.history.History`): an evaluation kept is written,
one that leaves the kept ``size`` is removed. A file that cannot be read, or of another model or format,
is logged and removed. A folder that becomes unwritable (a full disk) is logged once; the history stays
in memory, and writing resumes when it can.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from monitor.sources.count_files import folder_name, is_partial, read_frame, writable_folder, write_frame

__all__ = ["FORMAT", "HistoryStore", "StoredEvaluation"]

log = logging.getLogger(__name__)

#: Written into every file; a file of another version is not read (and is removed).
FORMAT = 1
_META = b"fairwatch.history"
_SUFFIX = ".arrow"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
KEY_COLUMNS = ("window", "metric", "attribute", "group", "basis")
VALUE_COLUMNS = ("value", "lower", "upper", "fair_min", "fair_max")

#: One kept evaluation: when, its series' keys, their values (n x 5) and states.
StoredEvaluation = tuple[datetime, list[tuple[str, ...]], np.ndarray, list[str]]


class HistoryStore:
    """A folder of kept evaluations, one subfolder per model."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.up = True  # the last write or removal succeeded (False: logged once, retried)

    @classmethod
    def open(cls, directory: str, key: str = "server.history.directory") -> HistoryStore:
        """The store under ``directory``; a folder it cannot write is a :class:`ConfigError` naming
        ``key``."""
        return cls(writable_folder(Path(directory), key, "the history"))

    def write(
        self, model: str, at: datetime, keys: list[tuple[str, ...]], values: np.ndarray, states: list[str]
    ) -> None:
        frame = (
            pd.DataFrame(keys, columns=list(KEY_COLUMNS), dtype=object)
            if keys
            else pd.DataFrame({c: pd.Series([], dtype=object) for c in KEY_COLUMNS})
        )
        for i, column in enumerate(VALUE_COLUMNS):
            frame[column] = values[:, i] if len(values) else np.array([], dtype=np.float64)
        frame["state"] = pd.Series(states, dtype=object)
        folder = self.root / folder_name(model)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write_frame(
                self._path(model, at), frame, _META, {"format": FORMAT, "model": model, "at": at.isoformat()}
            )
        except OSError as exc:
            self._failed(exc)
            return
        self._recovered()

    def remove(self, model: str, at: datetime) -> None:
        try:
            self._path(model, at).unlink(missing_ok=True)
        except OSError as exc:
            self._failed(exc)

    def instants(self, model: str) -> list[datetime]:
        """The instants of the model's kept evaluations, oldest first."""
        folder = self.root / folder_name(model)
        if not folder.is_dir():
            return []
        out = []
        for path in folder.iterdir():
            if path.suffix == _SUFFIX and not is_partial(path.name) and path.stem.lstrip("-").isdigit():
                out.append(_EPOCH + timedelta(microseconds=int(path.stem)))
        return sorted(out)

    def load(self, model: str, size: int) -> list[StoredEvaluation]:
        """The model's newest ``size`` kept evaluations, oldest first; older files are removed."""
        instants = self.instants(model)
        for at in instants[:-size]:
            self.remove(model, at)
        out = []
        for at in instants[-size:]:
            path = self._path(model, at)
            try:
                frame, meta = read_frame(path, _META)
                if meta.get("format") != FORMAT or meta.get("model") != model:
                    raise ValueError(f"written for model {meta.get('model')!r}, format {meta.get('format')}")
            except Exception as exc:  # a damaged or foreign file: said, removed, the rest kept
                log.warning(
                    "history: removing %s, which cannot be read: %s: %s", path, type(exc).__name__, exc
                )
                self.remove(model, at)
                continue
            keys = list(frame[list(KEY_COLUMNS)].itertuples(index=False, name=None))
            values = frame[list(VALUE_COLUMNS)].to_numpy(dtype=np.float64).reshape(len(frame), 5)
            out.append((at, keys, values, [str(s) for s in frame["state"]]))
        return out

    def trim(self, model: str, size: int) -> None:
        """Keep the model's newest ``size`` evaluations on disk."""
        for at in self.instants(model)[:-size]:
            self.remove(model, at)

    def _path(self, model: str, at: datetime) -> Path:
        return self.root / folder_name(model) / f"{(at - _EPOCH) // timedelta(microseconds=1)}{_SUFFIX}"

    def _failed(self, exc: OSError) -> None:
        if self.up:
            log.error(
                "history: cannot write into %s (kept in memory, retried): %s", self.root, exc.strerror or exc
            )
        self.up = False

    def _recovered(self) -> None:
        if not self.up:
            log.info("history: writing into %s again", self.root)
        self.up = True
