"""What the scale-up screen shows, rendered from its state (no I/O): status, plan, pods, capacity, verdict, and the
layout of a short terminal, where the panels the run's phase does not need are one line each
(console/tui/widgets/runbook.py collapsed_panels) and the log is its latest line until `l` opens it."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.widgets import Static

from console.runbook.scaleup import ScaleUpPlan
from console.tui.screens.base import ConsoleScreen
from console.tui.screens.scaleup_messages import RunState
from console.tui.widgets import runbook_data as data
from console.tui.widgets.cells import theme_colors
from console.tui.widgets.reflow_log import ReflowLog
from console.tui.widgets.runbook import (
    TALL,
    CapacityRow,
    PodRow,
    RunbookSteps,
    capacity_summary,
    capacity_table,
    collapsed_panels,
    line,
    pods_summary,
    pods_table,
)
from console.tui.widgets.runbook_pickers import Target

WIDE = 120  # columns: from here the log is a column beside the panels


class ScaleUpView(ConsoleScreen):
    """The rendering half of ScaleUpScreen (its base): the state it renders is set by the screen's workers."""

    # the screen's state (console/tui/screens/scaleup.py)
    node: str | None
    info: data.NodeTargets | None
    target: Target | None
    plan: ScaleUpPlan | None
    journal: Any
    plan_error: str
    drain_blocked: data.DrainOverride | None
    run: RunState
    live: data.LiveState | None
    log_open: bool | None
    _last_log: str

    @property
    def steps(self) -> RunbookSteps:
        return self.query_one("#su-steps", RunbookSteps)

    @property
    def log_pane(self) -> ReflowLog:
        return self.query_one("#su-log", ReflowLog)

    def _status(self, text: str) -> None:
        self.query_one("#su-status", Static).update(text)

    def action_toggle_log(self) -> None:
        """Open or close the log (closed, a short terminal shows its latest line; a tall one, nothing)."""
        self.log_open = not self._log_shown()
        self._render_layout()

    def on_resize(self) -> None:
        self._render_layout()

    def _log_shown(self) -> bool:
        if self.log_open is not None:
            return self.log_open
        return self.size.height >= TALL or self.size.width >= WIDE

    def _collapsed(self) -> frozenset[str]:
        return collapsed_panels(self.size.height or self.app.size.height, running=self.run.running,
                                finished=self.run.result is not None or bool(self.run.error),
                                planned=self.plan is not None)

    # -- rendering (no I/O) ---------------------------------------------------------------------------------
    def _render_all(self) -> None:
        if not self.ready:
            return
        self._render_status()
        self._render_plan()
        self._render_pods()
        self._render_capacity()
        self._render_verdict()
        self._render_layout()

    def _render_layout(self) -> None:
        """Which panels show whole and which as their one-line summary (console/tui/widgets/runbook.py)."""
        if not self.ready:
            return
        collapsed = self._collapsed()
        for panel in ("plan", "pods", "capacity"):
            self.query_one(f"#su-{panel}").display = panel not in collapsed
            self.query_one(f"#su-{panel}-line").display = panel in collapsed
        self.steps.set_collapsed("steps" in collapsed)
        shown = self._log_shown()
        self.log_pane.display = shown
        # closed: a short terminal keeps the latest entry on a line; a tall, wide one gives the width back
        self.query_one("#su-log-line").display = not shown and self.size.width < WIDE
        self._render_log_line()

    def _render_log_line(self) -> None:
        self.query_one("#su-log-line", Static).update(line("log", self._last_log or "empty", "l opens it"))

    def _render_status(self) -> None:
        parts = [self.node or "no node"]
        if self.live is not None and self.live.vm_now is not None:
            parts.append(f"VM now {self.live.vm_now} {self.live.vm_status}")
        elif self.info is not None:
            parts.append(f"VM {self.info.vm_text}")
        if self.target is not None:
            parts.append(f"→ {self.target}")
        if self.run.running:
            parts.append(f"running {time.monotonic() - self.run.started:.0f}s")
        elif self.run.result is not None:
            parts.append(self.run.result.status)
        elif self.journal is not None:
            parts.append(f"unfinished run {self.journal.run_id}: r resumes it, t starts a new one")
        elif self.plan is not None:
            parts.append(self.plan.nothing_to_do or "r runs the plan")
        elif self.info is not None:
            parts.append("t picks a target")
        else:
            parts.append("loading…")
        self._status(" · ".join(parts))

    def _render_plan(self) -> None:
        w = self.query_one("#su-plan", Static)
        colors = theme_colors(self.app)
        summary = data.plan_summary(self.plan, self.plan_error, self._plan_hint())
        self.query_one("#su-plan-line", Static).update(line("plan", summary))
        if self.plan_error:
            t = Text(f"✗ plan refused: {self.plan_error}", style=colors.get("danger", "red"))
            if self.drain_blocked is not None:
                t.append(f"\nf overrides: drain with {' '.join(self.drain_blocked.flags)} (asks first, naming the "
                         "pods that will be lost)", style=colors.get("status-pending", "yellow"))
            w.update(t)
            return
        if self.plan is None:
            w.update(Text(self._plan_hint(), style="dim"))
            return
        if self.plan.nothing_to_do:
            w.update(Text(f"✓ {self.plan.nothing_to_do}", style=colors.get("status-ready", "")))
            return
        w.update(data.plan_text(self.plan, self.journal, colors))

    def _plan_hint(self) -> str:
        if not self.node:
            return "Pick a node (n)."
        if self.info is None:
            return f"Reading {self.node}, its VM and the Pending pods…"
        if self.target is None:
            return "Pick a target (t): a flavor, or vCPUs and memory."
        return f"Planning {self.target}…"

    def _render_pods(self) -> None:
        colors = theme_colors(self.app)
        rows: list[PodRow] = []
        if self.live is not None:
            rows = self.live.pods
        elif self.plan is not None:
            rows = data.planned_pod_rows(self.plan)
        elif self.info is not None:
            rows = data.advice_rows(self.info.advice)
        self.query_one("#su-pods", Static).update(pods_table(rows, colors))
        self.query_one("#su-pods-line", Static).update(line("pods", pods_summary(rows)))

    def _render_capacity(self) -> None:
        colors = theme_colors(self.app)
        rows: list[CapacityRow] = []
        if self.plan is not None:
            rows = data.capacity_rows(self.plan, self.live)
        elif self.info is not None:
            rows = data.capacity_rows_info(self.info)
        w = self.query_one("#su-capacity", Static)
        w.update(capacity_table(rows, colors) if rows else Text("—", style="dim"))
        self.query_one("#su-capacity-line", Static).update(line("capacity", capacity_summary(rows)))

    def _render_verdict(self) -> None:
        w = self.query_one("#su-verdict", Static)
        text = self.verdict()
        w.display = bool(text)
        if text:
            colors = theme_colors(self.app)
            ok = self.run.result is not None and self.run.result.status == "done" and \
                self.live is not None and self.live.capacity_ok
            w.update(Text(text, style=colors.get("status-ready" if ok else "danger", "")))
            w.set_class(not ok, "-bad")

    def verdict(self) -> str:
        """What the run achieved, or exactly why not (empty while nothing ran)."""
        return data.verdict(self.plan, self.run.result, self.run.error, self.live)

