"""`console nfd status` against the lab, through kubectl and the console's real kubernetes client.

The NFD objects are created here with kubectl in the shape NFD's Helm chart renders them at v0.16.4
(deployment/helm/node-feature-discovery/templates/master.yaml, worker.yaml, nfd-worker-conf.yaml) for a release
`gpu-operator` in namespace `gpu-operator` with `master.extraLabelNs: [nvidia.com]`, as the NVIDIA GPU operator
installs it; whatever the lab itself deploys as NFD is removed first (the no-NFD case). RBAC: the lab's
`lab-viewer` ClusterRole loses its apps/* rules (a user who may not list Deployments/DaemonSets anywhere:
403, exit 6 naming the missing permissions), then gets a Role in gpu-operator (found there, with a warning).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from labtools import lab_env

from console.lab import scenarios
from console.lab.world import Lab

pytestmark = pytest.mark.lab

NS = "gpu-operator"
IMAGE = "registry.k8s.io/nfd/node-feature-discovery:v0.16.4"
NFD_ETC = "/etc/kubernetes/node-feature-discovery"
PREFIX = "gpu-operator-node-feature-discovery"


def manifests() -> list[dict[str, Any]]:
    worker_conf = "core:\n  sleepInterval: 60s\nsources:\n  local:\n    hooksEnabled: true\n"
    master = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"{PREFIX}-master", "namespace": NS},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"role": "master"}}, "template": {
                  "metadata": {"labels": {"role": "master"}}, "spec": {
                      "containers": [{"name": "master", "image": IMAGE, "command": ["nfd-master"],
                                      "args": ["-extra-label-ns=nvidia.com", "-crd-controller=true",
                                               "-feature-gates=NodeFeatureAPI=true", "-metrics=8081"],
                                      "volumeMounts": [{"name": "nfd-master-conf", "mountPath": NFD_ETC,
                                                        "readOnly": True}]}],
                      "volumes": [{"name": "nfd-master-conf", "configMap": {
                          "name": f"{PREFIX}-master-conf", "items": [{"key": "nfd-master.conf",
                                                                      "path": "nfd-master.conf"}]}}]}}}}
    worker = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": f"{PREFIX}-worker", "namespace": NS},
              "spec": {"selector": {"matchLabels": {"role": "worker"}}, "template": {
                  "metadata": {"labels": {"role": "worker"}}, "spec": {
                      "containers": [{"name": "worker", "image": IMAGE, "command": ["nfd-worker"],
                                      "args": ["-feature-gates=NodeFeatureAPI=true", "-metrics=8081"],
                                      "volumeMounts": [
                                          {"name": "source-d", "mountPath": f"{NFD_ETC}/source.d/", "readOnly": True},
                                          {"name": "features-d", "mountPath": f"{NFD_ETC}/features.d/",
                                           "readOnly": True},
                                          {"name": "nfd-worker-conf", "mountPath": NFD_ETC, "readOnly": True}]}],
                      "volumes": [
                          {"name": "source-d", "hostPath": {"path": f"{NFD_ETC}/source.d/"}},
                          {"name": "features-d", "configMap": {"name": "nfd-features", "defaultMode": 0o644}},
                          {"name": "nfd-worker-conf", "configMap": {
                              "name": f"{PREFIX}-worker-conf", "items": [{"key": "nfd-worker.conf",
                                                                          "path": "nfd-worker.conf"}]}}]}}}}
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{PREFIX}-master-conf", "namespace": NS},
             "data": {"nfd-master.conf": "denyLabelNs: [\"*.denied.io\"]\n"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{PREFIX}-worker-conf", "namespace": NS},
             "data": {"nfd-worker.conf": worker_conf}},
            master, worker]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The default lab on libvirt's test driver (no QEMU guests): only its Kubernetes API is used here."""
    lab = Lab(scenarios.get("default"), tmp_path_factory.mktemp("nfd-status-lab"), libvirt="test", wait_usage=False)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


