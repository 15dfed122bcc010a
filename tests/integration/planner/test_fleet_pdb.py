"""The fleet runbook's refusals and its PodDisruptionBudget stop on the lab's `planner` scenario (issue 13's third
acceptance point), one lab for the module: read-only refuses before anything (exit 2), no confirmation without
a terminal (exit 5), and a PDB that blocks one node's drain stops the fleet "needs attention" (exit 4) before that
node is cordoned or its VM touched, after the nodes before it are done.

The PDB is made by the test with the kubernetes client: a Deployment of one pod pinned to kube-worker03 and a
budget with minAvailable 1 over it (disruptionsAllowed 0: the eviction API answers 429, kubernetes
pkg/registry/core/pod/storage/eviction.go). kube-worker03 cannot be left out of the plan (the train job needs three
AVX512F nodes and cmp001 has room for one resize), and the planner orders PDB-blocked nodes last
(console/planner/solve.py), so the fleet does kube-worker01 and kube-worker04 first. Nova's instance actions
(openstacksdk `server_actions`) show which servers were resized.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fleettools import audit, core, journals, nova_actions, plan_cli
from labstart import start_lab
from labtools import lab_env, wait_for

from console.lab.world import Lab

pytestmark = pytest.mark.lab
BLOCKED = "kube-worker03"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("planner", tmp_path_factory.mktemp("fleet-pdb-lab"))


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fleet-pdb-state")  # one XDG_STATE_HOME: the last test reruns the PDB test's fleet


def _nothing_changed(lab: Lab, state: Path) -> None:
    assert journals(state, "fleet") == [] and journals(state, "scale-up") == []
    assert audit(state) == []
    assert all(c["resize"] == 0 for c in nova_actions(lab).values())


def test_read_only_refuses_before_anything(lab: Lab, tmp_path: Path):
    run = plan_cli(lab, tmp_path, "--apply", "--yes", before=("--read-only",))
    assert run.code == 2, run.stderr
    assert run.doc["status"] == "refused" and run.doc["error"] == "read-only"
    assert "read-only" in run.stderr
    _nothing_changed(lab, tmp_path)


def test_not_confirmed_without_a_terminal(lab: Lab, tmp_path: Path):
    run = plan_cli(lab, tmp_path, "--apply")
    assert run.code == 5, run.stderr
    assert "refusing to change anything without --yes when stdin is not a terminal" in run.stderr
    assert "Fleet run of the plan: 3 nodes" in run.stderr  # the preview came first
    _nothing_changed(lab, tmp_path)


def _guard_worker03(lab: Lab) -> None:
    """A one-pod Deployment on kube-worker03 and a PodDisruptionBudget that lets none of it go."""
    from kubernetes import client, config

    api = config.new_client_from_config(str(lab_env(lab)["KUBECONFIG"]))
    labels = {"app": "guarded"}
    client.AppsV1Api(api).create_namespaced_deployment("default", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "guarded"},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": BLOCKED},
                     "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "hpc",
                                      "effect": "NoSchedule"}],
                     "containers": [{"name": "app", "image": "nginx:1.21",
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}})
    policy = client.PolicyV1Api(api)
    policy.create_namespaced_pod_disruption_budget("default", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "guarded"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}})

    def blocking() -> bool:
        status = policy.read_namespaced_pod_disruption_budget("guarded", "default").status
        return bool(status and status.current_healthy == 1 and status.disruptions_allowed == 0)

    wait_for(blocking, timeout=60, what="PDB default/guarded to count its Running pod and allow no disruption")


def test_a_pdb_blocking_a_drain_stops_the_fleet_before_that_node_after_the_others(lab: Lab, state: Path):
    _guard_worker03(lab)
    run = plan_cli(lab, state, "--apply", "--yes")
    assert run.code == 4, run.stderr
    assert run.doc["status"] == "needs-attention"
    order = [n["node"] for n in run.doc["plan"]["nodes"]]
    assert sorted(order) == ["kube-worker01", "kube-worker03", "kube-worker04"] and order[-1] == BLOCKED
    assert [n["status"] for n in run.doc["nodes"]] == ["done", "done", "attention"]
    assert "PodDisruptionBudget default/guarded allows no disruption now" in run.doc["message"]
    assert f"Nothing was done on {BLOCKED} (not cordoned, its VM untouched)" in run.doc["message"]
    assert f"--resume {run.doc['fleet_id']}" in run.doc["message"]

    actions = nova_actions(lab)
    assert {n: c["resize"] for n, c in actions.items() if c["resize"]} == {"kube-worker01": 1, "kube-worker04": 1}
    assert not core(lab).read_node(BLOCKED).spec.unschedulable
    assert sorted(j["node"] for j in journals(state, "scale-up")) == ["kube-worker01", "kube-worker04"]
    [fleet] = journals(state, "fleet")
    assert fleet["status"] == "needs-attention"  # resumable once the budget allows it


def test_the_rerun_continues_that_fleet_and_stops_at_max_unavailable(lab: Lab, state: Path):
    """Rerun with another node cordoned (kubectl cordon = spec.unschedulable): the unfinished fleet is continued
    (the done nodes are not run again) and stops before kube-worker03, which would be a second unavailable
    node with --max-unavailable 1 (plan.max_unavailable's default)."""
    [fleet] = journals(state, "fleet")  # the PDB test's, unfinished
    core(lab).patch_node("kube-worker05", {"spec": {"unschedulable": True}})
    try:
        run = plan_cli(lab, state, "--apply", "--yes")
    finally:
        core(lab).patch_node("kube-worker05", {"spec": {"unschedulable": False}})
    assert run.code == 4, run.stderr
    assert run.doc["fleet_id"] == fleet["run_id"] and run.doc["resumed"] is True
    assert [n["status"] for n in run.doc["nodes"]] == ["done", "done", "attention"]
    assert (f"starting {BLOCKED} would make 2 nodes unavailable, more than --max-unavailable 1 (unavailable now: "
            "kube-worker05 (cordoned))") in run.doc["message"]
    assert {n: c["resize"] for n, c in nova_actions(lab).items() if c["resize"]} == {"kube-worker01": 1,
                                                                                     "kube-worker04": 1}
    assert sorted(j["node"] for j in journals(state, "scale-up")) == ["kube-worker01", "kube-worker04"]
