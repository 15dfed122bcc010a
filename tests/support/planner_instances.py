"""Small random planning instances and a brute-force optimum that shares no code with the solvers.

The brute force enumerates every pod → node (or unplaced) assignment and every size per node, checks each rule
with console.planner.constraints and console.runbook.plan.predicted_allocatable directly, and returns the
lexicographic optimum (most pods placed, then least cost).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from console.infra.sizes import GiB, MiB, VmSize
from console.planner import constraints as c
from console.planner.costs import growth_cost
from console.planner.model import (
    LIBVIRT,
    OPENSTACK,
    AntiAffinityTerm,
    BoundPod,
    HostFree,
    Limits,
    Node,
    PendingPod,
    Plan,
    PlanInput,
    Preferences,
    Quota,
    Size,
    SizeOption,
    Vm,
)
from console.planner.problem import Problem, Solution, honoured_pins
from console.runbook.plan import predicted_allocatable

FLAVORS = (  # the lab's m1.* (console/lab/scenarios.py FLAVORS), written out: tests never import the lab here
    Size(1, 2048, "m1.small"), Size(2, 4096, "m1.medium"), Size(8, 12288, "m1.large"), Size(16, 24576, "m1.xlarge"),
)
HOSTNAME = "kubernetes.io/hostname"
RESERVED_CPU, RESERVED_MEM, FRAC = 100, 300 * MiB, 0.04


def node(name: str, size: Size, *, method: str = OPENSTACK, host: str = "h1", labels: dict | None = None,
         taints: tuple = (), used_cpu: int = 500, used_mem: int = GiB, options: tuple[Size, ...] | None = None,
         max_size: Size | None = None, prices: dict[str, float] | None = None, **kw: object) -> Node:
    a_cpu, a_mem = predicted_allocatable(VmSize(size.vcpus, size.memory_mib), RESERVED_CPU, RESERVED_MEM, FRAC)
    prices = prices or {}
    if options is None:
        options = tuple(f for f in FLAVORS if f.vcpus >= size.vcpus and f.memory_mib >= size.memory_mib and f != size)
    opts = tuple(SizeOption(o, OPENSTACK, prices.get(o.flavor)) for o in options) if method == OPENSTACK else ()
    vm = Vm(f"vm-{name}", method, host, size, opts, prices.get(size.flavor), max_size=max_size)
    return Node(name, {HOSTNAME: name, **(labels or {})}, taints, allocatable_cpu_m=a_cpu, allocatable_memory=a_mem,
                requested_cpu_m=used_cpu, requested_memory=used_mem, reserved_cpu_m=RESERVED_CPU,
                reserved_memory=RESERVED_MEM, overhead_fraction=FRAC, vm=vm, **kw)  # type: ignore[arg-type]


def random_instance(rnd: random.Random) -> PlanInput:
    n_nodes = rnd.randint(1, 3)
    nodes = []
    for i in range(n_nodes):
        labels = {"pool": rnd.choice(["a", "b"])}
        if rnd.random() < 0.5:
            labels["cpu-avx512f"] = "true"
        taints = ({"key": "dedicated", "value": "hpc", "effect": rnd.choice(["NoSchedule", "NoExecute"])},) \
            if rnd.random() < 0.25 else ()
        if rnd.random() < 0.35:
            cur = Size(rnd.randint(1, 2), rnd.choice([2048, 3072]))
            nd = node(f"w{i}", cur, method=LIBVIRT, host=rnd.choice(["h1", "h2"]), labels=labels, taints=taints,
                      max_size=Size(cur.vcpus + rnd.randint(0, 2), cur.memory_mib + 1024 * rnd.randint(0, 2)),
                      used_cpu=rnd.choice([200, 800]), used_mem=rnd.choice([512, 1024]) * MiB)
        else:
            cur = rnd.choice(FLAVORS[:2])
            opts = tuple(rnd.sample([f for f in FLAVORS if f.vcpus > cur.vcpus], rnd.randint(0, 2)))
            prices = {f.flavor: float(f.vcpus * 3 + f.memory_mib // 2048) for f in FLAVORS} if rnd.random() < 0.3 \
                else None
            nd = node(f"w{i}", cur, host=rnd.choice(["h1", "h2"]), labels=labels, taints=taints, options=opts,
                      prices=prices, used_cpu=rnd.choice([200, 800]), used_mem=rnd.choice([512, 1024]) * MiB,
                      unschedulable=rnd.random() < 0.1,
                      pdb_blocked=("default/db-0",) if rnd.random() < 0.2 else ())
        if rnd.random() < 0.2:
            nd = Node(**{**nd.__dict__, "pods": (BoundPod("default", "old", {"job": "j"}),)})
        nodes.append(nd)
    pods = []
    for j in range(rnd.randint(1, 4)):
        sel = {"cpu-avx512f": "true"} if rnd.random() < 0.3 else {}
        aff = ({"matchExpressions": [{"key": "pool", "operator": rnd.choice(["In", "NotIn"]), "values": ["a"]}]},) \
            if rnd.random() < 0.2 else ()
        tol = ({"key": "dedicated", "operator": "Exists"},) if rnd.random() < 0.5 else ()
        job = rnd.random() < 0.4
        anti = (AntiAffinityTerm({"matchLabels": {"job": "j"}}, HOSTNAME),) if job else ()
        pods.append(PendingPod("default", f"p{j}", rnd.choice([500, 1000, 2000, 4000, 7000]),
                               rnd.choice([512, 2048, 4096, 9000]) * MiB, labels={"job": "j"} if job else {},
                               node_selector=sel, affinity_terms=aff, tolerations=tol, anti_affinity=anti))
    hosts = {h: HostFree(vcpus=rnd.choice([None, 2, 8, 30]), memory_mib=rnd.choice([None, 4096, 30000]))
             for h in ("h1", "h2")}
    quota = Quota(cores=rnd.choice([None, 6, 20]), ram_mib=rnd.choice([None, 10240]))
    dropped = frozenset({nodes[0].name}) if rnd.random() < 0.1 else frozenset()
    pinned = {nodes[-1].name: FLAVORS[2]} if rnd.random() < 0.08 and nodes[-1].vm and \
        nodes[-1].vm.method == OPENSTACK and FLAVORS[2] in [o.size for o in nodes[-1].vm.options] else {}
    return PlanInput(tuple(nodes), tuple(pods), Limits(hosts, quota),
                     prefs=Preferences(dropped=dropped, pinned=pinned))


def sizes_of(inp: PlanInput, n: Node) -> list[tuple[Size, float]]:
    """Every size the node may end at, with its cost (brute force's own reading of the model)."""
    vm = n.vm
    if vm is None:
        return [(Size(0, 0), 0.0)]
    if n.name in inp.prefs.dropped:
        return [(vm.current, 0.0)]
    pins = honoured_pins(inp)[0]  # a pin beyond the host's or quota's room is ignored, with a note
    if n.name in pins:
        s = pins[n.name]
        price = next((o.price for o in vm.options if o.size == s), None)
        return [(s, growth_cost(inp.cost, vm, s, price))]
    out = [(vm.current, 0.0)]
    if vm.method == LIBVIRT and vm.max_size:
        for v in range(vm.current.vcpus, vm.max_size.vcpus + 1):
            for m in range(vm.current.memory_mib, vm.max_size.memory_mib + 1, 1024):
                if (v, m) != (vm.current.vcpus, vm.current.memory_mib):
                    out.append((Size(v, m), growth_cost(inp.cost, vm, Size(v, m))))
    else:
        out += [(o.size, growth_cost(inp.cost, vm, o.size, o.price)) for o in vm.options]
    return out


def admits(inp: PlanInput, pod: PendingPod, n: Node) -> bool:
    if not (c.selector_matches(pod.node_selector, n) and c.affinity_matches(pod.affinity_terms, n)):
        return False
    if c.cordon_blocks(pod.tolerations, n) or c.untolerated_taint(pod.tolerations, n) is not None:
        return False
    for m in inp.nodes:
        for b in m.pods:
            for key in c.conflicts(pod.namespace, pod.labels, pod.anti_affinity, b.namespace, b.labels,
                                   b.anti_affinity):
                if key in n.labels and m.labels.get(key) == n.labels[key]:
                    return False
    return True


def room(n: Node, s: Size) -> tuple[int, int]:
    if n.vm is None or s == n.vm.current:
        return n.allocatable_cpu_m - n.requested_cpu_m, n.allocatable_memory - n.requested_memory
    a_cpu, a_mem = predicted_allocatable(VmSize(s.vcpus, s.memory_mib), n.reserved_cpu_m, n.reserved_memory,
                                         n.overhead_fraction)
    return a_cpu - n.requested_cpu_m, a_mem - n.requested_memory


def _assignments(inp: PlanInput) -> Iterator[tuple[int | None, ...]]:
    choices = [[None] + [i for i, n in enumerate(inp.nodes) if admits(inp, p, n)] for p in inp.pods]
    yield from itertools.product(*choices)


def brute_force(inp: PlanInput) -> tuple[int, float]:
    """(most pods placed, least cost at that count)."""
    per_node = [sizes_of(inp, n) for n in inp.nodes]
    q = inp.limits.quota
    best: tuple[int, float] = (0, float("inf"))
    for assign in _assignments(inp):
        placed = sum(a is not None for a in assign)
        if placed < best[0]:
            continue
        if not _anti_ok(inp, assign):
            continue
        cost = _cheapest(inp, assign, per_node, q)
        if cost is not None and (placed, -cost) > (best[0], -best[1]):
            best = (placed, cost)
    return best


def _anti_ok(inp: PlanInput, assign: tuple[int | None, ...]) -> bool:
    for (i, a), (j, b) in itertools.combinations(enumerate(assign), 2):
        if a is None or b is None:
            continue
        p, o = inp.pods[i], inp.pods[j]
        for key in c.conflicts(p.namespace, p.labels, p.anti_affinity, o.namespace, o.labels, o.anti_affinity):
            va, vb = inp.nodes[a].labels.get(key), inp.nodes[b].labels.get(key)
            if va is not None and va == vb:
                return False
    return True


def _cheapest(inp: PlanInput, assign: tuple[int | None, ...], per_node: list[list[tuple[Size, float]]],
              q: Quota) -> float | None:
    fitting = []
    for i, n in enumerate(inp.nodes):
        mine = [inp.pods[j] for j, a in enumerate(assign) if a == i]
        if len(mine) > n.allocatable_pods - n.pod_count:
            return None
        cpu, mem = sum(p.cpu_m for p in mine), sum(p.memory for p in mine)
        ok = [(s, cost) for s, cost in per_node[i] if room(n, s)[0] >= cpu and room(n, s)[1] >= mem]
        if not ok:
            return None
        fitting.append(ok)
    best = None
    for combo in itertools.product(*fitting):
        hold_v: dict[str, int] = {}
        hold_m: dict[str, int] = {}
        host_v: dict[str, int] = {}
        host_m: dict[str, int] = {}
        qv = qm = 0
        for n, (s, _) in zip(inp.nodes, combo, strict=True):
            if n.vm is None:
                continue
            dv, dm = s.vcpus - n.vm.current.vcpus, s.memory_mib - n.vm.current.memory_mib
            host_v[n.vm.host] = host_v.get(n.vm.host, 0) + dv
            host_m[n.vm.host] = host_m.get(n.vm.host, 0) + dm
            if n.vm.method == OPENSTACK:
                qv, qm = qv + dv, qm + dm
        # a Nova resize in place needs its new size free while the old one is held: one after another on a
        # host, Σ added + the largest current size among them must fit (console/planner/problem.py)
        for n, (s, _) in zip(inp.nodes, combo, strict=True):
            if n.vm is not None and n.vm.method == OPENSTACK and s != n.vm.current:
                hold_v[n.vm.host] = max(hold_v.get(n.vm.host, 0), n.vm.current.vcpus)
                hold_m[n.vm.host] = max(hold_m.get(n.vm.host, 0), n.vm.current.memory_mib)
        host_v = {h: v + hold_v.get(h, 0) for h, v in host_v.items()}
        host_m = {h: v + hold_m.get(h, 0) for h, v in host_m.items()}
        if any((hf.vcpus is not None and host_v.get(h, 0) > hf.vcpus)
               or (hf.memory_mib is not None and host_m.get(h, 0) > hf.memory_mib)
               for h, hf in inp.limits.hosts.items()):
            continue
        if (q.cores is not None and qv > q.cores) or (q.ram_mib is not None and qm > q.ram_mib):
            continue
        cost = sum(cst for _, cst in combo)
        best = cost if best is None else min(best, cost)
    return best


def solution_of(prob: Problem, plan: Plan) -> Solution:
    """A Plan read back as the solver's Solution (sizes by value), so `violations` can check it."""
    by_name = {pn.node.name: pn.i for pn in prob.nodes}
    sol = Solution({pp.i: by_name[plan.placements[pp.pod.key]] for pp in prob.pods if pp.pod.key in plan.placements})
    changed = {ch.node: ch.to_size for ch in plan.nodes}
    for pn in prob.nodes:
        to = changed.get(pn.node.name)
        if to is None or pn.node.vm is None:
            continue
        cur = pn.node.vm.current
        if pn.ranged:
            sol.cpu[pn.i] = next(k for k, lv in enumerate(pn.cpu_levels) if (lv.size.vcpus or cur.vcpus) == to.vcpus)
            sol.mem[pn.i] = next(k for k, lv in enumerate(pn.mem_levels)
                                 if (lv.size.memory_mib or cur.memory_mib) == to.memory_mib)
        else:
            sol.joint[pn.i] = next(k for k, lv in enumerate(pn.joint) if lv.size == to)
    return sol
