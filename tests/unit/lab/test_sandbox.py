"""Commands on a lab node run for real (bubblewrap over the node's tree): the field report's commands,
the debug-pod recipes, the simulated services, the limits, and hooks as nfd-worker runs them.

Sources: field report 2 and scale-up.md 4/5.2 (/work/shared/reference): `lscpu`,
`echo 1 > /sys/devices/system/cpu/cpuN/online`, `nsenter -t 1 -m -u -i -n -p -- systemctl restart kubelet`,
`kubectl debug node --profile=sysadmin -- chroot /host …`; systemctl(1) exit codes; NFD's worker DaemonSet
(deployment/base/worker-daemonset) for the /host-* mounts and read-only source.d.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

import pytest

from console.lab import sandbox
from console.lab.cpufs import CpuFs, mounted
from console.lab.guestroot import NFD_SOURCE_D, GuestRoot

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (./dev installs it)")


class Guest:
    uuid = "5d2e8c1a-0000-4000-8000-000000000001"
    running = True
    boot_id = "b00t"

    def __init__(self) -> None:
        self.present_vcpus = 12
        self.online_cpus = frozenset(range(8))
        self.mem_total_kib = 16396200
        self.subs: list = []

    def set_cpu_online(self, cpu: int, online: bool) -> None:
        if not 0 <= cpu < self.present_vcpus:
            raise ValueError(f"cpu{cpu} is not present")
        self.online_cpus = self.online_cpus | {cpu} if online else self.online_cpus - {cpu}
        for cb in list(self.subs):
            cb("cpu-online")

    def subscribe(self, callback):
        self.subs.append(callback)
        return lambda: None


class Kubelet:
    def __init__(self) -> None:
        self.service = "active"
        self.journal = ["Nov 29 kube-worker02 Started kubelet: The Kubernetes Node Agent."]
        self.calls: list = []

    def restart(self, *, wait: bool = False) -> None:
        self.calls.append(("restart", wait))

    def stop_service(self) -> None:
        self.calls.append(("stop",))
        self.service = "inactive"

    def start_service(self) -> None:
        self.calls.append(("start",))
        self.service = "active"


@pytest.fixture
def node(tmp_path):
    guest = Guest()
    root = GuestRoot(tmp_path / "kube-worker02")
    detach = root.attach(guest, hostname="kube-worker02")
    yield root, guest
    detach()
    assert not mounted(tmp_path / ".kube-worker02.cpu")  # the cpu filesystem is unmounted


@pytest.mark.skipif(CpuFs.unavailable() is not None, reason=f"needs FUSE: {CpuFs.unavailable()}")
def test_cpu_hotplug_is_synchronous_as_in_sysfs(node):
    """drivers/base/cpu.c: the write returns once the CPU is up, so the script's next command sees it."""
    root, guest = node
    root.ready()
    assert root.cpu_mount is not None
    res = sh(root, "for i in 8 9 10 11; do echo 1 > /sys/devices/system/cpu/cpu$i/online; done; "
                   "cat /sys/devices/system/cpu/online; grep -c ^processor /proc/cpuinfo; "
                   "/bin/echo 2 > /sys/devices/system/cpu/cpu9/online; echo 0 > /sys/devices/system/cpu/cpu9/online; "
                   "cat /sys/devices/system/cpu/online; "
                   "test -d /sys/devices/system/cpu/cpu9/topology || echo no-topology")
    assert res.stdout == "0-11\n12\n0-8,10-11\nno-topology\n"
    assert res.stderr == "/bin/echo: write error: Invalid argument\n"
    assert guest.online_cpus == frozenset(range(12)) - {9}


