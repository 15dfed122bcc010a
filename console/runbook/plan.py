"""Fit planning: does a Pending pod fit a node, and how big must the VM become.

Pure arithmetic on the console's domain views (NodeInfo, PodInfo), no I/O, so
the scale-up screen can call it on every keystroke and the runbook reuses it.

Model (shared/reference/scale-up.md 5.1, field report 2):
- the scheduler compares a pod's requests with allocatable − requests of the
  node's other (non-terminated) pods;
- allocatable = capacity − reservations (kube/system reserved + hard eviction),
  and the reservations stay the same when the VM grows, so we carry
  capacity − allocatable over to the target;
- capacity cpu = online vCPUs; capacity memory = guest MemTotal = VM RAM −
  the guest kernel's own overhead (struct pages, reserved ranges). The overhead
  is estimated as a fraction of RAM, measured from the current VM RAM vs the
  reported capacity when both are known (4 GiB → 4030532Ki is 3.9 %), else
  DEFAULT_OVERHEAD_FRACTION. The fraction shrinks as RAM grows (2.3 % at
  16 GiB), so scaling it up over-estimates slightly: conservative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from console.infra.sizes import FlavorInfo, GiB, MiB, VmSize, fmt_mem
from console.kube.model import NodeInfo, PodInfo

__all__ = [
    "FitAdvice",
    "FlavorFit",
    "FlavorInfo",
    "GiB",
    "MiB",
    "VmSize",
    "advise",
    "check_target",
    "fmt_cpu",
    "fmt_mem",
    "overhead_fraction",
    "predicted_allocatable",
]

DEFAULT_OVERHEAD_FRACTION = 0.04  # Ubuntu 20.04 guest at 4 GiB: 163772 KiB of 4 GiB
MAX_PLAUSIBLE_OVERHEAD = 0.08
MEM_STEP_MIB = 1024  # targets are rounded up to whole GiB, like flavors and `virsh setmem 16G`


@dataclass(frozen=True)
class FlavorFit:
    """A fit hint for one flavor: the allocatable it would give and whether the pod(s) fit."""

    flavor: FlavorInfo
    fits: bool
    allocatable_cpu_m: int
    allocatable_memory: int
    current: bool = False  # the VM already has this size
    shrinks: bool = False  # smaller than the VM in vCPUs or RAM (never offered as a target)


@dataclass(frozen=True)
class FitAdvice:
    node: str
    pods: tuple[str, ...]  # "namespace/name" of the pod(s) planned for
    fits_now: bool
    reason: str  # human text: why it does (not) fit now
    need_cpu_m: int  # requests of the pending pod(s)
    need_memory: int
    free_cpu_m: int  # allocatable − requests of pods on the node
    free_memory: int
    used_cpu_m: int
    used_memory: int
    reserved_cpu_m: int  # capacity − allocatable
    reserved_memory: int
    overhead_fraction: float  # guest kernel memory overhead / VM RAM
    current: VmSize | None  # the VM's size when known
    target: VmSize | None  # smallest size that makes it fit (None when it fits now)
    flavor: FlavorInfo | None  # smallest flavor that fits (None when none or none given)
    flavor_fits: tuple[FlavorFit, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = ()

    @property
    def target_reason(self) -> str:
        if self.fits_now:
            return "fits now; no scale-up needed"
        parts = [f"smallest size: {self.target}"] if self.target else []
        if self.flavor:
            parts.append(f"smallest flavor: {self.flavor.name} ({self.flavor.size})")
        elif self.flavor_fits:
            parts.append("no flavor is large enough")
        return "; ".join(parts)


def fmt_cpu(millis: int) -> str:
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis / 1000:.1f}".rstrip("0").rstrip(".")


def _requests(pods: Iterable[PodInfo]) -> tuple[int, int]:
    live = [p for p in pods if not p.terminated]
    return sum(p.requests.cpu_m for p in live), sum(p.requests.memory for p in live)


def overhead_fraction(node: NodeInfo, vm: VmSize | None) -> float:
    """Guest kernel overhead as a fraction of VM RAM, measured when the VM size is known."""
    if vm and vm.memory_mib > 0 and node.capacity.memory > 0:
        ram = vm.memory_mib * MiB
        if node.capacity.memory < ram:
            frac = (ram - node.capacity.memory) / ram
            # more than this is not kernel overhead: the balloon is below the maximum, or the kubelet is stale
            if frac <= MAX_PLAUSIBLE_OVERHEAD:
                return frac
    return DEFAULT_OVERHEAD_FRACTION


def predicted_allocatable(size: VmSize, reserved_cpu_m: int, reserved_memory: int, frac: float) -> tuple[int, int]:
    """(cpu millicores, memory bytes) the kubelet would report allocatable on a VM of `size`."""
    ram = size.memory_mib * MiB
    capacity_mem = ram - math.ceil(ram * frac)
    return size.vcpus * 1000 - reserved_cpu_m, capacity_mem - reserved_memory


def _shortfall(label: str, need: int, free: int, alloc: int, used: int, fmt: Callable[[int], str]) -> str:
    if used:
        return f"needs {fmt(need)}{label}, {fmt(free)}{label} free ({fmt(alloc)} allocatable − {fmt(used)} requested)"
    return f"needs {fmt(need)}{label}, {fmt(alloc)}{label} allocatable"


def advise(
    node: NodeInfo,
    pods_on_node: Sequence[PodInfo],
    pending_pod: PodInfo | Sequence[PodInfo],
    vm: VmSize | None = None,
    flavors: Iterable[FlavorInfo] = (),
) -> FitAdvice:
    """Whether `pending_pod` (or several, together) fits `node`, else the smallest VM size and flavor that do."""
    pending = [pending_pod] if isinstance(pending_pod, PodInfo) else list(pending_pod)
    keys = {(p.namespace, p.name) for p in pending}
    others = [p for p in pods_on_node if (p.namespace, p.name) not in keys]
    need_cpu, need_mem = _requests(pending)
    used_cpu, used_mem = _requests(others)
    alloc_cpu, alloc_mem = node.allocatable.cpu_m, node.allocatable.memory
    free_cpu, free_mem = alloc_cpu - used_cpu, alloc_mem - used_mem
    reserved_cpu = max(0, node.capacity.cpu_m - alloc_cpu)
    reserved_mem = max(0, node.capacity.memory - alloc_mem)
    frac = overhead_fraction(node, vm)
    notes: list[str] = []
    if node.unschedulable:
        notes.append(f"node {node.name} is cordoned (SchedulingDisabled)")
    if vm and vm.vcpus * 1000 > node.capacity.cpu_m:
        notes.append(
            f"the VM has {vm.vcpus} vCPUs but the kubelet reports {fmt_cpu(node.capacity.cpu_m)}: "
            "vCPUs offline in the guest or a kubelet that has not been restarted"
        )

    cpu_ok, mem_ok = need_cpu <= free_cpu, need_mem <= free_mem
    cpu_txt = _shortfall(" CPU", need_cpu, free_cpu, alloc_cpu, used_cpu, fmt_cpu)
    mem_txt = _shortfall("", need_mem, free_mem, alloc_mem, used_mem, fmt_mem)
    fits_now = cpu_ok and mem_ok
    if fits_now:
        reason = f"fits now: {cpu_txt}; {mem_txt}"
    else:
        reason = "; ".join(t for ok, t in ((cpu_ok, cpu_txt), (mem_ok, mem_txt)) if not ok)

    # smallest size: whole vCPUs covering need + used + reserved; RAM such that
    # RAM − overhead(RAM) − reserved ≥ need + used, rounded up to MEM_STEP_MIB
    cur_vcpus = vm.vcpus if vm else math.ceil(node.capacity.cpu_m / 1000)
    cur_mem_mib = vm.memory_mib if vm else math.ceil(node.capacity.memory / (1 - frac) / MiB)
    target: VmSize | None = None
    if not fits_now:
        vcpus = max(cur_vcpus, math.ceil((need_cpu + used_cpu + reserved_cpu) / 1000))
        mem_mib = cur_mem_mib
        if not mem_ok or vm is None:
            want = need_mem + used_mem + reserved_mem
            mem_mib = max(cur_mem_mib, math.ceil(want / (1 - frac) / MiB))
            mem_mib = max(cur_mem_mib, math.ceil(mem_mib / MEM_STEP_MIB) * MEM_STEP_MIB)
            size = VmSize(vcpus, mem_mib)
            while predicted_allocatable(size, reserved_cpu, reserved_mem, frac)[1] < want - reserved_mem:
                size = VmSize(vcpus, size.memory_mib + MEM_STEP_MIB)  # ceil of the overhead can cross a step
            mem_mib = size.memory_mib
        target = VmSize(vcpus, mem_mib)

    fits: list[FlavorFit] = []
    for f in sorted(flavors, key=lambda f: (f.vcpus, f.ram_mib, f.name)):
        a_cpu, a_mem = predicted_allocatable(f.size, reserved_cpu, reserved_mem, frac)
        ok = need_cpu <= a_cpu - used_cpu and need_mem <= a_mem - used_mem
        is_current = bool(vm) and f.vcpus == cur_vcpus and f.ram_mib == cur_mem_mib
        shrinks = f.vcpus < cur_vcpus or f.ram_mib < cur_mem_mib
        fits.append(FlavorFit(f, ok, a_cpu, a_mem, current=is_current, shrinks=shrinks))
    best = None if fits_now else next((x.flavor for x in fits if x.fits and not x.shrinks and not x.current), None)
    return FitAdvice(
        node=node.name,
        pods=tuple(f"{p.namespace}/{p.name}" for p in pending),
        fits_now=fits_now,
        reason=reason,
        need_cpu_m=need_cpu,
        need_memory=need_mem,
        free_cpu_m=free_cpu,
        free_memory=free_mem,
        used_cpu_m=used_cpu,
        used_memory=used_mem,
        reserved_cpu_m=reserved_cpu,
        reserved_memory=reserved_mem,
        overhead_fraction=frac,
        current=vm,
        target=target,
        flavor=best,
        flavor_fits=tuple(fits),
        notes=tuple(notes),
    )


def check_target(advice: FitAdvice, size: VmSize) -> str | None:
    """None when `size` makes the planned pod(s) fit, else the reason it does not (a plan-time refusal)."""
    a_cpu, a_mem = predicted_allocatable(size, advice.reserved_cpu_m, advice.reserved_memory, advice.overhead_fraction)
    short = []
    if advice.need_cpu_m > a_cpu - advice.used_cpu_m:
        short.append(f"needs {fmt_cpu(advice.need_cpu_m)} CPU, {size} would give {fmt_cpu(a_cpu - advice.used_cpu_m)}")
    if advice.need_memory > a_mem - advice.used_memory:
        short.append(f"needs {fmt_mem(advice.need_memory)}, {size} would give ~{fmt_mem(a_mem - advice.used_memory)}")
    return "; ".join(short) or None
