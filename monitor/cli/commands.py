"""``fairwatch``: the command line. :func:`main` parses (:mod:`~monitor.cli.parser`), runs one
command below and maps errors to exit statuses; each command loads the config, calls the layer that
does the work and prints through :mod:`~monitor.cli.tables`.

fairwatch run       --config F                 the service
fairwatch evaluate  --config F [--start T --end T] [--format table|json]
fairwatch check     --config F [...]           as evaluate; exit 1 on any violation
fairwatch report    --config F [--start T --end T --step D] -o report.html   one HTML file
fairwatch validate  --config F [--connect]     check a config and exit
fairwatch demo      [--port N]                 a drifting toxicity model, live, in a minute
fairwatch metrics   [--format table|json|markdown]
fairwatch rules / dashboard / power / backfill ...
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import math
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn

from rich.console import Console
from rich.markup import escape

from monitor.cli.parser import build_parser
from monitor.cli.terminal import stdout_closed, stdout_console
from monitor.core.errors import ConfigError, FairwatchError
from monitor.core.secrets import SecretFilter, mask

if TYPE_CHECKING:
    from monitor.config import Settings
    from monitor.evaluation.results import ModelEvaluation

__all__ = ["main"]

# Masks URL credentials in every log line; the secrets of the loaded config are added to it.
_SECRETS = SecretFilter()


def _print_json(data: object, *, allow_nan: bool = True) -> None:
    """``data`` as indented JSON on stdout, its tokens gathered into writes of 8 KB: ``json.dump`` calls
    ``write`` once per token (4 M calls, seconds, for a window of 2,000 groups), and one write at the
    end would hold every byte back until the whole text is encoded."""
    pending: list[str] = []
    size = 0
    for token in json.JSONEncoder(indent=1, allow_nan=allow_nan).iterencode(data):
        pending.append(token)
        size += len(token)
        if size >= 8192:
            sys.stdout.write("".join(pending))
            pending, size = [], 0
    sys.stdout.write("".join(pending) + "\n")


def _load_settings(path: str, web_config_file: str | None = None) -> Settings:
    from monitor.config import load_settings, with_web_config

    settings = load_settings(path)
    _SECRETS.add(settings.secrets())
    return with_web_config(settings, web_config_file)


def entry() -> NoReturn:
    """The ``fairwatch`` console script: :func:`main`, then the end of the process without the
    interpreter's last garbage collections, which walk every object the imports made (pandas,
    SQLAlchemy, pyarrow: ~1 M) - 0.25 s of a 1.4 s ``fairwatch evaluate``. By then every file is
    written and closed and every connection closed; the memory goes back to the system at exit.
    (Only here: a test calling :func:`main` in its own process keeps collecting.)"""
    status = main()
    gc.freeze()  # objects frozen are left out of every collection, the final ones too
    raise SystemExit(status)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
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
    except KeyboardInterrupt:  # Ctrl-C: no traceback, and what was (not) written
        console.print(f"[yellow]interrupted[/]: {_interrupted(args)}", highlight=False, soft_wrap=True)
        return 130
    except OSError as exc:  # a file to write, a port to bind, a directory to create
        where = f": {exc.filename}" if exc.filename else ""
        console.print(
            f"[bold red]error:[/] {escape(exc.strerror or str(exc))}{escape(where)}",
            highlight=False,
            soft_wrap=True,
        )
        return 1


def _progress(console: Console, update: Callable[[str], object], every: float = 5.0) -> Callable[[str], None]:
    """Progress messages: the spinner's text at a terminal; piped (a CI log, ``2> file``), a plain
    line when the message names another model than the last line did, else at most every ``every``
    seconds - so a long run is never silent, and never says one model while reading another."""
    if console.is_terminal:

        def spin(message: str) -> None:
            update(message)

        return spin
    said: list[Any] = [-math.inf, None]  # when the last line was printed, and the model it named

    def line(message: str) -> None:
        now, words = time.monotonic(), message.split()
        # "toxicity: evaluation 2 of 6 (...)" (a report), "reading toxicity [...]" (an evaluation)
        model = message.split(":", 1)[0] if ":" in words[0] else words[1] if len(words) > 1 else None
        if now - said[0] >= every or model != said[1]:
            said[:] = [now, model]
            console.print(message, highlight=False, soft_wrap=True, markup=False)

    return line


def _interrupted(args: argparse.Namespace) -> str:
    """What an interrupted command leaves behind."""
    if args.command == "backfill":
        if getattr(args, "output", None):
            return f"nothing was written to {args.output} (a backfill file is written only once complete)"
        return (
            "a backfill is printed only after its last evaluation: interrupted before that, nothing was "
            "printed; while printing, what standard output received is cut short (do not import it)"
        )
    if args.command == "report":
        return (
            f"no report was written to {args.output} (it is written once every evaluation is done, under "
            "a temporary name renamed over the file: an earlier report there stays as it was)"
        )
    return "stopped before it finished"


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

    run_forever(lambda: _load_settings(args.config, args.web_config_file))
    return 0


def _evaluate(
    args: argparse.Namespace,
    console: Console,
    settings: Settings,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    at: datetime | None = None,
) -> list[ModelEvaluation]:
    from monitor.evaluation.evaluators import evaluate_once, select_models

    select_models(settings, args.model, args.config)  # named by its file before anything is read
    with console.status("evaluating", spinner="dots") as status:
        return evaluate_once(
            settings, at=at, start=start, end=end, models=args.model, progress=lambda msg: status.update(msg)
        )


def _cmd_evaluate(args: argparse.Namespace, console: Console) -> int:
    from monitor.cli.tables import print_evaluations
    from monitor.outputs.json import evaluation_rows

    settings = _load_settings(args.config)
    evaluations = _evaluate(args, console, settings, start=args.start, end=args.end)
    rows = evaluation_rows(evaluations)
    if args.format == "json":
        _print_json(rows, allow_nan=False)
    elif args.format == "csv":
        from monitor.outputs.csv_rows import rows_csv

        sys.stdout.write(rows_csv(rows))
    else:
        min_samples = {m.name: m.min_samples for m in settings.models}
        print_evaluations(evaluations, stdout_console(), min_samples=min_samples, show_all=args.all)
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
        # the values the labels give: an estimate (nowcast, labels pending) does not fail a check
        violations = [r for r in rows if r["state"] == "violation" and r["basis"] == "labels"]
        if violations:
            console.print(f"[bold red]{len(violations)} violation(s)[/]")
            return 1
        console.print("[green]no violations[/]")
    return 0


def _cmd_demo(args: argparse.Namespace, console: Console) -> int:
    from monitor.cli.demo.run import run_demo

    return run_demo(
        host=args.host,
        port=args.port,
        directory=args.dir,
        duration=args.duration,
        speed=args.speed,
        console=console,
        web_config_file=args.web_config_file,
    )


def _cmd_metrics(args: argparse.Namespace, console: Console) -> int:
    from metrics_core import registry_as_dicts

    if args.format == "json":
        _print_json(registry_as_dicts())
    elif args.format == "markdown":
        from monitor.outputs.metrics_doc import render_metrics_reference

        sys.stdout.write(render_metrics_reference())
    else:
        from monitor.cli.tables import print_metrics

        print_metrics(stdout_console())
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
    from monitor.cli.tables import print_plans
    from monitor.outputs.power import parse_effects, plan_model, plans_as_rows, with_planning_rates

    departures = parse_effects(args.effect)
    settings = _load_settings(args.config)
    configs = {m.name: m for m in settings.models}
    plans = []
    for evaluation in _evaluate(args, console, with_planning_rates(settings), at=args.at):
        plans += plan_model(
            evaluation,
            configs[evaluation.model],
            departures=departures,
            confidence=settings.alerts.confidence,
            method=settings.alerts.method,
            power=args.power,
        )
    if args.format == "json":
        _print_json(plans_as_rows(plans), allow_nan=False)
    else:
        print_plans(plans, stdout_console(), power=args.power)
    return 0


def _cmd_report(args: argparse.Namespace, console: Console) -> int:
    from monitor.evaluation.evaluators import select_models
    from monitor.outputs.html.report import build_report, instants

    settings = _load_settings(args.config)
    select_models(settings, args.model, args.config)
    end = args.end or datetime.now(UTC)
    if args.start is not None and args.start >= end:
        raise ConfigError(f"--start {args.start.isoformat()} must be before --end {end.isoformat()}")
    try:
        at = instants(args.start, end, args.step)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    with console.status("evaluating", spinner="dots") as status:
        report = build_report(
            settings, at=at, models=args.model, title=args.title, progress=_progress(console, status.update)
        )
    path = report.write_csv(args.output) if args.format == "csv" else report.write(args.output)
    done = sum(len(e) for e in report.evaluations.values())
    console.print(
        f"wrote {path}: {done} evaluation(s) of {len(report.evaluations)} model(s)",
        soft_wrap=True,
        highlight=False,
    )
    return 0


def _cmd_backfill(args: argparse.Namespace, console: Console) -> int:
    from pathlib import Path

    from monitor.cli.backfill import run_backfill
    from monitor.core.times import parse_duration
    from monitor.evaluation.evaluators import select_models
    from monitor.outputs.prometheus.backfill import parse_labels

    try:
        step = parse_duration(args.step)
    except ValueError as exc:
        raise ConfigError(f"--step: {exc}") from None
    labels = parse_labels(args.label)
    settings = _load_settings(args.config)
    select_models(settings, args.model, args.config)
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


_COMMANDS: dict[str, Callable[[argparse.Namespace, Console], int]] = {
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
