"""SIGHUP reloads the config (Prometheus' convention): a valid change is applied, an invalid file is
logged in one line and the running config stays; SIGTERM still stops the process cleanly."""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
import yaml

from monitor.app import App, _replace, build_app
from monitor.config import load_settings
from monitor.core.errors import ConfigError
from tests.faults.conftest import EditConfig
from tests.servers import ManagedProcess, free_port, http_json, wait_until

FAIRWATCH = str(Path(sys.executable).with_name("fairwatch"))


def start_service(edit_config: EditConfig, tmp_path: Path) -> tuple[ManagedProcess, Path, Path, str]:
    """``fairwatch run`` on the demo config at a free port: the process, its config file, its log, its URL."""
    port = free_port()
    config = edit_config(lambda data: data["server"].update(port=port))
    log = tmp_path / "service.log"
    service = ManagedProcess("fairwatch", [FAIRWATCH, "run", "--config", str(config)], log).start()
    return service, config, log, f"http://127.0.0.1:{port}"


def test_sighup_reloads_a_valid_config_and_keeps_the_running_one_on_error(
    edit_config: EditConfig, tmp_path: Path
) -> None:
    service, config, log, base = start_service(edit_config, tmp_path)
    try:
        service.wait_http_ok(base + "/readyz")
        names = lambda: [m["name"] for m in http_json(base + "/api/v1/results")["data"]["models"]]  # noqa: E731
        assert names() == ["toxicity", "moderation"]

        data = yaml.safe_load(config.read_text())
        data["models"] = data["models"][:1]  # drop the second model
        config.write_text(yaml.safe_dump(data, sort_keys=False))
        assert service.pid is not None
        os.kill(service.pid, signal.SIGHUP)
        wait_until(lambda: names() == ["toxicity"] or None, 30, "the reloaded config to be served")
        wait_until(
            lambda: "config reloaded: 1 model(s)" in log.read_text() or None, 30, "the reload's log line"
        )

        config.write_text("models: [unclosed\n")
        os.kill(service.pid, signal.SIGHUP)
        wait_until(
            lambda: "config reload failed" in log.read_text() or None, 30, "the failed reload's log line"
        )
        assert service.running and names() == ["toxicity"]  # still serving the last good config
        failed = [line for line in log.read_text().splitlines() if "config reload failed" in line]
        assert len(failed) == 1 and "Traceback" not in log.read_text()

        # valid configs that cannot be built or started: the running config stays, or comes back
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        data["models"][0]["panes"] = {"directory": str(blocker / "panes")}  # a folder inside a file
        config.write_text(yaml.safe_dump(data, sort_keys=False))
        os.kill(service.pid, signal.SIGHUP)
        wait_until(
            lambda: "models[0].panes.directory: cannot write" in log.read_text() or None, 30, "the refusal"
        )
        assert service.running and names() == ["toxicity"]
        del data["models"][0]["panes"]
        with socket.socket() as busy:  # the new port is taken: the old config is started again
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            data["server"]["port"] = busy.getsockname()[1]
            config.write_text(yaml.safe_dump(data, sort_keys=False))
            os.kill(service.pid, signal.SIGHUP)
            wait_until(lambda: "restarting the running config" in log.read_text() or None, 30, "the restart")
            service.wait_http_ok(base + "/readyz")
        assert service.running and names() == ["toxicity"] and "Traceback" not in log.read_text()
    finally:
        service.stop()
    assert service._popen is not None and service._popen.returncode == 0


def test_a_reload_to_a_host_that_does_not_resolve_starts_the_running_config_again(
    edit_config: EditConfig, tmp_path: Path
) -> None:
    """``server.host`` that no resolver knows (a typo) cannot be started: the old config comes back
    (the lookup's error was no config error, so the reload stopped the service instead)."""
    service, config, log, base = start_service(edit_config, tmp_path)
    try:
        service.wait_http_ok(base + "/readyz")
        data = yaml.safe_load(config.read_text())
        data["server"]["host"] = "no-such-host.invalid"  # RFC 6761: never resolves
        config.write_text(yaml.safe_dump(data, sort_keys=False))
        assert service.pid is not None
        os.kill(service.pid, signal.SIGHUP)
        wait_until(lambda: "restarting the running config" in log.read_text() or None, 30, "the restart")
        service.wait_http_ok(base + "/readyz")
        assert service.running and "no-such-host.invalid" in log.read_text()
        assert "Traceback" not in log.read_text()
    finally:
        service.stop()
    assert service._popen is not None and service._popen.returncode == 0


def test_a_reload_that_cannot_start_either_config_says_so_and_raises(
    edit_config: EditConfig, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The new port is taken, and so is the old one by the time the running config is started again:
    nothing runs, the log says why, and the error ends the process (run_forever's caller exits 1)."""
    old_port, new_port = free_port(), free_port()
    running = build_app(load_settings(edit_config(lambda data: data["server"].update(port=old_port))))
    running.start(schedule=False)
    settings = load_settings(edit_config(lambda data: data["server"].update(port=new_port)))
    taken: list[socket.socket] = []
    stop = App.stop

    def stop_then_take_the_old_port(app: App) -> None:
        stop(app)
        if app is running:  # someone binds the old port as soon as it is free
            sock = socket.socket()
            sock.bind(("127.0.0.1", old_port))
            sock.listen()
            taken.append(sock)

    monkeypatch.setattr(App, "stop", stop_then_take_the_old_port)
    try:
        with socket.socket() as busy, caplog.at_level(logging.ERROR, logger="monitor"):
            busy.bind(("127.0.0.1", new_port))
            busy.listen()
            with pytest.raises(ConfigError, match=str(old_port)):
                _replace(running, settings)
        messages = [r.getMessage() for r in caplog.records]
        assert any(m.startswith("config reload failed, restarting the running config") for m in messages)
        assert any(m.startswith("the running config cannot be started again either") for m in messages)
    finally:
        for sock in taken:
            sock.close()
