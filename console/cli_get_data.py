"""What `console get` reads and how it prints it: one list of each collection, the screens' figures as kubectl-like
tables and as JSON (Kubernetes quantities). Headless; console/cli_get.py is the command."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

UNKNOWN = "<unknown>"  # what kubectl top prints for a node without metrics


# -- reading: one list of each, as the TUI's caches hold them ------------------------------------------------------
def cluster_view(api: Any, settings: Any, *, metrics: bool = True, pod_metrics: bool = False) -> tuple[Any, Any]:
    """The ClusterView the screens render (nodes, pods, VMs, usage) and the metrics snapshot (None: not read)."""
    from console.kube.clusterview import build_view, read_snapshot
    from console.kube.metrics import MetricsReader

    snap = read_snapshot(api)
    usage = None
    if metrics:
        reader = MetricsReader(api)
        reader.want_pods(pod_metrics)
        usage = reader.poll()
    return build_view(snap, servers(settings), usage), usage


def _inventory(settings: Any) -> Any:
    from console.gateways import vm_inventory_for

    return vm_inventory_for(settings)


def servers(settings: Any) -> dict[str, Any] | None:
    """The VMs the TUI's VM column shows (None: no cloud or hypervisor configured); a backend that fails is a
    warning, as the TUI's notification: the rest is still shown."""
    from console.infra.inventory import VmListError

    inventory = _inventory(settings)
    if inventory is None:
        return None
    try:
        listing = inventory.list()
    except VmListError as e:
        print(f"warning: VMs not shown: {e}", file=sys.stderr)
        return None
    for problem in listing.problems:
        print(f"warning: {problem}", file=sys.stderr)
    return listing.vms


def flavors(settings: Any) -> list[Any]:
    from console.infra.inventory import VmListError

    inventory = _inventory(settings)
    if inventory is None:
        return []
    try:
        return list(inventory.flavors())
    except VmListError as e:
        print(f"warning: flavors unknown: {e}", file=sys.stderr)
        return []


def failed_scheduling(api: Any) -> tuple[dict[tuple[str, str], Any], str]:
    """The latest FailedScheduling event per pod (what the Pending screen's WHY shows), or why none is known."""
    from console.kube.events import read_failed_scheduling

    return read_failed_scheduling(api)


# -- what each view shows ----------------------------------------------------------------------------------------
def cpu_quantity(millis: int) -> str:
    """Millicores as Kubernetes writes a CPU quantity: "4", "1500m" (k8s.io/apimachinery resource.Quantity)."""
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def memory_quantity(n: int) -> str:
    """Bytes as Kubernetes' canonical binary quantity: the largest of Ki, Mi, Gi, Ti, Pi, Ei that divides them
    ("8Gi", "4030532Ki"), plain bytes otherwise (apimachinery quantity.go CanonicalizeBytes, BinarySI)."""
    if n == 0 or -1024 < n < 1024:
        return str(n)
    suffix = ""
    for unit in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"):
        if n % 1024:
            break
        n //= 1024
        suffix = unit
    return f"{n}{suffix}"


def quantities(cpu_m: int, memory: int) -> dict[str, str]:
    return {"cpu": cpu_quantity(cpu_m), "memory": memory_quantity(memory)}


def vm_json(row: Any) -> dict[str, Any] | None:
    vm = row.vm
    if vm is None:
        return None
    from console.infra.sizes import MiB

    return {"name": vm.name, "vcpus": vm.vcpus or None, "memory": memory_quantity(vm.ram_mib * MiB) if vm.ram_mib
            else None, "flavor": vm.flavor or None, "status": vm.status, "host": vm.host or None,
            # whose figures vcpus/memory are: the hypervisor's (what runs) where it was read, else Nova's flavor
            "backend": "libvirt" if vm.running is not None else "openstack",
            "stale": list(row.stale.sides), "markers": row.stale.markers}


