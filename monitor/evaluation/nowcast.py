"""Fairness before the labels: label-dependent metrics estimated from the scores (``nowcast:``).

A window's newest rows have no labels yet (they arrive ``label_delay`` later, or later still). With
calibrated probabilities ``q``, the expected confusion counts of those rows are known: a row predicted
positive adds ``q`` expected true positives and ``1 - q`` expected false positives, and so on; an AUC
takes ``q`` as a soft label. So the estimate of a window's label-dependent value is the value computed
on the window with each unlabelled row split in two - label 1 weighing ``q``, label 0 weighing
``1 - q`` - and each labelled row as it is (:func:`soft_labelled`): the value the labels are expected
to give once they have all arrived. Its interval is the one the engine computes from those counts,
which is at least as wide as the spread of the value the labels will give (the realised labels vary
less than a sample of that many labelled rows would).

``q`` is the score mapped through a calibration fitted on the rows whose labels have arrived (the
window shifted back by ``label_delay``): isotonic regression by default (scores need only rank), the
score itself with ``calibration: identity`` (scores that already are calibrated probabilities). One
map for all rows, fitted on every labelled row: a row in several groups (indicator attributes
overlap) has one probability.

Whether that holds is checked per group on the same labelled rows (:func:`calibration_checks`):
observed over expected positives with its interval, and the slope and intercept of the group's
labels regressed on ``logit(q)`` (1 and 0 when the map fits the group). A group whose ratio interval
lies outside ``[1 - tolerance, 1 + tolerance]``, or whose slope interval lies outside
``[1 - 2 tolerance, 1 + 2 tolerance]``, fails: every estimate of a comparison it takes part in is
``insufficient_data`` with that reason, never a violation. The assumptions (docs/nowcasting.md):
labels missing at random given the score and the group, and no change in how scores relate to
outcomes between the labelled rows and the newest ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import pandas as pd

import metrics_core as mc
from monitor.reading.frame import INPUT_PREFIX, WEIGHT_SQUARES
from monitor.sources.contract import WEIGHT

__all__ = [
    "LABEL",
    "SCORE",
    "Calibration",
    "CalibrationCheck",
    "calibration_checks",
    "calibration_map",
    "cross_fitted",
    "design_effects",
    "distrust",
    "fit_calibration",
    "recalibrated",
    "resampled_calibrations",
    "soft_labelled",
    "widened",
]

#: The canonical frame's score and label columns.
SCORE = INPUT_PREFIX + "y_score"
LABEL = INPUT_PREFIX + "y_true"
_EDGE = 1e-6  # probabilities kept inside (0, 1) for the logit


@dataclass(frozen=True)
class CalibrationCheck:
    """How well the calibration fits one group's labelled rows."""

    attribute: str
    group: str
    n: float  # labelled rows (weighted)
    observed: float  # labelled positives
    expected: float  # the sum of their calibrated probabilities
    ratio: float  # observed / expected
    ratio_lower: float
    ratio_upper: float
    slope: float  # of the labels on logit(q): 1 when the map fits the group
    slope_lower: float
    slope_upper: float
    intercept: float
    passed: bool
    reason: str | None  # why it failed, or why it could not be checked
    own_map: bool = False  # checked on its own recalibration of the pooled map, not the pooled map


def calibration_map(
    score: np.ndarray, label: np.ndarray, weight: np.ndarray, method: Literal["isotonic", "identity"]
) -> Callable[[np.ndarray], np.ndarray]:
    """Scores -> calibrated probabilities, fitted on labelled rows (``identity``: the scores, in [0, 1])."""
    if method == "identity":
        return lambda s: np.clip(np.asarray(s, dtype=np.float64), 0.0, 1.0)
    from sklearn.isotonic import IsotonicRegression  # only where a model nowcasts

    counted = weight > 0  # a row of weight 0 would get a level of no block: a block of weight 0, no centre
    score, label, weight = score[counted], label[counted], weight[counted]
    if len(score) == 0:
        raise ValueError("no labelled row of positive weight to calibrate on")
    fitted = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    level = fitted.fit_transform(score, label, sample_weight=weight)
    # centred isotonic regression (Oron & Flournoy 2017): each block of the fit is one point, at its
    # rows' mean score, joined by straight lines. The step function itself is flat inside a block,
    # so every AUC estimated with its soft labels lost the ranking inside each block (biased
    # towards 0.5: a review measured 70-78% coverage for the AUCs from 1,500 labelled rows)
    block, where = np.unique(level, return_inverse=True)
    centre = np.bincount(where, weights=weight * score) / np.bincount(where, weights=weight)
    return lambda s: np.interp(np.asarray(s, dtype=np.float64), centre, block)


