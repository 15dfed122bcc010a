"""`solve(PlanInput) -> Plan`: the exact solver when the instance is small enough to finish within the time
limit, else the heuristic, with the gap to the best known lower bound.

Order of Plan.nodes (the order the fleet runbook carries them out): live scale-ups (no reboot) first, then
reboots; nodes with PDB-blocked pods last (the fleet stops there with "needs attention" after finishing the
others); within each group the node that unblocks the most Pending pods first, then by node name.
"""

from __future__ import annotations

import time

from console.planner import heuristic
from console.planner.bounds import lower_bound
from console.planner.exact import solve_exact
from console.planner.model import LIBVIRT, NodeChange, Plan, PlanInput, Size, Unplaceable
from console.planner.problem import Problem, Solution, build, violations
from console.planner.reasons import unplaceable

# the MILP's size (pod×node pairs) up to which the exact solver runs first
EXACT_MAX_PAIRS = 4000
EXACT_SURE_PAIRS = 600  # below this the exact solver finishes in well under a second


def solve(inp: PlanInput, *, time_limit: float = 2.0) -> Plan:
    """The plan: as many Pending pods placed as possible, then the least cost, then the preferences."""
    t0 = time.monotonic()
    prob = build(inp)
    pairs = sum(len(pp.eligible) for pp in prob.pods)
    notes: list[str] = list(inp.limits.notes) + prob.notes
    if pairs <= EXACT_MAX_PAIRS:
        # a big model may not finish: keep some of the time for the heuristic to compete with its incumbent
        res = solve_exact(prob, time_limit if pairs <= EXACT_SURE_PAIRS else time_limit * 0.7)
        if res.solution is not None and not violations(prob, res.solution):
            sol, optimal, bound, solver = res.solution, res.optimal, res.bound, "exact"
            if not optimal:
                h = heuristic.solve(prob, max(0.1, time_limit - (time.monotonic() - t0)))
                if _better(prob, h, sol):
                    sol, solver = h, "heuristic"
                notes.append(f"the exact solver did not finish in {time_limit:g} s: best plan found, with its gap")
            return _plan(prob, sol, optimal, solver, bound, t0, notes)
    sol = heuristic.solve(prob, max(0.1, time_limit - (time.monotonic() - t0)))
    bound = lower_bound(prob, sol)
    cost = sol.cost(prob)
    optimal = bound is not None and cost - bound <= 1e-9 * max(1.0, cost)
    return _plan(prob, sol, optimal, "heuristic", bound, t0, notes)


def _better(prob: Problem, a: Solution, b: Solution) -> bool:
    return (len(a.assign), -a.cost(prob)) > (len(b.assign), -b.cost(prob))


def _plan(prob: Problem, sol: Solution, optimal: bool, solver: str, bound: float | None, t0: float,
          notes: list[str]) -> Plan:
    pods_on: dict[int, list[str]] = {}
    for j, n in sol.assign.items():
        pods_on.setdefault(n, []).append(prob.pods[j].pod.key)
    changes: list[tuple[tuple[int, int, int, str], NodeChange]] = []
    for pn in prob.nodes:
        vm = pn.node.vm
        if vm is None or not sol.grown(pn):
            continue
        if pn.ranged:
            to = Size(pn.cpu_levels[sol.cpu.get(pn.i, 0)].size.vcpus or vm.current.vcpus,
                      pn.mem_levels[sol.mem.get(pn.i, 0)].size.memory_mib or vm.current.memory_mib)
        else:
            to = pn.joint[sol.joint.get(pn.i, 0)].size
        live = pn.method == LIBVIRT
        change_notes = [] if live else ["the VM reboots into the new size (Nova resize): its pods are drained"]
        if pn.node.pdb_blocked:
            change_notes.append("a PodDisruptionBudget holds " + ", ".join(pn.node.pdb_blocked))
        pods = tuple(sorted(pods_on.get(pn.i, [])))
        change = NodeChange(pn.node.name, vm.ref, vm.current, to, pn.method, pods, round(sol.node_cost(pn), 6),
                            tuple(change_notes))
        changes.append(((1 if pn.node.pdb_blocked else 0, 0 if live else 1, -len(pods), pn.node.name), change))
    changes.sort(key=lambda kc: kc[0])
    placements = {prob.pods[j].pod.key: prob.nodes[n].node.name for j, n in sol.assign.items()}
    cost = round(sol.cost(prob), 6)
    if bound is not None:
        bound = min(round(bound, 6), cost)
    return Plan(
        nodes=tuple(c for _, c in changes),
        placements=dict(sorted(placements.items())),
        unplaceable=tuple(Unplaceable(k, r) for k, r in sorted(unplaceable(prob, sol))),
        cost=cost,
        optimal=optimal,
        solver=solver,
        bound=cost if optimal else bound,
        seconds=round(time.monotonic() - t0, 3),
        notes=tuple(notes),
    )
