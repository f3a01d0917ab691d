"""gzip for the answers people and scripts download again and again: the live view's page and its
fragment (refreshed every few seconds), ``/api/v1/results`` and ``/api/v1/history``.

Wrapped *inside* :class:`~monitor.http.drawing.CachedApp`, whose cache key holds ``Accept-Encoding``:
each answer is compressed once per state, not per request. An answer that changes encoding changes
its ``ETag`` too (``"...-gzip"``), as a strong validator must per representation; ``Vary:
Accept-Encoding`` tells caches between the client and us.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from monitor.http.drawing import capture
from monitor.http.metrics import accepts_gzip

__all__ = ["MIN_SIZE", "gzipped"]

#: Smaller answers are sent as they are: gzip's header and the CPU would cost more than they save.
MIN_SIZE = 1024
_COMPRESSIBLE = ("text/", "application/json")
# on every answer of a wrapped route, compressed or not: what a cache between us and the client keys on
_VARY = ("Vary", "Accept-Encoding")


def gzipped(app: WSGIApplication) -> WSGIApplication:
    """``app`` whose text and JSON answers of at least :data:`MIN_SIZE` bytes are gzip-compressed
    (level 6) for a client that accepts gzip."""

    def wrapped(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        status, headers, body = capture(app, environ)
        kind = next((v for k, v in headers if k.lower() == "content-type"), "")
        wanted = accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING", ""))
        if not wanted or len(body) < MIN_SIZE or not kind.startswith(_COMPRESSIBLE):
            start_response(status, [*headers, _VARY])
            return [body]
        body = gzip.compress(body, compresslevel=6, mtime=0)
        changed = []
        for name, value in headers:
            if name.lower() == "content-length":
                value = str(len(body))
            elif name.lower() == "etag":
                value = value[:-1] + '-gzip"' if value.endswith('"') else value + "-gzip"
            changed.append((name, value))
        start_response(status, [*changed, ("Content-Encoding", "gzip"), _VARY])
        return [body]

    return wrapped
