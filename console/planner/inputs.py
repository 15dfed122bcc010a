"""The planner's input read from the real cluster, cloud and hypervisors: `read_plan_input` (blocking; a worker's).

Kubernetes (one paged list of each): every node; every pod, kept compact page by page — the Pending ones whole
(requests as the scheduler counts them, console/kube/model.pod_requests; nodeSelector, required node affinity,
tolerations, required pod anti-affinity, labels), the bound ones as requests per node and, only where
anti-affinity is in play, their labels and anti-affinity terms (the InterPodAffinity plugin checks both
directions); the latest FailedScheduling message per pod; the PodDisruptionBudgets, to name the pods a drain
could not evict now (a budget selecting them with status.disruptionsAllowed == 0, among the pods
console/kube/drain.py's rules would evict).

The VMs (console/gateways.vm_inventory_for: Nova and/or libvirt, joined to nodes as the VM column joins them):
- a Nova server grows by resize to a strictly larger flavor (never a smaller root disk: Nova cannot shrink one).
  Its live libvirt path is not offered: it would leave Nova's flavor out of date (console/infra/vms.py), which a
  fleet of resizes should not do behind the admin's back;
- a libvirt domain Nova does not manage grows live, any size up to its host's CPUs and memory (virNodeGetInfo;
  the domain's own maxima are raised by the runbook).
Prices: `plan.flavor_prices`, else the flavor extra_spec `plan.price_extra_spec`, else the weights.

Limits: the project quota from Nova `GET /limits` (absolute maxTotalCores − totalCoresUsed, maxTotalRAMSize −
totalRAMUsed; -1 is unlimited — https://docs.openstack.org/api-ref/compute/#limits-limits); per compute host
from Placement (`GET /resource_providers`, `/resource_providers/{uuid}/inventories`, `/usages`: free =
(total − reserved) × allocation_ratio − used, one allocation at most max_unit —
https://docs.openstack.org/api-ref/placement/), which is admin-only by default (placement's policy
`placement:resource_providers:list` is `role:admin`), so a 403 (or no Placement, or an unreachable one) is a
note saying capacity per host is unknown, never an error; per libvirt host from virNodeGetInfo /
virNodeGetFreeMemory minus what its running domains are given. openstacksdk calls: compute.get_limits(),
placement.resource_providers(), placement.resource_provider_inventories(rp),
placement.fetch_resource_provider_usages(rp) (github:openstack/openstacksdk openstack/placement/v1/_proxy.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.planner.model import (
    AntiAffinityTerm,
    BoundPod,
    CostModel,
    Limits,
    Node,
    PendingPod,
    PlanInput,
    Preferences,
    Size,
    Vm,
)

PAGE = 500  # kubectl's --chunk-size


class PlanInputError(ValueError):
    """What the admin asked for does not exist as asked (a pod that is not Pending, say): a usage error."""


# -- pure conversions (API-shaped dicts in, model out) ----------------------------------------------------------
def anti_affinity_terms(pod: Mapping[str, Any]) -> tuple[AntiAffinityTerm, ...]:
    """spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution as the model's terms."""
    anti = ((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}
    return tuple(AntiAffinityTerm(selector=t.get("labelSelector") or {}, topology_key=t.get("topologyKey") or "",
                                  namespaces=tuple(t.get("namespaces") or ()))
                 for t in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ())


def pending_pod(obj: Mapping[str, Any], reason: str = "") -> PendingPod:
    """A Pending pod's scheduling constraints and effective requests."""
    from console.kube.model import PodInfo

    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    requests = PodInfo.from_api(dict(obj)).requests
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return PendingPod(
        namespace=meta.get("namespace") or "default", name=meta.get("name", ""),
        cpu_m=requests.cpu_m, memory=requests.memory, labels=dict(meta.get("labels") or {}),
        node_selector=dict(spec.get("nodeSelector") or {}),
        affinity_terms=tuple(required.get("nodeSelectorTerms") or ()),
        tolerations=tuple(spec.get("tolerations") or ()), anti_affinity=anti_affinity_terms(obj), reason=reason)


def pdb_blocked(pods: Sequence[Mapping[str, Any]], budgets: Sequence[Mapping[str, Any]],
                daemonsets: set[tuple[str, str]] | None = None) -> tuple[str, ...]:
    """"ns/name" of the pods (all on one node) a drain would evict but a PodDisruptionBudget refuses now: one in
    the pod's namespace selects it and allows no disruption (status.disruptionsAllowed 0, as the eviction
    subresource checks it: pkg/registry/core/pod/storage/eviction.go checkAndDecrement)."""
    from console.kube.drain import budget_blocks, classify

    # a DaemonSet or mirror pod is not evicted; a bare pod stops the drain by itself
    evicted = [p for p in pods if classify(dict(p), daemonsets=daemonsets).action == "evict"]
    out = [f"{(p.get('metadata') or {}).get('namespace') or 'default'}/{(p.get('metadata') or {}).get('name', '')}"
           for p, _ in budget_blocks(evicted, budgets)]
    return tuple(sorted(out))


def preferences(settings: Any, *, dropped: Sequence[str] = (), pinned: Mapping[str, Size] | None = None
                ) -> Preferences:
    plan = settings.plan
    return Preferences(avoid_pdb_blocked=plan.avoid_pdb_blocked, prefer_live=plan.prefer_live,
                       dropped=frozenset(dropped), pinned=dict(pinned or {}))


# -- reading ----------------------------------------------------------------------------------------------------
def _pages(api_client: Any, path: str, **options: Any) -> Iterator[list[dict[str, Any]]]:
    """A collection one page at a time (limit/continue), so a big cluster is never one response in memory."""
    from console.kube.rest import Lister

    lister = Lister(api_client, path)
    token = ""
    while True:
        page: dict[str, Any] = {"limit": PAGE, **options}
        if token:
            page["_continue"] = token
        data = json.loads(lister(**page).data)
        yield data.get("items") or []
        token = (data.get("metadata") or {}).get("continue") or ""
        if not token:
            return


@dataclass
class _NodeTally:
    cpu_m: int = 0
    memory: int = 0
    count: int = 0
    pods: list[dict[str, Any]] = field(default_factory=list)  # compact: metadata + spec.affinity + ownerRefs


def _compact(obj: dict[str, Any]) -> dict[str, Any]:
    """What the PDB and anti-affinity checks read of a bound pod (drain.classify: owners, annotations, volumes)."""
    from console.kube.drain import MIRROR_ANNOTATION

    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    notes = meta.get("annotations") or {}
    kept = {k: meta[k] for k in ("namespace", "name", "labels", "ownerReferences") if k in meta}
    if MIRROR_ANNOTATION in notes:  # the one annotation the drain rules read (a static pod is not evicted)
        kept["annotations"] = {MIRROR_ANNOTATION: notes[MIRROR_ANNOTATION]}
    return {"metadata": kept,
            "spec": {"affinity": spec.get("affinity"),
                     "volumes": [v for v in spec.get("volumes") or () if "emptyDir" in (v or {})]},
            "status": {"phase": (obj.get("status") or {}).get("phase")}}


def _list_pods(api_client: Any) -> tuple[list[dict[str, Any]], dict[str, _NodeTally]]:
    """(the unbound Pending pods whole, per node the tally of its non-terminated pods)."""
    from console.kube.model import PodInfo

    pending: list[dict[str, Any]] = []
    tally: dict[str, _NodeTally] = {}
    for page in _pages(api_client, "/api/v1/pods"):
        for obj in page:
            info = PodInfo.from_api(obj)
            if info.terminated:
                continue
            if not info.node:
                if info.phase == "Pending":
                    pending.append(obj)
                continue
            t = tally.setdefault(info.node, _NodeTally())
            t.cpu_m += info.requests.cpu_m
            t.memory += info.requests.memory
            t.count += 1
            t.pods.append(_compact(obj))
    return pending, tally


def _failed_scheduling(api_client: Any) -> tuple[dict[tuple[str, str], str], str]:
    from console.kube.events import read_failed_scheduling

    events, why = read_failed_scheduling(api_client)
    return {k: e.message for k, e in events.items()}, why


def _budgets(api_client: Any) -> tuple[list[dict[str, Any]], str]:
    from kubernetes.client.exceptions import ApiException

    try:
        return [b for page in _pages(api_client, "/apis/policy/v1/poddisruptionbudgets") for b in page], ""
    except ApiException as e:
        if e.status not in (403, 404):
            raise
        return [], (f"cannot list PodDisruptionBudgets ({e.status}): nodes whose drain a budget would hold are "
                    "not known, the fleet's drain finds out")


def select_pods(pending: list[dict[str, Any]], wanted: Sequence[str] | None, api_client: Any, *,
                waiting_only: bool = False) -> list[dict[str, Any]]:
    """The Pending pods named "ns/name" (None: all); a name that is not an unbound Pending pod is PlanInputError,
    or with `waiting_only` left out (the named pods that still wait)."""
    if wanted is None:
        return pending
    by_key = {f"{(p['metadata'].get('namespace') or 'default')}/{p['metadata']['name']}": p for p in pending}
    out = []
    for key in dict.fromkeys(wanted):
        if key in by_key:
            out.append(by_key[key])
            continue
        ns, _, name = key.partition("/")
        if not name:
            raise PlanInputError(f"--pods {key}: give NAMESPACE/NAME")
        if waiting_only:
            continue
        from console.kube.nodes_ops import get_pod_raw

        obj = get_pod_raw(api_client, ns, name)
        if obj is None:
            raise PlanInputError(f"pod {key} not found")
        phase, node = (obj.get("status") or {}).get("phase", "?"), (obj.get("spec") or {}).get("nodeName")
        where = f" on node {node}" if node else ""
        raise PlanInputError(f"pod {key} is not waiting for a node (phase {phase}{where}): only unscheduled "
                             "Pending pods are planned")
    return out


def read_plan_input(api_client: Any, settings: Any, *, pods: Sequence[str] | None = None,
                    prefs: Preferences | None = None, waiting_only: bool = False) -> PlanInput:
    """Everything the planner needs, read once (see the module docstring). `pods`: "ns/name" of the Pending pods
    to plan (None: every one). Raises the API's errors (console/faults.py classifies them), PlanInputError for a
    pod that is not Pending (`waiting_only`: such a pod is left out), VmListError when no VM backend answers."""
    from console.kube.model import NodeInfo

    nodes = [NodeInfo.from_api(o) for page in _pages(api_client, "/api/v1/nodes") for o in page]
    pending_raw, tally = _list_pods(api_client)
    chosen = select_pods(pending_raw, pods, api_client, waiting_only=waiting_only)
    reasons, events_note = _failed_scheduling(api_client) if chosen else ({}, "")
    pending = tuple(pending_pod(p, reasons.get(((p["metadata"].get("namespace") or "default"),
                                                p["metadata"]["name"]), ""))
                    for p in sorted(chosen, key=lambda o: (o["metadata"].get("namespace") or "",
                                                           o["metadata"]["name"])))
    notes = [n for n in (events_note,) if n]
    budgets, budget_note = _budgets(api_client)
    if budget_note:
        notes.append(budget_note)
    daemonsets = None
    if any(int((b.get("status") or {}).get("disruptionsAllowed") or 0) <= 0 for b in budgets):
        from console.kube.drain import existing_daemonsets

        daemonsets = existing_daemonsets(api_client)
    bound_anti = any(anti_affinity_terms(p) for t in tally.values() for p in t.pods)
    anti_in_play = bound_anti or any(p.anti_affinity for p in pending)
    vms, limits, vm_notes = read_vms(settings, nodes)
    notes += vm_notes
    out_nodes = []
    for n in sorted(nodes, key=lambda x: x.name):
        t = tally.get(n.name, _NodeTally())
        vm = vms.get(n.name)
        out_nodes.append(_node(n, t, vm, budgets, daemonsets, anti_in_play))
    plan = settings.plan
    return PlanInput(nodes=tuple(out_nodes), pods=pending,
                     limits=Limits(hosts=limits.hosts, quota=limits.quota, notes=(*limits.notes, *notes)),
                     cost=CostModel(vcpu=plan.vcpu_weight, memory_gib=plan.memory_gib_weight),
                     prefs=prefs if prefs is not None else preferences(settings))


def _node(n: Any, t: _NodeTally, vm: Vm | None, budgets: list[dict[str, Any]],
          daemonsets: set[tuple[str, str]] | None, anti_in_play: bool) -> Node:
    from console.infra.sizes import VmSize
    from console.runbook.plan import overhead_fraction

    bound: tuple[BoundPod, ...] = ()
    if anti_in_play:
        bound = tuple(BoundPod(namespace=p["metadata"].get("namespace") or "default", name=p["metadata"]["name"],
                               labels=dict(p["metadata"].get("labels") or {}), anti_affinity=anti_affinity_terms(p))
                      for p in t.pods)
    frac = overhead_fraction(n, VmSize(vm.current.vcpus, vm.current.memory_mib) if vm is not None else None)
    return Node(
        name=n.name, labels=dict(n.labels), taints=tuple(dict(x) for x in n.taints), unschedulable=n.unschedulable,
        ready=n.ready == "True", allocatable_cpu_m=n.allocatable.cpu_m, allocatable_memory=n.allocatable.memory,
        allocatable_pods=n.allocatable.pods or 110, requested_cpu_m=t.cpu_m, requested_memory=t.memory,
        pod_count=t.count, reserved_cpu_m=max(0, n.capacity.cpu_m - n.allocatable.cpu_m),
        reserved_memory=max(0, n.capacity.memory - n.allocatable.memory), overhead_fraction=frac, pods=bound,
        vm=vm, pdb_blocked=pdb_blocked(t.pods, budgets, daemonsets) if budgets else ())


def read_vms(settings: Any, nodes: Sequence[Any]) -> tuple[dict[str, Vm], Limits, list[str]]:
    """Node name → its VM (the sizes it can go to), the limits, and notes on what could not be read."""
    from console.infra.inventory import vm_inventory
    from console.infra.libvirt import libvirt_uris

    inventory = vm_inventory(settings.cloud, libvirt_uris(settings.libvirt_uris))  # as gateways.vm_inventory_for
    if inventory is None:
        return {}, Limits(), ["no cloud or hypervisor configured (cloud / libvirt_uris): no node can be grown"]
    from console.infra.capacity import read_capacity

    return read_capacity(inventory, nodes, settings.plan)
