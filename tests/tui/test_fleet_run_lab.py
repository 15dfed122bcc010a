"""Plan all, run to completion on the lab's `planner` scenario: the console's confirmation (ConfirmDanger with the
fleet's preview: each node's scale-up plan, as `console plan --apply` prints it), then the fleet runbook
(console/runbook/fleet.py through ConsoleApp.prepare_fleet, on the App's gateways) with progress per node; mid-run
esc stays and ctrl+c asks (the scale-up screen's model). The end is checked on the real systems: each planned pod
Running on its planned node (the Job's pods: one on each node planned for the Job; the kubernetes client), each
grown node resized once (Nova's instance actions through openstacksdk, as
tests/integration/planner/test_fleet_apply.py reads them). One lab for the module.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labstart import start_lab
from screentext import screen_text

from console.lab.world import Lab
from screenshots import loaded, make_app, wait_until

pytest.importorskip("console.runbook.fleet")  # issue 13's fleet runbook (its own branch until merged)
pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def run_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("planner", tmp_path_factory.mktemp("tui-fleet-run"), clouds_env=True)


def pods_on_nodes(lab: Lab) -> dict[str, tuple[str, str]]:
    """ns/name → (node, phase) of every pod, read with the kubernetes client."""
    from kubernetes import client, config

    api = config.new_client_from_config(str(lab.state.kubeconfig))
    try:
        pods = client.CoreV1Api(api).list_pod_for_all_namespaces().items
    finally:
        api.close()
    return {f"{p.metadata.namespace}/{p.metadata.name}": (p.spec.node_name or "", p.status.phase) for p in pods}


def resizes(lab: Lab, nodes: list[str]) -> dict[str, int]:
    """Nova's resize instance actions per server (GET /servers/{id}/os-instance-actions), by node name."""
    import openstack

    conn = openstack.connect(cloud="lab")
    try:
        servers = {s.name: s for s in conn.compute.servers()}
        return {n: sum(a.action == "resize" for a in conn.compute.server_actions(servers[n])) for n in nodes}
    finally:
        conn.close()


async def test_plan_all_runs_to_completion_with_progress_per_node(run_lab: Lab) -> None:
    from console.tui.safety import ConfirmDanger
    from console.tui.screens.scaleup_quit import QuitDuringRun

    app = make_app(run_lab)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            await pilot.press("p")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "PendingScreen", what="the Pending screen")
            await pilot.press("P")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "FleetScreen", what="the fleet screen")
            screen = app.screen
            await wait_until(pilot, lambda: screen.plan is not None and not screen.planning, timeout=60,
                             what="the plan")
            plan = screen.plan
            order = [c.node for c in plan.nodes]
            assert len(order) >= 2, plan.to_json()
            await pilot.press("a")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDanger), timeout=120, what="the confirm")
            dialog = app.screen
            assert dialog.action_name == "run fleet plan" and all(n in dialog.target for n in order)
            assert "Fleet run of the plan" in dialog.preview and all(n in dialog.preview for n in order)
            await pilot.press("y")
            await wait_until(pilot, lambda: screen.run.states.get(order[0]) == "running", timeout=60,
                             what="the first node running")
            # mid-run: esc stays (and says why), ctrl+c asks, n keeps the run going
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is screen
            await pilot.press("ctrl+c")
            await wait_until(pilot, lambda: isinstance(app.screen, QuitDuringRun), what="the quit question")
            assert "A fleet run is in progress" in screen_text(app)
            await pilot.press("n")
            await wait_until(pilot, lambda: app.screen is screen, what="back on the run")
            await wait_until(pilot, lambda: screen.run.result is not None, timeout=600, what="the fleet's end")
            await pilot.pause()
            result = screen.run.result
            assert result.status == "done", (result.status, result.message)
            assert screen.run.states == {n: "done" for n in order}
            text = screen_text(app)
            assert "fleet done" in text and all(n in text for n in order)
            steps = screen.node_steps[order[-1]].steps
            assert steps and all(s.status in ("done", "skipped") for s in steps)
    finally:
        app.gateways.stop()
    # every placed pod Running on a planned node of its own; the Job's pods are interchangeable (the scheduler
    # binds whichever is next to the node that fits first): one per node the plan gives the Job
    pods = pods_on_nodes(run_lab)
    job = sorted(n for p, n in plan.placements.items() if p.startswith("default/train-"))
    assert sorted(pods[p][0] for p in plan.placements if p.startswith("default/train-")) == job
    for pod, node in plan.placements.items():
        assert pods[pod][1] == "Running" and (pod.startswith("default/train-") or pods[pod][0] == node), pod
    assert resizes(run_lab, order) == {n: 1 for n in order}
