"""Rows of the Nodes view: one pass over pods (indexed by node), then one row per node."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from console.infra.vms import Staleness, VmView
from console.kube.cluster import ClusterSnapshot
from console.kube.metrics import MetricsSnapshot, Usage
from console.kube.model import NodeInfo, PodInfo, Resources
from console.kube.nodelabels import nfd_label_count


@dataclass(frozen=True)
class NodeRow:
    node: NodeInfo
    requested: Resources  # sum over the node's non-terminated pods (pods = their count)
    nfd_labels: int  # labels NFD manages (its feature-labels annotation): what the node detail files under NFD
    vm: VmView | None = None
    stale: Staleness = field(default_factory=Staleness)  # who disagrees with what runs: kubelet, Nova flavor
    usage: Usage | None = None  # in use now (metrics.k8s.io); None when not known — never shown as 0

    @property
    def name(self) -> str:
        return self.node.name

    def cpu_ratio(self) -> float:
        return self.requested.cpu_m / self.node.allocatable.cpu_m if self.node.allocatable.cpu_m else 0.0

    def mem_ratio(self) -> float:
        return self.requested.memory / self.node.allocatable.memory if self.node.allocatable.memory else 0.0

    def cpu_use_ratio(self) -> float | None:
        """Usage over allocatable, as kubectl top node's CPU(%); None when usage is not known."""
        alloc = self.node.allocatable.cpu_m
        return self.usage.cpu_m / alloc if self.usage is not None and alloc else None

    def mem_use_ratio(self) -> float | None:
        alloc = self.node.allocatable.memory
        return self.usage.memory / alloc if self.usage is not None and alloc else None

    def search_text(self) -> str:
        """What `/text` matches against (lower case)."""
        vm = self.vm.name if self.vm else ""
        n = self.node
        return f"{n.name} {' '.join(n.roles)} {n.status} {n.kubelet_version} {vm}".lower()


def requests_by_node(pods: Mapping[Any, PodInfo]) -> dict[str, Resources]:
    acc: dict[str, list[int]] = {}
    for p in pods.values():
        if not p.node or p.terminated:
            continue
        a = acc.get(p.node)
        if a is None:
            a = acc[p.node] = [0, 0, 0]
        a[0] += p.requests.cpu_m
        a[1] += p.requests.memory
        a[2] += 1
    return {n: Resources(c, m, k) for n, (c, m, k) in acc.items()}


def node_rows(snap: ClusterSnapshot, vms: Mapping[str, VmView] | None = None,
              metrics: MetricsSnapshot | None = None) -> list[NodeRow]:
    """Rows sorted by name; `vms` maps node name to its backing VM (when a cloud or libvirt is configured);
    `metrics` gives each node's usage where metrics.k8s.io knows it."""
    used = requests_by_node(snap.pods)
    vms = vms or {}
    empty = Resources()
    rows = []
    for name in sorted(snap.nodes):
        n = snap.nodes[name]
        vm = vms.get(name)
        rows.append(NodeRow(n, used.get(name, empty), nfd_label_count(n.labels, n.annotations), vm,
                            vm.staleness(n.capacity) if vm else Staleness(),
                            metrics.node(name) if metrics is not None else None))
    return rows


SORT_KEYS = {
    "name": lambda r: r.node.name,
    "status": lambda r: (r.node.status, r.node.name),
    "cpu": lambda r: (-r.cpu_ratio(), r.node.name),
    "mem": lambda r: (-r.mem_ratio(), r.node.name),
    "pods": lambda r: (-r.requested.pods, r.node.name),
    # unknown usage sorts last, not as 0% (which would put it among the idle nodes)
    "cpu-use": lambda r: (r.cpu_use_ratio() is None, -(r.cpu_use_ratio() or 0.0), r.node.name),
    "mem-use": lambda r: (r.mem_use_ratio() is None, -(r.mem_use_ratio() or 0.0), r.node.name),
    "nfd": lambda r: (-r.nfd_labels, r.node.name),
}
