"""The configuration's schema: pydantic models, each error naming its key.

Durations are written ``90s``, ``5m``, ``24h``, ``7d``, ``800d`` or ``1w``. What a model's
``task:`` implies (columns, options, metrics) comes from :data:`monitor.tasks.TASKS`. See
``docs/configuration.md`` for every key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationInfo,
    field_validator,
    model_validator,
)

from metrics_core import DEFAULT_MIN_SAMPLES, get_metric
from monitor.core.secrets import check_url, url_secrets
from monitor.core.times import parse_duration
from monitor.tasks import TASKS, TaskName, TaskOptions

__all__ = [
    "AlertmanagerConfig",
    "AlertsConfig",
    "ColumnsConfig",
    "GroupConfig",
    "LabelColumnsConfig",
    "LabelsConfig",
    "ModelConfig",
    "NowcastConfig",
    "PanesConfig",
    "PublishConfig",
    "ServerConfig",
    "Settings",
    "SourceConfig",
    "WebhookConfig",
    "WindowConfig",
    "parse_duration",
    "store_kind",
]

Duration = Annotated[timedelta, BeforeValidator(parse_duration)]


def _spark_setting(value: Any) -> str:
    """A Spark setting as the text Spark reads: YAML's ``8`` is ``"8"``, ``true`` is ``"true"``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise ValueError(f"a Spark setting is text, a number or true/false, got {value!r}")


SparkSetting = Annotated[str, BeforeValidator(_spark_setting)]

