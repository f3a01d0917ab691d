"""``/metrics``: the exposition rendered once per snapshot, when the snapshot is published.

Prometheus negotiates the format (OpenMetrics or the classic text format, as prometheus_client's
``choose_encoder`` decides) and gzip. Rendering a large model's ~10,000 series takes ~100 ms per
format, too long to pay inside a scrape: under load, every scrape that arrives first after an
evaluation would pay it. So the monitor calls :meth:`MetricsEndpoint.publish` with every
snapshot it swaps in, and the endpoint renders there and then the text of every format scrapers
have asked for so far; a scrape only picks the right bytes (gzip'd at the first scrape that asks
for gzip, once per snapshot: a snapshot that nobody scraped is never compressed).

A snapshot changes one model at a time, so the text is rendered per model: each model's families
(:meth:`SnapshotCollector.evaluation_parts`) are rendered once per evaluation and format, family by
family, and the body is assembled from those pieces - one ``# HELP``/``# TYPE`` header per family,
then the samples of every model in config order, exactly prometheus_client's rendering of the
merged families. (Rendering every model's families at every publish made a service of 50 models
render its whole 20 MB exposition 50 times a minute: ~70% of its CPU.) A snapshot that changes
only the service's own counters (an alert delivered, a job error) re-renders only those. A scrape
that finds no body for the current snapshot (the very first one, or one racing a publish) renders
it itself, once: concurrent scrapes wait for that render instead of repeating it. A scrape with a
query string (``name[]=`` filters) is answered by prometheus_client's own handler from the registry.

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

from monitor.outputs.prometheus.collector import SnapshotCollector, same_parts
from monitor.service.snapshot import Snapshot

__all__ = ["MetricsEndpoint", "accepts_gzip"]

_EOF = b"# EOF\n"
# gzip level 6 (the default) makes a 1.4 MB exposition 80 KB in ~10 ms.
_GZIP_LEVEL = 6
# Distinct content types rendered at publish: Prometheus asks for one, browsers and curl for a
# few more; the bound keeps odd Accept headers from adding work.
_MAX_FORMATS = 8

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


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether ``Accept-Encoding`` accepts gzip: gzip listed with a non-zero quality, or else ``*``
    (an explicit gzip wins over the wildcard, RFC 9110 12.5.3).

    >>> accepts_gzip("gzip, deflate"), accepts_gzip("*;q=0, gzip"), accepts_gzip("gzip;q=0, *")
    (True, True, False)
    """
    qualities: dict[str, float] = {}
    for coding in accept_encoding.split(","):
        name, *params = (part.strip() for part in coding.split(";"))
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        qualities.setdefault(name.lower(), quality)
    return qualities.get("gzip", qualities.get("*", 0.0)) > 0


class _Families:
    """A fixed list of families, in the ``collect()`` shape prometheus_client's renderers expect."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


# one family's text in one format: its name, its header lines (# HELP, # TYPE, # UNIT), its samples
_Block = tuple[str, bytes, bytes]


def _blocks(part: Sequence[Metric], encode: _Encoder) -> tuple[_Block, ...]:
    """Each family of ``part`` rendered alone by ``encode``, split into header and samples."""
    blocks = []
    for family in part:
        text = encode(_Families([family])).removesuffix(_EOF)
        end = 0
        while text.startswith(b"# ", end):  # sample lines never start with '#'
            end = text.index(b"\n", end) + 1
        blocks.append((family.name, text[:end], text[end:]))
    return tuple(blocks)


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
        # the content types asked for so far (at most _MAX_FORMATS): rendered for every new snapshot
        self._formats: set[str] = set()
        # per content type: the evaluation parts last rendered (by identity) and their text, and
        # each part's blocks (parts no longer in the snapshot are dropped at the next render)
        self._evaluation_text: dict[str, tuple[tuple[Sequence[Metric], ...], bytes]] = {}
        self._part_blocks: dict[str, dict[int, tuple[Sequence[Metric], tuple[_Block, ...]]]] = {}

    def publish(self, snapshot: Snapshot) -> None:
        """Render ``snapshot``'s text now, unless a newer snapshot was published meanwhile."""
        with self._lock:
            if snapshot is self._get_snapshot():
                bodies = {(f, False): self._render(snapshot, f) for f in self._formats}
                self._bodies = (snapshot, bodies)

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
                content_type, compressed = variant
                plain = bodies.get((content_type, False))
                if plain is None:
                    plain = self._render(snapshot, content_type)
                    if len(self._formats) < _MAX_FORMATS:
                        self._formats.add(content_type)
                    bodies = {**bodies, (content_type, False): plain}
                if compressed:
                    bodies = {**bodies, variant: gzip.compress(plain, _GZIP_LEVEL, mtime=0)}
                self._bodies = (snapshot, bodies)
            return bodies[variant]

    def _render(self, snapshot: Snapshot, content_type: str) -> bytes:
        """Under the lock: one format's text, the evaluation part assembled from the parts' blocks."""
        encode = _KNOWN[content_type]
        parts = self._collector.evaluation_parts(snapshot)
        last = self._evaluation_text.get(content_type)
        if last is not None and same_parts(last[0], parts):
            values = last[1]
        else:
            values = self._assemble(parts, content_type, encode)
            self._evaluation_text[content_type] = (parts, values)
        return values + encode(_Families(self._collector.service_families(snapshot)))

    def _assemble(self, parts: tuple[tuple[Metric, ...], ...], content_type: str, encode: _Encoder) -> bytes:
        """One header per family name, then that family's samples from every part, in part order."""
        cache = self._part_blocks.get(content_type, {})
        kept: dict[int, tuple[Sequence[Metric], tuple[_Block, ...]]] = {}
        headers: dict[str, bytes] = {}
        samples: dict[str, list[bytes]] = {}
        for part in parts:
            entry = cache.get(id(part))
            if entry is None or entry[0] is not part:
                entry = (part, _blocks(part, encode))
            kept[id(part)] = entry
            for name, header, body in entry[1]:
                if name not in headers:
                    headers[name], samples[name] = header, []
                samples[name].append(body)
        self._part_blocks[content_type] = kept
        return b"".join(headers[name] + b"".join(samples[name]) for name in headers)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("QUERY_STRING"):
            return self._filtered(environ, start_response)
        content_type = _negotiate(environ.get("HTTP_ACCEPT", ""))
        compressed = accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING", ""))
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
