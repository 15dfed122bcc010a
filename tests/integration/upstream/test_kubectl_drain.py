"""Real kubectl against the lab on upstream's control plane (`console lab --kubernetes upstream`), scenario
seed-drain: nodes registered by the lab's kubelet agents, pods placed by kube-scheduler and controllers of
kube-controller-manager, drains decided by the API server's eviction subresource and the disruption controller.

What each outcome should be is kubectl's own (k8s.io/kubectl/pkg/drain/filters.go for the refusals,
drain.go for the eviction retries), not the lab's: the lab only registers nodes and runs pods.
"""

from __future__ import annotations

import json
import os
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


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-drain", tmp_path_factory.mktemp("lab-upstream-drain"))


def kubectl(lab: Lab, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(lab.state.kubeconfig)}
    proc = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def get(lab: Lab, *args: str) -> Any:
    return json.loads(kubectl(lab, "get", *args, "-o", "json").stdout)


def until(what: str, check: Callable[[], Any], timeout: float = 90) -> Any:
    return wait_for(check, timeout, 0.1, what)


def pods_on(lab: Lab, node: str) -> dict[str, Any]:
    return {p["metadata"]["name"]: p for p in get(lab, "pods", "-A", f"--field-selector=spec.nodeName={node}")["items"]}


def test_the_server_is_upstreams_and_the_nodes_are_the_agents(lab: Lab) -> None:
    assert json.loads(kubectl(lab, "version", "-o", "json").stdout)["serverVersion"]["gitVersion"] == "v1.37.2"
    nodes = {n["metadata"]["name"]: n for n in get(lab, "nodes")["items"]}
    assert sorted(nodes) == ["kube-controlplane01", "kube-worker01", "kube-worker02"]
    for node in nodes.values():
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True"
        assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.21.6"  # what the scenario's kubelets report
    # field report 2's worker: 2 vCPU, 4 GB, read from the guest when the agent started
    assert nodes["kube-worker02"]["status"]["capacity"]["cpu"] == "2"
    leases = {item["metadata"]["name"] for item in get(lab, "leases", "-n", "kube-node-lease")["items"]}
    assert leases == set(nodes)
    described = kubectl(lab, "describe", "node", "kube-worker02").stdout
    assert "Non-terminated Pods:" in described and "db-0" in described


def test_the_node_proxy_reaches_each_nodes_kubelet(lab: Lab) -> None:
    """The API server dials the node's InternalIP at its kubeletEndpoint port (pkg/kubelet/client)."""
    configz = json.loads(kubectl(lab, "get", "--raw", "/api/v1/nodes/kube-worker02/proxy/configz").stdout)
    assert configz["kubeletconfig"]["maxPods"] == 110
    assert kubectl(lab, "get", "--raw", "/api/v1/nodes/kube-worker02/proxy/healthz").stdout == "ok"
    internal = next(a["address"] for a in get(lab, "node", "kube-worker02")["status"]["addresses"]
                    if a["type"] == "InternalIP")
    assert internal.startswith("198.1")  # global unicast: upstream's node proxy refuses loopback addresses
    kubelet_pods = json.loads(kubectl(lab, "get", "--raw", "/api/v1/nodes/kube-worker02/proxy/pods").stdout)
    assert "db-0" in {p["metadata"]["name"] for p in kubelet_pods["items"]}


def test_the_pending_pod_is_the_schedulers_own_finding(lab: Lab) -> None:
    pod = get(lab, "pod", "nginx")
    assert pod["status"]["phase"] == "Pending"
    events = get(lab, "events", "--field-selector=involvedObject.name=nginx,reason=FailedScheduling")["items"]
    assert events and events[-1]["reportingComponent"] == "default-scheduler"
    # kube-scheduler's message, counted over the 3 nodes (pkg/scheduler/framework/types.go FitError)
    assert events[-1]["message"].startswith("0/3 nodes are available:")
    assert "2 Insufficient cpu" in events[-1]["message"]


def test_auth_can_i_is_the_rbac_authorizers_answer(lab: Lab) -> None:
    assert kubectl(lab, "--context", "lab-viewer", "auth", "can-i", "list", "pods").stdout.strip() == "yes"
    denied = kubectl(lab, "--context", "lab-viewer", "auth", "can-i", "delete", "pods", check=False)
    assert (denied.returncode, denied.stdout.strip()) == (1, "no")
    # TYPE/NAME: kubectl reads `pods/eviction` as the pod named "eviction"; a subresource is its own flag
    assert kubectl(lab, "--context", "lab-operator", "auth", "can-i", "create", "pods", "--subresource=eviction",
                   "-n", "kube-system").stdout.strip() == "yes"


