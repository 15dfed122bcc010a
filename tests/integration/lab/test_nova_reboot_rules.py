"""Nova's reboot rules on real libvirt (scale-up.md 3.9), driven with the openstack CLI and virsh:
a soft reboot keeps hand-edited maxima, a hard reboot or `server start` rewrites the domain from the
flavor, and a guest shut down behind Nova's back is stopped by its power-state sync."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from labstart import start_lab
from labtools import lab_env, run, wait_for

from console.lab.world import Lab

pytestmark = pytest.mark.lab

NODE = "kube-worker01"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-resize", tmp_path_factory.mktemp("lab-reboot-rules"))


@pytest.fixture(scope="module")
def env(lab):
    return lab_env(lab)


def virsh(env, *args):
    return run(["virsh", "-c", env["CONSOLE_LIBVIRT_URI"], *args], env).stdout.strip()


def server(env):
    return json.loads(run(["openstack", "server", "show", NODE, "-f", "json"], env).stdout)


def raise_max_vcpus(env, tmp_path, dom, maximum):
    xml = virsh(env, "dumpxml", "--inactive", dom)
    current = re.search(r"<vcpu placement='static'>(\d+)</vcpu>", xml).group(1)
    xml = xml.replace(
        f"<vcpu placement='static'>{current}</vcpu>", f"<vcpu placement='static' current='{current}'>{maximum}</vcpu>"
    )
    xml = re.sub(r"sockets='\d+'", f"sockets='{maximum}'", xml)
    f = tmp_path / "dom.xml"
    f.write_text(xml)
    virsh(env, "define", str(f))
    assert virsh(env, "vcpucount", dom, "--config", "--maximum") == str(maximum)


def test_soft_keeps_edits_hard_and_start_rewrite_from_flavor(env, tmp_path):
    dom = server(env)["OS-EXT-SRV-ATTR:instance_name"]

    raise_max_vcpus(env, tmp_path, dom, 4)
    run(["openstack", "server", "reboot", "--hard", "--wait", NODE], env, timeout=120)
    assert virsh(env, "vcpucount", dom, "--config", "--maximum") == "2"  # rewritten from m1.medium

    raise_max_vcpus(env, tmp_path, dom, 4)
    run(["openstack", "server", "reboot", "--soft", "--wait", NODE], env, timeout=120)
    assert virsh(env, "vcpucount", dom, "--live", "--maximum") == "4"  # edit kept and applied

    virsh(env, "destroy", dom)  # "the VM stopped by itself" in the field report
    wait_for(lambda: server(env)["status"] == "SHUTOFF", 30, what="Nova's power-state sync")
    events = run(["openstack", "server", "event", "list", NODE, "-f", "json"], env).stdout
    assert "stop" in {e["Action"] for e in json.loads(events)}

    run(["openstack", "server", "start", NODE], env)
    wait_for(lambda: server(env)["status"] == "ACTIVE", 60, what="server start")
    assert virsh(env, "domstate", dom) == "running"
    assert virsh(env, "vcpucount", dom, "--config", "--maximum") == "2"  # start is a hard reboot
