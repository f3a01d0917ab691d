"""Real servers for the integration tests: PostgreSQL, Prometheus, Alertmanager, an S3 server and a webhook
receiver.

Registered as a pytest plugin from ``tests/conftest.py`` (``pytest_plugins = ["tests.servers"]``).

Fixtures
--------
``postgres_url`` (session)
    SQLAlchemy URL ``postgresql+psycopg://USER:PASSWORD@127.0.0.1:PORT/fairwatch_test`` of a throw-away
    cluster (``initdb`` in a temp dir, TCP logins need the password, stopped and deleted at the end).
``s3_url`` (session)
    ``s3://fairwatch-test/store?endpoint_override=...`` of a bucket on moto's S3 server (a real HTTP server
    speaking the S3 API, started as a process), its credentials in the environment.
``webhook_receiver`` (function)
    :class:`WebhookReceiver`: a loopback HTTP server recording every POSTed JSON body.
``alertmanager`` (function)
    :class:`AlertmanagerServer`: a real Alertmanager routing every alert to its own ``webhook_receiver``.
``prometheus_factory`` (function)
    ``prometheus_factory(config_yaml, rule_files=None, *, tsdb_path=None) -> PrometheusServer``; several
    may be started, all are stopped at teardown. The config may use ``{rules_dir}`` and
    ``{listen_address}`` placeholders; ``tsdb_path`` starts it on an existing data directory (blocks
    made by ``promtool tsdb create-blocks-from``).

Every server binds to 127.0.0.1 on a free port, is stopped by PID in a finaliser (also when the test
fails) and every wait is bounded. A missing binary FAILS the test (never skips), pointing at
``scripts/install-system-deps``.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

INSTALL_HINT = "run `scripts/install-system-deps` (as root, or a user with sudo) to install it"

# Bounds for every wait in this module (seconds).
STARTUP_TIMEOUT = 30.0
STOP_GRACE = 5.0
POLL_INTERVAL = 0.1

# The servers are on loopback: never send these requests through an HTTP(S)_PROXY from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# --------------------------------------------------------------------------------------------------------
# Finding binaries
# --------------------------------------------------------------------------------------------------------


def find_tool(*names: str) -> str:
    """Absolute path of the first of ``names`` found on PATH; fail the test when none is."""
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(f"{' / '.join(names)} not found on PATH: {INSTALL_HINT}", pytrace=False)


def prometheus_bin() -> str:
    return find_tool("prometheus")


def promtool_bin() -> str:
    return find_tool("promtool")


def alertmanager_bin() -> str:
    # Debian ships the daemon as `prometheus-alertmanager`; upstream tarballs call it `alertmanager`.
    return find_tool("prometheus-alertmanager", "alertmanager")


def amtool_bin() -> str:
    return find_tool("amtool")


def _version_key(name: str) -> tuple[int, ...]:
    """Sort key for PostgreSQL version directory names such as ``15`` or ``9.6``."""
    return tuple(int(part) if part.isdigit() else -1 for part in name.split("."))


@dataclass(frozen=True)
class PostgresTools:
    initdb: str
    pg_ctl: str


def postgres_tools() -> PostgresTools:
    """``initdb`` and ``pg_ctl``: the highest ``/usr/lib/postgresql/<ver>/bin`` (Debian), else PATH."""
    # Debian keeps the server binaries off PATH, one directory per major version.
    base = Path("/usr/lib/postgresql")
    if base.is_dir():
        for version_dir in sorted(base.iterdir(), key=lambda p: _version_key(p.name), reverse=True):
            initdb, pg_ctl = version_dir / "bin" / "initdb", version_dir / "bin" / "pg_ctl"
            if os.access(initdb, os.X_OK) and os.access(pg_ctl, os.X_OK):
                return PostgresTools(str(initdb), str(pg_ctl))
    return PostgresTools(find_tool("initdb"), find_tool("pg_ctl"))


# --------------------------------------------------------------------------------------------------------
# Small helpers: ports, waiting, HTTP, logs
# --------------------------------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it).

    >>> 1024 <= free_port() <= 65535
    True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until(condition: Callable[[], T | None], timeout: float, what: str) -> T:
    """Poll ``condition`` until it returns something truthy (returned); fail after ``timeout`` seconds.

    Exceptions raised by ``condition`` count as "not yet" (the server may still be starting); the last one
    is reported on timeout.
    """
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            result = condition()
            if result:
                return result
        except Exception as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}{detail}", pytrace=False)
        time.sleep(POLL_INTERVAL)


def http_request(
    url: str, method: str = "GET", json_body: Any = None, timeout: float = 10.0
) -> tuple[int, bytes]:
    """Send one HTTP request (JSON body optional) without any proxy; return (status, body).

    HTTP error statuses are returned, not raised, so callers can assert on them.
    """
    data = None if json_body is None else json.dumps(json_body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def http_json(url: str, method: str = "GET", json_body: Any = None, timeout: float = 10.0) -> Any:
    """Like :func:`http_request` but requires a 2xx status and returns the decoded JSON body."""
    status, body = http_request(url, method, json_body, timeout)
    assert 200 <= status < 300, f"{method} {url} -> HTTP {status}: {body[:500]!r}"
    return json.loads(body) if body.strip() else None


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file, for failure messages."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"<cannot read {path}: {exc}>"
    return "\n".join(text.splitlines()[-lines:])


# --------------------------------------------------------------------------------------------------------
# Generic managed process
# --------------------------------------------------------------------------------------------------------


class ManagedProcess:
    """A server process with its output in a log file, a readiness wait, and a stop by PID.

    >>> proc = ManagedProcess("sleeper", ["sleep", "30"], Path(os.devnull)).start()
    >>> proc.running
    True
    >>> proc.stop()
    >>> proc.running
    False
    """

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, cwd: Path | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.cwd = cwd
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self._popen is None else self._popen.pid

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def start(self) -> ManagedProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            # A new session keeps a Ctrl-C at the terminal away from the server: pytest gets it and the
            # finalisers stop the server cleanly instead of it dying half-way.
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.cwd,
                start_new_session=True,
            )
        return self

    def fail(self, message: str) -> None:
        """Fail the test with ``message``, the command line and the tail of the server log."""
        pytest.fail(
            f"{self.name}: {message}\ncommand: {' '.join(self.argv)}\n"
            f"--- last lines of {self.log_path} ---\n{log_tail(self.log_path)}",
            pytrace=False,
        )

    def wait_http_ok(self, url: str, timeout: float = STARTUP_TIMEOUT) -> None:
        """Wait until ``url`` answers HTTP 200; fail early if the process exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running:
                code = None if self._popen is None else self._popen.returncode
                self.fail(f"exited with code {code} before {url} answered")
            try:
                if http_request(url, timeout=2.0)[0] == 200:
                    return
            except OSError:
                pass  # not listening yet
            time.sleep(POLL_INTERVAL)
        self.fail(f"{url} did not answer 200 within {timeout:.0f}s")

    def stop(self, grace: float = STOP_GRACE) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds; always reaps the child. Idempotent."""
        popen = self._popen
        if popen is None or popen.poll() is not None:
            return
        try:
            os.kill(popen.pid, signal.SIGTERM)
            popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.kill(popen.pid, signal.SIGKILL)
            popen.wait(timeout=grace)
        except ProcessLookupError:
            popen.wait(timeout=grace)


def _start_http_server(
    name: str, argv: Sequence[str], workdir: Path, ready_url: str, cleanup: list[ManagedProcess]
) -> ManagedProcess:
    """Start a server, register it for cleanup *before* waiting (so a failed start is still stopped)."""
    process = ManagedProcess(name, argv, workdir / f"{name}.log", cwd=workdir).start()
    cleanup.append(process)
    process.wait_http_ok(ready_url)
    return process


def _check_config(argv: Sequence[str], what: str) -> None:
    """Run a config checker (promtool/amtool) so a bad config fails with its message, not a timeout."""
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if result.returncode != 0:
        pytest.fail(f"{what} rejected:\n{result.stdout}{result.stderr}", pytrace=False)


# --------------------------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------------------------


class TempPostgres:
    """A throw-away PostgreSQL cluster in a temp dir, on 127.0.0.1:<free port>.

    Local (unix socket) logins are trusted so the fixture can create the role and the database; TCP logins
    need the role's password (scram-sha-256), so the URL the tests get is checked like a real one.
    """

    SUPERUSER = "postgres"

    def __init__(self) -> None:
        self.tools = postgres_tools()
        self.port = free_port()
        self.base = Path(tempfile.mkdtemp(prefix="fairwatch-pg-"))
        self.data_dir = self.base / "data"
        self.socket_dir = self.base / "sock"
        self.log_path = self.base / "postgres.log"
        self.socket_dir.mkdir()
        self.run_as: list[str] = []
        if os.geteuid() == 0:
            # initdb and postgres refuse to run as root: run them as the `postgres` system user.
            user = _ensure_postgres_user()
            for path in (self.base, self.socket_dir):
                shutil.chown(path, user.pw_uid, user.pw_gid)
            self.run_as = [find_tool("runuser"), "-u", user.pw_name, "--"]

    def _run(self, argv: Sequence[str], timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        # cwd=base: the postgres user may not be allowed into the caller's working directory.
        return subprocess.run(
            [*self.run_as, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.base,
            check=False,
        )

    def _fail(self, message: str, result: subprocess.CompletedProcess[str]) -> None:
        pytest.fail(
            f"PostgreSQL: {message} (exit {result.returncode})\n{result.stdout}{result.stderr}\n"
            f"--- last lines of {self.log_path} ---\n{log_tail(self.log_path)}",
            pytrace=False,
        )

    def init(self) -> None:
        result = self._run(
            [
                self.tools.initdb,
                f"--pgdata={self.data_dir}",
                f"--username={self.SUPERUSER}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",  # independent of the machine's locales
                "--no-sync",  # a throw-away cluster does not need fsync
            ]
        )
        if result.returncode != 0:
            self._fail("initdb failed", result)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        result = self._run(
            [
                self.tools.pg_ctl,
                *("-D", str(self.data_dir), "-l", str(self.log_path), "-o", options),
                *("-w", "-t", str(int(STARTUP_TIMEOUT)), "start"),  # -w: wait until it accepts connections
            ],
            timeout=STARTUP_TIMEOUT + 10,
        )
        if result.returncode != 0:
            self._fail("pg_ctl start failed", result)

    def create_database(self, user: str, password: str, dbname: str) -> None:
        """Create a login role with ``password`` and a database it owns, over the trusted unix socket."""
        try:
            import psycopg
            from psycopg import sql
        except ImportError:
            pytest.fail("psycopg is not installed: pip install -e '.[test]'", pytrace=False)
        with psycopg.connect(
            host=str(self.socket_dir),
            port=self.port,
            user=self.SUPERUSER,
            dbname="postgres",
            autocommit=True,  # CREATE DATABASE cannot run in a transaction
            connect_timeout=10,
        ) as conn:
            # DDL takes no bound parameters: quote the identifier and literal client-side.
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(user), sql.Literal(password)
                )
            )
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(dbname), sql.Identifier(user))
            )

    def stop_and_remove(self) -> None:
        """Fast shutdown (kill the postmaster if that fails), then delete the whole directory."""
        if (self.data_dir / "postmaster.pid").exists():
            try:
                result = self._run(
                    [self.tools.pg_ctl, "-D", str(self.data_dir), "-m", "fast", "-w", "-t", "20", "stop"],
                    timeout=30,
                )
                stopped = result.returncode == 0
            except subprocess.TimeoutExpired:
                stopped = False
            if not stopped:
                _kill_postmaster(self.data_dir / "postmaster.pid")
        shutil.rmtree(self.base, ignore_errors=True)


def _ensure_postgres_user() -> pwd.struct_passwd:
    """The `postgres` system user (the Debian package creates it; create it here when missing)."""
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--shell=/usr/sbin/nologin",
                "postgres",
            ],
            check=True,
            timeout=30,
        )
        return pwd.getpwnam("postgres")


def _kill_postmaster(pid_file: Path) -> None:
    """Last resort when ``pg_ctl stop`` did not work: SIGKILL the PID on the first line of postmaster.pid."""
    try:
        pid = int(pid_file.read_text().splitlines()[0])
        os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError, IndexError):
        pass


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """SQLAlchemy URL of a fresh ``fairwatch_test`` database on a throw-away local cluster."""
    user, password, dbname = "fairwatch", secrets.token_hex(16), "fairwatch_test"
    cluster = TempPostgres()
    try:
        cluster.init()
        cluster.start()
        cluster.create_database(user, password, dbname)
        yield f"postgresql+psycopg://{user}:{password}@127.0.0.1:{cluster.port}/{dbname}"
    finally:
        cluster.stop_and_remove()


@pytest.fixture(scope="session")
def s3_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``s3://`` URL of a bucket on a local S3-compatible server: moto's (``moto[server]``, a real
    HTTP server speaking the S3 API; no S3 or MinIO runs here). The AWS SDK inside pyarrow takes its
    credentials from the environment, as in a pod: set for the session (moto accepts any)."""
    import pyarrow.fs as pafs

    port = free_port()
    log = tmp_path_factory.mktemp("s3") / "moto.log"
    argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    server = ManagedProcess("moto S3 server", argv, log).start()
    saved = {
        k: os.environ.get(k)
        for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED")
    }
    try:
        server.wait_http_ok(f"http://127.0.0.1:{port}/moto-api/")
        os.environ |= {"AWS_ACCESS_KEY_ID": "fairwatch", "AWS_SECRET_ACCESS_KEY": secrets.token_hex(16)}
        os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
        endpoint = {"endpoint_override": f"127.0.0.1:{port}", "scheme": "http", "region": "us-east-1"}
        pafs.S3FileSystem(**endpoint, allow_bucket_creation=True).create_dir("fairwatch-test")
        query = "&".join(f"{k}={v}" for k, v in endpoint.items())
        yield f"s3://fairwatch-test/store?{query}"
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# --------------------------------------------------------------------------------------------------------
# Webhook receiver
# --------------------------------------------------------------------------------------------------------


