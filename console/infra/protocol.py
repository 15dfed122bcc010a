"""The scale-up backend protocol: what the runbook needs from OpenStack or libvirt.

`describe` answers "what VM is behind this node and how big is it"; the
backend-specific operations (resize/confirm/revert, raise maxima/restart/
hot-add) are methods of each backend, each with a read-back the runbook uses
as its idempotency check and verification.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from console.infra.sizes import VmSize
from console.infra.vms import VmView


class InfraError(Exception):
    """A backend call failed; the message is the backend's own, plus what we were doing."""


class NotMapped(InfraError):
    """No VM could be matched to the node."""


@dataclass(frozen=True)
class VmDescription:
    backend: str  # "openstack" | "libvirt"
    ref: str  # server id / domain name
    name: str
    running: bool
    vcpus: int  # live current
    vcpus_max_live: int
    vcpus_config: int
    vcpus_max_config: int
    memory_mib: int  # live current (balloon)
    memory_max_mib: int  # live maximum
    memory_max_config_mib: int
    flavor: str | None = None
    status: str = ""  # Nova status or libvirt state
    host: str = ""
    nova_server_id: str | None = None
    instance_name: str | None = None
    disk_gb: int = 0  # Nova: root disk of the current flavor (0 = unknown)
    # what Nova believes (its flavor's size; 0 when Nova does not manage the VM) and whether vcpus/memory_mib
    # above were read from the hypervisor (libvirt, running) rather than copied from the flavor
    flavor_vcpus: int = 0
    flavor_memory_mib: int = 0
    from_hypervisor: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def view(self) -> VmView:
        """The read model every screen and the CLI show (console/infra/vms.py): running size, flavor, staleness."""
        running = VmSize(self.vcpus, self.memory_mib) if self.from_hypervisor and self.vcpus else None
        flavor_size = VmSize(self.flavor_vcpus, self.flavor_memory_mib) if self.flavor_vcpus else None
        if running is None and flavor_size is None and self.backend == "openstack" and self.vcpus:
            flavor_size = VmSize(self.vcpus, self.memory_mib)  # Nova alone: its sizes are the flavor's
        return VmView((self.nova_server_id or self.ref).lower(), self.name, self.status, running,
                      self.flavor or "", flavor_size, self.instance_name or "")
