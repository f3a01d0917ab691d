"""The HTTP surface over real sockets: content negotiation, health, JSON results, landing page, errors."""

from __future__ import annotations

import gzip
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from email.message import Message
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

from monitor.core.errors import ConfigError
from monitor.http import MetricsEndpoint, ServerHandle, make_app, redact, serve
from monitor.outputs.prometheus.collector import SnapshotCollector
from monitor.service.snapshot import Snapshot
from tests.monitor.test_exporter import (
    T0,
    make_snapshot,
    model_evaluation,
    model_status,
    promtool_check_metrics,
    rich_snapshot,
    rich_values,
    window_result,
)

# Loopback only: never through an HTTP(S)_PROXY from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class Response:
    status: int
    headers: Message
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def _registry() -> CollectorRegistry:
    # Without this flag prometheus_client ignores ``name[]`` for collectors whose describe() is empty.
    return CollectorRegistry(support_collectors_without_names=True)


@dataclass
class Service:
    """A served app whose snapshot and readiness the test changes between requests."""

    server: ServerHandle
    snapshot: Snapshot
    ready: bool = False
    registry: CollectorRegistry = field(default_factory=_registry)

    def get(self, path: str, *, method: str = "GET", headers: dict[str, str] | None = None) -> Response:
        request = urllib.request.Request(self.server.url + path, method=method, headers=headers or {})
        try:
            with _OPENER.open(request, timeout=10) as answer:
                return Response(answer.status, answer.headers, answer.read())
        except urllib.error.HTTPError as error:
            return Response(error.code, error.headers, error.read())


def _start(snapshot: Snapshot, *, cache_metrics: bool = True) -> Service:
    service = Service(server=None, snapshot=snapshot)  # type: ignore[arg-type]
    collector = SnapshotCollector(lambda: service.snapshot, version="1.2.3")
    service.registry.register(collector)
    get_snapshot = lambda: service.snapshot  # noqa: E731
    metrics = MetricsEndpoint(collector, get_snapshot, registry=service.registry) if cache_metrics else None
    app = make_app(
        registry=service.registry, get_snapshot=get_snapshot, ready=lambda: service.ready, metrics=metrics
    )
    service.server = serve(app, "127.0.0.1", 0)
    return service


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[bool, Service]]:
    """One server per caching mode for the module; tests reset their state (a stop costs a poll)."""
    started = {cache: _start(rich_snapshot(), cache_metrics=cache) for cache in (True, False)}
    try:
        yield started
    finally:
        for service in started.values():
            service.server.shutdown()


def _fresh(service: Service) -> Service:
    service.snapshot = rich_snapshot()
    service.ready = False
    return service


@pytest.fixture(params=[True, False], ids=["cached", "uncached"])
def service(servers: dict[bool, Service], request: pytest.FixtureRequest) -> Service:
    return _fresh(servers[request.param])


@pytest.fixture
def cached_service(servers: dict[bool, Service]) -> Service:
    return _fresh(servers[True])


# --------------------------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------------------------


def test_serve_reports_the_port_it_got(cached_service: Service) -> None:
    server = cached_service.server
    assert server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}"


def test_shutdown_closes_the_socket() -> None:
    service = _start(rich_snapshot())
    url = service.server.url
    service.server.shutdown()
    with pytest.raises(urllib.error.URLError):
        _OPENER.open(url + "/healthz", timeout=5)


def test_a_busy_port_is_a_config_error_naming_it(cached_service: Service) -> None:
    """The bind fails inside the server's constructor: the error is the port's, not a teardown's."""
    port = int(cached_service.server.url.rsplit(":", 1)[1])
    with pytest.raises(ConfigError, match=f"server: cannot listen on 127.0.0.1:{port}"):
        serve(
            make_app(registry=CollectorRegistry(), get_snapshot=rich_snapshot, ready=lambda: True),
            "127.0.0.1",
            port,
        )


