"""`P` on the Pending screen on the lab's `planner` scenario: the plan comes from the App's gateways
(Gateways.plan_input: the kubernetes client, openstacksdk against the lab's Kubernetes and Nova) and
console.planner.solve, and the screen shows it whole at 80×24 and 120×40. One lab for the module.

The plan the screen shows must be the one the test computes itself from the same cluster (read_plan_input with the
real clients, then solve). The scenario's facts that hold whatever the cloud's limits (console/lab/scenarios.py
`_planner` docstring): the three `train` pods (AVX512F nodeSelector, dedicated=hpc toleration, hostname
anti-affinity) each on its own AVX512F worker (kube-worker01..04); solver-xl (more than m1.xlarge) and inference
(no node matches its nodeSelector) unplaceable, with those reasons.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from labstart import start_lab
from screentext import screen_text

from console.config import Settings
from console.lab.world import Lab
from screenshots import loaded, make_app, wait_until

pytestmark = pytest.mark.lab

AVX512F_WORKERS = {"kube-worker01", "kube-worker02", "kube-worker03", "kube-worker04"}


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


async def test_dropping_a_train_node_replans_the_pod_onto_another_avx512f_worker(planner_lab: Lab) -> None:
    """d on a node that takes a train pod, then r: that node is not grown (a row saying "dropped"), and the three
    train pods still land on three AVX512F workers (there are four), the plan costing no less."""
    app = make_app(planner_lab)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_plan_all(pilot)
            first = screen.plan
            node = train_nodes(first)[0]
            assert screen.table.move_to(node)
            await pilot.press("d", "r")
            await wait_until(pilot, lambda: not screen.planning and node in screen.planned.dropped,
                             timeout=60, what="the re-plan")
            plan = screen.plan
            assert node not in {c.node for c in plan.nodes} and node not in plan.placements.values()
            placed = train_nodes(plan)
            assert set(placed) <= AVX512F_WORKERS - {node} and len(set(placed)) == len(placed) == 3, plan.placements
            assert plan.cost >= first.cost
            assert node in screen.table.keys and "dropped" in screen_text(app)
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