#: The master of a spark source that names none (Spark beside fairwatch, two cores).
SPARK_DEFAULT_MASTER = "local[2]"
#: Settings every spark source's session runs with; ``conf:`` cannot change them.
SPARK_FIXED = {"spark.sql.session.timeZone": "UTC"}
# conf keys whose values are credentials (spark.hadoop.fs.s3a.secret.key, ...), masked in logs
_SECRET_SETTING = re.compile(r"(?i)(secret|password|token|credential|access\.key)")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceConfig(_Strict):
    """Where rows come from: ``kind: sql`` (SQLAlchemy URL + table or query), ``kind: files`` or
    ``kind: spark`` (a Spark table or path, counted by the cluster)."""

    kind: Literal["sql", "files", "spark", "memory", "published"]
    url: str | None = None  # sql: an SQLAlchemy URL; published: the store the publishers write to
    table: str | None = None
    schema_: str | None = Field(default=None, alias="schema")
    query: str | None = None
    path: str | None = None  # files: a path or glob, e.g. /var/log/model/predictions-*.jsonl
    format: Literal["jsonl", "csv", "parquet", "delta", "auto"] = "auto"  # delta: spark only
    timestamp_format: Literal["auto", "iso", "iso_utc", "datetime", "epoch"] = "auto"
    # memory: the name the composition root registered; published: the model name the counts were
    # published under (default: this model's)
    name: str | None = None
    master: str | None = None  # spark: the master URL (default local[2])
    remote: str | None = None  # spark: a Spark Connect URL (sc://host:15002), instead of master
    conf: dict[str, SparkSetting] = Field(default_factory=dict)  # spark: session settings
    timeout: Duration = timedelta(seconds=60)  # one read: statement, lock wait, file scan
    # sql: let the database count rows by (score, label, groups, window) when the task's statistics
    # are counts (binary); false reads every row
    aggregate: bool = True
    # sql: read rows as Arrow columns through an ADBC driver (PostgreSQL; SQLite tables); false: pandas.read_sql
    arrow: bool = True
    # published: a publisher not heard from for longer is reported stale (its panes still count)
    stale_after: Duration = timedelta(minutes=10)

    @field_validator("url")
    @classmethod
    def _unambiguous_url(cls, url: str | None) -> str | None:
        return None if url is None else check_url(url)

    @model_validator(mode="after")
    def _check_kind(self) -> SourceConfig:
        if self.kind == "sql":
            if not self.url:
                raise ValueError(
                    "a sql source needs `url` (an SQLAlchemy URL, e.g. sqlite:///predictions.db)"
                )
            if bool(self.table) == bool(self.query):
                raise ValueError("a sql source needs exactly one of `table` or `query`")
        if self.timeout <= timedelta(0):
            raise ValueError("`timeout` must be positive, e.g. 60s")
        if self.kind == "files" and not self.path:
            raise ValueError("a files source needs `path` (a file or a glob)")
        if self.kind == "published":
            if not self.url:
                raise ValueError("a published source needs `url`: the store its publishers write to")
            check_store(self.url)
        if self.stale_after <= timedelta(0):
            raise ValueError("`stale_after` must be positive, e.g. 10m")
        if self.kind == "spark":
            self._check_spark()
        else:
            if self.format == "delta":
                raise ValueError("`format: delta` is read by spark sources only")
            spark_only = [k for k in ("master", "remote", "conf") if getattr(self, k)]
            if spark_only:
                raise ValueError(f"`{spark_only[0]}` is a spark source's key (kind: spark)")
        return self

    def _check_spark(self) -> None:
        if bool(self.table) == bool(self.path):
            raise ValueError("a spark source needs exactly one of `table` or `path` (Parquet or Delta)")
        for key in ("url", "query", "schema_"):
            if getattr(self, key):
                name = key.rstrip("_")
                hint = " (write `table: db.name`)" if name == "schema" else ""
                raise ValueError(f"`{name}` is not read by a spark source{hint}")
        if self.format not in ("auto", "parquet", "delta"):
            raise ValueError(f"`format: {self.format}`: a spark source reads parquet or delta")
        if self.master and self.remote:
            raise ValueError("a spark source takes `master` or `remote` (Spark Connect), not both")
        if self.remote is not None and not self.remote.startswith("sc://"):
            raise ValueError("`remote` is a Spark Connect URL: sc://host:15002")
        for key in self.conf:
            if key in SPARK_FIXED or key in ("spark.master", "spark.remote"):
                why = "always UTC" if key in SPARK_FIXED else "set by `master` or `remote`"
                raise ValueError(f"`conf.{key}` cannot be set: {why}")

    def spark_secrets(self) -> tuple[str, ...]:
        """The credentials of a spark source: its Connect URL's, and ``conf`` values of secret keys."""
        found = list(url_secrets(self.remote))
        found += [v for k, v in self.conf.items() if _SECRET_SETTING.search(k)]
        return tuple(found)


class ColumnsConfig(_Strict):
    """Names of the log's columns. Which ones a model needs depends on its ``task``."""

    id: str = "id"
    timestamp: str = "timestamp"
    score: str | None = "score"  # binary: score; regression: the prediction; recommender: optional score
    prediction: str | None = None  # binary: a 0/1 class; multiclass: the predicted class
    label: str | None = "label"  # binary 0/1; multiclass class; regression target; recommender relevance
    model: str | None = None  # a column holding the model name, when one log holds several models
    user: str | None = None  # recommender
    item: str | None = None  # recommender
    rank: str | None = None  # recommender: 1-based position in the user's list
    cluster: str | None = None  # clustering
    features: list[str] = Field(default_factory=list)  # clustering: feature columns (silhouette, centres)
    text: str | None = None  # text: the generated completion
    # binary: each row counts as its weight (a pre-aggregated table's counts, a sampled log's inverse
    # sampling probabilities); see the model's `weights` for what the weights are
    weight: str | None = None


class LabelColumnsConfig(_Strict):
    """Columns of a label source: the prediction id, the label, and (optionally) when it arrived."""

    id: str = "id"
    label: str = "label"
    timestamp: str | None = None


class LabelsConfig(_Strict):
    """Labels that arrive later in their own table or files, joined on the prediction id.

    ``join_on`` names the prediction log's column holding the id (default: ``columns.id``);
    ``columns.id`` names the label source's.
    """

    source: SourceConfig
    join_on: str | None = None
    columns: LabelColumnsConfig = Field(default_factory=LabelColumnsConfig)


