"""What a growth costs, per the CostModel: price(new) − price(current) when both sizes are priced, else the
weights times what is added (vCPUs, GiB of memory). A growth never earns money (a cheaper larger flavor costs 0)."""

from __future__ import annotations

from console.planner.model import CostModel, Size, Vm


def weighted(model: CostModel, add_vcpus: int, add_memory_mib: int) -> float:
    return model.vcpu * max(0, add_vcpus) + model.memory_gib * max(0, add_memory_mib) / 1024


def growth_cost(model: CostModel, vm: Vm, to: Size, price: float | None = None) -> float:
    """The cost of growing `vm` from its current size to `to` (`price`: the target's price, when priced)."""
    cur = vm.current
    if to.vcpus == cur.vcpus and to.memory_mib == cur.memory_mib:
        return 0.0
    if price is not None and vm.price is not None:
        return max(0.0, price - vm.price)
    return weighted(model, to.vcpus - cur.vcpus, to.memory_mib - cur.memory_mib)
