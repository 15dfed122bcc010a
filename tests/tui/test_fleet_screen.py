"""The fleet-plan screen ("plan all", issue 13 deliverable 3) on a hand-built PlanInput: the real planner
(console.planner.solve) plans it; the App's gateways and fleet runbook are stand-ins with the contract's shapes
(Gateways.plan_input(pods, prefs) -> PlanInput; Fleet.run(on_event, stop) with FleetEvent(fleet_id, kind, node,
message, run_event)), so the view and its keys are tested without a cluster. tests/tui/test_fleet_lab.py runs the
screen on the lab's `planner` scenario through the real gateways.

The run's model is the scale-up screen's (console/tui/screens/scaleup.py): per node its engine steps
(console/runbook/engine.py RunEvent kinds), a log line, done/failed/attention; leaving mid-run is refused and
quitting asks (QuitDuringRun), then stops the run before its next step.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from screentext import screen_text
from tuitools import Host

from console.config import Settings
from console.planner.model import (
    LIBVIRT,
    OPENSTACK,
    CostModel,
    Node,
    PendingPod,
    PlanInput,
    Preferences,
    Size,
    SizeOption,
    Vm,
)
from console.runbook.engine import RunEvent
from screenshots import wait_until

GIB = 1024**3
SIZES = [(80, 24), (120, 40)]


def flavor(name: str, vcpus: int, gib: int) -> Size:
    return Size(vcpus, gib * 1024, name)


def os_node(name: str, current: Size, options: list[Size], **kw: Any) -> Node:
    """A worker on an OpenStack VM: allocatable = the flavor less 0.5 CPU / 1 GiB reserved; `requested` used."""
    vm = Vm(f"id-{name}", OPENSTACK, kw.pop("host", "compute-1"), current,
            tuple(SizeOption(s, OPENSTACK) for s in options))
    return Node(name, {"kubernetes.io/hostname": name, **kw.pop("labels", {})},
                allocatable_cpu_m=current.vcpus * 1000 - 500, allocatable_memory=(current.memory_mib // 1024 - 1) * GIB,
                requested_cpu_m=kw.pop("requested_cpu_m", current.vcpus * 1000 - 600),
                requested_memory=kw.pop("requested_memory", 1 * GIB), reserved_cpu_m=500, reserved_memory=GIB,
                vm=vm, **kw)


def pod(name: str, cpu: float, gib: float = 1, **kw: Any) -> PendingPod:
    return PendingPod("train", name, int(cpu * 1000), int(gib * GIB), **kw)


SMALL, MEDIUM, LARGE, XLARGE = (flavor("m1.small", 2, 4), flavor("m1.medium", 4, 8), flavor("m1.large", 8, 16),
                                flavor("m1.xlarge", 16, 32))


def hand_built() -> PlanInput:
    """Three workers: w1 and w2 OpenStack m1.small (up to m1.xlarge), w3 libvirt 2/4Gi live up to 8/16Gi (all
    nearly full); four Pending pods of 3 CPU each (one per node: anti-affinity is not needed to force it, a node's
    largest size fits two at most but the cost is per vCPU added); one pod needing 40 CPU (more than any size) and
    one whose nodeSelector no node matches."""
    w3 = Node("w3", {"kubernetes.io/hostname": "w3"}, allocatable_cpu_m=1500, allocatable_memory=3 * GIB,
              requested_cpu_m=1400, requested_memory=GIB, reserved_cpu_m=500, reserved_memory=GIB,
              vm=Vm("w3-domain", LIBVIRT, "hv-2", Size(2, 4096), max_size=Size(8, 16384)))
    nodes = (os_node("w1", SMALL, [MEDIUM, LARGE, XLARGE]), os_node("w2", SMALL, [MEDIUM, LARGE, XLARGE],
                                                                      host="compute-2"), w3)
    pods = (pod("job-0", 3), pod("job-1", 3), pod("job-2", 3),
            pod("huge", 40), pod("lost", 1, node_selector={"feature.node.kubernetes.io/cpu-cpuid.AMX": "true"}))
    return PlanInput(nodes, pods, cost=CostModel(vcpu=1.0, memory_gib=0.0))


class PlanGateways:
    """The App's gateways as the fleet screen uses them (console/gateways.py: plan_input, settings, why_not)."""

    def __init__(self, settings: Settings, inp: PlanInput, fault: Exception | None = None) -> None:
        self.settings, self.inp, self.fault = settings, inp, fault
        self.asked: list[Preferences | None] = []

    def plan_input(self, pods: Any = None, prefs: Preferences | None = None) -> PlanInput:
        self.asked.append(prefs)
        if self.fault is not None:
            raise self.fault
        return replace(self.inp, prefs=prefs) if prefs is not None else self.inp

    def why_not(self, action: str) -> str:
        return ""


