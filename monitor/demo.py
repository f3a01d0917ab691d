"""``fairwatch demo``: a toxicity model drifting into bias, monitored live within a minute.

The demo writes a synthetic Jigsaw-style prediction log to a SQLite file: comments with
the nine identity columns, a toxicity score, and labels that arrive 30 minutes after the
prediction in their own table. An hour after the start the model begins to score
non-toxic comments that mention one identity (``muslim``) as more toxic - the failure
mode of Borkan et al. - and five hours later the bias is fixed. The service runs on that
log with time accelerated (default: 10 simulated minutes per real second), so a user sees
the metrics on ``/metrics``, the alert go pending, fire, and resolve.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console
from rich.live import Live
from rich.table import Table

__all__ = ["DemoLog", "run_demo", "write_demo_config", "write_demo_log"]

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


@dataclass(frozen=True)
class DemoLog:
    path: Path
    start: datetime  # simulated time at which the service starts
    bias_start: datetime
    bias_end: datetime


def write_demo_log(
    path: Path,
    *,
    start: datetime,
    history: timedelta = timedelta(hours=3),
    future: timedelta = timedelta(hours=12),
    rows_per_hour: int = 6000,
    bias_after: timedelta = timedelta(hours=1),
    bias_for: timedelta = timedelta(hours=5),
    label_delay: timedelta = timedelta(minutes=30),
    seed: int = 7,
) -> DemoLog:
    """Write ``predictions`` and ``labels`` tables covering ``[start - history, start + future)``."""
    rng = np.random.default_rng(seed)
    span = history + future
    n = int(rows_per_hour * span.total_seconds() / 3600)
    offsets = np.sort(rng.uniform(0, span.total_seconds(), n))
    ts = pd.Timestamp(start - history) + pd.to_timedelta(offsets, unit="s")
    toxic = rng.random(n) < 0.08
    ident = {name: rng.random(n) < p for name, p in zip(IDENTITIES, PREVALENCE, strict=True)}
    logit = -2.2 + 3.6 * toxic + rng.normal(0, 1.0, n)
    bias_start, bias_end = start + bias_after, start + bias_after + bias_for
    t = ts.to_pydatetime()
    biased_time = (ts >= pd.Timestamp(bias_start)) & (ts < pd.Timestamp(bias_end))
    logit += 2.2 * (ident[BIASED] & ~toxic & np.asarray(biased_time))
    score = np.round(1 / (1 + np.exp(-logit)), 3)  # rounded scores: ties, as real models log
    # a second, multiclass model acts on the score: allow / review / remove
    action = np.where(score >= 0.7, "remove", np.where(score >= 0.4, "review", "allow"))
    # Identity columns are annotator fractions, NaN where a comment was not annotated (Jigsaw).
    frame = pd.DataFrame(
        {"id": np.arange(n), "ts": [x.isoformat() for x in t], "score": score, "action": action}
    )
    annotated = rng.random(n) < 0.6
    for name in IDENTITIES:
        frac = np.where(
            ident[name], rng.uniform(0.5, 1.0, n), rng.uniform(0.0, 0.3, n) * (rng.random(n) < 0.2)
        )
        frame[name] = np.where(annotated | ident[name], np.round(frac, 2), np.nan)
    labels = pd.DataFrame(
        {
            "id": np.arange(n),
            "label": toxic.astype(int),
            "labeled_at": [(x + label_delay).isoformat() for x in t],
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    with sqlite3.connect(path) as conn:
        frame.to_sql("predictions", conn, index=False)
        labels.to_sql("labels", conn, index=False)
        conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")
        conn.execute("CREATE INDEX labels_at ON labels (labeled_at)")
    return DemoLog(path, start, bias_start, bias_end)


def write_demo_config(directory: Path, *, port: int, host: str = "127.0.0.1") -> Path:
    """The demo's config, also a worked example of every common key."""
    cols = ", ".join(IDENTITIES)
    text = f"""\
# fairwatch demo config - run it yourself with: fairwatch run --config {directory / "config.yaml"}
models:
  - name: toxicity
    source: {{kind: sql, url: "sqlite:///predictions.db", table: predictions}}
    labels:
      source: {{kind: sql, url: "sqlite:///predictions.db", table: labels}}
      join_on: id
      columns: {{id: id, label: label, timestamp: labeled_at}}
    columns: {{id: id, timestamp: ts, score: score, label: label}}
    threshold: 0.5
    groups:
      - attribute: identity
        kind: indicator
        columns: [{cols}]
    windows: [{{name: 1h, length: 1h}}, {{name: 3h, length: 3h}}]
    label_delay: 30m
    interval: 1s
    metrics: [subgroup_auc, bpsn_auc, bnsp_auc, negative_aeg, positive_aeg, disparate_impact,
              statistical_parity_difference, equal_opportunity_difference, false_positive_rate_difference,
              overall_auc, jigsaw_final_score]
    min_samples: 50
  - name: moderation                    # a multiclass model: the action taken on each comment
    task: multiclass
    source: {{kind: sql, url: "sqlite:///predictions.db", table: predictions}}
    columns: {{id: id, timestamp: ts, prediction: action, score: null, label: null}}
    groups:
      - attribute: identity
        kind: indicator
        columns: [{cols}]
    windows: [{{name: 1h, length: 1h}}, {{name: 3h, length: 3h}}]
    interval: 1s
    metrics: [multiclass_statistical_parity, multiclass_statistical_parity_max]
    min_samples: 50
alerts:
  for: 30m
  confidence: 0.95
  log: true
server: {{host: "{host}", port: {port}}}
"""
    path = directory / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _status_table(app: object, now: datetime) -> Table:
    from monitor.app import App

    assert isinstance(app, App)
    snap = app.monitor.snapshot()
    table = Table(title=f"fairwatch demo - simulated time {now:%Y-%m-%d %H:%M} UTC", title_justify="left")
    for col in ("model", "window", "group", "metric", "value", "fair range", "state"):
        table.add_column(col)
    shown = ("bpsn_auc", "negative_aeg", "statistical_parity_difference", "multiclass_statistical_parity")
    for status in snap.models.values():
        ev = status.last_evaluation
        if ev is None:
            continue
        for w in ev.windows:
            for v in w.values:
                if v.group != BIASED or v.metric not in shown:
                    continue
                style = {"violation": "bold red", "inconclusive": "yellow", "ok": "green"}.get(v.state, "dim")
                fair = f"[{v.fair_min:.3f}, {v.fair_max:.3f}]"
                table.add_row(
                    ev.model, w.window, v.group, v.metric, f"{v.value:.3f}", fair, f"[{style}]{v.state}[/]"
                )
    alerts = ", ".join(f"{a.labels['metric']}/{a.labels['window']}: {a.state}" for a in snap.alerts) or "none"
    table.caption = f"alerts: {alerts}"
    return table


