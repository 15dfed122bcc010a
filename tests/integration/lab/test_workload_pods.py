"""Pods meant to end (restartPolicy Never/OnFailure, containers with commands of the lab's registry) run their
commands in the node's sandbox (console/lab/nodeexec.py), as node-debug pods do: phases, conditions and restarts as
the kubelet's (k8s.io/kubernetes pkg/kubelet/kubelet_pods.go getPhase, pkg/kubelet/status/generate.go,
pkg/kubelet/kuberuntime/kuberuntime_manager.go for the crash-loop back-off), on upstream's control plane."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labstart import start_lab
from labtools import wait_for

from console.lab import scenarios
from console.lab.nodeexec import pod_phase, runs_to_completion
from console.lab.store import NotFound
from console.lab.world import Lab

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (./dev installs it)")

NODE = "kube-worker01"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-resize", tmp_path_factory.mktemp("lab-workload-pods"), metrics=False)


@pytest.fixture
def made(lab: Lab) -> Iterator[list[str]]:
    """The names of the pods a test creates: deleted when it ends."""
    names: list[str] = []
    yield names
    for name in names:
        with contextlib.suppress(NotFound):
            lab.store.delete("pods", "default", name)


def workload(lab: Lab, made: list[str], name: str, *containers: tuple[str, str], policy: str = "Never",
             image: str = "busybox:1.36") -> None:
    """A pod bound to NODE whose containers run `sh -c SCRIPT`, created as a user creates it."""
    lab.store.create("pods", {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": NODE, "restartPolicy": policy,
                 "containers": [{"name": n, "image": image, "command": ["sh", "-c", script]}
                                for n, script in containers]}})
    made.append(name)


def pod(lab: Lab, name: str) -> dict[str, Any]:
    return dict(lab.store.fetch("pods", "default", name))


def cond(pod: Any, ctype: str) -> tuple[str, str | None]:
    c = next(c for c in pod["status"]["conditions"] if c["type"] == ctype)
    return c["status"], c.get("reason")


def test_which_pods_run_to_completion() -> None:
    spec = {"restartPolicy": "Never", "containers": [{"name": "a", "image": "busybox", "command": ["true"]}]}
    assert runs_to_completion({"spec": spec})
    assert runs_to_completion({"spec": {**spec, "restartPolicy": "OnFailure"}})
    assert not runs_to_completion({"spec": {**spec, "restartPolicy": "Always"}})  # long-running: the kubelet's
    assert not runs_to_completion({"spec": {**spec, "containers": [{"name": "a", "image": "nginx:1.21"}]}})
    assert not runs_to_completion({"spec": {**spec, "containers": [  # the kubelet reports the pull failure
        {"name": "a", "image": "busybox:0.0.404", "command": ["true"]}]}})


def test_get_phase_as_the_kubelet() -> None:
    def phase(policy: str, *states: tuple[dict[str, Any], dict[str, Any]]) -> str:
        names = [f"c{i}" for i in range(len(states))]
        return pod_phase({"spec": {"restartPolicy": policy, "containers": [{"name": n} for n in names]},
                          "status": {"containerStatuses": [{"name": n, "state": s, "lastState": last}
                                                           for n, (s, last) in zip(names, states, strict=True)]}})

    ok, bad, run = {"terminated": {"exitCode": 0}}, {"terminated": {"exitCode": 3}}, {"running": {}}
    backoff = {"waiting": {"reason": "CrashLoopBackOff"}}
    assert phase("Never", (ok, {}), (ok, {})) == "Succeeded"
    assert phase("Never", (ok, {}), (bad, {})) == "Failed"
    assert phase("Never", (run, {}), (bad, {})) == "Running"
    assert phase("OnFailure", (backoff, bad)) == "Running"
    assert phase("OnFailure", (ok, {})) == "Succeeded"
    assert phase("Never", ({"waiting": {"reason": "ContainerCreating"}}, {}), (run, {})) == "Pending"


def test_never_pods_end_succeeded_or_failed_with_their_output(lab: Lab, made: list[str]) -> None:
    workload(lab, made, "ok", ("main", "echo out; echo err >&2"))
    workload(lab, made, "bad", ("main", "echo failing; exit 3"), ("side", "true"))
    wait_for(lambda: pod(lab, "ok")["status"].get("phase") == "Succeeded", 30, what="ok Succeeded")
    wait_for(lambda: pod(lab, "bad")["status"].get("phase") == "Failed", 30, what="bad Failed")
    ok = pod(lab, "ok")
    term = ok["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (0, "Completed") and term["startedAt"] <= term["finishedAt"]
    assert (cond(ok, "Ready"), cond(ok, "ContainersReady"), cond(ok, "Initialized")) == (
        ("False", "PodCompleted"), ("False", "PodCompleted"), ("True", "PodCompleted"))
    assert ok["status"]["podIP"] != ok["status"]["hostIP"]  # not on the host network
    assert lab.logs.read("default", "ok") == "out\nerr\n"
    bad = pod(lab, "bad")
    codes = {s["name"]: s["state"]["terminated"]["exitCode"] for s in bad["status"]["containerStatuses"]}
    assert codes == {"main": 3, "side": 0}
    assert cond(bad, "Ready") == ("False", "PodFailed")


def test_onfailure_restarts_at_once_then_after_the_crash_loop_back_off(lab: Lab, made: list[str]) -> None:
    backoff, lab.node_exec.backoff = lab.node_exec.backoff, (1.0, 2.0)
    mark = "/tmp/attempts"
    workload(lab, made, "flaky", ("main", f"echo x >> {mark}; [ $(wc -l < {mark}) -ge 3 ]"), policy="OnFailure")
    waiting: list[Any] = []

    def done() -> bool:
        status = pod(lab, "flaky")["status"]
        state = (status.get("containerStatuses") or [{}])[0].get("state") or {}
        if state.get("waiting", {}).get("reason") == "CrashLoopBackOff":
            waiting.append(status)
        return status.get("phase") == "Succeeded"

    try:
        wait_for(done, 30, 0.05, what="flaky Succeeded")
    finally:
        lab.node_exec.backoff = backoff
    [status] = pod(lab, "flaky")["status"]["containerStatuses"]
    assert status["restartCount"] == 2 and status["state"]["terminated"]["exitCode"] == 0
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert waiting and waiting[0]["phase"] == "Running"
    back = waiting[0]["containerStatuses"][0]
    assert back["state"]["waiting"]["message"].startswith("back-off 1s restarting failed container=main pod=flaky_")
    assert back["restartCount"] == 1 and back["lastState"]["terminated"]["reason"] == "Error"
    wait_for(lambda: [e for e in lab.store.list("events", "default")[0]
                      if e["reason"] == "BackOff" and e["involvedObject"]["name"] == "flaky"], 10, what="BackOff")
    assert Path(lab.guest_roots[NODE].path(mark)).read_text() == "x\nx\nx\n"


def _processes(argv: list[str]) -> list[int]:
    """This machine's processes whose command line is `argv` (the sandbox runs the container's command here)."""
    return [pid for pid, args in _cmdlines() if args == argv]


def _cmdlines() -> list[tuple[int, list[str]]]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                args = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
                found.append((int(entry.name), [a.decode(errors="replace") for a in args]))
    return found


def test_a_deleted_pod_has_its_command_killed(lab: Lab, made: list[str]) -> None:
    # a duration no other test uses: its process is this pod's (NFD's pods keep the node agent busy meanwhile)
    argv = ["sleep", "3599.25"]
    workload(lab, made, "sleeper", ("main", " ".join(argv)))
    wait_for(lambda: pod(lab, "sleeper")["status"].get("phase") == "Running", 30, what="sleeper Running")
    wait_for(lambda: _processes(argv), 5, what="the command running")
    lab.store.delete("pods", "default", "sleeper")
    wait_for(lambda: not _processes(argv), 10, what="the command killed")
    # and its sandbox with it: no bwrap (nor the PID namespace's init, also bwrap) runs that command any more
    wait_for(lambda: not [pid for pid, args in _cmdlines() if "sleep 3599.25" in args], 10, what="the sandbox gone")


def test_a_stopped_lab_leaves_no_sandbox_behind(tmp_path: Path) -> None:
    """Stopping the lab cancels its pods' commands (NFD's master and workers run until then): every process of
    their sandboxes goes, the PID namespace's init too (bwrap, pid 1 there), which bwrap's own death does not
    take with it."""
    root = tmp_path / "lab-stop"
    lab = Lab(scenarios.get("seed-resize"), root, metrics=False, wait_usage=False)
    try:
        lab.start()
        wait_for(lambda: [pid for pid, args in _cmdlines() if any(str(root) in a for a in args)], 30,
                 what="the NFD pods' sandboxes running")
    finally:
        lab.stop()
    wait_for(lambda: not [pid for pid, args in _cmdlines() if args[:1] == ["/usr/bin/bwrap"]
                          and any(str(root) in a for a in args)], 10, what="no sandbox of the stopped lab")


def test_a_pod_removed_at_once_leaves_no_sandbox_behind(lab: Lab) -> None:
    """A running program pod deleted with grace 0 (its command cancelled, not signalled): every process of its
    sandbox goes, the PID namespace's init (bwrap, pid 1 there) too, which bwrap's own death does not take."""
    def running_worker() -> dict[str, Any] | None:
        pods = lab.store.list("pods", "node-feature-discovery")[0]
        return next((p for p in pods if p["metadata"]["name"].startswith("nfd-worker-")
                     and p["spec"].get("nodeName") == NODE and (p.get("status") or {}).get("phase") == "Running"),
                    None)

    # generous waits: each returns as soon as its condition holds, and a loaded machine starts sandboxes slowly
    worker = wait_for(running_worker, 60, what="a Running nfd-worker pod on the node")
    uid = worker["metadata"]["uid"]

    def sandboxes() -> list[int]:
        return [pid for pid, args in _cmdlines() if args[:1] == ["/usr/bin/bwrap"] and any(uid in a for a in args)]

    wait_for(sandboxes, 60, what="the worker's sandbox")
    lab.store.delete("pods", "node-feature-discovery", worker["metadata"]["name"], grace_seconds=0)
    wait_for(lambda: not sandboxes(), 60, what="no sandbox of the removed pod")


def test_a_running_pod_marked_not_ready_by_the_controller_is_ready_again(lab: Lab, made: list[str]) -> None:
    """kube-controller-manager sets a pod's Ready False when its node was not ready (MarkPodsNotReady); the
    kubelet, the source of truth of pod status, writes its own back (status_manager.go needsReconcile)."""
    lab.store.create("pods", {"metadata": {"name": "steady", "namespace": "default"},
                              "spec": {"nodeName": NODE, "containers": [{"name": "web", "image": "nginx:1.21"}]}})
    made.append("steady")
    wait_for(lambda: any(c["type"] == "Ready" and c["status"] == "True"
                         for c in pod(lab, "steady").get("status", {}).get("conditions") or []),
             30, what="the pod Ready")

    def not_ready(draft: dict[str, Any]) -> None:
        for c in draft["status"]["conditions"]:
            if c["type"] == "Ready":
                c.update(status="False", reason="NodeNotReady")

    lab.store.mutate("pods", "default", "steady", not_ready)
    wait_for(lambda: cond(pod(lab, "steady"), "Ready") == ("True", None), 30, what="Ready written back")

