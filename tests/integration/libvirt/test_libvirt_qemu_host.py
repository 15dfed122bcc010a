"""The lab hypervisor on real libvirt + real QEMU (TCG): Nova's XML, the field report's scale-up, events."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import libvirt
import psutil
import pytest

from console.lab.domain_xml import vcpu_element, with_vcpu_maximum
from console.lab.libvirt_daemon import leftover_qemu
from console.lab.libvirt_host import LibvirtHost

from .conftest import M1_LARGE, M1_MEDIUM, needs_qemu, new_vm, virsh, wait_for

pytestmark = [needs_qemu, pytest.mark.slow]

GiB = 1024 * 1024


def test_domain_xml_is_written_as_nova_writes_it(qemu_host: LibvirtHost) -> None:
    vm = new_vm(0x335C, M1_LARGE)
    qemu_host.define_from_flavor(vm, M1_LARGE)
    root = ET.fromstring(qemu_host.domain_xml(vm.server_id, inactive=True))

    assert root.get("type") == "qemu"
    assert root.findtext("name") == "instance-0000335c" == vm.instance_name
    assert root.findtext("uuid") == vm.server_id
    vcpu = root.find("vcpu")
    assert vcpu is not None and vcpu.get("placement") == "static" and vcpu.text == "8"
    assert vcpu.get("current") in (None, "8")  # current = maximum
    topo = root.find("cpu/topology")
    assert topo is not None
    assert (topo.get("sockets"), topo.get("cores"), topo.get("threads")) == ("8", "1", "1")
    assert root.find("cpu").get("mode") != "host-passthrough"
    assert int(root.findtext("memory")) == int(root.findtext("currentMemory")) == 12 * GiB
    assert root.find("maxMemory") is None
    entries = {e.get("name"): e.text for e in root.findall("sysinfo[@type='smbios']/system/entry")}
    assert entries["manufacturer"] == "OpenStack Foundation"
    assert entries["product"] == "OpenStack Nova"
    assert entries["serial"] == entries["uuid"] == vm.server_id
    assert root.find("os/smbios").get("mode") == "sysinfo"
    assert root.find("features/acpi") is not None and root.find("features/apic") is not None
    assert root.find("devices/memballoon").get("model") == "virtio"
    assert root.find("devices/channel") is None  # no guest agent unless hw_qemu_guest_agent=yes
    assert root.find("devices/disk") is None and root.find("devices/interface") is None


def test_virsh_in_another_process_sees_the_domains(qemu_host: LibvirtHost) -> None:
    vm = new_vm(0x1001, M1_MEDIUM)
    qemu_host.define_from_flavor(vm, M1_MEDIUM)
    qemu_host.start(vm.server_id)
    out = virsh(qemu_host.uri, "list", "--all").stdout
    line = next(ln for ln in out.splitlines() if vm.instance_name in ln)
    assert "running" in line
    assert virsh(qemu_host.uri, "domuuid", vm.instance_name).stdout.strip() == vm.server_id
    guest = qemu_host.guest(vm.server_id)
    assert guest.running and guest.present_vcpus == 2 and guest.online_cpus == frozenset({0, 1})
    assert guest.mem_total_kib == 4030532  # field report: m1.medium worker capacity
    qemu_host.stop(vm.server_id)
    assert not qemu_host.is_running(vm.server_id) and not guest.running


def test_field_report_live_scale_up(qemu_host: LibvirtHost) -> None:
    """Field report 2, online scale-up, step by step against the real QEMU driver."""
    vm = new_vm(0x335D, M1_LARGE)
    name, uri = vm.instance_name, qemu_host.uri
    qemu_host.define_from_flavor(vm, M1_LARGE)
    qemu_host.start(vm.server_id)
    guest = qemu_host.guest(vm.server_id)
    events: list[str] = []
    guest.subscribe(events.append)
    first_boot = guest.boot_id
    assert (guest.present_vcpus, guest.mem_total_kib) == (8, 12268324)

    # step 2: the Nova topology refuses a new maximum ...
    err = virsh(uri, "setvcpus", name, "12", "--config", "--maximum", check=False)
    assert err.returncode != 0
    assert "CPU topology doesn't match the desired vcpu count" in err.stderr
    # ... the XML edit works on the running domain; setmaxmem --config too
    conn = libvirt.open(uri)
    try:
        dom = conn.lookupByUUIDString(vm.server_id)
        conn.defineXML(with_vcpu_maximum(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE), 12))
        inactive = dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
        assert vcpu_element(inactive) == (8, 12)
        assert "sockets='12'" in inactive
        virsh(uri, "setmaxmem", name, "16G", "--config")
        assert dom.maxMemory() == 12 * GiB  # live maximum unchanged while running
        assert dom.vcpusFlags(libvirt.VIR_DOMAIN_AFFECT_LIVE | libvirt.VIR_DOMAIN_VCPU_MAXIMUM) == 8

        # before a new QEMU process: nothing to hot-add into
        err = virsh(uri, "setvcpus", name, "12", "--live", check=False)
        assert "requested vcpus is greater than max allowable vcpus" in err.stderr
        err = virsh(uri, "setmem", name, "16G", "--live", check=False)
        assert "cannot set memory higher than max memory" in err.stderr

        # step 3: libvirt's reset/reboot keep the QEMU process: maxima do not apply, not a boot
        dom.reset(0)
        dom.reboot(0)
        qemu_host.sync(vm.server_id)
        assert dom.vcpusFlags(libvirt.VIR_DOMAIN_AFFECT_LIVE | libvirt.VIR_DOMAIN_VCPU_MAXIMUM) == 8
        assert dom.maxMemory() == 12 * GiB
        assert guest.boot_id == first_boot
        # Nova's soft reboot: a new QEMU process with the edited definition
        qemu_host.soft_reboot(vm.server_id)
        assert guest.boot_id != first_boot
        assert dom.vcpusFlags(libvirt.VIR_DOMAIN_AFFECT_LIVE | libvirt.VIR_DOMAIN_VCPU_MAXIMUM) == 12
        assert dom.maxMemory() == 16 * GiB
        assert guest.present_vcpus == 8 and guest.online_cpus == frozenset(range(8))
        assert guest.mem_total_kib == 12201896  # balloon still 12 GiB, kernel sized for 16 GiB
        assert events.count("boot") == 1 and "shutdown" in events

        # step 4: live hot-add from another process; the guest sees it without being told
        events.clear()
        virsh(uri, "setvcpus", name, "12", "--live")
        vcpu_latency = wait_for(lambda: guest.present_vcpus == 12, what="12 vCPUs present")
        assert "vcpus" in events
        assert guest.online_cpus == frozenset(range(8))  # hot-added vCPUs arrive offline
        for cpu in range(8, 12):
            guest.set_cpu_online(cpu, True)
        assert guest.online_cpus == frozenset(range(12)) and "cpu-online" in events
        with pytest.raises(ValueError, match="cpu0"):
            guest.set_cpu_online(0, False)
        with pytest.raises(ValueError, match="not present"):
            guest.set_cpu_online(12, True)

        virsh(uri, "setmem", name, "16G", "--live")
        mem_latency = wait_for(lambda: guest.mem_total_kib == 16396200, what="MemTotal 16396200")
        assert "memory" in events
        # libvirt itself keeps reporting the actual balloon: the full 16 GiB the guest booted with
        assert dom.info()[2] == 16 * GiB
        # wait_for's 5 s bound is the check; the figures are printed, not asserted (CI is noisy)
        print(f"latency after virsh returned: vcpus {vcpu_latency:.3f}s, memory {mem_latency:.3f}s")
        assert guest.boot_id != first_boot and events.count("boot") == 0
    finally:
        conn.close()
        # after this test's reset/reboot/hot-add sequence its QEMU was seen spinning at 100 % in 2 of 3 runs
        # (QEMU 7.2.22, TCG; the lab's own runbooks never reset a domain): stop it, so that
        # test_idle_guests_cost_little measures idle guests and not this one
        qemu_host.stop(vm.server_id)


def test_balloon_target_below_boot_size_is_what_the_guest_shows(qemu_host: LibvirtHost) -> None:
    vm = new_vm(0x2002, M1_LARGE)
    qemu_host.define_from_flavor(vm, M1_LARGE)
    qemu_host.start(vm.server_id)
    guest = qemu_host.guest(vm.server_id)
    virsh(qemu_host.uri, "setmem", vm.instance_name, "6G", "--live")
    wait_for(lambda: guest.mem_total_kib == 6 * GiB - 314588, what="balloon 6 GiB")
    conn = libvirt.open(qemu_host.uri)
    try:
        dom = conn.lookupByUUIDString(vm.server_id)
        # no balloon driver in the guest: libvirt reports the actual size, not the 6 GiB target
        assert dom.info()[2] == 12 * GiB
        assert dom.memoryStats()["actual"] == 12 * GiB
        assert f"<currentMemory unit='KiB'>{12 * GiB}</currentMemory>" in dom.XMLDesc(0)
    finally:
        conn.close()
    qemu_host.stop(vm.server_id)


def test_destroy_from_another_process_is_reported_once(qemu_host: LibvirtHost) -> None:
    vm = new_vm(0x3003, M1_MEDIUM)
    seen: list[str] = []
    got = threading.Event()

    def stopped(server_id: str) -> None:
        seen.append(server_id)
        got.set()

    qemu_host.on_stopped_outside(stopped)
    qemu_host.define_from_flavor(vm, M1_MEDIUM)
    qemu_host.start(vm.server_id)
    qemu_host.stop(vm.server_id)  # through the lab: not "outside"
    qemu_host.start(vm.server_id)
    qemu_host.soft_reboot(vm.server_id)  # neither
    guest = qemu_host.guest(vm.server_id)
    virsh(qemu_host.uri, "destroy", vm.instance_name)
    assert got.wait(5), "on_stopped_outside was not called"
    wait_for(lambda: not guest.running, what="guest shut down")
    time.sleep(0.5)  # let any stray late event arrive before counting
    assert [s for s in seen if s == vm.server_id] == [vm.server_id]


def test_idle_guests_cost_little(qemu_host: LibvirtHost) -> None:
    flavor = M1_LARGE.__class__("9", "m1.xlarge", vcpus=4, ram_mb=16384)
    vm = new_vm(0x4004, flavor)
    qemu_host.define_from_flavor(vm, flavor)
    qemu_host.start(vm.server_id)
    procs = leftover_qemu(qemu_host.daemon_dir)
    assert procs, "no QEMU process found for the running guests"
    # SeaBIOS finds no boot device and halts; under TCG on a busy CI machine that
    # takes anything from a fraction of a second to several seconds, so wait for
    # each guest to settle rather than sampling at a fixed moment.
    deadline = time.monotonic() + 60.0
    while True:
        for p in procs:
            p.cpu_percent(None)
        time.sleep(1.0)
        sampled = {p.pid: p.cpu_percent(None) for p in procs}
        busy = {pid: cpu for pid, cpu in sampled.items() if cpu >= 25.0}
        if not busy or time.monotonic() > deadline:
            break
    usage = [(p.pid, sampled[p.pid], p.memory_info().rss // 1024) for p in procs]
    print("idle QEMU (pid, %cpu, rss KiB):", usage)
    names = {p.pid: next((a for a in p.cmdline() if a.startswith("guest=")), "?") for p in procs}
    assert not busy, f"QEMU still busy after 60 s: {[(names[pid], cpu) for pid, cpu in busy.items()]}"
    for _pid, _cpu, rss_kib in usage:
        assert rss_kib < 200 * 1024  # 16 GiB guest RAM is allocated lazily
    mine = [p for p in procs if any(f"guest={vm.instance_name}," in a for a in p.cmdline())]
    assert len(mine) == 1
    qemu_host.stop(vm.server_id)
    assert not psutil.pid_exists(mine[0].pid) or mine[0].status() == psutil.STATUS_ZOMBIE


def test_define_from_flavor_replaces_a_running_definition(qemu_host: LibvirtHost) -> None:
    """Nova's hard reboot / resize: the edited maxima are lost, the flavor's values come back."""
    vm = new_vm(0x5005, M1_MEDIUM)
    qemu_host.define_from_flavor(vm, M1_MEDIUM)
    qemu_host.start(vm.server_id)
    conn = libvirt.open(qemu_host.uri)
    try:
        dom = conn.lookupByUUIDString(vm.server_id)
        conn.defineXML(with_vcpu_maximum(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE), 6))
        qemu_host.define_from_flavor(vm, M1_LARGE)
        assert not qemu_host.is_running(vm.server_id)
        qemu_host.start(vm.server_id)
        assert vcpu_element(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)) == (8, 8)
        assert qemu_host.guest(vm.server_id).present_vcpus == 8
        assert qemu_host.guest(vm.server_id).mem_total_kib == 12268324
    finally:
        conn.close()


def test_a_state_dir_can_be_reused_and_the_daemon_keeps_its_sockets_in_a_short_dir_of_its_own() -> None:
    """The daemon's directory (its sockets) is a fresh short one in /tmp whatever the state dir (issue 20, point
    11: one under the state dir made QEMU's monitor socket too long); its log stays in the state dir."""
    state = Path(tempfile.mkdtemp(prefix="lab-state-", dir="/tmp"))
    os.chmod(state, 0o755)
    try:
        dirs = []
        for db_id in (0x7007, 0x7008):  # the second run in the same state dir
            with LibvirtHost(state, driver="qemu") as host:
                assert host.daemon_dir is not None and host.daemon_dir.parent == Path("/tmp")
                dirs.append(host.daemon_dir)
                pid = host.daemon_pid
                vm = new_vm(db_id, M1_MEDIUM)
                host.define_from_flavor(vm, M1_MEDIUM)
                host.start(vm.server_id)
                assert host.guest(vm.server_id).mem_total_kib == 4030532
                out = virsh(host.uri, "list", "--all", "--name").stdout.split()
                assert out == [vm.instance_name]  # the previous run's domain was undefined
            assert leftover_qemu(state) == [] and leftover_qemu(dirs[-1]) == []
            assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
            assert not dirs[-1].exists()
        assert dirs[0] != dirs[1]
        assert "libvirt version" in (state / "libvirtd.log").read_text()
    finally:
        shutil.rmtree(state, ignore_errors=True)


CRASHING_LAB = """
import os, sys, uuid
from pathlib import Path
from console.lab.libvirt_host import LibvirtHost
from console.lab.vm import Flavor, VMSpec
flavor = Flavor("2", "m1.medium", 2, 4096)
host = LibvirtHost(Path(sys.argv[1]), driver="qemu")
host.start()
vm = VMSpec(str(uuid.uuid4()), 0x8008, "w", "cmp001", flavor)
host.define_from_flavor(vm, flavor)
host.start(vm.server_id)
print(host.daemon_dir, host.daemon_pid, flush=True)
os._exit(3)  # no close(), no atexit: as if the lab process were killed
"""


def test_a_lab_process_that_dies_without_close_leaves_nothing_running(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CRASHING_LAB, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 3, proc.stderr
    daemon_dir, pid = proc.stdout.split()
    wait_for(lambda: not leftover_qemu(Path(daemon_dir)), timeout=15, what="QEMU ended by the keeper")
    wait_for(lambda: not psutil.pid_exists(int(pid)), timeout=15, what="libvirtd ended by the keeper")
    wait_for(lambda: not Path(daemon_dir).exists(), timeout=15, what="daemon dir removed")
