"""`P` on the Pending screen on the lab's `planner` scenario: the plan comes from the App's gateways
(Gateways.plan_input: the kubernetes client, openstacksdk against the lab's Kubernetes, Nova limits and Placement)
and console.planner.solve, and the screen shows it whole at 80×24 and 120×40. One lab for the module.

The plan shown must be the one the test computes itself from the same cluster (read_plan_input with the real
clients, then solve), and the scenario's hand-computed optimum (console/lab/scenarios.py `_planner` docstring):
the three `train` pods (AVX512F nodeSelector, dedicated=hpc toleration, hostname anti-affinity) on kube-worker01,
kube-worker03 and kube-worker04 grown to m1.large (cmp001's free vCPUs take one m1.large upsize; worker02 ties
with worker01 but holds a PDB-blocked pod); solver-xl (more than m1.xlarge), inference (no node matches its
nodeSelector) and etl (the project's cores quota is spent by the job) unplaceable.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fleettools import hold_node, release_node
from labstart import start_lab
from screentext import screen_text

from console.config import Settings
from console.lab.world import Lab
from screenshots import loaded, make_app, wait_until

pytestmark = pytest.mark.lab

AVX512F_WORKERS = {"kube-worker01", "kube-worker02", "kube-worker03", "kube-worker04"}
GROWN = {"kube-worker01": "m1.large", "kube-worker03": "m1.large", "kube-worker04": "m1.large"}
UNPLACEABLE = {"default/solver-xl", "default/inference", "default/etl"}


def train_nodes(plan: Any) -> list[str]:
    """Where the plan puts the Job's pods (train-<random>, as the job controller names them)."""
    return [n for p, n in plan.placements.items() if p.startswith("default/train-")]


def expected_plan(lab: Lab) -> dict[str, Any]:
    """The plan for every Pending pod, computed here from the lab with the real clients (what `console plan -o
    json` prints)."""
    from kubernetes import config

    from console.planner.inputs import read_plan_input
    from console.planner.solve import solve

    api = config.new_client_from_config(str(lab.state.kubeconfig))
    try:
        return solve(read_plan_input(api, lab_settings(lab))).to_json()
    finally:
        api.close()


def lab_settings(lab: Lab, **kw: Any) -> Settings:
    return Settings(kubeconfig=str(lab.state.kubeconfig), cloud="lab", theme="dark",
                    libvirt_uris=(lab.libvirt_uri,), **kw)


@pytest.fixture(scope="module")
def planner_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("planner", tmp_path_factory.mktemp("tui-fleet-lab"), clouds_env=True)


async def open_plan_all(pilot: Any) -> Any:
    """From the nodes screen: p (Pending), then P (plan all); the plan made."""
    app = pilot.app
    await loaded(pilot)
    await pilot.press("p")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "PendingScreen", what="the Pending screen")
    await pilot.press("P")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "FleetScreen", what="the fleet plan screen")
    screen = app.screen
    await wait_until(pilot, lambda: (screen.plan is not None and not screen.planning) or screen.plan_error,
                     timeout=60, what="the plan")
    assert not screen.plan_error, screen.plan_error
    await app.workers.wait_for_complete()
    await pilot.pause()
    return screen


def flat(app: Any) -> str:
    return " ".join(screen_text(app).split())


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_plan_all_shows_the_labs_optimum_from_the_apps_gateways(planner_lab: Lab, size: tuple[int, int]) -> None:
    app = make_app(planner_lab)
    try:
        async with app.run_test(size=size) as pilot:
            screen = await open_plan_all(pilot)
            plan = screen.plan
            assert plan.to_json() == expected_plan(planner_lab)
            assert {c.node: c.to_size.flavor for c in plan.nodes} == GROWN, plan.to_json()
            assert {u.pod for u in plan.unplaceable} == UNPLACEABLE, plan.to_json()
            placed = train_nodes(plan)
            assert set(placed) <= AVX512F_WORKERS and len(set(placed)) == len(placed) == 3, plan.placements
            reasons = {u.pod: u.reason for u in plan.unplaceable}
            assert "m1.xlarge" in reasons["default/solver-xl"] and "nodeSelector" in reasons["default/inference"]
            assert screen.table.keys == [c.node for c in plan.nodes]  # the fleet's order, every grown node a row
            for change in plan.nodes:
                screen.table.move_to(change.node)
                await pilot.pause()
                text = flat(app)
                assert f"{change.node}: {change.from_size.flavor}" in text and "→ m1.large" in text
                assert all(p in text for p in change.pods), (change, text)
            text = flat(app)
            for u in plan.unplaceable:
                assert f"{u.pod}: {' '.join(u.reason.split())}" in text, (u, text)
            assert "optimal" in text and "read-only" not in text
    finally:
        app.gateways.stop()


