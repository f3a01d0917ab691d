"""``fairwatch demo``: a toxicity model drifting into bias, monitored live until Ctrl-C.

The demo writes a synthetic Jigsaw-style prediction log to a SQLite file
(:mod:`monitor.cli.demo.log`): an hour after the start the model begins to score non-toxic
comments that mention one identity (``muslim``) as more toxic - the failure mode of Borkan
et al. - five hours later the bias is fixed, and the story repeats every 12 hours. The
service runs on that log with time accelerated (default: 10 simulated minutes per real
second) while the log keeps growing ahead of the clock, so a user sees the metrics on
``/metrics``, the alert go pending, fire, and resolve, again and again.

The demo evaluates at its own pace (:class:`~monitor.cli.demo.pacer.Pacer`), and its log lines and
library warnings go to ``demo.log`` beside the config: the terminal shows only the live
table, whose footer counts skipped ticks and warnings.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from monitor.cli.demo.log import BIASED, IDENTITIES, PREVALENCE, DemoLog, GrowingLog, write_demo_log
from monitor.cli.demo.pacer import Pacer
from monitor.cli.terminal import name_column, print_table, stdout_console, text_column
from monitor.core.errors import FairwatchError
from monitor.core.text import state_text

if TYPE_CHECKING:
    from monitor.app import App
    from monitor.core.clock import Clock

__all__ = [
    "BIASED",
    "IDENTITIES",
    "PREVALENCE",
    "STORY",
    "DemoLog",
    "run_demo",
    "write_demo_config",
    "write_demo_log",
]

#: The story's length: fair for an hour, biased for five, fair again, then from the start.
STORY = timedelta(hours=12)
# rows are written this far ahead of the simulated clock, and kept this long behind it: the 3h
# window, the 30m label delay and an hour's sealed pane fit in it
_LEAD = timedelta(hours=2)
_KEEP = timedelta(hours=6)
_SHOWN = ("bpsn_auc", "negative_aeg", "statistical_parity_difference", "multiclass_statistical_parity")


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


class _WarningCount(logging.Handler):
    """Counts what the terminal would have shown: warnings and errors, save fairwatch's own alert
    notices (the table shows those)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.name != "fairwatch" or record.levelno >= logging.ERROR:
            self.count += 1


@contextmanager
def _logging_to(path: Path) -> Iterator[_WarningCount]:
    """Send every log record and Python warning to ``path`` instead of the terminal; count warnings."""
    root = logging.getLogger()
    kept = (root.handlers[:], root.level)
    counter = _WarningCount()
    to_file = logging.FileHandler(path, encoding="utf-8")
    to_file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.handlers[:] = [to_file, counter]
    root.setLevel(min(root.level, logging.INFO) if root.level else logging.INFO)
    logging.captureWarnings(True)
    try:
        yield counter
    finally:
        logging.captureWarnings(False)
        root.handlers[:], _ = kept
        root.setLevel(kept[1])
        to_file.close()


def _fmt(x: float) -> str:
    return "NaN" if x != x else f"{x:.3f}"


def _status_table(app: App, now: datetime, *, footer: str) -> Table:
    snap = app.runner.snapshot()
    min_samples = {m.name: m.min_samples for m in app.settings.models}
    table = Table(
        title=f"fairwatch demo - simulated time {now:%Y-%m-%d %H:%M} UTC",
        title_justify="left",
        caption_justify="left",
    )
    for col in ("model", "window", "group", "metric"):
        name_column(table, col)
    for col in ("value", "fair range", "state"):
        text_column(table, col)
    for status in snap.models.values():
        ev = status.last_evaluation
        if ev is None:
            continue
        for w in ev.windows:
            for v in w.values:
                if v.group != BIASED or v.metric not in _SHOWN:
                    continue
                style = {"violation": "bold red", "inconclusive": "yellow", "ok": "green"}.get(v.state, "dim")
                fair = f"[{_fmt(v.fair_min)}, {_fmt(v.fair_max)}]"
                state = escape(state_text(v, min_samples[ev.model]))
                table.add_row(
                    ev.model, w.window, v.group, v.metric, _fmt(v.value), fair, f"[{style}]{state}[/]"
                )
    states = Counter(a.state for a in snap.alerts)
    alerts = ", ".join(f"{n} {state}" for state, n in sorted(states.items())) or "none"
    table.caption = f"alerts: {alerts}\n{footer}"
    return table


