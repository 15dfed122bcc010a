"""The VM read model: which side is stale (the kubelet or Nova's flavor), what the console shows, and mapping
nodes to VMs (providerID, systemUUID, then name).

Numbers are field report 2's on the lab (seed-live): kube-worker02 on m1.large (8 vCPU / 12 GiB, kubelet
cpu 8 / memory 12268324Ki), live-scaled through libvirt to 12 vCPU / 16 GiB (kubelet cpu 12 / 16396200Ki).
Nova regenerates the domain from the flavor on a hard reboot, resize, migration, evacuate or unshelve
(nova/virt/libvirt/driver.py `_hard_reboot`, `finish_migration`, `spawn` → `_get_guest_xml`), so after a
live scale-up it is Nova's flavor that is out of date, not the kubelet.
"""

from __future__ import annotations

import pytest

from console.infra.inventory import nova_flavor_from_metadata
from console.infra.protocol import VmDescription
from console.infra.sizes import VmSize
from console.infra.vms import Staleness, VmView, legend, match_nodes
from console.kube.model import NodeInfo, Resources

KiB = 1024
LARGE = VmSize(8, 12288)
LIVE = VmSize(12, 16384)


def node(name: str, uuid: str = "", provider: str = "") -> NodeInfo:
    r = Resources(2000, 4 * 2**30, 110)
    return NodeInfo(name, "uid", "1", {}, (), "True", False, r, r, "v1.32.4", uuid, provider)


def kubelet(cpu: int, mem_kib: int) -> Resources:
    return Resources(cpu * 1000, mem_kib * KiB, 110)


def vm(sid: str, name: str, domain: str = "") -> VmView:
    return VmView(sid, name, "ACTIVE", VmSize(2, 4096), "m1.medium", VmSize(2, 4096), domain)


def test_match_by_provider_id_then_system_uuid_then_name() -> None:
    servers = {v.server_id: v for v in (vm("aaa", "w1"), vm("bbb", "other-name"), vm("ccc", "w3"), vm("ddd", "x"),
                                        vm("fff", "server-5", domain="w5"))}
    nodes = [
        node("w1", provider="openstack:///aaa", uuid="zzz"),  # providerID wins over a wrong systemUUID
        node("w2", uuid="BBB"),  # systemUUID, case-insensitive
        node("w3"),  # neither: by name
        node("w4", uuid="eee"),  # nothing matches
        node("w5"),  # by the libvirt domain's name (a domain named like its node)
    ]
    got = match_nodes(nodes, servers)
    assert {n: v.server_id for n, v in got.items()} == {"w1": "aaa", "w2": "bbb", "w3": "ccc", "w5": "fff"}


def test_after_a_live_scale_up_nova_is_out_of_date_not_the_kubelet() -> None:
    view = VmView("id", "kube-worker02", "ACTIVE", running=LIVE, flavor="m1.large", flavor_size=LARGE,
                  domain="instance-00000002")
    stale = view.staleness(kubelet(12, 16396200))
    assert stale == Staleness(kubelet=False, nova=True)
    assert stale.markers == "*" and stale.text() == "Nova flavor out of date"
    assert view.size == LIVE and (view.vcpus, view.ram_mib) == (12, 16384)
    assert view.size_text() == "Nova: m1.large · running: 12 vCPU / 16Gi"
    assert view.cell(stale, wide=False) == "12/16Gi"
    assert view.cell(stale, wide=True) == "12/16Gi m1.large"


def test_live_scale_up_with_the_old_kubelet_marks_both() -> None:
    view = VmView("id", "w", "ACTIVE", running=LIVE, flavor="m1.large", flavor_size=LARGE)
    stale = view.staleness(kubelet(8, 12268324))  # kubelet not restarted yet
    assert stale.sides == ("nova", "kubelet") and stale.markers == "*!"
    assert stale.text() == "Nova flavor out of date · kubelet stale"


def test_resized_vm_behind_a_kubelet_that_did_not_restart_is_kubelet_stale_only() -> None:
    # VERIFY_RESIZE: Nova regenerated the domain from m1.large, so the flavor is what runs
    view = VmView("id", "w", "VERIFY_RESIZE", running=LARGE, flavor="m1.large", flavor_size=LARGE)
    stale = view.staleness(kubelet(2, 4030532))
    assert stale == Staleness(kubelet=True, nova=False)
    assert view.size_text() == "m1.large (8 vCPU / 12Gi)"
    assert view.cell(stale, wide=True) == "m1.large"


