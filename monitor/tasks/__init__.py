"""The task table: every ``task:`` a model can have, and what follows from it, in one place.

:data:`TASKS` maps a task name to its :class:`~monitor.tasks.base.Task` (one module per
task beside this one): the columns it needs and reads, its options model, its row cleaner,
the registry families of its metrics and the ``metrics_core`` evaluator of its windows.
Config validation (:mod:`monitor.config`), evaluation (:mod:`monitor.evaluation.evaluator`) and the
dashboard (:mod:`monitor.outputs.dashboards`) all read it, and :func:`metrics_for` is the one place
that decides which metrics a model computes - so the dashboard draws exactly the metrics the
evaluator exports.

A new task: a module here with its options, cleaner and ``TASK``, one line in :data:`TASKS`,
and its name in :data:`~monitor.tasks.base.TaskName`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from metrics_core import REGISTRY, MetricSpec, get_metric
from metrics_core.binary import ROUNDING_BOUNDS
from monitor.tasks import binary, clustering, multiclass, recommender, regression, text
from monitor.tasks.base import ModelView, Rows, Task, TaskName, TaskOptions, WindowRequest

__all__ = ["TASKS", "Rows", "Task", "TaskName", "TaskOptions", "WindowRequest", "metrics_for"]

TASKS: Mapping[str, Task] = MappingProxyType(
    {
        "binary": binary.TASK,
        "multiclass": multiclass.TASK,
        "regression": regression.TASK,
        "recommender": recommender.TASK,
        "clustering": clustering.TASK,
        "text": text.TASK,
    }
)


def metrics_for(model: ModelView) -> list[MetricSpec]:
    """The metrics ``model`` computes: its ``metrics:`` (with the group metrics a configured summary
    ``needs``), else its task's, minus those it has no data for.

    A metric is skipped when it needs an input that none of the model's named columns
    feeds (no label column: no label metrics; no score: no ranking metrics). The evaluator
    calls this with the columns the window's log actually has (an optional column named by
    default may be absent); the dashboard with the configured ones.

    >>> from monitor.config import settings_from_dict
    >>> group = {"attribute": "identity", "kind": "indicator", "columns": ["female"]}
    >>> config = {"name": "m", "source": {"kind": "memory", "name": "m"}, "groups": [group]}
    >>> unlabeled = settings_from_dict({"models": [config | {"columns": {"label": None}}]}, environ={})
    >>> names = [spec.name for spec in metrics_for(unlabeled.models[0])]
    >>> "disparate_impact" in names, "equal_opportunity_difference" in names, "regression_average_score_difference" in names
    (True, False, False)
    """
    task = TASKS[model.task]
    if model.metrics:
        chosen = {spec.name: spec for spec in map(get_metric, model.metrics)}
        # a model-level summary (a power mean) is computed from group metrics: they are reported too
        for spec in list(chosen.values()):
            chosen.update({name: get_metric(name) for name in spec.needs if name not in chosen})
        specs = list(chosen.values())
    else:
        specs = [s for s in REGISTRY.values() if s.family in task.families]
        if model.score_decimals is None:  # the AUCs' rounding bounds: only where scores are rounded
            specs = [s for s in specs if s.name not in ROUNDING_BOUNDS]
    return [s for s in specs if task.can_compute(s.name, model.columns)]
