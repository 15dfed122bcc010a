"""Capacity planner benchmark (issue 13, deliverable 5) — a script, not a test.

1. Planning time at 5,000 nodes × 1,000 Pending pods (goal ≤ 2 s): synthetic but varied — CPU-label pools
   (NFD cpuid labels), a tainted pool, a job with required anti-affinity on hostname, OpenStack VMs with the
   lab's m1.* flavors and libvirt VMs with live ranges, hypervisors a few of them nearly full, a project quota.
2. 200 random small instances: the heuristic's cost against the exact optimum (goal: optimum on ≥ 95 %, never
   worse than 10 %) and against a greedy baseline, "biggest flavor on the first fitting node".

    PYTHONPATH=. python benchmarks/plan_bench.py [--nodes 5000] [--pods 1000] [--small 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

from console.infra.sizes import GiB, MiB, VmSize
from console.planner import heuristic
from console.planner.exact import solve_exact
from console.planner.model import (
    LIBVIRT,
    OPENSTACK,
    AntiAffinityTerm,
    HostFree,
    Limits,
    Node,
    PendingPod,
    PlanInput,
    Quota,
    Size,
    SizeOption,
    Vm,
)
from console.planner.problem import Problem, Solution, build, violations
from console.planner.solve import solve
from console.runbook.plan import predicted_allocatable

FLAVORS = (  # console/lab/scenarios.py FLAVORS (m1.*)
    Size(1, 512, "m1.tiny"), Size(1, 2048, "m1.small"), Size(2, 4096, "m1.medium"), Size(8, 12288, "m1.large"),
    Size(16, 24576, "m1.xlarge"),
)
HOSTNAME = "kubernetes.io/hostname"
AVX512 = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"
POOL_TAINT = {"key": "dedicated", "value": "hpc", "effect": "NoSchedule"}
RES_CPU, RES_MEM, FRAC = 100, 350 * MiB, 0.04


def _node(rnd: random.Random, i: int, host: str, libvirt: bool) -> Node:
    labels = {HOSTNAME: f"w{i}", "topology.kubernetes.io/zone": f"z{i % 3}"}
    pool = rnd.random()
    if pool < 0.3:
        labels[AVX512] = "true"
    labels["feature.node.kubernetes.io/cpu-model.vendor_id"] = "Intel" if pool < 0.7 else "AMD"
    taints = (POOL_TAINT,) if rnd.random() < 0.15 else ()
    if libvirt:
        cur = Size(rnd.choice([2, 4]), rnd.choice([4096, 8192]))
        vm = Vm(f"dom-w{i}", LIBVIRT, host, cur, max_size=Size(cur.vcpus + 8, cur.memory_mib + 16384))
    else:
        cur = rnd.choice(FLAVORS[1:4])
        opts = tuple(SizeOption(f, OPENSTACK) for f in FLAVORS if f.vcpus >= cur.vcpus and f.memory_mib
                     >= cur.memory_mib and f != cur)
        vm = Vm(f"srv-w{i}", OPENSTACK, host, cur, opts)
    a_cpu, a_mem = predicted_allocatable(VmSize(cur.vcpus, cur.memory_mib), RES_CPU, RES_MEM, FRAC)
    fill = rnd.random()
    return Node(f"w{i}", labels, taints, unschedulable=rnd.random() < 0.01, allocatable_cpu_m=a_cpu,
                allocatable_memory=a_mem, requested_cpu_m=int(a_cpu * fill), requested_memory=int(a_mem * fill * 0.9),
                pod_count=rnd.randint(3, 20), reserved_cpu_m=RES_CPU, reserved_memory=RES_MEM, overhead_fraction=FRAC,
                vm=vm, pdb_blocked=("default/db-0",) if rnd.random() < 0.02 else ())


def large_instance(n_nodes: int, n_pods: int, seed: int = 1) -> PlanInput:
    rnd = random.Random(seed)
    n_hosts = max(1, n_nodes // 25)
    nodes = tuple(_node(rnd, i, f"cmp{i % n_hosts}", libvirt=rnd.random() < 0.3) for i in range(n_nodes))
    hosts = {f"cmp{h}": HostFree(vcpus=rnd.choice([4, 64, 200]) if h % 10 == 0 else rnd.randint(40, 400),
                                 memory_mib=rnd.randint(64, 1024) * 1024, max_vcpus=64, max_memory_mib=262144)
             for h in range(n_hosts)}
    anti = (AntiAffinityTerm({"matchLabels": {"job": "train"}}, HOSTNAME),)
    pods: list[PendingPod] = []
    for j in range(n_pods):
        kind = rnd.random()
        if kind < 0.1:  # the training job: AVX512 nodes, tolerates the pool, one per node
            pods.append(PendingPod("ml", f"train-{j}", 6000, 10 * GiB, labels={"job": "train"},
                                   node_selector={AVX512: "true"}, tolerations=({"key": "dedicated",
                                                                               "operator": "Exists"},),
                                   anti_affinity=anti))
        elif kind < 0.2:
            pods.append(PendingPod("web", f"amd-{j}", rnd.choice([500, 1000]), rnd.choice([1, 2]) * GiB,
                                   affinity_terms=({"matchExpressions": [
                                       {"key": "feature.node.kubernetes.io/cpu-model.vendor_id", "operator": "In",
                                        "values": ["AMD"]}]},)))
        elif kind < 0.22:
            pods.append(PendingPod("web", f"huge-{j}", 40000, 8 * GiB))  # more than any flavor
        else:
            pods.append(PendingPod("web", f"app-{j}", rnd.choice([250, 500, 1000, 2000, 4000]),
                                   rnd.choice([256, 512, 1024, 4096]) * MiB))
    return PlanInput(nodes, tuple(pods), Limits(hosts, Quota(cores=n_nodes // 2, ram_mib=n_nodes * 1024)))


def small_instance(rnd: random.Random) -> PlanInput:
    n_nodes, n_pods = rnd.randint(2, 6), rnd.randint(2, 10)
    nodes = tuple(_node(rnd, i, f"cmp{i % 2}", libvirt=rnd.random() < 0.3) for i in range(n_nodes))
    hosts = {f"cmp{h}": HostFree(vcpus=rnd.choice([None, 6, 12, 40]), memory_mib=rnd.choice([None, 16384, 65536]))
             for h in range(2)}
    anti = (AntiAffinityTerm({"matchLabels": {"job": "train"}}, HOSTNAME),)
    pods = []
    for j in range(n_pods):
        if rnd.random() < 0.3:
            pods.append(PendingPod("ml", f"train-{j}", rnd.choice([2000, 4000]), rnd.choice([2, 6]) * GiB,
                                   labels={"job": "train"}, tolerations=({"key": "dedicated", "operator": "Exists"},),
                                   anti_affinity=anti))
        else:
            pods.append(PendingPod("web", f"app-{j}", rnd.choice([250, 1000, 2000, 3000, 6000]),
                                   rnd.choice([512, 2048, 4096, 8192]) * MiB))
    quota = Quota(cores=rnd.choice([None, 8, 24]), ram_mib=rnd.choice([None, 32768]))
    return PlanInput(nodes, tuple(pods), Limits(hosts, quota))


def baseline(prob: Problem) -> Solution:
    """Greedy baseline: each pod in order on the first node that fits it now, else on the first node whose
    biggest size fits, grown to that biggest size (host/quota respected)."""
    sol = Solution({})
    load: dict[int, list[int]] = {}
    taken: dict[tuple[int, str], set[str]] = {}
    for pp in prob.pods:
        for n in pp.eligible:
            pn = prob.nodes[n]
            ld = load.setdefault(n, [0, 0, 0])
            if ld[2] >= pn.room or any(prob.domain_of(n, key) in taken.get((cid, key), set())
                                       for cid, (members, key) in enumerate(prob.conflicts) if pp.i in members):
                continue
            r_c, r_m = sol.room(pn)
            if ld[0] + pp.pod.cpu_m <= r_c and ld[1] + pp.pod.memory <= r_m:
                pass
            else:
                if sol.grown(pn):
                    continue
                big = _biggest(pn)
                if big is None:
                    continue
                trial = Solution({**sol.assign, pp.i: n}, {**sol.joint, n: big[0]}, {**sol.cpu, n: big[1]},
                                 {**sol.mem, n: big[2]})
                if violations(prob, trial):  # capacity, hypervisor (with Nova's hold rule), quota
                    continue
                sol.joint[n], sol.cpu[n], sol.mem[n] = big
            ld[0] += pp.pod.cpu_m
            ld[1] += pp.pod.memory
            ld[2] += 1
            sol.assign[pp.i] = n
            for cid, (members, key) in enumerate(prob.conflicts):
                if pp.i in members and prob.domain_of(n, key) is not None:
                    taken.setdefault((cid, key), set()).add(prob.domain_of(n, key) or "")
            break
    return sol


def _biggest(pn) -> tuple[int, int, int] | None:  # type: ignore[no-untyped-def]
    if pn.ranged:
        return 0, len(pn.cpu_levels) - 1, len(pn.mem_levels) - 1
    if len(pn.joint) < 2:
        return None
    k = max(range(len(pn.joint)), key=lambda i: (pn.joint[i].size.vcpus, pn.joint[i].size.memory_mib))
    return k, 0, 0


def bench_large(n_nodes: int, n_pods: int, seed: int) -> None:
    inp = large_instance(n_nodes, n_pods, seed)
    times, cpu = [], []
    plan = None
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        plan = solve(inp, time_limit=2.0)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    assert plan is not None
    prob = build(inp)
    t0 = time.perf_counter()
    build(inp)
    t_build = time.perf_counter() - t0
    print(f"\n== {n_nodes} nodes × {n_pods} Pending pods (seed {seed})")
    print(f"{'solve() wall time':32} median {statistics.median(times):.2f} s, max {max(times):.2f} s (goal ≤ 2 s)")
    print(f"{'solve() CPU time':32} median {statistics.median(cpu):.2f} s (the wall time on an idle machine; "
          f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"{'  of which building the problem':32} {t_build:.2f} s")
    print(f"{'solver':32} {plan.solver} (optimal: {plan.optimal}, gap: "
          f"{'n/a' if plan.gap is None else f'{plan.gap:.1%}'})")
    print(f"{'pods placed / unplaceable':32} {len(plan.placements)} / {len(plan.unplaceable)}")
    print(f"{'nodes grown, total cost':32} {len(plan.nodes)}, {plan.cost:.1f}")
    sol = heuristic.solve(prob, 2.0)
    print(f"{'rules broken (heuristic)':32} {len(violations(prob, sol))}")


def bench_small(count: int, seed: int) -> None:
    rnd = random.Random(seed)
    rows = []
    for _ in range(count):
        inp = small_instance(rnd)
        prob = build(inp)
        ex = solve_exact(prob, 30.0)
        assert ex.solution is not None and ex.optimal
        t0 = time.perf_counter()
        h = heuristic.solve(prob, 2.0)
        th = time.perf_counter() - t0
        b = baseline(prob)
        for s in (h, b):
            assert not violations(prob, s), violations(prob, s)
        rows.append((ex.solution, h, b, th, prob))
    def ratio(s: Solution, opt: Solution, prob: Problem) -> float:
        c, o = s.cost(prob), opt.cost(prob)
        return 1.0 if abs(c - o) < 1e-9 else (c / o if o > 0 else float("inf"))
    same_h = sum(len(h.assign) == len(e.assign) and ratio(h, e, p) <= 1 + 1e-9 for e, h, _, _, p in rows)
    fewer_h = sum(len(h.assign) < len(e.assign) for e, h, _, _, p in rows)
    worst_h = max((ratio(h, e, p) for e, h, _, _, p in rows if len(h.assign) == len(e.assign)), default=1.0)
    same_b = sum(len(b.assign) == len(e.assign) and ratio(b, e, p) <= 1 + 1e-9 for e, _, b, _, p in rows)
    fewer_b = sum(len(b.assign) < len(e.assign) for e, _, b, _, p in rows)
    worst_b = max((ratio(b, e, p) for e, _, b, _, p in rows if len(b.assign) == len(e.assign)), default=1.0)
    tot = lambda k: sum(r[k].cost(r[4]) for r in rows)  # noqa: E731
    print(f"\n== {count} random small instances (2–6 nodes, 2–10 pods; seed {seed})")
    print(f"{'':28}{'optimal':>10}{'fewer pods':>12}{'worst cost':>12}{'total cost':>12}")
    print(f"{'exact (HiGHS)':28}{count:>10}{0:>12}{'1.00×':>12}{tot(0):>12.1f}")
    print(f"{'heuristic':28}{same_h:>10}{fewer_h:>12}{worst_h:>11.2f}×{tot(1):>12.1f}")
    print(f"{'baseline (biggest, first)':28}{same_b:>10}{fewer_b:>12}{worst_b:>11.2f}×{tot(2):>12.1f}")
    print(f"heuristic optimal on {same_h / count:.1%} (goal ≥ 95 %), worst {worst_h - 1:.1%} above (goal ≤ 10 %); "
          f"median heuristic time {statistics.median(r[3] for r in rows) * 1000:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--small", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    bench_large(args.nodes, args.pods, args.seed)
    bench_small(args.small, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