def node_json(row: Any) -> dict[str, Any]:
    n, req, use = row.node, row.requested, row.usage
    return {"name": n.name, "roles": list(n.roles), "status": n.status, "kubeletVersion": n.kubelet_version,
            "capacity": quantities(n.capacity.cpu_m, n.capacity.memory),
            "allocatable": quantities(n.allocatable.cpu_m, n.allocatable.memory),
            "requested": quantities(req.cpu_m, req.memory),
            "usage": quantities(use.cpu_m, use.memory) if use is not None else None,
            "pods": req.pods, "nfdLabels": row.nfd_labels, "vm": vm_json(row)}


def _pct(ratio: float | None) -> str:
    return UNKNOWN if ratio is None else f"{int(ratio * 100)}%"  # kubectl top: over allocatable, truncated


def node_cells(row: Any, wide: bool) -> list[str]:
    from console.infra.vms import short_size
    from console.kube.model import fmt_cpu, fmt_mem

    n, req, use = row.node, row.requested, row.usage
    vm = f"{row.vm.cell(row.stale, wide)}{row.stale.markers}" if row.vm is not None else "<none>"
    roles = ",".join(n.roles) or "<none>"
    if not wide:
        return [n.name, n.status, roles, f"{fmt_cpu(req.cpu_m)}/{fmt_cpu(n.allocatable.cpu_m)}",
                f"{fmt_mem(req.memory)}/{fmt_mem(n.allocatable.memory)}", _pct(row.cpu_use_ratio()),
                _pct(row.mem_use_ratio()), str(req.pods), str(row.nfd_labels), vm]
    cpu_use = UNKNOWN if use is None else f"{use.cpu_m}m {_pct(row.cpu_use_ratio())}"
    mem_use = UNKNOWN if use is None else f"{use.memory // (1024 * 1024)}Mi {_pct(row.mem_use_ratio())}"
    size = row.vm.size if row.vm is not None else None
    return [n.name, n.status, roles, n.kubelet_version,
            f"{fmt_cpu(n.capacity.cpu_m)}/{fmt_cpu(n.allocatable.cpu_m)}/{fmt_cpu(req.cpu_m)}",
            f"{fmt_mem(n.capacity.memory)}/{fmt_mem(n.allocatable.memory)}/{fmt_mem(req.memory)}",
            cpu_use, mem_use, str(req.pods), str(row.nfd_labels), vm, short_size(size) if size else "<none>",
            (row.vm.host if row.vm is not None else "") or "<none>"]


NODE_HEADERS = ["NAME", "STATUS", "ROLES", "CPU REQ/ALLOC", "MEM REQ/ALLOC", "CPU%", "MEM%", "PODS", "NFD", "VM"]
NODE_HEADERS_WIDE = ["NAME", "STATUS", "ROLES", "VERSION", "CPU CAP/ALLOC/REQ", "MEM CAP/ALLOC/REQ", "CPU USE",
                     "MEM USE", "PODS", "NFD", "VM", "VM SIZE", "VM HOST"]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns as kubectl aligns them: its tabwriter pads each cell to the column's widest plus 3, at least 6,
    and leaves the last column unpadded (k8s.io/cli-runtime pkg/printers/tabwriter.go)."""
    lines = [list(headers), *[list(r) for r in rows]]
    widths = [max(6, max(len(line[i]) for line in lines) + 3) for i in range(len(headers) - 1)]
    return "\n".join("".join(c.ljust(w) for c, w in zip(line, widths, strict=False)) + line[-1] for line in lines)


def legend_line(rows: Sequence[Any]) -> None:
    """The VM markers' legend (stderr: stdout stays the table), when a marker is shown."""
    from console.infra.vms import legend

    sides = {side for r in rows if r.stale for side in r.stale.sides}
    if sides:
        print(f"VM markers: {legend(sides)}", file=sys.stderr)


