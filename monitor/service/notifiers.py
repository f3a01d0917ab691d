"""Alert sinks: Alertmanager's v2 API, a generic JSON webhook, the log, and a recording test double.

Every sink is a :class:`Notifier`: ``send(firing, resolved, now)`` pushes the currently firing alerts
and those that resolved at this evaluation, and raises :class:`~monitor.core.errors.AlertDeliveryError` when
the sink refuses or cannot be reached. The caller counts such failures and tries again at the next
evaluation; firing alerts are re-sent every time anyway, as Prometheus does.

HTTP goes through urllib (no extra dependency). ``timeout_seconds`` bounds a whole attempt -
connecting, sending and reading the complete answer - not each socket read: a receiver that
trickles its answer a byte at a time is cut off at the deadline like one that never answers.
Credentials written in a URL (``http://user:pass@host``) become a Basic ``Authorization`` header
and never appear in an error message. Proxies from the environment are ignored for loopback
addresses, and redirects are not followed (a redirected POST would silently lose its body).

Sinks are called from :mod:`monitor.service.delivery`'s sender threads, never from an evaluation.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import ipaddress
import json
import logging
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NotRequired, Protocol, TypedDict

from monitor.config import AlertsConfig
from monitor.core.errors import AlertDeliveryError, ConfigError
from monitor.core.secrets import mask_url
from monitor.core.times import rfc3339_utc_millis
from monitor.core.version import __version__
from monitor.service.snapshot import ActiveAlert

__all__ = [
    "AlertmanagerNotifier",
    "LogNotifier",
    "Notifier",
    "RecordingNotifier",
    "SentBatch",
    "WebhookNotifier",
    "build_notifiers",
]

# Alertmanager's webhook payload marks a firing alert's end with Go's zero time; so do we, so that a
# receiver written for Alertmanager's webhooks parses ours.
_NO_END = "0001-01-01T00:00:00Z"
_MAX_ERROR_BODY = 200
# Characters kept as they are when a URL's path or query is percent-encoded (RFC 3986 reserved, and %).
_URL_SAFE = "/%:@!$&'()*+,;="


class AlertmanagerAlert(TypedDict):
    """One alert of Alertmanager's ``POST /api/v2/alerts`` body."""

    labels: dict[str, str]
    annotations: dict[str, str]
    startsAt: str
    endsAt: str
    generatorURL: NotRequired[str]


class WebhookAlert(TypedDict):
    status: str
    labels: dict[str, str]
    annotations: dict[str, str]
    startsAt: str
    endsAt: str
    generatorURL: str


class WebhookPayload(TypedDict):
    """What :class:`WebhookNotifier` POSTs: shaped like Alertmanager's own webhook payload, one per
    incident (grouped by ``model`` and ``incident``, as the example Alertmanager config groups)."""

    version: str
    receiver: str
    status: str
    groupLabels: dict[str, str]
    commonLabels: dict[str, str]
    commonAnnotations: dict[str, str]
    alerts: list[WebhookAlert]


class Notifier(Protocol):
    """An alert sink."""

    name: str

    def send(self, firing: Sequence[ActiveAlert], resolved: Sequence[ActiveAlert], now: datetime) -> None:
        """Deliver ``firing`` and ``resolved`` alerts; raise :class:`AlertDeliveryError` on failure."""
        ...


# -- sinks -----------------------------------------------------------------------------------------------


