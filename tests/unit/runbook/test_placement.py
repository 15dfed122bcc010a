"""Where the pods a plan placed run, counted per controller (console/runbook/placement.py): what the fleet's final
verify and each fleet node's verify-pods step report (issue 20, point 9).

Pods of one controller are interchangeable for the plan: the scheduler takes a Job's or ReplicaSet's Pending pods
in its own queue order (kube-scheduler's PrioritySort: priority, then the time queued), not the plan's, so a slot
"one pod of job/train on w1" is filled by whichever pod of the Job runs there. The report counts those slots and
says, for every pod, where it runs now — never "Running" for a pod that is not bound to a node and Running.
"""

from __future__ import annotations

from console.runbook import placement
from console.runbook.verify import share_report


def _pod(name: str, node: str = "", phase: str = "Pending", owner: str = "job-1", kind: str = "Job",
         controller: str = "train") -> dict:
    refs = [{"kind": kind, "name": controller, "uid": owner, "controller": True}] if owner else []
    return {"metadata": {"namespace": "default", "name": name, "ownerReferences": refs},
            "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}


PLAN = {"default/t-a": "w1", "default/t-b": "w2", "default/t-c": "w3"}


def test_swapped_pods_of_a_job_fill_its_slots_and_the_report_says_where_each_runs():
    pods = {"default/t-a": _pod("t-a", "w2", "Running"), "default/t-b": _pod("t-b", "w3", "Running"),
            "default/t-c": _pod("t-c", "w1", "Running")}
    report = placement.report(PLAN, pods)
    assert report.ok
    [group] = report.groups
    assert group.controller == "job/train" and (group.running, group.planned) == (3, 3)
    assert report.texts() == ["3 of 3 pods of job/train Running (w1: t-c, w2: t-a, w3: t-b)"]
    rows = {r.pod: r for r in report.rows}
    assert {k: (r.node, r.runs_on, r.ok) for k, r in rows.items()} == {
        "default/t-a": ("w1", "w2", True), "default/t-b": ("w2", "w3", True), "default/t-c": ("w3", "w1", True)}
    assert not any("where planned" in t for t in report.texts())


def test_a_pod_left_pending_while_its_siblings_run_is_counted_out_with_the_schedulers_reason():
    pods = {"default/t-a": _pod("t-a"), "default/t-b": _pod("t-b", "w2", "Running"),
            "default/t-c": _pod("t-c", "w1", "Running")}
    report = placement.report(PLAN, pods)
    assert not report.ok
    why = "0/6 nodes are available: 3 Insufficient cpu."
    assert report.explain({"default/t-a": why}).texts() == [
        f"2 of 3 pods of job/train Running (w1: t-c, w2: t-b); none on w3; t-a Pending: {why}"]
    rows = {r.pod: r for r in report.rows}
    assert report.pending() == ["default/t-a"]
    assert rows["default/t-a"].to_dict() == {"pod": "default/t-a", "node": "w1", "controller": "job/train",
                                             "runs_on": "", "phase": "Pending", "ok": False, "why": f"Pending: {why}"}


def test_running_is_only_ever_a_pod_bound_to_a_node_and_running_there():
    # a status that says Running without spec.nodeName (or bound but not started) is not Running on any node
    unbound = _pod("t-a", "", "Running")
    bound_not_started = _pod("t-b", "w2", "Pending")
    report = placement.report({"default/t-a": "w1", "default/t-b": "w2"},
                              {"default/t-a": unbound, "default/t-b": bound_not_started})
    assert not report.ok and [r.ok for r in report.rows] == [False, False]
    assert [r.runs_on for r in report.rows] == ["", ""]
    assert [r.why for r in report.rows] == ["not bound to any node (phase Running)", "bound to w2, Pending"]
    assert report.texts() == ["0 of 2 pods of job/train Running; none on w1, w2; t-a not bound to any node "
                              "(phase Running); t-b bound to w2, Pending"]


def test_pods_without_a_controller_never_stand_in_for_each_other():
    pods = {"default/a": _pod("a", "w2", "Running", owner=""), "default/b": _pod("b", "w1", "Running", owner="")}
    report = placement.report({"default/a": "w1", "default/b": "w2"}, pods)
    assert not report.ok
    assert report.texts() == ["default/a (planned on w1) runs on w2, not on w1",
                              "default/b (planned on w2) runs on w1, not on w2"]
    ok = placement.report({"default/a": "w1"}, {"default/a": _pod("a", "w1", "Running", owner="")})
    assert ok.ok and ok.texts() == ["default/a Running on w1"]


def test_a_deleted_pod_and_a_pod_of_another_controller():
    pods = {"default/t-a": None, "default/t-b": _pod("t-b", "w2", "Running"),
            "default/t-c": _pod("t-c", "w3", "Running", owner="rs-1", kind="ReplicaSet", controller="api-5d8")}
    report = placement.report(PLAN, pods)
    assert not report.ok
    assert report.texts() == ["default/t-a (planned on w1) deleted", "1 of 1 pods of job/train Running (w2: t-b)",
                              "1 of 1 pods of replicaset/api-5d8 Running (w3: t-c)"]


def test_a_node_share_is_met_by_a_pending_twin_and_only_the_twin_is_reported_running():
    """The fleet node's verify (verify-pods of a share): its planned pod stayed Pending while a sibling that was
    Pending with it took the node. The step may pass — the node got its pod of the Job — but it reports the
    sibling Running there, and the planned pod Pending."""
    want = ["default/t-a"]
    twin = _pod("t-b", "w1", "Running")
    report = share_report("w1", want, {"default/t-a": _pod("t-a")}, [twin], {"default/t-b"})
    assert report.ok and report.problems() == []
    assert report.running() == {"default/t-b": "w1"}  # never t-a: it is not bound anywhere
    assert report.explain({"default/t-a": "0/6 nodes are available"}).texts() == [
        "1 of 1 pods of job/train Running (w1: t-b); t-a Pending: 0/6 nodes are available"]
    # a pod of the same controller that was not Pending when the run planned is no stand-in
    alone = share_report("w1", want, {"default/t-a": _pod("t-a")}, [twin], set())
    assert not alone.ok and alone.problems() == ["default/t-a"] and alone.running() == {}
    other = _pod("x", "w1", "Running", owner="rs-9", kind="ReplicaSet", controller="x")
    assert share_report("w1", want, {"default/t-a": _pod("t-a")}, [other], {"default/x"}).problems() == [
        "default/t-a"]
    assert share_report("w1", want, {"default/t-a": None}, [], set()).problems() == ["default/t-a"]


def test_a_node_share_accepts_its_pod_running_elsewhere_and_says_where():
    """As the single-node runbook does, a planned pod that runs on another node is not this node's failure; the
    report names that node instead of claiming it runs here."""
    report = share_report("w1", ["default/t-a"], {"default/t-a": _pod("t-a", "w5", "Running")}, [], set())
    assert report.problems() == [] and report.running() == {"default/t-a": "w5"}
    assert report.texts() == ["0 of 1 pods of job/train Running; none on w1; t-a runs on w5, not on a node "
                              "planned for job/train"]