# -- Pending pods ------------------------------------------------------------------------------------------------
def pending_fits(view: Any, latest: dict[tuple[str, str], Any], flavor_list: list[Any]) -> list[tuple[Any, Any, list]]:
    """(pod, its latest FailedScheduling event or None, the fit advice per node, best first) per Pending pod.

    The screen analyses the one pod under the cursor; here every Pending pod is: pods with the same requests (a
    Job's or a Deployment's replicas) get the same advice on every node — a pod without a node is nobody's "other
    pod" — so each shape of requests is analysed once, not once per pod (pods × nodes). The advice is shared: its
    `pods` names the first pod of that shape (nothing here prints it)."""
    from console.runbook.fitting import candidate_advice, flavor_infos

    infos = flavor_infos(flavor_list)
    by_requests: dict[Any, list[Any]] = {}
    out = []
    for p in view.pending:
        advice = by_requests.get(p.requests)
        if advice is None:
            advice = by_requests[p.requests] = candidate_advice(view, p, infos)
        out.append((p, latest.get((p.namespace, p.name)), advice))
    return out


def advice_text(advice: list[Any]) -> str:
    """The Pending screen's line under the pod (console/runbook/fitting.advice_line)."""
    from console.runbook.fitting import advice_line

    return advice_line(advice)[1]


def size_json(size: Any) -> dict[str, Any] | None:
    from console.infra.sizes import MiB

    return None if size is None else {"vcpus": size.vcpus, "memory": memory_quantity(size.memory_mib * MiB)}


def pending_json(fit: tuple[Any, Any, list], why_none: str) -> dict[str, Any]:
    from console.runbook.fitting import fits_now_on, smallest_scale_up

    pod, event, advice = fit
    best = smallest_scale_up(advice)
    return {"namespace": pod.namespace, "name": pod.name,
            "requests": quantities(pod.requests.cpu_m, pod.requests.memory),
            "failedScheduling": event.message if event else None,
            "failedSchedulingNote": "" if event else (why_none or "no FailedScheduling event yet"),
            "fitsNowOn": fits_now_on(advice),
            "scaleUp": None if best is None else {"node": best.node, "size": size_json(best.target),
                                                  "flavor": best.flavor.name if best.flavor else None},
            "advice": advice_text(advice),
            "candidates": [{"node": a.node, "fitsNow": a.fits_now, "size": size_json(a.target),
                            "flavor": a.flavor.name if a.flavor else None, "reason": a.reason} for a in advice]}


def pending_cells(fit: tuple[Any, Any, list], why_none: str, wide: bool) -> list[str]:
    from console.kube.model import fmt_cpu, fmt_mem
    from console.runbook.fitting import fits_now_on, smallest_scale_up

    pod, event, advice = fit
    why = event.message if event else f"({why_none or 'no FailedScheduling event yet'})"
    head = [f"{pod.namespace}/{pod.name}", fmt_cpu(pod.requests.cpu_m), fmt_mem(pod.requests.memory)]
    if not wide:
        return [*head, advice_text(advice), why]
    best = smallest_scale_up(advice)
    return [*head, ",".join(fits_now_on(advice)) or "<none>",
            f"{best.node} → {best.target}" if best is not None else "<none>",
            best.flavor.name if best is not None and best.flavor else "<none>", why]


# -- one node ----------------------------------------------------------------------------------------------------
def node_origins(api: Any, node: Any, nfd_version: str | None) -> tuple[dict[str, Any], str]:
    """Each label's origin as the node detail computes it: the node's NodeFeatures and the cluster's rules."""
    from console.kube.nfdstore import RuleStore, list_node_features
    from console.kube.nodelabels import read_label_origins

    return read_label_origins(node, lambda: list_node_features(api, node.name).get(node.name, []),
                              lambda: RuleStore(api).list(), nfd_version)


def node_detail_json(row: Any, view: Any, metrics: Any, origins: dict[str, Any], note: str) -> dict[str, Any]:
    from console.kube.nodelabels import group_labels

    n = row.node
    pods = sorted(view.pods_by_node.get(n.name, ()), key=lambda p: (p.namespace, p.name))
    out = node_json(row)
    out["labels"] = group_labels(n.labels, n.annotations, origins)
    out["labelsNote"] = note
    out["taints"] = [dict(t) for t in n.taints]
    out["conditions"] = [{"type": t, "status": s, "reason": r} for t, s, r in n.conditions]
    out["unschedulable"] = n.unschedulable
    out["podList"] = [{"namespace": p.namespace, "name": p.name, "phase": p.phase,
                       "requests": quantities(p.requests.cpu_m, p.requests.memory),
                       "usage": _pod_usage(metrics, p)} for p in pods]
    return out