class WebhookReceiver:
    """A threaded loopback HTTP server that records every POSTed JSON body.

    ``url`` is where to POST, ``received`` a snapshot of the bodies so far (in arrival order) and
    :meth:`wait_for` blocks until a body matches a predicate.
    """

    def __init__(self) -> None:
        self._bodies: list[Any] = []
        self._cond = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._make_handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="webhook-receiver", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    @property
    def received(self) -> list[Any]:
        with self._cond:
            return list(self._bodies)

    def wait_for(self, predicate: Callable[[Any], bool], timeout: float = 30.0) -> Any:
        """Return the first received body for which ``predicate`` is true; fail after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for body in self._bodies:
                    if predicate(body):
                        return body
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    pytest.fail(
                        f"webhook receiver: no matching body within {timeout:.0f}s; "
                        f"received {len(self._bodies)}: {json.dumps(self._bodies)[:2000]}",
                        pytrace=False,
                    )
                self._cond.wait(remaining)

    def _record(self, body: Any) -> None:
        with self._cond:
            self._bodies.append(body)
            self._cond.notify_all()

    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"null")
                except ValueError:
                    self.send_error(400, "body is not JSON")
                    return
                receiver._record(body)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest's captured output free of access-log noise

        return Handler

    def start(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=STOP_GRACE)


@pytest.fixture
def webhook_receiver() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver().start()
    try:
        yield receiver
    finally:
        receiver.close()


# --------------------------------------------------------------------------------------------------------
# Alertmanager
# --------------------------------------------------------------------------------------------------------

ALERTMANAGER_CONFIG = """\
route:
  receiver: webhook
  group_by: ['...']      # every alert is its own group: notifications are not held back by others
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: webhook
    webhook_configs:
      - url: '{webhook_url}'
        send_resolved: true