def test_label_taint_cordon_uncordon(lab: Lab) -> None:
    kubectl(lab, "label", "node", "kube-worker01", "lab.example/tier=gold")
    kubectl(lab, "taint", "node", "kube-worker01", "lab.example/maint=yes:PreferNoSchedule")
    node = get(lab, "node", "kube-worker01")
    assert node["metadata"]["labels"]["lab.example/tier"] == "gold"
    assert {"key": "lab.example/maint", "value": "yes", "effect": "PreferNoSchedule"} in node["spec"]["taints"]
    kubectl(lab, "taint", "node", "kube-worker01", "lab.example/maint-")
    kubectl(lab, "label", "node", "kube-worker01", "lab.example/tier-")
    assert kubectl(lab, "cordon", "kube-worker01").stdout.strip() == "node/kube-worker01 cordoned"
    assert get(lab, "node", "kube-worker01")["spec"]["unschedulable"] is True
    # the node-lifecycle controller's taint follows the cordon (TaintNodesByCondition)
    until("the unschedulable taint", lambda: any(
        t["key"] == "node.kubernetes.io/unschedulable" for t in get(lab, "node", "kube-worker01")["spec"].get(
            "taints", [])))
    assert kubectl(lab, "uncordon", "kube-worker01").stdout.strip() == "node/kube-worker01 uncordoned"
    assert "unschedulable" not in get(lab, "node", "kube-worker01")["spec"]


def test_create_deployment_rollout_status_and_debug_node(lab: Lab) -> None:
    kubectl(lab, "create", "deployment", "hello", "--image=nginx:1.21", "--replicas=2")
    rolled = kubectl(lab, "rollout", "status", "deployment/hello", "--timeout=90s")
    assert 'deployment "hello" successfully rolled out' in rolled.stdout
    kubectl(lab, "delete", "deployment", "hello", "--wait=false")
    # a node-debug pod runs its command in the node's sandbox; its log comes through the node's kubelet
    made = kubectl(lab, "debug", "node/kube-worker01", "--image=busybox:1.36", "--", "cat", "/etc/hostname")
    pod = next(w for w in made.stdout.split() if w.startswith("node-debugger-kube-worker01-"))
    until("the debug pod to finish", lambda: get(lab, "pod", pod)["status"].get("phase") == "Succeeded")
    assert kubectl(lab, "logs", pod).stdout.strip() == "kube-worker01"
    kubectl(lab, "delete", "pod", pod, "--grace-period=0", "--wait=false")


def test_delete_with_a_grace_period_takes_it(lab: Lab) -> None:
    """The API server marks the pod terminating; the node's kubelet removes it once the grace period ran."""
    kubectl(lab, "run", "graceful", "--image=busybox:1.36", "--overrides",
            json.dumps({"spec": {"nodeName": "kube-worker01"}}), "--", "sleep", "3600")
    until("graceful running", lambda: get(lab, "pod", "graceful")["status"].get("phase") == "Running")
    t0 = time.monotonic()
    kubectl(lab, "delete", "pod", "graceful", "--grace-period=3", "--wait=false")
    terminating = get(lab, "pod", "graceful")
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 3
    kubectl(lab, "wait", "--for=delete", "pod/graceful", "--timeout=60s")
    assert time.monotonic() - t0 >= 3


def test_drain_refuses_a_bare_pod_and_emptydir_data_until_told(lab: Lab) -> None:
    refused = kubectl(lab, "drain", "kube-worker02", "--ignore-daemonsets", check=False)
    assert refused.returncode == 1
    assert ("cannot delete Pods that declare no controller (use --force to override): default/debug-shell"
            in refused.stderr)
    assert "cannot delete Pods with local storage (use --delete-emptydir-data to override): default/db-0" \
        in refused.stderr
    assert set(pods_on(lab, "kube-worker02")) >= {"debug-shell", "db-0"}  # nothing was evicted
    kubectl(lab, "uncordon", "kube-worker02")


def test_drain_evicts_within_budgets_and_a_deployment_pod_comes_back_elsewhere(lab: Lab) -> None:
    before = pods_on(lab, "kube-worker02")
    frontend = [n for n in before if n.startswith("frontend-")]
    assert frontend, "the scenario spreads frontend over both workers"
    t0 = time.monotonic()
    done = kubectl(lab, "drain", "kube-worker02", "--ignore-daemonsets", "--force", "--delete-emptydir-data",
                   "--grace-period=2", "--timeout=20s", check=False)
    elapsed = time.monotonic() - t0
    # db-pdb (minAvailable 1 of 1) allows no disruption: the API server answers 429 and kubectl retries until its
    # timeout, with its own message (k8s.io/kubectl/pkg/drain/drain.go)
    assert done.returncode == 1
    assert ('error when evicting pods/"db-0" -n "default" (will retry after 5s): Cannot evict pod as it would '
            "violate the pod's disruption budget.") in done.stderr
    assert 'error when evicting pods/"db-0" -n "default": global timeout reached: 20s' in done.stderr
    assert f"pod/{frontend[0]} evicted" in done.stdout and "pod/debug-shell evicted" in done.stdout
    assert elapsed >= 2  # the evicted pods took their grace period before kubectl saw them gone
    after = pods_on(lab, "kube-worker02")
    assert "db-0" in after and "debug-shell" not in after and frontend[0] not in after
    # the ReplicaSet made a replacement, which kube-scheduler put on the other worker (this one is cordoned)
    until("two frontend pods running on kube-worker01", lambda: sum(
        1 for n, p in pods_on(lab, "kube-worker01").items()
        if n.startswith("frontend-") and p["status"].get("phase") == "Running") == 2)
    with pytest.raises(AssertionError):
        get(lab, "pod", "debug-shell")  # a bare pod does not come back
