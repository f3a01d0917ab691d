"""The demo's synthetic prediction log: a toxicity model that drifts into bias and back.

Comments with the nine Jigsaw identity columns (annotator fractions, NaN where a comment was
not annotated), a toxicity score rounded to 3 decimals (ties, as real models log), the action
a moderation model takes on it, and labels that arrive ``label_delay`` later in their own
table. From ``bias_after`` past the start and for ``bias_for``, non-toxic comments that
mention ``muslim`` score as more toxic - the failure mode of Borkan et al. - and with
``repeat`` the story starts over every ``repeat``.

Rows are drawn an hour at a time from a generator seeded by the seed and the hour's offset,
so a log written the same way with and without bias differs only in its scores. :class:`GrowingLog` keeps appending hours ahead of
a running clock and deletes the rows no window reads any more, so a demo can run for days.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["BIASED", "IDENTITIES", "PREVALENCE", "DemoLog", "GrowingLog", "write_demo_log"]

IDENTITIES = [
    "male",
    "female",
    "homosexual_gay_or_lesbian",
    "christian",
    "jewish",
    "muslim",
    "black",
    "white",
    "psychiatric_or_mental_illness",
]
PREVALENCE = [0.06, 0.07, 0.03, 0.05, 0.02, 0.06, 0.03, 0.04, 0.02]
BIASED = "muslim"
_HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class DemoLog:
    path: Path
    start: datetime  # simulated time at which the service starts
    bias_start: datetime  # the first biased span (with ``repeat``: again every ``repeat``)
    bias_end: datetime
    first: datetime  # where the log begins (start - history)
    written_until: datetime  # rows are written up to here
    repeat: timedelta | None = None
    rows_per_hour: int = 6000
    label_delay: timedelta = timedelta(minutes=30)
    seed: int = 7
    next_id: int = 0

    def biased(self, ts: pd.DatetimeIndex) -> np.ndarray:
        """Whether the model is biased at each time."""
        since = (ts - pd.Timestamp(self.bias_start)).total_seconds().to_numpy()
        span = (self.bias_end - self.bias_start).total_seconds()
        if self.repeat is not None:
            since = np.where(since >= 0, np.mod(since, self.repeat.total_seconds()), since)
        return np.asarray((since >= 0) & (since < span))

    def rows(self, t0: datetime, t1: datetime) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The predictions and labels of ``[t0, t1)``, ids from ``next_id`` on."""
        rng = np.random.default_rng([self.seed, int((t0 - self.first).total_seconds())])
        span = (t1 - t0).total_seconds()
        n = round(self.rows_per_hour * span / 3600)
        offsets = np.sort(rng.uniform(0, span, n))
        ts = pd.Timestamp(t0) + pd.to_timedelta(offsets, unit="s")
        toxic = rng.random(n) < 0.08
        ident = {name: rng.random(n) < p for name, p in zip(IDENTITIES, PREVALENCE, strict=True)}
        logit = -2.2 + 3.6 * toxic + rng.normal(0, 1.0, n)
        logit += 2.2 * (ident[BIASED] & ~toxic & self.biased(ts))
        score = np.round(1 / (1 + np.exp(-logit)), 3)  # rounded scores: ties, as real models log
        # a second, multiclass model acts on the score: allow / review / remove
        action = np.where(score >= 0.7, "remove", np.where(score >= 0.4, "review", "allow"))
        ids = self.next_id + np.arange(n)
        t = ts.to_pydatetime()
        frame = pd.DataFrame({"id": ids, "ts": [x.isoformat() for x in t], "score": score, "action": action})
        annotated = rng.random(n) < 0.6
        for name in IDENTITIES:
            frac = np.where(
                ident[name], rng.uniform(0.5, 1.0, n), rng.uniform(0.0, 0.3, n) * (rng.random(n) < 0.2)
            )
            frame[name] = np.where(annotated | ident[name], np.round(frac, 2), np.nan)
        labels = pd.DataFrame(
            {
                "id": ids,
                "label": toxic.astype(int),
                "labeled_at": [(x + self.label_delay).isoformat() for x in t],
            }
        )
        return frame, labels


def write_demo_log(
    path: Path,
    *,
    start: datetime,
    history: timedelta = timedelta(hours=3),
    future: timedelta = timedelta(hours=12),
    rows_per_hour: int = 6000,
    bias_after: timedelta = timedelta(hours=1),
    bias_for: timedelta = timedelta(hours=5),
    repeat: timedelta | None = None,
    label_delay: timedelta = timedelta(minutes=30),
    seed: int = 7,
) -> DemoLog:
    """Write ``predictions`` and ``labels`` tables covering ``[start - history, start + future)``."""
    log = DemoLog(
        path,
        start,
        start + bias_after,
        start + bias_after + bias_for,
        start - history,
        start - history,
        repeat=repeat,
        rows_per_hour=rows_per_hour,
        label_delay=label_delay,
        seed=seed,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in (path, *(path.with_name(path.name + end) for end in ("-journal", "-wal", "-shm"))):
        old.unlink(missing_ok=True)
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        log = _append(conn, log, start + future)
        conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")
        conn.execute("CREATE INDEX labels_at ON labels (labeled_at)")
    return log


def _append(conn: sqlite3.Connection, log: DemoLog, until: datetime) -> DemoLog:
    """Append hour after hour up to ``until``; the log as now written."""
    frames, labels = [], []
    while log.written_until < until:
        t0 = log.written_until
        t1 = min(t0 + _HOUR, until)
        rows, labelled = log.rows(t0, t1)
        frames.append(rows)
        labels.append(labelled)
        log = replace(log, written_until=t1, next_id=log.next_id + len(rows))
    if frames:
        pd.concat(frames, ignore_index=True).to_sql("predictions", conn, index=False, if_exists="append")
        pd.concat(labels, ignore_index=True).to_sql("labels", conn, index=False, if_exists="append")
    return log


class GrowingLog:
    """A demo log that keeps ``lead`` ahead of a running clock and ``keep`` behind it.

    Appends whole hours (rows and their labels in one transaction) and deletes rows older than
    ``keep``: the longest window, the label delay and the sealed panes' margin fit in it. Call
    :meth:`advance` between reads, never during one: the service reads SQLite through a second
    copy of the library (ADBC's), and one process's two copies do not see each other's locks.
    The file keeps SQLite's rollback journal, where an idle reader holds no lock at all.
    """

    def __init__(self, log: DemoLog, *, lead: timedelta, keep: timedelta) -> None:
        self.log, self.lead, self.keep = log, lead, keep
        self.hours_written = 0

    def advance(self, now: datetime) -> None:
        """Write what ``now + lead`` needs, and drop what ``now - keep`` no longer does."""
        if self.log.written_until >= now + self.lead:
            return
        until = self.log.written_until + _HOUR * max(
            1, -(-(now + self.lead - self.log.written_until) // _HOUR)
        )
        with contextlib.closing(sqlite3.connect(self.log.path, timeout=30)) as conn, conn:
            before = self.log.written_until
            self.log = _append(conn, self.log, until)
            self.hours_written += round((until - before) / _HOUR)
            cutoff = (now - self.keep).isoformat()
            conn.execute("DELETE FROM predictions WHERE ts < ?", (cutoff,))
            conn.execute("DELETE FROM labels WHERE labeled_at < ?", (cutoff,))
