"""Pure parts of the scale-up screen: the step list's state machine, target proposals, flavor hints, verdicts."""

from __future__ import annotations

from types import SimpleNamespace

from console.kube.model import NodeInfo, PodInfo, Resources
from console.runbook.plan import FlavorInfo, VmSize, advise
from console.tui.widgets.runbook import PodRow, RunbookSteps, fmt_elapsed
from console.tui.widgets.runbook_data import LiveState, verdict
from console.tui.widgets.runbook_pickers import Target, default_target, flavor_hint

GiB = 2**30
FLAVORS = [FlavorInfo("m1.medium", 2, 4096), FlavorInfo("m1.large", 8, 12288), FlavorInfo("m1.small", 1, 2048)]


def node(cpu: int = 2, mem: int = 4030532 * 1024) -> NodeInfo:
    return NodeInfo("w2", "", "", {}, (), "True", False, Resources(cpu * 1000, mem, 110),
                    Resources(cpu * 1000, mem - 256 * 2**20, 110), "", "", "")


def pending(cpu_m: int = 3000, mem: int = 5 * GiB) -> PodInfo:
    return PodInfo("default", "nginx", "", "Pending", Resources(cpu_m, mem, 1))


def test_steps_follow_engine_events():
    w = RunbookSteps()
    w.set_steps([{"id": "a", "title": "cordon"}, {"id": "b", "title": "resize"}, {"id": "c", "title": "verify"}])
    w.apply("run-start", now=0.0)
    w.apply("step-start", "a", now=0.0)
    w.apply("step-done", "a", now=0.5)
    w.apply("step-start", "b", now=0.5)
    w.apply("step-progress", "b", "waiting for VERIFY_RESIZE", now=1.0)
    assert w.status_of("b") == "running" and w.step("b").message == "waiting for VERIFY_RESIZE"
    w.apply("step-failed", "b", "No valid host was found", now=2.0)
    w.apply("undo-start", "a", "undoing: cordon", now=2.1)
    w.apply("undo-done", "a", now=2.2)
    w.apply("run-done", now=2.3)
    assert [s.status for s in w.steps] == ["undone", "failed", "pending"]
    text = w.render_steps(now=3.0).plain
    assert "✗ 2. resize  1.5s" in text and "No valid host was found" in text and "elapsed 2.3s" in text


def test_journal_steps_started_but_unfinished_show_as_pending():
    w = RunbookSteps()
    w.set_steps([{"id": "a", "title": "x", "status": "done"}, {"id": "b", "title": "y", "status": "acted"}])
    assert [s.status for s in w.steps] == ["done", "pending"]
    assert fmt_elapsed(75.0) == "1m15s" and fmt_elapsed(None) == ""


def test_default_target_prefers_the_smallest_fitting_flavor_else_a_size():
    a = advise(node(), [], pending(), vm=VmSize(2, 4096), flavors=FLAVORS)
    assert default_target([a], "default/nginx", True) == Target(flavor="m1.large")
    b = advise(node(), [], pending(), vm=VmSize(2, 4096))
    t = default_target([b], "default/nginx", False)
    assert t is not None and t.flavor is None and t.vcpus == 3 and t.memory_mib >= 5 * 1024
    assert default_target([advise(node(), [], pending(100, GiB), vm=VmSize(2, 4096))], None, True) is None


def test_flavor_hints_say_what_a_flavor_would_do():
    a = advise(node(), [], pending(), vm=VmSize(2, 4096), flavors=FLAVORS)
    cur = VmSize(2, 4096)
    assert "fits default/nginx" in flavor_hint(FLAVORS[1], cur, [a])
    assert "current size" in flavor_hint(FLAVORS[0], cur, [a])
    assert "smaller than the VM" in flavor_hint(FLAVORS[2], cur, [a])


def test_verdict_names_what_is_wrong():
    plan = SimpleNamespace(node=SimpleNamespace(name="w2"), target=VmSize(8, 12288))
    done = SimpleNamespace(status="done", run_id="r1", message="", journal_path="/j")
    live = LiveState("8", "12268324Ki", "Ready", True, True, [PodRow("default/nginx", "will fit", "Running", "w2")],
                     VmSize(8, 12288), "m1.large [ACTIVE]")
    assert verdict(plan, done, "", live).startswith("✓ verified: kubelet capacity cpu 8 / memory 12268324Ki")
    stale = LiveState("2", "4030532Ki", "Ready", False, False,
                      [PodRow("default/nginx", "will fit", "Pending", "", "0/3 nodes are available")], None)
    v = verdict(plan, done, "", stale)
    assert v.startswith("✗") and "default/nginx Pending: 0/3 nodes are available" in v and "does not match" in v
    attention = SimpleNamespace(status="needs-attention", run_id="r2", message="revert failed", journal_path="/j/r2")
    v = verdict(plan, attention, "", stale)
    assert "needs attention" in v and "/j/r2" in v and ":scale-up w2" in v
    assert verdict(plan, None, "", None) == ""


