"""VM sizes and flavors: the value types the scale-up backends return and the planner reasons about.

They live with the gateways (console/infra) so a backend never imports the domain
(console/runbook); `console.runbook.plan` re-exports them for its callers.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 2**20
GiB = 2**30


def fmt_mem(n: int) -> str:
    """Bytes as a short binary size: 12Gi, 1.5Gi, 512Mi."""
    if n >= GiB:
        s = f"{n / GiB:.1f}"
        return (s[:-2] if s.endswith(".0") else s) + "Gi"
    return f"{n / MiB:.0f}Mi"


@dataclass(frozen=True)
class VmSize:
    vcpus: int
    memory_mib: int

    def __str__(self) -> str:
        return f"{self.vcpus} vCPU / {fmt_mem(self.memory_mib * MiB)}"


@dataclass(frozen=True)
class FlavorInfo:
    name: str
    vcpus: int
    ram_mib: int
    id: str = ""
    disk_gb: int = 0  # root disk (Nova's flavor "disk"); 0 for libvirt targets and volume-backed flavors

    @property
    def size(self) -> VmSize:
        return VmSize(self.vcpus, self.ram_mib)
