"""A real session libvirtd with the QEMU driver, one per test module, and helpers to drive it like an admin."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from console.lab.libvirt_daemon import leftover_qemu, qemu_available
from console.lab.libvirt_host import LibvirtHost
from console.lab.vm import Flavor, VMSpec

M1_MEDIUM = Flavor("2", "m1.medium", vcpus=2, ram_mb=4096)
M1_LARGE = Flavor("3", "m1.large", vcpus=8, ram_mb=12288)

needs_qemu = pytest.mark.skipif(not qemu_available(), reason="libvirtd / qemu-system-x86_64 not installed")


def new_vm(db_id: int, flavor: Flavor, name: str = "worker") -> VMSpec:
    return VMSpec(str(uuid.uuid4()), db_id, f"{name}-{db_id}", "cmp001", flavor)


def virsh(uri: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`virsh -c URI ...` in another process, as an admin on the compute host would run it."""
    proc = subprocess.run(["virsh", "-c", uri, *args], capture_output=True, text=True, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"virsh {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def wait_for(predicate: Callable[[], object], timeout: float = 5.0, what: str = "") -> float:
    """Poll every 10 ms until `predicate()` is truthy; return the seconds it took."""
    start = time.monotonic()
    last: object = None
    while time.monotonic() - start < timeout:
        last = predicate()
        if last:
            return time.monotonic() - start
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last value {last!r}")


def _host(state_dir: Path, **kwargs: object) -> Iterator[LibvirtHost]:
    host = LibvirtHost(state_dir, **kwargs)  # type: ignore[arg-type]
    host.start()
    daemon_dir, daemon_pid = host.daemon_dir, host.daemon_pid
    try:
        yield host
    finally:
        host.close()
        # final check: nothing of this lab survives (no QEMU pointing into its dir, no daemon)
        if daemon_dir is not None:
            assert leftover_qemu(daemon_dir) == []
            pgrep = subprocess.run(["pgrep", "-f", f"qemu-system.*{daemon_dir}"], capture_output=True, text=True)
            assert pgrep.stdout == "", f"qemu left behind: {pgrep.stdout}"
            assert not daemon_dir.exists() or daemon_dir.is_relative_to(state_dir)
        if daemon_pid is not None:
            assert not psutil.pid_exists(daemon_pid) or psutil.Process(daemon_pid).status() == psutil.STATUS_ZOMBIE


@pytest.fixture(scope="module")
def qemu_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LibvirtHost]:
    if not qemu_available():
        pytest.skip("libvirtd / qemu-system-x86_64 not installed")
    yield from _host(tmp_path_factory.mktemp("libvirt-qemu"), driver="qemu")


@pytest.fixture(scope="module")
def test_driver_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LibvirtHost]:
    yield from _host(tmp_path_factory.mktemp("libvirt-test"), driver="test")
