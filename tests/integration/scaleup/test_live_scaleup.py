"""Field report 2, online part, through `console scale-up --method libvirt`, plus a hypervisor limit fault."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.lab

NODE = "kube-worker02"


def test_more_vcpus_than_the_host_allows(live_lab, tmp_path, scale_up, h):
    code, doc, err = scale_up(live_lab, tmp_path, NODE, "--vcpus", "1000", "--memory", "16Gi",
                              "--method", "libvirt", "--yes")
    assert code == 1, err
    assert "1000" in doc["message"] and "nothing was changed" in doc["message"]
    assert not h.node_obj(live_lab)["spec"].get("unschedulable")
    assert h.node_obj(live_lab)["status"]["capacity"]["cpu"] == "8"



def test_plan_warns_when_vcpus_exceed_the_hosts_physical_cpus(live_lab, tmp_path, scale_up, h):
    import libvirt

    conn = libvirt.open(live_lab.libvirt_uri)
    try:
        host_cpus = conn.getInfo()[2]
    finally:
        conn.close()
    want = str(max(12, host_cpus + 4))
    code, doc, err = scale_up(live_lab, tmp_path, NODE, "--vcpus", want, "--memory", "16Gi",
                              "--method", "libvirt", "--dry-run")
    assert code == 0, err
    over = [n for n in doc["plan"]["notes"] if "physical CPUs" in n]
    assert over == [f"{want} vCPUs on a host with {host_cpus} physical CPUs: overcommitted "
                    f"{int(want) / host_cpus:.1f}×; check the host's load and Nova's cpu_allocation_ratio "
                    "before relying on this"]
    assert h.node_obj(live_lab)["status"]["capacity"]["cpu"] == "8"  # a dry-run changes nothing


def test_field_report_online_scale_up(live_lab, tmp_path, scale_up, h):
    code, doc, err = scale_up(live_lab, tmp_path, NODE, "--vcpus", "12", "--memory", "16Gi",
                              "--method", "libvirt", "--yes")
    assert code == 0, err
    assert "CPU topology doesn't match" in err
    assert "soft reboot through Nova" in err
    cap = h.node_obj(live_lab)["status"]["capacity"]
    assert (cap["cpu"], cap["memory"]) == ("12", "16396200Ki")
    pod = h.pod_obj(live_lab, "nginx-large")
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == NODE
    steps = {s["id"]: s for s in doc["steps"]}
    assert steps["online-cpus"]["data"]["onlined"]
    assert steps["restart-kubelet"]["status"] == "done"
