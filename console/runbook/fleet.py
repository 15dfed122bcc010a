"""The fleet runbook: a capacity plan (console/planner/model.Plan) carried out one node at a time.

Each node's change is the existing scale-up runbook, unchanged: `Session.plan` then `Session.run` with a
ScaleUpRequest of the planned flavor (OpenStack) or vCPUs + memory (libvirt), so its preflight, drain rules,
Lease, journal and audit records are the scale-up's. The fleet adds its own journal
(console/runbook/fleet_journal.py: the plan, each node's status and its scale-up run id), owned by one process
(journal_lock.JournalLock), and these rules:

- before each node: stop when `max_unavailable` nodes would be unavailable (NotReady or cordoned, the node about
  to start and the fleet's running nodes counted: console/runbook/fleet_checks.py), and stop "needs attention"
  when a PodDisruptionBudget would refuse the eviction of one of its pods now — before it is cordoned or its
  VM touched;
- the first node that does not end done stops the fleet (with `parallel` > 1 the running ones finish first);
- `parallel` N runs up to N nodes at once, never two on one hypervisor (a VM whose host is unknown runs alone);
- a rerun continues an unfinished fleet from its journal, never re-plans: a done node is never run again; the
  node that was running is resumed through its own scale-up journal (Session.plan finds it), or found done;
- at the end every planned node must run the pods the plan put there, counted per controller (pods of one Job or
  ReplicaSet are interchangeable: fleet_checks.verify_placements, console/runbook/placement.py), else
  "verify-failed"; the report names the node each pod runs on and every planned pod not counted with why (still
  Pending with the scheduler's reason, running elsewhere, deleted);
- the summary says what this invocation did (the nodes it scaled up, the runs it resumed) apart from the nodes
  earlier runs of the fleet had done: a rerun that found every node done says it changed nothing.

Exit codes are the scale-up's (engine.EXIT_*): 0 done and verified, 1 failed (left safe), 2 refused (read-only,
audit log unwritable, journal fault, another run holds a node or the fleet: JSON error "held", as `scale-up`
says it — the fleet stays resumable), 3 verify failed, 4 needs attention or interrupted.

The fleet's own audit records: one intent before a run of the fleet starts or resumes (action
"runbook.fleet", target "fleet/<id>"), one outcome when that run ends, beside the node runs' records.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from console.guard import GuardRefusal
from console.runbook.engine import EXIT_ATTENTION, EXIT_DONE, EXIT_FAILED, EXIT_USAGE, EXIT_VERIFY, RunEvent
from console.runbook.fleet_journal import FleetJournal, FleetJournalError, new_fleet_id, node_entry
from console.runbook.journal_lock import HELD, JournalBusy, JournalLock
from console.runbook.scaleup import PlanRefused, ScaleUpRequest

if TYPE_CHECKING:
    from console.planner.model import Plan, PlanInput
    from console.runbook.session import Session

EXIT_BY_NODE = {"done": EXIT_DONE, "failed": EXIT_FAILED, "attention": EXIT_ATTENTION}


class FleetError(Exception):
    """The fleet cannot start or resume (a journal fault, another process owns it, a node plan refused);
    nothing was changed. `details`: machine-readable facts for `-o json`."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


class NothingToDo(FleetError):
    """The plan grows no node and no fleet run is unfinished."""


@dataclass(frozen=True)
class FleetEvent:
    fleet_id: str
    kind: str  # node-start | step | node-done | node-failed | verify | done
    node: str = ""
    message: str = ""
    run_event: RunEvent | None = None


@dataclass
class FleetResult:
    fleet_id: str
    status: str  # done | failed | needs-attention | interrupted | verify-failed | refused
    exit_code: int
    message: str
    journal_path: str
    nodes: list[dict[str, Any]]
    verify: list[dict[str, Any]] = field(default_factory=list)
    elapsed: float = 0.0
    refusal: str = ""  # refused: the kind (read-only, audit-unwritable: the Guard's; held: another run)
    # what this invocation did: scaled_up (nodes it ran to done, resumed runs included), resumed (of those, the
    # nodes whose unfinished run it continued), done_before (done by earlier runs of the fleet)
    this_run: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeOutcome:
    status: str  # done | failed | attention | interrupted | refused
    exit_code: int
    message: str
    run_id: str | None = None
    error: str = ""  # refused: the kind (the Guard's, or HELD)


