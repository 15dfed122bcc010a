"""The fleet-plan screen's pure rendering (console/tui/screens/fleet_view.py): rows, marks, states, summaries."""

from __future__ import annotations

from console.planner.model import LIBVIRT, OPENSTACK, NodeChange, Plan, Size, Unplaceable
from console.tui.screens import fleet_view as fv

SMALL, LARGE = Size(2, 4096, "m1.small"), Size(8, 16384, "m1.large")


def plan(**kw: object) -> Plan:
    changes = (NodeChange("w1", "id-1", SMALL, LARGE, OPENSTACK, ("ns/a", "ns/b"), 6.0),
               NodeChange("w3", "w3", Size(2, 4096), Size(4, 6144), LIBVIRT, ("ns/c",), 2.5))
    base = {"nodes": changes, "placements": {"ns/a": "w1", "ns/b": "w1", "ns/c": "w3", "ns/d": "w2"},
            "unplaceable": (Unplaceable("ns/huge", "needs 40 CPU, more than m1.xlarge"),), "cost": 8.5,
            "optimal": True, "solver": "exact", "seconds": 0.25}
    return Plan(**{**base, **kw})  # type: ignore[arg-type]


def test_rows_are_the_grown_nodes_in_run_order_then_the_dropped_ones() -> None:
    marks = fv.Marks(frozenset({"w2"}))
    keys, cells = fv.node_rows(plan(), marks, marks)
    assert keys == ["w1", "w3", "w2"]
    assert cells[0][:5] == ("w1", "m1.small → m1.large", "6", "grow", "2: ns/a, ns/b")
    assert cells[1][1:3] == ("2/4Gi → 4/6Gi", "2.50") and cells[1][5] == "live (no reboot)"
    assert cells[2][1:4] == ("not grown", "—", "dropped")


def test_a_mark_not_planned_yet_says_r() -> None:
    planned = fv.Marks()
    assert fv.plan_state(None, "w2", fv.Marks(frozenset({"w2"})), planned) == "drop (r)"
    assert fv.plan_state(None, "w2", planned, fv.Marks(frozenset({"w2"}))) == "undrop (r)"
    pinned = fv.Marks(pinned={"w1": LARGE})
    assert fv.plan_state(None, "w1", pinned, planned) == "pin (r)"
    assert fv.plan_state(None, "w1", pinned, pinned) == "pinned"
    assert fv.plan_state(None, "w1", planned, pinned) == "unpin (r)"


def test_summary_says_optimal_or_the_gap() -> None:
    assert fv.plan_summary(plan()) == ("2 nodes to grow · 4/5 pods placed · 1 unplaceable · cost 8.50 · optimal "
                                       "(exact)")
    assert "gap ≤ 15% (not proven optimal)" in fv.plan_summary(plan(optimal=False, bound=7.2, solver="heuristic"))
    assert "not proven optimal (no bound)" in fv.plan_summary(plan(optimal=False))


def test_the_rest_lists_pods_placed_as_nodes_are_and_every_unplaceable_reason() -> None:
    text = fv.rest_text(plan(), {}, ("Placement: 403 (admin only): host room not bounded",)).plain
    assert "fit without growing (1): ns/d → w2" in text
    assert "ns/huge: needs 40 CPU, more than m1.xlarge" in text
    assert "note: Placement: 403" in text


def test_node_states_through_a_run() -> None:
    assert fv.state_after("node-start", "pending") == "running"
    assert fv.state_after("step", "running") == "running"
    assert fv.state_after("node-done", "running") == "done"
    assert fv.state_after("node-failed", "running", "failed") == "failed"
    assert fv.state_after("node-failed", "running", "needs-attention") == "attention"
    assert fv.state_after("node-failed", "running", "interrupted") == "attention"
    # the fleet journal at the end: a node left "running" was stopped mid-run (resumable)
    assert fv.final_state("running") == "attention" and fv.final_state("done") == "done"


def test_the_confirmation_names_every_node_and_what_it_unblocks() -> None:
    text = fv.preview(plan())
    assert "1. w1: m1.small (2 vCPU, 4Gi) → m1.large (8 vCPU, 16Gi), resize (reboots), cost 6" in text
    assert "unblocks: ns/a, ns/b" in text and "not placed: ns/huge" in text
    assert fv.nodes_target(("w1", "w3")) == "2 nodes (w1, w3)"


def test_the_running_steps_line_counts_the_messages_shown_above_it() -> None:
    from console.tui.widgets.runbook import StepState

    steps = [StepState("a", "A", "done", "ok"), StepState("b", "B", "skipped", "already in place"),
             StepState("c", "C", "running"), StepState("d", "D")]
    assert fv.running_step_line(steps) == 3  # A (a done step's message is not shown), B and its message, then C
    assert fv.running_step_line(steps[:2]) is None
