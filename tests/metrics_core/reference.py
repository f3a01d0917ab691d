"""Slow, obviously correct references for the metrics_core tests.

Nothing here imports the code under test except to *build its inputs* (``build`` makes the
attributes and the table that :func:`metrics_core.evaluate` reads). Every expected value is
computed from the raw rows with boolean masks, plain loops, ``sklearn.metrics.roc_auc_score``
or ``scipy.stats.mannwhitneyu``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.stats import mannwhitneyu
from sklearn.metrics import roc_auc_score

import metrics_core as mc

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

NAN = math.nan


@dataclass
class Window:
    """Raw rows of one window: scores, labels (NaN = not labeled yet) and identity columns."""

    score: FloatArray
    y: FloatArray
    indicators: dict[str, FloatArray]
    race: NDArray[np.object_]
    sex: NDArray[np.object_]

    @property
    def n(self) -> int:
        return int(self.score.shape[0])

    def take(self, rows: NDArray[np.int64]) -> Window:
        return Window(
            self.score[rows],
            self.y[rows],
            {k: v[rows] for k, v in self.indicators.items()},
            self.race[rows],
            self.sex[rows],
        )


def make_window(seed: int, n: int = 700, *, decimals: int = 1, unlabeled: float = 0.0) -> Window:
    """Seeded random window with HEAVY ties (scores rounded to ``decimals``).

    Indicator columns overlap, hold annotator fractions (0, 0.2, 0.5, 0.8, 1) and NaN;
    ``race`` and ``sex`` have missing values (None). ``unlabeled`` is the share of rows
    whose label is NaN.
    """
    rng = np.random.default_rng(seed)
    fractions = np.array([0.0, 0.2, 0.5, 0.8, 1.0, NAN])

    def indicator(p_member: float) -> FloatArray:
        member = rng.random(n) < p_member
        v = np.where(member, rng.choice([0.5, 0.8, 1.0], size=n), rng.choice(fractions[[0, 1, 5]], size=n))
        return v.astype(np.float64)

    male = indicator(0.35)
    female = indicator(0.35)
    muslim = indicator(0.08)
    rare = indicator(0.015)  # a few rows: often one class only
    race = rng.choice(np.array(["a", "b", "c", "d"], dtype=object), p=[0.45, 0.3, 0.2, 0.05], size=n)
    race[rng.random(n) < 0.05] = None
    sex = rng.choice(np.array(["f", "m"], dtype=object), size=n)
    sex[rng.random(n) < 0.04] = None
    shift = 0.08 * (muslim >= 0.5) - 0.05 * (race == "b") + 0.04 * (sex == "m")
    y = (rng.random(n) < 0.3 + 0.6 * shift).astype(np.float64)
    raw = np.clip(rng.normal(0.35 + 0.3 * y + shift, 0.2), 0.0, 1.0)
    score = np.round(raw, decimals)
    y[rng.random(n) < unlabeled] = NAN
    indicators = {"male": male, "female": female, "muslim": muslim, "rare": rare}
    return Window(score, y, indicators, race, sex)


@dataclass
class Case:
    """One comparison with its membership masks, written independently of metrics_core."""

    attribute: str
    group: str
    g: BoolArray
    r: BoolArray
    reference: str = "background"


@dataclass
class Built:
    table: mc.ScoreTable
    comparisons: list[mc.Comparison]
    cases: list[Case] = field(default_factory=list)


def _present(values: NDArray[np.object_]) -> BoolArray:
    return np.array([v is not None for v in values], dtype=bool)


def cases_for(w: Window) -> list[Case]:
    """Every comparison of :func:`build`, with G and R masks from the raw columns."""
    cases = []
    for name, col in w.indicators.items():
        g = np.nan_to_num(col, nan=0.0) >= 0.5
        cases.append(Case("identity", name, g, ~g))
    has_race = _present(w.race)
    for value in sorted({v for v in w.race if v is not None}):
        g = w.race == value
        if value != "a":
            cases.append(Case("race", value, g, w.race == "a", "a"))
        cases.append(Case("race_vs_rest", value, g, has_race & ~g, "rest"))
    both = has_race & _present(w.sex)
    combos = sorted({(r, s) for r, s, ok in zip(w.race, w.sex, both, strict=True) if ok})
    for race, sex in combos:
        g = both & (w.race == race) & (w.sex == sex)
        cases.append(Case("race&sex", f"{race}&{sex}", g, both & ~g, "rest"))
        if (race, sex) != ("a", "f"):
            named = both & (w.race == "a") & (w.sex == "f")
            cases.append(Case("race|sex", f"{race}|{sex}", g, named, "a|f"))
    return cases


def build(w: Window, *, sample_weight: FloatArray | None = None) -> Built:
    """The table and comparisons metrics_core evaluates for the cases of :func:`cases_for`."""
    attributes = [
        mc.indicator_attribute("identity", w.indicators),
        mc.categorical_attribute("race", w.race, reference="a"),
        mc.categorical_attribute("race_vs_rest", w.race, reference="rest"),
        mc.intersection_attribute({"race": w.race, "sex": w.sex}),
        mc.intersection_attribute({"race": w.race, "sex": w.sex}, reference=("a", "f"), separator="|"),
    ]
    table = mc.table_for(w.score, w.y, attributes, sample_weight=sample_weight)
    comparisons = [c for a in attributes for c in a.comparisons]
    return Built(table, comparisons, cases_for(w))


# --- ranking references ---------------------------------------------------------------


def sk_auc(pos: FloatArray, neg: FloatArray) -> float:
    """roc_auc_score of positives over negatives; NaN when a side is empty (not called then)."""
    if pos.size == 0 or neg.size == 0:
        return NAN
    y = np.r_[np.ones(pos.size), np.zeros(neg.size)]
    return float(roc_auc_score(y, np.r_[pos, neg]))


def normalised_mwu(data1: FloatArray, data2: FloatArray) -> float:
    """Seed 000's ``normalized_mwu``: U of the first sample over n1 n2 (NaN if one is empty)."""
    n1, n2 = data1.size, data2.size
    if n1 == 0 or n2 == 0:
        return NAN
    u = mannwhitneyu(data1, data2, alternative="less").statistic
    return float(u / (n1 * n2))