# --------------------------------------------------------------------------------------------------------
# /metrics
# --------------------------------------------------------------------------------------------------------


def test_metrics_text_format(service: Service) -> None:
    answer = service.get("/metrics")
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in parse_text(answer.body.decode())}
    assert families["fairwatch_disparate_impact"].type == "gauge"
    assert families["fairwatch_evaluations"].type == "counter"


def test_metrics_openmetrics_by_accept_header(service: Service) -> None:
    answer = service.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("application/openmetrics-text")
    assert answer.body.endswith(b"# EOF\n")
    families = {f.name: f for f in parse_openmetrics(answer.body.decode())}  # type: ignore[no-untyped-call]
    assert families["fairwatch_build"].type == "info"
    assert families["fairwatch_rows_rejected"].type == "counter"


def test_metrics_gzip_by_accept_encoding(service: Service) -> None:
    plain = service.get("/metrics")
    zipped = service.get("/metrics", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert "Content-Encoding" not in plain.headers
    assert gzip.decompress(zipped.body) == plain.body


def test_repeated_scrapes_are_identical(service: Service) -> None:
    assert service.get("/metrics").body == service.get("/metrics").body


def test_new_snapshot_is_served_not_the_cached_one(service: Service) -> None:
    assert b'group="white"' in service.get("/metrics").body
    service.snapshot = rich_snapshot(groups=[v for v in rich_values() if v.group != "white"], alerts=())
    for headers in ({}, {"Accept-Encoding": "gzip"}):
        body = service.get("/metrics", headers=headers).body
        text = gzip.decompress(body) if headers else body
        assert b'group="white"' not in text
        assert b'group="black"' in text


def test_metrics_name_filter_passes_through(service: Service) -> None:
    body = service.get("/metrics?name[]=fairwatch_source_up").body.decode()
    assert "fairwatch_source_up{" in body
    assert "fairwatch_disparate_impact" not in body


class _CountingCollector(SnapshotCollector):
    """Counts renders: the endpoint asks for the service's families once per body it renders."""

    renders = 0

    def service_families(self, snapshot: Snapshot) -> list[Any]:
        self.renders += 1
        return super().service_families(snapshot)


def _endpoint(current: list[Snapshot]) -> tuple[MetricsEndpoint, _CountingCollector, CollectorRegistry]:
    registry = _registry()
    collector = _CountingCollector(lambda: current[0], version="1.2.3")
    registry.register(collector)
    return MetricsEndpoint(collector, lambda: current[0], registry=registry), collector, registry


def _call(endpoint: MetricsEndpoint, **environ: str) -> tuple[dict[str, str], bytes]:
    captured: dict[str, str] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        captured.update(headers, status=status)

    body = b"".join(endpoint({"REQUEST_METHOD": "GET", **environ}, start_response))  # type: ignore[arg-type]
    return captured, body


OPENMETRICS = {"HTTP_ACCEPT": "application/openmetrics-text;version=1.0.0"}


def test_published_snapshots_are_rendered_at_publish_not_at_scrape() -> None:
    from prometheus_client import generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

    current = [rich_snapshot()]
    endpoint, collector, registry = _endpoint(current)
    variants = [
        {},
        {"HTTP_ACCEPT_ENCODING": "gzip"},
        OPENMETRICS,
        {**OPENMETRICS, "HTTP_ACCEPT_ENCODING": "gzip"},
    ]
    for environ in variants:  # the first scrape of each format renders (nothing was published yet)
        _call(endpoint, **environ)
    assert collector.renders == 2  # the gzip'd answers compress the same format's text

    current[0] = rich_snapshot(groups=[v for v in rich_values() if v.group != "white"], alerts=())
    endpoint.publish(current[0])
    assert collector.renders == 4  # every format asked for so far, rendered once each
    answers = [_call(endpoint, **environ) for environ in variants]
    assert collector.renders == 4  # no scrape rendered

    # the bytes are prometheus_client's own rendering of the same snapshot
    (plain_headers, plain), (zipped_headers, zipped), (om_headers, om), (_, om_zipped) = answers
    assert plain == generate_latest(registry) and b'group="white"' not in plain
    assert om == generate_openmetrics(registry)
    assert gzip.decompress(zipped) == plain and gzip.decompress(om_zipped) == om
    assert zipped_headers["Content-Encoding"] == "gzip" and "Content-Encoding" not in plain_headers
    assert plain_headers["Content-Length"] == str(len(plain))
    assert om_headers["Content-Type"].startswith("application/openmetrics-text")


def _models_snapshot(evaluations: dict[str, Any]) -> Snapshot:
    return make_snapshot(*(model_status(name, e) for name, e in evaluations.items()))


def _evaluation(name: str, shift: float = 0.0) -> Any:
    values = [replace(v, value=v.value + shift) for v in rich_values()]
    return model_evaluation(name, window_result("24h", values, []))


def test_one_models_evaluation_renders_only_that_models_families(monkeypatch: pytest.MonkeyPatch) -> None:
    """A service of many models: a publish encodes the families of the model just evaluated, and
    the assembled body is byte for byte prometheus_client's rendering of every model's families."""
    from prometheus_client import generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

    import monitor.http.metrics as metrics

    evaluations = {f"model-{i}": _evaluation(f"model-{i}") for i in range(5)}
    current = [_models_snapshot(evaluations)]
    endpoint, _, registry = _endpoint(current)
    encoded: list[str] = []  # the model label of every family encoded alone
    blocks = metrics._blocks

    def counting(part: Any, encode: Any) -> Any:
        encoded.extend({s.labels.get("model", "") for f in part for s in f.samples} or {""})
        return blocks(part, encode)

    monkeypatch.setattr(metrics, "_blocks", counting)
    _call(endpoint), _call(endpoint, **OPENMETRICS)
    assert sorted(set(encoded)) == ["", *sorted(evaluations)]  # first render: every model (+ alerts)

    encoded.clear()
    evaluations["model-3"] = _evaluation("model-3", shift=0.01)
    current[0] = _models_snapshot(evaluations)
    endpoint.publish(current[0])
    assert set(encoded) == {"model-3"}  # in both formats, and nothing else
    (_, plain), (_, om) = _call(endpoint), _call(endpoint, **OPENMETRICS)
    assert set(encoded) == {"model-3"}
    assert plain == generate_latest(registry) and om == generate_openmetrics(registry)
    assert plain.count(b"# TYPE fairwatch_selection_rate gauge") == 1  # one header per family
    per_model = sum(v.metric == "selection_rate" for v in rich_values())
    assert plain.count(b"fairwatch_selection_rate{") == 5 * per_model > 0
    checked = promtool_check_metrics(plain)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    del evaluations["model-0"]  # a reload removed a model: its series go, its cached text too
    current[0] = _models_snapshot(evaluations)
    endpoint.publish(current[0])
    _, plain = _call(endpoint)
    assert b'model="model-0"' not in plain and plain == generate_latest(registry)
    assert len(endpoint._part_blocks["text/plain; version=0.0.4; charset=utf-8"]) == len(evaluations) + 1


def test_a_publish_overtaken_by_a_newer_snapshot_renders_nothing() -> None:
    current = [rich_snapshot()]
    endpoint, collector, _ = _endpoint(current)
    _call(endpoint)
    older = current[0]
    current[0] = rich_snapshot()
    endpoint.publish(older)
    assert collector.renders == 1


def test_counters_alone_reuse_the_rendered_values() -> None:
    current = [rich_snapshot()]
    endpoint, _, _ = _endpoint(current)
    _, first = _call(endpoint)
    values_text = endpoint._evaluation_text["text/plain; version=0.0.4; charset=utf-8"][1]
    current[0] = replace(current[0], job_errors_total=current[0].job_errors_total + 5)
    endpoint.publish(current[0])
    _, second = _call(endpoint)
    assert b"fairwatch_job_errors_total 2.0" in first and b"fairwatch_job_errors_total 7.0" in second
    # the values' text is the very object rendered for the first snapshot, not a re-render
    assert endpoint._evaluation_text["text/plain; version=0.0.4; charset=utf-8"][1] is values_text
    assert second.startswith(values_text)


def test_concurrent_scrapes_of_a_new_snapshot_render_it_once() -> None:
    import threading

    current = [rich_snapshot()]
    endpoint, collector, _ = _endpoint(current)
    _call(endpoint)
    current[0] = rich_snapshot()  # swapped, not published: the scrapes find no body
    start = threading.Barrier(20)
    bodies: list[bytes] = []

    def scrape() -> None:
        start.wait()
        bodies.append(_call(endpoint)[1])

    threads = [threading.Thread(target=scrape) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert collector.renders == 2 and len(set(bodies)) == 1 and len(bodies) == 20


def test_odd_accept_headers_cannot_grow_the_caches() -> None:
    current = [rich_snapshot()]
    endpoint, collector, _ = _endpoint(current)
    for i in range(1, 201):  # every one a different version: choose_encoder would echo each
        headers, body = _call(endpoint, HTTP_ACCEPT=f"application/openmetrics-text;version=1.{i}.0")
        assert headers["Content-Type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8"
        headers, _ = _call(endpoint, HTTP_ACCEPT=f"text/plain;version=2.{i}")
        assert headers["Content-Type"] == "text/plain; version=1.0.0; charset=utf-8; escaping=underscores"
    assert body.endswith(b"# EOF\n")
    assert collector.renders == 2  # one render per format actually served, not one per header
    assert len(endpoint._formats) == 2 and len(endpoint._evaluation_text) == 2
    current[0] = rich_snapshot()
    endpoint.publish(current[0])
    assert collector.renders == 4


@pytest.mark.parametrize(
    ("accept_encoding", "compressed"),
    [("gzip", True), ("deflate, gzip;q=0.5", True), ("*", True), ("gzip;q=0", False), ("identity", False)],
)
def test_gzip_only_when_accepted(accept_encoding: str, compressed: bool) -> None:
    endpoint, _, _ = _endpoint([rich_snapshot()])
    headers, body = _call(endpoint, HTTP_ACCEPT_ENCODING=accept_encoding)
    assert (headers.get("Content-Encoding") == "gzip") is compressed
    assert body.startswith(b"\x1f\x8b") is compressed
    assert headers["Vary"] == "Accept, Accept-Encoding"  # caches must key on both


def test_a_scrape_overtaken_by_a_publish_does_not_replace_the_newer_bodies() -> None:
    current = [rich_snapshot()]
    endpoint, _, _ = _endpoint(current)
    _call(endpoint)
    fresh = rich_snapshot(groups=[v for v in rich_values() if v.group != "white"], alerts=())
    seen = iter([current[0], fresh, fresh, fresh, fresh])  # the scrape looks, then a publish lands
    endpoint._get_snapshot = lambda: next(seen, fresh)
    current[0] = fresh
    _, body = _call(endpoint, HTTP_ACCEPT_ENCODING="gzip")
    assert endpoint._bodies[0] is fresh
    assert b'group="white"' not in gzip.decompress(body)


# --------------------------------------------------------------------------------------------------------
# Health
# --------------------------------------------------------------------------------------------------------


def test_healthz(cached_service: Service) -> None:
    answer = cached_service.get("/healthz")
    assert (answer.status, answer.body) == (200, b"ok\n")


def test_readyz_is_503_until_ready(cached_service: Service) -> None:
    assert cached_service.get("/readyz").status == 503
    cached_service.ready = True
    assert cached_service.get("/readyz").status == 200


# --------------------------------------------------------------------------------------------------------
# /api/v1/results
# --------------------------------------------------------------------------------------------------------


def test_results_shape(cached_service: Service) -> None:
    answer = cached_service.get("/api/v1/results")
    assert answer.status == 200
    assert answer.headers["Content-Type"] == "application/json"
    body = answer.json()
    assert body["status"] == "success"
    data = body["data"]
    assert set(data) == {"generated_at", "models", "results", "model_values", "alerts"}
    assert data["generated_at"] == "2026-03-01T12:00:00Z"

    (model,) = data["models"]
    assert model["name"] == "toxicity"
    assert model["source_up"] is True
    assert model["last_success"] == model["evaluated_at"] == "2026-03-01T12:00:00Z"
    assert model["last_error"] is None
    assert [w["window"] for w in model["windows"]] == ["1h", "24h"]
    assert model["windows"][0]["label_coverage"] == 0.8

    assert len(data["results"]) == 7
    muslim = next(r for r in data["results"] if r["group"] == "muslim")
    assert muslim["value"] is None and muslim["state"] == "insufficient_data" and muslim["reason"]
    rate = next(r for r in data["results"] if r["metric"] == "selection_rate")
    assert (rate["fair_min"], rate["fair_max"]) == (None, None)  # infinities are not JSON

    assert {m["metric"] for m in data["model_values"]} == {
        "overall_auc", "power_mean_subgroup_auc", "theil_index"
    }  # fmt: skip
    assert {(a["labels"]["group"], a["state"]) for a in data["alerts"]} == {
        ("white", "firing"), ("asian", "pending")
    }  # fmt: skip


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("model=toxicity", 7),
        ("model=other", 0),
        ("window=24h", 1),
        ("metric=disparate_impact", 5),
        ("metric=disparate_impact&metric=subgroup_auc", 6),
        ("state=violation", 1),
        ("window=1h&state=ok", 3),
        ("basis=labels", 7),  # the realised values: this service estimates nothing
        ("basis=estimate", 0),
    ],
)
def test_results_filters(cached_service: Service, query: str, expected: int) -> None:
    data = cached_service.get(f"/api/v1/results?{query}").json()["data"]
    assert len(data["results"]) == expected


def test_results_filters_apply_to_model_values(cached_service: Service) -> None:
    data = cached_service.get("/api/v1/results?window=24h").json()["data"]
    assert [(m["window"], m["metric"]) for m in data["model_values"]] == [("24h", "overall_auc")]


def test_results_as_csv_are_the_json_results_row_for_row(cached_service: Service) -> None:
    import csv
    import io

    from monitor.outputs.csv_rows import COLUMNS

    rows = cached_service.get("/api/v1/results?metric=disparate_impact").json()["data"]["results"]
    answer = cached_service.get("/api/v1/results?metric=disparate_impact&format=csv")
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("text/csv; charset=utf-8")
    assert "fairwatch-results.csv" in answer.headers["Content-Disposition"]
    table = list(csv.DictReader(io.StringIO(answer.body.decode("utf-8"))))
    assert tuple(table[0]) == COLUMNS and len(table) == len(rows) == 5
    for got, want in zip(table, rows, strict=True):
        for column in COLUMNS:
            value = want[column]
            if value is None:
                assert got[column] == "", column
            elif isinstance(value, float):
                assert float(got[column]) == value, column  # every digit: the same float back
            else:
                assert got[column] == str(value), column
    assert cached_service.get("/api/v1/results?format=xml").status == 400


def test_results_unknown_state_is_bad_data(cached_service: Service) -> None:
    answer = cached_service.get("/api/v1/results?state=broken")
    assert answer.status == 400
    assert answer.json()["errorType"] == "bad_data"
    assert "'broken'" in answer.json()["error"]


def test_a_flood_of_bad_parameters_is_not_echoed_back(cached_service: Service) -> None:
    query = "&".join(f"state={'x' * 500}{i:04d}" for i in range(100))  # 50 KB: under the 64 KB line limit
    answer = cached_service.get("/api/v1/results?" + query)
    assert answer.status == 400
    error = answer.json()["error"]
    assert len(answer.body) < 400 and "and 97 more" in error and "x" * 41 not in error


def test_results_of_a_failed_model_keep_last_values_and_hide_passwords(cached_service: Service) -> None:
    status = cached_service.snapshot.models["toxicity"]
    cached_service.snapshot = make_snapshot(
        replace(
            status,
            source_up=False,
            last_attempt=T0 + timedelta(minutes=1),
            last_error="SourceError: cannot connect to postgresql+psycopg://fw:s3cret@db:5432/logs",
        )
    )
    data = cached_service.get("/api/v1/results").json()["data"]
    (model,) = data["models"]
    assert model["source_up"] is False
    assert "s3cret" not in model["last_error"]
    assert "postgresql+psycopg://fw:***@db:5432/logs" in model["last_error"]
    assert model["last_attempt"] == "2026-03-01T12:01:00Z"
    assert len(data["results"]) == 7


def test_redact_leaves_plain_text_alone() -> None:
    assert redact("table predictions not found") == "table predictions not found"
    assert redact("sqlite:///x.db is locked") == "sqlite:///x.db is locked"


# --------------------------------------------------------------------------------------------------------
# Errors (the page at / is tested in test_live_view.py)
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/nope", "/metrics/extra", "/api/v1/result"])
def test_unknown_path_is_404(cached_service: Service, path: str) -> None:
    assert cached_service.get(path).status == 404


@pytest.mark.parametrize("path", ["/metrics", "/healthz", "/api/v1/results", "/"])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_non_get_is_405(cached_service: Service, path: str, method: str) -> None:
    answer = cached_service.get(path, method=method)
    assert answer.status == 405
    assert answer.headers["Allow"] == "GET, HEAD"


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
def test_head_is_answered_without_a_body(cached_service: Service, path: str) -> None:
    answer = cached_service.get(path, method="HEAD")
    assert answer.status in (200, 503)
    assert answer.body == b""


@pytest.mark.parametrize("path", ["/?model=toxicity", "/?model=toxicity&fragment=1", "/api/v1/results"])
def test_pages_and_results_are_gzipped_for_a_client_that_accepts_it(
    cached_service: Service, path: str
) -> None:
    # the answer cache may serve the last drawing (another test's snapshot) while its budget holds a new
    # one up: ask until both encodings are of this snapshot
    for _ in range(40):
        plain = cached_service.get(path)
        packed = cached_service.get(path, headers={"Accept-Encoding": "gzip, deflate"})
        if packed.headers.get("Content-Encoding") != "gzip" or gzip.decompress(packed.body) == plain.body:
            break
        time.sleep(0.05)
    assert plain.status == packed.status == 200
    assert plain.headers.get("Content-Encoding") is None
    assert packed.headers["Content-Encoding"] == "gzip" and packed.headers["Vary"] == "Accept-Encoding"
    assert gzip.decompress(packed.body) == plain.body
    assert int(packed.headers["Content-Length"]) == len(packed.body) < len(plain.body) / 3
    if "ETag" in plain.headers:  # each representation its own validator; the gzip one revalidates
        assert packed.headers["ETag"] != plain.headers["ETag"]
        again = cached_service.get(
            path, headers={"Accept-Encoding": "gzip", "If-None-Match": packed.headers["ETag"]}
        )
        assert again.status == 304


def test_gzip_refused_by_quality_zero_is_not_sent(cached_service: Service) -> None:
    answer = cached_service.get("/?model=toxicity", headers={"Accept-Encoding": "gzip;q=0"})
    assert answer.headers.get("Content-Encoding") is None
    assert answer.headers["Vary"] == "Accept-Encoding"  # uncompressed answers vary all the same
    again = cached_service.get(
        "/?model=toxicity", headers={"Accept-Encoding": "gzip;q=0", "If-None-Match": answer.headers["ETag"]}
    )
    assert again.status == 304 and again.headers["Vary"] == "Accept-Encoding"