async def test_dropping_worker01_replans_its_train_pod_onto_worker02(planner_lab: Lab) -> None:
    """d on kube-worker01, then r: it is not grown (a row saying "dropped"), and kube-worker02 — the other AVX512F
    worker on cmp001, the same upsize — takes its train pod at the same cost (the PDB-blocked pod is a preference,
    never a cost)."""
    app = make_app(planner_lab)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_plan_all(pilot)
            first = screen.plan
            assert screen.table.move_to("kube-worker01")
            await pilot.press("d", "r")
            await wait_until(pilot, lambda: not screen.planning and "kube-worker01" in screen.planned.dropped,
                             timeout=60, what="the re-plan")
            plan = screen.plan
            assert {c.node: c.to_size.flavor for c in plan.nodes} == {
                "kube-worker02": "m1.large", "kube-worker03": "m1.large", "kube-worker04": "m1.large"}, plan.to_json()
            placed = train_nodes(plan)
            assert sorted(placed) == ["kube-worker02", "kube-worker03", "kube-worker04"], plan.placements
            assert plan.cost == first.cost
            assert screen.table.keys[-1] == "kube-worker01" and "dropped" in screen_text(app)
    finally:
        app.gateways.stop()


async def test_read_only_plans_and_offers_no_run(planner_lab: Lab) -> None:
    app = make_app(planner_lab, settings=lab_settings(planner_lab, read_only=True))
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_plan_all(pilot)
            assert screen.plan.nodes
            assert "read-only mode: this is the plan only" in screen_text(app)
            await pilot.press("a", "enter")
            await pilot.pause()
            assert app.screen is screen and not screen.preparing and not screen.run.began
    finally:
        app.gateways.stop()


async def test_a_node_another_run_takes_before_the_run_is_refused_as_headless_refuses_it(planner_lab: Lab) -> None:
    """Issue 20 point 9: another admin's run takes the first node while this one's confirmation is open. The fleet
    is refused before any change, exit 2 and kind "held" as `console plan --apply` and `console scale-up` say it
    (tests/integration/planner/test_fleet_held.py) — not "needs attention" (4). Nothing in the lab changes."""
    from console.tui.safety import ConfirmDanger

    holder = "ann@bastion-2/scale-up-kube-worker01-20261205T101500-beef"
    app = make_app(planner_lab)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_plan_all(pilot)
            first = screen.plan.nodes[0].node
            await pilot.press("a")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDanger), timeout=120, what="the confirm")
            hold_node(planner_lab, first, holder)
            try:
                await pilot.press("y")
                await wait_until(pilot, lambda: screen.run.result is not None or screen.run.error, timeout=120,
                                 what="the fleet's end")
            finally:
                release_node(planner_lab, first)
            await pilot.pause()
            result = screen.run.result
            assert result is not None, screen.run.error
            assert (result.status, result.exit_code, result.refusal) == ("refused", 2, "held"), result.message
            assert holder in result.message and f"nothing was changed on {first}" in result.message
            assert screen.run.states[first] == "pending"
            from console.tui.widgets.reflow_log import ReflowLog

            log = screen.query_one("#fleet-log", ReflowLog).entries
            assert any(f"{result.fleet_id}: refused (exit 2)" in line for line in log), log
            assert "fleet refused" in flat(app)
    finally:
        app.gateways.stop()
