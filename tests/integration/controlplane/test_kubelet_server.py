"""A lab node's kubelet server (console/lab/kubeletserver.py) answers upstream's kube-apiserver v1.37.2 the way a
kubelet does: `kubectl logs` (and `-f`) through pkg/registry/core/pod's LogLocation, the node proxy through
pkg/registry/core/node's ResourceLocation, each reaching the node's InternalIP with the API server's
kubelet-client certificate.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from labtools import wait_for

from console.lab.controlplane import ControlPlane, free_port
from console.lab.kubeletserver import KubeletServer
from console.lab.loop import LoopThread
from console.lab.podlogs import PodLogs

NS = "kls"
NODE = "kls-node"
NODE_IP = "127.0.10.7"
POD = "web"
CONFIGZ = {"kubeletconfig": {"maxPods": 110, "cpuManagerPolicy": "none"}}


@dataclass
class Agent:
    node_name: str
    internal_ip: str
    state: str = "running"

    def configz(self) -> dict[str, Any]:
        return CONFIGZ


@dataclass
class Lab:
    loop: LoopThread
    server: KubeletServer
    logs: PodLogs
    pods: list[dict[str, Any]] = field(default_factory=list)
    others: list[KubeletServer] = field(default_factory=list)


def _until(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    return wait_for(check, timeout, 0.1, what)


def _create_node(kubectl: Any, tmp: Path, name: str, ip: str, port: int) -> None:
    manifest = tmp / f"{name}.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}))
    kubectl("create", "-f", str(manifest))
    status = {"status": {"addresses": [{"type": "InternalIP", "address": ip}],
                         "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}}
    kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(status))


def _global_address() -> str | None:
    """An address of this machine's own that the node proxy accepts (not loopback or link-local)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("198.51.100.1", 9))  # picks the route's source address; sends nothing
            ip = str(s.getsockname()[0])
    except OSError:
        return None
    return None if ip.startswith(("127.", "169.254.", "0.")) else ip


@pytest.fixture(scope="module")
def lab(kubectl: Any, tmp_path_factory: pytest.TempPathFactory, control_plane: ControlPlane) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("kubeletserver")
    loop = LoopThread("kubelet-server-test")
    loop.start()
    logs = PodLogs()
    pods: list[dict[str, Any]] = []
    lab = Lab(loop, KubeletServer(Agent(NODE, NODE_IP), ca=control_plane.ca, pods=lambda: list(pods), logs=logs),
              logs, pods)
    try:
        kubectl("create", "namespace", NS)
        _until("the default service account", lambda: kubectl(
            "-n", NS, "get", "serviceaccount", "default", check=False).returncode == 0)
        _create_node(kubectl, tmp, NODE, NODE_IP, 10250)
        manifest = tmp / "pod.json"
        manifest.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD, "namespace": NS},
            "spec": {"nodeName": NODE, "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}}))
        kubectl("create", "-f", str(manifest))
        pods.append(json.loads(kubectl("-n", NS, "get", "pod", POD, "-o", "json").stdout))
        logs.append(NS, POD, "line 1\nline 2\nline 3\n")
        loop.call(lab.server.start())
        yield lab
    finally:
        for server in (lab.server, *lab.others):
            loop.call(server.stop())
        loop.stop()
        # no kubelet finishes a graceful delete here: force the pod away, then the node and the namespace
        kubectl("-n", NS, "delete", "pod", "--all", "--grace-period=0", "--force", check=False)
        kubectl("delete", "node", NODE, *(s.agent.node_name for s in lab.others), "--ignore-not-found",
                check=False)
        kubectl("delete", "namespace", NS, "--wait=false", "--ignore-not-found", check=False)


def test_kubectl_logs_reads_the_nodes_pod_logs(lab: Lab, kubectl: Any) -> None:
    assert kubectl("-n", NS, "logs", POD).stdout == "line 1\nline 2\nline 3\n"
    assert kubectl("-n", NS, "logs", POD, "--tail=1").stdout == "line 3\n"
    assert kubectl("-n", NS, "logs", POD, "-c", "main", "--limit-bytes=8").stdout == "line 1\nl"


def test_kubectl_logs_follow_streams_a_line_appended_later(lab: Lab, control_plane: ControlPlane) -> None:
    env = {**os.environ, "KUBECONFIG": str(control_plane.root / "admin.kubeconfig")}
    proc = subprocess.Popen(["kubectl", "-n", NS, "logs", "-f", "--tail=1", POD], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None

    def read() -> None:
        for line in proc.stdout or ():
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        assert lines.get(timeout=30) == "line 3\n"
        lab.logs.append(NS, POD, "appended while following\n")
        assert lines.get(timeout=30) == "appended while following\n"
        assert proc.poll() is None  # still following
    finally:
        proc.terminate()
        proc.wait(10)
    # the client went away: the server's stream ended and unsubscribed from the log
    _until("the follower to go", lambda: lab.server.followers == 0)


def test_the_node_proxy_refuses_a_loopback_internal_ip(lab: Lab, kubectl: Any) -> None:
    """Upstream's node proxy only dials global unicast addresses (node/strategy.go isProxyableHostname), so a
    node whose InternalIP is on 127/8 has no /proxy: logs go another way (pod LogLocation has no such check)."""
    proc = kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/configz", check=False)
    assert proc.returncode != 0
    assert "address not allowed" in proc.stderr


def test_the_node_proxy_reaches_configz_healthz_and_pods(lab: Lab, kubectl: Any, control_plane: ControlPlane,
                                                         tmp_path: Path) -> None:
    ip = _global_address()
    if ip is None:
        pytest.skip("no non-loopback address on this machine for the node proxy to dial")
    name, port = "kls-proxied", free_port(ip)
    server = KubeletServer(Agent(name, ip), ca=control_plane.ca, pods=lambda: list(lab.pods), logs=lab.logs,
                           port=port)
    lab.others.append(server)
    _create_node(kubectl, tmp_path, name, ip, port)
    lab.loop.call(server.start())
    base = f"/api/v1/nodes/{name}/proxy"
    assert json.loads(kubectl("get", "--raw", f"{base}/configz").stdout) == CONFIGZ
    assert kubectl("get", "--raw", f"{base}/healthz").stdout == "ok"
    pods = json.loads(kubectl("get", "--raw", f"{base}/pods").stdout)
    assert (pods["kind"], pods["apiVersion"]) == ("PodList", "v1")
    assert [p["metadata"]["name"] for p in pods["items"]] == [POD]
    missing = kubectl("get", "--raw", f"{base}/no-such-path", check=False)
    assert missing.returncode != 0
    assert "Error from server (NotFound)" in missing.stderr  # kubectl shows a 404's status, not its body


def test_a_stopped_kubelet_server_refuses_the_api_server(lab: Lab, kubectl: Any) -> None:
    lab.loop.call(lab.server.stop())
    try:
        proc = kubectl("-n", NS, "logs", POD, check=False)
        assert proc.returncode == 1
        assert f"dial tcp {NODE_IP}:10250: connect: connection refused" in proc.stderr
    finally:
        lab.loop.call(lab.server.start())
    assert kubectl("-n", NS, "logs", POD, "--tail=1").stdout.endswith("\n")
