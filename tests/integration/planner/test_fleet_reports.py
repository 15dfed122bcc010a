"""What a fleet run reports, checked against the real systems (issue 20, point 9), on the lab's `planner` scenario.

The fleet (`console plan --apply --yes`) grows kube-worker01, kube-worker03 and kube-worker04 for the three pods of
Job train. The scheduler takes the Job's Pending pods in its own queue order (kube-scheduler's PrioritySort:
priority, then the time queued), not the plan's, so the pod the plan put on kube-worker01 may stay Pending while a
sibling takes the node. The fleet is SIGKILLed the moment its journal records the last node done (before its final
verify), then rerun: the rerun resumes it, changes nothing, and verifies.

What each report claims is compared with what the API server says, read through the kubernetes client: a pod a
node's verify-pods step records Running must have been bound to that node (its PodScheduled condition's
lastTransitionTime: the binding, POST pods/NAME/binding, sets spec.nodeName and PodScheduled True — kubernetes
pkg/registry/core/pod/storage/storage.go, BindingREST.assignPod) by the time the step ended; the fleet's summary
counts the Job's pods and names the node each runs on.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fleettools import Run, core, journals, plan_cli
from labstart import start_lab

from console.lab.world import Lab

pytestmark = pytest.mark.lab

ORDER = ["kube-worker01", "kube-worker03", "kube-worker04"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("planner", tmp_path_factory.mktemp("fleet-reports-lab"))


@pytest.fixture(scope="module")
def runs(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Run, Path]:
    state = tmp_path_factory.mktemp("fleet-reports-state")
    killed = plan_cli(lab, state, "--apply", "--yes", signal_at=ORDER[-1])  # the fleet journal: last node done
    assert killed.code == -9, killed.stderr
    rerun = plan_cli(lab, state, "--apply", "--yes")
    return killed, rerun, state


def _pods(lab: Lab) -> dict[str, Any]:
    return {f"default/{p.metadata.name}": p for p in core(lab).list_namespaced_pod("default").items}


def _scheduled(pod: Any) -> datetime | None:
    for c in pod.status.conditions or []:
        if c.type == "PodScheduled" and c.status == "True":
            return c.last_transition_time
    return None


def test_a_resumed_fleet_that_changed_nothing_says_so(runs: tuple[Run, Run, Path]):
    _killed, rerun, state = runs
    [fleet] = journals(state, "fleet")
    assert [n["status"] for n in fleet["nodes"]] == ["done"] * 3  # the kill left every node done
    assert rerun.code == 0, rerun.stderr
    assert rerun.doc["resumed"] is True and rerun.doc["fleet_id"] == fleet["run_id"]
    assert "scaled up kube-worker01" not in rerun.doc["message"]
    assert rerun.doc["message"].startswith("this run changed nothing: kube-worker01, kube-worker03, kube-worker04 "
                                           f"were scaled up by an earlier run of fleet {fleet['run_id']}")
    assert rerun.doc["this_run"] == {"scaled_up": [], "resumed": [], "done_before": ORDER}
    assert len(journals(state, "scale-up")) == 3  # and it started no node run


def test_each_node_verify_records_only_pods_bound_to_that_node_by_then(lab: Lab, runs: tuple[Run, Run, Path]):
    _killed, _rerun, state = runs
    pods = _pods(lab)
    claims = 0
    for run in journals(state, "scale-up"):
        [step] = [s for s in run["steps"] if s["id"] == "verify-pods"]
        assert step["status"] == "done", step
        ended = datetime.fromisoformat(step["finished"])
        running = step["data"]["running"]
        # today's journals list pods ("running": [...]) as Running on the run's node
        said = running.items() if isinstance(running, dict) else [(p, run["node"]) for p in running]
        for pod, node in said:
            claims += 1
            p = pods[pod]
            assert p.spec.node_name == node, (run["node"], pod, p.spec.node_name)
            bound = _scheduled(p)
            assert bound is not None and bound <= ended, (
                f"{run['node']}'s verify recorded {pod} Running at {step['finished']}; the scheduler bound it at "
                f"{bound}")
    assert claims == 3


def test_the_final_verify_counts_the_jobs_pods_and_names_where_each_runs(lab: Lab, runs: tuple[Run, Run, Path]):
    _killed, rerun, _state = runs
    pods = _pods(lab)
    placements = rerun.doc["plan"]["placements"]
    where = {p: pods[p].spec.node_name for p in placements}
    assert sorted(where.values()) == sorted(ORDER)  # the Job got one pod on each grown node
    by_node = ", ".join(f"{n}: {p.split('/')[1]}" for p, n in sorted(where.items(), key=lambda i: i[1]))
    assert f"3 of 3 pods of job/train Running ({by_node})" in rerun.doc["message"]
    if any(where[p] != n for p, n in placements.items()):  # the scheduler swapped them: never "where planned"
        assert "where planned" not in rerun.doc["message"]
    rows = {r["pod"]: r for r in rerun.doc["verify"]}
    assert {p: (r["node"], r["runs_on"], r["controller"], r["ok"]) for p, r in rows.items()} == {
        p: (placements[p], where[p], "job/train", True) for p in placements}
    # the progress lines say the same, never a pod Running that is not
    assert f"fleet: ? 3 of 3 pods of job/train Running ({by_node})" in rerun.stderr
