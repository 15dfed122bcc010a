"""What the scale-up screen shows, gathered off the UI thread, and pure renderers of it.

Functions taking a `session` (console/runbook/session.py Session) do I/O and are called from the screen's
thread workers only; the others are pure and run on the UI thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rich.text import Text

from console.infra.describe import read_vm
from console.infra.protocol import InfraError, VmDescription
from console.infra.vms import LEGEND
from console.kube import nodes_ops
from console.kube.drain import DELETE_EMPTYDIR, FORCE, DrainItem
from console.kube.model import NodeInfo, fmt_cpu
from console.runbook.nova_drift import size_summary
from console.runbook.plan import FitAdvice, FlavorInfo, VmSize, advise, fmt_mem
from console.runbook.scaleup import ScaleUpPlan, ScaleUpRequest
from console.tui.widgets.runbook import CapacityRow, PodRow
from console.tui.widgets.runbook_pickers import node_summary

MiB = 2**20
STATUS_TEXT = {
    "done": "done",
    "failed": "failed — rolled back, the node and VM are in a safe state",
    "needs-attention": "needs attention — the runbook could not make the state safe",
    "verify-failed": "verification failed — the VM grew but the cluster is not as planned",
}


class LoadError(Exception):
    """Reading the node, its VM or the cluster failed; the message says what to fix."""


@dataclass(frozen=True)
class UnfinishedRun:
    run_id: str
    status: str
    where: str  # the step it stopped in (or before)
    created: str


@dataclass
class NodeTargets:
    """The node, its VM, the flavors and the fit of every Pending pod: what the target picker shows."""

    node: NodeInfo
    vm: VmDescription | None
    flavors: list[FlavorInfo]
    advice: list[FitAdvice]
    libvirt: bool
    notes: list[str] = field(default_factory=list)
    unfinished: UnfinishedRun | None = None

    @property
    def current(self) -> VmSize | None:
        return VmSize(self.vm.vcpus, self.vm.memory_mib) if self.vm and self.vm.vcpus else None

    @property
    def vm_text(self) -> str:
        """"kube-worker02 Nova: m1.large · running: 12 vCPU / 16Gi [ACTIVE] * Nova flavor out of date"."""
        if self.vm is None:
            return "not found"
        view = self.vm.view
        stale = view.staleness(self.node.capacity)
        return f"{self.vm.name} {view.size_text()} [{self.vm.status}]" + (
            f" {stale.markers} {stale.text()}" if stale else "")

    @property
    def picker_note(self) -> str:
        return "; ".join(self.notes)


@dataclass
class LiveState:
    """The node and the planned pods as they are now (and the VM, read at the end of a run)."""

    kubelet_cpu: str
    kubelet_memory: str
    node_status: str
    cpu_ok: bool
    memory_ok: bool
    pods: list[PodRow]
    vm_now: VmSize | None = None
    vm_status: str = ""

    @property
    def capacity_ok(self) -> bool:
        return self.cpu_ok and self.memory_ok


def _explain(e: BaseException) -> str:
    from console.tui.errors import explain

    return explain(e)


# -- I/O (worker threads) ------------------------------------------------------------------------------------
def list_nodes(kube: Any, session_factory: Callable[[], Any]) -> list[tuple[str, str]]:
    """(name, summary) of every node: from the app's watch cache when it has one, else one list call."""
    nodes: list[NodeInfo] = []
    snapshot = getattr(kube, "snapshot", None)
    if snapshot is not None:
        nodes = list(snapshot().nodes.values())
    if not nodes:
        from console.kube.nfdstore import list_nodes as list_raw

        try:
            nodes = [NodeInfo.from_api(n) for n in list_raw(session_factory().api).values()]
        except Exception as e:  # any failure (connection, API, kubeconfig) becomes the screen's message
            raise LoadError(_explain(e)) from e
    return [(n.name, node_summary(n)) for n in sorted(nodes, key=lambda n: n.name)]


