"""The API server away for under a second while a run waits (issue 20, point 3).

Before: the run's `wait for … Ready` watch (console/kube/nodes_ops.watch_until) caught only ApiException, so the
connection cut by the restarting server (urllib3 ProtocolError) or the refused reconnect (MaxRetryError:
HTTPSConnectionPool(…)) stopped the run at once, needs attention. Now every wait that watches reconnects and
watches again from the last resourceVersion until its own deadline, as client-go's RetryWatcher
(k8s.io/client-go/tools/watch/retrywatcher.go) and Reflector (tools/cache/reflector.go: 410 → list again) do;
only the deadline ends it, and then it says since when the server has not answered.

The blip is the lab's: `Lab.kube_api_down()` closes the API server's port (open watches drop, connections are
refused) until `kube_api_up()` serves again on the same port. It is held until the waiting side has seen a
reconnect fail (its log says so), then ended: well under a second.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from labtools import wait_for

from console.kube import nfdfiles, nodes_ops
from console.kube.connection import connect
from console.lab.world import Lab
from console.runbook import fleet_checks, verify

pytestmark = pytest.mark.lab

W_NODE, W_WAITS = "blip-node", "blip-waits"
RECONNECTING = "watching again"  # the log line of a wait whose reconnect failed (console/kube/retrywatch.py)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, h: Any) -> Any:
    sc = h.worker_scenario("blip", "m1.medium", [W_NODE, W_WAITS])
    yield from h.start_lab(sc, tmp_path_factory.mktemp("blip"))


def _blip(lab: Lab, noticed: Any, start: Any = lambda: None) -> float:
    """Take the API server away until `noticed()` (the waiting side failed to reconnect), then back; the seconds
    it was held away (a real kube-apiserver then takes its start-up, a few seconds, to serve again; the lab's own
    serves at once). `start()` once it is away."""
    lab.kube_api_down()
    t0 = time.monotonic()
    start()
    try:
        wait_for(noticed, timeout=30, interval=0.02, what="a failed reconnect")
        held = time.monotonic() - t0
    finally:
        lab.kube_api_up()
    return held


def test_a_run_waiting_for_its_node_outlives_an_api_blip(lab: Lab, tmp_path: Path, h: Any) -> None:
    """A resize whose node comes back only after the blip (the kubelet does not start on the resize's reboot
    until we start it): the run waits through the blip and ends done, the pod Running."""
    want = h.add_case_pods(lab, W_NODE, "3", "5Gi")
    kubelet = lab.kubelets[W_NODE]
    kubelet.inject_fault("no-restart")
    log = tmp_path / "console" / "console.log"
    proc = h.scale_up_popen(lab, tmp_path, W_NODE, "--flavor", "m1.large", "--yes")
    try:
        wait_for(lambda: proc.poll() is not None or (h.journals(tmp_path) and h.journal_step(
            h.journals(tmp_path)[0], "wait-node")["status"] == "started"), 120, interval=0.05,
            what="the run waiting for its node")
        # its watch is open (the lab's request log): the blip cuts the watch, not a read in flight
        wait_for(lambda: proc.poll() is not None or any(
            "watch=true" in r and f"metadata.name%3D{W_NODE}" in r for r in lab.api_requests("GET /api/v1/nodes")),
            30, interval=0.02, what="the run watching its node")
        assert proc.poll() is None, proc.communicate()
        down = _blip(lab, lambda: proc.poll() is not None or (log.exists() and RECONNECTING in log.read_text()))
        assert proc.poll() is None, proc.communicate()  # before: exit 4, "MaxRetryError: HTTPSConnectionPool(…)"
        assert down < 1.0
    finally:
        kubelet.clear_fault("no-restart")
    kubelet.start_service()  # the node comes back with the new size after the blip
    out, err = proc.communicate(timeout=120)
    h.transcript.append(out + err)
    assert proc.returncode == 0, err
    assert "MaxRetryError" not in err and "Traceback" not in err
    [journal] = h.journals(tmp_path)
    assert journal["status"] == "done"
    node = h.node_obj(lab, W_NODE)
    assert node["status"]["capacity"]["cpu"] == "8" and not node["spec"].get("unschedulable")
    assert h.pod_obj(lab, want)["status"]["phase"] == "Running"
    logged = log.read_text()
    assert f"node {W_NODE}" in logged and "connection refused" in logged, logged


def _pending_pod(lab: Lab, name: str) -> None:
    """A pod no scheduler takes (its schedulerName runs nowhere): Pending until the test binds it."""
    lab.store.create("pods", {"metadata": {"name": name, "namespace": "default"},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.21"}],
                                       "schedulerName": "not-deployed"},
                              "status": {"phase": "Pending"}})


class _Waiting(threading.Thread):
    """A wait in a thread: its result or its exception."""

    def __init__(self, fn: Any) -> None:
        super().__init__(daemon=True)
        self.fn, self.result, self.error = fn, None, None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as e:  # the test reports it
            self.error = e


def test_pod_and_label_waits_outlive_an_api_blip(lab: Lab, caplog: pytest.LogCaptureFixture) -> None:
    """The other watches waits use: a pod's (verify-pods, the drain's evictions, the debug pod), and the labels
    of every node (`nfd files push` waiting for nfd-master to relabel: a list, then a watch of all nodes). Each
    wait is seen to follow a change through its watch before the blip, and to end on the change made after it."""
    caplog.set_level(logging.WARNING, logger="console.kube.retrywatch")
    api, _ = connect(str(lab.state.kubeconfig))
    _pending_pod(lab, "blip-pod")
    pod_seen: list[str] = []

    def pod_labelled(p: dict[str, Any] | None) -> bool:
        labels = ((p or {}).get("metadata") or {}).get("labels") or {}
        pod_seen.append(labels.get("step", ""))
        return labels.get("step") == "after"

    progress: list[str] = []
    pod = _Waiting(lambda: nodes_ops.watch_until(api, "pod", "blip-pod", pod_labelled, 60, namespace="default"))
    labels = _Waiting(lambda: nfdfiles.wait_relabel(
        api, {W_WAITS: {"example.com/step": "after"}, "kube-controlplane01": {"example.com/step": None}},
        timeout=60, progress=progress.append))
    pod.start()
    labels.start()
    wait_for(lambda: pod_seen and progress, timeout=30, interval=0.02, what="both waits reading")

    def label(key: str, value: str | None) -> Any:
        def edit(obj: dict[str, Any]) -> None:
            if value is None:
                obj["metadata"].setdefault("labels", {}).pop(key, None)
            else:
                obj["metadata"].setdefault("labels", {})[key] = value
        return edit

    # a change each wait must see through its watch: both are watching when the server goes
    lab.store.mutate("pods", "default", "blip-pod", label("step", "before"))
    lab.store.mutate("nodes", None, "kube-controlplane01", label("example.com/step", "before"))
    wait_for(lambda: "before" in pod_seen and "0/2 nodes relabelled" in progress[1:], timeout=30, interval=0.02,
             what="both waits watching")
    down = _blip(lab, lambda: (not pod.is_alive() and not labels.is_alive())
                 or caplog.text.count(RECONNECTING) >= 2)
    assert pod.is_alive() and labels.is_alive(), (pod.error, labels.error)  # before: ProtocolError, MaxRetryError
    assert down < 1.0

    lab.store.mutate("pods", "default", "blip-pod", label("step", "after"))
    lab.store.mutate("nodes", None, "kube-controlplane01", label("example.com/step", None))
    lab.store.mutate("nodes", None, W_WAITS, label("example.com/step", "after"))
    pod.join(60)
    labels.join(60)
    assert pod.error is None and labels.error is None, (pod.error, labels.error)
    assert pod.result["metadata"]["labels"]["step"] == "after"
    assert labels.result == {W_WAITS: {"example.com/step": "after"}, "kube-controlplane01": {"example.com/step": None}}


def test_only_the_deadline_ends_a_wait_and_it_says_why(lab: Lab) -> None:
    """The server away for the whole wait: the wait retries until its deadline, then says since when the API
    server has not answered and why — not a transport error's class name."""
    api, _ = connect(str(lab.state.kubeconfig))
    lab.kube_api_down()
    try:
        t0 = time.monotonic()
        with pytest.raises(TimeoutError) as err:
            nodes_ops.watch_until(api, "node", W_WAITS, lambda n: False, 3)
        took = time.monotonic() - t0
    finally:
        lab.kube_api_up()
    assert 3 <= took < 10
    text = str(err.value)
    assert text.startswith(f"node {W_WAITS}: condition not met within 3s; the API server has not answered since ")
    assert "connection refused" in text and "MaxRetryError" not in text, text


