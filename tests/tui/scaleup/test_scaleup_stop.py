"""Stop and quit on the scale-up screen says what the run did (issue 20, point 10).

`y` in the quit question asks the engine to stop before its next step; what the terminal shows once the app has
quit must be what the engine then did. It said `stopped before its next step; resume it with R` for a run that
had finished and for one whose rollback had run — a race in the issue's tries (ctrl+c within a second of `r`,
`y` 2–4 s later), made deterministic here by holding the run in a step until the answer is in:

- done: the answer arrives while verify-pods waits for nginx, which cannot bind while the lab's kube-scheduler is
  away (stopped before the run, started again once the stop is requested); the run's last step then succeeds and
  no step is left to stop before;
- failed: the answer arrives while wait-verify-resize waits on a resize Nova never finishes (the lab's `stuck`
  fault, docs/CONTRIBUTING.md "Faults for tests"); a cloud admin then puts the server in ERROR
  (os-resetState through openstacksdk, `openstack server set --state error`), and the run fails and rolls back.

Both runs end with their node uncordoned; the second shows the verdict's line about a node left cordoned
too (issue 20, point 2): kube-worker02 is cordoned by the admin before its run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from labstart import start_lab
from labtools import lab_env, quick_scheduler_retries, run, scheduler_away, scheduler_back
from scaleuptui import open_screen, pick_flavor
from tuitools import console_app

from console.lab.world import Lab
from console.tui.safety import ConfirmDanger
from console.tui.screens.scaleup import ScaleUpScreen
from console.tui.screens.scaleup_quit import QuitDuringRun

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def stop_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    for lab in start_lab("seed-resize", tmp_path_factory.mktemp("tui-scaleup-stop"), clouds_env=True):
        yield quick_scheduler_retries(lab)


def server_id(lab: Lab, node: str) -> str:
    return next(vm.server_id for vm in lab.vms if vm.node_name == node)


def reset_state_to_error(sid: str) -> None:
    """What a cloud admin does to a server stuck in a task: os-resetState (openstacksdk, cloud `lab`: the admin)."""
    import openstack

    conn = openstack.connect(cloud="lab")
    try:
        conn.compute.reset_server_state(sid, "error")
    finally:
        conn.close()


async def run_then_stop_mid_step(pilot: Any, until: Any, node: str, step: str) -> ScaleUpScreen:
    """`:scale-up NODE`, t m1.large, r, y; once `step` runs: ctrl+c, y. Returns the screen, its stop requested
    while the run is still in progress."""
    app = pilot.app
    await until(pilot, lambda: node in app.view.snapshot.nodes, 30, what="the nodes")
    await pilot.press("colon", *f"scale-up {node}", "enter")
    await until(pilot, lambda: isinstance(app.screen, ScaleUpScreen), 10, what="the scale-up screen")
    screen = await open_screen(pilot, until)
    await pick_flavor(pilot, until, screen, "m1.large")
    assert screen.plan is not None, screen.plan_error
    await pilot.press("r")
    await until(pilot, lambda: isinstance(app.screen, ConfirmDanger), 5, what="the run confirm")
    await pilot.press("y")
    await until(pilot, lambda: screen.steps.status_of(step) == "running", 120, what=f"the {step} step")
    await pilot.press("ctrl+c")
    await until(pilot, lambda: isinstance(app.screen, QuitDuringRun), 5, what="the quit question")
    await pilot.press("y")
    await until(pilot, lambda: screen.quit_when_stopped, 5, what="the stop request")
    assert screen.run.running and screen.steps.status_of(step) == "running"
    return screen


def shown_after_quit(capsys: pytest.CaptureFixture[str]) -> str:
    """What the terminal shows once the app has quit (App.exit's message, printed on stderr), unwrapped."""
    return " ".join(capsys.readouterr().err.split())


async def test_a_run_that_finished_after_the_stop_request_says_it_finished(stop_lab, settings_for, until, capsys):
    node = "kube-worker01"
    scheduler_away(stop_lab)  # kube-scheduler away: nginx stays Pending, verify-pods waits for it
    try:
        app = console_app(settings_for(stop_lab))
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await run_then_stop_mid_step(pilot, until, node, "verify-pods")
            scheduler_back(stop_lab)  # nginx binds on the uncordoned node: the last step succeeds
            await until(pilot, lambda: not app.is_running, 90, what="the run to end and the app to quit")
    finally:
        scheduler_back(stop_lab)  # no-op when running
    result = screen.run.result
    assert result is not None and result.status == "done", result
    said = shown_after_quit(capsys)
    assert "stopped before its next step" not in said and "resume" not in said, said
    assert said == f"scale-up of {node} finished before it could be stopped: done (run {result.run_id})"


async def test_a_run_that_failed_after_the_stop_request_says_it_failed_and_was_rolled_back(
        stop_lab, settings_for, until, capsys):
    node = "kube-worker02"
    run(["kubectl", "cordon", node], lab_env(stop_lab))  # the admin's cordon: the run must leave it, and say so
    sid = server_id(stop_lab, node)
    stop_lab.nova.inject_fault(sid, "stuck")  # the resize stays in RESIZE: wait-verify-resize waits
    app = console_app(settings_for(stop_lab))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await run_then_stop_mid_step(pilot, until, node, "wait-verify-resize")
        reset_state_to_error(sid)
        await until(pilot, lambda: not app.is_running, 180, what="the rollback to end and the app to quit")
    result = screen.run.result
    assert result is not None and result.status == "failed", result
    assert "Rolled back" in result.message
    assert screen.verdict().endswith(f"{node} is left cordoned, as it was before the run: `kubectl uncordon {node}` "
                                     "lets pods schedule on it"), screen.verdict()
    said = shown_after_quit(capsys)
    assert "stopped before its next step" not in said and "resume" not in said, said
    assert said.startswith(f"scale-up of {node} failed before it could be stopped, and was rolled back: "
                           f"the resize failed: server "), said
    assert said.endswith(f"(run {result.run_id}). {node} is left cordoned, as it was before the run: "
                         f"`kubectl uncordon {node}` lets pods schedule on it"), said
    server = stop_lab.nova.server(sid)
    assert (server.status, server.flavor.name) == ("ACTIVE", "m1.medium")
    assert stop_lab.store.get("nodes", None, node)["spec"].get("unschedulable") is True
