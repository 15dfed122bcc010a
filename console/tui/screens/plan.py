"""The scale-up plan for one node (FitAdvice) in a modal, until/unless a scale-up screen takes over."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from console.kube.model import PodInfo
from console.runbook.fitting import flavor_infos, vm_size
from console.runbook.plan import FitAdvice, advise
from console.tui.widgets.cells import theme_colors


def advice_text(advice: FitAdvice, colors: dict[str, str]) -> Text:
    from console.runbook.plan import fmt_cpu, fmt_mem

    ok, bad = colors.get("status-ready", "green"), colors.get("status-notready", "red")
    out = Text()
    out.append(f"{', '.join(advice.pods) or '(no Pending pod)'} on {advice.node}\n", style="bold")
    out.append("fits now\n" if advice.fits_now else "does not fit now\n", style=ok if advice.fits_now else bad)
    out.append(f"  {advice.reason}\n")
    out.append(f"  needs cpu {fmt_cpu(advice.need_cpu_m)}, memory {fmt_mem(advice.need_memory)}; "
               f"free cpu {fmt_cpu(advice.free_cpu_m)}, memory {fmt_mem(advice.free_memory)}\n")
    if advice.current:
        out.append(f"  VM now: {advice.current}\n")
    out.append(f"  {advice.target_reason}\n", style="bold")
    if advice.flavor_fits:
        out.append("\nFlavors\n", style="bold")
        for f in advice.flavor_fits:
            mark = "fits" if f.fits else "too small"
            extra = " (current)" if f.current else (" (shrinks)" if f.shrinks else "")
            out.append(f"  {f.flavor.name:<12} {f.flavor.vcpus:>3} vCPU {f.flavor.ram_mib:>6} MiB  ")
            out.append(f"{mark}{extra}\n", style=ok if f.fits and not f.shrinks else "dim")
    for note in advice.notes:
        out.append(f"  note: {note}\n", style=colors.get("warning", "yellow"))
    return out


class PlanModal(ModalScreen[None]):
    CSS = """
    PlanModal { align: center middle; }
    PlanModal #plan-box { width: 90%; max-width: 100; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1; }
    PlanModal #plan-body { height: auto; max-height: 18; }
    PlanModal Button { margin-top: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,enter", "close", "Close", id="plan-close")]

    def __init__(self, node: str, pod: PodInfo | None = None) -> None:
        super().__init__()
        self.node_name = node
        self.pod = pod

    def compose(self) -> ComposeResult:
        with Vertical(id="plan-box"):
            yield Label(f"Scale-up plan: {self.node_name}", id="plan-title")
            with VerticalScroll(id="plan-body"):
                yield Static(self._body(), id="plan-text")
            yield Label("The scale-up runbook is not available in this build: this is the plan only.",
                        classes="plan-note")
            yield Button("Close", id="plan-close-button")

    def _body(self) -> Text:
        app: Any = self.app
        view = app.view
        node = view.snapshot.nodes.get(self.node_name)
        if node is None:
            return Text(f"node {self.node_name} is gone")
        pods = [self.pod] if self.pod is not None else list(view.pending)
        if not pods:
            return Text(f"no Pending pods: {self.node_name} needs no scale-up for them")
        row = view.rows_by_name.get(self.node_name)
        advice = advise(node, view.pods_by_node.get(self.node_name, ()), pods,
                        vm=vm_size(row.vm if row else None), flavors=flavor_infos(app.flavors))
        return advice_text(advice, theme_colors(app))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)
