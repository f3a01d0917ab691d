"""Each incident's onset, read from its model's log: which value to estimate it on, over which span.

:mod:`.onset` estimates the change from the metric on runs of bins of the span; this module picks, per
incident (:mod:`.incidents`), what to cut and where:

- the value: the incident's strongest of its own population (``race=Black`` rather than an
  intersection that joined it), in its window;
- the span: from two window lengths before the run of violations began (``Incident.since``, or the
  evaluation itself), and at least a day, to the window's end (for a metric that needs labels, from
  before its label window on to now: labels joined as the evaluation joins them);
- the bins: every pane (``panes.size``, an hour by default), at most :data:`MOST_CUTS` of them (a
  longer span is cut at a multiple of the pane: a 7-day window's 21-day span every 6 hours);
- the direction: the side of the fair range the value left by (a disparate impact below 0.8 searches
  for a fall).

A source that fails leaves the incident without an onset (logged), never the evaluation without its
incidents.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from statistics import NormalDist

import metrics_core as mc
from monitor.evaluation.evaluator import Evaluator
from monitor.evaluation.incidents import Incident
from monitor.evaluation.onset import Onset, onset
from monitor.evaluation.results import ModelEvaluation

__all__ = ["MOST_CUTS", "onset_of", "with_onsets"]

log = logging.getLogger(__name__)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: The span reaches back at least this far: a day of hourly panes.
LEAST_SPAN = timedelta(days=1)

#: At most this many cuts per search: 4 days of hourly panes.
MOST_CUTS = 96


def with_onsets(
    found: Sequence[Incident], evaluators: Mapping[str, Evaluator], last: Mapping[str, ModelEvaluation]
) -> list[Incident]:
    """``found`` with each incident's onset estimated (``last``: each model's evaluation they are of)."""
    out = []
    for incident in found:
        evaluator, evaluation = evaluators.get(incident.model), last.get(incident.model)
        onset = None if evaluator is None or evaluation is None else onset_of(evaluator, incident, evaluation)
        out.append(dataclasses.replace(incident, onset=onset))
    return out


def onset_of(
    evaluator: Evaluator,
    incident: Incident,
    evaluation: ModelEvaluation,
    *,
    cancelled: Callable[[], bool] = lambda: False,
) -> Onset | None:
    """The incident's estimated onset (``None``: not estimable, its source failed, or ``cancelled``)."""
    own = [
        f
        for f in incident.findings
        if (f.value.attribute, f.value.group) == (incident.attribute, incident.group)
    ]
    finding = (own or list(incident.findings))[0]
    window = next((w for w in evaluation.windows if w.window == finding.window), None)
    if window is None:
        return None
    spec = mc.REGISTRY.get(finding.value.metric)
    labels = spec is not None and "y_true" in spec.requires
    # a label metric's span reaches back from its label window, and on to now: the labels are joined as
    # the evaluation joins them (those arrived by now), and rows still without one count for no label metric
    start, end = (window.label_start, window.end) if labels else (window.start, window.end)
    since = finding.since or evaluation.evaluated_at
    start -= (evaluation.evaluated_at - since) + 2 * (end - start)
    start = min(start, end - LEAST_SPAN)  # a short window's bias may be older than three of them
    pane = evaluator.model.panes.size
    start = _EPOCH + (start - _EPOCH) // pane * pane  # cut at whole panes: 09:00, not 08:27
    step = pane * max(1, math.ceil((end - start) / pane / MOST_CUTS))
    v = finding.value
    # the direction the value left its fair range by: the change searched for moved it that way
    direction = -1 if v.value < v.fair_min else 1 if v.value > v.fair_max else 0
    try:
        segments = evaluator.segments(start, end, step, attribute=v.attribute, group=v.group, metric=v.metric)
        z = NormalDist().inv_cdf(0.5 + evaluator.confidence / 2)
        return onset(segments, z=z, level=evaluator.confidence, direction=direction, cancelled=cancelled)
    except Exception as exc:  # an estimate the incident can do without: said, not raised
        log.warning(
            "model %s: the onset of incident %s=%s could not be estimated: %s: %s",
            incident.model,
            incident.attribute,
            incident.group,
            type(exc).__name__,
            exc,
        )
        return None
