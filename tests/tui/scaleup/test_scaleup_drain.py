"""The scale-up screen on `seed-drain`: a plan the drain blocks shows why and offers kubectl's overrides.

kube-worker02 holds a bare pod (debug-shell: kubectl drain needs --force) and a StatefulSet pod with
emptyDir data (db-0: needs --delete-emptydir-data), as kubectl's pkg/drain/filters.go decides.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from labstart import start_lab
from scaleuptui import open_screen, text_of
from screentext import screen_text
from textual.widgets import OptionList
from tuitools import console_app

from console.lab.world import Lab
from console.tui.safety import ConfirmDanger
from console.tui.screens.scaleup import ScaleUpScreen
from console.tui.screens.scaleup_quit import QuitDuringRun
from console.tui.widgets.runbook_pickers import TargetPicker

pytestmark = pytest.mark.lab

NODE = "kube-worker02"


@pytest.fixture(scope="module")
def drain_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-drain", tmp_path_factory.mktemp("tui-scaleup-drain"), clouds_env=True)


async def _pick(pilot: Any, until: Any, flavor: str) -> None:
    await pilot.press("t")
    await until(pilot, lambda: isinstance(pilot.app.screen, TargetPicker), 5, what="target picker")
    olist = pilot.app.screen.query_one("#target-flavors", OptionList)
    ids = [olist.get_option_at_index(i).id for i in range(olist.option_count)]
    olist.highlighted = ids.index(flavor)
    await pilot.press("enter")


async def test_blocked_drain_is_shown_and_overridden_after_a_confirm(drain_lab, settings_for, host, until):
    app = host(ScaleUpScreen(NODE), settings_for(drain_lab))
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await open_screen(pilot, until)
        await _pick(pilot, until, "m1.large")
        await until(pilot, lambda: screen.drain_blocked is not None, 30, what="the blocked plan")
        plan_text = text_of(screen, "#su-plan")
        assert "plan refused" in plan_text and "default/debug-shell" in plan_text and "--force" in plan_text
        assert "f overrides" in plan_text
        await pilot.press("r")  # nothing to run while blocked
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmDanger)
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDanger), 5, what="the override confirm")
        confirm = app.screen
        assert confirm.action_name == "drain with --delete-emptydir-data --force" and confirm.target == NODE
        assert "deleted for good (no controller recreates them): default/debug-shell" in confirm.preview
        assert "emptyDir data deleted: default/db-0" in confirm.preview
        await pilot.press("y")
        await until(pilot, lambda: screen.plan is not None, 30, what="the re-plan with the overrides")
        assert screen.plan.request.force and screen.plan.request.delete_emptydir_data
        shown = text_of(screen, "#su-plan")
        assert "deleted for good (no controller, --force): default/debug-shell" in shown
        assert "default/db-0" in shown
    # only planned: nothing was cordoned or evicted
    assert not drain_lab.store.get("nodes", None, NODE)["spec"].get("unschedulable")
    assert drain_lab.store.get("pods", "default", "debug-shell")


async def test_leaving_or_quitting_mid_run_is_refused_or_asked_and_a_stop_waits_for_the_step(
        drain_lab, settings_for, until):
    """Mid-run (the drain waits on db-pdb, which allows no disruption: a run that stays in progress), `q`, esc,
    `:nodes` and `:ctx` refuse the same way every time; ctrl+c asks, n keeps the run going, y stops it before its
    next step (the engine's stop flag, as Ctrl-C on `console scale-up`: "interrupted", nothing rolled back) and
    then quits.
    Run last in this module: it leaves the node cordoned, as an interrupted run does."""
    app = console_app(settings_for(drain_lab))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: NODE in app.view.snapshot.nodes, 30, what="the nodes")
        await pilot.press("colon", *f"scale-up {NODE}", "enter")
        await until(pilot, lambda: isinstance(app.screen, ScaleUpScreen), 10, what="the scale-up screen")
        screen = await open_screen(pilot, until)
        await _pick(pilot, until, "m1.large")
        await until(pilot, lambda: screen.drain_blocked is not None, 30, what="the blocked plan")
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDanger), 5, what="the override confirm")
        await pilot.press("y")
        await until(pilot, lambda: screen.plan is not None and screen.plan.request.force, 30, what="the re-plan")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDanger), 5, what="the run confirm")
        await pilot.press("y")
        await until(pilot, lambda: screen.steps.status_of("drain") == "running", 60, what="the drain step")

        refusals = []
        for keys in (("q",), ("q",), ("escape",), ("colon", *"nodes", "enter"), ("colon", *"ctx other", "enter")):
            before = {n.identity for n in app._notifications}
            await pilot.press(*keys)
            await pilot.pause()
            assert app.screen is screen, keys
            # read at once: a toast expires after its timeout
            refusals += [n.message for n in app._notifications if n.identity not in before]
        assert len(refusals) == 5 and len(set(refusals)) == 1, refusals
        assert f"the run on {NODE} is in progress" in refusals[0]

        await pilot.press("ctrl+c")
        await until(pilot, lambda: isinstance(app.screen, QuitDuringRun), 5, what="the quit question")
        assert f"A run is in progress on {NODE}: quit anyway?" in screen_text(app)
        assert "resumed with R" in app.screen.question
        await pilot.press("n")
        await until(pilot, lambda: app.screen is screen, 5, what="back on the run")
        assert screen.run.running and app.is_running

        await pilot.press("ctrl+c")
        await until(pilot, lambda: isinstance(app.screen, QuitDuringRun), 5, what="the quit question")
        await pilot.press("y")
        await until(pilot, lambda: not app.is_running, 60, what="the run to stop and the app to quit")
    result = screen.run.result
    assert result is not None and result.status == "interrupted", result
    assert "during drain" in result.message and "nothing was rolled back" in result.message
    assert drain_lab.store.get("nodes", None, NODE)["spec"].get("unschedulable") is True  # nothing undone
