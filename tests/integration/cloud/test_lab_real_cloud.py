"""The lab on the real OpenStack (Lab(cloud="real")): its VMs are Nova servers that Nova booted on the hosts the
scenario names, and field report 2's offline part runs against real Nova: `console scale-up --flavor` resizes the
server, which Nova moves to another host (allow_resize_to_same_host = False), confirms, and the node comes back
with the flavor's CPUs and the Pending pod Running (shared/reference/field-reports.md, report 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from labtools import lab_env, quick_scheduler_retries, run

from console.lab import scenarios
from console.lab.world import Lab

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab = Lab(scenarios.get("seed-resize"), tmp_path_factory.mktemp("real-cloud"), wait_usage=False, cloud="real")
    try:
        lab.start()
        yield quick_scheduler_retries(lab)
    finally:
        lab.stop()


def _servers(lab: Lab) -> dict[str, dict]:
    out = run(["openstack", "server", "list", "--long", "-f", "json"], lab_env(lab)).stdout
    return {s["Name"]: s for s in json.loads(out)}


def _scale_up(env: dict[str, str], node: str, flavor: str) -> subprocess.CompletedProcess[str]:
    """`console scale-up NODE --flavor FLAVOR --yes -o json`, as an admin runs it."""
    argv = [sys.executable, "-m", "console", "scale-up", node, "--flavor", flavor, "--yes", "-o", "json"]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)


def test_the_vms_are_nova_servers_on_the_scenarios_hosts(lab: Lab) -> None:
    env = lab_env(lab)
    servers = _servers(lab)
    for vm in lab.vms:
        assert servers[vm.node_name]["ID"] == vm.server_id
        assert servers[vm.node_name]["Host"] == vm.compute_host
        node = json.loads(run(["kubectl", "get", "node", vm.node_name, "-o", "json"], env).stdout)
        assert node["spec"]["providerID"] == f"openstack:///{vm.server_id}"
        assert node["status"]["nodeInfo"]["systemUUID"] == vm.server_id  # the guest's SMBIOS: Nova's server id
    # Nova's own API: its real microversion range
    versions = json.loads(run(["openstack", "versions", "show", "--service", "compute", "-f", "json"], env).stdout)
    current = next(v for v in versions if v["Status"] == "CURRENT")
    assert (current["Min Microversion"], current["Max Microversion"]) == ("2.1", "2.104")


def test_field_report_2_offline_resize_moves_the_server_and_the_pod_runs(lab: Lab) -> None:
    env = lab_env(lab)
    node = "kube-worker02"
    before = _servers(lab)[node]
    pending = json.loads(run(["kubectl", "get", "pod", "nginx", "-o", "json"], env).stdout)
    assert pending["status"]["phase"] == "Pending"

    done = _scale_up(env, node, "m1.large")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    after = _servers(lab)[node]
    assert after["Status"] == "ACTIVE" and after["Flavor"] == "m1.large"
    assert after["Host"] != before["Host"]  # real Nova resized it on another host
    capacity = json.loads(run(["kubectl", "get", "node", node, "-o", "json"], env).stdout)["status"]["capacity"]
    assert capacity["cpu"] == "8"
    pod = json.loads(run(["kubectl", "get", "pod", "nginx", "-o", "json"], env).stdout)
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == node


def test_after_the_resize_the_vm_is_shown_on_its_new_host_and_libvirt_follows_it(lab: Lab) -> None:
    """`console get node` names the VM's new host (Nova's OS-EXT-SRV-ATTR:host); a libvirt live scale-up then
    works on the domain where it runs now, on the new host's libvirtd, and the node shows the drift between the
    flavor and what runs (field report 2's online part after its offline part)."""
    env = lab_env(lab)
    node = "kube-worker02"
    host = _servers(lab)[node]["Host"]
    doc = json.loads(run([sys.executable, "-m", "console", "get", "node", node, "-o", "json"], env).stdout)
    assert doc["vm"]["host"] == host and doc["vm"]["flavor"] == "m1.large"

    argv = [
        sys.executable,
        "-m",
        "console",
        "scale-up",
        node,
        "--method",
        "libvirt",
        "--vcpus",
        "8",
        "--memory",
        "14Gi",
        "--force",
        "--yes",
        "-o",
        "json",
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    import libvirt

    conn = libvirt.open(lab.compute.uri(host))
    try:
        dom = conn.lookupByUUIDString(next(vm.server_id for vm in lab.vms if vm.node_name == node))
        assert dom.isActive() and dom.info()[2] == 14 * 1024 * 1024  # the balloon's current KiB
    finally:
        conn.close()
    doc = json.loads(run([sys.executable, "-m", "console", "get", "node", node, "-o", "json"], env).stdout)
    assert doc["vm"]["memory"] == "14Gi" and doc["vm"]["flavor"] == "m1.large" and "nova" in doc["vm"]["stale"]


def test_novalidhost_from_nova_is_quoted_and_nothing_is_left_changed(lab: Lab) -> None:
    """The only other host's nova-compute disabled by an admin (`openstack compute service set --disable`):
    Nova's scheduler finds no host (ComputeFilter) and rolls the resize back; the console quotes Nova's message
    (the instance action event's details, microversion 2.84) and leaves the node uncordoned on its old flavor."""
    env = lab_env(lab)
    node = "kube-worker01"
    host = _servers(lab)[node]["Host"]
    others = [h for h in ("cmp001", "cmp002") if h != host]
    for other in others:
        run(["openstack", "compute", "service", "set", "--disable", other, "nova-compute"], env)
    try:
        done = _scale_up(env, node, "m1.large")
    finally:
        for other in others:
            run(["openstack", "compute", "service", "set", "--enable", other, "nova-compute"], env)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    failed = [s for s in json.loads(done.stdout)["steps"] if s["status"] == "failed"]
    assert failed and "No valid host was found" in failed[0]["message"], failed
    server = _servers(lab)[node]
    assert (server["Host"], server["Flavor"], server["Status"]) == (host, "m1.medium", "ACTIVE")
    spec = json.loads(run(["kubectl", "get", "node", node, "-o", "json"], env).stdout)["spec"]
    assert not spec.get("unschedulable")


def test_a_plain_member_gets_novas_default_policy_and_the_run_still_works(lab: Lab) -> None:
    """The cloud's member (clouds.yaml `lab-member`, role member in the project): Nova's default policy hides
    OS-EXT-SRV-ATTR:* and refuses the hypervisors API (403); the console's run still resizes and confirms, as the
    README promises a plain member."""
    env = {**lab_env(lab), "OS_CLOUD": "lab-member"}
    node = "kube-worker01"
    shown = json.loads(run(["openstack", "server", "show", node, "-f", "json"], env).stdout)
    assert "OS-EXT-SRV-ATTR:host" not in shown or not shown["OS-EXT-SRV-ATTR:host"]
    refused = run(["openstack", "hypervisor", "list"], env, check=False)
    assert refused.returncode != 0 and "403" in refused.stderr, refused.stderr
    before = _servers(lab)[node]["Host"]  # as admin

    done = _scale_up(env, node, "m1.large")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    after = _servers(lab)[node]
    assert after["Flavor"] == "m1.large" and after["Host"] != before


def test_quota_exceeded_comes_from_nova_and_is_quoted(lab: Lab) -> None:
    env = lab_env(lab)
    project = json.loads(run(["openstack", "project", "show", "admin", "-f", "json"], env).stdout)["id"]
    used = sum(
        json.loads(run(["openstack", "flavor", "show", s["Flavor"], "-f", "json"], env).stdout)["vcpus"]
        for s in _servers(lab).values()
    )
    run(["openstack", "quota", "set", "--cores", str(used), project], env)
    try:
        done = _scale_up(env, "kube-controlplane01", "m1.large")
    finally:
        run(["openstack", "quota", "set", "--cores", "-1", project], env)
    assert done.returncode in (1, 2), done.stdout[-3000:] + done.stderr[-3000:]
    assert "Quota exceeded for cores" in done.stdout + done.stderr, done.stdout[-3000:] + done.stderr[-3000:]
