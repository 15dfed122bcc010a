"""Worker VMs in the lab: what Nova, the hypervisor and the simulated guest share.

Contracts only; `libvirt_host.py` implements `Hypervisor`, `guest.py` the
`Guest`. Nova (lab/openstack) drives the hypervisor; the kubelet simulator
reads the guest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

GuestEventKind = Literal["boot", "shutdown", "vcpus", "memory", "cpu-online"]


@dataclass(frozen=True)
class Flavor:
    id: str
    name: str
    vcpus: int
    ram_mb: int
    disk_gb: int = 20


@dataclass(frozen=True)
class ComputeHost:
    """A Nova compute host as its resource provider reports it to Placement (nova-compute's update_provider_tree):
    VCPU total = the host's CPUs, reserved = reserved_host_cpus, MEMORY_MB reserved = reserved_host_memory_mb
    (Nova's default 512); capacity = (total - reserved) * allocation_ratio."""

    name: str
    vcpus: int
    memory_mb: int
    reserved_vcpus: int = 0
    reserved_memory_mb: int = 512
    cpu_allocation_ratio: float = 1.0
    ram_allocation_ratio: float = 1.0
    disk_gb: int = 2000

    def capacity(self) -> tuple[int, int]:
        """(vCPUs, MB) Placement lets instances use."""
        return (int((self.vcpus - self.reserved_vcpus) * self.cpu_allocation_ratio),
                int((self.memory_mb - self.reserved_memory_mb) * self.ram_allocation_ratio))


# a host nobody filled: scenarios that name no compute hosts never run out of room
ROOMY_HOST = ComputeHost("", vcpus=128, memory_mb=524288)


@dataclass(frozen=True)
class Quota:
    """The project's Nova quota (`openstack quota show`); -1 = unlimited, Nova's convention."""

    cores: int = -1
    ram_mb: int = -1
    instances: int = -1


@dataclass
class VMSpec:
    """One worker VM: a Nova server, a libvirt domain and a Kubernetes node."""

    server_id: str  # Nova server UUID = libvirt domain UUID = node systemUUID
    db_id: int  # Nova's integer id; instance_name = "instance-%08x" % db_id
    node_name: str  # the Kubernetes node (and Nova server name)
    compute_host: str  # OS-EXT-SRV-ATTR:host
    flavor: Flavor

    @property
    def instance_name(self) -> str:
        return f"instance-{self.db_id:08x}"


class Guest(Protocol):
    """The simulated operating system inside one VM.

    Facts follow shared/reference/scale-up.md sections 3-5: hot-added vCPUs
    arrive offline; MemTotal = balloon size minus a kernel overhead that grows
    with the maximum memory; a boot brings every present vCPU online.
    """

    uuid: str

    @property
    def running(self) -> bool: ...
    @property
    def boot_id(self) -> str: ...
    @property
    def present_vcpus(self) -> int: ...
    @property
    def online_cpus(self) -> frozenset[int]: ...
    @property
    def mem_total_kib(self) -> int: ...

    def set_cpu_online(self, cpu: int, online: bool) -> None:
        """`echo 1 > /sys/devices/system/cpu/cpuN/online`; ValueError if cpu N is not present."""

    def subscribe(self, callback: Callable[[GuestEventKind], None]) -> Callable[[], None]:
        """Call back on boot, shutdown, vCPU/memory change; returns unsubscribe."""


class Hypervisor(Protocol):
    """The lab's libvirt: domains written the way Nova writes them."""

    @property
    def uri(self) -> str:
        """A libvirt URI that reaches the same domains from another process."""

    def define_from_flavor(self, vm: VMSpec, flavor: Flavor) -> None:
        """(Re)write the persistent domain from a flavor, as Nova's _get_guest_xml does.

        current = maximum vCPUs, one socket per vCPU, <memory> = flavor RAM.
        An existing definition is destroyed and undefined first.
        """

    def start(self, server_id: str) -> None: ...
    def stop(self, server_id: str) -> None:
        """Power off (destroy) on Nova's behalf."""

    def soft_reboot(self, server_id: str) -> None:
        """Nova SOFT reboot: shut down and start the existing persistent definition."""

    def is_running(self, server_id: str) -> bool: ...
    def guest(self, server_id: str) -> Guest: ...
    def on_stopped_outside(self, callback: Callable[[str], None]) -> None:
        """Call back with the server id when a domain stops not through this object
        (virsh shutdown/destroy): Nova's power-state sync then stops the server."""

    def close(self) -> None:
        """Destroy and undefine every lab domain, stop the daemon the lab started."""
