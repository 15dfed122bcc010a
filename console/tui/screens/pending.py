"""Pending pods: requests, why (latest FailedScheduling), and where each would fit — now or after a scale-up."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header, Static

from console.kube.model import PodInfo, fmt_cpu, fmt_mem
from console.runbook.fitting import advice_line, candidate_advice, flavor_infos
from console.runbook.plan import FitAdvice
from console.tui.messages import ClusterView
from console.tui.safety import dangerous
from console.tui.screens.base import ConsoleScreen
from console.tui.widgets.cells import theme_colors
from console.tui.widgets.table import Column, VirtualTable

POD_WIDTH = (16, 48)  # the POD column fits the longest namespace/name within these bounds; WHY takes the rest


def pod_columns(pod_width: int = POD_WIDTH[0]) -> list[Column]:
    """POD sized to its content, WHY (the text people read) flexes into the width left over."""
    return [Column("pod", "POD", pod_width), Column("cpu", "CPU", 5, right=True), Column("mem", "MEM", 7, right=True),
            Column("why", "WHY (latest FailedScheduling)", 40, priority=1, flex=True)]


def pod_width(keys: list[str]) -> int:
    low, high = POD_WIDTH
    return max(low, min(high, max((len(k) for k in keys), default=low)))


def pod_key(p: PodInfo) -> str:
    return f"{p.namespace}/{p.name}"


class PendingScreen(ConsoleScreen):
    KEEPS_ITS_PLACE: ClassVar[bool] = True  # `:pending` on it again keeps the highlighted pod (navigation.show)
    CSS_PATH = Path(__file__).with_suffix(".tcss")
    HELP = ("Pods without a node. The lower table says, per node, whether the highlighted pod fits now and the "
            "smallest VM size (and flavor, when the cloud is known) that makes it fit. enter on a node shows the "
            "plan; s, here or in the plan, opens the scale-up runbook for that node and pod. P plans all: the cheapest "
            "set of node scale-ups for every Pending pod, run one node at a time.")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "switch", "Pods/nodes", id="pending-switch"),
        dangerous(Binding("s", "scale_up", "Scale up", id="pending-scale-up"), needs="scale-up"),
        Binding("enter", "plan", "Plan", id="pending-plan"),
        Binding("P", "plan_all", "Plan all", id="pending-plan-all"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.advice: dict[str, FitAdvice] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="pending-status", classes="status-line")
        yield VirtualTable(pod_columns(), empty_text="No Pending pods", id="pending-pods")
        yield Static("", id="pending-why")
        yield VirtualTable(
            [Column("node", "NODE", 20), Column("now", "NOW", 8), Column("size", "SMALLEST SIZE", 20),
             Column("flavor", "FLAVOR", 12, priority=1), Column("reason", "WHY NOT NOW", 30, priority=2, flex=True)],
            empty_text="Select a Pending pod", id="pending-fit",
        )
        yield Footer()

    def on_mount(self) -> None:
        self.ready = True
        self.query_one("#pending-pods", VirtualTable).focus()
        self.view_changed(self.app.view)

    @property
    def pods_table(self) -> VirtualTable:
        return self.query_one("#pending-pods", VirtualTable)

    @property
    def fit_table(self) -> VirtualTable:
        return self.query_one("#pending-fit", VirtualTable)

    def selected_pod(self) -> PodInfo | None:
        key = self.pods_table.cursor_key
        return next((p for p in self.app.view.pending if pod_key(p) == key), None)

    def view_changed(self, view: ClusterView) -> None:
        if not self.ready:
            return
        events = self.app.events
        latest = events.failed_scheduling() if events else {}
        no_event = f"({self.app.gateways.unreadable('events') or 'no FailedScheduling event yet'})"
        keys, cells = [], []
        for p in view.pending:
            ev = latest.get((p.namespace, p.name))
            keys.append(pod_key(p))
            cells.append((pod_key(p), fmt_cpu(p.requests.cpu_m), fmt_mem(p.requests.memory),
                          ev.message if ev else no_event))
        if "pods" in view.unknown:  # not listed (yet, or refused): "No Pending pods" would be a false fact
            cannot = self.app.gateways.unreadable("pods")
            self.pods_table.empty_text = cannot or "Loading pods…"
            status = cannot or "Loading pods…"
        else:
            self.pods_table.empty_text = "No Pending pods"
            status = f"{len(view.pending)} Pending pods · fit analysis over {len(view.rows)} nodes"
        width = pod_width(keys)
        if width != self.pods_table.columns[0].width:
            self.pods_table.set_columns(pod_columns(width))
        self.pods_table.set_rows(keys, cells)
        self.query_one("#pending-status", Static).update(
            status + ("" if self.app.flavors else " · flavors unknown (no cloud configured)"))
        self.show_fit()

    def on_virtual_table_highlighted(self, event: VirtualTable.Highlighted) -> None:
        if event.table.id == "pending-pods":
            self.show_fit()

    def show_fit(self) -> None:
        pod = self.selected_pod()
        why = self.query_one("#pending-why", Static)
        colors = theme_colors(self.app)
        if pod is None:
            why.update("")
            self.fit_table.set_rows([], [])
            return
        events = self.app.events
        ev = (events.failed_scheduling() if events else {}).get((pod.namespace, pod.name))
        advice = candidate_advice(self.app.view, pod, flavor_infos(self.app.flavors))
        self.advice = {a.node: a for a in advice}
        text = Text(f"{pod_key(pod)} needs cpu {fmt_cpu(pod.requests.cpu_m)}, memory "
                    f"{fmt_mem(pod.requests.memory)}. ", style="bold")
        text.append(ev.message if ev else "No FailedScheduling event yet.")
        kind, line = advice_line(advice)
        if kind == "fits":
            text.append(f"\n{line}", style=colors.get("status-ready", "green"))
        elif kind == "scale-up":
            text.append(f"\n{line}", style=f"bold {colors.get('status-pending', 'yellow')}")
        why.update(text)
        keys, cells = [], []
        for a in advice:
            now = Text("fits", style=colors.get("status-ready", "")) if a.fits_now else \
                Text("no", style=colors.get("status-notready", ""))
            keys.append(a.node)
            cells.append((a.node, now, "—" if a.fits_now else str(a.target or "?"),
                          a.flavor.name if a.flavor else ("—" if a.fits_now or not a.flavor_fits else "none fits"),
                          "" if a.fits_now else a.reason))
        self.fit_table.set_rows(keys, cells)

    def action_switch(self) -> None:
        (self.fit_table if self.pods_table.has_focus else self.pods_table).focus()

    def on_virtual_table_selected(self, event: VirtualTable.Selected) -> None:
        if event.table.id == "pending-pods":
            self.fit_table.focus()
        else:
            self.action_plan()

    def action_plan(self) -> None:
        """Show the plan for the highlighted pod on the highlighted (or best) node."""
        from console.tui.screens.plan import PlanModal

        pod = self.selected_pod()
        node = self.fit_table.cursor_key
        if pod is None or node is None:
            self.notify("no Pending pod selected", severity="warning")
            return
        self.app.push_screen(PlanModal(node, pod))

    def action_plan_all(self) -> None:
        """The fleet plan for every Pending pod (console/tui/screens/fleet.py): drop/pin nodes, re-plan, run."""
        from console.tui.screens.fleet import FleetScreen

        self.app.push_screen(FleetScreen())

    def action_scale_up(self) -> None:
        from console.tui.scaleup_start import start_scale_up

        pod = self.selected_pod()
        node = self.fit_table.cursor_key
        if pod is None or node is None:
            self.notify("select a Pending pod and a node first", severity="warning")
            return
        start_scale_up(self.app, node, pod)