class GroupConfig(_Strict):
    attribute: str
    kind: Literal["indicator", "categorical", "intersection"]
    columns: list[str] = Field(default_factory=list)  # indicator columns, or intersection columns
    column: str | None = None  # categorical
    reference: str | list[str] = "rest"
    threshold: float = 0.5  # indicator membership: value >= threshold
    min_size: int = 0

    @model_validator(mode="after")
    def _check_kind(self) -> GroupConfig:
        if self.kind == "indicator" and not self.columns:
            raise ValueError("an indicator attribute needs `columns` (one column per group)")
        if self.kind == "categorical" and not self.column:
            raise ValueError("a categorical attribute needs `column`")
        if self.kind == "intersection" and len(self.columns) < 2:
            raise ValueError("an intersection needs `columns` with at least two categorical columns")
        if (
            self.kind == "intersection"
            and isinstance(self.reference, list)
            and len(self.reference) != len(self.columns)
        ):
            raise ValueError(
                f"an intersection's `reference` names one value per column: {len(self.columns)} column(s), "
                f"{len(self.reference)} value(s)"
            )
        return self


class WindowConfig(_Strict):
    name: str
    length: Duration

    @field_validator("length")
    @classmethod
    def _positive(cls, v: timedelta) -> timedelta:
        if v <= timedelta(0):
            raise ValueError("a window length must be positive")
        return v


class NowcastConfig(_Strict):
    """``models[].nowcast``: label-dependent metrics estimated from the scores while the labels are on
    their way (:mod:`monitor.evaluation.nowcast`, docs/nowcasting.md)."""

    enabled: bool = False
    # isotonic: a calibration fitted on the rows whose labels arrived (scores need only rank);
    # identity: the scores are calibrated probabilities already
    calibration: Literal["isotonic", "identity"] = "isotonic"
    # a group's calibration fails when observed / expected positives is surely outside 1 +- tolerance
    # (or its calibration slope outside 1 +- 2 tolerance): its estimates are insufficient_data
    tolerance: float = Field(default=0.1, gt=0, lt=1)
    # isotonic: the calibration refitted on this many resamples of the labelled rows, so that the
    # estimates' intervals include the map's own error; 0: they do not (faster, and narrower than
    # they should be unless the label window holds many thousand labelled rows)
    resamples: int = Field(default=20, ge=0, le=1000)
    # a group of a categorical attribute with this many labelled rows (of both labels) gets its own
    # recalibration of the map (logistic, on the map's logit); smaller groups, indicator attributes'
    # groups and 0: the map of every row
    group_map_rows: int = Field(default=1000, ge=0)

    @field_validator("resamples")
    @classmethod
    def _enough_resamples(cls, value: int) -> int:
        if 0 < value < 10:
            raise ValueError(f"must be 0 (no resampling) or at least 10 to measure a spread, got {value}")
        return value


class PanesConfig(_Strict):
    """Sealed panes (:mod:`monitor.reading.panes`): a counted source's kept per-pane counts, so that each
    tick reads only the parts of its windows that can still change."""

    enabled: bool = True
    size: Duration = timedelta(hours=1)  # panes are aligned to the Unix epoch (whole hours)
    # a pane is sealed once its end is older than label_delay + lateness: rows and labels final
    lateness: Duration = timedelta(minutes=10)
    recheck: Duration = timedelta(
        hours=1
    )  # kept panes' totals recounted, and each pane counted again whole, within it
    max_rows: int = Field(default=2_000_000, ge=0)  # counted combinations kept, all panes together
    # kept panes are also written here (one folder per model), so a restart does not re-read them;
    # unset: memory only. Relative to the config file.
    directory: str | None = None

    @model_validator(mode="after")
    def _check(self) -> PanesConfig:
        if self.size < timedelta(minutes=1) or timedelta(days=1) % self.size:
            raise ValueError("`size` must divide a day and be at least 1m, e.g. 1h, 15m or 1d")
        if self.lateness < timedelta(0) or self.recheck <= timedelta(0):
            raise ValueError("`lateness` must not be negative and `recheck` must be positive")
        return self


