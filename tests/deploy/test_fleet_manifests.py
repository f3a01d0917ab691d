"""The fleet variant (``deploy/kubernetes/fleet``), checked with the same tools as the base: ``kubectl
kustomize``, ``kubernetes-validate --strict``, ``fairwatch validate`` on both configs - and that the
sidecars and the central count the same thing, mount the same store and only the central judges."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.config import load_settings
from monitor.reading.plan import count_request
from monitor.sources.published.store import request_fingerprint
from tests.deploy.test_manifests import (
    CRD_KINDS,
    ROOT,
    assert_restricted,
    kubectl,
    kubernetes_validate,
    mount_at,
    run,
    volumes_by_name,
)

FLEET = ROOT / "deploy" / "kubernetes" / "fleet"
STORE = "/var/lib/fairwatch/fleet"


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    result = run([kubectl(), "kustomize", str(FLEET)])
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def named(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].startswith(name)]
    return found


def config_file(docs: list[dict[str, Any]], name: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(named(docs, "ConfigMap", name)["data"]["config.yaml"])
    return path


def test_every_resource_renders(docs: list[dict[str, Any]]) -> None:
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(
        ["ConfigMap"] * 2
        + ["Deployment"] * 2
        + ["PodMonitor"] * 2
        + ["NetworkPolicy"] * 2
        + ["Service", "PersistentVolumeClaim", "PrometheusRule"]
    )


@pytest.mark.integration
@pytest.mark.parametrize("version", ["1.33", "1.29"])
def test_kubernetes_validate_strict(docs: list[dict[str, Any]], version: str, tmp_path: Path) -> None:
    core = tmp_path / "core.yaml"
    core.write_text(yaml.safe_dump_all([d for d in docs if d["kind"] not in CRD_KINDS]), encoding="utf-8")
    result = run([kubernetes_validate(), "--strict", "-k", version, str(core)])
    assert result.returncode == 0, result.stdout + result.stderr
    for kind in ("configmap", "deployment", "persistentvolumeclaim", "networkpolicy"):
        assert f"passed for resource {kind}/" in result.stdout, result.stdout


def test_both_configs_validate_and_count_the_same_thing(docs: list[dict[str, Any]], tmp_path: Path) -> None:
    sidecar, central = (
        config_file(docs, "fairwatch-config", tmp_path),
        config_file(docs, "fairwatch-central-config", tmp_path),
    )
    for path in (sidecar, central):
        done = subprocess.run(
            [sys.executable, "-m", "monitor", "validate", "--config", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    publishers, judge = load_settings(sidecar).models, load_settings(central).models
    assert [m.name for m in publishers] == [m.name for m in judge]
    for pub, cen in zip(publishers, judge, strict=True):
        assert pub.publish is not None and not pub.publish.evaluate  # sidecars judge nothing
        assert pub.publish.url == STORE and cen.source.kind == "published" and cen.source.url == STORE
        # what is counted is part of the store's keys: the same fingerprint, or the central finds nothing
        assert request_fingerprint(count_request(pub, ())) == request_fingerprint(count_request(cen, ()))
        assert pub.panes.size == cen.panes.size


def test_the_store_is_shared_and_only_written_by_the_sidecars(docs: list[dict[str, Any]]) -> None:
    claim = named(docs, "PersistentVolumeClaim", "fairwatch-fleet")
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    server = named(docs, "Deployment", "model-server")["spec"]
    assert server["replicas"] >= 2
    spec = server["template"]["spec"]
    (sidecar,) = [c for c in spec["initContainers"] if c["name"] == "fairwatch"]
    mount = mount_at(sidecar, STORE)
    assert not mount.get("readOnly", False)
    assert volumes_by_name(spec)[mount["name"]]["persistentVolumeClaim"]["claimName"] == "fairwatch-fleet"
    assert "env" not in sidecar  # no database password: the sidecar reads only its pod's log
    central = named(docs, "Deployment", "fairwatch-central")["spec"]
    assert central["replicas"] == 1 and central["strategy"]["type"] == "Recreate"
    cspec = central["template"]["spec"]
    (judge,) = cspec["containers"]
    cmount = mount_at(judge, STORE)
    assert cmount["readOnly"] is True
    assert volumes_by_name(cspec)[cmount["name"]]["persistentVolumeClaim"]["claimName"] == "fairwatch-fleet"
    for spec_, containers in ((spec, [sidecar]), (cspec, [judge])):
        assert spec_["automountServiceAccountToken"] is False
        for c in containers:
            assert_restricted(c, spec_)
    # the central is scraped over TLS with basic auth, and only Prometheus reaches it
    monitor = named(docs, "PodMonitor", "fairwatch-central")["spec"]
    assert monitor["selector"]["matchLabels"] == {"app.kubernetes.io/name": "fairwatch-central"}
    endpoint = monitor["podMetricsEndpoints"][0]
    assert endpoint["scheme"] == "https" and "basicAuth" in endpoint
    policy = named(docs, "NetworkPolicy", "fairwatch-central")["spec"]
    assert policy["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "fairwatch-central"}
    assert [p["port"] for rule in policy["ingress"] for p in rule["ports"]] == [9810]