def load_targets(session: Any, name: str) -> NodeTargets:
    from console.runbook.journal import Journal, JournalError

    try:
        api = session.api
        node = nodes_ops.get_node(api, name)
        pods = nodes_ops.pods_on_node(api, name)
        pending = nodes_ops.pending_pods(api)
    except nodes_ops.NodeOpError as e:
        raise LoadError(str(e)) from e
    except Exception as e:  # connection or API errors: say what to check
        raise LoadError(_explain(e)) from e
    vm, flavors, notes = None, [], []
    if session.openstack is not None:
        try:
            reading = read_vm(node, session.openstack, session.libvirt, method="openstack")
            vm, notes = reading.vm, reading.notes
            flavors = session.openstack.flavors()
        except InfraError as e:
            notes.append(f"OpenStack: {e}")
    libvirt = session.libvirt is not None
    if vm is None and libvirt:
        try:
            vm = read_vm(node, None, session.libvirt, method="libvirt").vm
        except InfraError as e:
            notes.append(f"libvirt: {e}")
    if not libvirt:
        notes.append("libvirt is not configured (libvirt_uris / CONSOLE_LIBVIRT_URI): flavors only")
    current = VmSize(vm.vcpus, vm.memory_mib) if vm and vm.vcpus else None
    advice = [advise(node, pods, p, vm=current, flavors=flavors) for p in pending]
    unfinished = None
    try:
        found = Journal.unfinished("scale-up", name)
    except JournalError as e:  # a bad journal of the node: the screen says which file and how to discard it
        raise LoadError(str(e)) from e
    if found:
        doc = found[-1].doc
        stop = next((s for s in doc["steps"] if s["status"] not in ("done", "skipped")), None)
        where = f"{stop['title']} ({stop['status']})" if stop else "after the last step"
        unfinished = UnfinishedRun(doc["run_id"], doc["status"], where, doc.get("created", ""))
    return NodeTargets(node, vm, flavors, advice, libvirt, notes, unfinished)


def live_state(session: Any, plan: ScaleUpPlan, *, describe_vm: bool) -> LiveState:
    from console.kube.model import cpu_millis, mem_bytes
    from console.runbook import verify

    api = session.api
    raw = nodes_ops.get_node_raw(api, plan.node.name)
    info = NodeInfo.from_api(raw)
    cap = (raw.get("status") or {}).get("capacity") or {}
    cpu_ok = cpu_millis(cap.get("cpu")) == plan.target.vcpus * 1000
    ram = plan.target.memory_mib * MiB
    memory_ok = ram * (1 - verify.MAX_OVERHEAD) <= mem_bytes(cap.get("memory")) <= ram
    state = LiveState(str(cap.get("cpu", "?")), str(cap.get("memory", "?")), info.status,
                      cpu_ok and info.ready == "True", memory_ok, pod_rows(api, plan))
    if describe_vm:
        try:
            if plan.method == "openstack" and session.openstack is not None:
                d = read_vm(info, session.openstack, session.libvirt, method="openstack").vm
            elif session.libvirt is not None:
                d = read_vm(info, session.openstack, session.libvirt, method="libvirt").vm
            else:
                return state
            state.vm_now = VmSize(d.vcpus, d.memory_mib)
            view = d.view
            nova = f"Nova: {view.flavor}{' (out of date)' if view.flavor_differs else ''} " if view.flavor else ""
            state.vm_status = f"{nova}[{d.status}]"
        except InfraError as e:
            state.vm_status = f"cannot read the VM: {e}"
    return state


def pod_rows(api: Any, plan: ScaleUpPlan) -> list[PodRow]:
    rows = []
    reasons = {a.pods[0]: a.reason for a in plan.advice}
    for key, planned in [*((k, "will fit") for k in plan.will_fit), *((k, "still too big") for k in
                                                                     plan.still_pending)]:
        ns, name = key.split("/", 1)
        obj = nodes_ops.get_pod_raw(api, ns, name)
        if obj is None:
            rows.append(PodRow(key, planned, "deleted", ""))
            continue
        phase = (obj.get("status") or {}).get("phase", "Pending")
        node = (obj.get("spec") or {}).get("nodeName") or ""
        why = ""
        if phase == "Pending":
            why = nodes_ops.latest_failed_scheduling(api, ns, name) or reasons.get(key, "")
        rows.append(PodRow(key, planned, phase, node, why))
    return rows