def seed000(score: FloatArray, y: FloatArray, g: BoolArray, r: BoolArray) -> dict[str, float]:
    """The seed-000 metrics of group ``g`` against background ``r`` on the seed's row subsets."""
    pos, neg = y == 1, y == 0  # NaN labels are neither
    subgroup = g & (pos | neg)
    bpsn = (g & neg) | (r & pos)
    bnsp = (g & pos) | (r & neg)

    def auc(rows: BoolArray) -> float:
        yy, ss = y[rows], score[rows]
        if not ((yy == 1).any() and (yy == 0).any()):
            return NAN
        return float(roc_auc_score(yy, ss))

    return {
        "subgroup_auc": auc(subgroup),
        "bpsn_auc": auc(bpsn),
        "bnsp_auc": auc(bnsp),
        "negative_aeg": 0.5 - normalised_mwu(score[r & neg], score[g & neg]),
        "positive_aeg": 0.5 - normalised_mwu(score[r & pos], score[g & pos]),
    }


def delong_slow(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    """AUC of X over Y and the DeLong (1988) variance from the explicit n_x-by-n_y kernel.

    psi(x, y) = 1 if x > y, 1/2 if x == y, else 0;
    V10(x_i) = mean_j psi(x_i, y_j), V01(y_j) = mean_i psi(x_i, y_j);
    Var = S10 / n_x + S01 / n_y with S10, S01 the sample variances (ddof = 1).
    """
    kernel = (x[:, None] > y[None, :]) + 0.5 * (x[:, None] == y[None, :])
    auc = float(kernel.mean())
    v10 = kernel.mean(axis=1)
    v01 = kernel.mean(axis=0)
    s10 = float(((v10 - auc) ** 2).sum()) / (x.size - 1)
    s01 = float(((v01 - auc) ** 2).sum()) / (y.size - 1)
    return auc, s10 / x.size + s01 / y.size


# --- classification references ----------------------------------------------------------


def confusion(score: FloatArray, y: FloatArray, mask: BoolArray, threshold: float) -> dict[str, float]:
    """Plain counts and rates of one side; NaN for an empty denominator."""
    yhat = score >= threshold
    pos, neg = mask & (y == 1), mask & (y == 0)
    labeled = pos | neg

    def ratio(num: int, den: int) -> float:
        return num / den if den > 0 else NAN

    n = int(mask.sum())
    sel = int((mask & yhat).sum())
    tp, fn = int((pos & yhat).sum()), int((pos & ~yhat).sum())
    fp, tn = int((neg & yhat).sum()), int((neg & ~yhat).sum())
    return {
        "n": n,
        "selected": sel,
        "selection_rate": ratio(sel, n),
        "true_positive_rate": ratio(tp, tp + fn),
        "false_positive_rate": ratio(fp, fp + tn),
        "false_negative_rate": ratio(fn, tp + fn),
        "positive_predictive_value": ratio(tp, tp + fp),
        "accuracy": ratio(tp + tn, int(labeled.sum())),
        "mean_score": float(score[mask].mean()) if n else NAN,
    }


def _div(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b) or b == 0:
        return NAN
    return a / b


def binary_reference(
    score: FloatArray, y: FloatArray, g: BoolArray, r: BoolArray, *, threshold: float = 0.5
) -> dict[str, float]:
    """Every classification metric of metrics.md section 2, G against R, from masks."""
    G = confusion(score, y, g, threshold)
    R = confusion(score, y, r, threshold)
    out = {name: G[name] for name in ("selection_rate", "true_positive_rate", "false_positive_rate")}
    out |= {name: G[name] for name in ("false_negative_rate", "positive_predictive_value", "accuracy")}
    out["statistical_parity_difference"] = G["selection_rate"] - R["selection_rate"]
    di = _div(G["selection_rate"], R["selection_rate"])
    out["disparate_impact"] = di
    out["four_fifths_ratio"] = NAN if math.isnan(di) else 0.0 if di == 0 else min(di, 1 / di)
    pg, pr, ng, nr = G["selection_rate"], R["selection_rate"], G["n"], R["n"]
    if ng + nr - 2 > 0 and not (math.isnan(pg) or math.isnan(pr)):
        pooled_var = ((ng - 1) * pg * (1 - pg) + (nr - 1) * pr * (1 - pr)) / (ng + nr - 2)
        out["standardized_selection_rate_difference"] = _div(pg - pr, math.sqrt(pooled_var))
        p = (G["selected"] + R["selected"]) / (ng + nr)
        out["two_sd_rule"] = _div(pg - pr, math.sqrt(p * (1 - p) * (1 / ng + 1 / nr)))
    else:
        out["standardized_selection_rate_difference"] = out["two_sd_rule"] = NAN
    d_tpr = G["true_positive_rate"] - R["true_positive_rate"]
    d_fpr = G["false_positive_rate"] - R["false_positive_rate"]
    out["equal_opportunity_difference"] = d_tpr
    out["false_positive_rate_difference"] = d_fpr
    out["false_negative_rate_difference"] = G["false_negative_rate"] - R["false_negative_rate"]
    out["average_odds_difference"] = (d_tpr + d_fpr) / 2
    out["average_abs_odds_difference"] = (abs(d_tpr) + abs(d_fpr)) / 2
    out["equalized_odds_difference"] = NAN if math.isnan(d_tpr + d_fpr) else max(abs(d_tpr), abs(d_fpr))
    out["accuracy_difference"] = G["accuracy"] - R["accuracy"]
    out["precision_ratio"] = _div(G["positive_predictive_value"], R["positive_predictive_value"])
    out["recall_ratio"] = _div(G["true_positive_rate"], R["true_positive_rate"])
    window_sd = float(np.std(score, ddof=1)) if score.size > 1 else NAN
    out["standardized_mean_difference"] = _div(G["mean_score"] - R["mean_score"], window_sd)
    return out


def benefit_indices(score: FloatArray, y: FloatArray, threshold: float = 0.5) -> dict[str, float]:
    """Theil, GE(2) and CV from b_i = ŷ_i - y_i + 1 over the labeled rows, row by row."""
    labeled = ~np.isnan(y)
    yhat = (score[labeled] >= threshold).astype(float)
    b = yhat - y[labeled] + 1
    mu = b.mean()
    ratio = b / mu
    theil = sum(v * math.log(v) for v in ratio if v > 0) / b.size
    ge2 = float(np.mean(ratio**2 - 1) / 2)
    return {
        "theil_index": theil,
        "generalized_entropy_index": ge2,
        "coefficient_of_variation": float(np.std(b) / mu),
    }


def same(a: float, b: float, tol: float = 1e-12) -> bool:
    """Equal within ``tol`` or both NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol


# --- interval references: root finding with scipy, likelihoods maximised numerically ---------


def auc_score_interval_slow(
    auc: float, n_x: float, n_y: float, level: float = 0.95, variance: float | None = None
) -> tuple[float, float]:
    """Newcombe's (2006) method 5 for an AUC, by scipy's brentq on each side of the estimate; given
    the DeLong ``variance``, its hull with the Wald interval on the logit scale (scipy's expit/logit)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    z = norm.ppf(0.5 + level / 2)
    n_star = (n_x + n_y) / 2

    def excess(theta: float) -> float:
        v = theta * (1 - theta) * (1 + (n_star - 1) * ((1 - theta) / (2 - theta) + theta / (1 + theta)))
        return (auc - theta) ** 2 - z * z * v / (n_x * n_y)

    # just inside the estimate the excess is negative (the variance is positive there): the brackets
    lo = 0.0 if excess(0.0) <= 0 else brentq(excess, 0.0, auc - 1e-9, xtol=1e-14)
    hi = 1.0 if excess(1.0) <= 0 else brentq(excess, auc + 1e-9, 1.0, xtol=1e-14)
    if variance is not None and 0 < auc < 1:
        from scipy.special import expit, logit

        half = z * math.sqrt(variance) / (auc * (1 - auc))
        lo, hi = min(lo, float(expit(logit(auc) - half))), max(hi, float(expit(logit(auc) + half)))
    return lo, hi


def constrained_mle_slow(
    k1: int, n1: int, k2: int, n2: int, contrast: str, theta: float
) -> tuple[float, float]:
    """``(p1, p2)`` maximising the two binomial likelihoods under ``p1 - p2 = theta`` or ``p1 = theta p2``."""
    from scipy.optimize import minimize_scalar

    def nll(p2: float) -> float:
        p1 = p2 + theta if contrast == "difference" else theta * p2
        out = 0.0
        for k, n, p in ((k1, n1, p1), (k2, n2, p2)):
            p = min(max(p, 1e-300), 1 - 1e-16)
            out -= k * math.log(p) + (n - k) * math.log1p(-p)
        return out

    if contrast == "difference":
        lo, hi = max(0.0, -theta), min(1.0, 1.0 - theta)
    else:
        lo, hi = 0.0, min(1.0, 1.0 / theta)
    p2 = minimize_scalar(nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-13}).x
    return (p2 + theta if contrast == "difference" else theta * p2), p2


def score_interval_slow(
    k1: int, n1: int, k2: int, n2: int, contrast: str, *, level: float = 0.95, skew: bool = True
) -> tuple[float, float]:
    """The (skewness-corrected) score interval from its definition: numeric MLEs, brentq on each bound."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    z = norm.ppf(0.5 + level / 2)
    big_n = n1 + n2

    def score(theta: float) -> float:
        p1, p2 = constrained_mle_slow(k1, n1, k2, n2, contrast, theta)
        c = 1.0 if contrast == "difference" else theta
        s = k1 / n1 - (k2 / n2 + theta if contrast == "difference" else theta * k2 / n2)
        v = (p1 * (1 - p1) / n1 + c * c * p2 * (1 - p2) / n2) * big_n / (big_n - 1)
        out = s / math.sqrt(v)
        if skew:
            mu3 = p1 * (1 - p1) * (1 - 2 * p1) / n1**2 - c**3 * p2 * (1 - p2) * (1 - 2 * p2) / n2**2
            out -= mu3 / (6 * v**1.5) * (z * z - 1)
        return out

    estimate = k1 / n1 - k2 / n2 if contrast == "difference" else (k1 / n1) / (k2 / n2)
    if contrast == "difference":
        lo = brentq(lambda t: score(t) - z, -1 + 1e-9, estimate, xtol=1e-12)
        hi = brentq(lambda t: score(t) + z, estimate, 1 - 1e-9, xtol=1e-12)
    else:
        lo = brentq(lambda t: score(math.exp(t)) - z, -20, math.log(estimate), xtol=1e-12)
        hi = brentq(lambda t: score(math.exp(t)) + z, math.log(estimate), 20, xtol=1e-12)
        lo, hi = math.exp(lo), math.exp(hi)
    return lo, hi
