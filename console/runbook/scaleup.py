"""The scale-up runbook: plan it (read-only), then build its steps for the engine.

`prepare(request, ...)` reads the node, its pods, the Pending pods, the VM and
the flavors, and returns a `ScaleUpPlan` (what will happen, which pods it makes
fit, or why it is refused). `build_steps(plan, ...)` returns the engine steps
(console/runbook/steps/). The CLI and the screen share both.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from console.infra.describe import read_vm
from console.infra.openstack import disk_refusal
from console.infra.protocol import VmDescription
from console.kube import drain as drains
from console.kube import nodes_ops
from console.kube.model import NodeInfo
from console.runbook.nova_drift import nova_regeneration_warning, size_doc, size_summary
from console.runbook.plan import FitAdvice, FlavorInfo, VmSize, advise, check_target

if TYPE_CHECKING:
    from console.infra.libvirt import LibvirtBackend
    from console.infra.openstack import OpenStackBackend


class PlanRefused(Exception):
    """The request cannot be planned (unknown flavor, too small, shrink, no VM found)."""


class NoSuchNode(PlanRefused):
    """The cluster has no node of that name (exit 3, not found, as `get node NAME`)."""


class DrainRefused(PlanRefused):
    """The drain would delete pods kubectl keeps without --force / --delete-emptydir-data; `blocking` are they."""

    def __init__(self, message: str, blocking: list[drains.DrainItem]) -> None:
        super().__init__(message)
        self.blocking = blocking

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(sorted({f for i in self.blocking for f in i.needs}))


# kubectl drain waits forever by default (--timeout 0); a runbook must stop and say why instead. 120 s lets
# pods end within the default terminationGracePeriodSeconds (30 s) and a PodDisruptionBudget see a replaced
# pod become Ready a few times over (kubectl retries a 429 every 5 s), then the run stops "needs attention".
DRAIN_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class ScaleUpRequest:
    node: str
    flavor: str | None = None
    vcpus: int | None = None
    memory_mib: int | None = None
    method: str | None = None  # openstack | libvirt; default: openstack with --flavor, else libvirt
    resize_timeout: float = 300.0
    node_timeout: float = 180.0
    pods_timeout: float = 60.0
    force: bool = False  # kubectl drain --force: pods without a controller are deleted for good
    delete_emptydir_data: bool = False  # kubectl drain --delete-emptydir-data
    drain_timeout: float = DRAIN_TIMEOUT_S
    # the Pending pods ("ns/name") this scale-up is for — a fleet node's share of a capacity plan: only they are
    # counted as made to fit and verified Running (others the target would fit may be planned elsewhere, or held
    # off by taints or anti-affinity the fit estimate does not model). None: every Pending pod the target fits
    pods: tuple[str, ...] | None = None

    @property
    def chosen_method(self) -> str:
        return self.method or ("openstack" if self.flavor else "libvirt")


@dataclass
class ScaleUpPlan:
    request: ScaleUpRequest
    method: str
    node: NodeInfo
    vm: VmDescription
    target: VmSize
    flavor: FlavorInfo | None
    current: VmSize
    will_fit: list[str]  # Pending pods the target makes fit
    still_pending: list[str]  # Pending pods it does not
    advice: list[FitAdvice]
    drain: list[drains.DrainItem]  # every pod on the node and its fate (evict | skip)
    steps: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    nova_server_id: str | None = None  # libvirt: the domain is Nova-managed
    # the VM already runs the target and the kubelet reports it: the message, and the plan has no steps
    nothing_to_do: str | None = None
    # the VM already runs the target but the kubelet reports less: only the kubelet steps (no cordon/drain/VM)
    kubelet_only: bool = False

    @property
    def evictions(self) -> list[drains.DrainItem]:
        return [i for i in self.drain if i.action == "evict"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node.name, "method": self.method, "current": asdict(self.current),
            "target": asdict(self.target), "flavor": self.flavor.name if self.flavor else None,
            "vm": self.vm.to_dict(), "will_fit": self.will_fit, "still_pending": self.still_pending,
            "evictions": [e.to_dict() for e in self.evictions], "drain": [i.to_dict() for i in self.drain],
            "steps": self.steps, "notes": self.notes,
            "reasons": {a.pods[0]: a.reason for a in self.advice},
            "nova_server_id": self.nova_server_id, "nothing_to_do": self.nothing_to_do,
            "kubelet_only": self.kubelet_only,
            "size": size_doc(self),
        }


def parse_memory_mib(text: str) -> int:
    """"16Gi", "16G", "16384Mi", "16384" (MiB) → MiB. virsh-style G means GiB."""
    from kubernetes.utils import parse_quantity

    t = text.strip()
    if t.isdigit():
        return int(t)
    if t[-1:] in "KMGT" and not t.endswith("i"):
        t += "i"  # virsh/openstack sizes are binary
    try:
        return math.ceil(parse_quantity(t) / 2**20)
    except ValueError as e:
        raise PlanRefused(f"cannot read memory size {text!r} (use e.g. 16Gi or 16384Mi)") from e


def prepare(request: ScaleUpRequest, api: Any, openstack: OpenStackBackend | None = None,
            libvirt: LibvirtBackend | None = None, *, resuming: bool = False) -> ScaleUpPlan:
    """Read everything, decide the target, refuse what cannot work. No mutation. `api`: the kubernetes ApiClient
    (console/kube/ functions take it); `openstack` / `libvirt`: the backends the session built (None: none).
    `resuming`: the plan of a journaled run being resumed (not refused for making no Pending pod fit: its VM may
    have grown already, so its pods fit now or run)."""
    try:
        node_raw = nodes_ops.get_node_raw(api, request.node)
    except nodes_ops.NodeNotFound as e:
        raise NoSuchNode(str(e)) from e
    except nodes_ops.NodeOpError as e:
        raise PlanRefused(str(e)) from e
    node = NodeInfo.from_api(node_raw)
    method = request.chosen_method
    pods_raw = nodes_ops.pods_on_node_raw(api, node.name)
    from console.kube.model import PodInfo

    pods = [PodInfo.from_api(p) for p in pods_raw]
    pending = nodes_ops.pending_pods(api, node)  # only pods whose node selector/affinity allow this node
    notes: list[str] = []
    nova_id = None
    if method == "openstack":
        if openstack is None:
            raise PlanRefused("OpenStack is not configured (set cloud in the config or OS_CLOUD, or source an openrc)")
        reading = read_vm(node, openstack, libvirt, method="openstack")
        vm = reading.vm
        notes.extend(reading.notes)
        flavors = openstack.flavors()
        current = VmSize(vm.vcpus, vm.memory_mib)
        if not request.flavor:
            raise PlanRefused("--method openstack needs --flavor NAME")
        flavor = next((f for f in flavors if request.flavor in (f.name, f.id)), None)
        if flavor is None:
            raise PlanRefused(f"unknown flavor {request.flavor!r}; flavors: {', '.join(f.name for f in flavors)}")
        target = flavor.size
        if flavor.vcpus < current.vcpus or flavor.ram_mib < current.memory_mib:
            raise PlanRefused(f"flavor {flavor.name} ({target}) is smaller than the VM ({current}): not a scale-up")
        if refusal := disk_refusal(vm.disk_gb, vm.flavor or "?", flavor):
            raise PlanRefused(refusal)
        if "admin" not in openstack.roles():  # Nova's default policy: os-resetState is admin only
            notes.append("you are not a cloud admin: a resize Nova leaves stuck in a task needs an admin's "
                         "`openstack server set --state active`; revert and hard reboot need no admin")
        at_target = flavor.name == vm.flavor and vm.status == "ACTIVE"
        size = f"flavor {flavor.name} ({target})"
    else:
        if libvirt is None:
            raise PlanRefused("libvirt is not configured (set libvirt_uris in the config or CONSOLE_LIBVIRT_URI)")
        reading = read_vm(node, openstack, libvirt, method="libvirt")
        vm, nova_id = reading.vm, reading.nova_server_id
        notes.extend(reading.notes)
        flavors = openstack.flavors() if (openstack is not None and nova_id) else []
        current = VmSize(vm.vcpus, vm.memory_mib)
        if not (request.vcpus and request.memory_mib):
            raise PlanRefused("--method libvirt needs --vcpus N and --memory SIZE")
        target = VmSize(request.vcpus, request.memory_mib)
        flavor = None
        if target.vcpus < current.vcpus or target.memory_mib < current.memory_mib:
            raise PlanRefused(f"target {target} is smaller than the VM ({current}): not a scale-up")
        at_target = vm.running and target == current
        size = str(target)
        host_cpus = libvirt.host_cpus(vm.host)
        if target.vcpus > host_cpus:
            # libvirt and QEMU accept it (up to the machine type's limit); the guest then competes for CPUs
            notes.append(f"{target.vcpus} vCPUs on a host with {host_cpus} physical CPUs: "
                         f"overcommitted {target.vcpus / host_cpus:.1f}×; check the host's load and "
                         "Nova's cpu_allocation_ratio before relying on this")
    nothing, kubelet_only = None, False
    if at_target:
        from console.runbook.verify import capacity_matches, describe_capacity

        if capacity_matches(node_raw, target.vcpus, target.memory_mib):
            nothing = f"{node.name} is already at {size}; nothing changed"
        else:
            kubelet_only = True
            notes.append(f"the VM already runs {size} but the node reports {describe_capacity(node_raw)}: "
                         "only the kubelet is made to re-read its capacity (no cordon, drain or VM change)")
    advice = []
    will_fit: list[str] = []
    still: list[str] = []
    fits_now_count = 0
    # a fleet node's share (request.pods): other Pending pods are advised on (and recorded: the verification may
    # count an interchangeable one) but neither promised nor verified here
    mine = [p for p in pending if request.pods is None or f"{p.namespace}/{p.name}" in request.pods]
    if request.pods and not mine and not at_target and not resuming:
        raise PlanRefused(f"none of the pods this scale-up of {node.name} is for ({', '.join(request.pods)}) "
                          "is Pending any more; nothing was changed")
    for p in pending:
        a = advise(node, pods, p, vm=current, flavors=flavors)
        advice.append(a)
        if p not in mine:
            continue
        if a.fits_now:
            fits_now_count += 1
            continue
        (still if check_target(a, target) else will_fit).append(f"{p.namespace}/{p.name}")
    # a resumed run is not re-judged: it was planned at its start and may have grown the VM already
    if mine and not will_fit and fits_now_count < len(mine) and not at_target and not resuming:
        reasons = "; ".join(f"{a.pods[0]}: {check_target(a, target)}" for a in advice if not a.fits_now)
        hint = next((a.target_reason for a in advice if not a.fits_now), "")
        raise PlanRefused(f"{target} does not make any Pending pod fit on {node.name} ({reasons}). {hint}")
    drain = [] if at_target else drains.drain_plan(pods_raw, force=request.force,
                                                   delete_emptydir_data=request.delete_emptydir_data,
                                                   daemonsets=drains.existing_daemonsets(api))
    blocking = [i for i in drain if i.action == "blocked"]
    if blocking:
        raise DrainRefused(drains.blocked_message(node.name, blocking) + "; nothing was changed", blocking)
    plan = ScaleUpPlan(request, method, node, vm, target, flavor, current, will_fit, still, advice, drain,
                       notes=notes, nova_server_id=nova_id, nothing_to_do=nothing, kubelet_only=kubelet_only)
    warning = nova_regeneration_warning(plan)
    if warning:
        plan.notes.append(warning)
    return _with_steps(plan)


def _with_steps(plan: ScaleUpPlan) -> ScaleUpPlan:
    from console.runbook.steps import build_steps

    plan.steps = [{"id": s.id, "title": s.title} for s in build_steps(plan)]
    return plan


def resumed(plan: ScaleUpPlan, started: dict[str, Any]) -> ScaleUpPlan:
    """The plan of a run being resumed keeps the kind it started as (`started`: the plan in its journal): a run
    killed after the VM grew must finish (uncordon, verify), not read as "nothing to do". Its "before" is the size
    the run started from: the VM read now may have grown already (a resize waiting in VERIFY_RESIZE runs the
    target), which would show "8 vCPU / 12Gi → 8 vCPU / 12Gi"."""
    plan.nothing_to_do, plan.kubelet_only = None, bool(started.get("kubelet_only"))
    before = started.get("current")
    if isinstance(before, dict) and all(isinstance(before.get(k), int) and before[k] > 0
                                        for k in ("vcpus", "memory_mib")):
        plan.current = VmSize(before["vcpus"], before["memory_mib"])
    return _with_steps(plan)


def render_plan(plan: ScaleUpPlan) -> str:
    if plan.nothing_to_do:
        return plan.nothing_to_do
    lines = [f"Scale-up of {plan.node.name} ({plan.method}): {plan.current} → {plan.target}"
             + (f" (flavor {plan.flavor.name})" if plan.flavor else "")]
    lines.append(f"  VM: {plan.vm.name} [{plan.vm.status}] on {plan.vm.host or '?'}: {size_summary(plan)}")
    if plan.will_fit:
        lines.append(f"  makes fit: {', '.join(plan.will_fit)}")
    if plan.still_pending:
        lines.append(f"  still too big: {', '.join(plan.still_pending)}")
    for a in plan.advice:
        if plan.request.pods is None or a.pods[0] in plan.request.pods:  # a fleet node: its own share only
            lines.append(f"    {a.pods[0]}: {a.reason}")
    lines.extend(drain_lines(plan))
    for n in plan.notes:
        lines.append(f"  note: {n}")
    lines.append("  steps:")
    for i, s in enumerate(plan.steps, 1):
        lines.append(f"    {i}. {s['title']}")
    return "\n".join(lines)


def drain_lines(plan: ScaleUpPlan) -> list[str]:
    """Every pod on the node and what the drain does with it (kubectl's reasons)."""
    if not plan.drain:
        return ["  drain: no pods on the node"]
    lines = [f"  drain (timeout {plan.request.drain_timeout:g}s):"]
    for i in plan.drain:
        owner = f" [{i.controller}]" if i.controller else " [no controller]"
        fate = "evict, deleted for good" if i.lost else i.action
        lines.append(f"    {fate} {i.key}{owner}" + (f": {i.why}" if i.why else ""))
    return lines
