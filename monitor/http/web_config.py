"""The web configuration file: TLS, basic authentication, headers and a rate limit, as every Prometheus exporter.

The file format is the Prometheus exporter-toolkit's (``--web.config.file``, documented at
https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md), so one file
serves node_exporter, Prometheus itself and fairwatch::

    tls_server_config:
      cert_file: tls.crt            # relative paths: relative to this file
      key_file: tls.key
      client_auth_type: RequireAndVerifyClientCert
      client_ca_file: ca.crt
      client_allowed_sans: [prometheus.monitoring.svc]
      min_version: TLS12
    http_server_config:
      headers: {Strict-Transport-Security: max-age=31536000}
    basic_auth_users:
      prometheus: $2y$10$...        # bcrypt hashes: htpasswd -nBC 10 "" | tr -d ':\\n'
    rate_limit: {interval: 100ms, burst: 50}

What Python's ``ssl`` module cannot do is refused with a message naming the key, never ignored:
``client_auth_type`` ``RequestClientCert`` and ``RequireAnyClientCert`` (a certificate asked for but
not verified) and ``curve_preferences``. ``http_server_config.http2`` is accepted (the server speaks
HTTP/1.1, which every Prometheus and browser speaks too).

:class:`WebConfigFile` re-reads the file - and the certificate, key and CA files it names - when any
of them changes (cert-manager renews certificates in place): each connection and request asks it for
the :class:`WebConfig` in force. A change that does not load is logged and the last good
configuration stays in force: a half-written file never opens the door or closes it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import ssl
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from monitor.core.errors import ConfigError
from monitor.core.times import parse_duration

__all__ = ["BasicAuthUsers", "RateLimiter", "WebConfig", "WebConfigFile", "load_web_config"]

log = logging.getLogger(__name__)

MAX_WEB_CONFIG_BYTES = 1 << 20

#: Go's names of the TLS 1.0-1.2 cipher suites (crypto/tls) -> OpenSSL's. TLS 1.3 suites are not
#: configurable, in Go as in OpenSSL's cipher list.
CIPHER_SUITES = {
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
}
_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
TLSVersionName = Literal["TLS10", "TLS11", "TLS12", "TLS13"]
ClientAuthType = Literal[
    "NoClientCert",
    "RequestClientCert",
    "RequireAnyClientCert",
    "VerifyClientCertIfGiven",
    "RequireAndVerifyClientCert",
]
#: The response headers the file may set (exporter-toolkit's list), with their accepted values.
_HEADERS: dict[str, tuple[str, ...] | None] = {
    "Content-Security-Policy": None,
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-Content-Type-Options": ("nosniff",),
    "X-XSS-Protection": None,
    "Strict-Transport-Security": None,
}
# bcrypt hashes as htpasswd -B, Go's x/crypto/bcrypt and Python's bcrypt write them
_BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TLSServerConfig(_Strict):
    cert: str | None = None
    key: SecretStr | None = None
    cert_file: str | None = None
    key_file: str | None = None
    client_auth_type: ClientAuthType = "NoClientCert"
    client_ca: str | None = None
    client_ca_file: str | None = None
    client_allowed_sans: list[str] = Field(default_factory=list)
    min_version: TLSVersionName = "TLS12"
    max_version: TLSVersionName = "TLS13"
    cipher_suites: list[str] = Field(default_factory=list)
    prefer_server_cipher_suites: bool = True
    curve_preferences: list[str] = Field(default_factory=list)

    @field_validator("client_auth_type")
    @classmethod
    def _verifiable(cls, value: str) -> str:
        if value in ("RequestClientCert", "RequireAnyClientCert"):
            raise ValueError(
                f"{value} (a certificate asked for but not verified) cannot be served by Python's ssl "
                "module; use VerifyClientCertIfGiven or RequireAndVerifyClientCert"
            )
        return value

    @field_validator("cipher_suites")
    @classmethod
    def _known_suites(cls, value: list[str]) -> list[str]:
        unknown = [name for name in value if name not in CIPHER_SUITES]
        if unknown:
            raise ValueError(f"unknown cipher suite {unknown[0]!r}; known: {', '.join(CIPHER_SUITES)}")
        return value

    @field_validator("curve_preferences")
    @classmethod
    def _no_curves(cls, value: list[str]) -> list[str]:
        if value:
            raise ValueError("cannot be honoured: Python's ssl module does not order key exchange groups")
        return value


class HTTPServerConfig(_Strict):
    http2: bool = True
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("headers")
    @classmethod
    def _known_headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if name not in _HEADERS:
                raise ValueError(f"header {name!r} cannot be set; these can: {', '.join(_HEADERS)}")
            allowed = _HEADERS[name]
            if allowed is not None and text and text.lower() not in allowed:
                raise ValueError(f"{name}: {text!r} is not one of {', '.join(allowed)}")
        return {name: text for name, text in value.items() if text}  # blank: unset


class RateLimitConfig(_Strict):
    interval: float = 0.0  # seconds between two requests; 0 turns the limiter off
    burst: int = Field(default=0, ge=0)

    @field_validator("interval", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float:
        return parse_duration(value).total_seconds()


class WebConfigFileModel(_Strict):
    tls_server_config: TLSServerConfig | None = None
    http_server_config: HTTPServerConfig = Field(default_factory=HTTPServerConfig)
    basic_auth_users: dict[str, SecretStr] = Field(default_factory=dict)
    rate_limit: RateLimitConfig = Field(default_factory=RateLimitConfig)

    @field_validator("basic_auth_users")
    @classmethod
    def _bcrypt(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for user, hashed in value.items():
            if not hashed.get_secret_value().startswith(_BCRYPT_PREFIXES):
                raise ValueError(
                    f"{user}: not a bcrypt hash (htpasswd -nBC 10 \"\" | tr -d ':\\n' makes one)"
                )
        return value


class BasicAuthUsers:
    """Checks ``Authorization: Basic`` headers against bcrypt hashes, caching what it verified.

    bcrypt is slow on purpose (~60 ms at cost 10); as exporter-toolkit does, each (user, hash,
    password) verified is remembered under a SHA-256 of the three, so a scraper pays it once. Only
    successes are remembered (wrong passwords cannot push a scraper's entry out), and one check at a
    time runs (a flood of wrong passwords costs at most one core, never the evaluations' interpreter:
    bcrypt releases it). An unknown user is checked against a throw-away hash all the same, so the
    time taken does not tell which user names exist. Passwords count their first 72 bytes, as Go's
    bcrypt (and so node_exporter and Prometheus) do.
    """

    _MAX_CACHED = 256

    def __init__(self, users: dict[str, bytes]) -> None:
        import bcrypt

        self._bcrypt = bcrypt
        self._users = users
        self._cache: set[bytes] = set()
        self._lock = threading.Lock()
        self._checking = threading.Lock()  # one bcrypt at a time
        self._dummy = bcrypt.hashpw(b"fairwatch", bcrypt.gensalt(rounds=10))

    def __bool__(self) -> bool:
        return bool(self._users)

    def verify(self, header: str | None) -> str | None:
        """The user a valid ``Authorization`` header names, else None."""
        user, password = _basic_credentials(header)
        if user is None or password is None:
            return None
        hashed = self._users.get(user)
        known = hashed is not None
        hashed = hashed if hashed is not None else self._dummy
        secret = password.encode()[:72]
        key = hashlib.sha256(b"\0".join((user.encode(), hashed, secret))).digest()
        with self._lock:
            if key in self._cache:
                return user if known else None
        with self._checking:
            try:
                good = self._bcrypt.checkpw(secret, hashed)
            except ValueError:  # a hash bcrypt cannot read (validated on load; belt and braces)
                good = False
        if not (good and known):
            return None
        with self._lock:
            if len(self._cache) >= self._MAX_CACHED:
                self._cache.clear()
            self._cache.add(key)
        return user


def _basic_credentials(header: str | None) -> tuple[str | None, str | None]:
    import base64
    import binascii

    if not header:
        return None, None
    scheme, _, encoded = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None, None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None, None
    user, sep, password = decoded.partition(":")
    return (user, password) if sep else (None, None)


class RateLimiter:
    """A token bucket: one request per ``interval`` on average, ``burst`` at once (Go's rate.Limiter)."""

    def __init__(self, interval: float, burst: int, *, clock: Any = time.monotonic) -> None:
        self._interval = interval
        self._burst = max(burst, 1)
        self._tokens = float(self._burst)
        self._clock = clock
        self._last = clock()
        self._lock = threading.Lock()

    def allow(self) -> bool:
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._last) / self._interval)
            self._last = now
            if self._tokens >= 1:
                self._tokens -= 1
                return True
            return False


