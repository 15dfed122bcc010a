"""A lab node's tree: /proc and /sys as a Nova KVM guest's kernel shows them, read by the real tools.

Sources: field report 2 (/work/shared/reference/field-reports.md: `lscpu` "On-line CPU(s) list: 0-7",
"Off-line CPU(s) list: 8-11" after `virsh setvcpus 12`), arch/x86/kernel/cpu/proc.c (cpuinfo lists online
CPUs), util-linux sys-utils/lscpu*.c (what lscpu reads; `--sysroot` reads a tree as a foreign system).
"""

from __future__ import annotations

import subprocess

import pytest

from console.lab.cpufs import CpuFs
from console.lab.guestkernel import cpu_list, cpu_mask
from console.lab.guestroot import NFD_FEATURES_D, NFD_SOURCE_D, GuestRoot


class Guest:
    """The Guest protocol in memory: 12 present vCPUs, 0-7 online; events as SimulatedGuest sends them."""

    uuid = "5d2e8c1a-0000-4000-8000-000000000001"
    running = True
    boot_id = "b00t"

    def __init__(self, present: int = 12, online: int = 8, mem: int = 16396200) -> None:
        self.present_vcpus = present
        self.online_cpus = frozenset(range(online))
        self.mem_total_kib = mem
        self.subs: list = []

    def set_cpu_online(self, cpu: int, online: bool) -> None:
        if not 0 <= cpu < self.present_vcpus:
            raise ValueError(f"cpu{cpu} is not present")
        if cpu == 0 and not online:
            raise ValueError("cpu0 cannot be offlined")
        self.online_cpus = self.online_cpus | {cpu} if online else self.online_cpus - {cpu}
        self.emit("cpu-online")

    def subscribe(self, callback):
        self.subs.append(callback)
        return lambda: self.subs.remove(callback)

    def emit(self, kind: str) -> None:
        for cb in list(self.subs):
            cb(kind)


@pytest.fixture
def node(tmp_path, monkeypatch):
    # the tree alone: CPU writes found by polling (apply_cpu_writes); the FUSE view is tested in test_sandbox
    monkeypatch.setattr(CpuFs, "unavailable", staticmethod(lambda: "tree-only test"))
    guest = Guest()
    root = GuestRoot(tmp_path / "kube-worker02")
    detach = root.attach(guest, hostname="kube-worker02")
    yield root, guest
    detach()


def lscpu(root: GuestRoot) -> str:
    return subprocess.run(["lscpu", "--sysroot", str(root.root)], capture_output=True, text=True, check=True).stdout


def test_cpulist_and_mask_formats():
    assert cpu_list([0, 1, 2, 3, 5, 7, 8]) == "0-3,5,7-8"
    assert cpu_list([]) == ""
    assert cpu_mask([3], 8) == "08"
    assert cpu_mask([0, 33], 40) == "02,00000001"


def test_real_lscpu_reads_the_tree_as_the_field_report_guest(node):
    root, _ = node
    out = lscpu(root)
    assert "CPU(s):                          12\n" in out
    assert "On-line CPU(s) list:             0-7\n" in out
    assert "Off-line CPU(s) list:            8-11\n" in out
    assert "Socket(s):                       8\n" in out  # one socket per vCPU, as Nova writes the topology
    assert "Model name:                      Intel Xeon Processor (Skylake, IBRS)\n" in out


def test_cpuinfo_lists_online_cpus_each_its_own_socket(node):
    root, guest = node
    ids = {ln for ln in root.read("/proc/cpuinfo").splitlines() if ln.startswith("physical id")}
    assert len(ids) == 8
    guest.set_cpu_online(8, True)  # the guest's event rewrites the tree
    assert root.read("/sys/devices/system/cpu/online") == "0-8\n"
    assert root.read("/sys/devices/system/cpu/cpu8/online") == "1\n"
    assert root.path("/sys/devices/system/cpu/cpu8/topology/core_id").exists()
    assert "On-line CPU(s) list:             0-8\n" in lscpu(root)
    assert root.read("/proc/cpuinfo").count("physical id") == 9


def test_offline_cpu_loses_topology_and_hotunplugged_cpus_disappear(node):
    root, guest = node
    guest.set_cpu_online(3, False)
    assert not root.path("/sys/devices/system/cpu/cpu3/topology").exists()
    assert root.read("/sys/devices/system/cpu/offline") == "3,8-11\n"
    guest.present_vcpus = 4
    guest.emit("vcpus")
    assert not root.path("/sys/devices/system/cpu/cpu8").exists()
    assert root.read("/sys/devices/system/cpu/present") == "0-3\n"


def test_memory_change_rewrites_meminfo(node):
    root, guest = node
    assert root.read("/proc/meminfo").startswith("MemTotal:       16396200 kB\n")
    guest.mem_total_kib = 12201896
    guest.emit("memory")
    assert root.read("/proc/meminfo").startswith("MemTotal:       12201896 kB\n")


def test_apply_cpu_writes_hotplugs_and_puts_back_what_the_kernel_refuses(node):
    root, guest = node
    root.path("/sys/devices/system/cpu/cpu8/online").write_text("1\n")
    root.path("/sys/devices/system/cpu/cpu9/online").write_text("2\n")
    refused = root.apply_cpu_writes()
    assert 8 in guest.online_cpus and 9 not in guest.online_cpus
    assert refused == ["cpu9/online: invalid value '2'"]
    assert root.read("/sys/devices/system/cpu/cpu9/online") == "0\n"
    assert root.read("/sys/devices/system/cpu/online") == "0-8\n"


def test_identity_files_and_nfd_directories(node):
    root, _ = node
    assert root.read("/etc/hostname") == "kube-worker02\n"
    assert 'VERSION_ID="20.04"' in root.read("/etc/os-release")
    assert len(root.read("/etc/machine-id").strip()) == 32
    assert root.read("/proc/sys/kernel/pid_max") == "4194304\n"
    assert root.path(NFD_SOURCE_D).is_dir() and root.path(NFD_FEATURES_D).is_dir()
    assert root.path("/../../etc") == root.path("/etc")  # never outside the root


def test_files_view_is_the_tree(node):
    root, _ = node
    files = root.files
    files["/var/lib/kubelet/cpu_manager_state"] = '{"defaultCpuSet": "0-7"}'
    assert root.read("/var/lib/kubelet/cpu_manager_state") == '{"defaultCpuSet": "0-7"}'
    assert "/var/lib/kubelet/cpu_manager_state" in set(files)
    root.path("/var/lib/kubelet/cpu_manager_state").unlink()  # `rm -f` on the node
    assert files.get("/var/lib/kubelet/cpu_manager_state") is None
    with pytest.raises(KeyError):
        del files["/var/lib/kubelet/cpu_manager_state"]