@dataclass(frozen=True)
class FleetEvent:
    """The contract's FleetEvent (console/runbook/fleet.py)."""

    fleet_id: str
    kind: str
    node: str = ""
    message: str = ""
    run_event: RunEvent | None = None


@dataclass
class FleetResult:
    """The contract's FleetResult; `nodes` as the fleet journal has them (status pending/running/done/failed/
    attention: a node interrupted mid-run stays "running", to be resumed)."""

    fleet_id: str
    status: str
    exit_code: int
    message: str
    nodes: list[dict[str, Any]]


FLEET_ID = "fleet-20261202T001500-ab12"
STEPS = [{"id": "preflight", "title": "Preflight"}, {"id": "drain", "title": "Drain"},
         {"id": "resize", "title": "Resize"}]


class ScriptedFleet:
    """Runs the plan's nodes in order with the scale-up engine's events; waits at `gate` inside the second
    node's drain (a run in progress), and stops before the next step when `stop` is set, as the engine does."""

    def __init__(self, plan: Any, gate: threading.Event, fail: str = "", started: list[Any] | None = None) -> None:
        self.plan, self.gate, self.fail = plan, gate, fail
        self.started = started if started is not None else []

    def run(self, on_event: Callable[[Any], object], stop: threading.Event) -> FleetResult:
        self.started.append(self.plan)
        fid = FLEET_ID
        journal = {c.node: "pending" for c in self.plan.nodes}

        def result(status: str, code: int, message: str) -> FleetResult:
            return FleetResult(fid, status, code, message, [{"node": n, "status": s} for n, s in journal.items()])

        for i, change in enumerate(self.plan.nodes):
            node, rid = change.node, f"run-{i}"
            journal[node] = "running"

            def send(kind: str, step: str = "", message: str = "", **data: Any) -> None:
                title = next((s["title"] for s in STEPS if s["id"] == step), "")
                on_event(FleetEvent(fid, "step", node, message,  # noqa: B023 (called inside this iteration)
                                    RunEvent(rid, kind, step, title, message, data)))  # noqa: B023

            on_event(FleetEvent(fid, "node-start", node))
            send("run-start", steps=STEPS)
            for s in STEPS:
                if stop.is_set():
                    send("run-done", message="interrupted", status="interrupted")
                    on_event(FleetEvent(fid, "node-failed", node, "interrupted: needs attention"))
                    return result("interrupted", 4, f"stopped before {s['title']} of {node}")
                send("step-start", s["id"])
                if i == 1 and s["id"] == "drain":
                    self.gate.wait(30)
                if node == self.fail and s["id"] == "drain":
                    send("step-failed", s["id"], "PDB train/pdb blocks the eviction of train/db-0")
                    send("run-done", message="needs attention", status="needs-attention")
                    journal[node] = "attention"
                    on_event(FleetEvent(fid, "node-failed", node, "needs attention: drain blocked"))
                    return result("needs-attention", 4, f"{node} needs attention: drain blocked")
                send("step-done", s["id"])
            send("run-done", message="done", status="done")
            journal[node] = "done"
            on_event(FleetEvent(fid, "node-done", node))
        on_event(FleetEvent(fid, "done", "", "scaled up w1, w2, w3; 3 of 3 pods of job/train Running"))
        return result("done", 0, "scaled up w1, w2, w3; 3 of 3 pods of job/train Running")


