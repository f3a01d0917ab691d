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
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from monitor import __version__
from monitor.cli.arguments import HelpFormatter, fraction, number, port
from monitor.cli.tables import (
    name_column,
    print_table,
    state_text,
    stdout_closed,
    stdout_console,
    text_column,
)
from monitor.core.errors import ConfigError, FairwatchError
from monitor.core.secrets import SecretFilter, mask
from monitor.core.suggest import did_you_mean

if TYPE_CHECKING:
    from monitor.config import Settings
    from monitor.evaluation.results import ModelEvaluation

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


def _parser() -> argparse.ArgumentParser:
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

    for name, summary, description, example in (
        (
            "evaluate",
            "evaluate once and print",
            "Evaluate every model's windows once, ending now, or one --start/--end range, and print "
            "the judged values (a table, or JSON rows as /api/v1/results serves them).",
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
            "--start", type=_parse_time, help="window start, ISO 8601 or epoch seconds (default: each window)"
        )
        e.add_argument("--end", type=_parse_time, help="window end, exclusive (default: now)")
        e.add_argument("--format", choices=["table", "json"], default="table", help="output format")
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
        ],
    )
    rp.add_argument("--config", required=True, help=config_help)
    rp.add_argument(
        "--start",
        type=_parse_time,
        help="the period's start: evaluations every --step after it (default: one)",
    )
    rp.add_argument("--end", type=_parse_time, help="the last evaluation's time (default: now)")
    rp.add_argument(
        "--step", type=_parse_step, help="between evaluations, e.g. 1h (default: a 24th of the period)"
    )
    rp.add_argument("--model", action="append", help="only this model, repeatable (default: every model)")
    rp.add_argument("--title", help="the report's title (default: the models' names)")
    rp.add_argument("--output", "-o", default="fairwatch-report.html", help="file to write")

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
    w.add_argument("--at", type=_parse_time, help="plan from the windows ending at this time (default: now)")
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
    b.add_argument(
        "--start", type=_parse_time, required=True, help="first instant (ISO 8601 or epoch seconds)"
    )
    b.add_argument("--end", type=_parse_time, required=True, help="last instant, included if on a step")
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


# Masks URL credentials in every log line; the secrets of the loaded config are added to it.
_SECRETS = SecretFilter()


def _load_settings(path: str) -> Settings:
    from monitor.config import load_settings

    settings = load_settings(path)
    _SECRETS.add(settings.secrets())
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a bad argument argparse has explained
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:  # `fairwatch --help | head -1`
        return stdout_closed()
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
        status = handler(args, console)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return status
    except ConfigError as exc:
        console.print(
            f"[bold red]config error:[/] {escape(mask(str(exc), _SECRETS.secrets))}",
            highlight=False,
            soft_wrap=True,  # a path or key cut across lines is hard to copy
        )
        return 2
    except FairwatchError as exc:
        console.print(
            f"[bold red]error:[/] {escape(mask(str(exc), _SECRETS.secrets))}", highlight=False, soft_wrap=True
        )
        return 1
    except BrokenPipeError:  # `fairwatch metrics | head`: the reader has all it wanted
        return stdout_closed()
    except OSError as exc:  # a file to write, a port to bind, a directory to create
        where = f": {exc.filename}" if exc.filename else ""
        console.print(
            f"[bold red]error:[/] {escape(exc.strerror or str(exc))}{escape(where)}",
            highlight=False,
            soft_wrap=True,
        )
        return 1


