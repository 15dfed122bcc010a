"""One consistent picture of the cluster, as every screen and `console get` render it.

`build_view` joins a snapshot of the node and pod caches with the VMs and the metrics into the node table's rows
(console/kube/nodetable.py), the pods by node and the Pending pods: the TUI computes it in a worker from its
watch caches, `console get` from one list of each (`read_snapshot`), so both show the same figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from console.infra.vms import VmView, match_nodes
from console.kube.cluster import ClusterSnapshot
from console.kube.metrics import MetricsSnapshot
from console.kube.model import PodInfo
from console.kube.nodetable import NodeRow, node_rows


@dataclass(frozen=True)
class ClusterView:
    """One consistent picture of the cluster the screens render from."""

    snapshot: ClusterSnapshot
    rows: list[NodeRow]
    rows_by_name: dict[str, NodeRow]
    pods_by_node: dict[str, list[PodInfo]]
    pending: list[PodInfo]
    generation: tuple[int, ...]
    # data sets whose cache had not synced (or was refused) when the snapshot was taken: the screens say so
    # instead of showing what is missing as fact (no pods listed is not "0 requested, nothing Pending")
    unknown: frozenset[str] = frozenset()

    @classmethod
    def empty(cls) -> ClusterView:
        return cls(ClusterSnapshot({}, {}), [], {}, {}, [], (-1,))


def build_view(snap: ClusterSnapshot, servers: Mapping[str, VmView] | None = None,
               metrics: MetricsSnapshot | None = None, generation: tuple[int, ...] = (0,),
               unknown: frozenset[str] = frozenset()) -> ClusterView:
    """The rows (each node joined with its VM among `servers` and its usage), pods by node, Pending pods by name."""
    vms = match_nodes(snap.nodes.values(), servers) if servers else None
    rows = node_rows(snap, vms, metrics)
    by_node = snap.pods_by_node()
    pending = sorted((p for p in by_node.get("", ()) if p.phase == "Pending"), key=lambda p: (p.namespace, p.name))
    return ClusterView(snap, rows, {r.name: r for r in rows}, by_node, pending, generation, unknown)


def read_snapshot(api_client: Any) -> ClusterSnapshot:
    """Every node and pod, listed once (paged) with the caches' own decoding (console/kube/fastcodec.py), no
    watch: what a headless command shows. The API's errors propagate (console/faults.py classifies them)."""
    from console.kube.cache import ResourceCache
    from console.kube.fastcodec import NODE_CODEC, POD_CODEC
    from console.kube.rest import Lister

    nodes = ResourceCache(Lister(api_client, "/api/v1/nodes"), NODE_CODEC, name="nodes")
    pods = ResourceCache(Lister(api_client, "/api/v1/pods"), POD_CODEC, name="pods")
    nodes.relist()
    pods.relist()
    return ClusterSnapshot({name: n for (_, name), n in nodes.snapshot().items()}, pods.snapshot())
