"""The heuristic never breaks a rule, never places fewer pods than a plan could when alone it is proven optimal,
and its lower bound never exceeds the true optimum (brute force, tests/support/planner_instances.py)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from planner_instances import FLAVORS, brute_force, node, random_instance

from console.infra.sizes import GiB
from console.planner import heuristic
from console.planner.bounds import lower_bound
from console.planner.model import AntiAffinityTerm, HostFree, Limits, PendingPod, PlanInput, Quota
from console.planner.problem import build, violations


@settings(derandomize=True, max_examples=120, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_heuristic_is_feasible_and_its_bound_is_below_the_optimum(seed: int) -> None:
    inp = random_instance(random.Random(seed))
    prob = build(inp)
    sol = heuristic.solve(prob, time_limit=0.5, max_rounds=30)
    assert violations(prob, sol) == []
    placed, cost = brute_force(inp)
    assert len(sol.assign) <= placed
    lb = lower_bound(prob, sol)
    if lb is not None:
        assert len(sol.assign) == placed  # it placed every placeable pod
        assert lb <= cost + 1e-9
        assert sol.cost(prob) >= cost - 1e-9


def test_heuristic_on_a_varied_medium_instance_breaks_no_rule() -> None:
    rnd = random.Random(7)
    hosts = {f"cmp{h}": HostFree(vcpus=rnd.randint(4, 40), memory_mib=rnd.randint(8, 64) * 1024) for h in range(5)}
    nodes = tuple(node(f"w{i}", rnd.choice(FLAVORS[:2]), host=f"cmp{i % 5}",
                       labels={"pool": rnd.choice("ab")},
                       taints=({"key": "dedicated", "value": "hpc", "effect": "NoSchedule"},) if i % 7 == 0 else ())
                  for i in range(60))
    anti = (AntiAffinityTerm({"matchLabels": {"job": "t"}}, "kubernetes.io/hostname"),)
    pods = tuple(PendingPod("ml", f"t{j}", 3000, 4 * GiB, labels={"job": "t"}, anti_affinity=anti,
                            node_selector={"pool": "a"}, tolerations=({"operator": "Exists"},)) for j in range(15))
    pods += tuple(PendingPod("web", f"a{j}", rnd.choice([250, 1000, 4000]), rnd.choice([1, 2, 6]) * GiB)
                  for j in range(80))
    prob = build(PlanInput(nodes, pods, Limits(hosts, Quota(cores=40))))
    sol = heuristic.solve(prob, time_limit=1.0, max_rounds=20)
    assert violations(prob, sol) == []
    # the job keeps one pod per node, only on pool a, and the quota's 40 cores bound what Nova resizes add
    train = [prob.nodes[n].node for j, n in sol.assign.items() if prob.pods[j].pod.namespace == "ml"]
    assert len({n.name for n in train}) == len(train) and all(n.labels["pool"] == "a" for n in train)
    grown = [pn for pn in prob.nodes if sol.grown(pn)]
    assert sum(sol.added(pn)[0] for pn in grown) <= 40
    assert len(sol.assign) > 0
