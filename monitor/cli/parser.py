"""What the command line accepts: the argparse tree, checked argument types and the help layout.

A bad argument is refused by argparse itself with a one-line ``error:`` naming the option
and the value (exit 2), never a traceback from deep inside the command: every number the
commands take has a type here that states its range. The help formatter shows each
option's default and keeps the examples of a subcommand's epilog as written.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from monitor.core.times import parse_duration
from monitor.core.version import __version__

__all__ = ["HelpFormatter", "build_parser", "duration", "fraction", "number", "port", "when"]


class HelpFormatter(argparse.HelpFormatter):
    """``(default: X)`` after every option that has a meaningful default; examples kept verbatim.

    argparse's ``ArgumentDefaultsHelpFormatter`` also prints ``(default: None)`` and
    ``(default: False)`` for options without one, which says nothing; those are left out.
    A description is filled to the terminal's width; text with line breaks (the examples)
    is kept as written.
    """

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        shown = (
            action.option_strings
            and "%(default)" not in text
            and default is not None
            and default is not False
            and default not in (argparse.SUPPRESS, [])
            and not isinstance(action, argparse._VersionAction | argparse._HelpAction)
        )
        return f"{text} (default: %(default)s)" if shown else text


def number(*, minimum: float, inclusive: bool = True, maximum: float = math.inf) -> Callable[[str], float]:
    """A finite float at least (or above, ``inclusive=False``) ``minimum`` and at most ``maximum``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if value < minimum or (value == minimum and not inclusive):
            bound = f"at least {minimum:g}" if inclusive else f"above {minimum:g}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:g}, got {text}")
        return value

    parse.__name__ = "number"  # argparse names the type in some messages
    return parse


