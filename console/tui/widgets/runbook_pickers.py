"""Pickers for the scale-up screen: the node, and the target (a flavor with fit hints, or vCPUs and memory).

Both are modal and pure: they show what the screen's workers already loaded and dismiss with the choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList
from textual.widgets.option_list import Option

from console.runbook.plan import FitAdvice, FlavorInfo, VmSize, check_target, fmt_mem

MiB = 2**20


@dataclass(frozen=True)
class Target:
    """What the admin picked: a flavor (OpenStack resize) or vCPUs + memory (libvirt live)."""

    flavor: str | None = None
    vcpus: int | None = None
    memory_mib: int | None = None

    @property
    def method(self) -> str:
        return "openstack" if self.flavor else "libvirt"

    def __str__(self) -> str:
        if self.flavor:
            return f"flavor {self.flavor}"
        return f"{self.vcpus} vCPU / {fmt_mem((self.memory_mib or 0) * MiB)} (libvirt)"


def flavor_hint(flavor: FlavorInfo, current: VmSize | None, advice: list[FitAdvice]) -> str:
    """`m1.large  8 vCPU / 12Gi  fits default/nginx` — what choosing this flavor would do."""
    size = f"{flavor.name:<12} {flavor.size!s:<16}"
    if current and (flavor.vcpus < current.vcpus or flavor.ram_mib < current.memory_mib):
        return f"{size} smaller than the VM"
    if current and (flavor.vcpus, flavor.ram_mib) == (current.vcpus, current.memory_mib):
        return f"{size} current size"
    waiting = [a for a in advice if not a.fits_now]
    fits = [a.pods[0] for a in waiting if check_target(a, flavor.size) is None]
    if not waiting:
        return f"{size} (no Pending pod needs it)"
    if fits:
        return f"{size} fits {', '.join(fits[:3])}" + (f" +{len(fits) - 3}" if len(fits) > 3 else "")
    return f"{size} too small for the Pending pods"


def default_target(advice: list[FitAdvice], pod: str | None, have_flavors: bool) -> Target | None:
    """The smallest target that makes `pod` (or the first Pending pod that does not fit) fit."""
    chosen = next((a for a in advice if pod and a.pods[0] == pod), None)
    if chosen is None:
        chosen = next((a for a in advice if not a.fits_now), None)
    if chosen is None or chosen.fits_now:
        return None
    if have_flavors and chosen.flavor is not None:
        return Target(flavor=chosen.flavor.name)
    if chosen.target is not None:
        return Target(vcpus=chosen.target.vcpus, memory_mib=chosen.target.memory_mib)
    return None


class NodePicker(ModalScreen[str | None]):
    """Choose the node whose VM to scale up."""

    DEFAULT_CSS = """
    NodePicker { align: center middle; }
    NodePicker #node-box { width: 70; max-width: 95%; height: auto; max-height: 90%;
                           border: thick $primary; background: $surface; padding: 0 1; }
    NodePicker #node-list { height: auto; max-height: 16; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="scale-up-node-cancel")]

    def __init__(self, nodes: list[tuple[str, str]], current: str | None = None) -> None:
        super().__init__()
        self.nodes = nodes  # (name, one-line summary)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="node-box"):
            yield Label("Scale up which node's VM?", markup=False)
            yield OptionList(*[Option(f"{name:<24} {summary}", id=name) for name, summary in self.nodes],
                             id="node-list")

    def on_mount(self) -> None:
        olist = self.query_one(OptionList)
        olist.focus()
        names = [n for n, _ in self.nodes]
        if self.current in names:
            olist.highlighted = names.index(self.current)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class TargetPicker(ModalScreen[Target | None]):
    """A flavor (OpenStack resize; each with what it would make fit) or vCPUs + memory (libvirt live)."""

    DEFAULT_CSS = """
    TargetPicker { align: center middle; }
    TargetPicker #target-box { width: 80; max-width: 98%; height: auto; max-height: 95%;
                               border: thick $primary; background: $surface; padding: 0 1; }
    TargetPicker #target-flavors { height: auto; max-height: 10; }
    TargetPicker #target-custom { height: 3; }
    TargetPicker #target-custom Input { width: 1fr; }
    TargetPicker #target-custom Button { margin-left: 1; }
    TargetPicker .target-title { text-style: bold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="scale-up-target-cancel")]

    def __init__(self, node: str, flavors: list[FlavorInfo], current: VmSize | None, advice: list[FitAdvice],
                 *, suggested: Target | None = None, libvirt: bool = True, note: str = "") -> None:
        super().__init__()
        self.node = node
        self.flavors = sorted(flavors, key=lambda f: (f.vcpus, f.ram_mib, f.name))
        self.current = current
        self.advice = advice
        self.suggested = suggested
        self.libvirt = libvirt
        self.note = note

    def compose(self) -> ComposeResult:
        with Vertical(id="target-box"):
            now = f" (now {self.current})" if self.current else ""
            yield Label(f"Target for {self.node}{now}", classes="target-title", markup=False)
            if self.note:
                yield Label(self.note, markup=False)
            if self.flavors:
                yield Label("Flavor — OpenStack resize (reboots the node; it is drained first):", markup=False)
                yield OptionList(*[Option(flavor_hint(f, self.current, self.advice), id=f.name,
                                          disabled=bool(self.current and (f.vcpus < self.current.vcpus
                                                                          or f.ram_mib < self.current.memory_mib)))
                                   for f in self.flavors], id="target-flavors")
            else:
                yield Label("No flavors (OpenStack is not configured or the VM is not a Nova server).", markup=False)
            if self.libvirt:
                yield Label("Or vCPUs and memory — libvirt live scale-up:", markup=False)
                with Horizontal(id="target-custom"):
                    s = self.suggested if self.suggested and not self.suggested.flavor else None
                    yield Input(str(s.vcpus) if s else "", placeholder="vCPUs, e.g. 12", id="target-vcpus",
                                type="integer")
                    yield Input(f"{s.memory_mib}Mi" if s else "", placeholder="memory, e.g. 16Gi",
                                id="target-memory")
                    yield Button("Use", id="target-use", variant="primary")

    def on_mount(self) -> None:
        if self.flavors:
            olist = self.query_one("#target-flavors", OptionList)
            olist.focus()
            names = [f.name for f in self.flavors]
            if self.suggested and self.suggested.flavor in names:
                olist.highlighted = names.index(self.suggested.flavor)
        elif self.libvirt:
            self.query_one("#target-vcpus", Input).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(Target(flavor=event.option.id))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self._use_custom()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "target-vcpus":
            self.query_one("#target-memory", Input).focus()
        else:
            self._use_custom()

    def _use_custom(self) -> None:
        from console.runbook.scaleup import PlanRefused, parse_memory_mib

        vcpus_text = self.query_one("#target-vcpus", Input).value.strip()
        mem_text = self.query_one("#target-memory", Input).value.strip()
        if not vcpus_text.isdigit() or int(vcpus_text) < 1:
            self.notify("type the number of vCPUs, e.g. 12", severity="warning")
            return
        try:
            mem = parse_memory_mib(mem_text) if mem_text else 0
        except PlanRefused as e:
            self.notify(str(e), severity="warning")
            return
        if mem < 1:
            self.notify("type the memory, e.g. 16Gi", severity="warning")
            return
        self.dismiss(Target(vcpus=int(vcpus_text), memory_mib=mem))

    def action_cancel(self) -> None:
        self.dismiss(None)


def node_summary(node: Any) -> str:
    """`Ready  cpu 2 / mem 3.8Gi` for the node picker (NodeInfo)."""
    from console.kube.model import fmt_cpu
    from console.kube.model import fmt_mem as kfmt_mem

    return f"{node.status:<26} cpu {fmt_cpu(node.capacity.cpu_m)} / mem {kfmt_mem(node.capacity.memory)}"
