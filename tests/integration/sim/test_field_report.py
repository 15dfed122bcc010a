"""Field report 2 end to end on the simulators: the kubelet keeps its start-time capacity."""

from __future__ import annotations

REPORT_MSG = (
    "0/3 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, "
    "that the pod didn't tolerate, 2 Insufficient cpu, 2 Insufficient memory."
)


def _failed_scheduling(cluster, pod):
    return [e for e in cluster.events("FailedScheduling", pod)]


def test_offline_resize_reboot_brings_new_capacity(make_cluster, wait_for):
    c = make_cluster()
    cap = c.node("kube-worker02")["status"]["capacity"]
    assert (cap["cpu"], cap["memory"], cap["pods"]) == ("2", "4030532Ki", "110")
    c.create_app_pod("nginx", "3", "5Gi")
    ev = wait_for(lambda: _failed_scheduling(c, "nginx"), what="FailedScheduling")[0]
    assert ev["message"] == REPORT_MSG
    assert ev["type"] == "Warning" and ev["source"]["component"] == "default-scheduler"
    cond = next(x for x in c.pod("nginx")["status"]["conditions"] if x["type"] == "PodScheduled")
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", REPORT_MSG)

    guest = c.guests["kube-worker02"]
    old_boot = guest.boot_id
    guest.shutdown()  # the resize powers the VM off
    wait_for(lambda: c.ready("kube-worker02") == "Unknown", what="Unknown")
    node = c.node("kube-worker02")
    ready = next(x for x in node["status"]["conditions"] if x["type"] == "Ready")
    assert ready["message"] == "Kubelet stopped posting node status."
    assert {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"} in node["spec"]["taints"]

    guest.boot(vcpus=8, mem_total_kib=12268324)  # m1.large
    wait_for(lambda: c.node("kube-worker02")["status"]["capacity"]["cpu"] == "8", what="cpu 8")
    node = c.node("kube-worker02")
    assert node["status"]["capacity"]["memory"] == "12268324Ki"
    assert node["status"]["allocatable"]["memory"] == f"{12268324 - 102400}Ki"
    assert node["status"]["nodeInfo"]["bootID"] == guest.boot_id != old_boot
    assert node["status"]["nodeInfo"]["systemUUID"] == guest.uuid
    wait_for(lambda: c.pod("nginx")["spec"].get("nodeName") == "kube-worker02", what="bound")
    wait_for(lambda: c.pod("nginx")["status"]["phase"] == "Running", what="Running")
    assert [e["message"] for e in c.events("Scheduled", "nginx")] == [
        "Successfully assigned default/nginx to kube-worker02"]
    rebooted = c.events("Rebooted", "kube-worker02")
    assert rebooted and rebooted[0]["message"] == f"Node kube-worker02 has been rebooted, boot id: {guest.boot_id}"
    assert not any(t["key"] == "node.kubernetes.io/unreachable" for t in c.node("kube-worker02")["spec"]["taints"]
                   ) if c.node("kube-worker02")["spec"].get("taints") else True


def test_online_scale_up_needs_kubelet_restart(make_cluster, wait_for):
    c = make_cluster(worker_vcpus=8, worker_mem_kib=12201896)
    c.create_app_pod("nginx-large", "9", "13Gi")
    ev = wait_for(lambda: _failed_scheduling(c, "nginx-large"), what="FailedScheduling")[0]
    assert ev["message"] == REPORT_MSG

    guest = c.guests["kube-worker02"]
    guest.hotplug_vcpus(12)  # virsh setvcpus 12: arrive offline
    guest.set_memory(16396200)  # virsh setmem 16G
    # a few heartbeats later the kubelet still reports its start-time capacity
    beat = c.node("kube-worker02")["metadata"]["resourceVersion"]
    wait_for(lambda: c.node("kube-worker02")["metadata"]["resourceVersion"] != beat, what="heartbeat")
    cap = c.node("kube-worker02")["status"]["capacity"]
    assert (cap["cpu"], cap["memory"]) == ("8", "12201896Ki")
    assert c.pod("nginx-large")["status"]["phase"] == "Pending"

    script = ("lscpu | grep -i 'line cpu'; for i in $(seq 8 11); do echo 1 > /sys/devices/system/cpu/cpu$i/online; "
              "done; cat /sys/devices/system/cpu/online; systemctl restart kubelet; echo after-restart")
    c.create_debug_pod("restart-kubelet", "kube-worker02", script)
    wait_for(lambda: c.pod("restart-kubelet")["status"]["phase"] == "Succeeded", what="debug pod done")
    term = c.pod("restart-kubelet")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 0 and term["reason"] == "Completed"
    out = c.logs.read("default", "restart-kubelet")
    assert "On-line CPU(s) list:             0-7\n" in out
    assert "Off-line CPU(s) list:            8-11\n" in out
    assert out.endswith("0-11\n")  # the restart cut the stream: "after-restart" never arrives
    assert "after-restart" not in out

    wait_for(lambda: c.node("kube-worker02")["status"]["capacity"]["cpu"] == "12", what="cpu 12")
    assert c.node("kube-worker02")["status"]["capacity"]["memory"] == "16396200Ki"
    assert c.node("kube-worker02")["status"]["nodeInfo"]["bootID"] == guest.boot_id  # restart, not reboot
    wait_for(lambda: c.pod("nginx-large")["status"]["phase"] == "Running", what="nginx-large Running")
    assert c.pod("nginx-large")["spec"]["nodeName"] == "kube-worker02"


def test_no_block_restart_keeps_the_log_and_kubectl_debug_profile(make_cluster, wait_for):
    c = make_cluster(worker_vcpus=8, worker_mem_kib=12201896)
    c.guests["kube-worker02"].hotplug_vcpus(10)
    c.create_debug_pod("dbg", "kube-worker02",
                       "echo 1 > /sys/devices/system/cpu/cpu8/online && echo 1 > /sys/devices/system/cpu/cpu9/online"
                       " && systemctl restart --no-block kubelet && echo queued", nsenter=False)
    wait_for(lambda: c.pod("dbg")["status"]["phase"] == "Succeeded", what="debug pod done")
    assert c.logs.read("default", "dbg") == "queued\n"
    wait_for(lambda: c.node("kube-worker02")["status"]["capacity"]["cpu"] == "10", what="cpu 10")
