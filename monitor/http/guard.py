"""The request guard: the web configuration's rate limit, basic authentication and headers around the app.

Every path is guarded; ``open_paths`` (``server.unauthenticated_probes``: ``/healthz`` and
``/readyz``, for a kubelet that cannot send credentials) answer without credentials and are
never rate limited, so that a flood of requests cannot make Kubernetes restart the pod.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from monitor.http.web_config import WebConfigFile

if TYPE_CHECKING:
    from _typeshed import OptExcInfo

__all__ = ["PROBES", "guard"]

#: The health probes ``server.unauthenticated_probes`` opens.
PROBES = frozenset({"/healthz", "/readyz"})

_UNAUTHORIZED = b"Unauthorized\n"
_TOO_MANY = b"Too Many Requests\n"


def guard(
    app: WSGIApplication, web: WebConfigFile, *, open_paths: frozenset[str] = frozenset()
) -> WSGIApplication:
    """``app`` behind ``web``'s rate limit, ``basic_auth_users`` and ``http_server_config.headers``."""

    def guarded(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        config = web.current()
        extra = list(config.headers)

        def respond(
            status: str, headers: list[tuple[str, str]], exc_info: OptExcInfo | None = None
        ) -> Callable[[bytes], object]:
            return start_response(status, [*headers, *extra], exc_info)

        path = environ.get("PATH_INFO") or "/"
        if path in open_paths:
            return app(environ, respond)
        if config.limiter is not None and not config.limiter.allow():
            return _plain(respond, "429 Too Many Requests", _TOO_MANY, [("Retry-After", "1")])
        if config.users:
            user = config.users.verify(environ.get("HTTP_AUTHORIZATION"))
            if user is None:
                return _plain(
                    respond,
                    "401 Unauthorized",
                    _UNAUTHORIZED,
                    [("WWW-Authenticate", 'Basic realm="fairwatch"')],
                )
            environ["REMOTE_USER"] = user
        return app(environ, respond)

    return guarded


def _plain(
    start_response: StartResponse, status: str, body: bytes, extra: list[tuple[str, str]]
) -> Iterable[bytes]:
    start_response(
        status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))), *extra]
    )
    return [body]
