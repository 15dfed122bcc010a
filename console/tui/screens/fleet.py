""""Plan all" (P on the Pending screen): the fleet plan for every Pending pod, changed by dropping or pinning nodes,
and run one node at a time with progress per node, on the scale-up screen's model.

The plan is `console.planner.solve.solve` over `app.gateways.plan_input(...)` (read in a thread worker). The run is
the App's (`app.prepare_fleet`: console/runbook/fleet.py's Fleet on the App's gateways, as `console plan --apply`
builds it), prepared in a worker (each node's scale-up plan, the preview), confirmed (ConfirmDanger), then run in
a worker whose events only post FleetProgress. Read-only mode, the audit and each node's scale-up safety
(preflight, drain rules, Lease, journal) are below this screen; here the run is confirmed first and offered only
where it is allowed.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Static
from textual.worker import Worker, WorkerState

from console.planner.model import Plan, PlanInput, Preferences
from console.runbook.interrupt import StopFlag
from console.tui.appbase import FleetRunbook, PreparedFleet
from console.tui.safety import ConfirmDanger, allow_action, dangerous, is_read_only
from console.tui.screens import fleet_view as fv
from console.tui.screens.base import ConsoleScreen
from console.tui.screens.fleet_messages import FleetFinished, FleetPlanned, FleetPrepared, FleetProgress, FleetRun
from console.tui.screens.scaleup import LOG_ICONS
from console.tui.screens.scaleup_quit import GuardsItsRun
from console.tui.widgets.cells import theme_colors
from console.tui.widgets.reflow_log import ReflowLog
from console.tui.widgets.runbook import TALL, RunbookSteps, line, steps_summary
from console.tui.widgets.table import VirtualTable

TABLE_ROWS = (3, 12)  # the node table's height in rows (header included) between these: the text below reads on


class FleetScreen(GuardsItsRun, ConsoleScreen):
    CSS_PATH = Path(__file__).with_suffix(".tcss")
    HELP = ("The fleet plan for every Pending pod: which nodes grow to what (in the order they run), the pods each "
            "unblocks, the cost, the pods no plan can place and why, and whether the plan is proven optimal. d drops "
            "the highlighted node (never grown) or takes it back, p pins it at its planned size, r re-plans with "
            "them. a (or enter) runs the plan after a confirmation: one node at a time, each the scale-up runbook; "
            "the table shows each node's progress and the lower panel the highlighted node's steps. Mid-run, esc "
            "and q do not leave; ctrl+c asks, and stops the run before its next step.")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "drop", "Drop", id="fleet-drop"),
        Binding("p", "pin", "Pin", id="fleet-pin"),
        Binding("r", "replan", "Re-plan", id="fleet-replan"),
        dangerous(Binding("a", "run", "Run", id="fleet-run"), needs="scale-up"),
        Binding("l", "toggle_log", "Log", id="fleet-toggle-log"),
        Binding("escape", "back", "Back", id="fleet-back"),
        Binding("q", "back", "Back", show=False, id="fleet-back-q"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.inp: PlanInput | None = None
        self.plan: Plan | None = None
        self.planned = fv.Marks()  # what the plan shown was made with
        self.marks = fv.Marks()  # the admin's drops and pins (r plans with them)
        self.plan_error = ""
        self.planning = False
        self.preparing = False  # a pressed: the fleet runbook is being built (its confirmation follows)
        self._seq = 0
        self.run = FleetRun()
        self.node_steps: dict[str, RunbookSteps] = {}  # per node: its steps' state (unmounted: the state only)
        self.stop_flag = StopFlag()
        self.log_open: bool | None = None
        self._last_log = ""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="fleet-status", classes="status-line", markup=False)
        yield Static("", id="fleet-mode", markup=False)
        yield VirtualTable(fv.plan_columns(False), empty_text="Planning…", id="fleet-nodes")
        with VerticalScroll(id="fleet-body"):
            # the steps first: hidden until a run starts, then what the admin follows (80×24: at the top)
            yield RunbookSteps(id="fleet-steps")
            yield Static("", id="fleet-detail")
            yield Static("", id="fleet-rest")
        yield Static("", id="fleet-log-line")
        yield ReflowLog(id="fleet-log", wrap=True, markup=False, max_lines=2000)
        yield Footer()

    def on_mount(self) -> None:
        self.ready = True
        self.query_one("#fleet-steps").display = False
        self.query_one("#fleet-steps").border_title = "steps"
        self.query_one("#fleet-log").border_title = "log"
        self.table.focus()
        self.replan()

    @property
    def table(self) -> VirtualTable:
        return self.query_one("#fleet-nodes", VirtualTable)

    # -- planning -------------------------------------------------------------------------------------------
    def replan(self) -> None:
        self._seq += 1
        self.planning, self.plan_error = True, ""
        prefs = None
        if self.inp is not None:  # the settings' preferences (PDBs, live first) stay; the marks are the admin's
            prefs = replace(self.inp.prefs, dropped=self.marks.dropped, pinned=dict(self.marks.pins))
        elif self.marks.dropped or self.marks.pins:
            prefs = Preferences(dropped=self.marks.dropped, pinned=dict(self.marks.pins))
        self.plan_worker(prefs, self.marks, self._seq)
        self._render_all()

    @work(thread=True, exclusive=True, group="fleet-plan", exit_on_error=False)
    def plan_worker(self, prefs: Preferences | None, marks: fv.Marks, seq: int) -> None:
        from console.planner.solve import solve

        inp = self.app.gateways.plan_input(None, prefs)  # every Pending pod; the API's errors: the worker's error
        self.post_message(FleetPlanned(inp, solve(inp), marks, seq))

    def on_fleet_planned(self, msg: FleetPlanned) -> None:
        if msg.seq != self._seq:
            return  # planned with marks changed since
        self.planning = False
        self.inp, self.plan, self.planned, self.plan_error = msg.inp, msg.plan, msg.marks, msg.error
        if msg.plan is not None:
            self._log(f"plan: {fv.plan_summary(msg.plan)}")
        self.refresh_bindings()
        self._render_all()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # the app turns the error into a notification; here the screen says what it could not do
        if event.state != WorkerState.ERROR or event.worker.error is None:
            return
        from console.tui.errors import explain

        err = explain(event.worker.error)
        if event.worker.group == "fleet-plan":
            self.planning = False
            self.plan_error = err
            self._log(f"✗ cannot plan: {err}")
        elif event.worker.group == "fleet-run":
            self.run.running = False
            self.run.error = err
            self._log(f"✗ the fleet run stopped with an error: {err}. Its journal keeps its state.")
            self._quit_if_stopped()
        self._render_all()

    # -- drop / pin -----------------------------------------------------------------------------------------
    def _node_for_mark(self) -> str | None:
        if self.run.began:
            self.notify("the plan has run: reopen plan all (P) to plan again", severity="warning")
            return None
        node = self.table.cursor_key
        if node is None or self.plan is None:
            self.notify("no node in the plan", severity="warning")
        return node

    def action_drop(self) -> None:
        """Drop the highlighted node (never grown by the next plan), or take a dropped one back."""
        node = self._node_for_mark()
        if node is None:
            return
        dropped = self.marks.dropped ^ {node}
        pins = {k: v for k, v in self.marks.pins.items() if k != node}
        self.marks = fv.Marks(frozenset(dropped), pins)
        self._log(f"{node}: {'dropped' if node in dropped else 'taken back'}; r re-plans")
        self._render_all()

    def action_pin(self) -> None:
        """Pin the highlighted node at its planned size (the next plan grows it to exactly that), or unpin it."""
        node = self._node_for_mark()
        if node is None or self.plan is None:
            return
        pins = dict(self.marks.pins)
        change = next((c for c in self.plan.nodes if c.node == node), None)
        if node in pins:
            del pins[node]
            self._log(f"{node}: unpinned; r re-plans")
        elif change is None:
            self.notify(f"{node} is dropped: d takes it back first", severity="warning")
            return
        else:
            pins[node] = change.to_size
            self._log(f"{node}: pinned at {fv.size_long(change.to_size)}; r re-plans")
        self.marks = fv.Marks(self.marks.dropped - {node}, pins)
        self._render_all()

    def action_replan(self) -> None:
        if self.run.began:
            self.notify("the plan has run: reopen plan all (P) to plan again", severity="warning")
            return
        self._log("re-planning" + (f" (dropped: {', '.join(sorted(self.marks.dropped))})" if self.marks.dropped
                                   else "") + (f" (pinned: {', '.join(sorted(self.marks.pins))})"
                                               if self.marks.pins else ""))
        self.replan()

    @property
    def marks_pending(self) -> bool:
        return self.marks != self.planned

    # -- run ------------------------------------------------------------------------------------------------
    def on_virtual_table_selected(self, event: VirtualTable.Selected) -> None:
        if allow_action(self.app, "run"):
            self.action_run()
        elif is_read_only(self.app):
            self.notify("read-only mode: this is the plan only; a run is disabled", severity="warning")

    def action_run(self) -> None:
        why = self.run_refusal()
        if why:
            self.notify(why, severity="warning")
            return
        assert self.plan is not None and self.inp is not None
        self.preparing = True
        self._log("preparing the fleet: each node's scale-up plan (preflight, drain rules)…")
        self.prepare_worker(self.inp, self.plan)
        self._render_status()

    @work(thread=True, exclusive=True, group="fleet-prepare", exit_on_error=False)
    def prepare_worker(self, inp: PlanInput, plan: Plan) -> None:
        from console.tui.appbase import FleetRefused

        try:
            prepared = self.app.prepare_fleet(inp, plan)
        except FleetRefused as e:
            self.post_message(FleetPrepared(None, plan, str(e)))
            return
        self.post_message(FleetPrepared(prepared, plan))

    def on_fleet_prepared(self, msg: FleetPrepared) -> None:
        self.preparing = False
        prepared = msg.prepared
        if prepared is None:
            self._log(f"✗ the fleet cannot start: {msg.error}")
            self.notify(msg.error, title="Fleet: not started", severity="warning", timeout=15)
            self._render_all()
            return
        if msg.plan is not self.plan or self.marks_pending:
            return  # re-planned or changed while it was prepared: a press of a asks again

        def confirmed(yes: bool | None) -> None:
            if yes and self.plan is msg.plan and not self.run.began:
                self._start_run(prepared)

        verb = "resume fleet run" if prepared.resuming else "run fleet plan"
        target = f"{prepared.fleet_id}: " if prepared.resuming else ""
        self.app.push_screen(ConfirmDanger(verb, target + fv.nodes_target(prepared.nodes), prepared.preview),
                             confirmed)
        self._render_status()

    def run_refusal(self) -> str:
        """Why the plan shown cannot run now ("" when it can)."""
        if self.run.running:
            return "the fleet run is in progress"
        if self.preparing:
            return "the fleet is being prepared: the confirmation follows"
        if self.run.began:
            return "the plan has run: reopen plan all (P) to plan again"
        if self.plan_error:
            return f"cannot plan: {self.plan_error} (r tries again)"
        if self.plan is None or self.planning:
            return "the plan is still being made"
        if self.marks_pending:
            return "the drops/pins are not planned yet: r re-plans, then run"
        if not self.plan.nodes:
            return "the plan grows no node: nothing to run"
        return ""

    def _start_run(self, prepared: PreparedFleet) -> None:
        self.stop_flag = StopFlag()
        self.run = FleetRun(running=True, fleet_id=prepared.fleet_id, started=time.monotonic(),
                            states={n: "pending" for n in prepared.nodes})
        self.node_steps = {n: RunbookSteps() for n in prepared.nodes}
        self.table.set_columns(fv.plan_columns(True))
        self.query_one("#fleet-steps").display = True
        self._log(("resuming" if prepared.resuming else "starting") + f" fleet run {prepared.fleet_id}: "
                  + fv.nodes_target(prepared.nodes))
        self.run_fleet(prepared.runbook)
        self.set_interval(1.0, self._tick_running)
        self.refresh_bindings()
        self._render_all()

    @work(thread=True, exclusive=True, group="fleet-run", exit_on_error=False)
    def run_fleet(self, runbook: FleetRunbook) -> None:
        # read-only and an unwritable audit log come back as a "refused" result; another process owning the fleet
        # (FleetError) or a backend fault end the worker: on_worker_state_changed says so
        result = runbook.run(lambda ev: self.post_message(FleetProgress(ev)), self.stop_flag)
        self.post_message(FleetFinished(result))

    def on_fleet_progress(self, msg: FleetProgress) -> None:
        ev = msg.event
        self.run.fleet_id = ev.fleet_id or self.run.fleet_id
        node = ev.node or ""
        rev = ev.run_event
        steps = self.node_steps.get(node)
        if rev is not None and steps is not None:
            if rev.kind == "run-start":
                steps.set_steps(rev.data.get("steps", []))
            steps.apply(rev.kind, rev.step, rev.message)
            text = f"{rev.title} {rev.message}".strip() if rev.title else rev.message
            self._log(f"{node}: {LOG_ICONS.get(rev.kind, '·')} {text}", rev.time)
        else:
            self._log(fv.fleet_log_line(ev.kind, node, ev.message))
        if node in self.run.states:
            if rev is not None and rev.kind == "run-done":
                self.run.statuses[node] = rev.data.get("status", "")
            self.run.states[node] = fv.state_after(ev.kind, self.run.states[node], self.run.statuses.get(node, ""),
                                                   ev.message)
            if ev.kind == "node-start":
                self.table.move_to(node)  # the running node's steps show below
        self._render_all()

    def on_fleet_finished(self, msg: FleetFinished) -> None:
        self.run.running = False
        self.run.result, self.run.error = msg.result, msg.error
        if msg.result is not None:
            r = msg.result
            for entry in getattr(r, "nodes", None) or []:  # the fleet journal's word on each node
                if entry.get("node") in self.run.states:
                    self.run.states[entry["node"]] = fv.final_state(entry.get("status", ""))
            self._log(f"fleet {getattr(r, 'fleet_id', self.run.fleet_id)}: {getattr(r, 'status', '')} "
                      f"(exit {getattr(r, 'exit_code', '?')}) {getattr(r, 'message', '')}".rstrip())
        else:
            self._log(f"✗ the fleet did not start: {msg.error}")
        self._quit_if_stopped()
        self.refresh_bindings()
        self._render_all()

    def _tick_running(self) -> None:
        if self.run.running:
            self._render_nodes()
            self._render_status()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("drop", "pin", "replan", "run") and self.run.began:
            return None if allow_action(self.app, action) else False  # shown disabled: the plan has run
        return super().check_action(action, parameters)

    # -- leaving and quitting mid-run (the app's quit and `:` navigation ask this screen first) --------------
    def running_node(self) -> str:
        return next((n for n, s in self.run.states.items() if s == "running"), "")

    def leave_refusal(self) -> str:
        if not self.run.running:
            return ""
        return (f"the fleet run is in progress ({self.running_node() or 'between nodes'}); leaving now would hide "
                "it (it is journaled and resumable): wait for it to finish, or ctrl+c to stop it before its next "
                "step")

    def run_in_progress(self) -> bool:
        return self.run.running

    def quit_question(self) -> str:
        return (f"A fleet run is in progress (now on {self.running_node() or 'the next node'}): quit anyway? It "
                "stops before the next step (nothing is rolled back); the fleet is journaled and continues where it "
                f"stopped with `console plan --apply --resume {self.run.fleet_id or 'FLEET_ID'}`.")

    def stopping_note(self) -> str:
        return f"stopping the fleet before the next step of {self.running_node() or 'the next node'}, then quitting"

    def stopped_message(self) -> str:
        fleet, r = self.run.fleet_id, self.run.result
        resume = f"continue it with console plan --apply --resume {fleet}"
        if r is None:
            return f"fleet {fleet} ended with an error: {self.run.error or 'no result'}; {resume}"
        status, message = getattr(r, "status", ""), getattr(r, "message", "")
        if status == "interrupted":
            return f"fleet {fleet} stopped before its next step; {resume}"
        if status == "done":
            return f"fleet {fleet} finished before it could be stopped: done"
        # the stop request is checked before a step: the fleet may have ended otherwise meanwhile
        again = f"; {resume}" if status == "needs-attention" else ""
        return f"fleet {fleet} ended before it could be stopped: {status}: {message}{again}"

    # -- log ------------------------------------------------------------------------------------------------
    def _log(self, text: str, when: str = "") -> None:
        stamp = when[11:19] if when else time.strftime("%H:%M:%S", time.localtime(self.app.clock()))
        self._last_log = f"[{stamp}] {text}"
        self.query_one("#fleet-log", ReflowLog).add(self._last_log)
        if self.ready:
            self._render_layout()

    def action_toggle_log(self) -> None:
        self.log_open = not self._log_shown()
        self._render_layout()

    def _log_shown(self) -> bool:
        return self.log_open if self.log_open is not None else self.size.height >= TALL

    def on_resize(self) -> None:
        self._render_layout()

    # -- rendering (no I/O) ---------------------------------------------------------------------------------
    def on_virtual_table_highlighted(self, event: VirtualTable.Highlighted) -> None:
        self._render_detail()

    def _render_all(self) -> None:
        if not self.ready:
            return
        self._render_status()
        self._render_nodes()
        self._render_detail()
        self._render_rest()
        self._render_layout()

    def _render_status(self) -> None:
        if self.plan_error:
            status = "✗ cannot plan (why below; r tries again)"
        elif self.plan is None:
            status = "Reading the cluster and planning every Pending pod…"
        else:
            status = fv.plan_summary(self.plan)
            if self.planning:
                status = "Re-planning… · " + status
        if self.run.running:
            status = f"running {time.monotonic() - self.run.started:.0f}s · " + status
        elif self.run.result is not None:
            status = f"fleet {getattr(self.run.result, 'status', '')} · " + status
        self.query_one("#fleet-status", Static).update(status)
        self.query_one("#fleet-mode", Static).update(self._mode_line())

    def _mode_line(self) -> str:
        """What the admin can do from here (and what not, and why)."""
        if is_read_only(self.app):
            return "read-only mode: this is the plan only; a run is disabled. d/p/r change and re-plan it."
        if self.run.running:
            return "running: one node at a time; ctrl+c stops before the next step"
        if self.run.began:
            verdict = getattr(self.run.result, "message", "") or self.run.error
            return f"the fleet run ended: {verdict}" if verdict else "the fleet run ended"
        if self.plan_error:
            return "r reads the cluster and plans again"
        if self.marks_pending:
            return "changed: r re-plans with the drops/pins (a runs only the plan shown)"
        why = self.run_refusal()
        return why if why and self.plan is not None else "d drop · p pin · r re-plan · a or enter runs (asks first)"

    def _render_nodes(self) -> None:
        if self.plan is None:
            self.table.empty_text = "✗ no plan" if self.plan_error else "Planning…"
            self.table.set_rows([], [])
            self._size_table(0)
            return
        self.table.empty_text = "No node needs to grow" + (": every Pending pod fits as the nodes are"
                                                          if not self.plan.unplaceable else "")
        progress = None
        if self.run.began:
            now = time.monotonic()
            progress = {}
            for node, state in self.run.states.items():
                steps = self.node_steps.get(node)
                text = steps_summary(steps.steps, None, now) if steps is not None and steps.steps else \
                    ("waiting" if state == "pending" else "")
                progress[node] = (state, text)
        keys, cells = fv.node_rows(self.plan, self.marks, self.planned, progress, theme_colors(self.app))
        self.table.set_rows(keys, cells)
        self._size_table(len(keys))

    def _size_table(self, rows: int) -> None:
        low, high = TABLE_ROWS
        note = 1 if self.table.note else 0
        self.table.styles.height = max(low, min(high, rows + 1 + note)) + 1  # + its bottom border

    def _render_detail(self) -> None:
        detail = self.query_one("#fleet-detail", Static)
        steps = self.query_one("#fleet-steps", RunbookSteps)
        if self.plan is None:
            colors = theme_colors(self.app)
            detail.update(Text(f"✗ cannot plan: {self.plan_error}", style=colors.get("danger", "red"))
                          if self.plan_error else "")
            return
        node = self.table.cursor_key
        detail.update(fv.node_detail(self.plan, node, self.marks))
        src = self.node_steps.get(node or "")
        if src is not None:
            steps.steps, steps.running = src.steps, src.running
            steps.run_started, steps.run_finished = src.run_started, src.run_finished
            steps.border_title = f"steps: {node}"
            steps.refresh_steps()
            line = fv.running_step_line(src.steps)
            if line is not None:
                self.call_after_refresh(self._keep_in_view, line)

    def _keep_in_view(self, line: int) -> None:
        """Scroll the lower panel so the running step's line shows (9 steps do not fit at 80×24)."""
        body = self.query_one("#fleet-body", VerticalScroll)
        y = self.query_one("#fleet-steps").virtual_region.y + 1 + line  # + the panel's top border
        top, height = body.scroll_offset.y, body.scrollable_content_region.height
        if not top <= y < top + height:
            body.scroll_to(y=max(0, y - height + 2), animate=False)

    def _render_rest(self) -> None:
        rest = self.query_one("#fleet-rest", Static)
        if self.plan is None or self.inp is None:
            rest.update("")
            return
        rest.update(fv.rest_text(self.plan, theme_colors(self.app), self.inp.limits.notes))

    def _render_layout(self) -> None:
        if not self.ready:
            return
        shown = self._log_shown()
        self.query_one("#fleet-log").display = shown
        self.query_one("#fleet-log-line", Static).update(line("log", self._last_log or "empty", "l opens it"))
        self.query_one("#fleet-log-line").display = not shown