def run_demo(
    *,
    host: str,
    port: int,
    directory: str,
    duration: float,
    speed: float,
    console: Console,
    web_config_file: str | None = None,
) -> int:
    """Write the log and config, run the service on accelerated time until ``duration`` real seconds
    have passed (0: until Ctrl-C), print a live summary."""
    from monitor.app import build_app
    from monitor.config import load_settings, with_web_config
    from monitor.core.clock import AcceleratedClock

    _check_port(host, port)
    base = Path(directory).resolve()
    start = datetime.now(UTC).replace(microsecond=0)
    with console.status("writing the synthetic prediction log"):
        log = write_demo_log(base / "predictions.db", start=start, future=_LEAD, repeat=STORY)
    growing = GrowingLog(log, lead=_LEAD, keep=_KEEP)
    config = write_demo_config(base, port=port, host=host)
    settings = with_web_config(load_settings(config), web_config_file)
    clock = AcceleratedClock(start, speed)
    app = build_app(settings, clock=clock)
    pacer = Pacer(
        app.runner.run_model,
        {m.name: m.interval.total_seconds() for m in settings.models},
        before=lambda: growing.advance(clock.now()),  # between evaluations: see GrowingLog
    )
    log_file = base / "demo.log"
    with _logging_to(log_file) as warnings:
        app.start(schedule=False)
        assert app.server is not None
        pacer.start()
        console.print(f"[bold]fairwatch demo[/] - log {log.path}, config {config}", soft_wrap=True)
        console.print(
            f"  live view  {app.server.url}/  (values, charts, alerts; open it in a browser)\n"
            f"  metrics    {app.server.url}/metrics\n  results    {app.server.url}/api/v1/results",
            soft_wrap=True,
        )
        console.print(
            f"  bias against '{BIASED}' from simulated {log.bias_start:%H:%M} to {log.bias_end:%H:%M}, again "
            f"every {STORY.total_seconds() / 3600:g} hours; one real second is {speed / 60:g} simulated "
            f"minutes; {'Ctrl-C stops' if duration == 0 else f'stops after {duration:g} s'}",
            soft_wrap=True,
        )

        def footer() -> str:
            noted = f" ({warnings.count} warning(s) or error(s))" if warnings.count else ""
            return f"{pacer.summary()}\nlog: {log_file}{noted}"

        fired: set[tuple[str, str]] = set()
        try:
            with _terminated_as_interrupt():
                _watch(app, clock, fired, footer=footer, duration=duration)
        except KeyboardInterrupt:
            pass
        finally:
            pacer.stop()
            app.stop()
    names = ", ".join(f"{m} ({w})" for m, w in sorted(fired)) or "none"
    console.print(f"demo finished: {len(fired)} alert(s) fired: {names}", soft_wrap=True)
    console.print(f"  {footer()}", soft_wrap=True, highlight=False)
    console.print(f"run it again without acceleration: fairwatch run --config {config}", soft_wrap=True)
    return 0


@contextmanager
def _terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM (``docker stop``, ``kill``) ends the demo as Ctrl-C does: the service stopped, the
    summary printed, exit status 0 - not killed in the middle of a write."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _check_port(host: str, port: int) -> None:
    """A busy port or a bad host is said before the log is written, in one line."""
    try:
        # the name first: create_server's bind folds a failed lookup into an OSError of errno -2,
        # which os.strerror calls 'Unknown error -2'
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        # a busy or privileged port, or a --host that is no address of this machine
        why = os.strerror(exc.errno) if exc.errno and exc.errno > 0 else exc.strerror or str(exc)
        why = why.split(" (while attempting to bind", 1)[0]  # create_server's addition: said below
        hint = "choose another --port" if exc.errno in (errno.EADDRINUSE, errno.EACCES) else "check --host"
        raise FairwatchError(f"cannot serve on {host}:{port}: {why} ({hint})") from exc


def _watch(
    app: App,
    clock: Clock,
    fired: set[tuple[str, str]],
    *,
    footer: Callable[[], str],
    duration: float,
) -> None:
    """Show the table until ``duration`` (0: forever): live in a terminal, and
    into a pipe once per simulated hour, with a line for every alert's change."""
    out = stdout_console()
    seen: dict[tuple[str, str], str] = {}
    t_end = time.monotonic() + duration if duration > 0 else float("inf")
    live = Live(console=out, refresh_per_second=2, transient=False) if out.is_terminal else None
    printed_hour = None
    if live is not None:
        live.start()
    try:
        while time.monotonic() < t_end:
            now = clock.now()
            table = _status_table(app, now, footer=footer())
            if live is not None:
                live.update(table)
            elif now.replace(minute=0, second=0, microsecond=0) != printed_hour:
                printed_hour = now.replace(minute=0, second=0, microsecond=0)
                print_table(out, table)
            for line in _alert_changes(app, now, seen, fired):
                (live.console if live is not None else out).print(line, highlight=False, soft_wrap=True)
            time.sleep(0.5)
        if live is None:
            print_table(out, _status_table(app, clock.now(), footer=footer()))
    finally:
        if live is not None:
            live.stop()


def _alert_changes(
    app: App, now: datetime, seen: dict[tuple[str, str], str], fired: set[tuple[str, str]]
) -> list[str]:
    """A line for each alert that changed state since the last call."""
    lines = []
    current = {(a.labels["metric"], a.labels["window"]): a for a in app.runner.snapshot().alerts}
    for key, a in current.items():
        if seen.get(key) != a.state:
            seen[key] = a.state
            if a.state == "firing":
                fired.add(key)
            lines.append(
                f"[bold]{now:%H:%M}[/] alert {a.labels['metric']} ({a.labels['group']}, {a.labels['window']}) "
                f"is [red]{a.state}[/]"
            )
    for key in [k for k, state in seen.items() if state != "resolved" and k not in current]:
        was = seen[key]
        seen[key] = "resolved"
        if was == "firing":
            lines.append(f"[bold]{now:%H:%M}[/] alert {key[0]} ({BIASED}, {key[1]}) is [green]resolved[/]")
    return lines
