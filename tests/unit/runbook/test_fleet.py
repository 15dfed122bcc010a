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
from console.runbook import fleet_checks, placement
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
    refusals: dict[str, Exception] = field(default_factory=dict)  # node → what its (non-dry-run) plan raises

    def plan(self, request: Any, *, resume: str | None = None, new: bool = False, dry_run: bool = False):
        if not dry_run:
            self.planned.append((request.node, resume))
            if request.node in self.refusals:
                raise self.refusals[request.node]
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
    monkeypatch.setattr(fleet_checks, "verify_placements", lambda api, placements, timeout, stop=None, candidates=():
                        placement.report(placements, {p: _pod(p.split("/")[1], n, "Running", owner="")
                                                      for p, n in placements.items()}))
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
    assert result.message == ("scaled up w1, w2; default/p-w1 Running on w1; default/p-w2 Running on w2")
    assert result.this_run == {"scaled_up": ["w1", "w2"], "resumed": [], "done_before": []}
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
    hosts = {"w1": "cmp001", "w2": "cmp001", "w3": "cmp002"}
    # w3 and the first cmp001 node wait for each other: both run at once, whichever thread is scheduled first
    # (a wait on w3 alone let w3 run and finish before w1 began, on a loaded machine)
    together = threading.Barrier(2, timeout=10)
    first_cmp001: list[str] = []

    def on_run(node: str) -> None:
        with lock:
            now[node] = hosts[node]
            seen.append(set(now))
            meets = node == "w3" or not first_cmp001
            if hosts[node] == "cmp001" and not first_cmp001:
                first_cmp001.append(node)
        if meets:
            together.wait()  # BrokenBarrierError: the other hypervisor's node did not run beside this one
            with lock:
                seen.append(set(now))
        with lock:
            now.pop(node)

    s = _session(state, on_run=on_run)
    result = Fleet(s, plan, inp, parallel=2, max_unavailable=3).run(lambda e: None, threading.Event())
    assert result.status == "done", result.message
    assert sorted(s.ran) == ["w1", "w2", "w3"]
    assert {first_cmp001[0], "w3"} in seen
    assert not any({"w1", "w2"} <= names for names in seen)


def test_no_node_to_grow_is_not_a_fleet(state):
    plan = Plan((), {"default/a": "w1"}, (), 0.0, True)
    with pytest.raises(FleetError, match="grows no node"):
        Fleet(_session(state), plan, PlanInput((), ()))


def test_blocking_budgets():
    pod = {"metadata": {"namespace": "db", "name": "db-0", "labels": {"app": "db"}}}
    pdb = {"metadata": {"namespace": "db", "name": "db-pdb"}, "spec": {"selector": {"matchLabels": {"app": "db"}}},
           "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1}}
    other_ns = copy_with(pdb, namespace="web")
    allows = copy_with(pdb, allowed=1)
    assert fleet_checks.blocking_budgets([pod], [pdb]) == [
        "db/db-0 (PodDisruptionBudget db/db-pdb allows no disruption now: 1 healthy, 1 needed)"]
    assert fleet_checks.blocking_budgets([pod], [other_ns, allows]) == []


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


def test_a_node_takes_the_pending_twin_of_its_planned_pod_that_an_earlier_node_took():
    placements = {"default/t-a": "w1", "default/t-b": "w2", "default/t-c": "w3"}
    pods = {"default/t-a": _pod("t-a"), "default/t-b": _pod("t-b", "w1", "Running"), "default/t-c": _pod("t-c")}
    # w1 is done and took t-b: w2 is for t-a (its twin, planned on the done w1), not for the running t-b
    assert fleet_checks.node_share(["default/t-b"], placements, pods, {"w1"}) == ["default/t-a"]
    assert fleet_checks.node_share(["default/t-c"], placements, pods, {"w1"}) == ["default/t-c"]
    assert fleet_checks.node_share(["default/t-b"], placements, pods, set()) == ["default/t-b"]  # no done twin


def _all_done_fleet(state, plan, inp) -> FleetJournal:
    """A fleet journal as a kill after its last node leaves it: every node done, the fleet still "running" (the
    final verify had not ended)."""
    fleet = Fleet(_session(state), plan, inp)
    j = FleetJournal.create_fleet(fleet.plan_doc, fleet.entries, {"parallel": 1, "max_unavailable": 1},
                                  cluster=CLUSTER, run_id=fleet.fleet_id)
    for i, e in enumerate(fleet.entries):
        j.mark_node(e["node"], "done", run_id=f"scale-up-{e['node']}-20261202T000000-{i:04x}", exit_code=0)
    return j


def test_a_resumed_fleet_that_changed_nothing_says_so_not_what_earlier_runs_did(state):
    """Issue 20 point 9: a rerun of a fleet whose nodes were all done said "scaled up w1, w2"; it scaled up
    nothing. The summary says what this invocation did, and the fleet's nodes done by earlier runs apart."""
    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "openstack", "cmp001"))
    killed = _all_done_fleet(state, plan, inp)
    s = _session(state)
    result = Fleet(s, None, inp).run(lambda e: None, threading.Event())
    assert (result.status, result.exit_code, result.fleet_id) == ("done", 0, killed.run_id)
    assert s.planned == [] and s.ran == []
    assert "scaled up w1" not in result.message
    assert result.message.startswith(f"this run changed nothing: w1, w2 were scaled up by an earlier run of fleet "
                                     f"{killed.run_id}; ")
    assert result.this_run == {"scaled_up": [], "resumed": [], "done_before": ["w1", "w2"]}


