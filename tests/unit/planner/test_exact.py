"""The exact planner against a brute-force enumeration that shares no code with it (tests/support/planner_instances.py).

Priorities (issue 13): most Pending pods placed, then least cost, within every rule the scheduler applies
(console/planner/constraints.py) and every limit of the infrastructure (hypervisor free capacity, quota, pins,
drops). Random small instances, derandomized so a failure reproduces.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from planner_instances import brute_force, random_instance, solution_of

from console.planner.problem import build, violations
from console.planner.solve import solve


@settings(derandomize=True, max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_exact_equals_brute_force(seed: int) -> None:
    inp = random_instance(random.Random(seed))
    placed, cost = brute_force(inp)
    plan = solve(inp)
    assert (plan.solver, plan.optimal, plan.gap) == ("exact", True, 0.0)
    assert len(plan.placements) == placed
    if placed:
        assert plan.cost == round(cost, 6)
    assert sorted(list(plan.placements) + [u.pod for u in plan.unplaceable]) == sorted(p.key for p in inp.pods)
    prob = build(inp)
    assert violations(prob, solution_of(prob, plan)) == []
