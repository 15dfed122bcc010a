"""Real kubectl against the lab API server."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

KubeLab = Any  # the kube_lab fixture's type, from conftest.py

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


def kubectl(lab: KubeLab, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(["kubectl", *args], env=lab.env(), capture_output=True, text=True, timeout=60, input=stdin)
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_get_nodes_table(kube_lab: KubeLab) -> None:
    lines = kubectl(kube_lab, "get", "nodes").stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["control-1"][1:3] == ["Ready", "control-plane"]
    assert rows["worker-1"][1:3] == ["Ready", "<none>"] and rows["worker-1"][4] == "v1.32.0"
    wide = kubectl(kube_lab, "get", "nodes", "-o", "wide").stdout.splitlines()
    assert "INTERNAL-IP" in wide[0] and "10.0.0.11" in next(ln for ln in wide if ln.startswith("worker-1"))


def test_get_nodes_json(kube_lab: KubeLab) -> None:
    doc = json.loads(kubectl(kube_lab, "get", "nodes", "-o", "json").stdout)
    assert doc["kind"] == "List"
    assert [n["metadata"]["name"] for n in doc["items"]] == ["control-1", "worker-1", "worker-2"]
    assert doc["items"][2]["status"]["allocatable"]["cpu"] == "2"


def test_get_pods_all_namespaces_and_field_selector(kube_lab: KubeLab) -> None:
    lines = kubectl(kube_lab, "get", "pods", "-A").stdout.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert any(ln.split()[:4] == ["kube-system", "coredns-1", "1/1", "Running"] for ln in lines)
    pending = kubectl(kube_lab, "get", "pods", "-A", "--field-selector", "status.phase=Pending").stdout.splitlines()
    assert [ln.split()[:4] for ln in pending[1:]] == [["default", "big-1", "0/1", "Pending"]]
    bad = kubectl(kube_lab, "get", "pods", "--field-selector", "spec.nope=1", check=False)
    assert bad.returncode != 0 and "field label not supported: spec.nope" in bad.stderr


def test_describe_node_shows_pods_and_events(kube_lab: KubeLab) -> None:
    out = kubectl(kube_lab, "describe", "node", "worker-1").stdout
    assert "Name:               worker-1" in out
    assert "Non-terminated Pods:          (2 in total)" in out
    assert "db-1" in out and "web-1" in out and "web-2" not in out
    assert "Starting kubelet." in out and "Node worker-1 status is now: NodeReady" in out
    assert "cpu                1500m (37%)" in out


def test_label_annotate_cordon(kube_lab: KubeLab) -> None:
    assert "labeled" in kubectl(kube_lab, "label", "node", "worker-1", "a=b").stdout
    again = kubectl(kube_lab, "label", "node", "worker-1", "a=c", check=False)
    assert again.returncode != 0 and "--overwrite is false" in again.stderr
    kubectl(kube_lab, "label", "node", "worker-1", "a=c", "--overwrite")
    kubectl(kube_lab, "annotate", "node", "worker-1", "note=hello")
    kubectl(kube_lab, "cordon", "worker-1")
    n = kube_lab.store.get("nodes", None, "worker-1")
    assert n["metadata"]["labels"]["a"] == "c" and n["metadata"]["annotations"]["note"] == "hello"
    assert n["spec"]["unschedulable"] is True
    status = next(ln for ln in kubectl(kube_lab, "get", "nodes").stdout.splitlines() if ln.startswith("worker-1"))
    assert status.split()[1] == "Ready,SchedulingDisabled"
    kubectl(kube_lab, "label", "node", "worker-1", "a-")
    assert "a" not in kube_lab.store.get("nodes", None, "worker-1")["metadata"]["labels"]
    kubectl(kube_lab, "taint", "node", "worker-2", "gpu=true:NoSchedule")
    assert kube_lab.store.get("nodes", None, "worker-2")["spec"]["taints"] == [
        {"key": "gpu", "value": "true", "effect": "NoSchedule"}]


def test_replace_with_stale_resource_version_conflicts(kube_lab: KubeLab, tmp_path: Path) -> None:
    manifest = tmp_path / "node.json"
    manifest.write_text(kubectl(kube_lab, "get", "node", "worker-2", "-o", "json").stdout)
    kubectl(kube_lab, "label", "node", "worker-2", "moved=on")
    res = kubectl(kube_lab, "replace", "-f", str(manifest), check=False)
    assert res.returncode != 0
    assert ('Operation cannot be fulfilled on nodes "worker-2": the object has been modified; please apply your '
            "changes to the latest version and try again") in res.stderr
    fresh = json.loads(kubectl(kube_lab, "get", "node", "worker-2", "-o", "json").stdout)
    fresh["metadata"]["labels"]["replaced"] = "yes"
    manifest.write_text(json.dumps(fresh))
    assert "replaced" in kubectl(kube_lab, "replace", "-f", str(manifest)).stdout


def test_apply_configmap_and_rule(kube_lab: KubeLab) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied", "namespace": "default"},
          "data": {"a": "1"}}
    assert "created" in kubectl(kube_lab, "apply", "-f", "-", stdin=json.dumps(cm)).stdout
    cm["data"] = {"b": "2"}
    assert "configured" in kubectl(kube_lab, "apply", "-f", "-", stdin=json.dumps(cm)).stdout
    assert kube_lab.store.get("configmaps", "default", "applied")["data"] == {"b": "2"}
    rule = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "cpu"},
            "spec": {"rules": [{"name": "avx", "labels": {"example.com/avx": "true"}}]}}
    out = kubectl(kube_lab, "apply", "--dry-run=server", "-f", "-", stdin=json.dumps(rule)).stdout
    assert "(server dry run)" in out
    assert kubectl(kube_lab, "get", "nodefeaturerules", "-o", "name").stdout.split() == [
        "nodefeaturerule.nfd.k8s-sigs.io/gpu-rule"]
    kubectl(kube_lab, "apply", "-f", "-", stdin=json.dumps(rule))
    lines = kubectl(kube_lab, "get", "nodefeaturerules").stdout.splitlines()
    assert lines[0].split() == ["NAME", "AGE"] and [ln.split()[0] for ln in lines[1:]] == ["cpu", "gpu-rule"]


def test_logs(kube_lab: KubeLab) -> None:
    assert kubectl(kube_lab, "logs", "web-1").stdout == "starting nginx\nlistening on :80\n"
    assert kubectl(kube_lab, "logs", "web-1", "--tail=1").stdout == "listening on :80\n"


def test_get_watch_prints_changes(kube_lab: KubeLab) -> None:
    proc = subprocess.Popen(["kubectl", "get", "pods", "-w"], env=kube_lab.env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        header = proc.stdout.readline()
        assert header.split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        initial = [proc.stdout.readline().split()[0] for _ in range(4)]
        assert initial == ["big-1", "db-1", "web-1", "web-2"]
        kube_lab.store.mutate("pods", "default", "big-1", lambda p: p["status"].update(phase="Failed"))
        changed = proc.stdout.readline().split()
        assert changed[0] == "big-1" and changed[2] == "Failed"
    finally:
        proc.kill()
        proc.wait(10)


def test_drain_evicts(kube_lab: KubeLab) -> None:
    out = kubectl(kube_lab, "drain", "worker-1", "--force", "--ignore-daemonsets")
    assert "evicted" in out.stdout and "drained" in out.stdout
    assert kube_lab.store.pods_on_node("worker-1") == []
    assert kube_lab.store.get("nodes", None, "worker-1")["spec"]["unschedulable"] is True