def held(err: Exception) -> bool:
    """Was a node's scale-up refused because another run holds the node (its Lease) or its journal?"""
    return (getattr(err, "details", None) or {}).get("error") == HELD


def entries_from_plan(plan: Plan, inp: PlanInput | None) -> list[dict[str, Any]]:
    """The fleet journal's node list for `plan` (hosts from the plan input's VMs: the parallel rule)."""
    hosts = {n.name: n.vm.host for n in (inp.nodes if inp else ()) if n.vm is not None}
    return [node_entry(c.node, c.vm, c.method, hosts.get(c.node, ""), c.to_size.flavor or None, c.to_size.vcpus,
                       c.to_size.memory_mib, c.pods) for c in plan.nodes]


def node_request(entry: dict[str, Any], pods: list[str] | None = None) -> ScaleUpRequest:
    """The scale-up of one fleet node: the flavor for a Nova resize, vCPUs + memory for a libvirt one; it counts
    and verifies only the pods the plan puts on this node (`pods`, default the entry's: the others are other
    nodes' share)."""
    share = tuple(entry["pods"] if pods is None else pods)
    if entry["method"] == "openstack":
        return ScaleUpRequest(node=entry["node"], flavor=entry["flavor"], method="openstack", pods=share)
    return ScaleUpRequest(node=entry["node"], vcpus=entry["vcpus"], memory_mib=entry["memory_mib"], method="libvirt",
                          pods=share)


def resume_decision(entry: dict[str, Any], run_status: str | None) -> str:
    """What a (re)run of the fleet does with one node (pure): "skip" (done before), "done" / "failed" (its
    scale-up run ended that way while the fleet was not looking), "resume" (its scale-up run is unfinished:
    continue it through its journal) or "start" (plan it now; an unfinished scale-up journal of the node is
    still found and resumed by Session.plan). `run_status`: the status of its recorded run's journal (None: no
    run recorded, or no journal of it)."""
    if entry["status"] == "done":
        return "skip"
    if run_status is None or run_status == "refused":  # refused: the Guard stopped it before any change
        return "start"
    if run_status == "done":
        return "done"
    if run_status in ("failed", "verify-failed", "reverted"):
        return "failed"
    return "resume"  # running | needs-attention | interrupted


def same_plan(recorded: dict[str, Any], new: dict[str, Any]) -> bool:
    """Do two plans (Plan.to_json) grow the same nodes to the same sizes and place the same pods?"""
    def key(p: dict[str, Any]) -> tuple[Any, ...]:
        return (tuple((n["node"], n["method"], tuple(sorted(n["to"].items()))) for n in p.get("nodes") or []),
                tuple(sorted((p.get("placements") or {}).items())))

    return key(recorded) == key(new)


