"""The lab's kubelet agents and node exec on upstream's control plane: kubelet restarts that go wrong, the NotReady
window, KEP-3953's in-place capacity, image pulls and node-exec faults.

What kube-controller-manager does meanwhile is its own: a node whose kubelet stopped posting goes Unknown after
--node-monitor-grace-period (50s for the lab's VMs) with the unreachable taints (pkg/controller/nodelifecycle).
Each test has a node of its own where it leaves the node changed (pytest may run them in any order).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shlex
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from labstart import start_lab
from labtools import lab_env, run, wait_for

from console.lab import scenarios
from console.lab.kubelet import CONFIG, CPU_STATE, RESIZE_GATE
from console.lab.scenarios import NodeSpec
from console.lab.store import NotFound
from console.lab.world import Lab

pytestmark = pytest.mark.lab

UNKNOWN = 120  # seconds: the node lifecycle controller's grace period (50s) and its next pass, with room
TOLERATE_NODE_TROUBLE = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Field report 2's nodes (kube-worker01: 2 vCPU; kube-worker02: 8 vCPU, its kubelet with the static CPU
    manager) and kube-worker03 (8 vCPU) for the KEP-3953 gate; no Pending pod."""
    base = scenarios.SEED_LIVE
    scenario = dataclasses.replace(
        base, name="kubelet-faults", description="kubelet faults on field report 2's nodes", pods=(),
        nodes=(*base.nodes[:2], dataclasses.replace(base.nodes[2], cpu_manager_static=True),
               NodeSpec("kube-worker03", "m1.large", compute_host="cmp001")))
    yield from start_lab(scenario, tmp_path_factory.mktemp("lab-kubelet-faults"), metrics=False)


@pytest.fixture
def pods(lab: Lab) -> Iterator[Callable[[dict[str, Any]], None]]:
    """Create pods in `default` as the lab's user; they are deleted when the test ends."""
    made: list[str] = []

    def create(pod: dict[str, Any]) -> None:
        lab.store.create("pods", pod)
        made.append(pod["metadata"]["name"])

    yield create
    for name in made:
        with contextlib.suppress(NotFound):
            lab.store.delete("pods", "default", name)


def pod(lab: Lab, name: str) -> dict[str, Any]:
    return dict(lab.store.fetch("pods", "default", name))


def node(lab: Lab, name: str) -> dict[str, Any]:
    return dict(lab.store.fetch("nodes", None, name))


def taints(lab: Lab, name: str) -> list[dict[str, str]]:
    """The node's taints as key and effect (the node lifecycle controller's carry their timeAdded)."""
    return [{"key": t["key"], "effect": t["effect"]} for t in node(lab, name)["spec"].get("taints") or []]


def ready(lab: Lab, name: str) -> dict[str, Any]:
    return next(c for c in node(lab, name)["status"]["conditions"] if c["type"] == "Ready")


def events(lab: Lab, reason: str, name: str) -> list[dict[str, Any]]:
    items, _ = lab.store.list("events", "default")
    return [e for e in items if e["reason"] == reason and e["involvedObject"]["name"] == name]


def phase(lab: Lab, name: str) -> str:
    return str(pod(lab, name)["status"].get("phase", ""))


def waiting_reason(lab: Lab, name: str) -> str:
    statuses = pod(lab, name)["status"].get("containerStatuses") or [{}]
    return str(statuses[0].get("state", {}).get("waiting", {}).get("reason", ""))


