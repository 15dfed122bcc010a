"""Nodes: one row per node with capacity, allocatable and requested resources."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from console.kube.cluster import Cluster, ClusterSnapshot
from console.kube.model import fmt_cpu, fmt_mem

COLUMNS = ("NAME", "ROLES", "STATUS", "CPU cap/alloc/req", "MEM cap/alloc/req", "PODS", "VERSION")


def node_rows(snap: ClusterSnapshot) -> list[tuple[str, ...]]:
    """Table rows for a snapshot, sorted by name (pure, so tests need no UI)."""
    by_node = snap.pods_by_node()
    rows = []
    for name in sorted(snap.nodes):
        n = snap.nodes[name]
        pods = [p for p in by_node.get(name, ()) if not p.terminated]
        cpu_req = sum(p.requests.cpu_m for p in pods)
        mem_req = sum(p.requests.memory for p in pods)
        rows.append(
            (
                name,
                ",".join(n.roles) or "<none>",
                n.status,
                f"{fmt_cpu(n.capacity.cpu_m)}/{fmt_cpu(n.allocatable.cpu_m)}/{fmt_cpu(cpu_req)}",
                f"{fmt_mem(n.capacity.memory)}/{fmt_mem(n.allocatable.memory)}/{fmt_mem(mem_req)}",
                str(len(pods)),
                n.kubelet_version,
            )
        )
    return rows


class NodesScreen(Screen[None]):
    CSS_PATH = Path(__file__).with_suffix(".tcss")

    def __init__(self, cluster: Cluster) -> None:
        super().__init__()
        self.cluster = cluster
        self._shown_generation = (-1, -1)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Loading nodes…", id="nodes-status")
        yield DataTable(id="nodes-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        # re-render from a snapshot at a steady cadence instead of per event
        self.set_interval(0.25, self.refresh_table)

    def refresh_table(self) -> None:
        gen = (self.cluster.nodes.generation, self.cluster.pods.generation)
        if gen == self._shown_generation or not self.cluster.nodes.synced.is_set():
            return
        self._shown_generation = gen
        snap = self.cluster.snapshot()
        table = self.query_one(DataTable)
        table.clear()
        for row in node_rows(snap):
            table.add_row(*row, key=row[0])
        pending = sum(1 for p in snap.pods.values() if p.phase == "Pending" and not p.node)
        self.query_one("#nodes-status", Static).update(
            f"{len(snap.nodes)} nodes · {len(snap.pods)} pods · {pending} Pending · {self.cluster.target.server}"
        )
