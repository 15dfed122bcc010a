"""A lower bound on the least cost, for the gap a heuristic plan reports (and to stop improving a proven one)."""

from __future__ import annotations

from collections import defaultdict

from console.planner.problem import Problem, Solution, cheapest_levels


def lower_bound(prob: Problem, sol: Solution) -> float | None:
    """A lower bound on the least cost of placing every pod any plan can place.

    Only when `sol` places all of them: then the optimum places the same set (else it may place another set,
    which no such bound covers). The largest of: per set of pods sharing their admitting nodes (and all pods
    together), the CPU and memory they need beyond those nodes' current room at the cheapest rate any of those
    nodes grows at; per pod, the cheapest growth that lets it in alone; per anti-affinity clique, the sum of the
    cheapest such growth in as many distinct topology domains as it has members. Plus the pins' fixed costs.
    """
    if any(pp.eligible and pp.i not in sol.assign for pp in prob.pods):
        return None
    if "lower_bound" not in prob.memo:
        prob.memo["lower_bound"] = _bound(prob)
    return float(prob.memo["lower_bound"])


def _bound(prob: Problem) -> float:
    const = sum(pn.joint[0].cost for pn in prob.nodes if pn.joint)
    best = max(_deficit_bound(prob), 0.0)
    alone = _alone_costs(prob)
    for pp in prob.pods:
        if pp.eligible:
            best = max(best, min(alone[pp.i].values()))
    for members, key in prob.conflicts:
        per_domain: dict[str, float] = {}
        distinct = {id(alone[j]): alone[j] for j in members if j in alone}  # a job's pods share one dict
        for costs in distinct.values():
            for n, cst in costs.items():
                v = prob.domain_of(n, key)
                if v is not None and cst < per_domain.get(v, float("inf")):
                    per_domain[v] = cst
        k = sum(1 for j in members if prob.pods[j].eligible)
        cheapest = sorted(per_domain.values())
        if len(cheapest) >= k:
            best = max(best, sum(cheapest[:k]))
    return const + best


def _alone_costs(prob: Problem) -> dict[int, dict[int, float]]:
    """Per pod, per admitting node: the cheapest growth (0: none) that lets the pod in with the node's load."""
    memo: dict[tuple[int, int, int], dict[int, float]] = {}
    out: dict[int, dict[int, float]] = {}
    for pp in prob.pods:
        key = (id(pp.eligible), pp.pod.cpu_m, pp.pod.memory)
        got = memo.get(key)
        if got is None:
            got = {}
            for n in pp.eligible:
                pn = prob.nodes[n]
                lv = cheapest_levels(pn, pp.pod.cpu_m, pp.pod.memory)
                if lv is not None:
                    base = pn.joint[0].cost if pn.joint else 0.0
                    cost = (pn.cpu_levels[lv[1]].cost + pn.mem_levels[lv[2]].cost) if pn.ranged else \
                        pn.joint[lv[0]].cost - base
                    got[n] = max(0.0, cost)
            memo[key] = got
        out[pp.i] = got
    return out


def _deficit_bound(prob: Problem) -> float:
    groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for pp in prob.pods:
        if pp.eligible:
            groups[tuple(pp.eligible)].append(pp.i)
    groups[tuple(range(len(prob.nodes)))] = [pp.i for pp in prob.pods if pp.eligible]
    rate_c: list[float] = []
    rate_m: list[float] = []
    room_c: list[float] = []
    room_m: list[float] = []
    for pn in prob.nodes:
        if pn.ranged:
            b_c, b_m = pn.cpu_levels[0], pn.mem_levels[0]
            rc = [lv.cost / (lv.cpu - b_c.cpu) for lv in pn.cpu_levels[1:] if lv.cpu > b_c.cpu]
            rm = [lv.cost / (lv.mem - b_m.mem) for lv in pn.mem_levels[1:] if lv.mem > b_m.mem]
            room_c.append(max(0, b_c.cpu))
            room_m.append(max(0, b_m.mem))
        else:
            b = pn.joint[0]
            rc = [(lv.cost - b.cost) / (lv.cpu - b.cpu) for lv in pn.joint[1:] if lv.cpu > b.cpu]
            rm = [(lv.cost - b.cost) / (lv.mem - b.mem) for lv in pn.joint[1:] if lv.mem > b.mem]
            room_c.append(max(0, b.cpu))
            room_m.append(max(0, b.mem))
        rate_c.append(min(rc, default=float("inf")))
        rate_m.append(min(rm, default=float("inf")))
    best = 0.0
    for nodes, members in groups.items():
        if not nodes or not members:
            continue
        need_c = sum(prob.pods[j].pod.cpu_m for j in members) - sum(room_c[n] for n in nodes)
        need_m = sum(prob.pods[j].pod.memory for j in members) - sum(room_m[n] for n in nodes)
        if need_c > 0:
            r = min(rate_c[n] for n in nodes)
            best = max(best, need_c * r if r != float("inf") else 0.0)
        if need_m > 0:
            r = min(rate_m[n] for n in nodes)
            best = max(best, need_m * r if r != float("inf") else 0.0)
    return best