def run_demo(*, host: str, port: int, directory: str, duration: float, speed: float, console: Console) -> int:
    """Write the log and config, run the service on accelerated time, print a live summary."""
    from monitor.app import build_app
    from monitor.clock import AcceleratedClock
    from monitor.config import load_settings

    base = Path(directory).resolve()
    start = datetime.now(UTC).replace(microsecond=0)
    with console.status("writing the synthetic prediction log"):
        log = write_demo_log(base / "predictions.db", start=start)
    config = write_demo_config(base, port=port, host=host)
    settings = load_settings(config)
    clock = AcceleratedClock(start, speed)
    app = build_app(settings, clock=clock)
    # the live table below shows every alert transition; log lines would only scroll it away
    logging.getLogger("fairwatch").setLevel(logging.ERROR)
    app.start()
    assert app.server is not None
    console.print(f"[bold]fairwatch demo[/] - log {log.path}, config {config}")
    console.print(
        f"  metrics  {app.server.url}/metrics\n  results  {app.server.url}/api/v1/results\n"
        f"  home     {app.server.url}/"
    )
    console.print(
        f"  bias against '{BIASED}' starts at simulated {log.bias_start:%H:%M} and ends at "
        f"{log.bias_end:%H:%M}; one real second is {speed / 60:g} simulated minutes"
    )
    seen: dict[tuple[str, str], str] = {}
    t_end = time.monotonic() + duration if duration > 0 else float("inf")
    out = Console()
    try:
        with Live(
            _status_table(app, clock.now()), console=out, refresh_per_second=2, transient=False
        ) as live:
            while time.monotonic() < t_end:
                time.sleep(0.5)
                live.update(_status_table(app, clock.now()))
                current = {(a.labels["metric"], a.labels["window"]): a for a in app.monitor.snapshot().alerts}
                for key, a in current.items():
                    if seen.get(key) != a.state:
                        seen[key] = a.state
                        live.console.print(
                            f"[bold]{clock.now():%H:%M}[/] alert {a.labels['metric']} "
                            f"({a.labels['group']}, {a.labels['window']}) is [red]{a.state}[/]"
                        )
                for key in [k for k, state in seen.items() if state == "firing" and k not in current]:
                    seen[key] = "resolved"
                    live.console.print(
                        f"[bold]{clock.now():%H:%M}[/] alert {key[0]} ({BIASED}, {key[1]}) "
                        "is [green]resolved[/]"
                    )
    except KeyboardInterrupt:
        pass
    finally:
        app.stop()
    fired = sorted({k for k, v in seen.items() if v in ("firing", "resolved")})
    console.print(
        f"demo finished: {len(fired)} alert(s) fired: {', '.join(f'{m} ({w})' for m, w in fired) or 'none'}"
    )
    console.print(f"run it again without acceleration: fairwatch run --config {config}")
    return 0