@pytest.mark.skipif(CpuFs.unavailable() is not None, reason=f"needs FUSE: {CpuFs.unavailable()}")
def test_a_dead_cpu_filesystem_is_still_unmounted(tmp_path):
    """A FUSE mount whose process died answers stat with ENOTCONN (os.path.ismount says False): stop() and the
    next start() find it in /proc/self/mounts."""
    src = tmp_path / "cpu"
    src.mkdir()
    fs = CpuFs(src, tmp_path / ".n.cpu", lambda cpu, online: 0)
    fs.start()
    fs._proc.kill()
    fs._proc.wait()
    assert mounted(fs.mountpoint) and not os.path.ismount(fs.mountpoint)
    again = CpuFs(src, fs.mountpoint, lambda cpu, online: 0)
    again.start()  # over the dead mount
    assert os.path.ismount(fs.mountpoint)
    again.stop()
    fs.stop()
    assert not mounted(fs.mountpoint)


def test_without_fuse_writes_apply_by_the_end_of_the_command(tmp_path, monkeypatch):
    monkeypatch.setattr(CpuFs, "unavailable", staticmethod(lambda: "no FUSE in this test"))
    guest = Guest()
    root = GuestRoot(tmp_path / "n")
    detach = root.attach(guest, hostname="n")
    assert root.cpu_mount is None
    sh(root, "echo 1 > /sys/devices/system/cpu/cpu8/online")
    assert 8 in guest.online_cpus and root.read("/sys/devices/system/cpu/online") == "0-8\n"
    detach()


def sh(root, script, **kw):
    return sandbox.run(root, ["sh", "-c", script], **{"timeout": 30, **kw})


def test_field_report_lscpu_online_and_sockets(node):
    root, guest = node
    res = sh(root, "lscpu; fgrep 'physical id' /proc/cpuinfo | sort -u | wc -l")
    assert res.code == 0, res.stderr
    assert "On-line CPU(s) list:             0-7\n" in res.stdout
    assert "Off-line CPU(s) list:            8-11\n" in res.stdout
    assert res.stdout.endswith("\n8\n")
    res = sh(root, "echo 1 | tee /sys/devices/system/cpu/cpu8/online")
    assert (res.code, res.stdout) == (0, "1\n")
    assert 8 in guest.online_cpus  # the write hot-plugged the CPU in the guest
    res = sh(root, "fgrep 'physical id' /proc/cpuinfo | sort -u | wc -l; cat /sys/devices/system/cpu/online")
    assert res.stdout == "9\n0-8\n"


def test_offline_and_refused_writes(node):
    root, guest = node
    assert sh(root, "echo 0 > /sys/devices/system/cpu/cpu3/online").code == 0
    assert 3 not in guest.online_cpus
    res = sh(root, "echo 1 > /sys/devices/system/cpu/cpu12/online")  # not present: no such directory
    assert res.code == 2 and "cannot create /sys/devices/system/cpu/cpu12/online: Directory nonexistent" in res.stderr
    sh(root, "echo 7 > /sys/devices/system/cpu/cpu9/online")
    assert 9 not in guest.online_cpus and root.read("/sys/devices/system/cpu/cpu9/online") == "0\n"
    res = sh(root, "echo x > /sys/devices/system/cpu/online")  # read-only, as in sysfs
    assert res.code == 2 and "Permission denied" in res.stderr


def test_the_nodes_proc_not_the_lab_hosts(node):
    root, _ = node
    res = sh(root, "head -n 1 /proc/meminfo; grep -c ^processor /proc/cpuinfo; cat /proc/sys/kernel/pid_max; "
                   "hostname; cat /etc/hostname; uname -n; nproc; nproc --all; cat /proc/version; uname -sr; "
                   "chroot /host uname -r")
    lines = res.stdout.splitlines()
    assert lines[:8] == ["MemTotal:       16396200 kB", "8", "4194304", "kube-worker02", "kube-worker02",
                         "kube-worker02", "8", "12"]
    assert lines[8].startswith("Linux version 5.4.0-165-generic")
    assert lines[9:] == ["Linux 5.4.0-165-generic", "5.4.0-165-generic"]  # the guest's kernel, not the host's
    assert sh(root, "echo 65536 > /proc/sys/kernel/pid_max").code == 0  # sysctl -w: the node's, not the host's
    assert root.read("/proc/sys/kernel/pid_max") == "65536\n"


