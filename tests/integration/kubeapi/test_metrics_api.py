"""metrics.k8s.io/v1beta1 on the lab, as metrics-server serves it through the aggregator, read by `kubectl top`.

Sources: k8s.io/metrics pkg/apis/metrics/v1beta1/types.go (NodeMetrics, PodMetrics: timestamp, window, usage);
metrics-server pkg/api/node.go and pod.go (get + list, label selectors over the node's / pod's labels, NotFound
`podmetrics.metrics.k8s.io "ns/name" not found`, CPU in nanocores and memory in Ki); kubectl pkg/cmd/top
(top_node.go: "Metrics API not available" when discovery lacks the group, then lists NodeMetrics and Nodes).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

import pytest
from labtools import kube_raw

from console.kube.model import cpu_millis, mem_bytes

KubeLab = Any  # the kube_lab fixture's type, from conftest.py
BASE = "/apis/metrics.k8s.io/v1beta1"


def kubectl(lab: KubeLab, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["kubectl", *args], env=lab.env(), capture_output=True, text=True, timeout=60)


def _set_ready(lab: KubeLab, node: str, status: str) -> None:
    def edit(obj: dict) -> None:
        for c in obj["status"]["conditions"]:
            if c["type"] == "Ready":
                c["status"] = status
    lab.store.mutate("nodes", None, node, edit)


def test_discovery_lists_the_group_and_its_two_resources(kube_lab: KubeLab) -> None:
    _, groups = kube_raw(kube_lab, "GET", "/apis")
    metrics = next(g for g in groups["groups"] if g["name"] == "metrics.k8s.io")
    assert metrics["preferredVersion"]["groupVersion"] == "metrics.k8s.io/v1beta1"
    _, res = kube_raw(kube_lab, "GET", BASE)
    kinds = {r["name"]: (r["kind"], r["namespaced"], r["verbs"]) for r in res["resources"]}
    assert kinds == {"nodes": ("NodeMetrics", False, ["get", "list"]), "pods": ("PodMetrics", True, ["get", "list"])}


def test_node_and_pod_metrics_in_metrics_server_units(kube_lab: KubeLab) -> None:
    code, nodes = kube_raw(kube_lab, "GET", f"{BASE}/nodes")
    assert code == 200 and nodes["kind"] == "NodeMetricsList"
    by_name = {n["metadata"]["name"]: n for n in nodes["items"]}
    assert sorted(by_name) == ["control-1", "worker-1", "worker-2"]
    w1 = by_name["worker-1"]
    assert re.fullmatch(r"\d+n", w1["usage"]["cpu"]) and re.fullmatch(r"\d+Ki", w1["usage"]["memory"])
    assert w1["window"] == "15s" and w1["timestamp"].endswith("Z")
    assert w1["metadata"]["labels"]["kubernetes.io/hostname"] == "worker-1"  # selectors match node labels
    _, pods = kube_raw(kube_lab, "GET", f"{BASE}/pods")
    names = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods["items"]}
    assert ("default", "big-1") not in names  # Pending: nothing to scrape
    assert {("default", "web-1"), ("default", "db-1"), ("kube-system", "coredns-1")} <= names
    on_w1 = [p for p in pods["items"] if p["metadata"]["name"] in ("web-1", "db-1")]
    pods_cpu = sum(cpu_millis(c["usage"]["cpu"]) for p in on_w1 for c in p["containers"])
    pods_mem = sum(mem_bytes(c["usage"]["memory"]) for p in on_w1 for c in p["containers"])
    # the node's usage is its pods' plus the system's, and each pod uses part of what it requested (1500m)
    assert cpu_millis(w1["usage"]["cpu"]) > pods_cpu > 0 and mem_bytes(w1["usage"]["memory"]) > pods_mem > 0
    assert pods_cpu < 1500
    code, one = kube_raw(kube_lab, "GET", f"{BASE}/namespaces/default/pods/web-1")
    assert code == 200 and one["kind"] == "PodMetrics" and one["containers"][0]["name"] == "app"
    code, missing = kube_raw(kube_lab, "GET", f"{BASE}/namespaces/default/pods/big-1")
    assert code == 404 and missing["message"] == 'podmetrics.metrics.k8s.io "default/big-1" not found'


def test_selectors_watch_and_notready_nodes(kube_lab: KubeLab) -> None:
    _, sel = kube_raw(kube_lab, "GET", f"{BASE}/pods?labelSelector=app%3Dweb")
    assert sorted(p["metadata"]["name"] for p in sel["items"]) == ["web-1", "web-2"]
    _, by_field = kube_raw(kube_lab, "GET", f"{BASE}/nodes?fieldSelector=metadata.name%3Dworker-2")
    assert [n["metadata"]["name"] for n in by_field["items"]] == ["worker-2"]
    code, bad = kube_raw(kube_lab, "GET", f"{BASE}/nodes?fieldSelector=spec.unschedulable%3Dtrue")
    assert code == 400 and "not a known field selector" in bad["message"]
    code, _ = kube_raw(kube_lab, "GET", f"{BASE}/nodes?watch=true")
    assert code == 405
    _set_ready(kube_lab, "worker-2", "False")  # its kubelet does not answer the scrape
    _, nodes = kube_raw(kube_lab, "GET", f"{BASE}/nodes")
    _, pods = kube_raw(kube_lab, "GET", f"{BASE}/pods")
    assert "worker-2" not in {n["metadata"]["name"] for n in nodes["items"]}
    assert "web-2" not in {p["metadata"]["name"] for p in pods["items"]}
    code, _ = kube_raw(kube_lab, "GET", f"{BASE}/nodes/worker-2")
    assert code == 404


def test_usage_varies_slowly_between_scrapes(kube_lab: KubeLab) -> None:
    """Within one metric resolution the answer is the same scrape; a later scrape differs a little."""
    m = kube_lab.api.metrics
    real = m.clock
    try:
        m.clock = lambda: 1_800_000_000.0
        first = {n["metadata"]["name"]: cpu_millis(n["usage"]["cpu"]) for n in m.node_metrics()}
        m.clock = lambda: 1_800_000_014.0
        same = {n["metadata"]["name"]: cpu_millis(n["usage"]["cpu"]) for n in m.node_metrics()}
        m.clock = lambda: 1_800_000_030.0
        later = {n["metadata"]["name"]: cpu_millis(n["usage"]["cpu"]) for n in m.node_metrics()}
    finally:
        m.clock = real
    assert first == same and later != first
    assert all(abs(later[n] - first[n]) < 0.25 * first[n] for n in first)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kubectl_top_node_and_pod(kube_lab: KubeLab) -> None:
    top = kubectl(kube_lab, "top", "node")
    assert top.returncode == 0, top.stderr
    lines = top.stdout.splitlines()
    assert lines[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    rows = {ln.split()[0]: ln.split() for ln in lines[1:]}
    assert sorted(rows) == ["control-1", "worker-1", "worker-2"]
    assert re.fullmatch(r"\d+m", rows["worker-1"][1]) and re.fullmatch(r"\d+%", rows["worker-1"][2])
    assert re.fullmatch(r"\d+Mi", rows["worker-1"][3])
    pods = kubectl(kube_lab, "top", "pod", "-A")
    assert pods.returncode == 0, pods.stderr
    plines = pods.stdout.splitlines()
    assert plines[0].split() == ["NAMESPACE", "NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert {tuple(ln.split()[:2]) for ln in plines[1:]} == {
        ("default", "web-1"), ("default", "web-2"), ("default", "db-1"), ("kube-system", "coredns-1")}
    one = kubectl(kube_lab, "top", "node", "-l", "kubernetes.io/hostname=worker-2")
    assert [ln.split()[0] for ln in one.stdout.splitlines()[1:]] == ["worker-2"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_not_served_is_like_a_cluster_without_metrics_server(kube_lab: KubeLab) -> None:
    kube_lab.api.metrics.served = False
    _, groups = kube_raw(kube_lab, "GET", "/apis")
    assert "metrics.k8s.io" not in {g["name"] for g in groups["groups"]}
    code, _ = kube_raw(kube_lab, "GET", f"{BASE}/nodes")
    assert code == 404
    top = kubectl(kube_lab, "top", "node")
    assert top.returncode != 0 and "Metrics API not available" in top.stderr
