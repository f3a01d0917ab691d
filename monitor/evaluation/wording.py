"""Plain words for a judged value and an incident: what a person reads first.

"The approval rate of Black applicants was 40% against 59% for White (disparate impact 0.68, 95%
interval 0.62 to 0.74, fair range [0.8, 1.25]), about 1,900 applicants a day" - the rates behind a
difference or a ratio (:attr:`~monitor.evaluation.results.WindowResult.rates`), the metric's own value
with its interval and fair range, and the group's size per day. The model's ``wording`` names the
outcome (``approval``) and the people (``applicants``); ``favorable`` says which prediction that
outcome is, so the selection rate is the favourable outcome's rate (``metrics_core``'s ``favorable``).

Values without a rate behind them (the AUCs, the standardized differences) read as the metric, its value,
interval and range. Pure: values in, text out; the report, the alerts and the live view quote it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import metrics_core as mc
from metrics_core import MetricValue
from monitor.core.text import fair_range_text, number
from monitor.evaluation.results import ModelEvaluation, WindowResult, Words

__all__ = ["Words", "metric_name", "per_day", "plain_finding", "plain_value", "rates_of", "reference_text"]

# what each rate is called; {outcome} is the model's word for the favourable outcome
_RATE_NOUNS = {
    "selection_rate": "{outcome} rate",
    "true_positive_rate": "true positive rate",
    "false_positive_rate": "false positive rate",
    "false_negative_rate": "false negative rate",
    "positive_predictive_value": "precision",
    "accuracy": "accuracy",
}
_PLAIN = Words()  # no wording configured
_ACRONYMS = {"auc": "AUC", "aeg": "AEG", "bpsn": "BPSN", "bnsp": "BNSP", "sd": "SD"}


def rates_of(window: WindowResult) -> dict[tuple[str, str, str, str], float]:
    """Each group's own rates in ``window``, by (attribute, group, reference, rate): the quoted rates
    and any configured one."""
    names = set(_RATE_NOUNS)
    return {
        (v.attribute, v.group, v.reference, v.metric): v.value
        for v in (*window.rates, *window.values)
        if v.metric in names
    }


def plain_value(
    value: MetricValue,
    *,
    words: Words = _PLAIN,
    rates: Mapping[tuple[str, str, str, str], float] | None = None,
    confidence: float = 0.95,
) -> str:
    """One value in words: the rates it compares where known, then the metric, interval and range.

    >>> v = MetricValue("race", "Black", "White", "disparate_impact", 0.678, 0.62, 0.74, 0.8, 1.25,
    ...                 "violation", 1900, 7000, 1900)
    >>> plain_value(v, words=Words("approval", "applicants"),
    ...             rates={("race", "Black", "White", "selection_rate"): 0.40})
    'the approval rate of Black applicants was 40% against 59% for White (disparate impact 0.678, 95% interval 0.62 to 0.74, fair range [0.8, 1.25])'
    >>> plain_value(v)
    'the disparate impact of Black rows against White was 0.678 (95% interval 0.62 to 0.74, fair range [0.8, 1.25])'
    """
    interval = (
        f"{_level(confidence)} interval {number(value.ci_lower)} to {number(value.ci_upper)}, "
        f"fair range {fair_range_text(value.fair_min, value.fair_max)}"
    )
    who, against = f"{value.group} {words.subjects}", reference_text(value.reference)
    sides = _sides(value, rates or {})
    if sides is None:
        return f"the {metric_name(value.metric)} of {who} against {against} was {number(value.value)} ({interval})"
    rate, group_rate, reference_rate = sides
    return (
        f"the {_RATE_NOUNS[rate].format(outcome=words.outcome)} of {who} was {_percent(group_rate)} against "
        f"{_percent(reference_rate)} for {against} ({metric_name(value.metric)} {number(value.value)}, {interval})"
    )


def plain_finding(
    value: MetricValue, window: WindowResult, evaluation: ModelEvaluation, *, confidence: float
) -> str:
    """A value of ``window`` of ``evaluation`` in words, with its group's size a day (its rows in the
    window - weighted: the rows they stand for -, not the value's effective sample)."""
    words = evaluation.words
    text = plain_value(value, words=words, rates=rates_of(window), confidence=confidence)
    side = (value.attribute, value.group, value.reference)
    rows = next((g.n_rows for g in window.groups if (g.attribute, g.group, g.reference) == side), None)
    days = (window.end - window.start).total_seconds() / 86_400
    daily = per_day(rows, days, words) if rows is not None else ""
    return f"{text}, {daily}" if daily else text


def metric_name(metric: str) -> str:
    """``disparate_impact`` -> ``disparate impact``, ``bpsn_auc`` -> ``BPSN AUC``."""
    return " ".join(_ACRONYMS.get(part, part) for part in metric.split("_"))


def reference_text(reference: str) -> str:
    """Who a group is compared with, in words: ``White``, ``the rest`` (the attribute's other groups),
    ``the other rows`` (an indicator's background: the window's rows outside the group)."""
    return {"rest": "the rest", "background": "the other rows"}.get(reference, reference)


def per_day(rows: float, days: float, words: Words = _PLAIN) -> str:
    """``about 1,900 applicants a day`` (``rows`` over ``days``, the window's length), or ``""``."""
    if not days > 0 or math.isnan(rows):
        return ""
    return f"about {number(rows / days)} {words.subjects} a day"


def _sides(
    value: MetricValue, rates: Mapping[tuple[str, str, str, str], float]
) -> tuple[str, float, float] | None:
    """(rate, the group's, the reference's) behind a difference or a ratio of one rate, where known."""
    spec = mc.REGISTRY.get(value.metric)
    if spec is None or spec.contrast not in ("difference", "ratio") or len(spec.support) != 1:
        return None
    rate = spec.support[0]
    group_rate = rates.get((value.attribute, value.group, value.reference, rate), math.nan)
    if rate not in _RATE_NOUNS or not math.isfinite(group_rate) or not math.isfinite(value.value):
        return None
    if spec.contrast == "difference":
        reference_rate = group_rate - value.value
    elif value.value != 0:
        reference_rate = group_rate / value.value
    else:
        return None
    return rate, group_rate, reference_rate


def _percent(x: float) -> str:
    """``40%``, ``5.5%``, ``0.42%``: whole percent from 10% on, else two significant digits."""
    p = 100 * x
    return f"{p:.0f}%" if abs(p) >= 10 else f"{p:.1f}%" if abs(p) >= 1 else f"{number(p, 2)}%"


def _level(confidence: float) -> str:
    return f"{round(confidence * 100, 6):g}%"