def test_clean_environment_and_exit_codes(node, monkeypatch):
    root, _ = node
    monkeypatch.setenv("LAB_HOST_SECRET", "s3cret")
    res = sh(root, "env | sort")
    assert "s3cret" not in res.stdout
    assert {ln.split("=")[0] for ln in res.stdout.splitlines()} == {"HOME", "HOSTNAME", "LANG", "PATH", "PWD"}
    res = sh(root, "echo start; frobnicate --now; exit 3")
    assert (res.code, res.stdout, res.stderr) == (3, "start\n", "sh: 1: frobnicate: not found\n")
    merged = sh(root, "echo out; echo err >&2", merge_stderr=True)
    assert (merged.stdout, merged.stderr) == ("out\nerr\n", "")


def test_debug_pod_recipes_nsenter_and_chroot_host(node):
    root, _ = node
    kubelet = Kubelet()
    res = sandbox.run(root, ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", "sh", "-c",
                             "systemctl restart kubelet && echo restarted"], kubelet=kubelet, timeout=30)
    assert (res.code, res.stdout) == (0, "restarted\n") and kubelet.calls == [("restart", True)]
    res = sandbox.run(root, ["chroot", "/host", "sh", "-c", "cat /etc/hostname; systemctl is-active kubelet; ls /"],
                      kubelet=kubelet, timeout=30)
    assert res.code == 0, res.stderr
    assert res.stdout.startswith("kube-worker02\nactive\n") and "host-proc" not in res.stdout
    sh(root, "echo gpu=true > /host/etc/kubernetes/node-feature-discovery/features.d/gpu")
    assert root.read("/etc/kubernetes/node-feature-discovery/features.d/gpu") == "gpu=true\n"


def test_systemctl_and_journalctl_shims(node):
    root, _ = node
    kubelet = Kubelet()
    cuts: list[bool] = []
    res = sh(root, "echo before; systemctl restart --no-block kubelet; systemctl restart kubelet.service; echo after",
             kubelet=kubelet, on_kubelet_restart=cuts.append)
    assert res.stdout == "before\nafter\n"
    assert kubelet.calls == [("restart", False), ("restart", True)] and cuts == [False, True]
    res = sh(root, "systemctl stop kubelet; systemctl is-active kubelet; echo $?", kubelet=kubelet)
    assert res.stdout == "inactive\n3\n"
    res = sh(root, "systemctl restart containerd; echo $?; journalctl -u kubelet -n 1 --no-pager", kubelet=kubelet)
    assert res.stderr == "Failed to restart containerd.service: Unit containerd.service not found.\n"
    assert res.stdout == "5\nNov 29 kube-worker02 Started kubelet: The Kubernetes Node Agent.\n"


def test_output_before_a_blocking_restart_reaches_the_sink_first(node):
    root, _ = node
    seen: list[str] = []
    cut_at: list[str] = []
    sh(root, "echo one; systemctl restart kubelet; echo two", kubelet=Kubelet(), stdout=seen.append,
       on_kubelet_restart=lambda blocking: cut_at.append("".join(seen)))
    assert cut_at == ["one\n"]


def test_timeout_kills_the_whole_tree(node):
    root, _ = node
    t0 = time.monotonic()
    res = sh(root, "(sleep 31.5; echo late > /tmp/late) & sleep 31.5", timeout=1)
    assert res.timed_out and res.code is None
    assert time.monotonic() - t0 < 20  # generous: 31 s if the sleeps survived

    def survivors() -> str:
        return subprocess.run(["pgrep", "-f", "sleep 31.5"], capture_output=True, text=True).stdout

    deadline = time.monotonic() + 10
    while survivors() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert survivors() == ""