def kubectl(lab: Lab, *args: str, stdin: str = "", check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(["kubectl", *args], env=lab_env(lab), input=stdin, capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {p.returncode}\n{p.stderr}")
    return p


def status(lab: Lab, tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    env = lab_env(lab) | {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    p = subprocess.run([sys.executable, "-m", "console", "nfd", "status", "-o", "json", *extra], env=env,
                       capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, json.loads(p.stdout), p.stderr


def nfd_programs(lab: Lab) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(namespace, kind, program, container) of every nfd-master / nfd-worker container `kubectl get deploy,ds -A`
    shows."""
    doc = yaml.safe_load(kubectl(lab, "get", "deploy,ds", "-A", "-o", "yaml").stdout)
    out = []
    for obj in doc["items"]:
        for c in obj["spec"]["template"]["spec"]["containers"]:
            prog = (c.get("command") or [""])[0]
            if prog in ("nfd-master", "nfd-worker"):
                out.append((obj["metadata"]["namespace"], obj["kind"], prog, c))
    return out


def test_no_nfd_says_so_and_exits_3(lab: Lab, tmp_path: Path) -> None:
    for ns, kind, _prog, _c in nfd_programs(lab):  # what the lab deploys as NFD goes first
        kubectl(lab, "delete", kind.lower(), "--all", "-n", ns, "--wait=false")
    assert nfd_programs(lab) == []
    code, doc, err = status(lab, tmp_path)
    assert code == 3 and doc["status"] == "not-found" and doc["exit_code"] == 3
    assert "no NFD in this cluster" in doc["message"] and "nfd local" in doc["message"] and "nfd dryrun" in err


def test_status_names_what_kubectl_shows(lab: Lab, tmp_path: Path) -> None:
    kubectl(lab, "apply", "-f", "-", stdin=yaml.safe_dump_all(manifests()))
    shown = nfd_programs(lab)
    master = next(c for ns, _k, p, c in shown if p == "nfd-master" and ns == NS)
    worker = next(c for ns, _k, p, c in shown if p == "nfd-worker" and ns == NS)
    code, doc, err = status(lab, tmp_path)
    assert code == 0, err
    assert doc["status"] == "ok" and doc["namespace"] == NS
    assert doc["version"] == master["image"].rsplit(":", 1)[1] == "v0.16.4"
    assert doc["versionSource"] == f"image {master['image']}"
    assert doc["master"]["image"] == master["image"] and doc["master"]["args"] == master["args"]
    assert doc["master"]["config"] == {"denyLabelNs": ["*.denied.io"]}
    assert doc["master"]["effective"]["extraLabelNs"] == ["nvidia.com"]
    assert doc["master"]["effective"]["denyLabelNs"] == ["*.denied.io"]
    assert doc["worker"]["image"] == worker["image"] and doc["worker"]["args"] == worker["args"]
    assert doc["worker"]["config"]["sources"]["local"]["hooksEnabled"] is True
    assert doc["worker"]["effective"] | {} == {"sleepInterval": 60.0, "hooksEnabled": True, "labelWhiteList": None,
                                               "labelSources": None, "noPublish": False}
    assert doc["mounts"]["hook"]["source"] == "hostPath"
    assert doc["mounts"]["feature"] == {"source": "configMap", "mountPath": f"{NFD_ETC}/features.d",
                                        "volume": "features-d", "configMap": "nfd-features", "defaultMode": "0644"}
    crd = kubectl(lab, "api-resources", "--api-group=nfd.k8s-sigs.io", "-o", "name").stdout.split()
    assert doc["nodeFeatureAPI"] is ("nodefeatures.nfd.k8s-sigs.io" in crd)
    assert doc["statusLine"].startswith("NFD v0.16.4 in gpu-operator · master -extra-label-ns=nvidia.com")
    # the text form: the status line first
    env = lab_env(lab) | {"XDG_STATE_HOME": str(tmp_path / "state")}
    text = subprocess.run([sys.executable, "-m", "console", "nfd", "status"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert text.returncode == 0
    first = text.stdout.splitlines()[0]
    assert first.startswith(f"NFD v0.16.4 in {NS} · master -extra-label-ns=nvidia.com")
    assert "hooks enabled · relabel every 60s" in first and "config denyLabelNs" in first
    assert "features.d: ConfigMap nfd-features (volume features-d, mode 0644)" in text.stdout


def test_forbidden_names_the_missing_permissions_then_reads_what_it_may(lab: Lab, tmp_path: Path) -> None:
    kubectl(lab, "apply", "-f", "-", stdin=yaml.safe_dump_all(manifests()))
    role = json.loads(kubectl(lab, "get", "clusterrole", "lab-viewer", "-o", "json").stdout)
    role["rules"] = [r for r in role["rules"] if "apps" not in r.get("apiGroups", [])]
    for rule in role["rules"]:  # and no ConfigMaps: the config files cannot be read either
        rule["resources"] = [r for r in rule.get("resources", []) if r != "configmaps"]
    role["metadata"] = {"name": "lab-viewer"}
    kubectl(lab, "replace", "-f", "-", stdin=json.dumps(role))
    assert kubectl(lab, "--context", "lab-viewer", "auth", "can-i", "list", "deployments.apps", "-A",
                   check=False).stdout.strip() == "no"
    code, doc, err = status(lab, tmp_path, "--context", "lab-viewer")
    assert code == 6 and doc["status"] == "error" and doc["error"] == "kube-forbidden"  # a 403 reading: 6
    assert doc["missing"] == ["list deployments.apps", "list daemonsets.apps"]
    assert "list deployments.apps" in err and "Traceback" not in err
    # a Role in gpu-operator only: NFD is found there, the cluster-wide refusal is a warning
    kubectl(lab, "create", "role", "nfd-reader", "-n", NS, "--verb=list", "--resource=deployments.apps,daemonsets.apps")
    kubectl(lab, "create", "rolebinding", "nfd-reader", "-n", NS, "--role=nfd-reader", "--user=viewer")
    code, doc, err = status(lab, tmp_path, "--context", "lab-viewer")
    assert code == 0, err
    assert doc["namespace"] == NS and doc["version"] == "v0.16.4"
    assert doc["master"]["effective"]["extraLabelNs"] == ["nvidia.com"]
    assert any("cannot list deployments.apps in all namespaces" in w for w in doc["warnings"])
    assert f"cannot read ConfigMap {NS}/{PREFIX}-master-conf (403 Forbidden: this user lacks `get configmaps in " \
           f"{NS}`)" in doc["warnings"]
    assert doc["master"]["config"] == {} and doc["worker"]["effective"]["hooksEnabled"] is False  # v0.16 default
    assert "warning: cannot list deployments.apps" in err


@pytest.mark.parametrize("file, kind", [("kubeconfig-wrong-token", "kube-unauthorized"),
                                        ("kubeconfig-wrong-ca", "kube-tls"),
                                        ("kubeconfig-unreachable", "kube-unreachable"),
                                        ("kubeconfig-forbidden", "kube-forbidden")])
def test_faults_are_one_message_and_exit_6(lab: Lab, tmp_path: Path, file: str, kind: str) -> None:
    """The lab's fault files (console/lab/faultfiles.py): real 401, TLS, refused-connection and 403 answers."""
    code, doc, err = status(lab, tmp_path, "--kubeconfig", str(lab.state.root / "faults" / file))
    assert code == 6 and doc["status"] == "error" and doc["exit_code"] == 6
    assert doc["error"] == kind, doc
    assert len(err.strip().splitlines()) == 1 and err.startswith("nfd status: cannot find NFD")
    assert err.count("cannot find NFD") == 1 and doc["message"] in err
    if kind == "kube-forbidden":  # lab-nobody: no binding at all, so neither list nor any namespace could be read
        assert doc["missing"] == ["list deployments.apps", "list daemonsets.apps"]
