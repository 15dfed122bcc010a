"""`kubectl top` on upstream's control plane: metrics.k8s.io served by upstream's metrics-server (built from
console/lab/upstream/metrics-server) through kube-apiserver's aggregation layer, from what it scrapes of the lab's
kubelet agents' /metrics/resource (console/lab/kubeletserver.py). metrics-server answers a node or pod only once it
has scraped it twice (its CPU figure is the rate between two scrapes), so each check polls to a deadline.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from labstart import start_lab
from labtools import wait_for

from console.lab.world import Lab

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")

NODES = ["kube-controlplane01", "kube-worker01", "kube-worker02"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-drain", tmp_path_factory.mktemp("lab-top"))


def kubectl(lab: Lab, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(lab.state.kubeconfig)}
    return subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=60)


def until(what: str, check: Callable[[], tuple[Any, Any]], timeout: float = 90) -> Any:
    """Poll `check()` -> (value, what it said) until the value is truthy; a timeout names the last answer."""
    said: Any = ""

    def value() -> Any:
        nonlocal said
        got, said = check()
        return got

    try:
        return wait_for(value, timeout, 0.5, what)
    except AssertionError as e:
        raise AssertionError(f"{e}; last answer: {said}") from None


def _table(lab: Lab, *args: str) -> tuple[list[list[str]] | None, str]:
    done = kubectl(lab, "top", *args)
    if done.returncode != 0:
        return None, done.stderr.strip()
    lines = done.stdout.splitlines()
    return [line.split() for line in lines[1:]], done.stdout


def test_the_apiservice_is_available(lab: Lab) -> None:
    def available() -> tuple[bool, Any]:
        done = kubectl(lab, "get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "json")
        if done.returncode != 0:
            return False, done.stderr
        conditions = json.loads(done.stdout)["status"].get("conditions") or []
        return any(c["type"] == "Available" and c["status"] == "True" for c in conditions), conditions

    until("APIService v1beta1.metrics.k8s.io Available=True", available)
    spec = json.loads(kubectl(lab, "get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "json").stdout)["spec"]
    assert spec["service"] == {"name": "metrics-server", "namespace": "kube-system", "port": 443}


def test_top_nodes_lists_every_node_with_usage(lab: Lab) -> None:
    def every_node() -> tuple[list[list[str]] | None, Any]:
        rows, raw = _table(lab, "nodes")
        return (rows if rows and sorted(r[0] for r in rows) == NODES else None), raw

    rows = until("kubectl top nodes to list the 3 nodes", every_node)
    for name, cpu, cpu_pct, mem, mem_pct in rows:
        assert re.fullmatch(r"\d+m", cpu), (name, cpu)
        assert re.fullmatch(r"\d+Mi", mem), (name, mem)
        assert re.fullmatch(r"\d+%", cpu_pct) and re.fullmatch(r"\d+%", mem_pct)
        # the system part alone is ~50m + 3% of the CPUs and ~300Mi + 5% of the memory
        assert int(cpu[:-1]) >= 30 and int(mem[:-2]) >= 300, (name, cpu, mem)
        assert int(cpu_pct[:-1]) <= 100 and int(mem_pct[:-1]) <= 100


def test_top_pods_lists_the_running_pods(lab: Lab) -> None:
    def with_db() -> tuple[list[list[str]] | None, Any]:
        rows, raw = _table(lab, "pods", "-A")
        return (rows if rows and any(r[1] == "db-0" for r in rows) else None), raw

    rows = until("kubectl top pods -A to list db-0", with_db)
    pods = json.loads(kubectl(lab, "get", "pods", "-A", "-o", "json").stdout)["items"]
    running = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods
               if p["status"].get("phase") == "Running"}
    listed = {(r[0], r[1]) for r in rows}
    assert listed <= running
    assert ("default", "db-0") in listed
    for _ns, name, cpu, mem in rows:
        assert re.fullmatch(r"\d+m", cpu) and re.fullmatch(r"\d+Mi", mem), (name, cpu, mem)
    # per container too, as metrics-server reports each
    done = kubectl(lab, "top", "pods", "-A", "--containers")
    assert done.returncode == 0, done.stderr
    assert "db-0" in done.stdout


def test_the_kubelets_serve_resource_metrics(lab: Lab) -> None:
    """What metrics-server scrapes, read through the API server's node proxy: the kubelet's families and
    labels, samples stamped in milliseconds."""
    done = kubectl(lab, "get", "--raw", "/api/v1/nodes/kube-worker02/proxy/metrics/resource")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "# TYPE node_cpu_usage_seconds_total counter" in lines
    node_cpu = next(line for line in lines if line.startswith("node_cpu_usage_seconds_total "))
    _, value, stamp = node_cpu.split()
    assert float(value) > 0 and abs(int(stamp) / 1000 - time.time()) < 60
    assert any(re.fullmatch(r'container_memory_working_set_bytes\{container="db",namespace="default",pod="db-0"\} '
                            r"\S+ \d+", line) for line in lines), done.stdout


def test_the_usage_follows_the_requests(lab: Lab) -> None:
    """A container uses 15-75% of its CPU request (10m without one) in the lab's usage model."""
    pods = json.loads(kubectl(lab, "get", "pods", "-A", "-o", "json").stdout)["items"]
    db = next(p for p in pods if p["metadata"]["name"] == "db-0")
    ns = db["metadata"]["namespace"]

    def metrics() -> tuple[Any, Any]:
        done = kubectl(lab, "get", "--raw", f"/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods/db-0")
        return (json.loads(done.stdout) if done.returncode == 0 else None), done.stderr

    got = until("PodMetrics of db-0", metrics)
    for container in got["containers"]:
        spec = next(c for c in db["spec"]["containers"] if c["name"] == container["name"])
        request = (spec.get("resources") or {}).get("requests", {}).get("cpu")
        if request is None:
            continue
        request_n = float(request[:-1]) * 1e6 if request.endswith("m") else float(request) * 1e9
        usage = container["usage"]["cpu"]
        usage_n = float(usage[:-1]) if usage.endswith("n") else float(usage.rstrip("u")) * 1e3
        assert 0.1 * request_n <= usage_n <= 0.8 * request_n, (container, request)