def _cmd_validate(args: argparse.Namespace, console: Console) -> int:

    settings = _load_settings(args.config)
    windows = sum(len(m.windows) for m in settings.models)
    console.print(f"[green]ok[/]: {args.config}: {len(settings.models)} model(s), {windows} window(s)")
    if not args.connect:
        return 0
    from monitor.cli.preflight import check_sources

    status = 0
    for check in check_sources(settings):
        if check.skipped:
            console.print(f"[yellow]not checked[/]: {check.where}: {escape(check.skipped)}", soft_wrap=True)
        elif check.problems:
            status = 1
            for problem in check.problems:
                console.print(
                    f"[bold red]error[/]: {escape(mask(problem, _SECRETS.secrets))}", soft_wrap=True
                )
        else:
            what = escape(mask(check.what, _SECRETS.secrets))
            console.print(
                f"[green]ok[/]: {check.where}: {what}, {len(check.columns)} column(s)", soft_wrap=True
            )
    return status


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
    from monitor.evaluation.evaluator import build_evaluators

    settings = settings or _load_settings(args.config)
    if args.end is not None and args.start is None:
        raise ConfigError("--end needs --start")
    if args.start is not None and args.end is None:
        args.end = datetime.now(UTC)
    status = console.status("evaluating", spinner="dots")
    evaluations = []
    _check_models(args.model, settings, args.config)  # a typo must not turn `check` into a passing gate
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
    from monitor.outputs.json import evaluation_rows

    settings = _load_settings(args.config)
    evaluations = _evaluate(args, console, settings=settings)
    rows = evaluation_rows(evaluations)
    if args.format == "json":
        json.dump(rows, sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        min_samples = {m.name: m.min_samples for m in settings.models}
        _print_table(evaluations, stdout_console(), min_samples=min_samples, show_all=args.all)
    if args.report:
        from monitor.outputs.html.report import build_report

        report = build_report(
            settings,
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


def _print_table(
    evaluations: Sequence[ModelEvaluation],
    console: Console,
    *,
    min_samples: Mapping[str, int],
    show_all: bool = False,
) -> None:
    for ev in evaluations:
        for w in ev.windows:
            title = (
                f"{ev.model} - window {w.window} [{w.start:%Y-%m-%d %H:%M}, {w.end:%Y-%m-%d %H:%M}) - "
                f"{w.n_rows:,} rows, label coverage {_fmt(w.label_coverage * 100, 1)}%"
            )
            table = Table(title=title, title_justify="left", header_style="bold")
            for col in ("attribute", "group", "metric"):
                name_column(table, col)
            for col in ("value", "95% interval", "fair range", "state", "n"):
                text_column(table, col, justify="right" if col in ("value", "n") else "left")
            for v in sorted(w.values, key=lambda v: (v.attribute, v.group, v.metric)):
                informational = math.isinf(v.fair_min) and math.isinf(v.fair_max)
                if informational and not show_all:
                    continue
                style = _STATE_STYLE.get(v.state, "")
                interval = f"[{_fmt(v.ci_lower)}, {_fmt(v.ci_upper)}]"
                fair = f"[{_fmt(v.fair_min)}, {_fmt(v.fair_max)}]"
                table.add_row(
                    v.attribute,
                    v.group,
                    v.metric,
                    _fmt(v.value),
                    interval,
                    fair,
                    f"[{style}]{escape(state_text(v, min_samples.get(ev.model)))}[/]",
                    f"{int(v.n_group):,}",
                )
            print_table(console, table)
            if w.model_values:
                summary = ", ".join(
                    f"{m.metric}{'[' + m.attribute + ']' if m.attribute else ''}={_fmt(m.value)}"
                    for m in w.model_values
                )
                console.print(f"  model level: {summary}", highlight=False, soft_wrap=True)
        if ev.rejected:
            console.print(f"  rejected rows: {dict(ev.rejected)}", highlight=False, soft_wrap=True)


def _cmd_demo(args: argparse.Namespace, console: Console) -> int:
    from monitor.cli.demo.run import run_demo

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
    from monitor.outputs.metrics_doc import render_metrics_reference

    if args.format == "json":
        json.dump(registry_as_dicts(), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    if args.format == "markdown":
        sys.stdout.write(render_metrics_reference())
        return 0
    table = Table(title="fairwatch metrics", header_style="bold")
    name_column(table, "metric")
    for col in ("family", "ideal", "fair range", "interval", "meaning"):
        text_column(table, col)
    for m in REGISTRY.values():
        fair = "informational" if m.fair_range is None else m.fair_range.describe()
        table.add_row(
            m.name, m.family, "" if m.ideal is None else f"{m.ideal:g}", fair, m.interval, m.meaning
        )
    print_table(stdout_console(), table)
    return 0


def _write(text: str, output: str | None) -> None:
    if output is None:
        sys.stdout.write(text)
    else:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)


def _cmd_rules(args: argparse.Namespace, console: Console) -> int:
    from monitor.outputs.prometheus.rules import render_rules

    settings = _load_settings(args.config) if args.config else None
    _write(render_rules(settings), args.output)
    return 0


def _cmd_dashboard(args: argparse.Namespace, console: Console) -> int:
    from monitor.outputs.dashboards import dashboard_json, render_dashboard, write_dashboards

    if not args.config:
        _write(dashboard_json(render_dashboard()), args.output)
        return 0
    for path in write_dashboards(_load_settings(args.config), args.output):
        console.print(f"wrote {path}", highlight=False)
    return 0


def _cmd_power(args: argparse.Namespace, console: Console) -> int:
    from monitor.outputs.power import (
        parse_effects,
        plan_model,
        plans_as_rows,
        print_plans,
        with_planning_rates,
    )

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
        print_plans(plans, stdout_console(), power=args.power)
    return 0


def _check_models(wanted: Sequence[str] | None, settings: Settings, path: str) -> None:
    """``--model`` names only models of the config (else the error says which, and what was meant)."""
    names = [m.name for m in settings.models]
    unknown = sorted(set(wanted or ()) - set(names))
    if unknown:
        hints = "".join(did_you_mean(name, names) for name in unknown)
        raise ConfigError(
            f"--model: no model named {', '.join(unknown)} in {path}{hints}; its models are: {', '.join(names)}"
        )


def _cmd_report(args: argparse.Namespace, console: Console) -> int:
    from monitor.outputs.html.report import build_report, instants

    settings = _load_settings(args.config)
    _check_models(args.model, settings, args.config)
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

    from monitor.config import parse_duration
    from monitor.outputs.prometheus.backfill import parse_labels, run_backfill

    try:
        step = parse_duration(args.step)
    except ValueError as exc:
        raise ConfigError(f"--step: {exc}") from None
    labels = parse_labels(args.label)
    settings = _load_settings(args.config)
    _check_models(args.model, settings, args.config)
    result = run_backfill(
        settings,
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
