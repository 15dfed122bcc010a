"""Bridging the app's VM data to the planner's types (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from console.runbook.plan import FlavorInfo, VmSize


def vm_size(vm: Any) -> VmSize | None:
    return VmSize(vm.vcpus, vm.ram_mib) if vm is not None and vm.vcpus and vm.ram_mib else None


def flavor_infos(flavors: Iterable[Any]) -> list[FlavorInfo]:
    """FlavorInfo from what the app loaded: FlavorInfo already, or (name, vcpus, ram MiB) tuples."""
    out = []
    for f in flavors:
        out.append(f if isinstance(f, FlavorInfo) else FlavorInfo(str(f[0]), int(f[1]), int(f[2])))
    return out