#: Per categorical attribute, per group key: the (intercept, slope) of the group's own recalibration.
Fits = Mapping[str, Mapping[str, tuple[float, float]]]


@dataclass(frozen=True)
class Labelled:
    """The label window's labelled rows as calibration reads them: scores, 0/1 labels, weights (rows
    each stands for), and the compared groups' masks over them."""

    score: np.ndarray
    label: np.ndarray
    weight: np.ndarray
    attrs: Sequence[mc.Attribute]

    def rows(self, keep: np.ndarray) -> Labelled:
        """Only the rows ``keep`` selects (a fold)."""
        return Labelled(
            self.score[keep], self.label[keep], self.weight[keep], [_rows(a, keep) for a in self.attrs]
        )

    def weighed(self, weight: np.ndarray) -> Labelled:
        """The same rows weighing ``weight`` (a resample)."""
        return Labelled(self.score, self.label, weight, self.attrs)


@dataclass(frozen=True)
class Calibration:
    """Scores -> probabilities: one map for every row (``pooled``) and, for each group of a categorical
    attribute with enough labelled rows, its own recalibration of that map (``fits``: ``logit q_g =
    a + b logit q``, Platt's scaling applied to the pooled probability)."""

    pooled: Callable[[np.ndarray], np.ndarray]
    fits: Fits = field(default_factory=dict)
    method: Literal["isotonic", "identity"] = "isotonic"

    def refit(self, rows: Labelled) -> Calibration:
        """The same calibration - its method, the same groups with maps of their own - fitted on
        ``rows`` (a fold, a resample of the rows it was fitted on)."""
        return fit_calibration(rows, self.method, group_rows=0, groups=_keys(self.fits))

    def probabilities(self, score: np.ndarray, attr: mc.Attribute | None = None) -> np.ndarray:
        """Each row's probability: the pooled map's, recalibrated for the groups of ``attr`` that have
        their own fit (``attr``'s masks may be longer than ``score``: their first rows are taken)."""
        q = self.pooled(score)
        return q if attr is None else recalibrated(q, attr, self.fits.get(attr.name, {}))


def recalibrated(q: np.ndarray, attr: mc.Attribute, fits: Mapping[str, tuple[float, float]]) -> np.ndarray:
    """``q`` with each fitted group's rows moved through its recalibration."""
    out = np.array(q, dtype=np.float64, copy=True)
    for key, (intercept, slope) in fits.items():
        if key in attr.masks:
            mask = np.asarray(attr.masks[key], dtype=bool)[: len(q)]
            out[mask] = _expit(intercept + slope * _logit(out[mask]))
    return out


def fit_calibration(
    rows: Labelled,
    method: Literal["isotonic", "identity"],
    *,
    group_rows: float,
    groups: Mapping[str, set[str]] | None = None,
) -> Calibration:
    """The pooled map on every labelled row, and a recalibration of it for each compared group and named
    reference of a categorical attribute with at least ``group_rows`` labelled rows of both labels (0:
    none). An indicator attribute's groups overlap - a row of two groups would need two probabilities
    - and keep the pooled map. ``groups``: refit exactly these groups (per attribute) whatever their
    rows - a resample or a fold of the rows some calibration was decided on - where both labels occur."""
    score, label, weight = rows.score, rows.label, rows.weight
    pooled = calibration_map(score, label, weight, method)
    fits: dict[str, dict[str, tuple[float, float]]] = {}
    if group_rows <= 0 and groups is None:
        return Calibration(pooled, fits, method)
    q = np.clip(pooled(score), _EDGE, 1 - _EDGE)
    for attr in rows.attrs:
        if attr.kind != "categorical":
            continue
        for key in _checked_keys(attr):
            if groups is not None and key not in groups.get(attr.name, set()):
                continue
            mask = np.asarray(attr.masks[key], dtype=bool)
            w, y = weight[mask], label[mask]
            n, positives = float(w.sum()), float((w * y).sum())
            if (groups is None and n < group_rows) or positives <= 0 or positives >= n:
                continue
            slope, _, intercept = _recalibration(q[mask], y, w)
            if math.isfinite(slope) and math.isfinite(intercept):
                fits.setdefault(attr.name, {})[key] = (intercept, slope)
    return Calibration(pooled, fits, method)


