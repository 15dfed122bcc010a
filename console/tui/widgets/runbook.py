"""Runbook widgets: the per-step status list (spinner, ✓/✗/↷/↺, elapsed) and small renderers for the
before/after capacity table and the Pending pods the plan is about.

Each panel has a one-line summary, what it says when the terminal is too short to show it whole (80×24): it
collapses to that line instead of to its border. Which panels collapse depends on the run's phase
(`collapsed_panels`): before a run the plan and the pods it makes fit are open; while it runs, the steps; once it
finished, the pods and the capacity (the verification) — the plan and the steps are then one line each.

The step list is fed engine events (console/runbook/engine.py RunEvent kinds) on the UI thread; it keeps
no I/O and renders from its own state, so a resumed run starts from the journal's step statuses.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from console.infra.vms import LEGEND, legend
from console.tui.widgets.cells import theme_colors

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
ICONS = {"pending": "·", "done": "✓", "skipped": "↷", "failed": "✗", "undone": "↺", "undoing": "↺"}
# journal statuses that mean "the run got into this step but it did not finish"
INTERRUPTED = ("started", "acted")


@dataclass
class StepState:
    id: str
    title: str
    status: str = "pending"  # pending | running | done | skipped | failed | undoing | undone
    message: str = ""
    started: float | None = None
    finished: float | None = None

    def elapsed(self, now: float) -> float | None:
        if self.started is None:
            return None
        return (self.finished or now) - self.started


def fmt_elapsed(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds:.1f}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


class RunbookSteps(Static):
    """The plan's steps with live status. `set_steps()` from a plan or journal, `apply()` each RunEvent."""

    DEFAULT_CSS = """
    RunbookSteps { height: auto; padding: 0 1; }
    """
    collapsed = False  # one summary line (runbook_summary.steps_summary) instead of the list

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.steps: list[StepState] = []
        self.running = False
        self.run_started: float | None = None
        self.run_finished: float | None = None
        self._frame = 0

    def on_mount(self) -> None:
        self.set_interval(0.1, self._tick)

    def _tick(self) -> None:
        if self.running:
            self._frame = (self._frame + 1) % len(SPINNER)
            self.refresh_steps()

    # -- state ----------------------------------------------------------------------------------------
    def set_steps(self, steps: list[dict[str, Any]]) -> None:
        """Steps from a plan ({id, title}) or a journal ({id, title, status, message})."""
        self.steps = []
        for s in steps:
            status = s.get("status", "pending")
            status = "pending" if status in INTERRUPTED else status
            self.steps.append(StepState(s["id"], s.get("title", s["id"]), status, s.get("message", "")))
        self.running = False
        self.run_started = self.run_finished = None
        self.refresh_steps()

    def step(self, step_id: str) -> StepState | None:
        return next((s for s in self.steps if s.id == step_id), None)

    def status_of(self, step_id: str) -> str:
        s = self.step(step_id)
        return s.status if s else ""

    def apply(self, kind: str, step_id: str = "", message: str = "", now: float | None = None) -> None:
        """Advance the list with one engine event."""
        now = time.monotonic() if now is None else now
        s = self.step(step_id) if step_id else None
        if kind == "run-start":
            self.running, self.run_started, self.run_finished = True, now, None
        elif kind == "run-done":
            self.running, self.run_finished = False, now
            for st in self.steps:  # a step left "running" by a failure elsewhere ends here
                if st.status == "running":
                    st.status, st.finished = "failed", now
        elif s is not None:
            if kind == "step-start":
                s.status, s.started, s.finished, s.message = "running", now, None, message
            elif kind == "step-progress":
                s.message = message
            elif kind == "step-done":
                s.status, s.finished, s.message = "done", now, message
            elif kind == "step-skip":
                s.status, s.finished, s.message = "skipped", now, message
            elif kind == "step-failed":
                s.status, s.finished, s.message = "failed", now, message
            elif kind == "undo-start":
                s.status, s.message = "undoing", message
            elif kind == "undo-done":
                s.status, s.message = "undone", "undone"
        self.refresh_steps()

    # -- rendering ------------------------------------------------------------------------------------
    def refresh_steps(self) -> None:
        if self.is_mounted:
            self.update(self.summary_line() if self.collapsed else self.render_steps())

    def set_collapsed(self, collapsed: bool) -> None:
        if collapsed != self.collapsed:
            self.collapsed = collapsed
            self.set_class(collapsed, "-collapsed")
            self.refresh_steps()

    def summary_line(self, now: float | None = None) -> Text:
        now = time.monotonic() if now is None else now
        elapsed = (self.run_finished or now) - self.run_started if self.run_started is not None else None
        return line("steps", steps_summary(self.steps, elapsed, now))

    def render_steps(self, now: float | None = None) -> Text:
        now = time.monotonic() if now is None else now
        colors = theme_colors(self.app) if self.is_mounted else {}
        style = {"done": colors.get("status-ready", "green"), "skipped": colors.get("status-ready", "green"),
                 "failed": colors.get("danger", "red"), "running": colors.get("status-pending", "yellow"),
                 "undoing": colors.get("status-pending", "yellow"), "undone": colors.get("status-cordoned", "")}
        text = Text()
        if not self.steps:
            text.append("No plan yet.", style="dim")
            return text
        for i, s in enumerate(self.steps, 1):
            icon = SPINNER[self._frame] if s.status in ("running", "undoing") else ICONS.get(s.status, "·")
            if i > 1:
                text.append("\n")
            text.append(f"{icon} ", style=style.get(s.status, "dim"))
            text.append(f"{i}. {s.title}", style="bold" if s.status == "running" else "")
            el = fmt_elapsed(s.elapsed(now))
            if el:
                text.append(f"  {el}", style="dim")
            if s.message and s.status not in ("done",):
                text.append(f"\n     {s.message}", style=style.get(s.status, "dim") if s.status == "failed" else "dim")
        if self.run_started is not None:
            total = (self.run_finished or now) - self.run_started
            text.append(f"\nelapsed {fmt_elapsed(total)}", style="dim")
        return text