class FleetHost(Host):
    """A bare App with the ConsoleApp's prepare_fleet (console/tui/app.py): here the scripted fleet."""

    def __init__(self, screen: Any, settings: Settings, gateways: Any, fail: str = "") -> None:
        super().__init__(screen, settings, gateways)
        self.gate = threading.Event()
        self.fail = fail
        self.runs: list[Any] = []  # plans prepared (the confirmation follows)
        self.started: list[Any] = []  # plans run

    def prepare_fleet(self, inp: PlanInput, plan: Any) -> Any:
        from console.tui.appbase import PreparedFleet
        from console.tui.screens.fleet_view import preview

        self.runs.append(plan)
        fleet = ScriptedFleet(plan, self.gate, self.fail, self.started)
        return PreparedFleet(fleet, FLEET_ID, tuple(c.node for c in plan.nodes), preview(plan))

    def request_quit(self) -> None:
        """As ConsoleApp.request_quit: a screen with a run in progress asks first."""
        busy = next((s for s in reversed(self.screen_stack) if getattr(s, "leave_refusal", lambda: "")()), None)
        if busy is None:
            self.exit()
        else:
            busy.confirm_quit()


def fleet_host(read_only: bool = False, fail: str = "") -> FleetHost:
    from console.tui.screens.fleet import FleetScreen

    settings = Settings(read_only=read_only)
    return FleetHost(FleetScreen(), settings, PlanGateways(settings, hand_built()), fail)


async def planned(pilot: Any) -> Any:
    screen = pilot.app.screen
    await wait_until(pilot, lambda: screen.plan is not None and not screen.planning, what="the plan")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    return screen


def shown_text(app: Any) -> str:
    """Everything on screen, lines joined (a wrapped reason reads whole)."""
    return " ".join(" ".join(screen_text(app).split()).split())


async def test_the_plan_shows_whole_nodes_pods_costs_and_reasons() -> None:
    """At 80×24 and 120×40: each grown node with before → after and its cost, every pod it unblocks (the detail of
    the highlighted node), the total and optimality, each unplaceable pod with the planner's reason."""
    for size in SIZES:
        app = fleet_host()
        async with app.run_test(size=size) as pilot:
            screen = await planned(pilot)
            plan = screen.plan
            assert plan.nodes and plan.unplaceable, plan
            for change in plan.nodes:
                screen.table.move_to(change.node)
                await pilot.pause()
                text = shown_text(app)
                assert change.node in text
                assert f"{change.from_size.flavor or change.from_size.vcpus}" in text
                for p in change.pods:
                    assert p in text, (size, p)
            text = shown_text(app)
            for u in plan.unplaceable:
                assert u.pod in text and " ".join(u.reason.split()) in text, (size, u)
            from console.tui.screens.fleet_view import fmt_cost, gap_text

            assert f"cost {fmt_cost(plan.cost)}" in text and gap_text(plan) in text
            assert "train/huge" in text and "train/lost" in text


async def test_drop_pin_and_replan_change_the_plan() -> None:
    """d marks the highlighted node (not planned until r), r re-plans without it: the dropped node is not grown
    and stays a row saying so; p pins a node at its planned size and the re-plan keeps it exactly there."""
    app = fleet_host()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await planned(pilot)
        first = screen.plan
        dropped = first.nodes[0].node
        screen.table.move_to(dropped)
        await pilot.press("d")
        await pilot.pause()
        assert "drop (r)" in screen_text(app) and "r re-plans" in screen_text(app)
        await pilot.press("a")  # the plan shown is not the marks': no run
        await pilot.pause()
        assert not isinstance(app.screen, _confirm_type())
        await pilot.press("r")
        await planned(pilot)
        assert app.gateways.asked[-1] is not None and dropped in app.gateways.asked[-1].dropped
        assert dropped not in {c.node for c in screen.plan.nodes}
        assert screen.plan is not first
        assert "dropped" in screen_text(app)
        # pin the first grown node of the new plan at its size; the re-plan grows it to exactly that
        kept = screen.plan.nodes[0]
        screen.table.move_to(kept.node)
        await pilot.press("p", "r")
        await planned(pilot)
        assert app.gateways.asked[-1].pinned == {kept.node: kept.to_size}
        assert dropped in app.gateways.asked[-1].dropped
        change = next(c for c in screen.plan.nodes if c.node == kept.node)
        assert change.to_size == kept.to_size
        # d on the dropped row takes it back
        screen.table.move_to(dropped)
        await pilot.press("d", "r")
        await planned(pilot)
        assert dropped not in app.gateways.asked[-1].dropped


def _confirm_type() -> type:
    from console.tui.safety import ConfirmDanger

    return ConfirmDanger


