"""TLS, basic authentication, headers and the rate limit of the web config file, over real sockets.

Certificates come from a throw-away CA made with the real ``openssl`` (tests/tls.py); clients are
urllib with an ``ssl`` context, ``openssl s_client`` and ``curl`` where a second implementation
matters; bcrypt hashes are made with the ``bcrypt`` package.
"""

from __future__ import annotations

import base64
import logging
import shutil
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
import yaml
from prometheus_client import CollectorRegistry

from monitor.core.errors import ConfigError
from monitor.http import PROBES, ServerHandle, WebConfigFile, guard, load_web_config, make_app, serve
from monitor.http.web_config import RateLimiter
from monitor.outputs.prometheus.collector import SnapshotCollector
from tests.monitor.test_exporter import make_snapshot
from tests.tls import PKI, make_pki

PATHS = ["/metrics", "/", "/api/v1/results", "/api/v1/history", "/api/v1/power", "/static/live.js",
         "/healthz", "/readyz", "/no/such/path"]  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _hash(password: str) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()


def _write(path: Path, config: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(config))
    return path


def _serve(web_file: Path, *, open_paths: frozenset[str] = frozenset()) -> ServerHandle:
    snapshot = make_snapshot()
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: snapshot, version="1.2.3"))
    app = make_app(registry=registry, get_snapshot=lambda: snapshot, ready=lambda: True)
    web = WebConfigFile(web_file)
    return serve(guard(app, web, open_paths=open_paths), "127.0.0.1", 0, web=web)


