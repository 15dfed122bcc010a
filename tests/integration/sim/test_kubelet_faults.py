"""Kubelet restarts that go wrong, the NotReady window, KEP-3953 and node-exec faults."""

from __future__ import annotations

import json

from console.lab.kubelet import CPU_STATE, kubelet_endpoint


def _ready(c, node):
    return next(x for x in c.node(node)["status"]["conditions"] if x["type"] == "Ready")


def test_static_cpu_manager_blocks_restart_until_state_removed(make_cluster, wait_for):
    c = make_cluster(worker_vcpus=8, worker_mem_kib=12201896, cpu_manager_policy="static")
    k = c.kubelets["kube-worker02"]
    assert '"defaultCpuSet": "0-7"' in k.files[CPU_STATE]
    c.guests["kube-worker02"].hotplug_vcpus(12)
    c.create_debug_pod("online", "kube-worker02",
                       "for i in 8 9 10 11; do echo 1 > /sys/devices/system/cpu/cpu$i/online; done; "
                       "systemctl restart kubelet; systemctl is-active kubelet")
    wait_for(lambda: k.state == "crashloop", what="crash loop")
    want = 'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-7"'
    wait_for(lambda: any(want in line for line in k.journal), what="journal line")
    failed = wait_for(lambda: c.events("KubeletSetupFailed", "kube-worker02"), what="setup event")
    assert want in failed[0]["message"] and failed[0]["type"] == "Warning"
    wait_for(lambda: _ready(c, "kube-worker02")["status"] == "Unknown", what="node Unknown")
    # the kubelet is down: the debug pod's final status is not posted, capacity stays stale
    assert c.pod("online")["status"]["phase"] == "Running"
    assert c.node("kube-worker02")["status"]["capacity"]["cpu"] == "8"
    wait_for(lambda: (c.events("KubeletSetupFailed", "kube-worker02")[0].get("count") or 0) >= 2,
             what="aggregated retries")

    code, out = c.nodeexec.ssh("kube-worker02", "systemctl is-active kubelet; rm -f /var/lib/kubelet/cpu_manager_state;"
                                                " test -e /var/lib/kubelet/cpu_manager_state || echo gone")
    assert (code, out) == (0, "activating\ngone\n")
    wait_for(lambda: _ready(c, "kube-worker02")["status"] == "True", what="Ready again")
    assert c.node("kube-worker02")["status"]["capacity"]["cpu"] == "12"
    assert '"defaultCpuSet": "0-11"' in k.files[CPU_STATE]
    # recorded once the kubelet is back: `systemctl is-active` saw "activating" (exit 3)
    wait_for(lambda: c.pod("online")["status"]["phase"] == "Failed", what="pod status recorded")
    assert c.pod("online")["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    assert c.logs.read("default", "online") == ""  # cut at the restart


def test_kubelet_that_does_not_come_back(make_cluster, wait_for):
    c = make_cluster()
    k = c.kubelets["kube-worker01"]
    k.inject_fault("no-restart")
    c.create_debug_pod("restart", "kube-worker01", "systemctl restart kubelet")
    wait_for(lambda: k.state == "dead", what="dead kubelet")
    wait_for(lambda: _ready(c, "kube-worker01")["status"] == "Unknown", what="Unknown")
    ready = _ready(c, "kube-worker01")
    assert (ready["reason"], ready["message"]) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")
    taints = c.node("kube-worker01")["spec"]["taints"]
    assert {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"} in taints
    assert c.nodeexec.ssh("kube-worker01", "systemctl is-active kubelet")[1] == "failed\n"
    assert c.pod("restart")["status"]["phase"] == "Running"
    k.clear_fault("no-restart")
    k.start_service()
    wait_for(lambda: _ready(c, "kube-worker01")["status"] == "True", what="back")
    taints = c.node("kube-worker01")["spec"].get("taints", [])
    assert not any(t["key"].startswith("node.kubernetes.io/") for t in taints)
    wait_for(lambda: c.pod("restart")["status"]["phase"] == "Succeeded", what="pod done")


def test_restart_reports_not_ready_for_one_period(make_cluster, wait_for):
    c = make_cluster(not_ready_seconds=0.3)
    seen = []
    unsub = c.store.subscribe("nodes", lambda ev: seen.append(ev.object) if ev.object["metadata"]["name"]
                              == "kube-worker01" else None)
    try:
        c.kubelets["kube-worker01"].restart()
        wait_for(lambda: any(_r(n) == "KubeletNotReady" for n in seen), what="NotReady")
        wait_for(lambda: _r(seen[-1]) == "KubeletReady", what="Ready")
    finally:
        unsub()
    nr = next(n for n in seen if _r(n) == "KubeletNotReady")
    cond = next(x for x in nr["status"]["conditions"] if x["type"] == "Ready")
    assert cond["status"] == "False"
    assert cond["message"] == "container runtime status check may not have completed yet"
    assert {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"} in nr["spec"]["taints"]
    assert [e["message"] for e in c.events("Starting", "kube-worker01")] == ["Starting kubelet."]
    assert c.events("Starting", "kube-worker01")[0]["count"] == 2
    assert not c.events("Rebooted", "kube-worker01")


def _r(node):
    for x in node.get("status", {}).get("conditions") or []:
        if x["type"] == "Ready":
            return x["reason"]
    return None


def test_in_place_resize_gate_rereads_capacity(make_cluster, wait_for):
    c = make_cluster(worker_vcpus=8, worker_mem_kib=12201896, in_place_resize=True)
    # the running configuration through the node proxy's view of the kubelet (no lab annotation on the node)
    code, body, _ = kubelet_endpoint(c.kubelets["kube-worker02"], "configz")
    assert code == 200 and json.loads(body)["kubeletconfig"]["featureGates"] == {"InPlaceNodeResourceResize": True}
    assert "featureGates" not in c.kubelets["kube-worker01"].configz()["kubeletconfig"]
    assert not any("lab.console/" in k for k in c.node("kube-worker02")["metadata"].get("annotations") or {})
    g = c.guests["kube-worker02"]
    g.set_memory(12201896 + 50_000)  # under 100Mi: jitter, ignored
    g.hotplug_vcpus(12)  # offline CPUs do not count
    assert c.node("kube-worker02")["status"]["capacity"]["memory"] == "12201896Ki"
    for cpu in range(8, 12):
        g.set_cpu_online(cpu, True)
    wait_for(lambda: c.node("kube-worker02")["status"]["capacity"]["cpu"] == "12", what="cpu 12 without restart")
    assert c.kubelets["kube-worker02"].restarts == 0


def test_image_not_in_the_lab_registry_keeps_debug_pod_pending(make_cluster, wait_for):
    """kubelet pkg/kubelet/images/image_manager.go: Failed / ErrImagePull, then BackOff / ImagePullBackOff."""
    c = make_cluster()
    c.create_debug_pod("dbg", "kube-worker01", "true", image="ubuntu:99.04")
    wait_for(lambda: (c.pod("dbg")["status"].get("containerStatuses") or [{}])[0].get("state", {})
             .get("waiting", {}).get("reason") == "ImagePullBackOff", what="backoff")
    assert c.pod("dbg")["status"]["phase"] == "Pending"
    msgs = [e["message"] for e in c.events("Failed", "dbg")]
    assert "Error: ErrImagePull" in msgs and "Error: ImagePullBackOff" in msgs
    assert ('Failed to pull image "ubuntu:99.04": rpc error: code = NotFound desc = failed to pull and unpack image '
            '"docker.io/library/ubuntu:99.04": failed to resolve reference "docker.io/library/ubuntu:99.04": '
            "docker.io/library/ubuntu:99.04: not found") in msgs
    assert [e["message"] for e in c.events("BackOff", "dbg")] == ['Back-off pulling image "ubuntu:99.04"']


def test_app_pod_with_an_unknown_image_stays_pending(make_cluster, wait_for):
    c = make_cluster()
    c.create_app_pod("ghost", "100m", "64Mi", image="nginx:0.0.404")
    wait_for(lambda: (c.pod("ghost")["status"].get("containerStatuses") or [{}])[0].get("state", {})
             .get("waiting", {}).get("reason") == "ImagePullBackOff", what="backoff")
    assert c.pod("ghost")["status"]["phase"] == "Pending"
    assert len(c.events("BackOff", "ghost")) == 1  # its own status updates do not retrigger the pull


def test_exec_fail_fault_fails_the_pod(make_cluster, wait_for):
    c = make_cluster()
    c.nodeexec.inject_fault("exec-fail")
    c.create_debug_pod("dbg", "kube-worker01", "true")
    wait_for(lambda: c.pod("dbg")["status"]["phase"] == "Failed", what="Failed")
    term = c.pod("dbg")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (128, "StartError")


def test_failing_script_exit_code_and_unknown_command(make_cluster, wait_for):
    c = make_cluster()
    c.create_debug_pod("bad", "kube-worker01", "echo start; frobnicate --now; exit 3")
    wait_for(lambda: c.pod("bad")["status"]["phase"] == "Failed", what="Failed")
    term = c.pod("bad")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (3, "Error")
    assert c.logs.read("default", "bad") == "start\nsh: 1: frobnicate: not found\n"


def test_failed_scheduling_events_aggregate(make_cluster, wait_for):
    c = make_cluster()
    c.create_app_pod("huge", "64", "1Ti")
    wait_for(lambda: c.events("FailedScheduling", "huge"), what="first event")
    for n in range(3):  # a label change re-queues the pod; the message stays the same
        c.store.mutate("nodes", None, "kube-worker01", lambda node, n=n: node["metadata"]["labels"].update(t=str(n)))
    wait_for(lambda: c.events("FailedScheduling", "huge")[0]["count"] >= 2, what="count bump")
    events = c.events("FailedScheduling", "huge")
    assert len(events) == 1
    assert events[0]["lastTimestamp"] >= events[0]["firstTimestamp"]


def test_debug_pod_name_can_be_reused(make_cluster, wait_for):
    c = make_cluster()
    c.create_debug_pod("dbg", "kube-worker01", "echo one")
    wait_for(lambda: c.pod("dbg")["status"]["phase"] == "Succeeded", what="first run")
    c.store.delete("pods", "default", "dbg")
    c.logs.drop("default", "dbg")
    c.create_debug_pod("dbg", "kube-worker01", "nproc; cat /proc/meminfo | head -n 1")
    wait_for(lambda: c.pod("dbg")["status"]["phase"] == "Succeeded", what="second run")
    assert c.logs.read("default", "dbg") == "2\nMemTotal:        4030532 kB\n"