async def test_read_only_shows_the_plan_and_offers_no_run() -> None:
    """Read-only: the plan whole, the mode line says so, `a` is not in the footer, a and enter run nothing."""
    app = fleet_host(read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await planned(pilot)
        text = screen_text(app)
        assert "read-only mode: this is the plan only" in text
        footer = text.splitlines()[-1]
        assert "Run" not in footer and "Re-plan" in footer
        await pilot.press("a", "enter")
        await pilot.pause()
        assert app.screen is screen and not app.runs


async def test_run_confirms_then_shows_progress_per_node_to_the_end() -> None:
    """a → the console's confirmation naming every node (n cancels: nothing runs); y → the fleet runs: each node
    pending/running/done with its steps, its log line; the end says the fleet's outcome."""
    app = fleet_host()
    app.gate.set()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await planned(pilot)
        nodes = [c.node for c in screen.plan.nodes]
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, _confirm_type()), what="the confirmation")
        dialog = screen_text(app)
        assert all(n in dialog for n in nodes) and "one node at a time" in dialog
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is screen and app.runs and not app.started
        await pilot.press("enter")  # enter on the table: the same confirmation
        await wait_until(pilot, lambda: isinstance(app.screen, _confirm_type()), what="the confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: screen.run.result is not None, what="the fleet's end")
        await pilot.pause()
        assert screen.run.states == {n: "done" for n in nodes}
        text = screen_text(app)
        assert "fleet done" in text and "3/3 done" in text
        assert "scaled up w1, w2, w3; 3 of 3 pods of job/train Running" in text


async def test_a_failed_node_says_needs_attention_and_the_nodes_after_stay_pending() -> None:
    app = fleet_host(fail="")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await planned(pilot)
        app.fail = screen.plan.nodes[0].node
        app.gate.set()
        await pilot.press("a", "y")
        await wait_until(pilot, lambda: screen.run.result is not None, what="the fleet's end")
        await pilot.pause()
        first, *rest = [c.node for c in screen.plan.nodes]
        assert screen.run.states[first] == "attention"
        assert all(screen.run.states[n] == "pending" for n in rest)
        text = screen_text(app)
        assert "attention" in text and "failed at 2/3 Drain" in text


async def test_leaving_mid_run_is_refused_and_quitting_asks_then_stops_before_the_next_step() -> None:
    """esc during the run stays (a notification says why); ctrl+c asks (QuitDuringRun); n keeps it running; y stops
    the fleet before its next step and the app quits once it has."""
    from console.tui.screens.scaleup_quit import QuitDuringRun

    app = fleet_host()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await planned(pilot)
        second = screen.plan.nodes[1].node
        await pilot.press("a", "y")
        await wait_until(pilot, lambda: screen.run.states.get(second) == "running", what="the second node running")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        assert any("the fleet run is in progress" in str(n.message) for n in app._notifications)
        app.request_quit()
        await wait_until(pilot, lambda: isinstance(app.screen, QuitDuringRun), what="the quit question")
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is screen and screen.run.running
        app.request_quit()
        await wait_until(pilot, lambda: isinstance(app.screen, QuitDuringRun), what="the quit question")
        await pilot.press("y")
        await pilot.pause()
        assert screen.stop_flag.is_set()
        app.gate.set()  # the step in progress ends; the fleet stops before the next
        await wait_until(pilot, lambda: screen.run.result is not None, what="the stopped fleet")
    assert screen.run.result.status == "interrupted"
    assert screen.run.states[second] == "attention"


async def test_a_refused_read_says_what_failed_and_offers_nothing_to_run() -> None:
    """The API's 403 on the plan input's reads (console/faults.py's wording, as every screen): the status line and
    the table say it, no traceback, and a/enter run nothing."""
    from kubernetes.client.exceptions import ApiException

    from console.tui.screens.fleet import FleetScreen

    settings = Settings()
    app = FleetHost(FleetScreen(), settings, PlanGateways(settings, hand_built(), ApiException(403, "Forbidden")))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.plan_error, what="the failed read")
        await pilot.pause()
        text = screen_text(app)
        assert "cannot plan:" in text and "403" in text and "Traceback" not in text
        await pilot.press("a", "enter")
        await pilot.pause()
        assert app.screen is screen and not app.runs
