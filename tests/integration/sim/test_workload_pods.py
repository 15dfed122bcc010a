"""Pods meant to end (restartPolicy Never/OnFailure, containers with commands of the lab's registry) run their
commands in the node's sandbox, as node-debug pods do: phases, conditions and restarts as the kubelet's
(k8s.io/kubernetes pkg/kubelet/kubelet_pods.go getPhase, pkg/kubelet/status/generate.go,
pkg/kubelet/kuberuntime/kuberuntime_manager.go for the crash-loop back-off)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from console.lab.nodeexec import pod_phase, runs_to_completion

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (./dev installs it)")


def workload(c: Any, name: str, *containers: tuple[str, str], policy: str = "Never",
             image: str = "busybox:1.36") -> None:
    c.store.create("pods", {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": "kube-worker01", "restartPolicy": policy,
                 "containers": [{"name": n, "image": image, "command": ["sh", "-c", script]}
                                for n, script in containers]},
        "status": {"phase": "Pending"}})


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


def test_never_pods_end_succeeded_or_failed_with_their_output(make_cluster, wait_for):
    c = make_cluster()
    workload(c, "ok", ("main", "echo out; echo err >&2"))
    workload(c, "bad", ("main", "echo failing; exit 3"), ("side", "true"))
    wait_for(lambda: c.pod("ok")["status"]["phase"] == "Succeeded", 30, what="ok Succeeded")
    wait_for(lambda: c.pod("bad")["status"]["phase"] == "Failed", 30, what="bad Failed")
    ok = c.pod("ok")
    term = ok["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (0, "Completed") and term["startedAt"] <= term["finishedAt"]
    assert (cond(ok, "Ready"), cond(ok, "ContainersReady"), cond(ok, "Initialized")) == (
        ("False", "PodCompleted"), ("False", "PodCompleted"), ("True", "PodCompleted"))
    assert ok["status"]["podIP"] != ok["status"]["hostIP"]  # not on the host network
    assert c.logs.read("default", "ok") == "out\nerr\n"
    bad = c.pod("bad")
    codes = {s["name"]: s["state"]["terminated"]["exitCode"] for s in bad["status"]["containerStatuses"]}
    assert codes == {"main": 3, "side": 0}
    assert cond(bad, "Ready") == ("False", "PodFailed")


def test_onfailure_restarts_at_once_then_after_the_crash_loop_back_off(make_cluster, wait_for):
    c = make_cluster()
    c.nodeexec.backoff = (1.0, 2.0)
    mark = "/tmp/attempts"
    workload(c, "flaky", ("main", f"echo x >> {mark}; [ $(wc -l < {mark}) -ge 3 ]"), policy="OnFailure")
    waiting: list[Any] = []

    def done() -> bool:
        status = c.pod("flaky")["status"]
        state = (status.get("containerStatuses") or [{}])[0].get("state") or {}
        if state.get("waiting", {}).get("reason") == "CrashLoopBackOff":
            waiting.append(status)
        return status.get("phase") == "Succeeded"

    wait_for(done, 30, what="flaky Succeeded")
    [status] = c.pod("flaky")["status"]["containerStatuses"]
    assert status["restartCount"] == 2 and status["state"]["terminated"]["exitCode"] == 0
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert waiting and waiting[0]["phase"] == "Running"
    back = waiting[0]["containerStatuses"][0]
    assert back["state"]["waiting"]["message"].startswith("back-off 1s restarting failed container=main pod=flaky_")
    assert back["restartCount"] == 1 and back["lastState"]["terminated"]["reason"] == "Error"
    assert c.events("BackOff", "flaky")
    assert Path(c.roots["kube-worker01"].path(mark)).read_text() == "x\nx\nx\n"


def test_a_deleted_pod_has_its_command_killed(make_cluster, wait_for):
    c = make_cluster()
    workload(c, "sleeper", ("main", "sleep 3600"))
    wait_for(lambda: c.pod("sleeper")["status"]["phase"] == "Running", 30, what="sleeper Running")
    wait_for(lambda: c.nodeexec.busy(), 5, what="the command running")
    c.store.delete("pods", "default", "sleeper")
    wait_for(lambda: not c.nodeexec.busy(), 10, what="the command killed")