class AlertmanagerNotifier:
    """Pushes alerts to Alertmanager's ``POST /api/v2/alerts``, the way Prometheus does.

    Firing alerts are re-sent at every call with ``endsAt = now + 4 * resend_seconds``: should
    fairwatch die, Alertmanager resolves them by itself after a few missed evaluations. Resolved
    alerts are sent once with ``endsAt = now``.
    """

    name = "alertmanager"

    def __init__(
        self,
        url: str,
        *,
        timeout_seconds: float,
        resend_seconds: float,
        generator_url: str | None = None,
    ) -> None:
        _check_positive("timeout_seconds", timeout_seconds)
        _check_positive("resend_seconds", resend_seconds)
        self._endpoint = _Endpoint.parse(url.rstrip("/") + "/api/v2/alerts")
        self.timeout_seconds = timeout_seconds
        self.resend_seconds = resend_seconds
        self.generator_url = generator_url

    @property
    def url(self) -> str:
        """The endpoint, without credentials."""
        return self._endpoint.url

    def send(self, firing: Sequence[ActiveAlert], resolved: Sequence[ActiveAlert], now: datetime) -> None:
        if not firing and not resolved:
            return
        expires = now + timedelta(seconds=4 * self.resend_seconds)
        payload = [self._alert(a, ends_at=expires) for a in firing]
        payload += [self._alert(a, ends_at=now) for a in resolved]
        self._endpoint.post_json(payload, timeout=self.timeout_seconds, sink=self.name)

    def _alert(self, alert: ActiveAlert, *, ends_at: datetime) -> AlertmanagerAlert:
        body: AlertmanagerAlert = {
            "labels": dict(alert.labels),
            "annotations": dict(alert.annotations),
            "startsAt": rfc3339_utc_millis(_starts_at(alert)),
            "endsAt": rfc3339_utc_millis(ends_at),
        }
        if self.generator_url:
            body["generatorURL"] = self.generator_url
        return body


class WebhookNotifier:
    """POSTs one JSON object per incident, shaped like Alertmanager's webhook payload::

        {"version": "1", "receiver": "fairwatch", "status": "firing" | "resolved",
         "groupLabels": {"model", "incident"}, "commonLabels": {...}, "commonAnnotations": {...},
         "alerts": [{"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL"}]}

    The alerts of one incident (their ``model`` and ``incident`` labels) travel together, as
    Alertmanager grouped by ``[alertname, model, incident]`` sends them: the incident's account
    (``incident_summary``, ``onset``) is among the common annotations, every metric and window inside.
    ``status`` is ``firing`` when any alert of the incident fires. Nothing is sent when there is
    nothing to say.
    """

    name = "webhook"

    def __init__(self, url: str, *, timeout_seconds: float, generator_url: str | None = None) -> None:
        _check_positive("timeout_seconds", timeout_seconds)
        self._endpoint = _Endpoint.parse(url)
        self.timeout_seconds = timeout_seconds
        self.generator_url = generator_url

    @property
    def url(self) -> str:
        return self._endpoint.url

    def send(self, firing: Sequence[ActiveAlert], resolved: Sequence[ActiveAlert], now: datetime) -> None:
        groups: dict[tuple[str, str], list[WebhookAlert]] = {}
        for alerts, status, ends_at in (
            (firing, "firing", _NO_END),
            (resolved, "resolved", rfc3339_utc_millis(now)),
        ):
            for a in alerts:
                group = (a.labels.get("model", ""), a.labels.get("incident", ""))
                groups.setdefault(group, []).append(self._alert(a, status, ends_at))
        failed: list[tuple[tuple[str, str], AlertDeliveryError]] = []
        deadline = time.monotonic() + self.timeout_seconds  # the attempt, as a whole, as the other sinks'
        posted = 0
        for (model, incident), members in groups.items():
            payload: WebhookPayload = {
                "version": "1",
                "receiver": "fairwatch",
                "status": "firing" if any(m["status"] == "firing" for m in members) else "resolved",
                "groupLabels": {"model": model, "incident": incident},
                "commonLabels": _common([m["labels"] for m in members]),
                "commonAnnotations": _common([m["annotations"] for m in members]),
                "alerts": members,
            }
            # the first incident has the whole timeout (its errors name it), the others what is left of it
            left = self.timeout_seconds if not failed and posted == 0 else deadline - time.monotonic()
            posted += 1
            if left <= 0:
                failed.append(
                    (
                        (model, incident),
                        AlertDeliveryError(f"{self.name}: the attempt's {self.timeout_seconds:g} s ran out"),
                    )
                )
                continue
            try:  # each incident on its own: one the receiver refuses holds no other back
                self._endpoint.post_json(payload, timeout=left, sink=self.name)
            except AlertDeliveryError as exc:
                failed.append(((model, incident), exc))
        if failed:
            lost = {group for group, _ in failed}
            undelivered = tuple(
                a for a in resolved if (a.labels.get("model", ""), a.labels.get("incident", "")) in lost
            )
            first = failed[0][1]
            more = f" (and {len(failed) - 1} more incident(s))" if len(failed) > 1 else ""
            raise AlertDeliveryError(f"{first}{more}", undelivered=undelivered) from first

    def _alert(self, alert: ActiveAlert, status: str, ends_at: str) -> WebhookAlert:
        return {
            "status": status,
            "labels": dict(alert.labels),
            "annotations": dict(alert.annotations),
            "startsAt": rfc3339_utc_millis(_starts_at(alert)),
            "endsAt": ends_at,
            "generatorURL": self.generator_url or "",
        }


