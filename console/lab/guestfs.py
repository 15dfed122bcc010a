"""The guest host a shell acts on, and its filesystem as the shell sees it.

Files are the host's persistent files (`GuestHost.files`) overlaid with views
generated from the guest: sysfs CPU hotplug (`/sys/devices/system/cpu/...`),
`/proc/meminfo`, `/proc/version`, `/etc/os-release`. Writing `0`/`1` to a
`cpuN/online` file hot(un)plugs that CPU in the guest.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from console.lab.vm import Guest

OS_RELEASE = """NAME="Ubuntu"
VERSION="20.04.6 LTS (Focal Fossa)"
ID=ubuntu
ID_LIKE=debian
PRETTY_NAME="Ubuntu 20.04.6 LTS"
VERSION_ID="20.04"
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
VERSION_CODENAME=focal
UBUNTU_CODENAME=focal
"""
CPU_DIR = "/sys/devices/system/cpu"


class KubeletControl(Protocol):
    service: str  # active | activating | failed | inactive
    journal: list[str]

    def restart(self, *, wait: bool = False) -> None: ...
    def stop_service(self) -> None: ...
    def start_service(self) -> None: ...


@dataclass
class GuestHost:
    """What the shell acts on: the guest, the host's files, its kubelet service."""

    guest: Guest
    hostname: str
    files: dict[str, str] = field(default_factory=dict)
    kubelet: KubeletControl | None = None
    kernel_version: str = "5.4.0-165-generic"
    max_sleep: float = 2.0
    # called after a blocking `systemctl restart kubelet` (node exec cuts the log stream)
    on_kubelet_restart: Callable[[bool], None] | None = None


def cpu_list(cpus: Any) -> str:
    """The kernel's cpulist format: 0-7,9."""
    runs: list[list[int]] = []
    for c in sorted(cpus):
        if runs and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


class FsError(Exception):
    """errno text: "No such file or directory", "Is a directory", "Permission denied", ..."""


class GuestFs:
    """The filesystem half of `Shell`: paths (with `/host` for the node's root) over `host`."""

    host: GuestHost
    chrooted: bool

    # -- the guest's filesystem ---------------------------------------------
    def norm(self, path: str) -> str:
        if not self.chrooted and (path == "/host" or path.startswith("/host/")):
            path = path[5:] or "/"
        return posixpath.normpath(posixpath.join("/", path))

    def _virtual(self) -> dict[str, str]:
        g = self.host.guest
        present = set(range(g.present_vcpus))
        online = set(g.online_cpus)
        files = {
            "/proc/meminfo": _meminfo(g.mem_total_kib),
            f"{CPU_DIR}/online": cpu_list(online) + "\n",
            f"{CPU_DIR}/offline": cpu_list(present - online) + "\n",
            f"{CPU_DIR}/present": cpu_list(present) + "\n",
            f"{CPU_DIR}/possible": cpu_list(present) + "\n",
            "/etc/os-release": OS_RELEASE,
            "/etc/hostname": self.host.hostname + "\n",
            "/proc/version": f"Linux version {self.host.kernel_version} (buildd@lcy02-amd64-001)\n",
        }
        for n in sorted(present):
            files[f"{CPU_DIR}/cpu{n}/topology/core_id"] = f"{n}\n"
            if n:  # on x86 cpu0 has no online file
                files[f"{CPU_DIR}/cpu{n}/online"] = "1\n" if n in online else "0\n"
        return files

    def all_paths(self) -> set[str]:
        files = set(self._virtual()) | set(self.host.files)
        dirs = {posixpath.dirname(p) for p in files}
        while True:
            more = {posixpath.dirname(d) for d in dirs} - dirs
            if not more:
                break
            dirs |= more
        return files | dirs

    def is_dir(self, p: str) -> bool:
        p = self.norm(p)
        prefix = p.rstrip("/") + "/"
        return p == "/" or any(q.startswith(prefix) for q in (*self._virtual(), *self.host.files))

    def exists(self, p: str) -> bool:
        p = self.norm(p)
        return p in self.host.files or p in self._virtual() or self.is_dir(p)

    def read_file(self, path: str) -> str:
        p = self.norm(path)
        virtual = self._virtual()
        if p in virtual:
            return virtual[p]
        if p in self.host.files:
            return self.host.files[p]
        if self.is_dir(p):
            raise FsError("Is a directory")
        raise FsError("No such file or directory")

    def check_writable(self, path: str) -> str | None:
        """Why a redirection cannot create `path` (dash's "cannot create" reasons), or None."""
        p = self.norm(path)
        if p.startswith(("/sys/", "/proc/")):
            if p in self._virtual():
                return None
            return "Permission denied" if self.is_dir(posixpath.dirname(p)) else "Directory nonexistent"
        if self.is_dir(p):
            return "Is a directory"
        return None

    def write_file(self, path: str, data: str, append: bool) -> None:
        p = self.norm(path)
        m = re.fullmatch(rf"{CPU_DIR}/cpu(\d+)/online", p)
        if m:
            value = data.strip()
            if value not in ("0", "1"):
                raise FsError("I/O error")
            try:
                self.host.guest.set_cpu_online(int(m.group(1)), value == "1")
            except (ValueError, RuntimeError):
                raise FsError("I/O error") from None
            return
        if p.startswith(("/sys/", "/proc/")):
            raise FsError("I/O error")
        self.host.files[p] = (self.host.files.get(p, "") if append else "") + data


def _meminfo(total_kib: int) -> str:
    free = total_kib * 62 // 100
    rows = [("MemTotal", total_kib), ("MemFree", free), ("MemAvailable", total_kib * 81 // 100),
            ("Buffers", total_kib // 60), ("Cached", total_kib * 15 // 100), ("SwapCached", 0),
            ("Active", total_kib // 5), ("Inactive", total_kib // 9), ("SwapTotal", 0), ("SwapFree", 0),
            ("Dirty", 128), ("Shmem", 2048), ("Slab", total_kib // 40), ("CommitLimit", total_kib // 2),
            ("Committed_AS", total_kib // 4), ("VmallocTotal", 34359738367), ("HugePages_Total", 0),
            ("HugePages_Free", 0), ("Hugepagesize", 2048)]
    return "".join(
        f"{k + ':':<16}{v:>8}\n" if k.startswith("HugePages_") else f"{k + ':':<16}{v:>8} kB\n" for k, v in rows
    )
