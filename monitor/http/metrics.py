"""``/metrics``: the exposition rendered once per snapshot, when the snapshot is published.

Prometheus negotiates the format (OpenMetrics or the classic text format, as prometheus_client's
``choose_encoder`` decides) and gzip. Rendering a large model's ~10,000 series takes ~100 ms per
format, too long to pay inside a scrape: under load, every scrape that arrives first after an
evaluation would pay it. So the monitor calls :meth:`MetricsEndpoint.publish` with every
snapshot it swaps in, and the endpoint renders there and then every answer scrapers have asked
for so far (format x gzip); a scrape only picks the right bytes.

The text of the fairness values and alerts is reused across snapshots that change only the
service's own counters (an alert delivered, a job error): those re-render in well under a
millisecond. A scrape that finds no body for the current snapshot (the very first one, or one
racing a publish) renders it itself, once: concurrent scrapes wait for that render instead of
repeating it. A scrape with a query string (``name[]=`` filters) is answered by
prometheus_client's own handler from the registry.

Only the formats prometheus_client speaks are answered and cached: the classic text format 0.0.4,
text 1.0.0 and OpenMetrics 1.0.0 (with any of their name escapings). ``choose_encoder`` echoes
whatever ``version=`` a client writes; an unknown version is answered in that format's known
version, so odd Accept headers cannot grow the caches or the work done at each publish.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric

from monitor.outputs.prometheus.collector import SnapshotCollector
from monitor.service.snapshot import Snapshot

__all__ = ["MetricsEndpoint"]

_EOF = b"# EOF\n"
# gzip level 6 (the default) makes a 1.4 MB exposition 80 KB in ~10 ms.
_GZIP_LEVEL = 6
# Distinct (content type, gzip) answers kept per snapshot and rendered at publish: Prometheus asks
# for one, browsers and curl for a few more; the bound keeps odd Accept headers from adding work.
_MAX_VARIANTS = 8

_Encoder = Callable[[Any], bytes]
_Variant = tuple[str, bool]  # (content type, gzip)


def _known_encoders() -> dict[str, _Encoder]:
    """Content type -> encoder, for every format and escaping prometheus_client renders."""
    escapings = ("underscores", "allow-utf-8", "dots", "values")  # the names prometheus_client knows
    accepts = ["", "text/plain;version=0.0.4", "application/openmetrics-text"]
    for escaping in escapings:
        accepts.append(f"application/openmetrics-text;version=1.0.0;escaping={escaping}")
        accepts.append(f"text/plain;version=1.0.0;escaping={escaping}")
    return {content_type: encode for encode, content_type in map(choose_encoder, accepts)}


_KNOWN = _known_encoders()
_OPENMETRICS = choose_encoder("application/openmetrics-text")[1]
_TEXT = choose_encoder("")[1]


def _negotiate(accept: str) -> str:
    """The content type to answer: ``choose_encoder``'s, an unknown format version replaced by the
    known version of that format."""
    content_type = choose_encoder(accept)[1]
    if content_type in _KNOWN:
        return content_type
    return _OPENMETRICS if content_type.startswith("application/openmetrics-text") else _TEXT


def _accepts_gzip(accept_encoding: str) -> bool:
    """Whether ``Accept-Encoding`` lists gzip (or ``*``) with a non-zero quality."""
    for coding in accept_encoding.split(","):
        name, *params = (part.strip() for part in coding.split(";"))
        if name.lower() not in ("gzip", "*"):
            continue
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    return float(value) > 0
                except ValueError:
                    return False
        return True
    return False


class _Families:
    """A fixed list of families, in the ``collect()`` shape prometheus_client's renderers expect."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


class MetricsEndpoint:
    """The ``/metrics`` WSGI application over ``collector``'s families of ``get_snapshot()``."""

    def __init__(
        self,
        collector: SnapshotCollector,
        get_snapshot: Callable[[], Snapshot],
        *,
        registry: CollectorRegistry,
    ) -> None:
        self._collector = collector
        self._get_snapshot = get_snapshot
        self._filtered: WSGIApplication = make_wsgi_app(registry)
        self._lock = threading.Lock()  # one render at a time
        # (snapshot, {variant: body}); replaced as a whole, so readers need no lock
        self._bodies: tuple[Snapshot | None, dict[_Variant, bytes]] = (None, {})
        # the variants asked for so far (at most _MAX_VARIANTS): rendered for every new snapshot
        self._variants: set[_Variant] = set()
        # the evaluation families last rendered, and their text per content type
        self._evaluation_text: tuple[Sequence[Metric] | None, dict[str, bytes]] = (None, {})

    def publish(self, snapshot: Snapshot) -> None:
        """Render ``snapshot``'s answers now, unless a newer snapshot was published meanwhile."""
        with self._lock:
            if snapshot is self._get_snapshot():
                self._bodies = (snapshot, {v: self._render(snapshot, v) for v in self._variants})

    def _body(self, variant: _Variant) -> bytes:
        rendered, bodies = self._bodies
        if rendered is self._get_snapshot() and variant in bodies:
            return bodies[variant]
        with self._lock:  # single flight: one render, concurrent scrapes wait and reuse it
            snapshot = self._get_snapshot()  # the newest: never store bodies of an older one
            rendered, bodies = self._bodies
            if rendered is not snapshot:
                bodies = {}
            if variant not in bodies:
                bodies = {**bodies, variant: self._render(snapshot, variant)}
                if len(self._variants) < _MAX_VARIANTS:
                    self._variants.add(variant)
                self._bodies = (snapshot, bodies)
            return bodies[variant]

    def _render(self, snapshot: Snapshot, variant: _Variant) -> bytes:
        """Under the lock: one answer, the evaluation part reused while the families are the same."""
        content_type, compressed = variant
        encode = _KNOWN[content_type]
        families = self._collector.evaluation_families(snapshot)
        rendered_from, texts = self._evaluation_text
        if rendered_from is not families:
            texts = {}
            self._evaluation_text = (families, texts)
        if content_type not in texts:
            texts[content_type] = encode(_Families(families)).removesuffix(_EOF)
        body = texts[content_type] + encode(_Families(self._collector.service_families(snapshot)))
        return gzip.compress(body, _GZIP_LEVEL, mtime=0) if compressed else body

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("QUERY_STRING"):
            return self._filtered(environ, start_response)
        content_type = _negotiate(environ.get("HTTP_ACCEPT", ""))
        compressed = _accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING", ""))
        body = self._body((content_type, compressed))
        headers = [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            ("Vary", "Accept, Accept-Encoding"),
        ]
        if compressed:
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [body]
