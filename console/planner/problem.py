"""The planning problem in solver terms, built once from a PlanInput and shared by the exact solver, the heuristic,
the reasons and the checker.

Per node: the sizes it may end at (its current one, cost 0, and every growth), each with the room it leaves for
Pending pods (allocatable − requested: the current allocatable as the kubelet reports it, a growth's as
console.runbook.plan.predicted_allocatable predicts it, with the same reservations and guest overhead). An
OpenStack VM's sizes are its flavors (joint); a libvirt VM's are a range whose vCPUs and memory are chosen
independently (`cpu_levels`, `mem_levels`), each dimension with its own cost. Per pod: the nodes whose
labels, taints, cordon and already bound pods admit it (console/planner/constraints.py) and where it fits the
largest size; per pair of Pending pods: the topology keys on which they may not share a domain.

Hypervisor room (hold rule): a Nova resize in place claims the new flavor in full while the migration still
holds the old one (Placement's migration allocations), so each needs the new size free when it runs; growths
carried out one after another on a host fit in any order when Σ added + the largest current size among the Nova
resizes there ≤ the host's free vCPUs (and MiB). A libvirt live scale-up only adds what it adds.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from console.infra.sizes import MiB, VmSize
from console.planner import constraints as c
from console.planner.costs import growth_cost
from console.planner.model import LIBVIRT, OPENSTACK, HostFree, Node, PendingPod, PlanInput, Size, Vm
from console.runbook.plan import predicted_allocatable


@dataclass(slots=True)
class Level:
    """One size a node may end at (or, for a libvirt range, one value of one dimension)."""

    size: Size
    cpu: int  # millicores left for Pending pods (allocatable − requested)
    mem: int  # bytes left for Pending pods
    cost: float
    add_vcpus: int = 0
    add_mib: int = 0
    price: float | None = None


@dataclass
class PNode:
    i: int
    node: Node
    room: int  # pods the node still admits (allocatable pods − pods on it)
    host: str
    method: str  # how a growth is carried out (OPENSTACK: reboot; LIBVIRT: live)
    joint: list[Level] = field(default_factory=list)  # OpenStack / pinned / fixed: its sizes, base (current) first
    cpu_levels: list[Level] = field(default_factory=list)  # libvirt range: vCPUs (current first)
    mem_levels: list[Level] = field(default_factory=list)  # libvirt range: memory (current first)
    pdb: bool = False
    quota: bool = False  # a growth is a Nova resize: counts against the project's quota, holds its old size
    cur_vcpus: int = 0  # the VM's current size (a Nova resize in place needs the new size free: see hold_rule)
    cur_mib: int = 0

    @property
    def ranged(self) -> bool:
        return bool(self.cpu_levels)

    @property
    def max_cpu(self) -> int:
        return max(lv.cpu for lv in (self.cpu_levels or self.joint))

    @property
    def max_mem(self) -> int:
        return max(lv.mem for lv in (self.mem_levels or self.joint))

    def fits_largest(self, cpu: int, mem: int) -> bool:
        if self.ranged:
            return cpu <= self.max_cpu and mem <= self.max_mem
        return any(cpu <= lv.cpu and mem <= lv.mem for lv in self.joint)


@dataclass
class PPod:
    i: int
    pod: PendingPod
    static: list[int]  # nodes admitting it by labels/taints/cordon/bound pods' anti-affinity
    eligible: list[int]  # of those, the nodes where it fits the largest size


@dataclass
class Problem:
    inp: PlanInput
    nodes: list[PNode]
    pods: list[PPod]
    # cliques of Pending pods no two of which may share a domain of the topology key
    conflicts: list[tuple[tuple[int, ...], str]]
    hosts: Mapping[str, HostFree]
    notes: list[str] = field(default_factory=list)
    memo: dict = field(default_factory=dict)  # per-problem caches (reasons by pod signature, largest sizes)

    def domain_of(self, n: int, key: str) -> str | None:
        return c.domain(self.nodes[n].node, key)


def _alloc(node: Node, size: Size) -> tuple[int, int]:
    return predicted_allocatable(VmSize(size.vcpus, size.memory_mib), node.reserved_cpu_m, node.reserved_memory,
                                 node.overhead_fraction)


def _host_ok(hf: HostFree | None, size: Size, cur: Size) -> bool:
    if hf is None:
        return True
    if hf.max_vcpus is not None and size.vcpus > max(hf.max_vcpus, cur.vcpus):
        return False
    return hf.max_memory_mib is None or size.memory_mib <= max(hf.max_memory_mib, cur.memory_mib)


def _levels(inp: PlanInput, node: Node, vm: Vm | None, hf: HostFree | None,
            pins: Mapping[str, Size]) -> tuple[list[Level], list[Level], list[Level]]:
    free_cpu = node.allocatable_cpu_m - node.requested_cpu_m
    free_mem = node.allocatable_memory - node.requested_memory
    if vm is None:
        return [Level(Size(0, 0), free_cpu, free_mem, 0.0)], [], []
    cur = vm.current
    current = Level(cur, free_cpu, free_mem, 0.0, price=vm.price)
    pin = pins.get(node.name)
    if node.name in inp.prefs.dropped:
        return [current], [], []
    if pin is not None:
        if (pin.vcpus, pin.memory_mib) == (cur.vcpus, cur.memory_mib):
            return [current], [], []
        price = next((o.price for o in vm.options if (o.size.vcpus, o.size.memory_mib) == (pin.vcpus, pin.memory_mib)),
                     None)
        a_cpu, a_mem = _alloc(node, pin)
        return [Level(pin, a_cpu - node.requested_cpu_m, a_mem - node.requested_memory,
                      growth_cost(inp.cost, vm, pin, price), pin.vcpus - cur.vcpus, pin.memory_mib - cur.memory_mib,
                      price)], [], []
    if vm.method == LIBVIRT and vm.max_size is not None:
        cpu_lv = [Level(Size(cur.vcpus, 0), free_cpu, 0, 0.0)]
        top_v = vm.max_size.vcpus if hf is None or hf.max_vcpus is None else min(vm.max_size.vcpus, hf.max_vcpus)
        rc, rm, frac = node.reserved_cpu_m, node.reserved_memory, node.overhead_fraction
        req_c, req_m, w_v, w_m = node.requested_cpu_m, node.requested_memory, inp.cost.vcpu, inp.cost.memory_gib
        pa = predicted_allocatable
        cpu_lv += [Level(Size(v, 0), pa(VmSize(v, cur.memory_mib), rc, rm, frac)[0] - req_c, 0,
                         w_v * (v - cur.vcpus), v - cur.vcpus, 0) for v in range(cur.vcpus + 1, top_v + 1)]
        mem_lv = [Level(Size(0, cur.memory_mib), 0, free_mem, 0.0)]
        top_m = vm.max_size.memory_mib
        if hf is not None and hf.max_memory_mib is not None:
            top_m = min(top_m, hf.max_memory_mib)
        step = max(1, vm.memory_step_mib)
        mem_lv += [Level(Size(0, m), 0, pa(VmSize(cur.vcpus, m), rc, rm, frac)[1] - req_m,
                         w_m * (m - cur.memory_mib) / 1024, 0, m - cur.memory_mib)
                   for m in range((cur.memory_mib // step + 1) * step, top_m + 1, step)]
        return [], cpu_lv, mem_lv
    joint = [current]
    for o in vm.options:
        s = o.size
        if s.vcpus < cur.vcpus or s.memory_mib < cur.memory_mib or (s.vcpus, s.memory_mib) == (cur.vcpus,
                                                                                               cur.memory_mib):
            continue  # never a shrink, never the current size again
        if not _host_ok(hf, s, cur):
            continue
        a_cpu, a_mem = _alloc(node, s)
        joint.append(Level(s, a_cpu - node.requested_cpu_m, a_mem - node.requested_memory,
                           growth_cost(inp.cost, vm, s, o.price), s.vcpus - cur.vcpus, s.memory_mib - cur.memory_mib,
                           o.price))
    return joint, [], []


def _sig(*parts: object) -> str:
    return json.dumps(parts, sort_keys=True, default=lambda o: o.__dict__ if hasattr(o, "__dict__") else repr(o))


def static_ok(pod: PendingPod, node: Node) -> bool:
    return (node.ready and c.selector_matches(pod.node_selector, node) and c.affinity_matches(pod.affinity_terms, node)
            and not c.cordon_blocks(pod.tolerations, node) and c.untolerated_taint(pod.tolerations, node) is None)


def bound_forbidden(pod: PendingPod, nodes: list[Node]) -> set[tuple[str, str]]:
    """(topologyKey, value) domains an already bound pod closes to `pod` (either side's anti-affinity)."""
    out: set[tuple[str, str]] = set()
    for n in nodes:
        for b in n.pods:
            for key in c.conflicts(pod.namespace, pod.labels, pod.anti_affinity, b.namespace, b.labels,
                                   b.anti_affinity):
                v = c.domain(n, key)
                if v is not None:
                    out.add((key, v))
    return out


def honoured_pins(inp: PlanInput) -> tuple[dict[str, Size], list[str]]:
    """The admin's pins the hypervisors' free capacity and the quota allow (in node order), and a note per pin
    they do not (such a node stays at its size: the resize would fail with NoValidHost or a quota error)."""
    pins: dict[str, Size] = {}
    notes: list[str] = []
    used: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # added vCPUs, MiB; held vCPUs, MiB
    quota_used = [0, 0]
    q = inp.limits.quota
    for n in inp.nodes:
        pin = inp.prefs.pinned.get(n.name)
        if pin is None or n.vm is None or n.name in inp.prefs.dropped:
            continue
        dv, dm = max(0, pin.vcpus - n.vm.current.vcpus), max(0, pin.memory_mib - n.vm.current.memory_mib)
        hf = inp.limits.hosts.get(n.vm.host)
        hu = used[n.vm.host]
        nova = n.vm.method == OPENSTACK
        hold_v = max(hu[2], n.vm.current.vcpus if nova else 0)
        hold_m = max(hu[3], n.vm.current.memory_mib if nova else 0)
        why = ""
        if hf is not None and ((hf.vcpus is not None and hu[0] + dv + hold_v > hf.vcpus)
                               or (hf.memory_mib is not None and hu[1] + dm + hold_m > hf.memory_mib)):
            why = f"hypervisor {n.vm.host} has only {hf.vcpus} vCPUs / {hf.memory_mib} MiB free"
        elif n.vm.method == OPENSTACK and ((q.cores is not None and quota_used[0] + dv > q.cores)
                                           or (q.ram_mib is not None and quota_used[1] + dm > q.ram_mib)):
            why = f"the project quota has only {q.cores} cores / {q.ram_mib} MiB RAM left"
        if why:
            notes.append(f"the pin of {n.name} to {pin.flavor or f'{pin.vcpus}/{pin.memory_mib}Mi'} is not "
                         f"possible ({why}): {n.name} keeps its size")
            continue
        pins[n.name] = pin
        hu[0] += dv
        hu[1] += dm
        hu[2], hu[3] = hold_v, hold_m
        if n.vm.method == OPENSTACK:
            quota_used[0] += dv
            quota_used[1] += dm
    return pins, notes


class _Fits:
    """Which nodes can hold a pod at their largest size, over arrays (5,000 nodes × 1,000 pods stay fast)."""

    def __init__(self, nodes: list[PNode]) -> None:
        width = max([len(pn.joint) for pn in nodes] + [1])
        self.cpu = np.full((len(nodes), width), -1.0)
        self.mem = np.full((len(nodes), width), -1.0)
        for pn in nodes:
            if pn.ranged:
                self.cpu[pn.i, 0], self.mem[pn.i, 0] = pn.max_cpu, pn.max_mem
            else:
                for k, lv in enumerate(pn.joint):
                    self.cpu[pn.i, k], self.mem[pn.i, k] = lv.cpu, lv.mem
        self.room = np.array([pn.room > 0 for pn in nodes], dtype=bool)

    def admits(self, idx: np.ndarray, cpu: int, mem: int) -> np.ndarray:
        return self.room[idx] & ((self.cpu[idx] >= cpu) & (self.mem[idx] >= mem)).any(axis=1)


def build(inp: PlanInput) -> Problem:
    hosts = inp.limits.hosts
    pins, notes = honoured_pins(inp)
    nodes: list[PNode] = []
    for i, n in enumerate(inp.nodes):
        hf = hosts.get(n.vm.host) if n.vm else None
        joint, cpu_lv, mem_lv = _levels(inp, n, n.vm, hf, pins)
        method = n.vm.method if n.vm else OPENSTACK
        nodes.append(PNode(i, n, max(0, n.allocatable_pods - n.pod_count), n.vm.host if n.vm else "", method, joint,
                           cpu_lv, mem_lv, pdb=bool(n.pdb_blocked), quota=method == OPENSTACK and n.vm is not None,
                           cur_vcpus=n.vm.current.vcpus if n.vm else 0, cur_mib=n.vm.current.memory_mib if n.vm else 0))
    static_cache: dict[str, list[int]] = {}
    bound_cache: dict[str, set[tuple[str, str]]] = {}
    has_bound_terms = any(n.pods for n in inp.nodes)
    fits = _Fits(nodes)
    elig_cache: dict[tuple[int, int, int], list[int]] = {}
    keep: list[list[int]] = []
    pods: list[PPod] = []
    for j, p in enumerate(inp.pods):
        skey = _sig(p.node_selector, p.affinity_terms, p.tolerations)
        static = static_cache.get(skey)
        if static is None:
            static = static_cache[skey] = [pn.i for pn in nodes if static_ok(p, pn.node)]
        if has_bound_terms:
            bkey = _sig(p.namespace, p.labels, p.anti_affinity)
            forb = bound_cache.get(bkey)
            if forb is None:
                forb = bound_cache[bkey] = bound_forbidden(p, list(inp.nodes))
            if forb:
                static = [i for i in static
                          if not any((k, nodes[i].node.labels.get(k)) in forb for k in {k for k, _ in forb})]
        ekey = (id(static), p.cpu_m, p.memory)
        eligible = elig_cache.get(ekey)
        if eligible is None:
            arr = np.array(static, dtype=np.int64)
            eligible = elig_cache[ekey] = arr[fits.admits(arr, p.cpu_m, p.memory)].tolist() if len(arr) else []
            keep.append(static)  # id(static) stays unique while cached
        pods.append(PPod(j, p, static, eligible))
    return Problem(inp, nodes, pods, pending_conflicts(inp.pods), hosts, notes)


def pending_conflicts(pods: tuple[PendingPod, ...]) -> list[tuple[tuple[int, ...], str]]:
    """Cliques of Pending pods no two of which may share a domain of the topology key.

    Pods are grouped by (namespace, labels, terms) first: a group whose term matches its own pods (a job's
    replicas keeping apart) is one clique; two groups in conflict give one pair per couple of pods.
    """
    groups: dict[str, list[int]] = defaultdict(list)
    for j, p in enumerate(pods):
        groups[_sig(p.namespace, p.labels, p.anti_affinity)].append(j)
    reps = list(groups.values())
    out: list[tuple[tuple[int, ...], str]] = []
    for gi, ga in enumerate(reps):
        a = pods[ga[0]]
        for gb in reps[gi:]:
            b = pods[gb[0]]
            if not a.anti_affinity and not b.anti_affinity:
                continue
            keys = c.conflicts(a.namespace, a.labels, a.anti_affinity, b.namespace, b.labels, b.anti_affinity)
            for key in sorted(keys):
                if ga is gb:
                    if len(ga) > 1:
                        out.append((tuple(ga), key))
                else:
                    out.extend(((x, y), key) for x in ga for y in gb)
    return out


@dataclass
class Solution:
    """Where each placed pod goes and the size each node ends at (level indexes into PNode's lists)."""

    assign: dict[int, int]  # pod index → node index
    joint: dict[int, int] = field(default_factory=dict)  # node → index in PNode.joint (absent: 0)
    cpu: dict[int, int] = field(default_factory=dict)  # ranged node → index in cpu_levels (absent: 0)
    mem: dict[int, int] = field(default_factory=dict)  # ranged node → index in mem_levels (absent: 0)

    def room(self, pn: PNode) -> tuple[int, int]:
        if pn.ranged:
            return pn.cpu_levels[self.cpu.get(pn.i, 0)].cpu, pn.mem_levels[self.mem.get(pn.i, 0)].mem
        lv = pn.joint[self.joint.get(pn.i, 0)]
        return lv.cpu, lv.mem

    def node_cost(self, pn: PNode) -> float:
        if pn.ranged:
            return pn.cpu_levels[self.cpu.get(pn.i, 0)].cost + pn.mem_levels[self.mem.get(pn.i, 0)].cost
        return pn.joint[self.joint.get(pn.i, 0)].cost if pn.joint else 0.0

    def added(self, pn: PNode) -> tuple[int, int]:
        if pn.ranged:
            return pn.cpu_levels[self.cpu.get(pn.i, 0)].add_vcpus, pn.mem_levels[self.mem.get(pn.i, 0)].add_mib
        lv = pn.joint[self.joint.get(pn.i, 0)] if pn.joint else None
        return (lv.add_vcpus, lv.add_mib) if lv else (0, 0)

    def grown(self, pn: PNode) -> bool:
        return self.added(pn) != (0, 0)

    def cost(self, prob: Problem) -> float:
        return sum(self.node_cost(pn) for pn in prob.nodes)


def loads(prob: Problem, assign: Mapping[int, int]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    for j, n in assign.items():
        pod = prob.pods[j].pod
        ld = out[n]
        ld[0] += pod.cpu_m
        ld[1] += pod.memory
        ld[2] += 1
    return out


def cheapest_levels(pn: PNode, cpu: int, mem: int) -> tuple[int, int, int] | None:
    """(joint, cpu, mem) level indexes of the cheapest size that holds (cpu, mem), ignoring host/quota."""
    if pn.ranged:
        k = next((i for i, lv in enumerate(pn.cpu_levels) if lv.cpu >= cpu), None)
        m = next((i for i, lv in enumerate(pn.mem_levels) if lv.mem >= mem), None)
        return None if k is None or m is None else (0, k, m)
    best = None
    for i, lv in enumerate(pn.joint):
        if lv.cpu >= cpu and lv.mem >= mem and (best is None or lv.cost < pn.joint[best].cost):
            best = i
    return None if best is None else (best, 0, 0)


def violations(prob: Problem, sol: Solution) -> list[str]:
    """Every rule the solution breaks (empty: the scheduler would accept it and the infrastructure allow it)."""
    out: list[str] = []
    for j, n in sol.assign.items():
        if n not in prob.pods[j].static:
            out.append(f"{prob.pods[j].pod.key} on {prob.nodes[n].node.name}: labels/taints/anti-affinity")
    for n, (cpu, mem, cnt) in loads(prob, sol.assign).items():
        pn = prob.nodes[n]
        r_cpu, r_mem = sol.room(pn)
        if cpu > r_cpu or mem > r_mem or cnt > pn.room:
            out.append(f"{pn.node.name}: over capacity")
    by_host: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    quota = [0, 0]
    for pn in prob.nodes:
        dv, dm = sol.added(pn)
        if pn.host:
            hu = by_host[pn.host]
            hu[0] += dv
            hu[1] += dm
            if pn.quota and (dv or dm):  # a Nova resize: the old size stays claimed while it runs
                hu[2] = max(hu[2], pn.cur_vcpus)
                hu[3] = max(hu[3], pn.cur_mib)
    for h, (dv, dm, hold_v, hold_m) in by_host.items():
        hf = prob.hosts.get(h)
        if hf and ((hf.vcpus is not None and dv + hold_v > hf.vcpus)
                   or (hf.memory_mib is not None and dm + hold_m > hf.memory_mib)):
            out.append(f"host {h}: over its free capacity")
    for pn in prob.nodes:
        if pn.quota:
            dv, dm = sol.added(pn)
            quota[0] += dv
            quota[1] += dm
    q = prob.inp.limits.quota
    if (q.cores is not None and quota[0] > q.cores) or (q.ram_mib is not None and quota[1] > q.ram_mib):
        out.append("project quota exceeded")
    for members, key in prob.conflicts:
        seen: dict[str, int] = {}
        for j in members:
            at = sol.assign.get(j)
            v = None if at is None else prob.domain_of(at, key)
            if v is not None:
                if v in seen:
                    out.append(f"{prob.pods[j].pod.key} and {prob.pods[seen[v]].pod.key} share {key}={v}")
                seen[v] = j
    return out


def mib(n_bytes: int) -> float:
    return n_bytes / MiB
