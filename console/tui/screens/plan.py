"""The scale-up plan for one node (FitAdvice) in a modal; `s` (or its button) opens the scale-up runbook for it,
exactly as `s` on the Pending screen does (console/tui/navigation.py start_scale_up)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from console.kube.model import PodInfo
from console.runbook.fitting import flavor_infos, vm_size
from console.runbook.plan import FitAdvice, advise
from console.tui.safety import allow_action, dangerous, is_read_only, why_disabled
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
    PlanModal #plan-title { text-style: bold; }
    PlanModal #plan-body { height: auto; max-height: 16; }
    PlanModal .plan-note { width: 1fr; height: auto; color: $text-muted; }
    PlanModal #plan-buttons { height: auto; margin-top: 1; }
    PlanModal Button { margin-right: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="plan-close"),
        dangerous(Binding("s", "scale_up", "Scale up", id="plan-scale-up"), needs="scale-up"),
    ]

    def __init__(self, node: str, pod: PodInfo | None = None) -> None:
        super().__init__()
        self.node_name = node
        self.pod = pod

    def compose(self) -> ComposeResult:
        with Vertical(id="plan-box"):
            yield Static(f"Scale-up plan: {self.node_name}", id="plan-title", markup=False)
            with VerticalScroll(id="plan-body"):
                yield Static(self._body(), id="plan-text")
            yield Static(self._next_step(), id="plan-next", classes="plan-note", markup=False)
            with Horizontal(id="plan-buttons"):
                if self._may_scale_up():
                    yield Button("Scale up", id="plan-scale-up-button", variant="primary")
                yield Button("Close", id="plan-close-button")

    def on_mount(self) -> None:
        # enter presses the focused button: Scale up when allowed (the same as s), else Close
        buttons = self.query(Button)
        buttons.first().focus()

    def _may_scale_up(self) -> bool:
        return not is_read_only(self.app) and not why_disabled(self.app, "scale_up")

    def _next_step(self) -> str:
        """What the admin can do from here: the same answer `s` on the Pending screen gives."""
        if is_read_only(self.app):
            return "read-only mode: scale-up is disabled; this is the plan only. esc closes."
        why = why_disabled(self.app, "scale_up")
        if why:
            return f"scale-up not allowed: {why}. esc closes."
        return (f"s: scale up {self.node_name} (the runbook screen: pick the target, confirm, run, verify) · "
                "esc: close")

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
        if event.button.id == "plan-scale-up-button":
            self.action_scale_up()
        else:
            self.dismiss(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return allow_action(self.app, action)

    def action_scale_up(self) -> None:
        from console.tui.scaleup_start import start_scale_up

        app = self.app
        self.dismiss(None)
        start_scale_up(app, self.node_name, self.pod)

    def action_close(self) -> None:
        self.dismiss(None)