def test_a_pod_that_runs_says_where_not_will_fit():
    """The pods panel said `will fit` for a pod already Running: what is true now comes first."""
    import io

    from rich.console import Console

    from console.tui.widgets.runbook import pods_summary, pods_table

    rows = [PodRow("default/nginx", "will fit", "Running", "w2"), PodRow("default/big", "still too big", "Pending", "")]
    assert [r.state for r in rows] == ["Running on w2", "Pending: still too big"]
    console = Console(width=100, file=io.StringIO(), color_system=None, record=True)
    console.print(pods_table(rows, {}))
    shown = console.export_text()
    assert "Running on w2" in shown and "will fit" not in shown
    assert pods_summary(rows) == "default/nginx Running on w2; default/big Pending: still too big"


def test_short_terminals_collapse_the_panels_the_phase_does_not_need():
    """80×24: before a run the plan and the pods are open, while it runs the steps, after it the pods and the
    capacity (the verification); from 40 rows everything is open."""
    from console.tui.widgets.runbook import CapacityRow, StepState, capacity_summary, collapsed_panels, steps_summary

    assert collapsed_panels(24, running=False, finished=False, planned=True) == {"steps", "capacity"}
    assert collapsed_panels(24, running=True, finished=False, planned=True) == {"plan", "pods", "capacity"}
    assert collapsed_panels(24, running=False, finished=True, planned=True) == {"plan", "steps"}
    assert collapsed_panels(40, running=False, finished=True, planned=True) == set()
    steps = [StepState("a", "cordon", "done", started=0.0, finished=1.0),
             StepState("b", "resize", "running", started=1.0)]
    assert steps_summary(steps, 3.0, now=3.0) == "running 2/2 resize 2.0s"
    steps[1].status, steps[1].finished = "done", 4.0
    assert steps_summary(steps, 4.0, now=9.0) == "✓ 2/2 done · elapsed 4.0s"
    steps[1].status, steps[1].message = "failed", "No valid host was found"
    assert steps_summary(steps, 4.0, now=9.0).startswith("✗ failed at 2/2 resize: No valid host was found")
    rows = [CapacityRow("cpu", "8", "8", "12", "12", "12", True), CapacityRow("memory", "12Gi", "x", "16Gi")]
    assert capacity_summary(rows) == "cpu 8 → 12 ✓ · memory 12Gi → 16Gi"


def test_stop_and_quit_says_what_the_run_did_once_it_ended():
    """Issue 20, point 10: the message after "Stop and quit" comes from the engine's result, not the request."""
    from console.runbook.cordon import Left
    from console.runbook.engine import RunResult
    from console.tui.widgets.runbook_data import stopped_outcome

    def result(status: str, message: str = "", stopped_at: str = "", cordoned: Left | None = None) -> RunResult:
        return RunResult("r1", status, 0, message, "/j/r1.json", 1.0, 0.5, [], stopped_at, cordoned=cordoned)

    resume = "resume it with R on the nodes screen or :scale-up w2"
    assert stopped_outcome("scale-up", "w2", result("interrupted", stopped_at="before drain")) == \
        f"scale-up of w2 stopped before drain, nothing rolled back (run r1); {resume}"
    assert stopped_outcome("scale-up", "w2", result("done")) == \
        "scale-up of w2 finished before it could be stopped: done (run r1)"
    assert stopped_outcome("scale-up", "w2", result("failed", "NoValidHost. Rolled back: w2 uncordoned")) == \
        "scale-up of w2 failed before it could be stopped, and was rolled back: NoValidHost. Rolled back: w2 " \
        "uncordoned (run r1)"
    left = Left("console", "w2 is left cordoned by this run: resuming it uncordons the node; `kubectl uncordon "
                           "w2` lets pods schedule on it now")
    attention = stopped_outcome("scale-up", "w2", result("needs-attention", "undo failed: server in ERROR",
                                                         cordoned=left))
    assert attention == (f"scale-up of w2 needs attention, it ended before it could be stopped: undo failed: server "
                         f"in ERROR (run r1). Journal /j/r1.json; fix the cause, then {resume}. {left.message}")
    assert "verification failed: nginx Pending" in stopped_outcome("scale-up", "w2", result("verify-failed",
                                                                                         "nginx Pending"))
    refused = stopped_outcome("revert", "w2", result("refused", "read-only"))
    assert refused == "revert of w2 was refused: read-only (run r1)"
    assert stopped_outcome("scale-up", "w2", None, "ApiException: 500") == \
        f"scale-up of w2 ended with an error: ApiException: 500; its journal, if it has one, keeps its state: {resume}"


def test_the_verdict_says_when_the_node_is_left_cordoned():
    from console.runbook.cordon import Left

    plan = SimpleNamespace(node=SimpleNamespace(name="w2"), target=VmSize(8, 12288))
    left = Left("admin", "w2 is left cordoned, as it was before the run: `kubectl uncordon w2` lets pods schedule "
                         "on it")
    failed = SimpleNamespace(status="failed", run_id="r1", message="NoValidHost", journal_path="/j", cordoned=left)
    assert verdict(plan, failed, "", None) == f"✗ failed — rolled back, the node and VM are in a safe state: " \
                                               f"NoValidHost. {left.message}"
