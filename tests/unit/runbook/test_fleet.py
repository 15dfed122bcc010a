"""The fleet runbook's decisions, against a stand-in session: order, resume (never a done node again, the running
node through its own run), stop on the first failure / a PDB-blocked drain / max-unavailable, read-only, the
parallel rule (never two nodes of one hypervisor at once) and the fleet's audit records.

The node runs themselves are the scale-up runbook's (tested in tests/integration/scaleup); here `plan`/`run`
only record what the fleet asked for. The cluster reads (console/runbook/fleet_checks.py) are replaced by
what each case needs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from console.audit import AuditLog
from console.guard import Guard
from console.planner.model import Node, NodeChange, Plan, PlanInput, Size, Vm
from console.runbook import fleet_checks
from console.runbook.engine import RunEvent, RunResult
from console.runbook.fleet import Fleet, FleetError, entries_from_plan, node_request, resume_decision, same_plan
from console.runbook.fleet_journal import FleetJournal
from console.runbook.journal import Journal

CLUSTER = {"server": "https://k:6443", "kube_system_uid": "u-1", "note": ""}
M = Size(2, 4096, "m1.medium")
L = Size(8, 12288, "m1.large")


def _plan(*nodes: tuple[str, str, str]) -> tuple[Plan, PlanInput]:
    """(node, method, host) each grown from M to L (OpenStack) or to 4 vCPU / 8 GiB (libvirt)."""
    changes, inodes = [], []
    for name, method, host in nodes:
        to = L if method == "openstack" else Size(4, 8192)
        changes.append(NodeChange(name, f"vm-{name}", M, to, method, (f"default/p-{name}",), 6.0))
        inodes.append(Node(name, {}, vm=Vm(f"vm-{name}", method, host, M)))
    plan = Plan(tuple(changes), {f"default/p-{n}": n for n, _, _ in nodes}, (), 6.0 * len(nodes), True, "exact")
    return plan, PlanInput(tuple(inodes), ())


@dataclass
class FakePlan:
    node: str
    nothing_to_do: str | None = None


@dataclass
class FakeSession:
    """What Fleet calls on a console.runbook.session.Session."""

    guard: Guard
    outcomes: dict[str, str] = field(default_factory=dict)  # node → its run's status (default done)
    cluster: dict[str, Any] = field(default_factory=lambda: dict(CLUSTER))
    api: Any = None
    planned: list[tuple[str, str | None]] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    on_run: Any = None

    def plan(self, request: Any, *, resume: str | None = None, new: bool = False, dry_run: bool = False):
        if not dry_run:
            self.planned.append((request.node, resume))
        return FakePlan(request.node), None

    def check_permissions(self, action: str) -> None:
        pass

    def run(self, plan: FakePlan, journal: Any = None, *, on_event=None, stop=None) -> RunResult:
        run_id = f"scale-up-{plan.node}-20261202T000000-{len(self.ran):04x}"
        self.ran.append(plan.node)
        on_event(RunEvent(run_id, "run-start", message=f"run {run_id}"))
        if self.on_run:
            self.on_run(plan.node)
        status = self.outcomes.get(plan.node, "done")
        code = {"done": 0, "failed": 1, "needs-attention": 4, "verify-failed": 3, "interrupted": 4}[status]
        return RunResult(run_id, status, code, "" if status == "done" else f"{plan.node} {status}", "", 0.0, 0.0,
                         [], "before drain" if status == "interrupted" else "")


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setattr(fleet_checks, "unavailable_nodes", lambda api: {})
    monkeypatch.setattr(fleet_checks, "pdb_blocked", lambda api, node: [])
    monkeypatch.setattr(fleet_checks, "read_pods", lambda api, keys: dict.fromkeys(keys))
    monkeypatch.setattr(fleet_checks, "verify_placements", lambda api, placements, timeout, stop=None: [
        {"pod": p, "node": n, "ok": True, "why": "", "instead": ""} for p, n in placements.items()])
    return tmp_path


def _session(state, read_only: bool = False, **kw: Any) -> FakeSession:
    return FakeSession(Guard(read_only=read_only, audit=AuditLog(state / "console" / "audit.log")), **kw)


def _events(out: list) -> Any:
    return out.append


def test_nodes_run_in_plan_order_and_the_fleet_is_journaled_and_audited(state):
    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "libvirt", "cmp001"))
    s = _session(state)
    events: list = []
    result = Fleet(s, plan, inp).run(_events(events), threading.Event())
    assert (result.status, result.exit_code) == ("done", 0)
    assert s.planned == [("w1", None), ("w2", None)]
    doc = FleetJournal.load_fleet(result.fleet_id).doc
    assert doc["status"] == "done" and [n["status"] for n in doc["nodes"]] == ["done", "done"]
    assert all(n["run_id"].startswith(f"scale-up-{n['node']}-") for n in doc["nodes"])
    assert [e.kind for e in events if e.kind != "step"] == ["node-start", "node-done", "node-start", "node-done",
                                                            "verify", "verify", "verify", "done"]
    records = [(r["phase"], r["action"], r["result"]) for r in s.guard.audit.entries()]
    assert records == [("intent", "runbook.fleet", "pending"), ("outcome", "runbook.fleet", "ok")]


def test_requests_are_the_flavor_for_openstack_and_the_size_for_libvirt():
    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "libvirt", "cmp002"))
    e1, e2 = entries_from_plan(plan, inp)
    assert (e1["host"], e2["host"]) == ("cmp001", "cmp002")
    r1, r2 = node_request(e1), node_request(e2)
    assert (r1.flavor, r1.method, r1.vcpus) == ("m1.large", "openstack", None)
    assert (r2.flavor, r2.method, r2.vcpus, r2.memory_mib) == (None, "libvirt", 4, 8192)
    assert (r1.pods, r2.pods) == (("default/p-w1",), ("default/p-w2",))  # each verifies only its own share


@pytest.mark.parametrize(("entry_status", "run_status", "want"), [
    ("done", None, "skip"), ("done", "interrupted", "skip"),
    ("pending", None, "start"), ("running", None, "start"), ("running", "refused", "start"),
    ("running", "done", "done"), ("running", "failed", "failed"), ("running", "verify-failed", "failed"),
    ("running", "interrupted", "resume"), ("running", "running", "resume"), ("attention", "needs-attention", "resume"),
    ("attention", None, "start"),
])
def test_resume_decisions(entry_status, run_status, want):
    assert resume_decision({"status": entry_status}, run_status) == want


def _killed_fleet(state, plan, inp, node_run_status: str | None) -> FleetJournal:
    """A fleet journal as a kill leaves it: w1 done, w2 running with its scale-up run (journal `node_run_status`)."""
    fleet = Fleet(_session(state), plan, inp)
    j = FleetJournal.create_fleet(fleet.plan_doc, fleet.entries, {"parallel": 1, "max_unavailable": 1},
                                  cluster=CLUSTER, run_id=fleet.fleet_id)
    j.mark_node("w1", "done", run_id="scale-up-w1-20261202T000000-0000", exit_code=0)
    run_id = None
    if node_run_status:
        nj = Journal.create("scale-up", "w2", {}, [{"id": "a", "title": "A"}], cluster=CLUSTER)
        nj.finish(node_run_status)
        run_id = nj.run_id
    j.mark_node("w2", "running", run_id=run_id)
    return j


def test_a_rerun_resumes_the_running_node_through_its_run_and_never_repeats_a_done_one(state):
    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "openstack", "cmp001"), ("w3", "openstack", "cmp002"))
    killed = _killed_fleet(state, plan, inp, "interrupted")
    w2_run = killed.node("w2")["run_id"]
    s = _session(state)
    fleet = Fleet(s, None, inp)  # no new plan: the recorded one is carried out
    assert fleet.resuming and fleet.fleet_id == killed.run_id
    result = fleet.run(lambda e: None, threading.Event())
    assert result.status == "done", result.message
    assert s.planned == [("w2", w2_run), ("w3", None)]  # w1 not even planned


def test_a_node_whose_run_ended_while_the_fleet_was_not_looking_is_not_run_again(state):
    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "openstack", "cmp001"))
    _killed_fleet(state, plan, inp, "done")
    s = _session(state)
    result = Fleet(s, plan, inp).run(lambda e: None, threading.Event())
    assert result.status == "done" and s.planned == [] and s.ran == []


def test_a_new_plan_given_to_a_rerun_is_not_used_and_the_difference_is_said(state):
    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "openstack", "cmp001"))
    _killed_fleet(state, plan, inp, None)
    other, inp2 = _plan(("w2", "openstack", "cmp001"))
    fleet = Fleet(_session(state), other, inp2)
    assert fleet.resuming and fleet.plan_differs and [e["node"] for e in fleet.entries] == ["w1", "w2"]
    assert not same_plan(plan.to_json(), other.to_json()) and same_plan(plan.to_json(), plan.to_json())


def test_the_first_failure_stops_the_fleet(state):
    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "openstack", "cmp001"))
    s = _session(state, outcomes={"w1": "failed"})
    result = Fleet(s, plan, inp).run(lambda e: None, threading.Event())
    assert (result.status, result.exit_code) == ("failed", 1) and s.ran == ["w1"]
    doc = FleetJournal.load_fleet(result.fleet_id).doc
    assert [n["status"] for n in doc["nodes"]] == ["failed", "pending"] and doc["status"] == "failed"
    assert FleetJournal.unfinished_fleets() == []  # a failed fleet is not resumed


def test_a_pdb_blocking_the_next_drain_stops_before_that_node_after_the_earlier_ones(state, monkeypatch):
    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "openstack", "cmp001"), ("w3", "openstack", "cmp001"))
    monkeypatch.setattr(fleet_checks, "pdb_blocked", lambda api, node: ["default/db-0 (PodDisruptionBudget "
                                                                        "default/db allows no disruption now)"]
                        if node == "w2" else [])
    s = _session(state)
    result = Fleet(s, plan, inp).run(lambda e: None, threading.Event())
    assert (result.status, result.exit_code) == ("needs-attention", 4)
    assert s.planned == [("w1", None)] and s.ran == ["w1"]  # w2 never planned, never run
    assert "default/db-0" in result.message and "its VM untouched" in result.message
    doc = FleetJournal.load_fleet(result.fleet_id).doc
    assert [n["status"] for n in doc["nodes"]] == ["done", "attention", "pending"]
    assert [j.run_id for j in FleetJournal.unfinished_fleets()] == [result.fleet_id]  # resumable once fixed


def test_max_unavailable_counts_the_cluster_and_stops_before_the_next_node(state, monkeypatch):
    plan, inp = _plan(("w1", "openstack", "cmp001"))
    monkeypatch.setattr(fleet_checks, "unavailable_nodes", lambda api: {"w9": "NotReady"})
    s = _session(state)
    result = Fleet(s, plan, inp, max_unavailable=1).run(lambda e: None, threading.Event())
    assert (result.status, result.exit_code) == ("needs-attention", 4) and s.ran == []
    assert "w9 (NotReady)" in result.message and "--max-unavailable 1" in result.message
    assert Fleet(_session(state), None, inp, max_unavailable=2).run(lambda e: None, threading.Event()).status == "done"


def test_read_only_refuses_before_any_journal_or_audit_record(state):
    plan, inp = _plan(("w1", "openstack", "cmp001"))
    s = _session(state, read_only=True)
    result = Fleet(s, plan, inp).run(lambda e: None, threading.Event())
    assert (result.status, result.exit_code, result.refusal) == ("refused", 2, "read-only")
    assert s.ran == [] and not (state / "console" / "runbooks").exists() and s.guard.audit.entries() == []


def test_a_stop_request_before_a_node_leaves_the_fleet_resumable(state):
    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "openstack", "cmp001"))
    stop = threading.Event()
    s = _session(state, on_run=lambda node: stop.set())
    result = Fleet(s, plan, inp).run(lambda e: None, stop)
    assert (result.status, result.exit_code) == ("interrupted", 4) and s.ran == ["w1"]
    assert [j.run_id for j in FleetJournal.unfinished_fleets()] == [result.fleet_id]


def test_parallel_never_runs_two_nodes_of_one_hypervisor_at_once(state):
    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "openstack", "cmp001"), ("w3", "openstack", "cmp002"))
    lock = threading.Lock()
    now: dict[str, str] = {}
    seen: list[set[str]] = []
    w3_started = threading.Event()
    hosts = {"w1": "cmp001", "w2": "cmp001", "w3": "cmp002"}

    def on_run(node: str) -> None:
        with lock:
            now[node] = hosts[node]
            seen.append(set(now))
        if node == "w3":
            w3_started.set()
        if node == "w1":
            assert w3_started.wait(10), "w3 (another hypervisor) did not run beside w1"
        with lock:
            now.pop(node)

    s = _session(state, on_run=on_run)
    result = Fleet(s, plan, inp, parallel=2, max_unavailable=3).run(lambda e: None, threading.Event())
    assert result.status == "done", result.message
    assert sorted(s.ran) == ["w1", "w2", "w3"]
    assert {"w1", "w3"} in seen
    assert not any({"w1", "w2"} <= names for names in seen)


def test_no_node_to_grow_is_not_a_fleet(state):
    plan = Plan((), {"default/a": "w1"}, (), 0.0, True)
    with pytest.raises(FleetError, match="grows no node"):
        Fleet(_session(state), plan, PlanInput((), ()))


def test_blocking_budgets_and_placement_problems():
    pod = {"metadata": {"namespace": "db", "name": "db-0", "labels": {"app": "db"}}}
    pdb = {"metadata": {"namespace": "db", "name": "db-pdb"}, "spec": {"selector": {"matchLabels": {"app": "db"}}},
           "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1}}
    other_ns = copy_with(pdb, namespace="web")
    allows = copy_with(pdb, allowed=1)
    assert fleet_checks.blocking_budgets([pod], [pdb]) == [
        "db/db-0 (PodDisruptionBudget db/db-pdb allows no disruption now: 1 healthy, 1 needed)"]
    assert fleet_checks.blocking_budgets([pod], [other_ns, allows]) == []
    running = {"spec": {"nodeName": "w1"}, "status": {"phase": "Running"}}
    assert fleet_checks.placement_problem(running, "w1") == (True, "")
    assert fleet_checks.placement_problem(running, "w2") == (True, "runs on w1, not on w2")
    assert fleet_checks.placement_problem({"spec": {}, "status": {"phase": "Pending"}}, "w1") == (False,
                                                                                                  "still Pending")
    assert fleet_checks.placement_problem(None, "w1") == (True, "deleted")


def copy_with(pdb: dict, namespace: str | None = None, allowed: int | None = None) -> dict:
    import copy

    out = copy.deepcopy(pdb)
    if namespace:
        out["metadata"]["namespace"] = namespace
    if allowed is not None:
        out["status"]["disruptionsAllowed"] = allowed
    return out


def _pod(name: str, node: str = "", phase: str = "Pending", owner: str = "job-1") -> dict:
    refs = [{"kind": "Job", "name": "train", "uid": owner, "controller": True}] if owner else []
    return {"metadata": {"namespace": "default", "name": name, "ownerReferences": refs},
            "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}


def test_interchangeable_pods_fill_each_others_planned_slots():
    """The scheduler picks which of a Job's equal pods lands first (PrioritySort), not the plan: swapped pods of
    one controller are as planned; a pod planned on a node that got none of them is not."""
    plan = {"default/t-a": "w1", "default/t-b": "w2"}
    swapped = {"default/t-a": _pod("t-a", "w2", "Running"), "default/t-b": _pod("t-b", "w1", "Running")}
    assert [(r["ok"], r["instead"]) for r in fleet_checks.placement_results(plan, swapped)] == [
        (True, "default/t-b"), (True, "default/t-a")]
    one_short = {"default/t-a": _pod("t-a", "w2", "Running"), "default/t-b": _pod("t-b")}
    res = {r["pod"]: r for r in fleet_checks.placement_results(plan, one_short)}
    assert res["default/t-b"]["ok"] and res["default/t-b"]["instead"] == "default/t-a"
    assert not res["default/t-a"]["ok"] and res["default/t-a"]["why"] == "runs on w2, not on w1"
    bare = {"default/t-a": _pod("t-a", "w2", "Running", owner=""),
            "default/t-b": _pod("t-b", "w1", "Running", owner="")}
    assert [r["ok"] for r in fleet_checks.placement_results(plan, bare)] == [False, False]  # bare pods never swap


def test_a_node_runs_share_is_met_by_a_twin_that_was_pending_with_it():
    from console.runbook.verify import share_problems

    twin = _pod("t-b", "w1", "Running")
    assert share_problems("w1", ["default/t-a"], {"default/t-a": _pod("t-a")}, [twin], {"default/t-b"}) == []
    # a pod of the same controller that was not Pending when the run planned is no stand-in
    assert share_problems("w1", ["default/t-a"], {"default/t-a": _pod("t-a")}, [twin], set()) == [
        "default/t-a still Pending"]
    other = _pod("x", "w1", "Running", owner="rs-9")
    assert share_problems("w1", ["default/t-a"], {"default/t-a": _pod("t-a")}, [other], {"default/x"}) == [
        "default/t-a still Pending"]
    assert share_problems("w1", ["default/t-a"], {"default/t-a": None}, [], set()) == ["default/t-a was deleted"]


def test_a_node_takes_the_pending_twin_of_its_planned_pod_that_an_earlier_node_took():
    placements = {"default/t-a": "w1", "default/t-b": "w2", "default/t-c": "w3"}
    pods = {"default/t-a": _pod("t-a"), "default/t-b": _pod("t-b", "w1", "Running"), "default/t-c": _pod("t-c")}
    # w1 is done and took t-b: w2 is for t-a (its twin, planned on the done w1), not for the running t-b
    assert fleet_checks.node_share(["default/t-b"], placements, pods, {"w1"}) == ["default/t-a"]
    assert fleet_checks.node_share(["default/t-c"], placements, pods, {"w1"}) == ["default/t-c"]
    assert fleet_checks.node_share(["default/t-b"], placements, pods, set()) == ["default/t-b"]  # no done twin