def cross_fitted(rows: Labelled, calibration: Calibration) -> dict[str, np.ndarray]:
    """Each labelled row's probability, per attribute, from ``calibration`` refitted on the other half of
    the rows (two folds, alternating) - the same groups with maps of their own, decided on all the rows:
    a map checked on the rows it was fitted on fits them better than it fits new rows, and the check
    would pass what it should fail."""
    fold = np.arange(len(rows.score)) % 2 == 0
    out = {a.name: np.empty(len(rows.score), dtype=np.float64) for a in rows.attrs}
    for train in (fold, ~fold):
        if not (rows.weight[train] > 0).any() or not (rows.weight[~train] > 0).any():  # too few to split
            return {a.name: calibration.probabilities(rows.score, a) for a in rows.attrs}
        part, held = calibration.refit(rows.rows(train)), rows.rows(~train)
        for a, mine in zip(rows.attrs, held.attrs, strict=True):
            out[a.name][~train] = part.probabilities(held.score, mine)
    return out


def resampled_calibrations(rows: Labelled, calibration: Calibration, *, resamples: int) -> list[Calibration]:
    """``calibration`` refitted on ``resamples`` Poisson bootstrap resamples of the labelled rows (each
    row's weight times a Poisson(1) count; Hanley & MacGibbon 2006), the same groups with maps of their
    own: how much it varies. Seeded by the rows, so one window gives one answer."""
    if resamples == 0:
        return []
    # seeded by the rows (the window's scores, not only their counts: two windows draw differently)
    score, label = rows.score, rows.label
    rng = np.random.default_rng([len(score), int(label.sum()), resamples, int(score.sum() * 1e6) % 2**32])
    out = []
    for _ in range(resamples):
        drawn = rows.weight * rng.poisson(1.0, len(score))
        if (drawn > 0).any():
            out.append(calibration.refit(rows.weighed(drawn)))
    return out


def _checked_keys(attr: mc.Attribute) -> list[str]:
    """An attribute's compared groups and named references, in order."""
    keys = [c.key for c in attr.comparisons]
    keys += [c.reference_key for c in attr.comparisons if c.reference_key is not None]
    return list(dict.fromkeys(k for k in keys if k in attr.masks))


def _rows(attr: mc.Attribute, rows: np.ndarray) -> mc.Attribute:
    """``attr`` over the ``rows`` of its frame: its checked groups' masks, cut to them."""
    masks = {key: np.asarray(attr.masks[key], dtype=bool)[rows] for key in _checked_keys(attr)}
    return mc.Attribute(attr.name, attr.kind, masks, attr.comparisons)


def _keys(fits: Fits) -> dict[str, set[str]]:
    return {name: set(groups) for name, groups in fits.items()}


def _logit(q: np.ndarray) -> np.ndarray:
    q = np.clip(q, _EDGE, 1 - _EDGE)
    return np.asarray(np.log(q / (1 - q)), dtype=np.float64)


def _expit(x: np.ndarray) -> np.ndarray:
    return np.asarray(1 / (1 + np.exp(-x)), dtype=np.float64)