class PublishConfig(_Strict):
    """``models[].publish``: the service publishes the model's counts - every pane of its windows, sealed
    or open - to a store shared with other replicas, for one fairwatch reading ``source: {kind:
    published}`` to judge them together (:mod:`monitor.reading.publish`)."""

    # a directory (a shared volume: /shared/fairwatch, file:///shared/fairwatch; relative to the config
    # file), an object store (s3://bucket/prefix, gs://bucket/prefix) or a database (an SQLAlchemy URL:
    # postgresql+psycopg://fairwatch@postgres/fairwatch) every replica and the central reach
    url: str
    # who publishes: default the pod's name ($HOSTNAME), else the host's
    publisher: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.:-]+$")
    # also evaluate this replica's own slice (series and alerts of one pod); default: publish only
    evaluate: bool = False

    @field_validator("url")
    @classmethod
    def _a_store(cls, url: str) -> str:
        return check_store(url)


#: Store URL schemes served through ``pyarrow.fs`` (a path and ``file://`` too); any other scheme
#: names a database (an SQLAlchemy URL).
FILE_SCHEMES = frozenset({"file", "s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def store_kind(url: str) -> Literal["directory", "database"]:
    """What a store URL names: ``"directory"`` (a path, ``file://``, an object store, HDFS) or
    ``"database"`` (an SQLAlchemy URL: ``postgresql+psycopg://...``, ``sqlite:///...``)."""
    scheme = _SCHEME.match(url)
    return "directory" if scheme is None or scheme.group(1).lower() in FILE_SCHEMES else "database"


def check_store(url: str) -> str:
    """A store of published counts: a directory (a path or ``file://`` URL), an object store
    (``s3://``, ``gs://``, ``hdfs://``) or a database (an SQLAlchemy URL)."""
    if "://" in url and not _SCHEME.match(url):
        raise ValueError(
            f"{url.split('://')[0]!r} is no URL scheme: a store is a directory (a path, file:///path), "
            "an object store (s3://bucket/prefix, gs://, hdfs://) or an SQLAlchemy URL "
            "(postgresql+psycopg://user@host/db)"
        )
    return url


class WordingConfig(_Strict):
    """``models[].wording``: how incidents name the outcome and the people - "the approval rate of
    Black applicants was 40% against 59% for White" rather than "the favourable-outcome rate of
    race=Black rows"."""

    # a noun for the favourable outcome: approval (default: positive or negative prediction, as `favorable`)
    outcome: str | None = Field(default=None, min_length=1, max_length=60)
    subjects: str = Field(default="rows", min_length=1, max_length=60)  # plural: applicants


def _value_text(value: object) -> str:
    """A column value as the text it is matched by: ``1``, ``1.0`` and ``"1"`` alike."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _default_windows() -> list[WindowConfig]:
    return [WindowConfig(name="1h", length=timedelta(hours=1))]


class ModelConfig(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.:-]+$")
    task: TaskName = "binary"
    # the task's options (top-k, word-list files, ...), checked against the task's options model
    options: SerializeAsAny[TaskOptions] = Field(default_factory=dict, validate_default=True)
    source: SourceConfig
    labels: LabelsConfig | None = None
    columns: ColumnsConfig = Field(default_factory=ColumnsConfig)
    threshold: float = 0.5
    # per-group decision thresholds (a deployed mitigation, e.g. fairlearn's ThresholdOptimizer):
    # {column: {value: threshold}} - a row whose column holds the value is decided at its threshold,
    # every other row at `threshold`. One column, read by one of the model's groups
    thresholds: dict[str, dict[str, float]] = Field(default_factory=dict)

    @field_validator("thresholds", mode="before")
    @classmethod
    def _threshold_keys(cls, value: Any) -> Any:
        # YAML reads `{region: {1: 0.4}}` with an int key: values are matched by their text
        if isinstance(value, Mapping):
            return {
                column: {_value_text(k): v for k, v in by_value.items()}
                if isinstance(by_value, Mapping)
                else by_value
                for column, by_value in value.items()
            }
        return value

    # which prediction is the good outcome for the person predicted about: `positive` (a loan approved)
    # or `negative` (a comment flagged, a payment blocked). The selection family compares the rates of
    # the favourable outcome, and the incidents say "approved less often" or "flagged more often"
    favorable: Literal["positive", "negative"] = "positive"
    # plain words for incidents: what the favourable outcome is called and who is predicted about
    wording: WordingConfig = Field(default_factory=lambda: WordingConfig())
    score_range: tuple[float, float] | None = None  # scores outside are rejected rows
    # binary: round scores half up to this many decimals before counting (continuous scores: far fewer
    # combinations); the AUCs' possible rounding error is reported beside them
    score_decimals: int | None = Field(default=None, ge=0, le=9)
    # what columns.weight holds: `count` - how many identical predictions a row stands for (whole
    # numbers; the intervals are those of the expanded rows); `sampling` - inverse sampling
    # probabilities (any positive number; the intervals use each window's effective sample size)
    weights: Literal["count", "sampling"] = "count"
    groups: list[GroupConfig]
    windows: list[WindowConfig] = Field(default_factory=_default_windows)
    label_delay: Duration = timedelta(0)
    interval: Duration = timedelta(seconds=60)
    panes: PanesConfig = Field(default_factory=PanesConfig)
    nowcast: NowcastConfig = Field(default_factory=NowcastConfig)
    publish: PublishConfig | None = None  # counts published for a central fairwatch (the fleet)
    metrics: list[str] | None = None  # default: every metric the inputs allow
    fair_ranges: dict[str, tuple[float | None, float | None]] = Field(default_factory=dict)
    min_samples: int = Field(default=DEFAULT_MIN_SAMPLES, ge=1)
    max_groups: int = Field(default=200, ge=1)  # cap on exported groups per attribute

    @field_validator("options", mode="before")
    @classmethod
    def _task_options(cls, v: object, info: ValidationInfo) -> TaskOptions:
        task = info.data.get("task")
        if task is None:  # the task itself is invalid, and reported as such
            return TaskOptions()
        if type(v) is TASKS[task].options:  # already validated (model_copy, model_validate of a model)
            return v
        if not isinstance(v, Mapping):
            raise ValueError(f"options must be a mapping of option names to values, got {v!r}")
        return TASKS[task].parse_options(v)

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        return [get_metric(m).name for m in v]  # ValueError names the unknown metric

    @field_validator("fair_ranges")
    @classmethod
    def _known_ranges(
        cls, v: dict[str, tuple[float | None, float | None]]
    ) -> dict[str, tuple[float | None, float | None]]:
        out = {}
        for name, (lo, hi) in v.items():
            canonical = get_metric(name).name
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"fair range of {name}: min {lo} is above max {hi}")
            out[canonical] = (lo, hi)
        return out

    @field_validator("interval")
    @classmethod
    def _positive_interval(cls, v: timedelta) -> timedelta:
        if v <= timedelta(0):
            raise ValueError("interval must be positive")
        return v

    @model_validator(mode="after")
    def _check(self) -> ModelConfig:
        names = [w.name for w in self.windows]
        if len(set(names)) != len(names):
            raise ValueError(f"window names must be unique, got {names}")
        task = TASKS[self.task]
        missing = task.missing_columns(self.columns)
        if missing:
            raise ValueError(f"task {self.task} needs columns: {', '.join(missing)}")
        if self.metrics is not None:
            wrong = [m for m in self.metrics if get_metric(m).family not in task.families]
            if wrong:
                raise ValueError(f"metrics {wrong} do not apply to task {self.task}")
        attrs = [g.attribute for g in self.groups]
        if len(set(attrs)) != len(attrs):
            raise ValueError(f"attribute names must be unique, got {attrs}")
        if self.score_decimals is not None and (self.task != "binary" or not self.columns.score):
            raise ValueError("score_decimals rounds a binary model's score column: this model has none")
        if self.columns.weight is not None and self.task != "binary":
            raise ValueError(f"columns.weight: only a binary model weighs its rows (task {self.task})")
        if self.nowcast.enabled and (
            self.task != "binary" or not self.columns.score or not self.columns.label
        ):
            raise ValueError(
                "nowcast: estimates a binary model's label metrics from its scores: it needs both"
            )
        if self.thresholds or "favorable" in self.model_fields_set:
            self._check_decisions()
        if "weights" in self.model_fields_set and self.columns.weight is None:
            raise ValueError("weights: says what columns.weight holds, and no columns.weight is set")
        self._check_fleet()
        return self

    def _check_decisions(self) -> None:
        if self.task != "binary":
            raise ValueError(f"favorable and thresholds: a binary model's decisions (task {self.task})")
        if not self.thresholds:
            return
        if not self.columns.score:
            raise ValueError(
                "thresholds: decide a binary model's scores per group, and it has no columns.score"
            )
        if len(self.thresholds) > 1:
            raise ValueError(
                f"thresholds: one column's values, got {sorted(self.thresholds)} (a row in two of them "
                "would have two thresholds)"
            )
        (column,) = self.thresholds
        # categorical and intersection columns: an indicator column's values are membership shares
        # (a database may threshold them while counting), not groups a decision is made for
        read = {
            c for g in self.groups if g.kind != "indicator" for c in ([g.column] if g.column else g.columns)
        }
        if column not in read:
            raise ValueError(
                f"thresholds: column {column!r} is read by none of the model's categorical or intersection "
                f"groups ({', '.join(sorted(read)) or 'none'}): decide per value of a column such a group reads"
            )

    def _check_fleet(self) -> None:
        counted = ("binary", "multiclass")  # tasks whose statistics are counts (monitor.reading.plan)
        if self.publish is not None:
            if self.task not in counted:
                raise ValueError(f"publish: only counts are published, and task {self.task} reads rows")
            if self.source.kind in ("published", "memory"):
                raise ValueError(f"publish: a {self.source.kind} source has no log of its own to publish")
            if self.labels is not None:
                raise ValueError(
                    "publish: labels in their own source are not published; log them with the predictions"
                )
        if self.source.kind == "published":
            if self.task not in counted:
                raise ValueError(f"source.kind published holds counts, and task {self.task} reads rows")
            if self.labels is not None:
                raise ValueError(
                    "source.kind published: the labels come with the published counts; remove `labels`"
                )


class AlertmanagerConfig(_Strict):
    url: Annotated[str, AfterValidator(check_url)]
    timeout: Duration = timedelta(seconds=5)


class WebhookConfig(_Strict):
    url: Annotated[str, AfterValidator(check_url)]
    timeout: Duration = timedelta(seconds=5)


class AlertsConfig(_Strict):
    for_: Duration = Field(default=timedelta(minutes=5), alias="for")
    keep_firing_for: Duration = timedelta(0)
    confidence: float = Field(default=0.95, gt=0, lt=1)
    adjust: Literal["none", "bonferroni", "holm"] = "none"
    method: Literal["fixed", "anytime"] = "fixed"
    severity: str = "warning"
    # alerts raised from estimates (models[].nowcast), labelled basis="estimate": a lower severity
    # by default, and inhibited by the realised alert of the same value (deploy/alertmanager.yml)
    estimate_severity: str = Field(default="info", min_length=1)
    alertmanager: AlertmanagerConfig | None = None
    webhook: WebhookConfig | None = None
    log: bool = True
    external_url: str | None = None  # generatorURL of pushed alerts
    # where docs/runbook.md is published: every alert (pushed and from the rules) links to its section
    runbook_url: str | None = None

    @field_validator("runbook_url")
    @classmethod
    def _runbook_url(cls, value: str | None) -> str | None:
        if value is not None and (not re.match(r"^https?://[^\s#]+$", value)):
            raise ValueError(
                f"must be an http(s) URL without a #fragment (each alert adds its section's), got {value!r}"
            )
        return value


class HistoryConfig(_Strict):
    """``server.history``: the judged values the live view charts and ``/api/v1/history`` serves
    (:mod:`monitor.service.history`). ``server.history: 720`` is short for ``{size: 720}``."""

    size: int = Field(default=720, ge=1, le=100_000)  # evaluations kept per model
    # also written here (one folder per model), so that a restart keeps them and ``fairwatch
    # backfill`` fills them; unset: memory only. Relative to the config file.
    directory: str | None = None


class ServerConfig(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=9810, ge=0, le=65535)
    history: HistoryConfig = Field(default_factory=HistoryConfig)
    # TLS, basic auth, headers, rate limit: exporter-toolkit's file (monitor.http.web_config)
    web_config_file: str | None = None
    # /healthz and /readyz without credentials (a kubelet cannot send them); never rate limited
    unauthenticated_probes: bool = False
    # a failed source's error and skipped file paths on / and /api/v1/results: auto = only when
    # every request is authenticated (basic auth or verified client certificates); always in the log
    error_details: Literal["auto", "shown", "hidden"] = "auto"

    @field_validator("history", mode="before")
    @classmethod
    def _history_size(cls, value: Any) -> Any:
        # `history: 720`, the form before `directory` existed: the size
        return {"size": value} if isinstance(value, int) and not isinstance(value, bool) else value


class Settings(_Strict):
    models: list[ModelConfig] = Field(min_length=1)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)

    def secrets(self) -> tuple[str, ...]:
        """Every credential the config's URLs hold (sources, label sources, alert receivers), for masking."""
        urls = [m.source.url for m in self.models]
        urls += [m.labels.source.url for m in self.models if m.labels is not None]
        urls += [sink.url for sink in (self.alerts.alertmanager, self.alerts.webhook) if sink is not None]
        urls += [m.publish.url for m in self.models if m.publish is not None]
        found = [s for url in urls for s in url_secrets(url)]
        sources = [m.source for m in self.models] + [m.labels.source for m in self.models if m.labels]
        found += [s for source in sources for s in source.spark_secrets()]
        return tuple(dict.fromkeys(found))

    @model_validator(mode="after")
    def _unique_models(self) -> Settings:
        names = [m.name for m in self.models]
        if len(set(names)) != len(names):
            raise ValueError(f"model names must be unique, got {names}")
        self._one_spark()
        return self

    def _one_spark(self) -> None:
        """pyspark runs classic Spark or Spark Connect in a process, not both, and a classic
        Spark context has one master: the spark sources must agree."""
        sparks = [(f"models[{i}].source", m.source) for i, m in enumerate(self.models)]
        sparks += [
            (f"models[{i}].labels.source", m.labels.source) for i, m in enumerate(self.models) if m.labels
        ]
        sparks = [(where, src) for where, src in sparks if src.kind == "spark"]
        if not sparks:
            return
        first, model = sparks[0]
        for where, src in sparks[1:]:
            if bool(src.remote) != bool(model.remote):
                raise ValueError(
                    f"{where}: spark sources of one config use `remote` (Spark Connect) all or none "
                    f"({first} {'does' if model.remote else 'does not'})"
                )
            master = src.master or SPARK_DEFAULT_MASTER
            if not src.remote and master != (model.master or SPARK_DEFAULT_MASTER):
                raise ValueError(
                    f"{where}.master: {master} differs from {first}'s "
                    f"{model.master or SPARK_DEFAULT_MASTER} (a process runs one Spark context)"
                )
