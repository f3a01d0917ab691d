"""No secret on any surface: the log, CLI errors, ``/``, ``/api/v1/results``, ``/api/v1/power``, ``/metrics``.

The service runs as users run it (``fairwatch run`` in its own process) against a PostgreSQL URL
whose credentials appear in every form libpq and SQLAlchemy accept, on a port nothing listens
on, so that every evaluation fails and reports its error on every surface.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from monitor.core.secrets import mask, mask_url
from monitor.outputs.api import UNDISCLOSED_ERROR
from tests.faults.conftest import EditConfig
from tests.servers import ManagedProcess, free_port, http_json, http_request, wait_until

USERINFO_SECRET = "Userinfo-s3cret-9f2c"
QUERY_SECRET = "Query-s3cret-41aa"
ENV_SECRET = "Env-s3cret-77d1"
FAIRWATCH = str(Path(sys.executable).with_name("fairwatch"))  # the console script users run


def _secret_url(port: int) -> str:
    return (
        f"postgresql+psycopg://fairwatch:{USERINFO_SECRET}@127.0.0.1:{port}/logs"
        f"?sslmode=disable&password={QUERY_SECRET}&sslpassword=${{FW_SSL_PASSWORD}}"
    )


def _fairwatch(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FAIRWATCH, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def _planted(text: str) -> list[str]:
    return [s for s in (USERINFO_SECRET, QUERY_SECRET, ENV_SECRET) if s in text]


@pytest.mark.parametrize("error_details", ["auto", "shown"])
def test_no_secret_on_any_surface_of_a_running_service(
    edit_config: EditConfig, tmp_path: Path, error_details: str
) -> None:
    """Secrets never reach a surface; by default (no authentication configured) neither does the
    failed source's host, which only the log names; ``server.error_details: shown`` serves it."""
    dead_port, port = free_port(), free_port()

    def change(data: dict[str, Any]) -> None:
        data["server"]["port"] = port
        data["server"]["error_details"] = error_details
        data["models"][0]["source"]["url"] = _secret_url(dead_port)

    config = edit_config(change)
    env = {**os.environ, "FW_SSL_PASSWORD": ENV_SECRET}
    service = ManagedProcess(
        "fairwatch",
        [FAIRWATCH, "run", "--config", str(config)],
        tmp_path / "service.log",
    )
    with (tmp_path / "service.log").open(
        "wb"
    ) as out:  # as ManagedProcess.start, with the secret in the environment
        service._popen = subprocess.Popen(service.argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        service.wait_http_ok(base + "/readyz")

        def failed() -> Any:
            models = http_json(base + "/api/v1/results")["data"]["models"]
            toxicity = next(m for m in models if m["name"] == "toxicity")
            return toxicity if toxicity["last_error"] else None

        toxicity = wait_until(failed, 60, "the toxicity source's first failure")
        assert toxicity["source_up"] is False
        if error_details == "shown":
            assert "127.0.0.1" in toxicity["last_error"]  # the error is there, and useful...
        else:
            assert toxicity["last_error"] == UNDISCLOSED_ERROR
        pages = {
            path: http_request(base + path)[1].decode()
            for path in ("/", "/api/v1/results", "/api/v1/power", "/metrics")
        }
    finally:
        service.stop()
    log = (tmp_path / "service.log").read_text()
    assert "source failed" in log and f"127.0.0.1:{dead_port}" in log  # the log has the details
    for surface, text in [*pages.items(), ("log", log)]:
        assert not _planted(text), (surface, _planted(text))  # ...without the secrets
    results = pages["/api/v1/results"]
    if error_details == "shown":
        assert "password=***" in results or "fairwatch:***@" in results
    else:
        for surface in ("/", "/api/v1/results"):
            assert f":{dead_port}" not in pages[surface], surface  # the database's address
            assert UNDISCLOSED_ERROR in pages[surface].replace("&#x27;", "'"), surface


def test_no_secret_in_cli_errors(edit_config: EditConfig) -> None:
    config = edit_config(lambda data: data["models"][0]["source"].update(url=_secret_url(free_port())))
    result = _fairwatch(
        "evaluate", "--config", str(config), "--model", "toxicity", env={"FW_SSL_PASSWORD": ENV_SECRET}
    )
    assert result.returncode == 1
    assert "cannot read" in result.stderr
    assert not _planted(result.stdout + result.stderr)


def test_an_unencoded_at_sign_in_a_password_is_refused_at_load(edit_config: EditConfig) -> None:
    url = "postgresql+psycopg://fairwatch:Pa@ss-ambiguous@127.0.0.1:5432/logs"
    config = edit_config(lambda data: data["models"][0]["source"].update(url=url))
    result = _fairwatch("validate", "--config", str(config))
    assert result.returncode == 2
    assert "models[0].source.url" in result.stderr and "%40" in result.stderr
    assert "ss-ambiguous" not in result.stderr and "Pa@" not in result.stderr


def test_masking_is_never_by_substring() -> None:
    """The old masking replaced every occurrence of a (mis-parsed) one-letter password."""
    text = "cannot read sql table 'predictions' in postgresql://u:***@db/logs: connection refused"
    assert mask(text, ["p"]) == text
    assert mask("password: p", ["p"]) == "password: ***"
    assert mask_url("postgresql://u:p@db/logs?application_name=fairwatch") == (
        "postgresql://u:***@db/logs?application_name=fairwatch"
    )


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("connection to 'host=db user=fw password=Sekr3t dbname=x' failed", "Sekr3t"),
        ("invalid dsn: password='Sekr3t with space' host=db", "Sekr3t with space"),
        ("POST https://hooks.example/alert?token=Sekr3t failed", "Sekr3t"),
        ("url mysql+pymysql://fw:Sekr3t@db/x is down", "Sekr3t"),
        ('{"password": "Sekr3t"}', "Sekr3t"),
    ],
)
def test_every_form_of_a_credential_is_masked(text: str, secret: str) -> None:
    assert secret not in mask(text)