class LogNotifier:
    """Logs an alert when it starts firing (WARNING) and when it resolves (INFO), one line each.

    Firing alerts arrive again at every evaluation; the log says so only once per firing episode,
    so that a long-firing alert does not drown the log.
    """

    name = "log"

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._announced: dict[tuple[tuple[str, str], ...], datetime | None] = {}  # labels -> firing_since
        self._lock = threading.Lock()

    def send(self, firing: Sequence[ActiveAlert], resolved: Sequence[ActiveAlert], now: datetime) -> None:
        with self._lock:
            for alert in firing:
                key = _label_key(alert.labels)
                if key in self._announced and self._announced[key] == alert.firing_since:
                    continue
                self._announced[key] = alert.firing_since
                self._logger.warning("fairness alert firing: %s", _headline(alert))
            for alert in resolved:
                self._announced.pop(_label_key(alert.labels), None)
                self._logger.info("fairness alert resolved: %s", _headline(alert))


@dataclass(frozen=True)
class SentBatch:
    """One call recorded by :class:`RecordingNotifier`."""

    firing: tuple[ActiveAlert, ...]
    resolved: tuple[ActiveAlert, ...]
    now: datetime


class RecordingNotifier:
    """In-package test double: records every call, empty ones included (as httpx ships ``MockTransport``).

    Set ``failing = True`` to make :meth:`send` raise :class:`AlertDeliveryError` like an unreachable
    sink; the call is still recorded.
    """

    def __init__(self, name: str = "recording", *, failing: bool = False) -> None:
        self.name = name
        self.failing = failing
        self.calls: list[SentBatch] = []

    def send(self, firing: Sequence[ActiveAlert], resolved: Sequence[ActiveAlert], now: datetime) -> None:
        self.calls.append(SentBatch(tuple(firing), tuple(resolved), now))
        if self.failing:
            raise AlertDeliveryError(f"{self.name}: simulated delivery failure")


def build_notifiers(
    alerts_config: AlertsConfig, *, resend_seconds: float, logger: logging.Logger
) -> list[Notifier]:
    """The sinks the ``alerts:`` section asks for: ``alertmanager``, ``webhook``, ``log`` (in that order).

    ``resend_seconds`` is how often firing alerts are re-sent (the evaluation interval); it sets how
    long Alertmanager keeps an alert that stops being refreshed.
    """
    notifiers: list[Notifier] = []
    generator_url = alerts_config.external_url
    if (am := alerts_config.alertmanager) is not None:
        try:
            notifiers.append(
                AlertmanagerNotifier(
                    am.url,
                    timeout_seconds=am.timeout.total_seconds(),
                    resend_seconds=resend_seconds,
                    generator_url=generator_url,
                )
            )
        except ValueError as exc:
            raise ConfigError(f"alerts.alertmanager: {exc}") from exc
    if (hook := alerts_config.webhook) is not None:
        try:
            notifiers.append(
                WebhookNotifier(
                    hook.url, timeout_seconds=hook.timeout.total_seconds(), generator_url=generator_url
                )
            )
        except ValueError as exc:
            raise ConfigError(f"alerts.webhook: {exc}") from exc
    if alerts_config.log:
        notifiers.append(LogNotifier(logger))
    return notifiers


# -- HTTP ------------------------------------------------------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx then surfaces as an HTTPError: a delivery failure