class Fleet:
    """A fleet run of `plan`, or the unfinished one to resume (`resume`: its id; else the newest unfinished fleet
    of this cluster, when there is one). Reads only until `run`."""

    def __init__(self, session: Session, plan: Plan | None, inp: PlanInput | None = None, *,
                 resume: str | None = None, parallel: int = 1, max_unavailable: int = 1,
                 pods_timeout: float = 60.0, session_factory: Callable[[], Session] | None = None) -> None:
        from console.runbook.identity import cluster_problem

        self.session, self.parallel, self.max_unavailable = session, max(1, parallel), max(1, max_unavailable)
        self.pods_timeout = pods_timeout
        self.session_factory = session_factory
        self._lock = threading.Lock()
        try:
            if resume:
                journal: FleetJournal | None = FleetJournal.load_fleet(resume)
                assert journal is not None
                if journal.doc["status"] not in ("running", "needs-attention", "interrupted"):
                    raise FleetJournalError(f"fleet {resume} is {journal.doc['status']}; nothing to resume "
                                            f"(journal {journal.path})", journal.path)
            else:
                found = FleetJournal.unfinished_fleets()
                journal = found[-1] if found else None
        except FleetJournalError as e:
            raise FleetError(str(e), {"error": "journal", "journal": str(e.path or "")}) from e
        if journal is not None:
            why = cluster_problem(journal.doc["cluster"], session.cluster)
            if why:
                raise FleetError(f"fleet journal {journal.path} {why}", {"error": "journal",
                                                                        "journal": str(journal.path)})
            try:
                JournalLock(journal.path.parent, journal.run_id).check()
            except JournalBusy as e:
                raise FleetError(str(e), e.details) from e
        if journal is None and (plan is None or not plan.nodes):
            raise NothingToDo("the plan grows no node: nothing to carry out" if plan is not None
                              else "no plan to carry out and no unfinished fleet run to resume")
        self.journal = journal
        self.resuming = journal is not None
        self.plan_doc: dict[str, Any] = journal.doc["plan"] if journal else plan.to_json()  # type: ignore[union-attr]
        self.entries: list[dict[str, Any]] = journal.doc["nodes"] if journal else entries_from_plan(plan, inp)  # type: ignore[arg-type]
        self.fleet_id = journal.run_id if journal else new_fleet_id()
        # the rerun's plan, when it is not the recorded one: the recorded one is carried out (never re-planned)
        self.plan_differs = bool(journal and plan is not None and not same_plan(journal.doc["plan"], plan.to_json()))
        # node → what this invocation did with it: scaled_up | resumed (its unfinished run, to done) | done_before
        # (done by an earlier run of the fleet) | at_size (found at its planned size: nothing to do)
        self.did: dict[str, str] = {}

    # -- preview -------------------------------------------------------------------------------------------

    def preview(self) -> list[tuple[dict[str, Any], Any]]:
        """Each node and its scale-up plan (ScaleUpPlan; None for a node done before). FleetError when a node's
        run would be refused now (its plan, its drain, missing permissions, another run holding it): nothing is
        changed."""
        from console.runbook.session import SessionError, plan_action

        out: list[tuple[dict[str, Any], Any]] = []
        for e in self.entries:
            if e["status"] == "done":
                out.append((e, None))
                continue
            try:
                run_id = self._resumable_run(e)
                pods = None if run_id else self._share(self.session, e)
                plan, _ = self.session.plan(node_request(e, pods), resume=run_id, dry_run=True)
                if not plan.nothing_to_do:
                    self.session.check_permissions(plan_action(plan))
            except (PlanRefused, SessionError) as err:
                from console.faults import is_fault

                if is_fault(err):
                    raise
                raise FleetError(f"{e['node']}: {err}", {"error": "plan-refused"} | getattr(err, "details", {})
                                 | {"node": e["node"]}) from err
            out.append((e, plan))
        return out

    def _share(self, session: Session, e: dict[str, Any]) -> list[str]:
        """The pods node `e`'s scale-up is for if it started now (fleet_checks.node_share)."""
        from console.runbook import fleet_checks

        placements = self.plan_doc.get("placements") or {}
        return fleet_checks.node_share(e["pods"], placements, fleet_checks.read_pods(session.api, placements),
                                       {n["node"] for n in self.entries if n["status"] == "done"})

    def _resumable_run(self, e: dict[str, Any]) -> str | None:
        return e["run_id"] if resume_decision(e, _run_status(e["run_id"])) == "resume" else None

    # -- run -----------------------------------------------------------------------------------------------

    def run(self, on_event: Callable[[FleetEvent], object], stop: threading.Event) -> FleetResult:
        t0 = time.monotonic()
        guard = self.session.guard
        try:
            guard.check(f"fleet run {self.fleet_id}")
        except GuardRefusal as e:
            return self._result("refused", EXIT_USAGE, f"{e}; nothing was changed", t0, refusal=e.kind)
        directory = self.journal.path.parent if self.journal else None
        from console.runbook.journal import runbooks_dir

        lock = JournalLock(directory or runbooks_dir(), self.fleet_id)
        try:
            lock.acquire()
        except JournalBusy as e:  # another process took it since this one looked: refused, as scale-up refuses
            return self._result("refused", EXIT_USAGE, f"{e}; nothing was changed", t0, refusal=HELD)
        try:
            todo = [e["node"] for e in self.entries if e["status"] != "done"]
            self.did = {e["node"]: "done_before" for e in self.entries if e["status"] == "done"}
            try:
                intent = guard.intent("runbook.fleet", f"fleet/{self.fleet_id}",
                                      what=f"{'resume of ' if self.resuming else ''}fleet run {self.fleet_id}",
                                      before={"nodes": todo, "plan_cost": self.plan_doc.get("cost")},
                                      detail=f"scale up {', '.join(todo) or 'nothing'} (fleet run {self.fleet_id})",
                                      run_id=self.fleet_id)
            except GuardRefusal as e:
                return self._result("refused", EXIT_USAGE, f"{e}; nothing was changed", t0, refusal=e.kind)
            if self.journal is None:
                self.journal = FleetJournal.create_fleet(
                    self.plan_doc, self.entries, {"parallel": self.parallel, "max_unavailable": self.max_unavailable},
                    cluster=self.session.cluster, run_id=self.fleet_id)
                self.entries = self.journal.doc["nodes"]
            else:
                self.journal.doc["params"] = {"parallel": self.parallel, "max_unavailable": self.max_unavailable}
                self.journal.finish("running", "")
            result = self._run(on_event, stop, t0)
            touched = any(e["status"] != "pending" for e in self.entries)
            # refused mid-fleet (read-only switched on, audit log full): resumable once fixed, like a node run's
            self.journal.finish("needs-attention" if result.status == "refused" and touched else result.status,
                                result.message)
            outcome = "ok" if result.status == "done" else "error"
            try:
                guard.outcome(intent, "runbook.fleet", f"fleet/{self.fleet_id}", what=f"fleet run {self.fleet_id}",
                              after={"status": result.status, "nodes": {e["node"]: e["status"] for e in self.entries}},
                              result=outcome, detail=f"fleet run {self.fleet_id}: {result.status}",
                              error="" if outcome == "ok" else result.message[:500], run_id=self.fleet_id)
            except GuardRefusal as e:  # the nodes' own records are written; only the fleet's summary is missing
                result.message += f" ({e})"
            on_event(FleetEvent(self.fleet_id, "done", "", result.message or result.status))
            return result
        finally:
            lock.release()

    def _run(self, on_event: Callable[[FleetEvent], object], stop: threading.Event, t0: float) -> FleetResult:
        stopped = self._carry_out(on_event, stop)
        if stopped is not None:
            status = {"attention": "needs-attention"}.get(stopped.status, stopped.status)
            return self._result(status, stopped.exit_code, stopped.message, t0, refusal=stopped.error)
        on_event(FleetEvent(self.fleet_id, "verify", "", "verifying that the planned nodes run the planned pods"))
        from console.runbook import fleet_checks

        placements = self.plan_doc.get("placements") or {}
        candidates = {p for e in self.entries for p in _run_candidates(e["run_id"])}
        report = fleet_checks.verify_placements(self.session.api, placements, self.pods_timeout, stop, candidates)
        checked = report.to_dicts()
        self.journal.doc["verify"] = checked  # type: ignore[union-attr]
        said = report.texts()
        for line in said:
            on_event(FleetEvent(self.fleet_id, "verify", "", line))
        if not report.ok:
            bad = [g.text() for g in report.groups if not g.ok]
            return self._result("verify-failed", EXIT_VERIFY, f"{self._this_run_text()}; not as planned: "
                                + "; ".join(bad), t0, checked)
        return self._result("done", EXIT_DONE, "; ".join([self._this_run_text(), *said]), t0, checked)

    def _this_run(self) -> dict[str, list[str]]:
        """What this invocation did (FleetResult.this_run); done_before: also a node found at its planned size."""
        order = [e["node"] for e in self.entries]

        def did(*what: str) -> list[str]:
            return [n for n in order if self.did.get(n) in what]

        return {"scaled_up": did("scaled_up", "resumed"), "resumed": did("resumed"),
                "done_before": did("done_before", "at_size")}

    def _this_run_text(self) -> str:
        """What this invocation changed, apart from what earlier runs of the fleet (or someone else) had done."""
        def were(nodes: list[str]) -> str:
            return f"{', '.join(nodes)} {'was' if len(nodes) == 1 else 'were'}"

        mine = self._this_run()
        earlier = [n for n in mine["done_before"] if self.did[n] == "done_before"]
        at_size = [n for n in mine["done_before"] if self.did[n] == "at_size"]
        others = [f"{were(earlier)} scaled up by an earlier run" + ("" if mine["scaled_up"] else
                                                                    f" of fleet {self.fleet_id}")] if earlier else []
        others += [f"{were(at_size)} already at the planned size"] if at_size else []
        if not mine["scaled_up"]:
            return "this run changed nothing" + (f": {'; '.join(others)}" if others else "")
        ran = ", ".join(n + (" (its run resumed)" if n in mine["resumed"] else "") for n in mine["scaled_up"])
        return "; ".join([f"scaled up {ran}", *others])

    def _result(self, status: str, code: int, message: str, t0: float, verify: list[dict[str, Any]] | None = None,
                refusal: str = "") -> FleetResult:
        return FleetResult(self.fleet_id, status, code, message, str(self.journal.path) if self.journal else "",
                           self.entries, verify or [], time.monotonic() - t0, refusal, self._this_run())

    def _carry_out(self, on_event: Callable[[FleetEvent], object], stop: threading.Event) -> NodeOutcome | None:
        """Run the nodes not done yet; the outcome that stopped the fleet (None: every node done)."""
        todo = [e for e in self.entries if e["status"] != "done"]
        if self.parallel <= 1:  # in this thread: a signal's StopFlag cuts the node run's waits as scale-up's does
            for e in todo:
                if stop.is_set():
                    return self._interrupted(f"before {e['node']}")
                why = self._too_many_unavailable(e, [])
                if why:
                    return self._stop_before(e, why, on_event)
                out = self._node(self.session, e, on_event, stop)
                if out.status != "done":
                    return out
            return None
        return self._carry_out_parallel(todo, on_event, stop)

    def _carry_out_parallel(self, todo: list[dict[str, Any]], on_event: Callable[[FleetEvent], object],
                            stop: threading.Event) -> NodeOutcome | None:
        first: NodeOutcome | None = None
        running: dict[Future[NodeOutcome], dict[str, Any]] = {}
        worker_stop = threading.Event()  # the workers' waits end at the next check; a signal lands here
        with ThreadPoolExecutor(self.parallel, thread_name_prefix="fleet") as pool:
            while True:
                if stop.is_set():
                    worker_stop.set()
                    first = first or self._interrupted("while nodes were running")
                while first is None and len(running) < self.parallel:
                    e = self._next(todo, list(running.values()))
                    if e is None:
                        break
                    why = self._too_many_unavailable(e, list(running.values()))
                    if why:
                        if not running:
                            first = self._stop_before(e, why, on_event)
                        break
                    todo.remove(e)
                    session = self.session_factory() if self.session_factory else self.session
                    running[pool.submit(self._node, session, e, on_event, worker_stop)] = e
                if not running:
                    break
                finished, _ = wait(list(running), timeout=0.5, return_when=FIRST_COMPLETED)
                for f in finished:
                    running.pop(f)
                    out = f.result()
                    if out.status != "done" and first is None:
                        first = out
        return first

    @staticmethod
    def _next(todo: list[dict[str, Any]], running: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The first node in plan order whose hypervisor runs no other fleet node now (unknown host: alone)."""
        hosts = {e["host"] for e in running}
        for e in todo:
            if "" in hosts or (running and not e["host"]) or e["host"] in hosts:
                continue
            return e
        return None

    def _too_many_unavailable(self, e: dict[str, Any], running: list[dict[str, Any]]) -> str:
        from console.runbook import fleet_checks

        down = fleet_checks.unavailable_nodes(self.session.api)
        out = set(down) | {r["node"] for r in running} | {e["node"]}
        if len(out) <= self.max_unavailable:
            return ""
        others = ", ".join(f"{n} ({down.get(n, 'being scaled up')})" for n in sorted(out - {e['node']}))
        return (f"starting {e['node']} would make {len(out)} nodes unavailable, more than --max-unavailable "
                f"{self.max_unavailable} (unavailable now: {others})")

    def _stop_before(self, e: dict[str, Any], why: str, on_event: Callable[[FleetEvent], object]) -> NodeOutcome:
        msg = (f"stopped before {e['node']}: {why}; nothing was done on {e['node']}. Once that is resolved, run "
               f"`python -m console plan --apply --resume {self.fleet_id}` to continue")
        with self._lock:
            self.journal.mark_node(e["node"], "attention", message=msg)  # type: ignore[union-attr]
        on_event(FleetEvent(self.fleet_id, "node-failed", e["node"], msg))
        return NodeOutcome("attention", EXIT_ATTENTION, msg)

    def _interrupted(self, where: str) -> NodeOutcome:
        return NodeOutcome("interrupted", EXIT_ATTENTION,
                           f"interrupted {where}; fleet run {self.fleet_id} is journaled and resumes where it "
                           f"stopped: python -m console plan --apply --resume {self.fleet_id}")

    def _node(self, session: Session, e: dict[str, Any], on_event: Callable[[FleetEvent], object],
              stop: threading.Event) -> NodeOutcome:
        """One node: its scale-up run (started, resumed or found done), recorded in the fleet journal."""
        from console.faults import is_fault
        from console.runbook import fleet_checks
        from console.runbook.session import SessionError

        node, fleet_id = e["node"], self.fleet_id
        decision = resume_decision(e, _run_status(e["run_id"]))
        on_event(FleetEvent(fleet_id, "node-start", node, {"resume": f"resuming run {e['run_id']}",
                                                           "start": "starting", "done": "run found done",
                                                           "failed": "run found failed"}.get(decision, "")))
        if decision in ("done", "failed"):
            if decision == "done":  # its run ended done in an earlier invocation: nothing of it is this one's
                self.did[node] = "done_before"
            code = EXIT_DONE if decision == "done" else EXIT_FAILED
            return self._record(e, NodeOutcome(decision, code, f"scale-up run {e['run_id']} ended {decision}",
                                               e["run_id"]), on_event)
        if decision == "start" and (blocked := fleet_checks.pdb_blocked(session.api, node)):
            return self._record(e, NodeOutcome(
                "attention", EXIT_ATTENTION,
                f"the drain of {node} would be refused: {'; '.join(blocked)}. Nothing was done on {node} (not "
                f"cordoned, its VM untouched). Wait for the budget's pods to become healthy, scale the workload "
                f"up or relax the budget (kubectl get pdb -A), then run `python -m console plan --apply --resume "
                f"{fleet_id}` to continue"), on_event)
        if decision == "start":
            share = self._share(session, e)
            if share != e["pods"]:
                taken = [p for p in e["pods"] if p not in share]
                on_event(FleetEvent(fleet_id, "step", node, f"for {', '.join(share)} (interchangeable with the "
                                    f"planned {', '.join(taken)}, which {'runs' if len(taken) == 1 else 'run'} on "
                                    "an earlier node)"))
                with self._lock:
                    e["pods"] = share
        try:
            plan, journal = session.plan(node_request(e), resume=e["run_id"] if decision == "resume" else None)
        except (PlanRefused, SessionError) as err:
            if is_fault(err):
                raise
            if held(err):
                return self._record(e, self._held(node, err), on_event)
            status = "failed" if isinstance(err, PlanRefused) else "attention"
            return self._record(e, NodeOutcome(status, EXIT_BY_NODE[status], f"{node}: {err}"), on_event)
        if plan.nothing_to_do:
            self.did[node] = "at_size"  # someone grew it since the plan: this invocation changed nothing on it
            return self._record(e, NodeOutcome("done", EXIT_DONE, plan.nothing_to_do, e["run_id"]), on_event)
        with self._lock:
            self.journal.mark_node(node, "running", run_id=journal.run_id if journal else None)  # type: ignore[union-attr]

        def relay(ev: RunEvent) -> None:
            if ev.kind == "run-start" and ev.run_id != e["run_id"]:
                with self._lock:  # the run id is known once its journal exists: before its first step acts
                    self.journal.mark_node(node, "running", run_id=ev.run_id)  # type: ignore[union-attr]
            on_event(FleetEvent(fleet_id, "step", node, ev.message, ev))

        try:
            result = session.run(plan, journal, on_event=relay, stop=stop)
        except GuardRefusal as err:
            return self._record(e, NodeOutcome("refused", EXIT_USAGE, f"{node}: {err}", error=err.kind), on_event)
        except SessionError as err:
            if is_fault(err):
                raise
            if held(err):  # taken between its plan and its run: before any change on it
                return self._record(e, self._held(node, err), on_event)
            return self._record(e, NodeOutcome("attention", EXIT_ATTENTION, f"{node}: {err}"), on_event)
        if result.status == "done":
            self.did[node] = "resumed" if decision == "resume" else "scaled_up"
        status = {"done": "done", "needs-attention": "attention", "interrupted": "interrupted",
                  "refused": "refused"}.get(result.status, "failed")
        message = result.message or result.status
        if result.cordoned is not None:  # every run that leaves its node cordoned says so (runbook/cordon.py)
            message += f"; {result.cordoned.message}"
        if status == "interrupted":
            message = (f"interrupted {result.stopped_at} on {node}; its scale-up run {result.run_id} and fleet run "
                       f"{fleet_id} are journaled: python -m console plan --apply --resume {fleet_id}")
        return self._record(e, NodeOutcome(status, result.exit_code, message, result.run_id), on_event)

    def _held(self, node: str, err: Exception) -> NodeOutcome:
        """Another run holds `node` (`scale-up` of it is refused the same way: exit 2, kind HELD): nothing was
        changed on it; the fleet is resumable once that run has ended."""
        done = [e["node"] for e in self.entries if e["status"] == "done"]
        after = (f"; {', '.join(done)} {'is' if len(done) == 1 else 'are'} done. Once that run has ended, run "
                 f"`python -m console plan --apply --resume {self.fleet_id}` to continue") if done else ""
        return NodeOutcome("refused", EXIT_USAGE, f"{err}; nothing was changed on {node}{after}", error=HELD)

    def _record(self, e: dict[str, Any], out: NodeOutcome, on_event: Callable[[FleetEvent], object]) -> NodeOutcome:
        """The node's outcome in the fleet journal (an interrupted or refused node stays "running"/"pending":
        the rerun resumes it)."""
        status = {"interrupted": "running", "refused": e["status"]}.get(out.status, out.status)
        with self._lock:
            self.journal.mark_node(e["node"], status, run_id=out.run_id, message=out.message,  # type: ignore[union-attr]
                                   exit_code=out.exit_code)
        kind = "node-done" if out.status == "done" else "node-failed"
        on_event(FleetEvent(self.fleet_id, kind, e["node"], out.message))
        return out


def _run_candidates(run_id: str | None) -> list[str]:
    """The Pending pods scale-up run `run_id` planned with (its plan's advice: those its verify may count in a
    planned pod's place); none when there is no usable journal of it."""
    if not run_id:
        return []
    from console.runbook.journal import Journal, JournalError

    try:
        plan = (Journal.load(run_id).doc.get("context") or {}).get("plan") or {}
    except (FileNotFoundError, JournalError):
        return []
    return list(plan.get("reasons") or {})


def _run_status(run_id: str | None) -> str | None:
    """The status of scale-up run `run_id`'s journal (None: no id, or no usable journal of it)."""
    if not run_id:
        return None
    from console.runbook.journal import Journal, JournalError

    try:
        return Journal.load(run_id).doc["status"]
    except (FileNotFoundError, JournalError):
        return None
