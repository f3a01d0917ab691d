"""fairwatch's metric library: exact, fast per-group bias metrics with intervals.

Pure functions over numpy arrays; no I/O, no logging, no global state. The main entry is
:func:`evaluate`, which computes every binary metric for every group of a window from
one :class:`ScoreTable` (the window's sufficient statistics, built with one sort). The
other task families are subpackages with the same shape (``metrics_core.multiclass``,
``regression``, ``recommender``, ``clustering``, ``text``: ``evaluate``, ``SPECS``, public
metric functions). ``docs/architecture.md`` draws the layers.

>>> import metrics_core as mc
>>> race = mc.categorical_attribute("race", ["a", "b", "a", "b", "a", "b"], reference="a")
>>> table = mc.table_for([0.9, 0.8, 0.2, 0.7, 0.6, 0.1], [1, 1, 0, 0, 1, 0], [race])
>>> report = mc.evaluate(table, race.comparisons, metrics=["disparate_impact"], min_samples=1)
>>> v = report.get("disparate_impact", "b")
>>> round(v.value, 3), v.reference
(1.0, 'a')
"""

from metrics_core.binary import (
    RATES,
    bnsp_auc,
    bpsn_auc,
    coefficient_of_variation,
    evaluate,
    generalized_entropy_index,
    negative_aeg,
    overall_auc,
    positive_aeg,
    power_mean,
    subgroup_auc,
    theil_index,
)
from metrics_core.core.results import Comparison, MetricValue, ModelValue, Report
from metrics_core.core.spec import FairRange, MetricSpec
from metrics_core.engine.adjust import Adjustment
from metrics_core.registry import REGISTRY, get_metric, metric_names, registry_as_dicts, resolve_fair_range
from metrics_core.stats.bootstrap import poisson_bootstrap_interval
from metrics_core.stats.contrasts import Method
from metrics_core.stats.intervals import (
    bonferroni_level,
    katz_log_interval,
    newcombe_interval,
    normal_interval,
    wilson_interval,
)
from metrics_core.stats.judge import DEFAULT_MIN_SAMPLES, STATES, judge
from metrics_core.stats.power import Plan, detectable, rows_needed
from metrics_core.window.groups import (
    REST,
    Attribute,
    categorical_attribute,
    category_name,
    indicator_attribute,
    intersection_attribute,
    table_for,
)
from metrics_core.window.tables import LABELS, GroupCounts, ScoreTable, merge_tables

__all__ = [
    "DEFAULT_MIN_SAMPLES",
    "LABELS",
    "RATES",
    "REGISTRY",
    "REST",
    "STATES",
    "Adjustment",
    "Attribute",
    "Comparison",
    "FairRange",
    "GroupCounts",
    "Method",
    "MetricSpec",
    "MetricValue",
    "ModelValue",
    "Plan",
    "Report",
    "ScoreTable",
    "bnsp_auc",
    "bonferroni_level",
    "bpsn_auc",
    "categorical_attribute",
    "category_name",
    "coefficient_of_variation",
    "detectable",
    "evaluate",
    "generalized_entropy_index",
    "get_metric",
    "indicator_attribute",
    "intersection_attribute",
    "judge",
    "katz_log_interval",
    "merge_tables",
    "metric_names",
    "negative_aeg",
    "newcombe_interval",
    "normal_interval",
    "overall_auc",
    "poisson_bootstrap_interval",
    "positive_aeg",
    "power_mean",
    "registry_as_dicts",
    "resolve_fair_range",
    "rows_needed",
    "subgroup_auc",
    "table_for",
    "theil_index",
    "wilson_interval",
]
