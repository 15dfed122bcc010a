"""The test-driver fallback: same lab calls, fewer checks (scale-up.md 3.8)."""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import libvirt
import pytest

from console.lab.domain_xml import vcpu_element
from console.lab.libvirt_daemon import LIBVIRTD
from console.lab.libvirt_host import LibvirtHost

from .conftest import M1_LARGE, M1_MEDIUM, new_vm, virsh, wait_for

GiB = 1024 * 1024
needs_libvirtd = pytest.mark.skipif(not os.path.exists(LIBVIRTD), reason="no libvirtd to share the test driver")


@needs_libvirtd
def test_define_start_and_reads_through_the_shared_daemon(test_driver_host: LibvirtHost) -> None:
    assert test_driver_host.uri.startswith("test+unix:///default?socket=")
    vm = new_vm(0x335C, M1_LARGE)
    test_driver_host.define_from_flavor(vm, M1_LARGE)
    test_driver_host.start(vm.server_id)
    root = ET.fromstring(test_driver_host.domain_xml(vm.server_id, inactive=True))
    assert root.get("type") == "test" and root.findtext("name") == "instance-0000335c"
    assert root.find("cpu/topology").get("sockets") == "8"
    guest = test_driver_host.guest(vm.server_id)
    assert guest.running and guest.present_vcpus == 8 and guest.online_cpus == frozenset(range(8))
    assert guest.mem_total_kib == 12268324
    # another process reaches the same (shared) test driver state while the host stays connected
    line = next(ln for ln in virsh(test_driver_host.uri, "list").stdout.splitlines() if vm.instance_name in ln)
    assert "running" in line


@needs_libvirtd
def test_topology_is_not_enforced_but_cold_boot_semantics_hold(test_driver_host: LibvirtHost) -> None:
    vm = new_vm(0x335D, M1_LARGE)
    uri, name = test_driver_host.uri, vm.instance_name
    test_driver_host.define_from_flavor(vm, M1_LARGE)
    test_driver_host.start(vm.server_id)
    guest = test_driver_host.guest(vm.server_id)
    first_boot = guest.boot_id
    # the QEMU driver refuses this with "CPU topology doesn't match the desired vcpu count"
    virsh(uri, "setvcpus", name, "12", "--config", "--maximum")
    inactive = test_driver_host.domain_xml(vm.server_id, inactive=True)
    assert vcpu_element(inactive) == (8, 12) and "sockets='8'" in inactive  # a topology QEMU would reject
    virsh(uri, "setmaxmem", name, "16G", "--config")
    err = virsh(uri, "setvcpus", name, "12", "--live", check=False)
    assert err.returncode != 0 and "exceeds maximum" in err.stderr
    test_driver_host.soft_reboot(vm.server_id)
    assert guest.boot_id != first_boot and guest.present_vcpus == 8
    virsh(uri, "setvcpus", name, "12", "--live")
    wait_for(lambda: guest.present_vcpus == 12, what="12 vCPUs")
    assert guest.online_cpus == frozenset(range(8))
    # no balloon device: setmem moves <currentMemory> itself, the guest follows it
    virsh(uri, "setmem", name, "16G", "--live")
    wait_for(lambda: guest.mem_total_kib == 16396200, what="MemTotal 16396200")


def test_in_process_test_driver_without_daemon(tmp_path: Path) -> None:
    with LibvirtHost(tmp_path, driver="test", daemon=False) as host:
        assert host.uri == "test:///default" and host.daemon_pid is None
        vm = new_vm(0x6006, M1_MEDIUM)
        host.define_from_flavor(vm, M1_MEDIUM)
        host.start(vm.server_id)
        guest = host.guest(vm.server_id)
        assert guest.present_vcpus == 2 and guest.mem_total_kib == 4030532
        conn = libvirt.open(host.uri)  # same process: shares the default test state
        try:
            dom = conn.lookupByUUIDString(vm.server_id)
            dom.setVcpusFlags(4, libvirt.VIR_DOMAIN_AFFECT_CONFIG | libvirt.VIR_DOMAIN_VCPU_MAXIMUM)
            host.soft_reboot(vm.server_id)
            dom.setVcpusFlags(4, libvirt.VIR_DOMAIN_AFFECT_LIVE)
            wait_for(lambda: guest.present_vcpus == 4, what="4 vCPUs")
            assert guest.online_cpus == frozenset({0, 1})
        finally:
            conn.close()
    with pytest.raises(libvirt.libvirtError):
        libvirt.open("test:///default").lookupByUUIDString(vm.server_id)


def test_a_reboot_is_one_boot_even_with_a_fast_poller(tmp_path: Path) -> None:
    """The poller must not apply a domain handle looked up before a destroy + create (it caches the old
    domain ID): that looked like a second boot, onlining hot-added vCPUs (seen once in CI)."""
    with LibvirtHost(tmp_path, driver="test", daemon=False, poll_interval=0.001) as host:
        conn = libvirt.open(host.uri)
        try:
            for i in range(40):
                vm = new_vm(0x7000 + i, M1_MEDIUM)
                host.define_from_flavor(vm, M1_MEDIUM)
                host.start(vm.server_id)
                guest = host.guest(vm.server_id)
                boots: list[str] = []
                guest.subscribe(lambda e, boots=boots: boots.append(e) if e == "boot" else None)
                dom = conn.lookupByUUIDString(vm.server_id)
                dom.setVcpusFlags(4, libvirt.VIR_DOMAIN_AFFECT_CONFIG | libvirt.VIR_DOMAIN_VCPU_MAXIMUM)
                host.soft_reboot(vm.server_id)
                dom.setVcpusFlags(4, libvirt.VIR_DOMAIN_AFFECT_LIVE)
                wait_for(lambda guest=guest: guest.present_vcpus == 4, what="4 vCPUs")
                time.sleep(0.01)  # let a few more polls run
                assert boots == ["boot"], (i, boots)
                assert guest.online_cpus == frozenset({0, 1}), i
                host.stop(vm.server_id)
        finally:
            conn.close()