def revert_possible(session: Any, plan: ScaleUpPlan, old_flavor: str | None = None) -> tuple[bool, str, str]:
    """(possible, why / what it does, preview). Nova reverts a resize only before it is confirmed.

    `old_flavor`: the flavor before the run (from the journal); a plan made while the server already waits
    in VERIFY_RESIZE shows the new flavor as the VM's."""
    if plan.method != "openstack":
        return (False, "a libvirt live scale-up cannot be reverted from the console: vCPUs and memory hot-added "
                "to a running guest are not unplugged safely. Shrink the domain in a maintenance window "
                "(lower the maxima, then restart through Nova).", "")
    if session.openstack is None:
        return False, "OpenStack is not configured", ""
    try:
        st = session.openstack.server(plan.vm.ref)
    except InfraError as e:
        return False, f"cannot read server {plan.vm.name}: {e}", ""
    old = old_flavor or (plan.vm.flavor if plan.vm.status != "VERIFY_RESIZE" else None) or "its previous flavor"
    if st.status == "VERIFY_RESIZE":
        preview = (f"openstack server resize revert {st.id}\n  {st.name}: {st.flavor} → {old}; the node reboots "
                   f"again.\nThen: wait for {plan.node.name} Ready with the capacity of {old} "
                   "and uncordon it if the runbook cordoned it.")
        return True, f"server {st.name} is in VERIFY_RESIZE with {st.flavor}: revert returns it to {old}", preview
    if st.flavor == (old_flavor or plan.vm.flavor) and plan.vm.status != "VERIFY_RESIZE":
        return False, f"nothing to revert: server {st.name} still has flavor {st.flavor} [{st.status}]", ""
    return (False, f"the resize of {st.name} to {st.flavor} was confirmed [{st.status}]: Nova can only revert a "
            f"resize in VERIFY_RESIZE. To go back, resize to {old} (reboots the node again).", "")


# -- pure (UI thread) ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DrainOverride:
    """A plan refused because the drain would delete pods kubectl keeps; what overriding it means."""

    request: ScaleUpRequest
    blocking: list[DrainItem]

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(sorted({f for i in self.blocking for f in i.needs}))

    def overridden(self) -> ScaleUpRequest:
        return replace(self.request, force=self.request.force or FORCE in self.flags,
                       delete_emptydir_data=self.request.delete_emptydir_data or DELETE_EMPTYDIR in self.flags)

    def preview(self) -> str:
        lost = [i.key for i in self.blocking if FORCE in i.needs]
        data = [i.key for i in self.blocking if DELETE_EMPTYDIR in i.needs]
        lines = []
        if lost:
            lines.append("deleted for good (no controller recreates them): " + ", ".join(lost))
        if data:
            lines.append("emptyDir data deleted: " + ", ".join(data))
        return "\n".join([*lines, "", "then the scale-up is planned again; r runs it"])


def merge_view(live: LiveState, view: Any) -> LiveState:
    """Pod phases from the app's watch cache (ClusterView) between refreshes."""
    pods = getattr(getattr(view, "snapshot", None), "pods", None) or {}
    rows = []
    for r in live.pods:
        ns, name = r.key.split("/", 1)
        p = pods.get((ns, name))
        rows.append(replace(r, phase=p.phase, node=p.node, why="" if p.phase != "Pending" else r.why) if p else r)
    return replace(live, pods=rows)


def plan_text(plan: ScaleUpPlan, journal: Any, colors: dict[str, str]) -> Text:
    how = "OpenStack resize (reboots the node)" if plan.method == "openstack" else "libvirt live scale-up"
    if plan.kubelet_only:
        how = "kubelet only (the VM already runs the target; no cordon, drain or VM change)"
    t = Text()
    t.append(f"{plan.node.name}: {plan.current} → {plan.target}", style="bold")
    if plan.flavor:
        t.append(f" (flavor {plan.flavor.name})", style="bold")
    t.append(f"\n{how}; VM {plan.vm.name} [{plan.vm.status}] on {plan.vm.host or '?'}: {size_summary(plan)}")
    if plan.will_fit:
        t.append(f"\nmakes fit: {', '.join(plan.will_fit)}", style=colors.get("status-ready", "green"))
    else:
        t.append("\nmakes no Pending pod fit (none waiting)", style="dim")
    if plan.still_pending:
        t.append(f"\nstill too big: {', '.join(plan.still_pending)}", style=colors.get("status-pending", "yellow"))
    evict = ", ".join(e.key for e in plan.evictions)
    t.append(f"\nwill evict: {evict}" if evict else "\nnothing to evict", style="" if evict else "dim")
    lost = [e.key for e in plan.evictions if e.lost]
    if lost:
        t.append(f"\ndeleted for good (no controller, --force): {', '.join(lost)}", style=colors.get("danger", "red"))
    skipped = ", ".join(f"{e.key} ({e.why})" for e in plan.drain if e.action == "skip")
    if skipped:
        t.append(f"\nleft on the node: {skipped}", style="dim")
    for note in plan.notes:
        t.append(f"\nnote: {note}", style="dim")
    if journal is not None:
        t.append(f"\nresuming run {journal.run_id} ({journal.doc.get('status')}): steps marked ✓/↷ are not "
                 "repeated; t picks a new target instead", style=colors.get("status-pending", "yellow"))
    return t