def test_output_cap(node):
    root, _ = node
    res = sandbox.run(root, ["sh", "-c", "yes | head -c 100000"], max_output=1000, timeout=30)
    assert res.code == 0 and res.truncated and len(res.stdout) == 1000


def test_run_hook_as_nfd_worker(node):
    root, _ = node
    hook = root.path(NFD_SOURCE_D) / "my-script"
    hook.write_text("#!/bin/sh\n"
                    "for s in kernel.pid_max kernel.threads-max; do\n"
                    "  echo \"$s=$(cat /host-proc/sys/$(echo $s | tr . /))\"\n"
                    "done\n"
                    "echo node=$NODE_NAME\n"
                    "grep -q 20.04 /host-etc/os-release && echo os=focal\n"
                    "test -d /host-sys/devices/system/cpu/cpu8 && echo cpu8=present\n"
                    "touch " + NFD_SOURCE_D + "/x 2>/dev/null || echo source.d=read-only\n")
    os.chmod(hook, 0o755)
    code, out, err, timed_out = sandbox.run_hook(root, f"{NFD_SOURCE_D}/my-script", timeout=30, max_output=65536,
                                                 env={"NODE_NAME": "kube-worker02"})
    assert (code, err, timed_out) == (0, "", False)
    assert out == ("kernel.pid_max=4194304\nkernel.threads-max=128095\nnode=kube-worker02\nos=focal\n"
                   "cpu8=present\nsource.d=read-only\n")
    slow = root.path(NFD_SOURCE_D) / "slow"
    slow.write_text("#!/bin/sh\necho partial\nsleep 30\n")
    os.chmod(slow, 0o755)
    code, out, _, timed_out = sandbox.run_hook(root, f"{NFD_SOURCE_D}/slow", timeout=1, max_output=65536)
    assert (code, timed_out) == (None, True)


def test_a_program_containers_proc_is_the_nodes(node):
    """nfd-worker reads /proc/modules, never through its /host- prefix (NFD source/kernel/modules.go): with
    node_proc the node's file is there even where the lab host's kernel has no modules (procfs takes no new files),
    the host kernel's own /proc/config.gz is not, and procfs's own entries (self, sys) still answer."""
    root, _guest = node
    root.write("/proc/modules", "vfio_pci 16384 0 - Live 0x0000000000000000\n")
    script = "cat /proc/modules; test -e /proc/config.gz && echo leaked; readlink /proc/self/exe; " \
             "cat /proc/sys/kernel/osrelease; grep -c ^processor /proc/cpuinfo"
    res = sandbox.run(root, ["sh", "-c", script], node_proc=True, timeout=30)
    assert res.code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "vfio_pci 16384 0 - Live 0x0000000000000000"
    assert "leaked" not in lines
    assert lines[1].endswith("/readlink")  # /proc/self: procfs's own link, through the composed /proc
    assert lines[2] == root.read("/proc/sys/kernel/osrelease").strip()
    assert lines[3] == "8"  # the node's cpuinfo: 8 online CPUs


def test_terminate_sends_sigterm_to_the_command_as_a_container_runtime_does(node):
    """A graceful delete of a program container's pod: its processes get SIGTERM (not bwrap, which would not pass
    it on) and may end on their own terms; the kill of `cancel` stays the backstop."""
    root, _guest = node
    ready, terminate = threading.Event(), threading.Event()

    def out(text: str) -> None:
        if "ready" in text:
            ready.set()

    def stop_when_ready() -> None:
        if ready.wait(30):
            terminate.set()

    stopper = threading.Thread(target=stop_when_ready)
    stopper.start()
    res = sandbox.run(root, ["sh", "-c", "trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.1; done"],
                      timeout=60, stdout=out, terminate=terminate)
    stopper.join()
    assert res.code == 7 and "got TERM" in res.stdout