@dataclass(frozen=True)
class _Endpoint:
    target: str  # the URL requested: without its userinfo (sent as a header), query kept
    url: str  # as shown: secret query values (``?token=``) masked too
    authorization: str | None
    proxies: dict[str, str] | None  # None: from the environment

    @classmethod
    def parse(cls, url: str) -> _Endpoint:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        if parts.scheme not in ("http", "https") or not host:
            raise ValueError(f"url must be an http(s) URL with a host, got {_redacted(parts)!r}")
        parts.port  # noqa: B018 - raises ValueError on a bad port now rather than at the first alert
        authorization = None
        if parts.username is not None:
            user = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or "")
            authorization = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        # An HTTP(S)_PROXY meant for the outside world must not intercept a loopback sink.
        proxies: dict[str, str] | None = {} if _is_loopback(host) else None
        # A non-ASCII path or query is sent percent-encoded (http.client refuses raw non-ASCII).
        target = urllib.parse.urlunsplit(
            parts._replace(
                netloc=parts.netloc.rpartition("@")[2],
                path=urllib.parse.quote(parts.path, safe=_URL_SAFE),
                query=urllib.parse.quote(parts.query, safe=_URL_SAFE + "?"),
            )
        )
        return cls(target, _redacted(parts), authorization, proxies)

    def post_json(self, payload: object, *, timeout: float, sink: str) -> None:
        request = urllib.request.Request(
            self.target,
            data=json.dumps(payload).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "User-Agent": f"fairwatch/{__version__}"},
        )
        if self.authorization:
            request.add_header("Authorization", self.authorization)
        deadline = _Deadline(timeout)
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler(self.proxies),
            _NoRedirect(),
            _DeadlineHTTPHandler(deadline),
            _DeadlineHTTPSHandler(deadline),
        )
        try:
            with opener.open(request, timeout=timeout) as response:
                response.read()
        # URLError and HTTPError are OSErrors; ValueError: what http.client cannot encode or parse
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise self._failure(exc, sink, deadline) from exc
        finally:
            deadline.cancel()

    def _failure(self, exc: Exception, sink: str, deadline: _Deadline) -> AlertDeliveryError:
        if isinstance(exc, urllib.error.HTTPError):
            with exc:
                detail = _short_body(exc)
            return AlertDeliveryError(f"{sink}: POST {self.url} answered HTTP {exc.code}: {detail}")
        if deadline.expired:
            return AlertDeliveryError(
                f"{sink}: POST {self.url} got no complete answer within {deadline.seconds:g} s (the timeout)"
            )
        if isinstance(exc, urllib.error.URLError):
            return AlertDeliveryError(f"{sink}: cannot reach {self.url}: {exc.reason}")
        return AlertDeliveryError(f"{sink}: POST {self.url} failed: {exc!r}")  # resets, malformed answers


class _Deadline:
    """One attempt's total time budget: when it runs out, the attempt's sockets are shut down, so
    whatever read or write is blocked on them returns at once (a per-read timeout cannot stop a
    receiver that sends a byte every few seconds)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            if self.expired:
                _shut(sock)
            self._sockets.append(sock)

    def cancel(self) -> None:
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


def _deadline_connection(
    base: type[http.client.HTTPConnection], deadline: _Deadline
) -> Callable[..., http.client.HTTPConnection]:
    """``base`` whose socket, once connected, is watched by ``deadline``."""

    class Connection(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            deadline.watch(self.sock)

    return Connection


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._connection = _deadline_connection(http.client.HTTPConnection, deadline)

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._connection, req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._connection = _deadline_connection(http.client.HTTPSConnection, deadline)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._connection, req)  # the default context: certificates verified


def _redacted(parts: urllib.parse.SplitResult) -> str:
    """The URL without its user:password part, secret query values (``?token=``) masked."""
    netloc = parts.netloc.rpartition("@")[2]
    return mask_url(urllib.parse.urlunsplit(parts._replace(netloc=netloc)))


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _short_body(exc: urllib.error.HTTPError) -> str:
    """The start of an error answer, on one line: enough to see why, never a whole page."""
    try:
        text = exc.read(_MAX_ERROR_BODY + 1).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return "(no body)"
    text = " ".join(text.split())
    if len(text) > _MAX_ERROR_BODY:
        text = text[:_MAX_ERROR_BODY] + "..."
    return text or "(empty body)"


# -- formatting ------------------------------------------------------------------------------------------


def _common(mappings: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """The pairs every mapping has (Alertmanager's ``commonLabels`` and ``commonAnnotations``)."""
    first, *rest = mappings
    return {k: v for k, v in first.items() if all(m.get(k) == v for m in rest)}


def _starts_at(alert: ActiveAlert) -> datetime:
    return alert.firing_since or alert.active_since


def _label_key(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def _headline(alert: ActiveAlert) -> str:
    summary = alert.annotations.get("summary")
    return summary or ", ".join(f"{k}={v}" for k, v in sorted(alert.labels.items()))


def _check_positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value}")
