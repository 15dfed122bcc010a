"""The revert runbook: undo an OpenStack resize that waits in VERIFY_RESIZE, through the engine.

Nova (https://docs.openstack.org/api-ref/compute/#revert-resized-server-revertresize-action) reverts only
a server in VERIFY_RESIZE: POST /servers/{id}/action {"revertResize": null} → status REVERT_RESIZE →
ACTIVE with the old flavor, on the source host. Steps: revert the resize → wait for ACTIVE with the old
flavor → the node Ready with the old capacity → uncordon it if the console cordoned it. Journal kind
"revert", audit "runbook.revert.<step>"; `plan_revert` reads only, and names the scale-up run it supersedes
(its journal: the old flavor, whether the console cordoned the node). Both journals are checked as a
scale-up's are (Session.journal_to_resume: usable, this cluster, no other live owner; a resumed revert: the
same cloud and server): SessionError naming the file otherwise.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from console.infra.protocol import InfraError
from console.kube import nodes_ops
from console.kube.model import NodeInfo
from console.runbook import cordon as cordons
from console.runbook import verify
from console.runbook.engine import Context, Engine, RunEvent, RunResult, Step, StepFailed
from console.runbook.journal import Journal, JournalError, bad_journal
from console.runbook.journal_lock import JournalBusy, JournalLock
from console.runbook.scaleup import NoSuchNode, PlanRefused
from console.runbook.steps.openstack import read_server, server_snapshot

KIND = "revert"


@dataclass
class RevertPlan:
    node: str
    server_id: str
    server: str
    status: str
    new_flavor: str  # what the server runs in VERIFY_RESIZE
    old_flavor: str | None  # from the scale-up journal; None: Nova knows it, we do not
    was_cordoned: bool  # before the scale-up (leave it cordoned) or unknown and cordoned now
    scale_up_run: str | None
    node_timeout: float = 180.0
    resize_timeout: float = 300.0

    @property
    def steps(self) -> list[dict[str, Any]]:
        return [s.as_plan() for s in steps(self)]

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "server_id": self.server_id, "server": self.server, "status": self.status,
                "new_flavor": self.new_flavor, "old_flavor": self.old_flavor, "was_cordoned": self.was_cordoned,
                "scale_up_run": self.scale_up_run, "steps": self.steps}


def render(plan: RevertPlan) -> str:
    old = plan.old_flavor or "its previous flavor"
    lines = [f"Revert of the resize of {plan.node}: server {plan.server} [{plan.status}] {plan.new_flavor} → {old}",
             f"  openstack server resize revert {plan.server_id}   (the node reboots again)"]
    if plan.scale_up_run:
        lines.append(f"  supersedes scale-up run {plan.scale_up_run}")
    lines.append("  steps:")
    lines += [f"    {i}. {s['title']}" for i, s in enumerate(plan.steps, 1)]
    return "\n".join(lines)


def _params(journal: Journal, node_timeout: float, resize_timeout: float) -> RevertPlan:
    p = journal.doc["params"]
    try:
        plan = RevertPlan(**{**p, "node_timeout": node_timeout, "resize_timeout": resize_timeout})
    except TypeError as e:
        raise bad_journal(journal.path, f"is not a usable runbook journal: its params are not a revert's ({e})",
                          node=journal.doc["node"]) from e
    if not all(isinstance(getattr(plan, k), str) for k in ("node", "server_id", "server", "new_flavor")):
        raise bad_journal(journal.path, "is not a usable runbook journal: its params are not a revert's",
                          node=journal.doc["node"])
    return plan


def plan_revert(session: Any, node: str, *, resume: str | None = None, node_timeout: float = 180.0,
                resize_timeout: float = 300.0, dry_run: bool = False) -> tuple[RevertPlan, Journal | None]:
    """Read-only: the server must wait in VERIFY_RESIZE (or a revert run is resumed). PlanRefused says why not;
    SessionError when a journal of the node cannot be used (Session.journal_to_resume); PermissionsMissing (not
    for a dry run) when this user may not do what a revert calls for."""
    plan, journal = _plan_revert(session, node, resume, node_timeout, resize_timeout)
    if not dry_run and not session.guard.read_only:  # read-only refuses the run first
        session.check_permissions(KIND)
    return plan, journal


def _plan_revert(session: Any, node: str, resume: str | None, node_timeout: float,
                 resize_timeout: float) -> tuple[RevertPlan, Journal | None]:
    from console.runbook.session import journal_fault

    journal = session.journal_to_resume(KIND, node, resume)
    if journal is not None:
        try:
            plan = _params(journal, node_timeout, resize_timeout)
        except JournalError as e:
            raise journal_fault(e) from e
        session.check_infra(journal, "openstack", plan.server_id)
        return plan, journal
    if session.openstack is None:
        raise PlanRefused("OpenStack is not configured (set cloud in the config, OS_CLOUD or OS_* variables)")
    try:
        raw = nodes_ops.get_node_raw(session.api, node)
    except nodes_ops.NodeNotFound as e:
        raise NoSuchNode(str(e)) from e
    except nodes_ops.NodeOpError as e:
        raise PlanRefused(str(e)) from e
    info = NodeInfo.from_api(raw)
    try:
        st = session.openstack.server(session.openstack.describe(info).ref)
        session.infra("openstack", st.id)  # journaled with the run: read while planning
    except InfraError as e:
        raise PlanRefused(str(e)) from e
    if st.status != "VERIFY_RESIZE":
        raise PlanRefused(f"nothing to revert: server {st.name} is {st.status} with flavor {st.flavor}; Nova reverts "
                          "only a resize waiting in VERIFY_RESIZE (a confirmed resize is undone by resizing back)")
    scale = session.journal_to_resume("scale-up", node)
    facts = scale.doc.get("context", {}) if scale else {}
    old = ((facts.get("plan") or {}).get("vm") or {}).get("flavor") if scale else None
    # the console's cordon as the scale-up's journal says, or as the node's mark does (that journal discarded)
    cordoned_by_us = (bool(scale) and scale.step("cordon")["status"] in ("acted", "done")
                      and not facts.get("was_cordoned", True)) or cordons.marked_by(raw) is not None
    plan = RevertPlan(node, st.id, st.name, st.status, st.flavor, old if old != st.flavor else None,
                      was_cordoned=not cordoned_by_us, scale_up_run=scale.run_id if scale else None,
                      node_timeout=node_timeout, resize_timeout=resize_timeout)
    return plan, None


def steps(plan: RevertPlan) -> list[Step]:
    sid, node = plan.server_id, plan.node

    def os_(ctx: Context) -> Any:
        return ctx.clients.openstack

    def server(ctx: Context) -> Any:
        return read_server(ctx, sid)

    def snapshot(ctx: Context) -> dict[str, Any]:
        return server_snapshot(ctx, sid)

    def back(st: Any) -> bool:
        return st.status == "ACTIVE" and st.task_state is None and st.flavor != plan.new_flavor and \
            (plan.old_flavor is None or st.flavor == plan.old_flavor)

    def reverted(ctx: Context) -> bool:
        st = server(ctx)
        return st.status == "REVERT_RESIZE" or back(st)

    def can_revert(ctx: Context) -> str | None:
        st = server(ctx)
        if st.status == "VERIFY_RESIZE" or st.status == "REVERT_RESIZE" or back(st):
            return None
        return f"server {st.name} is {st.status} with flavor {st.flavor}, not VERIFY_RESIZE"

    def revert(ctx: Context) -> dict[str, Any]:
        try:
            with ctx.waiting():
                os_(ctx).revert(sid)
        except InfraError as e:
            raise StepFailed(f"{e}; nothing was changed") from e
        return {}

    def wait_reverted(ctx: Context) -> dict[str, Any]:
        try:
            with ctx.waiting(), ctx.breakable():
                st = os_(ctx).wait(sid, lambda s: back(s) or s.status == "ERROR", plan.resize_timeout)
        except TimeoutError as e:
            raise StepFailed(f"the revert did not finish: {e} (openstack server event list {sid})",
                             resumable=True) from e
        except InfraError as e:
            raise StepFailed(f"waiting for the revert: {e}", resumable=True) from e
        if st.status == "ERROR":
            raise StepFailed(f"server {st.name} went to ERROR while reverting: {st.fault or 'no fault message'}; "
                             f"ask a cloud admin to check it (openstack server event list {sid})", safe=False)
        ctx.remember(old_flavor=st.flavor, old_vcpus=st.vcpus, old_ram_mib=st.ram_mib)
        return {"flavor": st.flavor}

    def node_back(ctx: Context) -> dict[str, Any]:
        vcpus, ram = ctx.facts.get("old_vcpus"), ctx.facts.get("old_ram_mib")
        if not vcpus:
            st = server(ctx)
            vcpus, ram = st.vcpus, st.ram_mib
        try:
            with ctx.waiting(), ctx.breakable():
                _, waited = verify.wait_capacity(ctx.clients.api, node, vcpus, ram, plan.node_timeout)
        except TimeoutError as e:
            raise StepFailed(str(e), verify=True) from e
        return {"waited_s": round(waited, 3)}

    def unschedulable(ctx: Context) -> bool:
        return bool((nodes_ops.get_node_raw(ctx.clients.api, node).get("spec") or {}).get("unschedulable"))

    def uncordon(ctx: Context) -> dict[str, Any]:
        cordons.uncordon(ctx.clients.api, node)
        return {}

    old = plan.old_flavor or "the previous flavor"
    target = f"server/{sid}"
    return [
        Step("revert-resize", f"revert the resize of server {plan.server} ({plan.new_flavor} → {old})", revert,
             done=reverted, precondition=can_revert, audit_target=lambda _c: target, describe=snapshot),
        Step("wait-reverted", f"wait for ACTIVE with {old}", wait_reverted, mutating=False),
        Step("wait-node", f"wait for {node} Ready with the capacity of {old}", node_back, mutating=False),
        Step("uncordon", f"uncordon {node}" + (" (left cordoned: it was before the scale-up)"
                                              if plan.was_cordoned else ""),
             uncordon, done=lambda c: plan.was_cordoned or not unschedulable(c), audit_target=lambda _c: f"node/{node}",
             describe=lambda c: {"unschedulable": unschedulable(c)}),
    ]


def run_revert(session: Any, plan: RevertPlan, journal: Journal | None = None, *,
               on_event: Callable[[RunEvent], object] | None = None, stop: threading.Event | None = None) -> RunResult:
    """Run (or resume) the revert under the node's Lease (as a scale-up: SessionError while another run holds
    the node); the scale-up run it supersedes is closed ("reverted") when it starts."""
    from dataclasses import asdict

    from console.runbook.journal import new_run_id

    run_id = journal.run_id if journal is not None else new_run_id(KIND, plan.node)
    session.guard.check(f"revert of the resize of {plan.server}")  # ReadOnly before RBAC, the Lease, a journal
    session.check_permissions(KIND)  # below any UI: before the Lease or a journal
    superseded: tuple[Journal, str, str] | None = None
    with session.node_lock(plan.node, run_id, journal, on_event) as lock:
        if journal is None:
            params = {k: v for k, v in asdict(plan).items() if k not in ("node_timeout", "resize_timeout")}
            journal = Journal.create(KIND, plan.node, params, plan.steps, run_id=run_id, cluster=session.cluster,
                                     infra=session.infra("openstack", plan.server_id))
            if plan.scale_up_run:
                superseded = _supersede(plan.scale_up_run, journal.run_id)
        lock.record(journal)
        clients = session.clients()
        result = Engine(journal, lock.guard(steps(plan)), guard=session.guard, on_event=on_event, clients=clients,
                        stop=stop).run()
        if superseded and journal.doc["status"] == "refused":  # the revert changed nothing: the scale-up stands
            superseded[0].finish(superseded[1], superseded[2])
    result.cordoned = cordons.ending(session.api, plan.node, plan.was_cordoned, run_id)
    return result


def _supersede(scale_up_run: str, revert_run: str) -> tuple[Journal, str, str] | None:
    """Close the scale-up run the revert replaces, as its owner (its flock): never under a live process.
    Returns the journal with its former status and message, to restore if the revert changes nothing."""
    try:
        scale = Journal.load(scale_up_run)
    except (FileNotFoundError, JournalError):
        return None
    try:
        with JournalLock(scale.path.parent, scale.run_id):
            if scale.doc.get("status") == "done":
                return None
            former = (scale, scale.doc.get("status", ""), scale.doc.get("message", ""))
            scale.finish("reverted", f"superseded by revert run {revert_run}")
            return former
    except JournalBusy:
        return None  # its process still runs (it holds no Lease, or the revert would not run): it ends it itself


def outcome(plan: RevertPlan, result: RunResult) -> str:
    """One sentence for the screen: "reverted: server X back to m1.medium; NODE Ready with cpu 2; NODE uncordoned"."""
    if result.status != "done":
        return f"revert of {plan.server} {result.status}: {result.message} (run {result.run_id})"
    facts = Journal.load(result.run_id).doc.get("context", {})
    parts = [f"server {plan.server} back to {facts.get('old_flavor', plan.old_flavor or '?')} [ACTIVE]",
             f"{plan.node} Ready with cpu {facts.get('old_vcpus', '?')}"]
    uncordon = next((s for s in result.steps if s["id"] == "uncordon"), {})
    if uncordon.get("status") == "done":
        parts.append(f"{plan.node} uncordoned")
    return "reverted: " + "; ".join(parts)