def _context(pki: PKI, *, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    return context


def _get(
    url: str, *, context: ssl.SSLContext | None = None, auth: tuple[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    headers = {}
    if auth is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
    )
    try:
        with opener.open(urllib.request.Request(url, headers=headers), timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.fixture
def tls_server(tmp_path: Path, pki: PKI) -> Iterator[tuple[ServerHandle, Path]]:
    config = {
        "tls_server_config": {"cert_file": str(pki.server_cert), "key_file": str(pki.server_key)},
        "basic_auth_users": {"prometheus": _hash("s3cret"), "grafana": _hash("other")},
        "http_server_config": {
            "headers": {"X-Frame-Options": "deny", "Strict-Transport-Security": "max-age=60"}
        },
    }
    web_file = _write(tmp_path / "web.yml", config)
    server = _serve(web_file)
    try:
        yield server, web_file
    finally:
        server.shutdown()


def test_every_path_needs_credentials_over_tls(tls_server: tuple[ServerHandle, Path], pki: PKI) -> None:
    server, _ = tls_server
    assert server.url.startswith("https://127.0.0.1:")
    context = _context(pki)
    for path in PATHS:
        status, headers, body = _get(server.url + path, context=context)
        assert status == 401, path
        assert headers["WWW-Authenticate"] == 'Basic realm="fairwatch"'
        assert body == b"Unauthorized\n"
        assert headers["X-Frame-Options"] == "deny"  # the file's headers on every answer
        assert _get(server.url + path, context=context, auth=("prometheus", "wrong"))[0] == 401, path
        assert _get(server.url + path, context=context, auth=("nobody", "s3cret"))[0] == 401, path
        # the right password of another user is no password of this one
        assert _get(server.url + path, context=context, auth=("prometheus", "other"))[0] == 401, path
    status, headers, body = _get(server.url + "/metrics", context=context, auth=("prometheus", "s3cret"))
    assert status == 200 and b"fairwatch_build_info" in body
    assert headers["Strict-Transport-Security"] == "max-age=60"
    assert _get(server.url + "/healthz", context=context, auth=("grafana", "other"))[:1] == (200,)
    assert _get(server.url + "/no/such/path", context=context, auth=("grafana", "other"))[0] == 404


def test_plain_http_to_the_tls_port_is_refused(tls_server: tuple[ServerHandle, Path]) -> None:
    server, _ = tls_server
    status, _, body = _get(server.url.replace("https://", "http://") + "/metrics")
    assert status == 400
    assert body == b"Client sent an HTTP request to an HTTPS server.\n"


def test_a_client_that_does_not_trust_the_certificate_fails(tls_server: tuple[ServerHandle, Path]) -> None:
    server, _ = tls_server
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        _get(server.url + "/healthz", context=ssl.create_default_context())


def test_curl_and_openssl_speak_to_it(tls_server: tuple[ServerHandle, Path], pki: PKI) -> None:
    server, _ = tls_server
    curl = shutil.which("curl")
    assert curl, "curl is not installed (scripts/install-system-deps installs it)"
    out = subprocess.run(
        [curl, "-sS", "--cacert", str(pki.ca), "-u", "prometheus:s3cret", "-o", "-", "-w", "%{http_code}",
         "--tlsv1.2", server.url + "/healthz"],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    assert out.stdout == "ok\n200"
    # TLS 1.1 is below the default min_version (TLS12): the handshake fails
    old = subprocess.run(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{server.port}", "-tls1_1", "-CAfile", str(pki.ca)],
        input="", capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert old.returncode != 0


def test_the_file_is_read_again_when_it_changes(
    tls_server: tuple[ServerHandle, Path], pki: PKI, caplog: pytest.LogCaptureFixture
) -> None:
    server, web_file = tls_server
    context = _context(pki)
    url = server.url + "/healthz"
    assert _get(url, context=context, auth=("prometheus", "s3cret"))[0] == 200
    config = yaml.safe_load(web_file.read_text())
    config["basic_auth_users"] = {"prometheus": _hash("rotated")}
    _write(web_file, config)
    assert _get(url, context=context, auth=("prometheus", "s3cret"))[0] == 401
    assert _get(url, context=context, auth=("prometheus", "rotated"))[0] == 200
    # a change that does not load leaves the last good configuration in force, and says so
    web_file.write_text("basic_auth_users: {prometheus: not-a-hash}\n")
    with caplog.at_level(logging.ERROR, logger="monitor.http.web_config"):
        assert _get(url, context=context, auth=("prometheus", "rotated"))[0] == 200
        assert _get(url, context=context)[0] == 401
    assert [r.getMessage() for r in caplog.records].count(
        f"web config changed but does not load, keeping the one in force: web config {web_file}: "
        "basic_auth_users: prometheus: not a bcrypt hash (htpasswd -nBC 10 \"\" | tr -d ':\\n' makes one)"
    ) == 1  # once, not at every request


def test_a_renewed_certificate_serves_the_next_connection(tmp_path: Path, pki: PKI) -> None:
    renewed = make_pki(tmp_path / "renewed")  # another CA: which one the server presents is visible
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(pki.server_cert, cert)
    shutil.copy(pki.server_key, key)
    web_file = _write(
        tmp_path / "web.yml", {"tls_server_config": {"cert_file": "tls.crt", "key_file": "tls.key"}}
    )
    server = _serve(web_file)  # paths relative to the file
    try:
        assert _get(server.url + "/healthz", context=_context(pki))[0] == 200
        time.sleep(0.01)  # a new modification time even on coarse clocks
        shutil.copy(renewed.server_cert, cert)
        shutil.copy(renewed.server_key, key)
        assert _get(server.url + "/healthz", context=_context(renewed))[0] == 200
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            _get(server.url + "/healthz", context=_context(pki))
    finally:
        server.shutdown()


def test_client_certificates(tmp_path: Path, pki: PKI) -> None:
    tls = {
        "cert_file": str(pki.server_cert),
        "key_file": str(pki.server_key),
        "client_auth_type": "RequireAndVerifyClientCert",
        "client_ca_file": str(pki.ca),
        "client_allowed_sans": ["prometheus.monitoring.svc"],
    }
    server = _serve(_write(tmp_path / "web.yml", {"tls_server_config": tls}))
    try:
        url = server.url + "/metrics"
        status, _, body = _get(url, context=_context(pki, cert=(pki.client_cert, pki.client_key)))
        assert status == 200 and b"fairwatch_build_info" in body
        with pytest.raises((urllib.error.URLError, ConnectionError, ssl.SSLError)):
            _get(url, context=_context(pki))  # no certificate
        with pytest.raises((urllib.error.URLError, ConnectionError, ssl.SSLError)):
            _get(url, context=_context(pki, cert=(pki.other_cert, pki.other_key)))  # signed, but not allowed
    finally:
        server.shutdown()


def test_probes_open_only_when_asked(tmp_path: Path) -> None:
    web_file = _write(tmp_path / "web.yml", {"basic_auth_users": {"prometheus": _hash("s3cret")}})
    server = _serve(web_file, open_paths=PROBES)  # basic auth over plain HTTP: allowed, as the toolkit does
    try:
        for path in PATHS:
            expected = 200 if path in PROBES else 401
            assert _get(server.url + path)[0] == expected, path
    finally:
        server.shutdown()


def test_rate_limit(tmp_path: Path) -> None:
    web_file = _write(tmp_path / "web.yml", {"rate_limit": {"interval": "1h", "burst": 3}})
    server = _serve(web_file, open_paths=PROBES)
    try:
        assert [_get(server.url + "/api/v1/results")[0] for _ in range(4)] == [200, 200, 200, 429]
        assert _get(server.url + "/healthz")[0] == 200  # the probes are never limited
    finally:
        server.shutdown()


def test_token_bucket() -> None:
    now = [0.0]
    bucket = RateLimiter(0.5, 2, clock=lambda: now[0])
    assert [bucket.allow() for _ in range(3)] == [True, True, False]
    now[0] = 0.5
    assert [bucket.allow() for _ in range(2)] == [True, False]
    now[0] = 10.0  # refills to the burst, not beyond
    assert [bucket.allow() for _ in range(3)] == [True, True, False]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"tls_server_config": {"cert_file": "a"}, "basic_auth_user": {}}, "basic_auth_user: unknown key"),
        ({"tls_server_config": {"key_file": "k"}}, "tls_server_config.cert_file: missing"),
        ({"tls_server_config": {"cert_file": "c"}}, "tls_server_config.key_file: missing"),
        (
            {
                "tls_server_config": {
                    "cert_file": "c",
                    "key_file": "k",
                    "client_auth_type": "RequestClientCert",
                }
            },
            "tls_server_config.client_auth_type: RequestClientCert (a certificate asked for but not verified)",
        ),
        (
            {"tls_server_config": {"cert_file": "c", "key_file": "k", "client_auth_type": "Sometimes"}},
            "tls_server_config.client_auth_type: Input should be 'NoClientCert'",
        ),
        (
            {
                "tls_server_config": {
                    "cert_file": "c",
                    "key_file": "k",
                    "client_auth_type": "RequireAndVerifyClientCert",
                }
            },
            "tls_server_config.client_ca_file: RequireAndVerifyClientCert needs the clients' CA",
        ),
        (
            {"tls_server_config": {"cert_file": "c", "key_file": "k", "client_allowed_sans": ["x"]}},
            "tls_server_config.client_allowed_sans: needs client_auth_type RequireAndVerifyClientCert",
        ),
        (
            {
                "tls_server_config": {
                    "cert_file": "c",
                    "key_file": "k",
                    "min_version": "TLS13",
                    "max_version": "TLS12",
                }
            },
            "tls_server_config.min_version: TLS13 is above max_version TLS12",
        ),
        (
            {"tls_server_config": {"cert_file": "c", "key_file": "k", "cipher_suites": ["TLS_FAST"]}},
            "tls_server_config.cipher_suites: unknown cipher suite 'TLS_FAST'",
        ),
        (
            {"tls_server_config": {"cert_file": "c", "key_file": "k", "curve_preferences": ["X25519"]}},
            "tls_server_config.curve_preferences: cannot be honoured",
        ),
        (
            {"tls_server_config": {"cert_file": "missing.crt", "key_file": "missing.key"}},
            "tls_server_config: cannot read",
        ),
        ({"basic_auth_users": {"alice": "plaintext"}}, "basic_auth_users: alice: not a bcrypt hash"),
        (
            {"http_server_config": {"headers": {"X-Powered-By": "me"}}},
            "http_server_config.headers: header 'X-Powered-By' cannot be set",
        ),
        (
            {"http_server_config": {"headers": {"X-Frame-Options": "allow"}}},
            "http_server_config.headers: X-Frame-Options: 'allow' is not one of deny, sameorigin",
        ),
        ({"rate_limit": {"interval": "soon", "burst": 1}}, "rate_limit.interval:"),
    ],
)
def test_a_bad_file_names_the_key(tmp_path: Path, config: dict[str, object], message: str) -> None:
    web_file = _write(tmp_path / "web.yml", config)
    with pytest.raises(ConfigError) as raised:
        load_web_config(web_file)
    assert str(raised.value).startswith(f"web config {web_file}: {message}"), str(raised.value)


def test_cipher_suites_and_versions_are_applied(tmp_path: Path, pki: PKI) -> None:
    tls = {
        "cert_file": str(pki.server_cert),
        "key_file": str(pki.server_key),
        "max_version": "TLS12",
        "cipher_suites": ["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"],
    }
    server = _serve(_write(tmp_path / "web.yml", {"tls_server_config": tls}))
    try:
        with (
            socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw,
            _context(pki).wrap_socket(raw, server_hostname="localhost") as conn,
        ):
            assert conn.version() == "TLSv1.2"
            assert conn.cipher()[0] == "ECDHE-RSA-AES256-GCM-SHA384"
    finally:
        server.shutdown()


def test_inline_certificate_and_key(tmp_path: Path, pki: PKI) -> None:
    tls = {"cert": pki.server_cert.read_text(), "key": pki.server_key.read_text()}
    server = _serve(_write(tmp_path / "web.yml", {"tls_server_config": tls}))
    try:
        assert _get(server.url + "/healthz", context=_context(pki))[0] == 200
    finally:
        server.shutdown()


def test_long_passwords_count_their_first_72_bytes_as_go_does() -> None:
    """bcrypt 5 refuses passwords over 72 bytes; Go's bcrypt (node_exporter, Prometheus) uses their
    first 72: a long scrape password that works there must work here."""
    from monitor.http.web_config import BasicAuthUsers

    long = "p" * 100
    users = BasicAuthUsers({"prometheus": bcrypt.hashpw(long.encode()[:72], bcrypt.gensalt(rounds=4))})
    header = "Basic " + base64.b64encode(f"prometheus:{long}".encode()).decode()
    assert users.verify(header) == "prometheus"
    wrong = "Basic " + base64.b64encode(b"prometheus:" + b"q" * 100).decode()
    assert users.verify(wrong) is None
    assert users.verify(wrong) is None  # failures are not remembered, nor are they successes later


def test_an_edit_never_turns_a_tls_port_into_plain_http(
    tls_server: tuple[ServerHandle, Path], pki: PKI, caplog: pytest.LogCaptureFixture
) -> None:
    server, web_file = tls_server
    config = yaml.safe_load(web_file.read_text())
    del config["tls_server_config"]
    _write(web_file, config)
    with caplog.at_level(logging.ERROR, logger="monitor.http.web_config"):
        assert _get(server.url + "/healthz", context=_context(pki), auth=("prometheus", "s3cret"))[0] == 200
    assert any("tls_server_config removed while serving TLS" in r.getMessage() for r in caplog.records)


def test_ip_sans_compare_as_addresses() -> None:
    from monitor.http.server import _san_allowed

    cert = {"subjectAltName": (("DNS", "scraper"), ("IP Address", "2001:DB8:0:0:0:0:0:1"))}
    assert _san_allowed(cert, frozenset({"2001:db8::1"}))  # Python spells IPv6 SANs in full, upper case
    assert not _san_allowed(cert, frozenset({"2001:db8::2", "other"}))
    assert _san_allowed(cert, frozenset({"scraper"}))
