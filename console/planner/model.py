"""The capacity planner's inputs and outputs: plain frozen data, no I/O.

Inputs are what the scheduler would look at (a node's allocatable, requested, labels, taints, cordon; a Pending
pod's requests, nodeSelector, required node affinity, tolerations, required pod anti-affinity) plus what the
infrastructure allows (the sizes each VM can go to, free capacity per hypervisor, the project quota), a cost
model and the admin's preferences. The output is a Plan: which nodes grow to what, which pod lands where, the
total cost, and the reason for every pod no plan can place. `Plan.to_json()` is `console plan -o json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

OPENSTACK = "openstack"  # a Nova resize: the VM reboots into the new flavor
LIBVIRT = "libvirt"  # a live scale-up: vCPUs and memory hot-added, no reboot


@dataclass(frozen=True)
class Size:
    """A VM size; `flavor` names the OpenStack flavor ("" for a libvirt size)."""

    vcpus: int
    memory_mib: int
    flavor: str = ""


@dataclass(frozen=True)
class SizeOption:
    """A larger size the VM can go to, and how (`method`: OPENSTACK or LIBVIRT)."""

    size: Size
    method: str
    price: float | None = None  # this size's price from the cost settings / flavor extra_specs (None: weights)


@dataclass(frozen=True)
class Vm:
    ref: str  # what the scale-up runbook acts on: Nova server id or libvirt domain name
    method: str  # how it is scaled by default (OPENSTACK | LIBVIRT)
    host: str  # hypervisor / compute host it runs on ("" when unknown)
    current: Size
    options: tuple[SizeOption, ...] = ()  # OpenStack: the strictly larger flavors (never the current, never a shrink)
    price: float | None = None  # the current size's price, when priced
    # libvirt: any size from current up to max_size, vCPUs in steps of 1, memory in steps of memory_step_mib
    # (the host's maxima; None: no live range)
    max_size: Size | None = None
    memory_step_mib: int = 1024


@dataclass(frozen=True)
class AntiAffinityTerm:
    """One requiredDuringSchedulingIgnoredDuringExecution podAntiAffinity term."""

    selector: Mapping[str, Any]  # a LabelSelector as the API has it (matchLabels / matchExpressions)
    topology_key: str
    namespaces: tuple[str, ...] = ()  # empty: the owning pod's own namespace (namespaceSelector is not modelled)


@dataclass(frozen=True)
class BoundPod:
    """A pod already bound to a node: what anti-affinity is checked against (both directions, as the scheduler)."""

    namespace: str
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    anti_affinity: tuple[AntiAffinityTerm, ...] = ()


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...] = ()  # {"key", "value", "effect"} as the API has them
    unschedulable: bool = False
    ready: bool = True
    allocatable_cpu_m: int = 0
    allocatable_memory: int = 0  # bytes
    allocatable_pods: int = 110
    requested_cpu_m: int = 0  # non-terminated pods bound to the node
    requested_memory: int = 0
    pod_count: int = 0
    reserved_cpu_m: int = 0  # capacity − allocatable: carried over to a new size (console/runbook/plan.py)
    reserved_memory: int = 0
    overhead_fraction: float = 0.04  # guest kernel memory / VM RAM (console/runbook/plan.overhead_fraction)
    pods: tuple[BoundPod, ...] = ()  # only needed where anti-affinity is in play
    vm: Vm | None = None  # None: the node cannot be grown (no VM found)
    pdb_blocked: tuple[str, ...] = ()  # "ns/name" of its pods a PodDisruptionBudget would not let be evicted now


@dataclass(frozen=True)
class PendingPod:
    namespace: str
    name: str
    cpu_m: int  # effective requests (init/sidecar/overhead rules: console/kube/model.pod_requests)
    memory: int  # bytes
    labels: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity_terms: tuple[Mapping[str, Any], ...] = ()  # required nodeAffinity nodeSelectorTerms (ORed)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    anti_affinity: tuple[AntiAffinityTerm, ...] = ()
    reason: str = ""  # the scheduler's latest FailedScheduling message

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class HostFree:
    """Free capacity of one hypervisor (None: unknown — the plan says so and does not bound it)."""

    vcpus: int | None = None
    memory_mib: int | None = None
    max_vcpus: int | None = None  # the most one VM may have there (Placement's VCPU max_unit)
    max_memory_mib: int | None = None


@dataclass(frozen=True)
class Quota:
    """What the project may still add (Nova limits: maxTotalCores − totalCoresUsed, …); None: unlimited/unknown."""

    cores: int | None = None
    ram_mib: int | None = None


@dataclass(frozen=True)
class Limits:
    hosts: Mapping[str, HostFree] = field(default_factory=dict)
    quota: Quota = Quota()
    notes: tuple[str, ...] = ()  # what could not be read, and what that means for the plan


@dataclass(frozen=True)
class CostModel:
    """A growth's cost: price(new) − price(current) when both sizes are priced, else the weights times what is
    added (vCPUs, GiB of memory)."""

    vcpu: float = 1.0
    memory_gib: float = 1.0


@dataclass(frozen=True)
class Preferences:
    avoid_pdb_blocked: bool = True  # grow a node with PDB-blocked pods only when nothing else does
    prefer_live: bool = True  # between equal costs, a no-reboot live scale-up
    dropped: frozenset[str] = frozenset()  # nodes the admin took out of the plan: never grown
    pinned: Mapping[str, Size] = field(default_factory=dict)  # nodes the admin fixed: grown to exactly this size


@dataclass(frozen=True)
class PlanInput:
    nodes: tuple[Node, ...]
    pods: tuple[PendingPod, ...]
    limits: Limits = Limits()
    cost: CostModel = CostModel()
    prefs: Preferences = Preferences()


@dataclass(frozen=True)
class NodeChange:
    node: str
    vm: str  # Vm.ref
    from_size: Size
    to_size: Size
    method: str
    pods: tuple[str, ...]  # "ns/name" of the Pending pods it unblocks
    cost: float
    notes: tuple[str, ...] = ()  # e.g. the VM reboots; pods a PDB holds


@dataclass(frozen=True)
class Unplaceable:
    pod: str
    reason: str  # e.g. "no node matches its nodeSelector cpu-...avx512f=true", "needs 40 CPU, more than …"


@dataclass(frozen=True)
class Plan:
    nodes: tuple[NodeChange, ...]  # in the order the fleet runbook carries them out
    placements: Mapping[str, str]  # every placed pod → its node (grown or as it is)
    unplaceable: tuple[Unplaceable, ...]
    cost: float
    optimal: bool  # proven optimal (the exact solver finished)
    solver: str = ""  # "exact" | "heuristic"
    bound: float | None = None  # best known lower bound on the cost (for the reported gap)
    seconds: float = 0.0
    notes: tuple[str, ...] = ()

    @property
    def gap(self) -> float | None:
        """(cost − bound) / cost: 0 when optimal, None when no bound is known."""
        if self.bound is None:
            return None
        return 0.0 if self.cost <= 0 else max(0.0, (self.cost - self.bound) / self.cost)

    def to_json(self) -> dict[str, Any]:
        """`console plan -o json` (the shape issue 13 names; memory as Kubernetes quantities)."""
        return {
            "nodes": [
                {"node": c.node, "vm": c.vm, "from": size_json(c.from_size), "to": size_json(c.to_size),
                 "method": c.method, "pods": list(c.pods), "cost": c.cost, "notes": list(c.notes)}
                for c in self.nodes
            ],
            "placements": dict(self.placements),
            "unplaceable": [{"pod": u.pod, "reason": u.reason} for u in self.unplaceable],
            "cost": self.cost,
            "optimal": self.optimal,
            "solver": self.solver,
            "gap": self.gap,
            "notes": list(self.notes),
        }


def memory_quantity(mib: int) -> str:
    """MiB as a Kubernetes quantity: 12Gi, 1536Mi."""
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def size_json(s: Size) -> dict[str, Any]:
    return {"vcpus": s.vcpus, "memory": memory_quantity(s.memory_mib), "flavor": s.flavor or None}