# -- capacity and pods -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CapacityRow:
    """One resource (cpu or memory) across before / target / now, as display strings."""

    resource: str
    vm_before: str
    kubelet_before: str
    target: str
    vm_now: str = ""
    kubelet_now: str = ""
    ok: bool | None = None  # kubelet now matches the VM (None: not verified yet)
    nova: str = ""  # Nova's flavor value, marked "*", where it differs from what the VM runs (VM before)


def capacity_table(rows: list[CapacityRow], colors: dict[str, str]) -> RenderableType:
    """VM before is what the hypervisor runs; a "Nova flavor" column appears when the flavor differs from it."""
    nova = any(r.nova for r in rows)
    table = Table(box=None, padding=(0, 1), expand=False, show_edge=False)
    for name in ("", "VM before", *(("Nova flavor",) if nova else ()), "kubelet before", "target", "VM now",
                 "kubelet now"):
        table.add_column(name, no_wrap=True)
    crit = colors.get("capacity-crit", "red")
    for r in rows:
        mark = {True: Text(" ✓", style=colors.get("status-ready", "green")),
                False: Text(" ✗", style=colors.get("danger", "red")), None: Text("")}[r.ok]
        now = Text(r.kubelet_now or "—")
        now.append_text(mark)
        flavor = (Text(r.nova, style=crit),) if nova else ()
        kubelet = Text(r.kubelet_before, style=crit if r.kubelet_before.endswith(LEGEND["kubelet"][0]) else "")
        table.add_row(r.resource, r.vm_before, *flavor, kubelet, Text(r.target, style="bold"), r.vm_now or "—", now)
    sides = [s for s, (m, _, _) in LEGEND.items() if any(m in (r.nova + r.kubelet_before) for r in rows)]
    return Group(table, Text(legend(sides), style="dim")) if sides else table


