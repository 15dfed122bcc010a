"""`:scale-up NODE` — pick a node and a target, see the plan, run it live, verify, revert where possible.

The screen drives the same `Session` / engine / journal as `console scale-up` (console/runbook/session.py).
Everything blocking runs in thread workers that report back through the messages below; the engine's
`on_event` callback runs on the run worker's thread and only posts `RunbookStepChanged`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, VerticalScroll
from textual.widgets import Footer, Header, Static
from textual.worker import Worker, WorkerState

from console.config import Settings
from console.gateways import Gateways
from console.runbook.engine import RunResult
from console.runbook.interrupt import StopFlag
from console.runbook.scaleup import ScaleUpPlan, ScaleUpRequest
from console.tui.errors import explain
from console.tui.safety import ConfirmDanger, dangerous
from console.tui.screens.scaleup_messages import (
    LiveStateReady,
    NodesListed,
    PlanReady,
    RevertChecked,
    RevertDone,
    RunbookStepChanged,
    RunFinished,
    RunState,
    TargetsLoaded,
)
from console.tui.screens.scaleup_quit import GuardsItsRun
from console.tui.screens.scaleup_view import WIDE, ScaleUpView
from console.tui.widgets import runbook_data as data
from console.tui.widgets.reflow_log import ReflowLog
from console.tui.widgets.runbook import RunbookSteps
from console.tui.widgets.runbook_pickers import NodePicker, Target, TargetPicker, default_target

LOG_ICONS = {"step-start": "…", "step-done": "✓", "step-skip": "↷", "step-failed": "✗", "step-progress": " ",
             "undo-start": "↺", "undo-done": "↺", "run-start": "▶", "run-done": "■"}


class ScaleUpScreen(GuardsItsRun, ScaleUpView):
    """Scale a worker's VM up (OpenStack resize or libvirt live) and verify the Pending pods run."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (WIDE, "-wide")]  # type: ignore[misc]
    HELP = ("Pick a node (n) and a target (t): a flavor (OpenStack resize: cordon, drain, resize, confirm) or "
            "vCPUs and memory (libvirt live: raise the maxima, restart through Nova, hot-add, online, restart the "
            "kubelet). The plan lists the Pending pods it makes fit; r runs it with live step status, v reverts a "
            "resize Nova still allows to revert. Runs are journaled: an unfinished run is offered for resuming. "
            "Below 40 rows the panels the run's phase does not need are one line each (before a run the plan and "
            "the pods, while it runs the steps, after it the pods and the capacity); l opens the log. Mid-run, "
            "esc and q do not leave (the run would be hidden); ctrl+c asks, and stops the run before its next "
            "step.")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "pick_node", "Node", id="scale-up-pick-node"),
        Binding("t", "pick_target", "Target", id="scale-up-pick-target"),
        dangerous(Binding("r", "run", "Run", id="scale-up-run"), needs="scale-up"),
        dangerous(Binding("v", "revert", "Revert", id="scale-up-revert"), needs="revert"),
        dangerous(Binding("f", "override_drain", "Override drain", id="scale-up-override-drain"), needs="drain"),
        Binding("l", "toggle_log", "Log", id="scale-up-toggle-log"),
        Binding("escape", "back", "Back", id="scale-up-back"),
        Binding("q", "back", "Back", show=False, id="scale-up-back-q"),  # not app.back: it asks the same
    ]

    def __init__(self, node: str | None = None, pod: Any = None, *, settings: Settings | None = None,
                 gateways: Gateways | None = None) -> None:
        super().__init__()
        self.node = node
        # a pod from the Pending screen: "namespace/name" or a PodInfo
        self.pod = pod if pod is None or isinstance(pod, str) else f"{pod.namespace}/{pod.name}"
        self.settings = settings
        self.gateways = gateways  # the app's when None (console/gateways.py): its caches and its connection
        self.session: Any = None  # console.runbook.session.Session, made in a worker
        self.info: data.NodeTargets | None = None
        self._targets_only = False  # the next TargetsLoaded refreshes the picker's sizes, not the plan
        self.target: Target | None = None
        self.plan: ScaleUpPlan | None = None
        self.journal: Any = None  # the journal to resume (None: a new run)
        self.plan_error = ""
        self.drain_blocked: data.DrainOverride | None = None
        self.run = RunState()
        self.live: data.LiveState | None = None
        self.revert_message = ""
        self._node_choices: list[tuple[str, str]] = []
        self._plan_seq = 0
        self.stop_flag = StopFlag()  # the running run's: set to stop it before its next step (quit during a run)
        # how the last run ended: (its kind, the engine's RunResult or None, the error) — what "Stop and quit" says
        self.ended: tuple[str, RunResult | None, str] = ("scale-up", None, "")
        self.log_open: bool | None = None  # `l`: None until pressed (the layout decides), then the admin's choice

    # -- layout -------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="su-status", markup=False)
        yield Static("", id="su-verdict", markup=False)
        with Container(id="su-body"):
            with VerticalScroll(id="su-main"):
                # a short terminal shows a panel as its one-line summary (the .su-line before it), not its border
                yield Static("", id="su-plan-line", classes="su-line")
                yield Static("", id="su-plan", markup=False)
                yield RunbookSteps(id="su-steps")
                yield Static("", id="su-pods-line", classes="su-line")
                yield Static("", id="su-pods")
                yield Static("", id="su-capacity-line", classes="su-line")
                yield Static("", id="su-capacity")
            with Container(id="su-side"):
                yield Static("", id="su-log-line", classes="su-line")
                yield ReflowLog(id="su-log", wrap=True, markup=False, max_lines=2000)
        yield Footer()

    def on_mount(self) -> None:
        self.ready = True
        if self.settings is None:
            self.settings = getattr(self.app, "settings", None) or Settings()
        if self.gateways is None:
            self.gateways = getattr(self.app, "gateways", None)
        for wid, title in (("#su-plan", "plan"), ("#su-steps", "steps"), ("#su-pods", "pods to place"),
                           ("#su-capacity", "capacity: before → after"), ("#su-log", "log")):
            self.query_one(wid).border_title = title
        self.query_one("#su-verdict").display = False
        self._render_all()
        if self.node:
            self.load_targets(self.node)
        else:
            self._status("Loading nodes… (n picks a node)")
            self.list_nodes()

    # -- small helpers ------------------------------------------------------------------------------------
    def _log(self, text: str, when: str = "") -> None:
        # the App's clock (frozen in snapshots), as the node screen's ages
        stamp = when[11:23] if when else time.strftime("%H:%M:%S", time.localtime(self.app.clock()))
        self.log_pane.add(f"[{stamp}] {text}")
        self._last_log = f"[{stamp}] {text}"
        if self.ready:
            self._render_log_line()

    _last_log = ""

    def _ensure_session(self) -> Any:
        """Called in workers only: the session's first reads touch the network. It runs on the gateways'
        connection (no second ApiClient)."""
        if self.session is None:
            if self.gateways is None:
                raise data.LoadError("no cluster connection: a scale-up needs one")
            self.session = self.gateways.scaleup_session(self.settings)
        return self.session

    # -- nodes --------------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="scale-up-load", exit_on_error=False)
    def list_nodes(self) -> None:
        try:
            nodes = data.list_nodes(getattr(self.gateways, "cluster", None), self._ensure_session)
        except data.LoadError as e:
            self.post_message(NodesListed([], str(e)))
            return
        self.post_message(NodesListed(nodes))

    def on_nodes_listed(self, msg: NodesListed) -> None:
        if msg.error:
            self._status(f"Cannot list nodes: {msg.error}")
            return
        self._node_choices = msg.nodes
        if self.node is None:
            self._status("Pick a node (n).")
            self.action_pick_node()

    def action_pick_node(self) -> None:
        if self.run.running:
            self.notify("a run is in progress", severity="warning")
            return
        if not self._node_choices:
            self.list_nodes()
            self.notify("loading nodes…")
            return

        def chosen(name: str | None) -> None:
            if name and name != self.node:
                self.node, self.target, self.plan, self.journal, self.info = name, None, None, None, None
                self.live, self.plan_error = None, ""
                self.run = RunState()
                self.steps.set_steps([])
                self._render_all()
                self.load_targets(name)

        self.app.push_screen(NodePicker(self._node_choices, self.node), chosen)

    # -- targets ------------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="scale-up-load", exit_on_error=False)
    def load_targets(self, node: str) -> None:
        try:
            info = data.load_targets(self._ensure_session(), node)
        except data.LoadError as e:
            self.post_message(TargetsLoaded(None, str(e)))
            return
        self.post_message(TargetsLoaded(info))

    def on_targets_loaded(self, msg: TargetsLoaded) -> None:
        if msg.error or msg.info is None:
            self.plan_error = msg.error
            what = "a journal of the node cannot be used" if msg.error.startswith("runbook journal ") else \
                "cannot read the node or its VM"
            self._status(f"{self.node}: {what}")
            self._render_all()
            return
        self.info = msg.info
        n = len(self.info.advice)
        self._log(f"{self.node}: VM {self.info.vm_text}; {n} Pending pod{'' if n == 1 else 's'} in the cluster")
        for note in self.info.notes:
            self._log(f"note: {note}")
        if self._targets_only:  # after a run: the VM's new size for the picker; the finished run stays shown
            self._targets_only = False
            self._render_all()
            return
        unfinished = self.info.unfinished
        if unfinished is not None:
            self._log(f"unfinished run {unfinished.run_id} ({unfinished.status}) stopped at: {unfinished.where}")
            self.make_plan(ScaleUpRequest(node=self.node or ""), unfinished.run_id, False)
            return
        if self.target is None:
            self.target = default_target(self.info.advice, self.pod, bool(self.info.flavors)) if self.pod else None
        if self.target is not None:
            self.make_plan(self._request(self.target), None, True)
        self._render_all()

    def action_pick_target(self) -> None:
        if self.run.running:
            self.notify("a run is in progress", severity="warning")
            return
        if self.info is None:
            self.notify("the node and its VM are still loading" if self.node else "pick a node first (n)",
                        severity="warning")
            return
        info = self.info
        suggested = self.target or default_target(info.advice, self.pod, bool(info.flavors))

        def chosen(target: Target | None) -> None:
            if target is not None:
                self.target = target
                self.journal = None
                self.run = RunState()
                self.make_plan(self._request(target), None, True)

        self.app.push_screen(TargetPicker(self.node or "", info.flavors, info.current, info.advice,
                                          suggested=suggested, libvirt=info.libvirt, note=info.picker_note), chosen)

    def _request(self, target: Target) -> ScaleUpRequest:
        return ScaleUpRequest(node=self.node or "", flavor=target.flavor, vcpus=target.vcpus,
                              memory_mib=target.memory_mib, method=target.method)

    # -- plan ---------------------------------------------------------------------------------------------
    def make_plan(self, request: ScaleUpRequest, resume: str | None, new: bool) -> None:
        self._plan_seq += 1
        self.plan, self.plan_error, self.drain_blocked = None, "", None
        self._plan_worker(request, resume, new, self._plan_seq)
        self._render_all()

    @work(thread=True, exclusive=True, group="scale-up-plan", exit_on_error=False)
    def _plan_worker(self, request: ScaleUpRequest, resume: str | None, new: bool, seq: int) -> None:
        from console.runbook.scaleup import DrainRefused, PlanRefused
        from console.runbook.session import SessionError

        try:
            plan, journal = self._ensure_session().plan(request, resume=resume, new=new)
        except DrainRefused as e:
            self.post_message(PlanReady(None, None, str(e), seq, data.DrainOverride(request, e.blocking)))
            return
        except (PlanRefused, SessionError) as e:
            self.post_message(PlanReady(None, None, str(e), seq))
            return
        self.post_message(PlanReady(plan, journal, seq=seq))

    def on_plan_ready(self, msg: PlanReady) -> None:
        if msg.seq != self._plan_seq:
            return  # an older plan (the target changed since): ignore it
        self.plan, self.journal, self.plan_error = msg.plan, msg.journal, msg.error
        self.drain_blocked = msg.blocked
        self.refresh_bindings()
        self.live = None
        self.query_one("#su-verdict").display = False
        if msg.plan is None:
            self._log(f"plan refused: {msg.error}")
            self.steps.set_steps([])
        else:
            p = msg.plan
            if self.journal is not None:
                self.target = Target(p.flavor.name) if p.flavor else Target(vcpus=p.target.vcpus,
                                                                            memory_mib=p.target.memory_mib)
                self.steps.set_steps(self.journal.doc["steps"])
            else:
                self.steps.set_steps(p.steps)
            if p.nothing_to_do:
                self._log(f"plan: {p.nothing_to_do}")
            else:
                self._log(f"plan: {p.node.name} {p.current} → {p.target} ({p.method}); makes fit: "
                          f"{', '.join(p.will_fit) or 'none'}")
        self._render_all()

    # -- run ----------------------------------------------------------------------------------------------
    def action_run(self) -> None:
        if self.run.running:
            self.notify("the run is in progress", severity="warning")
            return
        if self.plan is None:
            self.notify(self.plan_error or "pick a target first (t)", severity="warning")
            return
        plan = self.plan
        if plan.nothing_to_do:
            self.notify(f"{plan.nothing_to_do}: pick another target (t)")
            return
        from console.runbook.nova_drift import nova_regeneration_warning
        from console.runbook.scaleup import render_plan

        verb = "resume scale-up" if self.journal is not None else "scale up"
        target = f"{plan.node.name} → {plan.target}" + (f" (flavor {plan.flavor.name})" if plan.flavor else "")

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._start_run()

        warning = nova_regeneration_warning(plan)  # first, so the dialog shows it without scrolling
        preview = f"warning: {warning}\n\n{render_plan(plan)}" if warning else render_plan(plan)
        self.app.push_screen(ConfirmDanger(verb, target, preview), confirmed)

    def _start_run(self) -> None:
        assert self.plan is not None
        self.stop_flag = StopFlag()
        self.run = RunState(running=True, started=time.monotonic())
        self.query_one("#su-verdict").display = False
        self._log(("resuming " if self.journal is not None else "starting ") + f"scale-up of {self.plan.node.name}")
        self.run_plan(self.plan, self.journal)
        self._render_all()
        self.query_one("#su-main", VerticalScroll).scroll_to_widget(self.steps, animate=False, top=True)

    @work(thread=True, exclusive=True, group="scale-up-run", exit_on_error=False)
    def run_plan(self, plan: ScaleUpPlan, journal: Any) -> None:
        from console.guard import GuardRefusal
        from console.runbook.session import SessionError

        try:
            result = self._ensure_session().run(plan, journal, stop=self.stop_flag,
                                                on_event=lambda ev: self.post_message(RunbookStepChanged(ev)))
        except (SessionError, GuardRefusal) as e:  # held by another run; read-only (below the hidden action)
            self.post_message(RunFinished(None, str(e)))
            return
        self.post_message(RunFinished(result))

    def on_runbook_step_changed(self, msg: RunbookStepChanged) -> None:
        ev = msg.event
        self.run.events.append(ev)
        if ev.kind == "run-start":
            self.run.run_id = ev.run_id
        self.steps.apply(ev.kind, ev.step, ev.message)
        text = f"{ev.title} {ev.message}".strip() if ev.title else ev.message
        if ev.kind == "run-done":
            status = ev.data.get("status", "")
            text = status if ev.message in ("", status) else f"{status}: {ev.message}"
        self._log(f"{LOG_ICONS.get(ev.kind, '·')} {text}", ev.time)
        if ev.kind in ("step-done", "step-skip", "step-failed", "undo-done"):
            self.refresh_live(False)
        self._render_status()

    def on_run_finished(self, msg: RunFinished) -> None:
        self.run.running = False
        self.run.result, self.run.error = msg.result, msg.error
        self.ended = ("scale-up", msg.result, msg.error)
        if msg.result is not None:
            r = msg.result
            self._log(f"run {r.run_id}: {r.status} (exit {r.exit_code}) in {r.elapsed:.1f}s "
                      f"({r.infra_wait:.1f}s waiting on the infrastructure); journal {r.journal_path}")
            self.journal = None
            if self.node:
                self._targets_only = True
                self.load_targets(self.node)
        else:
            self._log(f"run failed to start: {msg.error}")
        self.steps.apply("run-done")
        self._quit_if_stopped()
        self.refresh_live(True)
        self._render_all()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # the app turns the error into a notification; here the screen stops showing "running"
        if event.state != WorkerState.ERROR or event.worker.error is None:
            return
        err = explain(event.worker.error)
        if event.worker.group in ("scale-up-run", "scale-up-revert") and self.run.running:
            self.run.running = False
            self.run.error = err
            self.ended = ("revert" if event.worker.group == "scale-up-revert" else "scale-up", None, err)
            self.steps.apply("run-done")
            self._log(f"✗ the run stopped with an error: {err}. The journal keeps its state: reopen the "
                      "screen to resume it.")
            self._quit_if_stopped()
            self._render_all()
        elif event.worker.group in ("scale-up-load", "scale-up-plan"):
            self.plan_error = err
            self._render_all()

    # -- verification / live state --------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="scale-up-live", exit_on_error=False)
    def refresh_live(self, final: bool) -> None:
        if self.plan is None:
            return
        self.post_message(LiveStateReady(data.live_state(self._ensure_session(), self.plan, describe_vm=final)))

    def on_live_state_ready(self, msg: LiveStateReady) -> None:
        if self.live is not None and self.live.vm_now and not msg.state.vm_now:
            msg.state.vm_now = self.live.vm_now  # keep the VM read at the end of the run
        self.live = msg.state
        self._render_all()

    def view_changed(self, view: Any) -> None:
        """The app's cluster snapshot: pod phases without extra API calls between refreshes."""
        if not self.ready or self.plan is None or self.live is None:
            return
        self.live = data.merge_view(self.live, view)
        self._render_pods()

    # -- revert -------------------------------------------------------------------------------------------
    def action_revert(self) -> None:
        if self.run.running:
            self.notify("the run is in progress", severity="warning")
            return
        if self.plan is None:
            self.notify("nothing to revert: no plan for this node yet", severity="warning")
            return
        old = None
        if self.journal is not None:  # a resumed run: the plan the run started from has the old flavor
            old = ((self.journal.doc.get("context") or {}).get("plan") or {}).get("vm", {}).get("flavor")
        self.check_revert(self.plan, old)

    @work(thread=True, exclusive=True, group="scale-up-revert", exit_on_error=False)
    def check_revert(self, plan: ScaleUpPlan, old_flavor: str | None) -> None:
        from console.runbook.revert import plan_revert, render
        from console.runbook.scaleup import PlanRefused
        from console.runbook.session import SessionError

        session = self._ensure_session()
        possible, reason, preview = data.revert_possible(session, plan, old_flavor)
        rplan = None
        if possible:
            try:
                rplan, _journal = plan_revert(session, plan.node.name, node_timeout=plan.request.node_timeout,
                                              resize_timeout=plan.request.resize_timeout)
            except (PlanRefused, SessionError) as e:  # SessionError: a journal of the node cannot be used
                possible, reason = False, str(e)
            else:
                preview = render(rplan)
        self.post_message(RevertChecked(possible, reason, preview, rplan))

    def on_revert_checked(self, msg: RevertChecked) -> None:
        self.revert_message = msg.reason
        self._log(("revert: " if msg.possible else "cannot revert: ") + msg.reason)
        if not msg.possible:
            self.notify(msg.reason, title="cannot revert", severity="warning", timeout=12)
            return
        assert self.plan is not None
        target = f"server {self.plan.vm.name}"
        rplan = msg.plan

        def confirmed(yes: bool | None) -> None:
            if yes and rplan is not None:
                self.stop_flag = StopFlag()
                self.run = RunState(running=True, started=time.monotonic())
                self.steps.set_steps(rplan.steps)  # the revert runbook's own steps, journaled and audited
                self._render_status()
                self.do_revert(rplan)

        self.app.push_screen(ConfirmDanger("revert resize", target, msg.preview), confirmed)

    @work(thread=True, exclusive=True, group="scale-up-revert", exit_on_error=False)
    def do_revert(self, rplan: Any) -> None:
        from console.guard import GuardRefusal
        from console.runbook.revert import outcome, run_revert
        from console.runbook.session import SessionError

        try:
            result = run_revert(self._ensure_session(), rplan, stop=self.stop_flag,
                                on_event=lambda ev: self.post_message(RunbookStepChanged(ev)))
        except (SessionError, GuardRefusal) as e:  # another run holds the node; read-only
            self.post_message(RevertDone(False, f"revert not started: {e}"))
            return
        self.post_message(RevertDone(result.status == "done", outcome(rplan, result), result))

    def on_revert_done(self, msg: RevertDone) -> None:
        self.run.running = False
        self.ended = ("revert", msg.result, "" if msg.result else msg.message)
        self.revert_message = msg.message
        self._log(("✓ " if msg.ok else "✗ ") + msg.message)
        self.notify(msg.message, title="revert", severity="information" if msg.ok else "error", timeout=12)
        self._quit_if_stopped()
        self.refresh_live(True)
        self._render_all()

    # -- drain override -----------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "override_drain" and self.drain_blocked is None:
            return False  # the key shows only while a plan is blocked by the drain
        return super().check_action(action, parameters)

    def action_override_drain(self) -> None:
        """Re-plan with kubectl's --force / --delete-emptydir-data after a confirm naming what is lost."""
        blocked = self.drain_blocked
        if self.run.running or blocked is None:
            self.notify("the drain is not blocked: nothing to override", severity="warning")
            return

        def confirmed(yes: bool | None) -> None:
            if yes and self.drain_blocked is blocked:
                self._log(f"drain override: re-planning with {' '.join(blocked.flags)}")
                self.make_plan(blocked.overridden(), None, True)

        self.app.push_screen(ConfirmDanger(f"drain with {' '.join(blocked.flags)}", self.node or "",
                                           blocked.preview()), confirmed)

    # -- misc actions ---------------------------------------------------------------------------------------
    def leave_refusal(self) -> str:
        """Why this screen may not be left now ("" when it may): esc, q and `:` navigation all say it."""
        if not self.run.running:
            return ""
        return (f"the run on {self.node} is in progress; leaving now would hide it (it is journaled and "
                "resumable): wait for it to finish, or ctrl+c to stop it before its next step")

    def run_in_progress(self) -> bool:
        return self.run.running

    # -- quitting during a run (the app's quit actions ask this screen first: GuardsItsRun) -------------------
    def quit_question(self) -> str:
        from console.tui.screens.scaleup_quit import quit_question

        return quit_question(self.node or "?")

    def stopping_note(self) -> str:
        return f"stopping the run on {self.node} before its next step, then quitting"

    def stopped_message(self) -> str:
        kind, result, error = self.ended
        return data.stopped_outcome(kind, self.node or "?", result, error)