@pytest.mark.parametrize("poll", ["share", "placements"])
def test_the_fleet_polls_outlive_an_api_blip(lab: Lab, caplog: pytest.LogCaptureFixture, poll: str) -> None:
    """The fleet's checks that pods run where planned poll rather than watch: a node's share as its run ends
    (verify.wait_share_running) and every planned pod at the fleet's end (fleet_checks.verify_placements). A poll
    that meets the blip polls again until the deadline instead of failing the node or the fleet."""
    caplog.set_level(logging.WARNING, logger="console.kube.retrywatch")
    api, _ = connect(str(lab.state.kubeconfig))
    name = f"{poll}-pod"
    _pending_pod(lab, name)
    if poll == "share":
        waiting = _Waiting(lambda: verify.wait_share_running(api, W_WAITS, [f"default/{name}"], set(), 60))
    else:
        waiting = _Waiting(lambda: fleet_checks.verify_placements(api, {f"default/{name}": W_WAITS}, 60))
    # its first look meets the blip (a poll once a second could miss one begun later)
    down = _blip(lab, lambda: not waiting.is_alive() or "polling again" in caplog.text, start=waiting.start)
    assert waiting.is_alive(), waiting.error  # before: MaxRetryError
    assert down < 1.0

    # bound as a scheduler binds (pods/binding: spec.nodeName cannot be updated), then the node's kubelet runs it
    from kubernetes import client

    client.CoreV1Api(api).create_namespaced_pod_binding(name, "default", client.V1Binding(
        metadata=client.V1ObjectMeta(name=name), target=client.V1ObjectReference(kind="Node", name=W_WAITS)),
        _preload_content=False)
    waiting.join(60)
    assert waiting.error is None, waiting.error
    assert waiting.result.ok and waiting.result.problems() == [], waiting.result.texts()
