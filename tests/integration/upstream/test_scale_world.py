"""The scale world on upstream's control plane: nodes without kubelets and the pods bound to them, created through
the real API server (console/lab/apistore.py bulk_load: the create, then the status a kubelet would post through
/status). The lab renews the nodes' Leases in kube-node-lease as their kubelets would (console/lab/nodeleases.py),
so kube-controller-manager's node lifecycle controller keeps them Ready past --node-monitor-grace-period (50 s at
this size) instead of marking them Unknown, tainting them unreachable and evicting their pods
(pkg/controller/nodelifecycle/node_lifecycle_controller.go tryUpdateNodeHealth); kube-scheduler finds no room for
the Pending pods and says so (FailedScheduling).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from labstart import start_lab
from labtools import wait_for

from console.lab import scenarios
from console.lab.world import Lab

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")

NODES, PODS_PER_NODE, PENDING = 3, 2, 2
NAMES = [f"node-{i:05d}" for i in range(NODES)]
GRACE_S = 50  # kube-controller-manager's default, which the lab keeps for a few nodes
STARTED: dict[str, float] = {}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    for started in start_lab(scenarios.scale(NODES, PODS_PER_NODE, PENDING), tmp_path_factory.mktemp("scale-up"),
                             metrics=False):
        STARTED["at"] = time.monotonic()
        yield started


def kubectl(lab: Lab, *args: str) -> Any:
    env = {**os.environ, "KUBECONFIG": str(lab.state.kubeconfig)}
    proc = subprocess.run(["kubectl", *args, "-o", "json"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _condition(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next((c for c in obj["status"].get("conditions") or [] if c["type"] == ctype), {})


def test_nodes_are_ready_untainted_and_hold_leases_as_kubelets_do(lab: Lab) -> None:
    nodes = {n["metadata"]["name"]: n for n in kubectl(lab, "get", "nodes")["items"]}
    assert sorted(nodes) == NAMES
    leases = {le["metadata"]["name"]: le for le in kubectl(lab, "get", "leases", "-n", "kube-node-lease")["items"]}
    for name, node in nodes.items():
        ready = _condition(node, "Ready")
        assert (ready["status"], ready["reason"]) == ("True", "KubeletReady"), node["status"]
        assert _condition(node, "MemoryPressure")["status"] == "False"
        assert not node["spec"].get("taints"), node["spec"]  # the not-ready taint of a new node lifted
        assert node["status"]["allocatable"]["cpu"] == "16"
        lease = leases[name]
        assert lease["spec"]["holderIdentity"] == name
        assert lease["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}]


def test_bound_pods_run_with_the_status_a_kubelet_posts(lab: Lab) -> None:
    pods = kubectl(lab, "get", "pods", "-n", "default")["items"]
    bound = [p for p in pods if p["spec"].get("nodeName")]
    assert len(bound) == NODES * PODS_PER_NODE
    for pod in bound:
        status = pod["status"]
        assert status["phase"] == "Running"
        assert status["qosClass"] == "Burstable"  # what the API server set at create, kept by the status patch
        assert _condition(pod, "Ready")["status"] == "True"
        assert [list(c["state"]) for c in status["containerStatuses"]] == [["running"]]


def test_pending_pods_find_no_room(lab: Lab) -> None:
    # pending-00001 asks 19 CPUs of nodes with 16 (console/lab/seed.py scale_pending_pods)
    def reason() -> str:
        pod = kubectl(lab, "get", "pod", "-n", "default", "pending-00001")
        return str(_condition(pod, "PodScheduled").get("message", ""))

    message = str(wait_for(reason, 60, what="pending-00001's PodScheduled condition"))
    assert message.startswith(f"0/{NODES} nodes are available: {NODES} Insufficient cpu."), message
    events = kubectl(lab, "get", "events", "-n", "default",
                     "--field-selector=involvedObject.name=pending-00001,reason=FailedScheduling")["items"]
    assert events and events[0]["reportingComponent"] == "default-scheduler"


def test_a_deleted_lease_is_made_again(lab: Lab) -> None:
    old = kubectl(lab, "get", "lease", "-n", "kube-node-lease", "node-00001")["metadata"]["uid"]
    env = {**os.environ, "KUBECONFIG": str(lab.state.kubeconfig)}
    subprocess.run(["kubectl", "delete", "lease", "-n", "kube-node-lease", "node-00001"], env=env, check=True,
                   capture_output=True, timeout=60)

    def again() -> bool:
        leases = kubectl(lab, "get", "leases", "-n", "kube-node-lease")["items"]
        return any(le["metadata"]["name"] == "node-00001" and le["metadata"]["uid"] != old for le in leases)

    wait_for(again, 30, what="node-00001's Lease made again at its next renewal")


def test_a_deleted_pod_of_a_node_without_kubelet_goes_at_once(lab: Lab) -> None:
    """Nothing runs the pod, so nothing waits out its grace period: once the API server marks it for deletion the
    lab removes it (console/lab/nodeleases.py PodFinisher, as kwok's pod-delete Stage), from a watch of all pods
    it keeps no copy of. An hour's grace period: without that removal the pod would stay."""
    env = {**os.environ, "KUBECONFIG": str(lab.state.kubeconfig)}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "doomed", "namespace": "default"},
           "spec": {"nodeName": NAMES[2], "terminationGracePeriodSeconds": 3600,
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}
    subprocess.run(["kubectl", "create", "-f", "-"], input=json.dumps(pod), env=env, check=True, text=True,
                   capture_output=True, timeout=60)
    subprocess.run(["kubectl", "delete", "pod", "-n", "default", "doomed", "--wait=false"], env=env, check=True,
                   capture_output=True, timeout=60)

    def gone() -> bool:
        return "doomed" not in {p["metadata"]["name"] for p in kubectl(lab, "get", "pods", "-n", "default")["items"]}

    wait_for(gone, 60, what="the deleted pod removed long before its 3600 s grace period")
    assert "pods" not in lab.store._informers  # followed, not kept: the lab's process holds no pod


def test_nodes_stay_ready_past_the_grace_period(lab: Lab) -> None:
    """Past the grace period and a few of the controller's 5 s monitor periods: no Unknown, no taint, no
    eviction; each Lease renewed within the last renewal interval (10 s at this size)."""
    time.sleep(max(0.0, STARTED["at"] + GRACE_S + 15 - time.monotonic()))
    for node in kubectl(lab, "get", "nodes")["items"]:
        assert _condition(node, "Ready")["status"] == "True", node["status"]["conditions"]
        assert not node["spec"].get("taints"), node["spec"]
    for lease in kubectl(lab, "get", "leases", "-n", "kube-node-lease")["items"]:
        renewed = datetime.fromisoformat(lease["spec"]["renewTime"].replace("Z", "+00:00"))
        assert datetime.now(UTC) - renewed < timedelta(seconds=20), lease
    pods = kubectl(lab, "get", "pods", "-n", "default")["items"]
    assert sum(1 for p in pods if p["status"]["phase"] == "Running") == NODES * PODS_PER_NODE
    events = kubectl(lab, "get", "events", "-A", "--field-selector=reason=NodeNotReady")["items"]
    assert not events, [e["message"] for e in events]