@dataclass(frozen=True)
class PodRow:
    key: str  # namespace/name
    planned: str  # "will fit" | "still too big" | "evicted"
    phase: str
    node: str
    why: str = ""

    @property
    def state(self) -> str:
        """What is true now: `Running on NODE` once the pod runs; the plan's promise only while it is Pending."""
        if self.phase in ("Running", "Succeeded"):
            return f"{self.phase} on {self.node or '?'}"
        if self.phase == "Pending":
            return f"Pending: {self.planned}"
        return self.phase + (f" on {self.node}" if self.node else "")


def pods_table(rows: list[PodRow], colors: dict[str, str]) -> RenderableType:
    if not rows:
        return Text("No Pending pods are planned for.", style="dim")
    table = Table(box=None, padding=(0, 1), expand=False, show_edge=False)
    for name in ("POD", "NOW"):
        table.add_column(name, no_wrap=True)
    for r in rows:
        color = {"Running": colors.get("status-ready", "green"), "Succeeded": colors.get("status-ready", "green"),
                 "Pending": colors.get("status-pending", "yellow")}.get(r.phase, colors.get("danger", "red"))
        table.add_row(r.key, Text(r.state, style=color))
    whys = [Text(f"{r.key}: {r.why}", style="dim") for r in rows if r.why and r.phase != "Running"]
    return Group(table, *whys) if whys else table


# -- one-line summaries (short terminals) ----------------------------------------------------------------
TALL = 40  # rows: from here every panel is shown whole


def collapsed_panels(height: int, *, running: bool, finished: bool, planned: bool) -> frozenset[str]:
    """The panels shown as one line at this screen height, for the run's phase."""
    if height >= TALL:
        return frozenset()
    if running:
        return frozenset(("plan", "pods", "capacity"))
    if finished:
        return frozenset(("plan", "steps"))
    return frozenset(("steps", "capacity")) if planned else frozenset(("steps",))


def line(title: str, body: Text | str, hint: str = "") -> Text:
    """`▸ title: body (hint)` on one line, cut with an ellipsis where the width ends."""
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    out.append(f"▸ {title}: ", style="bold")
    out.append_text(body if isinstance(body, Text) else Text(body))
    if hint:
        out.append(f"  ({hint})", style="dim")
    return out


def steps_summary(steps: list[StepState], elapsed: float | None, now: float) -> str:
    """`9/9 done · elapsed 1m12s`, `running 4/9 resize 12.3s`, `failed at 3/9 resize: …`, `9 steps: cordon, …`."""
    if not steps:
        return "no plan yet"
    n = len(steps)
    total = f" · elapsed {fmt_elapsed(elapsed)}" if elapsed is not None else ""
    for i, s in enumerate(steps, 1):
        if s.status in ("running", "undoing"):
            verb = "undoing" if s.status == "undoing" else "running"
            return f"{verb} {i}/{n} {s.title} {fmt_elapsed(s.elapsed(now))}"
    failed = next(((i, s) for i, s in enumerate(steps, 1) if s.status == "failed"), None)
    if failed is not None:
        i, s = failed
        return f"✗ failed at {i}/{n} {s.title}" + (f": {s.message}" if s.message else "") + total
    done = sum(s.status in ("done", "skipped") for s in steps)
    if done == n:
        return f"✓ {n}/{n} done{total}"
    if done:
        return f"{done}/{n} done, stopped before {steps[done].title}{total}"
    return f"{n} steps, none run yet (r asks first and lists them)"


def pods_summary(rows: list[PodRow]) -> str:
    if not rows:
        return "none planned for"
    return "; ".join(f"{r.key} {r.state}" for r in rows)


def capacity_summary(rows: list[CapacityRow]) -> str:
    """`cpu 8 → 12 ✓ · memory 12Gi → 16Gi ✓`: the VM before → the VM now (else the target); ✓/✗ the kubelet
    reports it."""
    if not rows:
        return "—"
    parts = []
    for r in rows:
        mark = {True: " ✓", False: " ✗", None: ""}[r.ok]
        parts.append(f"{r.resource} {r.vm_before} → {r.vm_now or r.target}{mark}")
    return " · ".join(parts)