def test_a_resumed_fleet_names_the_node_it_resumed_and_those_done_before(state):
    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "openstack", "cmp001"), ("w3", "openstack", "cmp002"))
    _killed_fleet(state, plan, inp, "interrupted")
    result = Fleet(_session(state), None, inp).run(lambda e: None, threading.Event())
    assert result.status == "done", result.message
    assert result.this_run == {"scaled_up": ["w2", "w3"], "resumed": ["w2"], "done_before": ["w1"]}
    assert result.message.startswith("scaled up w2 (its run resumed), w3; w1 was scaled up by an earlier run")


def _held(node: str, tmp_path) -> Exception:
    """What Session.plan raises while another run holds `node`'s Lease (Session.check_node_free: RunLock.check's
    LockError as a SessionError)."""
    from datetime import UTC, datetime

    from console.kube.leases import Lease
    from console.runbook.lock import RunLock
    from console.runbook.session import SessionError

    now = datetime.now(UTC)
    lease = Lease.from_api({"metadata": {"namespace": "default", "name": f"console-scale-up-{node}"},
                            "spec": {"holderIdentity": f"ann@bastion2/scale-up-{node}-20261202T000000-beef",
                                     "leaseDurationSeconds": 60, "renewTime": now.isoformat()}})
    e = RunLock(None, node, f"scale-up-{node}-20261202T000001-0000", namespace="default", resuming=False,
                journal_dir=tmp_path)._refusal(lease, now)
    return SessionError(str(e), e.details)


def test_a_node_held_by_another_run_is_refused_as_scale_up_refuses_it(state, tmp_path):
    """Issue 20 point 9: a fleet meeting a node another run holds exited 4 (needs attention) where `scale-up` of
    that node exits 2 (refused before any change on it; README "Exit codes"). Same code, same JSON kind; the
    fleet stays resumable once that run ends."""
    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "openstack", "cmp001"))
    s = _session(state, refusals={"w2": _held("w2", tmp_path)})
    result = Fleet(s, plan, inp).run(lambda e: None, threading.Event())
    assert (result.status, result.exit_code, result.refusal) == ("refused", 2, "held")
    assert s.ran == ["w1"] and "w2 is being scaled up by ann@bastion2/" in result.message
    assert "nothing was changed on w2" in result.message and "--resume " + result.fleet_id in result.message
    doc = FleetJournal.load_fleet(result.fleet_id).doc
    assert [n["status"] for n in doc["nodes"]] == ["done", "pending"]
    assert [j.run_id for j in FleetJournal.unfinished_fleets()] == [result.fleet_id]  # resumable once it ends


def test_the_first_node_held_refuses_the_fleet_before_any_change(state, tmp_path):
    plan, inp = _plan(("w1", "openstack", "cmp001"))
    s = _session(state, refusals={"w1": _held("w1", tmp_path)})
    result = Fleet(s, plan, inp).run(lambda e: None, threading.Event())
    assert (result.status, result.exit_code, result.refusal) == ("refused", 2, "held") and s.ran == []
    assert "nothing was changed" in result.message


def test_a_fleet_another_process_is_running_is_refused_as_held(state):
    """Another process took the fleet's journal lock between this one's preview and its run (two admins applying
    at once): refused, exit 2, kind "held" — a result the TUI shows like the headless run, not a worker error."""
    from console.runbook.journal import runbooks_dir
    from console.runbook.journal_lock import JournalLock

    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "openstack", "cmp001"))
    killed = _killed_fleet(state, plan, inp, "interrupted")
    s = _session(state)
    fleet = Fleet(s, None, inp)
    with JournalLock(runbooks_dir(), killed.run_id):  # the other process's hold (a flock of its own)
        result = fleet.run(lambda e: None, threading.Event())
    assert (result.status, result.exit_code, result.refusal) == ("refused", 2, "held") and s.ran == []
    assert "in progress in another process" in result.message


def test_read_only_met_mid_fleet_names_its_kind_as_at_the_start(state):
    """A node run the Guard refuses mid-fleet (read-only switched on between nodes) ends the fleet "refused", exit
    2, with the Guard's kind in the result (`-o json` "error"), as a refusal before the first node has it."""
    from console.guard import ReadOnly

    def refuse(node: str) -> None:
        if node == "w2":
            raise ReadOnly(f"scale-up of {node}")

    plan, inp = _plan(("w1", "openstack", "cmp001"), ("w2", "openstack", "cmp001"))
    result = Fleet(_session(state, on_run=refuse), plan, inp).run(lambda e: None, threading.Event())
    assert (result.status, result.exit_code, result.refusal) == ("refused", 2, "read-only")