def fraction(text: str) -> float:
    """A number strictly between 0 and 1 (a power, a confidence)."""
    value = number(minimum=0.0, inclusive=False)(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must lie between 0 and 1, got {text}")
    return value


def port(text: str) -> int:
    """A TCP port, 0 (any free port) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port lies between 0 and 65535, got {value}")
    return value


def when(text: str) -> datetime:
    try:
        t = datetime.fromtimestamp(float(text), tz=UTC)
    except (OverflowError, OSError):
        raise argparse.ArgumentTypeError(f"time out of range: {text!r}") from None
    except ValueError:
        try:
            t = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a time: {text!r} (ISO 8601 or epoch seconds)") from None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def duration(text: str) -> timedelta:
    try:
        step = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if step <= timedelta(0):
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return step


def _subcommand(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    summary: str,
    description: str,
    examples: Sequence[str],
) -> argparse.ArgumentParser:
    """A subcommand with its one-line summary (``fairwatch --help``), a description and examples."""
    return sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog="examples:\n" + "\n".join(f"  {e}" for e in examples),
        formatter_class=HelpFormatter,
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fairwatch",
        description="Fairness monitor for deployed models: bias metrics per group from logged predictions, "
        "exported to Prometheus, with alerts when a value leaves its fair range.",
        epilog="examples:\n  fairwatch demo\n  fairwatch validate --config fairwatch.yaml --connect\n"
        "  fairwatch run --config fairwatch.yaml\n\n'fairwatch COMMAND --help' describes each command.",
        formatter_class=HelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"fairwatch {__version__}")
    p.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="log verbosity"
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    config_help = "the YAML config file (docs/configuration.md)"

    run = _subcommand(
        sub,
        "run",
        summary="run the monitoring service",
        description="Evaluate every model on its interval, serve /metrics, /api/v1/results and the live "
        "page, and send alerts. SIGHUP reloads the config, SIGTERM or Ctrl-C stops.",
        examples=["fairwatch run --config fairwatch.yaml"],
    )
    run.add_argument("--config", required=True, help=config_help)
    web_help = (
        "TLS, basic auth, headers and rate limit for the HTTP server, in the Prometheus exporter-toolkit's "
        "format (docs/security.md); overrides server.web_config_file"
    )
    run.add_argument("--web.config.file", dest="web_config_file", metavar="FILE", help=web_help)

    for name, summary, description, example in (
        (
            "evaluate",
            "evaluate once and print",
            "Evaluate every model's windows once, ending now, or one --start/--end range, and print "
            "the judged values (a table, JSON rows as /api/v1/results serves them, or the same rows as "
            "CSV for a spreadsheet).",
            "fairwatch evaluate --config fairwatch.yaml --start 2026-11-01 --end 2026-11-02 --format json",
        ),
        (
            "check",
            "evaluate once; exit 1 on a violation",
            "As evaluate, for CI and cron: exit status 1 when any value is a violation (its whole "
            "interval outside the fair range), 0 otherwise, 2 on a config error.",
            "fairwatch check --config fairwatch.yaml --model toxicity",
        ),
    ):
        e = _subcommand(sub, name, summary=summary, description=description, examples=[example])
        e.add_argument("--config", required=True, help=config_help)
        e.add_argument(
            "--start", type=when, help="window start, ISO 8601 or epoch seconds (default: each window)"
        )
        e.add_argument("--end", type=when, help="window end, exclusive (default: now)")
        e.add_argument("--format", choices=["table", "json", "csv"], default="table", help="output format")
        e.add_argument("--model", action="append", help="only this model, repeatable (default: every model)")
        e.add_argument("--all", action="store_true", help="table: show informational values too")
        e.add_argument("--report", metavar="FILE", help="also write this evaluation as an HTML report")

    rp = _subcommand(
        sub,
        "report",
        summary="write one self-contained HTML report (tables, charts, config, power)",
        description="Evaluate each model at the end of the period (and, with --start, every --step "
        "before it) and write one HTML file - the live view's tables and charts, the config summary "
        "and the power figures - for audits, e-mail and CI artifacts. It needs no script or network "
        "to open.",
        examples=[
            "fairwatch report --config fairwatch.yaml -o report.html",
            "fairwatch report --config fairwatch.yaml --start 2026-11-01T00:00:00Z "
            "--end 2026-11-02T00:00:00Z --step 1h -o report.html",
            "fairwatch report --config fairwatch.yaml --start 2026-11-01T00:00:00Z --format csv -o values.csv",
        ],
    )
    rp.add_argument("--config", required=True, help=config_help)
    rp.add_argument(
        "--start",
        type=when,
        help="the period's start: evaluations every --step after it (default: one)",
    )
    rp.add_argument("--end", type=when, help="the last evaluation's time (default: now)")
    rp.add_argument(
        "--step", type=duration, help="between evaluations, e.g. 1h (default: a 24th of the period)"
    )
    rp.add_argument("--model", action="append", help="only this model, repeatable (default: every model)")
    rp.add_argument("--title", help="the report's title (default: the models' names)")
    rp.add_argument("--output", "-o", default="fairwatch-report.html", help="file to write")
    rp.add_argument(
        "--format",
        choices=["html", "csv"],
        default="html",
        help="html: the report; csv: every judged value of every evaluation, one row each (as evaluate --format csv)",
    )

    v = _subcommand(
        sub,
        "validate",
        summary="validate a config file",
        description="Check a config file: YAML, every key and value, durations, metric names. "
        "With --connect, also open each source and check that its tables (or files) and the "
        "configured columns exist.",
        examples=[
            "fairwatch validate --config fairwatch.yaml",
            "fairwatch validate --config fairwatch.yaml --connect",
        ],
    )
    v.add_argument("--config", required=True, help=config_help)
    v.add_argument(
        "--connect", action="store_true", help="also connect to each source and check its tables and columns"
    )

    d = _subcommand(
        sub,
        "demo",
        summary="run a live demo on a synthetic drifting prediction log",
        description="Write a synthetic toxicity-model log that drifts into bias against one group and "
        "back, run the service on it with time accelerated, and print a live table of the metrics "
        "and alerts. The story repeats every 12 simulated hours; Ctrl-C stops.",
        examples=["fairwatch demo", "fairwatch demo --port 9900 --speed 1200 --duration 120"],
    )
    d.add_argument("--port", type=port, default=9810, help="HTTP port (0: any free port)")
    d.add_argument("--host", default="127.0.0.1", help="HTTP address to listen on")
    d.add_argument("--web.config.file", dest="web_config_file", metavar="FILE", help=web_help)
    d.add_argument("--dir", default="fairwatch-demo", help="where the demo writes its log and config")
    d.add_argument(
        "--duration", type=number(minimum=0), default=0, help="seconds to run; 0 runs until Ctrl-C"
    )
    d.add_argument(
        "--speed",
        # faster, the evaluations only skip ticks, and the simulated clock soon runs past datetime's year 9999
        type=number(minimum=0, inclusive=False, maximum=86400),
        default=600,
        help="simulated seconds per real second, at most 86400 (a day)",
    )

    r = _subcommand(
        sub,
        "rules",
        summary="write Prometheus alerting rules generated from the metric registry",
        description="Write the Prometheus rule file: one alerting rule per judged metric, with the "
        "registry's fair ranges or a config's overrides and alert settings.",
        examples=["fairwatch rules -o rules.yml", "fairwatch rules --config fairwatch.yaml -o rules.yml"],
    )
    r.add_argument("--config", help="use this config's fair-range overrides and alert settings")
    r.add_argument("--output", "-o", help="file to write (default: stdout)")

    g = _subcommand(
        sub,
        "dashboard",
        summary="write the Grafana dashboard, or with --config one per model",
        description="Without --config: the shipped dashboard (binary and ranking metrics). With --config: "
        "one dashboard per model, holding exactly the metrics it computes, written as "
        "fairwatch-<model>.json into the --output directory (stdout for a config of one model).",
        examples=[
            "fairwatch dashboard -o dashboard.json",
            "fairwatch dashboard --config fairwatch.yaml -o dashboards/",
        ],
    )
    g.add_argument("--config", help="one dashboard per model of this config")
    g.add_argument("--output", "-o", help="file to write, with --config a directory (default: stdout)")

    w = _subcommand(
        sub,
        "power",
        summary="how many rows and days each alert needs to detect a departure from its fair range",
        description="From one evaluation at the observed traffic: per model, group and metric, the rows "
        "(and days) needed to detect a stated departure with the chosen power, and the smallest "
        "departure each configured window detects.",
        examples=["fairwatch power --config fairwatch.yaml --effect disparate_impact=0.7"],
    )
    w.add_argument("--config", required=True, help=config_help)
    w.add_argument("--model", action="append", help="only this model, repeatable (default: every model)")
    w.add_argument(
        "--effect",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="the true value to detect, repeatable (default: half the fair range's width beyond its bound)",
    )
    w.add_argument("--power", type=fraction, default=0.9, help="the chance of detection to plan for")
    w.add_argument("--at", type=when, help="plan from the windows ending at this time (default: now)")
    w.add_argument("--format", choices=["table", "json"], default="table", help="output format")

    b = _subcommand(
        sub,
        "backfill",
        summary="evaluate history and write it as OpenMetrics for promtool tsdb create-blocks-from",
        description="Evaluate every model at each step from --start to --end (inclusive), as the "
        "service would have then, and write the same series as /metrics with timestamps, for "
        "`promtool tsdb create-blocks-from openmetrics FILE DATA_DIR`.",
        examples=[
            "fairwatch backfill --config fairwatch.yaml --start 2026-01-01 --end 2026-03-01 --step 1h "
            "--label job=fairwatch --output history.om"
        ],
    )
    b.add_argument("--config", required=True, help=config_help)
    b.add_argument("--start", type=when, required=True, help="first instant (ISO 8601 or epoch seconds)")
    b.add_argument("--end", type=when, required=True, help="last instant, included if on a step")
    b.add_argument("--step", default="1h", help="time between evaluations (90s, 15m, 1h, 1d)")
    b.add_argument("--output", "-o", help="file to write (default: stdout)")
    b.add_argument("--model", action="append", help="only this model, repeatable (default: every model)")
    b.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="add a label to every series, repeatable: the job and instance your Prometheus gives the "
        "live service, so that history and live values are one series",
    )

    m = _subcommand(
        sub,
        "metrics",
        summary="print the metric registry",
        description="Print every metric fairwatch computes: its family, ideal value, default fair range, "
        "interval method and meaning (docs/metrics.md is this command's markdown).",
        examples=["fairwatch metrics", "fairwatch metrics --format json"],
    )
    m.add_argument("--format", choices=["table", "json", "markdown"], default="table", help="output format")
    return p