"""


@dataclass
class AlertmanagerServer:
    url: str  # e.g. http://127.0.0.1:PORT (no trailing slash)
    receiver: WebhookReceiver
    process: ManagedProcess
    config_path: Path


@pytest.fixture
def alertmanager(webhook_receiver: WebhookReceiver) -> Iterator[AlertmanagerServer]:
    """A real Alertmanager on 127.0.0.1 sending every notification (firing and resolved) to the receiver."""
    binary, amtool = alertmanager_bin(), amtool_bin()
    workdir = Path(tempfile.mkdtemp(prefix="fairwatch-am-"))
    cleanup: list[ManagedProcess] = []
    try:
        config_path = workdir / "alertmanager.yml"
        config_path.write_text(ALERTMANAGER_CONFIG.format(webhook_url=webhook_receiver.url))
        _check_config([amtool, "check-config", str(config_path)], "alertmanager.yml")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        argv = [
            binary,
            f"--config.file={config_path}",
            f"--storage.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",  # empty: no gossip port, a single standalone instance
        ]
        process = _start_http_server("alertmanager", argv, workdir, f"{url}/-/ready", cleanup)
        yield AlertmanagerServer(url=url, receiver=webhook_receiver, process=process, config_path=config_path)
    finally:
        for proc in cleanup:
            proc.stop()
        shutil.rmtree(workdir, ignore_errors=True)


# --------------------------------------------------------------------------------------------------------
# Prometheus
# --------------------------------------------------------------------------------------------------------


@dataclass
class PrometheusServer:
    url: str  # e.g. http://127.0.0.1:PORT (no trailing slash)
    listen_address: str  # 127.0.0.1:PORT, handy as a self-scrape target
    config_path: Path
    rules_dir: Path
    process: ManagedProcess

    def query(self, expr: str) -> list[Any]:
        """Instant query; returns ``data.result`` (fails on a non-success answer)."""
        answer = http_json(f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")
        assert answer["status"] == "success", answer
        result: list[Any] = answer["data"]["result"]
        return result


@dataclass
class _PrometheusFactory:
    servers: list[ManagedProcess] = field(default_factory=list)
    workdirs: list[Path] = field(default_factory=list)

    def __call__(
        self, config_yaml: str, rule_files: dict[str, str] | None = None, *, tsdb_path: Path | None = None
    ) -> PrometheusServer:
        workdir = Path(tempfile.mkdtemp(prefix="fairwatch-prom-"))
        self.workdirs.append(workdir)
        rules_dir = workdir / "rules"
        rules_dir.mkdir()
        for name, text in (rule_files or {}).items():
            (rules_dir / name).write_text(text)

        port = free_port()
        listen_address = f"127.0.0.1:{port}"
        # str.replace, not str.format: PromQL and templates in the YAML are full of braces.
        config = config_yaml.replace("{rules_dir}", str(rules_dir)).replace(
            "{listen_address}", listen_address
        )
        config_path = workdir / "prometheus.yml"
        config_path.write_text(config)
        # Also checks the referenced rule files, with promtool's message instead of a startup timeout.
        _check_config([promtool_bin(), "check", "config", str(config_path)], "prometheus.yml")

        url = f"http://{listen_address}"
        argv = [
            prometheus_bin(),
            f"--config.file={config_path}",
            f"--storage.tsdb.path={tsdb_path or workdir / 'data'}",
            f"--web.listen-address={listen_address}",
        ]
        process = _start_http_server("prometheus", argv, workdir, f"{url}/-/ready", self.servers)
        return PrometheusServer(url, listen_address, config_path, rules_dir, process)

    def close(self) -> None:
        for proc in self.servers:
            proc.stop()
        # Removes the TSDB too (its WAL preallocates large segment files).
        for workdir in self.workdirs:
            shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def prometheus_factory() -> Iterator[Callable[..., PrometheusServer]]:
    """``prometheus_factory(config_yaml, rule_files=None)`` starts a real Prometheus on 127.0.0.1.

    ``rule_files`` maps file names to YAML text, written into ``{rules_dir}``; ``{listen_address}`` is the
    server's own ``127.0.0.1:PORT``. Every server started is stopped and deleted at teardown.
    """
    factory = _PrometheusFactory()
    try:
        yield factory
    finally:
        factory.close()