def design_effects(
    base: Sequence[mc.MetricValue], draws: Sequence[Sequence[mc.MetricValue]], *, z: float
) -> dict[tuple[str, str, str, str], float]:
    """Per estimate (attribute, group, reference, metric): how much the map's error adds to its
    variance, as a factor ``1 + var_map / var_sampling``; infinite where the estimate is defined but
    most resampled maps leave it undefined (the map is too uncertain to say).

    ``base`` are the estimates at an unadjusted fixed level of ``z`` (their sampling standard error is
    the interval's width over ``2 z``), ``draws`` the same estimates from each resampled map (their
    spread is the map's)."""
    spread: dict[tuple[str, str, str, str], list[float]] = {}
    for values in draws:
        for v in values:
            spread.setdefault((v.attribute, v.group, v.reference, v.metric), []).append(v.value)
    effects: dict[tuple[str, str, str, str], float] = {}
    for v in base:
        if not math.isfinite(v.value):
            continue
        key = (v.attribute, v.group, v.reference, v.metric)
        drawn = np.asarray(spread.get(key, []), dtype=np.float64)
        drawn = drawn[np.isfinite(drawn)]
        if len(drawn) < max(2, (len(draws) + 1) // 2):
            effects[key] = math.inf
            continue
        se = (v.ci_upper - v.ci_lower) / (2 * z)
        if se > 0:  # else no interval to widen (a metric without one, a value certain by construction)
            effects[key] = 1.0 + float(drawn.var(ddof=1)) / se**2
    return effects


def widened(
    values: Sequence[mc.MetricValue], effects: dict[tuple[str, str, str, str], float], *, min_samples: float
) -> list[mc.MetricValue]:
    """``values`` (the engine's estimates, their intervals adjusted or anytime as configured) with each
    side of each interval stretched from the value by the square root of its design effect, and judged
    again: the interval then holds the map's variance beside the sampling's, in the proportion the
    engine's own interval has to its standard error. A rate or AUC keeps its interval within [0, 1].
    An estimate whose effect is infinite is ``insufficient_data`` with the reason."""
    out = []
    for v in values:
        effect = effects.get((v.attribute, v.group, v.reference, v.metric), 1.0)
        if math.isinf(effect):
            nan = math.nan
            reason = (
                "undefined under most resampled calibrations: the calibration is too uncertain to estimate it"
            )
            out.append(
                replace(v, value=nan, ci_lower=nan, ci_upper=nan, state="insufficient_data", reason=reason)
            )
            continue
        if effect <= 1.0 or not math.isfinite(v.ci_lower) or not math.isfinite(v.ci_upper):
            out.append(v)
            continue
        stretch = math.sqrt(effect)
        lower = v.value - stretch * (v.value - v.ci_lower)
        upper = v.value + stretch * (v.ci_upper - v.value)
        if _bounded(v.metric) and v.ci_lower >= 0.0 and v.ci_upper <= 1.0:
            lower, upper = max(lower, 0.0), min(upper, 1.0)
        state = str(
            mc.judge(
                v.value, lower, upper, v.fair_min, v.fair_max, support=v.support, min_samples=min_samples
            )
        )
        out.append(replace(v, ci_lower=lower, ci_upper=upper, state=state))
    return out


def _bounded(metric: str) -> bool:
    """A metric that is a proportion (a rate, an accuracy, an AUC): its interval stays in [0, 1]."""
    return metric.endswith(("_auc", "_rate", "_value")) or metric == "accuracy"


def soft_labelled(frame: pd.DataFrame, q: np.ndarray, *, every_row: bool = False) -> pd.DataFrame:
    """``frame`` (a window's canonical rows) with each unlabelled row - ``every_row``: each row - split
    in two: label 1 weighing its count times ``q``, label 0 weighing its count times ``1 - q``; other
    rows as they are."""
    weight = frame[WEIGHT].to_numpy(dtype=np.float64) if WEIGHT in frame.columns else np.ones(len(frame))
    label = frame[LABEL].to_numpy(dtype=np.float64)
    pending = np.ones(len(frame), dtype=bool) if every_row else np.isnan(label)
    known = frame.loc[~pending].assign(**{WEIGHT: weight[~pending]})
    rest = frame.loc[pending]
    positive = rest.assign(**{LABEL: 1.0, WEIGHT: weight[pending] * q[pending]})
    negative = rest.assign(**{LABEL: 0.0, WEIGHT: weight[pending] * (1.0 - q[pending])})
    if WEIGHT_SQUARES in frame.columns:  # sampling weights: a fraction of a row, a fraction of its w^2
        squares = frame.loc[pending, WEIGHT_SQUARES].to_numpy(dtype=np.float64)
        positive[WEIGHT_SQUARES] = squares * q[pending]
        negative[WEIGHT_SQUARES] = squares * (1.0 - q[pending])
    soft: pd.DataFrame = pd.concat([known, positive, negative], ignore_index=True)
    return soft


def calibration_checks(
    attrs: Sequence[mc.Attribute],
    q: np.ndarray | Mapping[str, np.ndarray],
    label: np.ndarray,
    weight: np.ndarray,
    *,
    confidence: float,
    tolerance: float,
    min_samples: int,
    own: Mapping[str, set[str]] | None = None,
) -> list[CalibrationCheck]:
    """Each compared group's and named reference's calibration on labelled rows (``q`` - one array, or
    one per attribute name -, ``label``, ``weight``: those rows, in the order ``attrs`` were built on).
    ``own``: per attribute, the group keys checked on a recalibration of their own."""
    from statistics import NormalDist  # scipy.stats would cost every fairwatch process 0.5 s of imports

    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    out = []
    for attr in attrs:
        probabilities = np.clip(q[attr.name] if isinstance(q, Mapping) else q, _EDGE, 1 - _EDGE)
        keys = {c.key: c.group for c in attr.comparisons}
        keys |= {c.reference_key: c.reference for c in attr.comparisons if c.reference_key is not None}
        for key, group in keys.items():
            mask = np.asarray(attr.masks[key], dtype=bool)
            check = _check(
                attr.name, group, probabilities[mask], label[mask], weight[mask], z, tolerance, min_samples
            )
            out.append(replace(check, own_map=key in (own or {}).get(attr.name, set())))
    return out


def distrust(values: Sequence[mc.MetricValue], checks: Sequence[CalibrationCheck]) -> list[mc.MetricValue]:
    """The estimates that cannot be trusted, ``insufficient_data`` with no value and the reason: a
    comparison whose group or named reference failed its calibration check or was not checked (no
    labelled rows of it in the label window), and one whose reference is the rest or the background
    while a group of its attribute failed (the reference holds that group's rows)."""
    by_group = {(c.attribute, c.group): c for c in checks}
    failed_in = {c.attribute: c for c in checks if not c.passed}
    out = []
    for v in values:
        reason = None
        for side in (v.group, v.reference):
            check = by_group.get((v.attribute, side))
            if check is not None and not check.passed:
                reason = f"calibration of {side}: {check.reason}"
                break
            if check is None and side == v.group:
                reason = f"calibration of {side}: no labelled rows of it in the label window to check it on"
                break
        if reason is None and (v.attribute, v.reference) not in by_group and v.attribute in failed_in:
            failed = failed_in[v.attribute]
            reason = f"calibration of {failed.group} (in the reference {v.reference}): {failed.reason}"
        if reason is None:
            out.append(v)
            continue
        nan = math.nan
        out.append(
            replace(v, value=nan, ci_lower=nan, ci_upper=nan, state="insufficient_data", reason=reason)
        )
    return out


def _check(
    attribute: str,
    group: str,
    q: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    z: float,
    tolerance: float,
    min_samples: int,
) -> CalibrationCheck:
    n, observed, expected = float(w.sum()), float((w * y).sum()), float((w * q).sum())
    nan = math.nan
    if n < min_samples or observed <= 0 or observed >= n:
        why = f"{n:.0f} labelled rows, {observed:.0f} positive: too few to check its calibration"
        return CalibrationCheck(
            attribute, group, n, observed, expected, nan, nan, nan, nan, nan, nan, nan, False, why
        )
    # observed positives given the probabilities: a sum of Bernoullis, variance sum q (1 - q)
    spread = z * math.sqrt(float((w * q * (1 - q)).sum()))
    ratio, lower, upper = observed / expected, (observed - spread) / expected, (observed + spread) / expected
    slope, slope_se, intercept = _recalibration(q, y, w)
    slope_lower, slope_upper = slope - z * slope_se, slope + z * slope_se
    reasons = []
    if not math.isfinite(slope_lower) or not math.isfinite(slope_upper):
        reasons.append("its calibration slope cannot be fitted")
    if upper < 1 - tolerance or lower > 1 + tolerance:
        reasons.append(f"observed / expected positives {ratio:.2f} ({lower:.2f}-{upper:.2f})")
    if slope_upper < 1 - 2 * tolerance or slope_lower > 1 + 2 * tolerance:
        reasons.append(f"calibration slope {slope:.2f} ({slope_lower:.2f}-{slope_upper:.2f})")
    return CalibrationCheck(
        attribute,
        group,
        n,
        observed,
        expected,
        ratio,
        lower,
        upper,
        slope,
        slope_lower,
        slope_upper,
        intercept,
        not reasons,
        "; ".join(reasons) or None,
    )


def _recalibration(q: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """The slope (with its standard error) and intercept of ``logit P(y) = a + b logit(q)``, weighted
    maximum likelihood by Newton's method (from a = 0, b = 1: the map's own claim)."""
    x = np.log(q / (1 - q))
    design = np.column_stack([np.ones_like(x), x])
    beta = np.array([0.0, 1.0])
    info = np.eye(2)
    for _ in range(25):
        p = 1 / (1 + np.exp(-(design @ beta)))
        gradient = design.T @ (w * (y - p))
        info = (design * (w * p * (1 - p))[:, None]).T @ design
        try:
            step = np.linalg.solve(info, gradient)
        except np.linalg.LinAlgError:
            return math.nan, math.nan, math.nan
        beta = beta + step
        if float(np.abs(step).max()) < 1e-10:
            break
    try:
        covariance = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        return float(beta[1]), math.nan, float(beta[0])
    return float(beta[1]), math.sqrt(max(float(covariance[1, 1]), 0.0)), float(beta[0])
