"""Field report 2, online part, by hand with virsh, openstack and kubectl — as the admin did it."""

from __future__ import annotations

import json
import re

import pytest
from labtools import lab_env, run, wait_for

pytestmark = pytest.mark.lab

NODE = "kube-worker02"


@pytest.fixture(scope="module")
def env(seed_live_lab):
    return lab_env(seed_live_lab)


@pytest.fixture(scope="module")
def domain(env):
    server = json.loads(run(["openstack", "server", "show", NODE, "-f", "json"], env).stdout)
    return server["OS-EXT-SRV-ATTR:instance_name"]


def virsh(env, *args, check=True):
    return run(["virsh", "-c", env["CONSOLE_LIBVIRT_URI"], *args], env, check=check)


def capacity(env):
    node = json.loads(run(["kubectl", "get", "node", NODE, "-o", "json"], env).stdout)
    return node["status"]["capacity"]["cpu"], node["status"]["capacity"]["memory"]


def node_shell(env, tmp_path, name, script):
    """Run a script on the node the way the console does: a privileged hostPID pod entering PID 1's namespaces."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": NODE,
            "hostPID": True,
            "restartPolicy": "Never",
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "shell",
                    "image": "registry.lab/util-linux:2.38",
                    "securityContext": {"privileged": True},
                    "command": ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", "sh", "-c", script],
                }
            ],
        },
    }
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps(pod))
    run(["kubectl", "create", "-f", str(f)], env)

    def done():
        phase = json.loads(run(["kubectl", "get", "pod", name, "-o", "json"], env).stdout)["status"].get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    assert wait_for(done, 60, what=f"pod {name} to finish") == "Succeeded"
    return run(["kubectl", "logs", name], env).stdout


def test_starting_point(env, domain):
    assert domain == "instance-0000335c"
    assert wait_for(lambda: capacity(env) == ("8", "12268324Ki"), 30, what="m1.large capacity")
    pending = json.loads(
        run(["kubectl", "get", "pods", "-A", "--field-selector", "status.phase=Pending", "-o", "json"], env).stdout
    )
    assert [p["metadata"]["name"] for p in pending["items"]] == ["nginx-large"]


def test_online_scale_up_by_hand(env, domain, tmp_path):
    # 1. raising the maximum trips over the topology Nova wrote
    proc = virsh(env, "setvcpus", domain, "12", "--config", "--maximum", check=False)
    assert proc.returncode != 0
    assert "CPU topology doesn't match the desired vcpu count" in proc.stderr

    # 2. edit the persistent XML instead, then raise max memory
    xml = virsh(env, "dumpxml", "--inactive", domain).stdout
    xml = re.sub(r"<vcpu placement='static'>8</vcpu>", "<vcpu placement='static' current='8'>12</vcpu>", xml)
    xml = re.sub(r"sockets='8'", "sockets='12'", xml)
    f = tmp_path / "dom.xml"
    f.write_text(xml)
    virsh(env, "define", str(f))
    virsh(env, "setmaxmem", domain, "16G", "--config")

    # 3. the maxima apply on a new QEMU process: soft reboot through Nova keeps the edited XML
    run(["openstack", "server", "reboot", "--soft", NODE], env)
    assert wait_for(lambda: capacity(env) == ("8", "12201896Ki"), 90, what="capacity after soft reboot")
    assert virsh(env, "vcpucount", domain, "--live", "--maximum").stdout.strip() == "12"

    # 4. live hot-add: the vCPUs arrive offline, the kubelet keeps its old capacity
    virsh(env, "setvcpus", domain, "12", "--live")
    virsh(env, "setmem", domain, "16G", "--live")
    # the guest learns of hot-added vCPUs asynchronously (ACPI hotplug), so look again until they are there
    tries = iter(range(30))

    def offline_cpus() -> str | None:
        out = node_shell(env, tmp_path, f"lscpu-{next(tries)}", "lscpu")
        return out if re.search(r"Off-line CPU\(s\) list:\s+8-11", out) else None

    lscpu = wait_for(offline_cpus, 120, interval=1, what="vCPUs 8-11 offline in the guest")
    assert re.search(r"On-line CPU\(s\) list:\s+0-7", lscpu)
    assert capacity(env) == ("8", "12201896Ki")

    # 5. online them, restart the kubelet: new capacity, and the pod runs
    node_shell(
        env,
        tmp_path,
        "online-and-restart",
        "for i in 8 9 10 11; do echo 1 > /sys/devices/system/cpu/cpu$i/online; done; "
        "systemctl restart --no-block kubelet",
    )
    assert wait_for(lambda: capacity(env) == ("12", "16396200Ki"), 60, what="capacity after kubelet restart")

    def running():
        pod = json.loads(run(["kubectl", "get", "pod", "nginx-large", "-o", "json"], env).stdout)
        return pod["status"].get("phase") == "Running" and pod["spec"].get("nodeName") == NODE

    wait_for(running, 60, what="nginx-large Running")