def app_pod(name: str, cpu: str, memory: str, *, image: str = "nginx:1.21") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "default-scheduler", "tolerations": TOLERATE_NODE_TROUBLE,
                     "containers": [{"name": name, "image": image,
                                     "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}


def debug_pod(name: str, on: str, script: str, *, nsenter: bool = True, image: str = "ubuntu:20.04") -> dict[str, Any]:
    """A node-debug pod: nsenter into the host's namespaces, or `kubectl debug node/<n> --profile=sysadmin -- chroot
    /host sh -c ...`."""
    if nsenter:
        spec: dict[str, Any] = {
            "hostPID": True,
            "containers": [{"name": "restart", "image": image, "securityContext": {"privileged": True},
                            "command": ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", "sh", "-c", script]}],
        }
    else:
        spec = {
            "hostPID": True, "hostNetwork": True, "hostIPC": True,
            "containers": [{"name": "debugger", "image": "busybox:1.36", "securityContext": {"privileged": True},
                            "command": ["chroot", "/host", "sh", "-c", script],
                            "volumeMounts": [{"name": "host-root", "mountPath": "/host"}]}],
            "volumes": [{"name": "host-root", "hostPath": {"path": "/"}}],
        }
    spec.update(nodeName=on, restartPolicy="Never", tolerations=[{"operator": "Exists"}])
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def configz(lab: Lab, name: str) -> dict[str, Any]:
    """The running kubelet's configuration through the API server's node proxy, as the console reads it."""
    proc = run(["kubectl", "get", "--raw", f"/api/v1/nodes/{name}/proxy/configz"], lab_env(lab), check=False)
    return json.loads(proc.stdout)["kubeletconfig"] if proc.returncode == 0 else {}


def test_static_cpu_manager_blocks_restart_until_state_removed(lab: Lab, pods: Any) -> None:
    """The CPU set changes under a static CPU manager (cpu7 taken offline, then a kubelet restart): the kubelet
    refuses to start until its state file is removed (scale-up.md 5.1)."""
    name = "kube-worker02"
    k = lab.kubelets[name]
    assert k.cpu_manager_policy == "static" and '"defaultCpuSet": "0-7"' in k.files[CPU_STATE]
    pods(debug_pod("offline", name, "echo 0 > /sys/devices/system/cpu/cpu7/online; systemctl restart kubelet; "
                                    "systemctl is-active kubelet"))
    wait_for(lambda: k.state == "crashloop", what="crash loop")
    want = 'current set of available CPUs "0-6" doesn\'t match with CPUs in state "0-7"'
    wait_for(lambda: any(want in line for line in k.journal), what="journal line")
    failed = wait_for(lambda: events(lab, "KubeletSetupFailed", name), what="setup event")
    assert want in failed[0]["message"] and failed[0]["type"] == "Warning"
    wait_for(lambda: ready(lab, name)["status"] == "Unknown", timeout=UNKNOWN, what="node Unknown")
    # the kubelet is down: the debug pod's final status is not posted, capacity stays stale
    assert phase(lab, "offline") == "Running"
    assert node(lab, name)["status"]["capacity"]["cpu"] == "8"
    wait_for(lambda: (events(lab, "KubeletSetupFailed", name)[0].get("count") or 0) >= 2, what="aggregated retries")

    code, out = lab.node_exec.ssh(name, f"systemctl is-active kubelet; rm -f {CPU_STATE}; "
                                        f"test -e {CPU_STATE} || echo gone")
    assert (code, out) == (0, "activating\ngone\n")
    wait_for(lambda: ready(lab, name)["status"] == "True", timeout=60, what="Ready again")
    assert node(lab, name)["status"]["capacity"]["cpu"] == "7"
    assert '"defaultCpuSet": "0-6"' in k.files[CPU_STATE]
    # recorded once the kubelet is back: `systemctl is-active` saw "activating" (exit 3)
    wait_for(lambda: phase(lab, "offline") == "Failed", what="pod status recorded")
    assert pod(lab, "offline")["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    assert lab.logs.read("default", "offline") == ""  # cut at the restart


def test_kubelet_that_does_not_come_back(lab: Lab, pods: Any) -> None:
    name = "kube-worker01"
    k = lab.kubelets[name]
    k.inject_fault("no-restart")
    try:
        pods(debug_pod("restart", name, "systemctl restart kubelet"))
        wait_for(lambda: k.state == "dead", what="dead kubelet")
        wait_for(lambda: ready(lab, name)["status"] == "Unknown", timeout=UNKNOWN, what="Unknown")
        cond = ready(lab, name)
        assert (cond["reason"], cond["message"]) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")
        wait_for(lambda: {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"} in taints(lab, name),
                 what="the unreachable taint")
        assert lab.node_exec.ssh(name, "systemctl is-active kubelet")[1] == "failed\n"
        assert phase(lab, "restart") == "Running"
    finally:
        k.clear_fault("no-restart")
        k.start_service()
    wait_for(lambda: ready(lab, name)["status"] == "True", timeout=60, what="back")
    wait_for(lambda: not any(t["key"].startswith("node.kubernetes.io/") for t in taints(lab, name)),
             what="the node lifecycle controller's taints lifted")
    wait_for(lambda: phase(lab, "restart") == "Succeeded", what="pod done")


def test_restart_reports_not_ready_for_one_period(lab: Lab) -> None:
    name = "kube-worker01"
    wait_for(lambda: ready(lab, name)["status"] == "True", timeout=60, what=f"{name} Ready")
    starting = sum(e.get("count") or 1 for e in events(lab, "Starting", name))
    seen: list[dict[str, Any]] = []
    unsub = lab.store.subscribe("nodes", lambda ev: seen.append(ev.object) if ev.object["metadata"]["name"]
                                == name else None)
    try:
        lab.kubelets[name].restart()
        wait_for(lambda: any(_reason(n) == "KubeletNotReady" for n in seen), what="NotReady")
        wait_for(lambda: _reason(seen[-1]) == "KubeletReady", what="Ready")
    finally:
        unsub()
    nr = next(n for n in seen if _reason(n) == "KubeletNotReady")
    cond = next(x for x in nr["status"]["conditions"] if x["type"] == "Ready")
    assert cond["status"] == "False"
    assert cond["message"] == "container runtime status check may not have completed yet"
    wait_for(lambda: sum(e.get("count") or 1 for e in events(lab, "Starting", name)) == starting + 1,
             what="one more Starting event")
    assert {e["message"] for e in events(lab, "Starting", name)} == {"Starting kubelet."}
    assert not events(lab, "Rebooted", name)


def _reason(n: dict[str, Any]) -> str | None:
    for x in n.get("status", {}).get("conditions") or []:
        if x["type"] == "Ready":
            return str(x["reason"])
    return None


def test_in_place_resize_gate_rereads_capacity(lab: Lab) -> None:
    """KEP-3953: with the gate on (the kubelet's config edited as an admin would, then one restart) the kubelet
    reads the online CPUs again by itself, no restart."""
    name = "kube-worker03"
    k = lab.kubelets[name]
    code, cfg = lab.node_exec.ssh(name, f"cat {CONFIG}")
    assert code == 0 and "featureGates: {}" in cfg
    new = cfg.replace("featureGates: {}", f"featureGates:\n  {RESIZE_GATE}: true")
    assert lab.node_exec.ssh(name, f"printf '%s' {shlex.quote(new)} > {CONFIG} && systemctl restart kubelet")[0] == 0
    # the running configuration through the node proxy's view of the kubelet (no lab annotation on the node)
    wait_for(lambda: configz(lab, name).get("featureGates") == {RESIZE_GATE: True}, timeout=30,
             what="the gate in configz")
    assert "featureGates" not in configz(lab, "kube-worker01")
    assert not any("lab.console/" in a for a in node(lab, name)["metadata"].get("annotations") or {})
    wait_for(lambda: ready(lab, name)["status"] == "True", timeout=60, what=f"{name} Ready")
    restarts = k.restarts
    assert lab.node_exec.ssh(name, "echo 0 > /sys/devices/system/cpu/cpu7/online")[0] == 0
    wait_for(lambda: node(lab, name)["status"]["capacity"]["cpu"] == "7", what="cpu 7 without restart")
    assert lab.node_exec.ssh(name, "echo 1 > /sys/devices/system/cpu/cpu7/online")[0] == 0
    wait_for(lambda: node(lab, name)["status"]["capacity"]["cpu"] == "8", what="cpu 8 again without restart")
    assert k.restarts == restarts


def test_image_not_in_the_lab_registry_keeps_debug_pod_pending(lab: Lab, pods: Any) -> None:
    """kubelet pkg/kubelet/images/image_manager.go: Failed / ErrImagePull, then BackOff / ImagePullBackOff."""
    pods(debug_pod("pull-dbg", "kube-worker01", "true", image="ubuntu:99.04"))
    wait_for(lambda: waiting_reason(lab, "pull-dbg") == "ImagePullBackOff", timeout=60, what="backoff")
    assert phase(lab, "pull-dbg") == "Pending"
    def failed() -> list[str]:
        return [e["message"] for e in events(lab, "Failed", "pull-dbg")]

    wait_for(lambda: "Error: ImagePullBackOff" in failed(), what="the Failed events")
    msgs = failed()
    assert "Error: ErrImagePull" in msgs
    assert ('Failed to pull image "ubuntu:99.04": rpc error: code = NotFound desc = failed to pull and unpack image '
            '"docker.io/library/ubuntu:99.04": failed to resolve reference "docker.io/library/ubuntu:99.04": '
            "docker.io/library/ubuntu:99.04: not found") in msgs
    wait_for(lambda: [e["message"] for e in events(lab, "BackOff", "pull-dbg")] == [
        'Back-off pulling image "ubuntu:99.04"'], what="the BackOff event")


def test_app_pod_with_an_unknown_image_stays_pending(lab: Lab, pods: Any) -> None:
    """kube-scheduler binds it; the kubelet cannot pull its image."""
    pods(app_pod("ghost", "100m", "64Mi", image="nginx:0.0.404"))
    wait_for(lambda: waiting_reason(lab, "ghost") == "ImagePullBackOff", timeout=60, what="backoff")
    assert phase(lab, "ghost") == "Pending" and pod(lab, "ghost")["spec"].get("nodeName")
    wait_for(lambda: events(lab, "BackOff", "ghost"), what="the BackOff event")
    assert len(events(lab, "BackOff", "ghost")) == 1  # its own status updates do not retrigger the pull


def test_exec_fail_fault_fails_the_pod(lab: Lab, pods: Any) -> None:
    lab.node_exec.inject_fault("exec-fail")
    try:
        pods(debug_pod("exec-dbg", "kube-worker01", "true"))
        wait_for(lambda: phase(lab, "exec-dbg") == "Failed", timeout=60, what="Failed")
    finally:
        lab.node_exec.clear_fault("exec-fail")
    term = pod(lab, "exec-dbg")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (128, "StartError")


def test_failing_script_exit_code_and_unknown_command(lab: Lab, pods: Any) -> None:
    pods(debug_pod("bad", "kube-worker01", "echo start; frobnicate --now; exit 3"))
    wait_for(lambda: phase(lab, "bad") == "Failed", timeout=60, what="Failed")
    term = pod(lab, "bad")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (3, "Error")
    assert lab.logs.read("default", "bad") == "start\nsh: 1: frobnicate: not found\n"


def test_debug_pod_name_can_be_reused(lab: Lab, pods: Any) -> None:
    name = "kube-worker01"
    pods(debug_pod("reuse-dbg", name, "echo one"))
    wait_for(lambda: phase(lab, "reuse-dbg") == "Succeeded", timeout=60, what="first run")
    lab.store.delete("pods", "default", "reuse-dbg")
    wait_for(lambda: _gone(lab, "reuse-dbg"), what="the first pod gone")
    lab.logs.drop("default", "reuse-dbg")
    pods(debug_pod("reuse-dbg", name, "nproc; cat /proc/meminfo | head -n 1"))
    wait_for(lambda: phase(lab, "reuse-dbg") == "Succeeded", timeout=60, what="second run")
    # what the node has: its online CPUs, its /proc/meminfo (the guest's MemTotal) over SSH
    code, meminfo = lab.node_exec.ssh(name, "head -n 1 /proc/meminfo")
    assert code == 0 and str(lab.kubelets[name].guest.mem_total_kib) in meminfo
    assert lab.logs.read("default", "reuse-dbg") == f"{len(lab.kubelets[name].guest.online_cpus)}\n{meminfo}"


def _gone(lab: Lab, name: str) -> bool:
    return not lab.store.list("pods", "default", lambda p: p["metadata"]["name"] == name)[0]