@dataclass(frozen=True)
class WebConfig:
    """The web configuration in force: what the server and the request guard need from the file."""

    tls: ssl.SSLContext | None = None
    allowed_sans: frozenset[str] = frozenset()
    users: BasicAuthUsers | None = None
    headers: tuple[tuple[str, str], ...] = ()
    limiter: RateLimiter | None = None
    files: tuple[Path, ...] = field(default=())  # what a change of reloads it

    @property
    def authenticates(self) -> bool:
        """Whether every request proves who sent it (basic auth, or a verified client certificate)."""
        return bool(self.users) or (self.tls is not None and self.tls.verify_mode == ssl.CERT_REQUIRED)


def load_web_config(path: str | Path) -> WebConfig:
    """Read and check the file at ``path``; :class:`ConfigError` naming the key when it is wrong."""
    path = Path(path)
    where = f"web config {path}"
    try:
        with path.open("rb") as f:
            text = f.read(MAX_WEB_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read: {exc.strerror or exc}") from exc
    if len(text) > MAX_WEB_CONFIG_BYTES:
        raise ConfigError(f"{where}: larger than {MAX_WEB_CONFIG_BYTES} bytes")
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not YAML: {' '.join(str(exc).split())}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping at the top level")
    try:
        model = WebConfigFileModel.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(top level)"
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = "unknown key"
        raise ConfigError(f"{where}: {key}: {message}") from None
    base = path.parent
    files = [path]
    tls, sans = None, frozenset[str]()
    if model.tls_server_config is not None:
        tls, used = _ssl_context(model.tls_server_config, base, where)
        files += used
        sans = frozenset(model.tls_server_config.client_allowed_sans)
    users = {u: h.get_secret_value().encode() for u, h in model.basic_auth_users.items()}
    limit = model.rate_limit
    return WebConfig(
        tls=tls,
        allowed_sans=sans,
        users=BasicAuthUsers(users) if users else None,
        headers=tuple(model.http_server_config.headers.items()),
        limiter=RateLimiter(limit.interval, limit.burst) if limit.interval > 0 else None,
        files=tuple(files),
    )


def _ssl_context(config: TLSServerConfig, base: Path, where: str) -> tuple[ssl.SSLContext, list[Path]]:
    key = f"{where}: tls_server_config"
    if config.cert is not None and config.cert_file is not None:
        raise ConfigError(f"{key}: cert and cert_file are exclusive")
    if config.key is not None and config.key_file is not None:
        raise ConfigError(f"{key}: key and key_file are exclusive")
    if config.client_ca is not None and config.client_ca_file is not None:
        raise ConfigError(f"{key}: client_ca and client_ca_file are exclusive")
    if config.cert is None and config.cert_file is None:
        raise ConfigError(f"{key}.cert_file: missing (a certificate is needed to serve TLS)")
    if config.key is None and config.key_file is None:
        raise ConfigError(f"{key}.key_file: missing (the certificate's private key)")
    verifies = config.client_auth_type != "NoClientCert"
    if verifies and config.client_ca is None and config.client_ca_file is None:
        raise ConfigError(f"{key}.client_ca_file: {config.client_auth_type} needs the clients' CA")
    if config.client_allowed_sans and config.client_auth_type != "RequireAndVerifyClientCert":
        raise ConfigError(
            f"{key}.client_allowed_sans: needs client_auth_type RequireAndVerifyClientCert "
            "(otherwise a client may connect without a certificate, leaving no name to match)"
        )
    if _VERSIONS[config.min_version] > _VERSIONS[config.max_version]:
        raise ConfigError(
            f"{key}.min_version: {config.min_version} is above max_version {config.max_version}"
        )

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = _VERSIONS[config.min_version]
    context.maximum_version = _VERSIONS[config.max_version]
    if config.cipher_suites:
        context.set_ciphers(":".join(CIPHER_SUITES[name] for name in config.cipher_suites))
    if config.prefer_server_cipher_suites:
        context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:
        context.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    used: list[Path] = []
    cert_file = _file(base, config.cert_file, used)
    key_file = _file(base, config.key_file, used)
    with _pem_files(config.cert, config.key.get_secret_value() if config.key else None) as (
        cert_pem,
        key_pem,
    ):
        try:
            context.load_cert_chain(cert_file or cert_pem, key_file or key_pem)  # type: ignore[arg-type]
        except FileNotFoundError as exc:
            raise ConfigError(f"{key}: cannot read {exc.filename}") from None
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(f"{key}: the certificate and key do not load: {exc}") from None
    if verifies:
        context.verify_mode = (
            ssl.CERT_REQUIRED
            if config.client_auth_type == "RequireAndVerifyClientCert"
            else ssl.CERT_OPTIONAL
        )
        ca_file = _file(base, config.client_ca_file, used)
        try:
            if ca_file is not None:
                context.load_verify_locations(cafile=ca_file)
            else:
                context.load_verify_locations(cadata=config.client_ca)
        except FileNotFoundError as exc:
            raise ConfigError(f"{key}.client_ca_file: cannot read {exc.filename}") from None
        except (ssl.SSLError, OSError, ValueError) as exc:
            raise ConfigError(f"{key}: the clients' CA does not load: {exc}") from None
    return context, used


def _file(base: Path, name: str | None, used: list[Path]) -> str | None:
    if name is None:
        return None
    path = base / name
    used.append(path)
    return str(path)


class _pem_files:
    """Inline PEM text written to private temporary files for ``load_cert_chain`` (which reads only files)."""

    def __init__(self, cert: str | None, key: str | None) -> None:
        self._texts = (cert, key)
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> tuple[str | None, str | None]:
        if not any(self._texts):
            return None, None
        self._dir = tempfile.TemporaryDirectory(prefix="fairwatch-tls-")
        paths: list[str | None] = []
        for name, text in zip(("cert.pem", "key.pem"), self._texts, strict=True):
            if text is None:
                paths.append(None)
                continue
            path = os.path.join(self._dir.name, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            paths.append(path)
        return paths[0], paths[1]

    def __exit__(self, *exc: object) -> None:
        if self._dir is not None:
            self._dir.cleanup()


class WebConfigFile:
    """The web configuration at ``path``, re-read when the file or a file it names changes.

    Loaded once at start (a bad file is a :class:`ConfigError` then). Afterwards :meth:`current`
    compares each file's (inode, size, modification time) - a few ``stat`` calls per connection - and
    loads again on a change; a change that does not load is logged once and the last good
    configuration stays in force.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._config = load_web_config(self.path)
        self._signature = _signature(self._config.files)
        self._failed: tuple[Any, ...] | None = None
        self._lock = threading.Lock()

    def current(self) -> WebConfig:
        signature = _signature(self._config.files)
        if signature == self._signature or signature == self._failed:
            return self._config
        with self._lock:
            if signature == self._signature or signature == self._failed:
                return self._config
            try:
                config = load_web_config(self.path)
                if self._config.tls is not None and config.tls is None:
                    raise ConfigError(
                        f"web config {self.path}: tls_server_config removed while serving TLS: a port "
                        "never turns plain HTTP by an edit (restart to serve plain HTTP)"
                    )
            except ConfigError as exc:
                self._failed = signature
                log.error("web config changed but does not load, keeping the one in force: %s", exc)
                return self._config
            # the files as they were before this load: a change made while it ran is seen next time
            same_files = config.files == self._config.files
            self._config, self._failed = config, None
            self._signature = signature if same_files else _signature(config.files)
            log.info("web config reloaded from %s", self.path)
            return config


def _signature(files: tuple[Path, ...]) -> tuple[Any, ...]:
    out: list[Any] = []
    for path in files:
        try:
            st = path.stat()
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)