@pytest.mark.parametrize(
    ("flavor", "cpu", "mem_kib", "expect"),
    [
        (VmSize(2, 4096), 2, 4030532, Staleness()),  # m1.medium as the kubelet reports it
        (LARGE, 8, 12268324, Staleness()),  # m1.large
        (LARGE, 2, 4030532, Staleness(kubelet=True)),  # resized, kubelet not restarted
        (VmSize(2, 4096), 2, 2 * 1024 * 1024, Staleness(kubelet=True)),  # memory far below the VM's
        # the kubelet reports more than the flavor: the VM runs more than Nova believes (a live scale-up)
        (LARGE, 12, 16396200, Staleness(nova=True)),
    ],
)
def test_nova_alone_compares_the_kubelet_with_the_flavor(flavor: VmSize, cpu: int, mem_kib: int,
                                                         expect: Staleness) -> None:
    """No libvirt for the host: only Nova's flavor is known, so the running size is not shown as such."""
    view = VmView("id", "w", "ACTIVE", running=None, flavor="f", flavor_size=flavor)
    assert view.staleness(kubelet(cpu, mem_kib)) == expect
    assert view.size_text() == f"f ({flavor})"


@pytest.mark.parametrize(
    ("running", "cpu", "mem_kib", "kubelet_stale"),
    [
        (VmSize(4, 8192), 4, 8 * 1024 * 1024 - 200_000, False),
        (VmSize(4, 8192), 2, 8 * 1024 * 1024 - 200_000, True),  # hot-added vCPUs offline in the guest
        (VmSize(4, 8192), 6, 8 * 1024 * 1024 - 200_000, True),  # more than runs (vCPUs unplugged)
        (VmSize(4, 8192), 4, 9 * 1024 * 1024, True),  # more memory than the VM has
    ],
)
def test_a_domain_nova_does_not_manage(running: VmSize, cpu: int, mem_kib: int, kubelet_stale: bool) -> None:
    view = VmView("uuid", "worker-a", "running", running=running, domain="worker-a")
    stale = view.staleness(kubelet(cpu, mem_kib))
    assert stale == Staleness(kubelet=kubelet_stale, nova=False)
    assert view.size_text() == str(running)
    assert view.cell(stale, wide=False) == "worker-a"


def test_unknown_size_is_never_stale() -> None:
    view = VmView("id", "w", "shut off")
    assert not view.staleness(kubelet(2, 4030532))
    assert view.size_text() == "size unknown"


def test_legend_names_each_marker() -> None:
    assert legend() == "* Nova flavor out of date · ! kubelet stale"
    assert legend(["kubelet"]) == "! kubelet stale"
    long = legend(long=True)
    for op in ("hard reboot", "resize", "migration", "evacuate", "unshelve"):
        assert op in long


def test_descriptions_become_the_same_view() -> None:
    """The runbook's VmDescription and the table's listing say the same: running size where libvirt was read."""
    nova_only = VmDescription("openstack", "SID", "w", True, 8, 8, 8, 8, 12288, 12288, 12288, flavor="m1.large",
                              status="ACTIVE", nova_server_id="SID")
    assert nova_only.view == VmView("sid", "w", "ACTIVE", None, "m1.large", LARGE, "")
    combined = VmDescription("openstack", "SID", "w", True, 12, 12, 12, 12, 16384, 16384, 16384, flavor="m1.large",
                             status="ACTIVE", nova_server_id="SID", instance_name="instance-2", flavor_vcpus=8,
                             flavor_memory_mib=12288, from_hypervisor=True)
    assert combined.view == VmView("sid", "w", "ACTIVE", LIVE, "m1.large", LARGE, "instance-2")
    assert combined.view.flavor_differs
    shut = VmDescription("libvirt", "dom", "dom", False, 4, 0, 4, 8, 0, 0, 8192, status="state 5",
                         nova_server_id="UUID", instance_name="dom")
    assert shut.view.running is None and shut.view.size is None


@pytest.mark.parametrize("ns", ["", ' xmlns="http://openstack.org/xmlns/libvirt/nova/1.1"'])
def test_nova_flavor_from_domain_metadata(ns: str) -> None:
    """Nova's metadata element (LibvirtConfigGuestMetaNovaFlavor, nova/virt/libvirt/config.py); libvirt returns
    it with or without the namespace."""
    meta = (f'<instance{ns}><name>kube-worker02</name><flavor name="m1.large"><memory>12288</memory>'
            '<disk>80</disk><swap>0</swap><ephemeral>0</ephemeral><vcpus>8</vcpus></flavor></instance>')
    assert nova_flavor_from_metadata(meta) == ("m1.large", LARGE)
    assert nova_flavor_from_metadata("<instance><name>x</name></instance>") == ("", None)