def plan_summary(plan: ScaleUpPlan | None, error: str, hint: str) -> str:
    """The plan panel on one line (a short terminal): `NODE 8 vCPU / 12Gi → 12 vCPU / 16Gi, libvirt live; …`."""
    if error:
        return f"✗ refused: {error}"
    if plan is None:
        return hint
    if plan.nothing_to_do:
        return f"✓ {plan.nothing_to_do}"
    how = "resize" if plan.method == "openstack" else "libvirt live"
    flavor = f" (flavor {plan.flavor.name})" if plan.flavor else ""
    return (f"{plan.node.name} {plan.current} → {plan.target}{flavor}, {how}; makes fit: "
            f"{', '.join(plan.will_fit) or 'none'}")


def planned_pod_rows(plan: ScaleUpPlan) -> list[PodRow]:
    reasons = {a.pods[0]: a.reason for a in plan.advice}
    return [PodRow(k, "will fit", "Pending", "", reasons.get(k, "")) for k in plan.will_fit] + \
        [PodRow(k, "still too big", "Pending", "", reasons.get(k, "")) for k in plan.still_pending]


def advice_rows(advice: list[FitAdvice]) -> list[PodRow]:
    return [PodRow(a.pods[0], "fits now" if a.fits_now else "needs a bigger VM", "Pending", "",
                   "" if a.fits_now else f"{a.reason}. {a.target_reason}") for a in advice]


def _kubelet_mem(n: int) -> str:
    return f"{n // 1024}Ki" if n % 1024 == 0 else str(n)


def _nova_columns(vm: VmDescription | None, node: NodeInfo) -> tuple[str, str, str]:
    """(Nova's vCPUs, Nova's memory, kubelet marker): the flavor's values where they differ from what runs, marked
    "*"; "!" beside the kubelet's when it is stale (legend below the table)."""
    if vm is None:
        return "", "", ""
    view = vm.view
    stale = view.staleness(node.capacity)
    kubelet = LEGEND["kubelet"][0] if stale.kubelet else ""
    if not (stale.nova and view.flavor_size):
        return "", "", kubelet
    mark = LEGEND["nova"][0]
    return (f"{view.flavor_size.vcpus}{mark}", f"{fmt_mem(view.flavor_size.memory_mib * MiB)}{mark}", kubelet)


def capacity_rows(plan: ScaleUpPlan, live: LiveState | None) -> list[CapacityRow]:
    cap = plan.node.capacity
    vm_now = live.vm_now if live else None
    nova_cpu, nova_mem, kubelet = _nova_columns(plan.vm, plan.node)
    return [
        CapacityRow("cpu", str(plan.current.vcpus), fmt_cpu(cap.cpu_m) + kubelet, str(plan.target.vcpus),
                    str(vm_now.vcpus) if vm_now else "", live.kubelet_cpu if live else "",
                    live.cpu_ok if live else None, nova=nova_cpu),
        CapacityRow("memory", fmt_mem(plan.current.memory_mib * MiB), _kubelet_mem(cap.memory) + kubelet,
                    fmt_mem(plan.target.memory_mib * MiB), fmt_mem(vm_now.memory_mib * MiB) if vm_now else "",
                    live.kubelet_memory if live else "", live.memory_ok if live else None, nova=nova_mem),
    ]


