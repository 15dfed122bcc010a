"""`console plan --apply --yes` on the lab's `planner` scenario, killed mid-fleet and rerun (issue 13's second
acceptance point), one lab for the module.

The plan is the planner's (the scenario docstring's optimum: kube-worker01, kube-worker03, kube-worker04 to
m1.large, one AVX512F train pod each). The fleet is SIGKILLed the moment the second node's scale-up journal
records its Nova resize sent (tests/support/journalsignal.py: "resize:acted@NODE"), so the first node is done and
the second is mid-resize. The rerun — the same command — must continue that fleet (never re-plan), resume the
second node through its own journal, run the third, and end with every placed pod Running on its planned node.
"Never twice" is read from the real systems: Nova's instance actions per server through openstacksdk
(`server_actions`: GET /servers/{id}/os-instance-actions) and each libvirt domain's size through libvirt-python.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fleettools import audit, domain_sizes, journals, nova_actions, plan_cli, pods_by_node
from labstart import start_lab

from console.lab.world import Lab

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("planner", tmp_path_factory.mktemp("fleet-apply-lab"))


def test_killed_mid_fleet_and_rerun_it_finishes_without_resizing_any_node_twice(lab: Lab, tmp_path: Path):
    # the planner's order (console/planner/solve.py): reboots alike, one pod each, PDB-free → by node name
    order = first, second, third = "kube-worker01", "kube-worker03", "kube-worker04"
    before = domain_sizes(lab)

    killed = plan_cli(lab, tmp_path, "--apply", "--yes", signal_at=f"resize:acted@{second}")
    assert killed.code == -9, killed.stderr
    [fleet] = journals(tmp_path, "fleet")
    assert fleet["status"] == "running" and [n["node"] for n in fleet["plan"]["nodes"]] == list(order)
    placements = fleet["plan"]["placements"]
    assert sorted(placements.values()) == sorted(order)  # solver-xl, inference and etl cannot be placed
    nodes = {n["node"]: n for n in fleet["nodes"]}
    assert [nodes[n]["status"] for n in order] == ["done", "running", "pending"]
    assert nodes[second]["run_id"]  # the second node's run is known before its first step acts
    actions = nova_actions(lab)
    assert (actions[first]["resize"], actions[second]["resize"], actions[third]["resize"]) == (1, 1, 0)

    rerun = plan_cli(lab, tmp_path, "--apply", "--yes")
    assert rerun.code == 0, rerun.stderr
    assert rerun.doc["fleet_id"] == fleet["run_id"] and rerun.doc["resumed"] is True
    assert rerun.doc["status"] == "done" and [n["status"] for n in rerun.doc["nodes"]] == ["done"] * 3
    resumed = {n["node"]: n["run_id"] for n in rerun.doc["nodes"]}
    assert resumed[first] == nodes[first]["run_id"] and resumed[second] == nodes[second]["run_id"]
    assert f"resuming run {nodes[second]['run_id']}" in rerun.stderr
    assert "is carried out (a fleet is never re-planned)" in rerun.stderr  # the new plan was computed, not used

    # every node of the plan resized exactly once, nothing else resized; the domains grew to m1.large once
    actions = nova_actions(lab)
    for node, count in actions.items():
        want = 1 if node in order else 0
        assert (count["resize"], count["confirmResize"]) == (want, want), (node, count)
    sizes = domain_sizes(lab)
    for node in sizes:
        assert sizes[node] == ((8, 12288) if node in order else before[node]), node
    # one scale-up run per node: the rerun resumed the second node's run, it did not start another
    runs = journals(tmp_path, "scale-up")
    assert sorted(j["node"] for j in runs) == sorted(order) and {j["status"] for j in runs} == {"done"}

    # every placed pod Running on its planned node (the Job's pods are interchangeable: one per planned node)
    running = pods_by_node(lab, "train-")
    assert sorted(running) == sorted(order) and all(len(v) == 1 for v in running.values())  # one per node
    assert sorted(p for v in running.values() for p in v) == sorted(placements)
    assert all(v["ok"] for v in rerun.doc["verify"]) and len(rerun.doc["verify"]) == len(placements)

    # the fleet's own audit records: an intent per run of it (started, resumed), the outcome of the one that ended
    fleet_records = [(r["phase"], r["result"]) for r in audit(tmp_path) if r["action"] == "runbook.fleet"]
    assert fleet_records == [("intent", "pending"), ("intent", "pending"), ("outcome", "ok")]
