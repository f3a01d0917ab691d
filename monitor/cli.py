"""``fairwatch``: the command line.

fairwatch run       --config F                 the service
fairwatch evaluate  --config F [--start T --end T] [--format table|json]
fairwatch check     --config F [...]           as evaluate; exit 1 on any violation
fairwatch report    --config F [--start T --end T --step D] -o report.html   one HTML file
fairwatch validate  --config F                 check a config and exit
fairwatch demo      [--port N]                 a drifting toxicity model, live, in a minute
fairwatch metrics   [--format table|json|markdown]
fairwatch backfill  --config F --start T --end T [--step 1h] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from monitor import __version__
from monitor.errors import ConfigError, FairwatchError
from monitor.secrets import SecretFilter, mask

if TYPE_CHECKING:
    from monitor.config import Settings
    from monitor.results import ModelEvaluation

__all__ = ["main"]

_STATE_STYLE = {"ok": "green", "inconclusive": "yellow", "violation": "bold red", "insufficient_data": "dim"}


def _parse_time(text: str) -> datetime:
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


def _parse_step(text: str) -> timedelta:
    from monitor.config.schema import parse_duration

    try:
        step = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if step <= timedelta(0):
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return step


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fairwatch", description="Fairness monitor for deployed models.")
    p.add_argument("--version", action="version", version=f"fairwatch {__version__}")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the monitoring service")
    run.add_argument("--config", required=True)

    for name, text in (
        ("evaluate", "evaluate once and print"),
        ("check", "evaluate once; exit 1 on a violation"),
    ):
        e = sub.add_parser(name, help=text)
        e.add_argument("--config", required=True)
        e.add_argument("--start", type=_parse_time, help="window start (ISO 8601 or epoch seconds)")
        e.add_argument("--end", type=_parse_time, help="window end, exclusive (default: now)")
        e.add_argument("--format", choices=["table", "json"], default="table")
        e.add_argument("--model", action="append", help="only this model (repeatable)")
        e.add_argument("--all", action="store_true", help="table: show every value, not only judged ones")
        e.add_argument("--report", metavar="FILE", help="also write this evaluation as an HTML report")

    rp = sub.add_parser(
        "report",
        help="write one self-contained HTML report (tables, charts, config, power)",
        description="Evaluate each model at the end of the period (and, with --start, every --step before "
        "it) and write one HTML file - the live view's tables and charts, the config summary and the "
        "power figures - for audits, e-mail and CI artifacts. Example: fairwatch report --config "
        "fairwatch.yaml --start 2026-11-01T00:00:00Z --end 2026-11-02T00:00:00Z --step 1h -o report.html",
    )
    rp.add_argument("--config", required=True)
    rp.add_argument("--start", type=_parse_time, help="first evaluation's end is one --step after this")
    rp.add_argument("--end", type=_parse_time, help="the last evaluation's time (default: now)")
    rp.add_argument(
        "--step", type=_parse_step, help="between evaluations, e.g. 1h (default: a 24th of the period)"
    )
    rp.add_argument("--model", action="append", help="only this model (repeatable)")
    rp.add_argument("--title", help="the report's title (default: the models' names)")
    rp.add_argument(
        "--output", "-o", default="fairwatch-report.html", help="file to write (default: %(default)s)"
    )

    v = sub.add_parser("validate", help="validate a config file")
    v.add_argument("--config", required=True)

    d = sub.add_parser("demo", help="run a live demo on a synthetic drifting prediction log")
    d.add_argument("--port", type=int, default=9810)
    d.add_argument("--host", default="127.0.0.1")
    d.add_argument("--dir", default="fairwatch-demo", help="where the demo writes its log and config")
    d.add_argument("--duration", type=float, default=60.0, help="seconds to run (0: until Ctrl-C)")
    d.add_argument("--speed", type=float, default=600.0, help="simulated seconds per real second")

    r = sub.add_parser("rules", help="write Prometheus alerting rules generated from the metric registry")
    r.add_argument("--config", help="use this config's fair-range overrides and alert settings")
    r.add_argument("--output", "-o", help="file to write (default: stdout)")

    g = sub.add_parser(
        "dashboard",
        help="write the Grafana dashboard, or with --config one per model",
        description="Without --config: the shipped dashboard (binary and ranking metrics). With --config: "
        "one dashboard per model, holding exactly the metrics it computes, written as "
        "fairwatch-<model>.json into the --output directory (stdout for a config of one model). "
        "Example: fairwatch dashboard --config fairwatch.yaml -o dashboards/",
    )
    g.add_argument("--config", help="one dashboard per model of this config")
    g.add_argument("--output", "-o", help="file to write, with --config a directory (default: stdout)")

    w = sub.add_parser(
        "power",
        help="how many rows and days each alert needs to detect a departure from its fair range",
        description="From one evaluation at the observed traffic: per model, group and metric, the rows "
        "(and days) needed to detect a stated departure with the chosen power, and the smallest "
        "departure each configured window detects. Example: fairwatch power --config fairwatch.yaml "
        "--effect disparate_impact=0.7",
    )
    w.add_argument("--config", required=True)
    w.add_argument("--model", action="append", help="only this model (repeatable)")
    w.add_argument(
        "--effect",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="the true value to detect (default: half the fair range's width beyond its bound)",
    )
    w.add_argument(
        "--power", type=float, default=0.9, help="the chance of detection to plan for (default 0.9)"
    )
    w.add_argument("--at", type=_parse_time, help="plan from the windows ending at this time (default: now)")
    w.add_argument("--format", choices=["table", "json"], default="table")

    b = sub.add_parser(
        "backfill",
        help="evaluate history and write it as OpenMetrics for promtool tsdb create-blocks-from",
        description="Evaluates every model at each step from --start to --end (inclusive), as the "
        "service would have then, and writes the same series as /metrics with timestamps, for "
        "`promtool tsdb create-blocks-from openmetrics FILE DATA_DIR`. Example: fairwatch backfill "
        "--config fairwatch.yaml --start 2026-01-01 --end 2026-03-01 --step 1h --label job=fairwatch "
        "--output history.om",
    )
    b.add_argument("--config", required=True)
    b.add_argument(
        "--start", type=_parse_time, required=True, help="first instant (ISO 8601 or epoch seconds)"
    )
    b.add_argument("--end", type=_parse_time, required=True, help="last instant, included if on a step")
    b.add_argument("--step", default="1h", help="time between evaluations (default 1h; 90s, 15m, 1d)")
    b.add_argument("--output", "-o", help="file to write (default: stdout)")
    b.add_argument("--model", action="append", help="only this model (repeatable)")
    b.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="add a label to every series (repeatable): the job and instance your Prometheus gives the "
        "live service, so that history and live values are one series",
    )

    m = sub.add_parser("metrics", help="print the metric registry")
    m.add_argument("--format", choices=["table", "json", "markdown"], default="table")
    return p


# Masks URL credentials in every log line; the secrets of the loaded config are added to it.
_SECRETS = SecretFilter()


def _load_settings(path: str) -> Settings:
    from monitor.config import load_settings

    settings = load_settings(path)
    _SECRETS.add(settings.secrets())
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for log_handler in logging.getLogger().handlers:
        if _SECRETS not in log_handler.filters:
            log_handler.addFilter(_SECRETS)
    # APScheduler logs every job run at INFO: that is our evaluation loop, not news
    logging.getLogger("apscheduler").setLevel(max(logging.WARNING, getattr(logging, args.log_level)))
    console = Console(stderr=True)
    try:
        handler = _COMMANDS[args.command]
        return handler(args, console)
    except ConfigError as exc:
        console.print(
            f"[bold red]config error:[/] {escape(mask(str(exc), _SECRETS.secrets))}", highlight=False
        )
        return 2
    except FairwatchError as exc:
        console.print(f"[bold red]error:[/] {escape(mask(str(exc), _SECRETS.secrets))}", highlight=False)
        return 1


def _cmd_validate(args: argparse.Namespace, console: Console) -> int:

    settings = _load_settings(args.config)
    windows = sum(len(m.windows) for m in settings.models)
    console.print(f"[green]ok[/]: {args.config}: {len(settings.models)} model(s), {windows} window(s)")
    return 0


def _cmd_run(args: argparse.Namespace, console: Console) -> int:
    from monitor.app import run_forever

    run_forever(lambda: _load_settings(args.config))
    return 0


def _evaluate(
    args: argparse.Namespace,
    console: Console,
    *,
    settings: Settings | None = None,
    now: datetime | None = None,
) -> list[ModelEvaluation]:
    from monitor.evaluation import build_evaluators

    settings = settings or _load_settings(args.config)
    if args.end is not None and args.start is None:
        raise ConfigError("--end needs --start")
    if args.start is not None and args.end is None:
        args.end = datetime.now(UTC)
    status = console.status("evaluating", spinner="dots")
    evaluations = []
    unknown = sorted(set(args.model or ()) - {m.name for m in settings.models})
    if unknown:  # a typo must not turn `fairwatch check` into a passing gate
        raise ConfigError(f"--model: no model named {', '.join(unknown)} in {args.config}")
    if args.start is not None and args.end is not None and args.start >= args.end:
        raise ConfigError(f"--start {args.start.isoformat()} must be before --end {args.end.isoformat()}")
    with status:
        evaluators = build_evaluators(settings, progress=lambda msg: status.update(msg))
        for name, ev in evaluators.items():
            if args.model and name not in args.model:
                continue
            try:
                evaluations.append(ev.evaluate(now or datetime.now(UTC), start=args.start, end=args.end))
            finally:
                ev.source.close()
    return evaluations


def _cmd_evaluate(args: argparse.Namespace, console: Console) -> int:
    from monitor.serialize import evaluation_rows

    evaluations = _evaluate(args, console)
    rows = evaluation_rows(evaluations)
    if args.format == "json":
        json.dump(rows, sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        _print_table(evaluations, Console(), show_all=args.all)
    if args.report:
        from monitor.report import build_report

        report = build_report(
            _load_settings(args.config),
            at=(),
            models=[ev.model for ev in evaluations],
            evaluations={ev.model: [ev] for ev in evaluations},
        )
        console.print(f"wrote {report.write(args.report)}", soft_wrap=True, highlight=False)
    if args.command == "check":
        violations = [r for r in rows if r["state"] == "violation"]
        if violations:
            console.print(f"[bold red]{len(violations)} violation(s)[/]")
            return 1
        console.print("[green]no violations[/]")
    return 0


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "NaN"
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    return f"{x:.{digits}f}"


def _print_table(evaluations: Sequence[ModelEvaluation], console: Console, *, show_all: bool = False) -> None:
    for ev in evaluations:
        for w in ev.windows:
            title = (
                f"{ev.model} - window {w.window} [{w.start:%Y-%m-%d %H:%M}, {w.end:%Y-%m-%d %H:%M}) - "
                f"{w.n_rows:,} rows, label coverage {_fmt(w.label_coverage * 100, 1)}%"
            )
            table = Table(title=title, title_justify="left", header_style="bold")
            for col in ("attribute", "group", "metric", "value", "95% interval", "fair range", "state", "n"):
                table.add_column(col, justify="right" if col in ("value", "n") else "left")
            for v in sorted(w.values, key=lambda v: (v.attribute, v.group, v.metric)):
                informational = math.isinf(v.fair_min) and math.isinf(v.fair_max)
                if informational and not show_all:
                    continue
                style = _STATE_STYLE.get(v.state, "")
                interval = f"[{_fmt(v.ci_lower)}, {_fmt(v.ci_upper)}]"
                fair = f"[{_fmt(v.fair_min)}, {_fmt(v.fair_max)}]"
                state = v.state if v.reason is None else f"{v.state} ({v.reason})"
                table.add_row(
                    v.attribute,
                    v.group,
                    v.metric,
                    _fmt(v.value),
                    interval,
                    fair,
                    f"[{style}]{state}[/]",
                    f"{int(v.n_group):,}",
                )
            console.print(table)
            if w.model_values:
                summary = ", ".join(
                    f"{m.metric}{'[' + m.attribute + ']' if m.attribute else ''}={_fmt(m.value)}"
                    for m in w.model_values
                )
                console.print(f"  model level: {summary}", highlight=False)
        if ev.rejected:
            console.print(f"  rejected rows: {dict(ev.rejected)}", highlight=False)


def _cmd_demo(args: argparse.Namespace, console: Console) -> int:
    from monitor.demo import run_demo

    return run_demo(
        host=args.host,
        port=args.port,
        directory=args.dir,
        duration=args.duration,
        speed=args.speed,
        console=console,
    )


def _cmd_metrics(args: argparse.Namespace, console: Console) -> int:
    from metrics_core import REGISTRY, registry_as_dicts
    from monitor.reference import render_metrics_reference

    if args.format == "json":
        json.dump(registry_as_dicts(), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    if args.format == "markdown":
        sys.stdout.write(render_metrics_reference())
        return 0
    table = Table(title="fairwatch metrics", header_style="bold")
    for col in ("metric", "family", "ideal", "fair range", "interval", "meaning"):
        table.add_column(col)
    for m in REGISTRY.values():
        fair = "informational" if m.fair_range is None else m.fair_range.describe()
        table.add_row(
            m.name, m.family, "" if m.ideal is None else f"{m.ideal:g}", fair, m.interval, m.meaning
        )
    Console().print(table)
    return 0


def _write(text: str, output: str | None) -> None:
    if output is None:
        sys.stdout.write(text)
    else:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)


def _cmd_rules(args: argparse.Namespace, console: Console) -> int:
    from monitor.rules import render_rules

    settings = _load_settings(args.config) if args.config else None
    _write(render_rules(settings), args.output)
    return 0


def _cmd_dashboard(args: argparse.Namespace, console: Console) -> int:
    from monitor.dashboard import dashboard_json, render_dashboard, write_dashboards

    if not args.config:
        _write(dashboard_json(render_dashboard()), args.output)
        return 0
    for path in write_dashboards(_load_settings(args.config), args.output):
        console.print(f"wrote {path}", highlight=False)
    return 0


def _cmd_power(args: argparse.Namespace, console: Console) -> int:
    from monitor.planning import parse_effects, plan_model, plans_as_rows, print_plans, with_planning_rates

    if not 0 < args.power < 1:
        raise ConfigError(f"--power must lie between 0 and 1, got {args.power}")
    departures = parse_effects(args.effect)
    settings = _load_settings(args.config)
    args.start = args.end = None
    plans = []
    for evaluation in _evaluate(args, console, settings=with_planning_rates(settings), now=args.at):
        model = next(m for m in settings.models if m.name == evaluation.model)
        plans += plan_model(
            evaluation,
            model,
            departures=departures,
            confidence=settings.alerts.confidence,
            method=settings.alerts.method,
            power=args.power,
        )
    if args.format == "json":
        json.dump(plans_as_rows(plans), sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        # piped: wide enough that names are never cut (a terminal keeps its own width)
        print_plans(plans, Console(width=None if sys.stdout.isatty() else 200), power=args.power)
    return 0


def _cmd_report(args: argparse.Namespace, console: Console) -> int:
    from monitor.report import build_report, instants

    settings = _load_settings(args.config)
    if unknown := sorted(set(args.model or ()) - {m.name for m in settings.models}):
        raise ConfigError(f"--model: no model named {', '.join(unknown)} in {args.config}")
    end = args.end or datetime.now(UTC)
    if args.start is not None and args.start >= end:
        raise ConfigError(f"--start {args.start.isoformat()} must be before --end {end.isoformat()}")
    try:
        at = instants(args.start, end, args.step)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    with console.status("evaluating", spinner="dots") as status:
        report = build_report(
            settings, at=at, models=args.model, title=args.title, progress=lambda m: status.update(m)
        )
    path = report.write(args.output)
    done = sum(len(e) for e in report.evaluations.values())
    console.print(
        f"wrote {path}: {done} evaluation(s) of {len(report.evaluations)} model(s)",
        soft_wrap=True,
        highlight=False,
    )
    return 0


def _cmd_backfill(args: argparse.Namespace, console: Console) -> int:
    from pathlib import Path

    from monitor.backfill import parse_labels, run_backfill
    from monitor.config import parse_duration

    try:
        step = parse_duration(args.step)
    except ValueError as exc:
        raise ConfigError(f"--step: {exc}") from None
    labels = parse_labels(args.label)
    result = run_backfill(
        _load_settings(args.config),
        start=args.start,
        end=args.end,
        step=step,
        output=Path(args.output) if args.output else None,
        models=args.model,
        labels=labels,
        console=console,
    )
    console.print(
        f"[green]backfilled[/] {result.evaluations:,} evaluation(s) at {result.instants:,} instant(s): "
        f"{result.series:,} series, {result.points:,} points" + (f" -> {args.output}" if args.output else ""),
        highlight=False,
    )
    return 0


_COMMANDS = {
    "run": _cmd_run,
    "evaluate": _cmd_evaluate,
    "check": _cmd_evaluate,
    "validate": _cmd_validate,
    "demo": _cmd_demo,
    "metrics": _cmd_metrics,
    "rules": _cmd_rules,
    "dashboard": _cmd_dashboard,
    "power": _cmd_power,
    "report": _cmd_report,
    "backfill": _cmd_backfill,
}

if __name__ == "__main__":
    raise SystemExit(main())