def _pod_usage(metrics: Any, pod: Any) -> dict[str, str] | None:
    used = metrics.pod(pod.namespace, pod.name) if metrics is not None else None
    return quantities(used.cpu_m, used.memory) if used is not None else None


def node_detail_text(row: Any, view: Any, metrics: Any, origins: dict[str, Any], note: str, *,
                     wide: bool) -> list[str]:
    """The node detail's sections as text: the title line's figures, resources, labels by origin; wide adds
    taints, conditions and pods (kubectl describe node's order of things)."""
    from console.kube.model import fmt_cpu, fmt_mem
    from console.kube.nodelabels import group_labels, nfd_label_count

    n, req, use = row.node, row.requested, row.usage
    out = [f"Name:      {n.name}", f"Status:    {n.status}", f"Roles:     {','.join(n.roles) or '<none>'}",
           f"Version:   {n.kubelet_version}"]
    if row.vm is not None:
        name = "" if row.vm.name == n.name else f"{row.vm.name} "
        stale = f"  {row.stale.markers} {row.stale.text()}" if row.stale else ""
        host = f" on {row.vm.host}" if row.vm.host else ""
        out.append(f"VM:        {name}{row.vm.size_text()}{host}{stale}")
    else:
        out.append("VM:        <none>")
    out.append("Resources:   capacity  allocatable  requested     in use")
    for kind, cap, alloc, used, fmt, now in (
            ("cpu", n.capacity.cpu_m, n.allocatable.cpu_m, req.cpu_m, fmt_cpu, use.cpu_m if use else None),
            ("memory", n.capacity.memory, n.allocatable.memory, req.memory, fmt_mem, use.memory if use else None),
            ("pods", n.capacity.pods * 1000, n.allocatable.pods * 1000, req.pods * 1000, fmt_cpu, -1)):
        line = f"  {kind:<8} {fmt(cap):>9}  {fmt(alloc):>11}  {fmt(used):>9}"
        if now is None:
            line += f"  {UNKNOWN:>9}"
        elif now >= 0:  # kubectl top node: usage and its share of allocatable
            line += f"  {fmt(now):>9} {int(now / alloc * 100) if alloc else 0:>3}%"
        out.append(line)
    if use is None and metrics is not None and metrics.state != "live":
        out.append(f"  usage {UNKNOWN}: {metrics.reason}")
    out.append(f"Labels ({len(n.labels)}, NFD {nfd_label_count(n.labels, n.annotations)}) by origin:")
    for group, labels in group_labels(n.labels, n.annotations, origins).items():
        out.append(f"  {group} ({len(labels)})")
        out.extend(f"    {k}={v}" if v else f"    {k}" for k, v in labels.items())
    if note:
        out.append(f"  ({note})")
    if wide:
        out.append("Taints:")
        out.extend([f"  {t.get('key', '')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect', '')}"
                     for t in n.taints] or ["  <none>"])
        out.append("Conditions:")
        out.extend(f"  {t:<16} {s:<8} {r}".rstrip() for t, s, r in n.conditions or (("Ready", n.ready, ""),))
        pods = sorted(view.pods_by_node.get(n.name, ()), key=lambda p: (p.namespace, p.name))
        out.append(f"Pods ({len(pods)}):")
        rows = []
        for p in pods:
            used = metrics.pod(p.namespace, p.name) if metrics is not None else None
            rows.append([f"{p.namespace}/{p.name}", p.phase, fmt_cpu(p.requests.cpu_m), fmt_mem(p.requests.memory),
                         f"{fmt_cpu(used.cpu_m)}/{fmt_mem(used.memory)}" if used is not None else UNKNOWN])
        out.extend("  " + line for line in table(["POD", "PHASE", "CPU", "MEM", "IN USE"], rows).splitlines())
    return out