def capacity_rows_info(info: NodeTargets) -> list[CapacityRow]:
    cur, cap = info.current, info.node.capacity
    nova_cpu, nova_mem, kubelet = _nova_columns(info.vm, info.node)
    return [CapacityRow("cpu", str(cur.vcpus) if cur else "?", fmt_cpu(cap.cpu_m) + kubelet, "—", nova=nova_cpu),
            CapacityRow("memory", fmt_mem(cur.memory_mib * MiB) if cur else "?", _kubelet_mem(cap.memory) + kubelet,
                        "—", nova=nova_mem)]


def _verdict(plan: ScaleUpPlan | None, result: Any, error: str, live: LiveState | None) -> str:
    """What the run achieved, or exactly why not; empty while nothing has run."""
    if error:
        return f"✗ the run stopped: {error}"
    if result is None or plan is None:
        return ""
    node = plan.node.name
    now = ""
    if live is not None:
        vm = f"; the VM has {live.vm_now} {live.vm_status}".rstrip() if live.vm_now else ""
        now = f"{node} now: {live.node_status}, capacity cpu {live.kubelet_cpu} / memory {live.kubelet_memory}{vm}"
    if result.status == "done":
        if live is None:
            return f"✓ run {result.run_id} done; reading the node and the VM…"
        not_running = [r for r in live.pods if r.planned == "will fit" and r.phase != "Running"]
        if live.capacity_ok and not not_running:
            running = ", ".join(f"{r.key} Running on {r.node}" for r in live.pods if r.planned == "will fit")
            return (f"✓ verified: kubelet capacity cpu {live.kubelet_cpu} / memory {live.kubelet_memory} matches "
                    f"the VM ({live.vm_now or plan.target})" + (f"; {running}" if running else ""))
        why = [f"{r.key} {r.phase}: {r.why or 'no reason recorded'}" for r in not_running]
        if not live.capacity_ok:
            why.insert(0, f"the kubelet does not match the target {plan.target}")
        return f"✗ the run finished but {'; '.join(why)}. {now}"
    head = f"✗ {STATUS_TEXT.get(result.status, result.status)}: {result.message}"
    tail = ""
    if result.status == "needs-attention":
        tail = f" Journal: {result.journal_path}; fix the cause, then reopen :scale-up {node} to resume."
    return f"{head}.{' ' + now if now else ''}{tail}"


def _with_cordon(text: str, result: Any) -> str:
    """`text`, then the sentence saying the run leaves its node cordoned (console/runbook/cordon.py), if it does."""
    left = getattr(result, "cordoned", None)
    return f"{text.rstrip('.')}. {left.message}" if left is not None else text


def verdict(plan: ScaleUpPlan | None, result: Any, error: str, live: LiveState | None) -> str:
    """What the run achieved, or exactly why not — and whether it leaves the node cordoned; empty while nothing
    has run."""
    said = _verdict(plan, result, error, live)
    return _with_cordon(said, result) if said and result is not None else said


def stopped_outcome(kind: str, node: str, result: Any, error: str = "") -> str:
    """What the terminal shows once "Stop and quit" has let the run end (GuardsItsRun.stopped_message): what the
    engine did, from its result. The stop request is only checked before a step (console/runbook/engine.py), so the
    run may have finished, failed and rolled back, or needed attention meanwhile; only "interrupted" stopped it."""
    resume = f"resume it with R on the nodes screen or :scale-up {node}"
    if result is None:
        return (f"{kind} of {node} ended with an error: {error or 'no result'}; its journal, if it has one, keeps its "
                f"state: {resume}")
    run = f"(run {result.run_id})"
    status = result.status
    if status == "interrupted":
        said = f"{kind} of {node} stopped {result.stopped_at or 'between steps'}, nothing rolled back {run}; {resume}"
    elif status == "done":
        said = f"{kind} of {node} finished before it could be stopped: done {run}"
    elif status == "failed":
        said = f"{kind} of {node} failed before it could be stopped, and was rolled back: {result.message} {run}"
    elif status == "needs-attention":
        said = (f"{kind} of {node} needs attention, it ended before it could be stopped: {result.message} {run}. "
                f"Journal {result.journal_path}; fix the cause, then {resume}")
    elif status == "verify-failed":
        said = f"{kind} of {node} ended before it could be stopped: verification failed: {result.message} {run}"
    else:
        said = f"{kind} of {node} was refused: {result.message} {run}"
    return _with_cordon(said, result)
