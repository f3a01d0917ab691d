"""Incidents: the violations that share a cause, as one finding a person can act on.

One bias shows as many judged values in violation: several metrics (disparate impact, statistical
parity, the four-fifths ratio all read the same selection rates), several windows, and the
intersections that hold the affected group (an income bug against Black applicants shows in
``race=Black`` and in ``race_sex=Black&F`` and ``Black&M``). An *incident* gathers them:

- per model, one incident per affected **population**: an attribute's group (``race=Black``);
- an intersection's group (``Black&F`` of the columns ``race`` and ``sex``: its parts joined by
  ``&``) joins the incident of a part that is itself in violation in the same model - a group of a
  categorical attribute over that part's column (``race=Black``; of several, the one with the
  strongest evidence) -, and stands alone when no part is. Which attribute reads which columns comes
  with the evaluation (``ModelEvaluation.attribute_columns``); without it, nothing is joined;
- its values are ordered by their evidence: how far the whole interval lies beyond the fair range,
  in units of the interval's own width (a value barely outside ranks below one far outside);
- **since**: the first evaluation from which a value has been in violation at every evaluation up to
  the last one given; the incident's is its earliest value's. With a report's evaluations that is
  the start of the episode within the report's period (an episode begun before it starts at the
  report's first evaluation: ``since_bounded`` says so).

Pure: from evaluations in, incidents out; the report, the live view and the notifications draw them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from metrics_core import MetricValue
from monitor.evaluation.onset import Onset
from monitor.evaluation.results import ModelEvaluation

__all__ = ["Finding", "Incident", "evidence", "incidents", "populations"]

_PART = "&"  # how an intersection names its groups: Black&F
_Key = tuple[str, str, str, str, str]  # window, attribute, group, reference, metric


@dataclass(frozen=True)
class Finding:
    """One value in violation: its window and, with a history, since when it has been."""

    window: str
    value: MetricValue
    since: datetime | None
    since_bounded: bool  # True: the violation began before the first evaluation given


@dataclass(frozen=True)
class Incident:
    """The violations of one model that share an affected population, strongest first."""

    model: str
    attribute: str
    group: str
    findings: tuple[Finding, ...]
    onset: Onset | None = None  # when it began, estimated from the log (:mod:`.onsets`); None: not estimated

    @property
    def since(self) -> datetime | None:
        times = [f.since for f in self.findings if f.since is not None]
        return min(times) if times else None

    @property
    def since_bounded(self) -> bool:
        earliest = self.since
        return any(f.since_bounded and f.since == earliest for f in self.findings)

    @property
    def populations(self) -> tuple[str, ...]:
        """Every ``attribute=group`` the incident holds: its own, then the others by name."""
        own = f"{self.attribute}={self.group}"
        others = {f"{f.value.attribute}={f.value.group}" for f in self.findings} - {own}
        return (own, *sorted(others))

    @property
    def strength(self) -> float:
        return max((evidence(f.value) for f in self.findings), default=0.0)


def evidence(value: MetricValue) -> float:
    """How far a violation's interval lies beyond its fair range, in interval widths (0 when it does
    not; infinite for an interval of no width)."""
    if value.state != "violation":
        return 0.0
    lo, hi = value.ci_lower, value.ci_upper
    gap = max(
        (value.fair_min - hi) if math.isfinite(value.fair_min) else -math.inf,
        (lo - value.fair_max) if math.isfinite(value.fair_max) else -math.inf,
    )
    if not math.isfinite(gap) or gap <= 0:
        return 0.0
    width = hi - lo
    return gap / width if width > 0 else math.inf


def incidents(
    evaluations: Sequence[ModelEvaluation], *, firing: Collection[tuple[str, ...]] = ()
) -> list[Incident]:
    """The incidents of the last evaluation of each model in ``evaluations`` (oldest first), their
    ``since`` read from the model's earlier evaluations given; strongest incident first.

    ``firing``: the (model, window, attribute, group, reference, metric) of alerts that are firing - a
    value of one of them out of range but no longer surely so (``inconclusive``) still counts, as its
    alert keeps firing (monitor.service.alerting)."""
    by_model: dict[str, list[ModelEvaluation]] = {}
    for evaluation in evaluations:
        by_model.setdefault(evaluation.model, []).append(evaluation)
    out: list[Incident] = []
    held = set(firing)
    for model, history in by_model.items():
        out += _model_incidents(model, history, held=held)
    return sorted(out, key=lambda i: (-i.strength, i.model, i.attribute, i.group))


def populations(evaluation: ModelEvaluation) -> dict[tuple[str, str], str]:
    """Each group in violation in ``evaluation`` - realised or estimated - -> its incident's population
    (``race=Black``; an intersection's group the population of the part it joined): the ``incident``
    label of its alerts."""
    return {
        (f.value.attribute, f.value.group): f"{i.attribute}={i.group}"
        for i in _model_incidents(evaluation.model, [evaluation], estimates=True)
        for f in i.findings
    }


def _model_incidents(
    model: str,
    history: list[ModelEvaluation],
    *,
    estimates: bool = False,
    held: set[tuple[str, ...]] | None = None,
) -> list[Incident]:
    last = history[-1]
    states = [
        {
            (w.window, v.attribute, v.group, v.reference, v.metric): v.state
            for w in e.windows
            for v in w.values
        }
        for e in history
    ]
    findings = [
        Finding(
            w.window, v, *_since(history, states, (w.window, v.attribute, v.group, v.reference, v.metric))
        )
        for w in last.windows
        for v in (*w.values, *(w.estimates if estimates else ()))
        if not math.isnan(v.value)
        and (
            v.state == "violation"
            or (
                v.state == "inconclusive"
                and (model, w.window, v.attribute, v.group, v.reference, v.metric) in (held or ())
            )
        )
    ]
    columns = last.attribute_columns
    strength: dict[tuple[str, str], float] = {}
    for f in findings:
        key = (f.value.attribute, f.value.group)
        strength[key] = max(strength.get(key, 0.0), evidence(f.value))
    # a group in violation of a one-column attribute, by (column, value): what an intersection's part names
    single = {(columns[a][0], g): (a, g) for a, g in strength if len(columns.get(a, ())) == 1}
    grouped: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        key = (f.value.attribute, f.value.group)
        own = columns.get(key[0], ())
        parts = key[1].split(_PART)
        if len(own) > 1 and len(parts) == len(own):  # an intersection: Black&F of (race, sex)
            owners = [single[c, p] for c, p in zip(own, parts, strict=True) if (c, p) in single]
            if owners:
                key = max(owners, key=lambda a: (strength[a], a))
        grouped.setdefault(key, []).append(f)
    return [
        Incident(model, attribute, group, tuple(sorted(found, key=lambda f: -evidence(f.value))))
        for (attribute, group), found in grouped.items()
    ]


def _since(
    history: list[ModelEvaluation], states: list[dict[_Key, str]], key: _Key
) -> tuple[datetime | None, bool]:
    """The first evaluation of the run of violations that reaches the last one, and whether that run
    reaches back to the first evaluation given (it may have begun before)."""
    since: datetime | None = None
    for evaluation, judged in zip(reversed(history), reversed(states), strict=True):
        if judged.get(key) != "violation":
            return since, False
        since = evaluation.evaluated_at
    return since, True
