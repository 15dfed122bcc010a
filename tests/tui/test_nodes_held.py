"""The nodes screen marks a node held by an unfinished run and opens that run's resume (Pilot, 80×24).

The run is real: `console scale-up kube-worker02 --flavor m1.large --yes` (headless, a subprocess) is
sent SIGINT the moment its journal records the cordon (tests/support/journalsignal.py), so the node
stays cordoned by the console with the journal "interrupted". The screen reads the journals in a worker.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import journalsignal
import pytest
from labstart import start_lab
from labtools import lab_env

from console.lab.world import Lab
from console.tui.screens.scaleup import ScaleUpScreen
from screenshots import loaded, make_app, wait_until

NODE = "kube-worker02"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-resize", tmp_path_factory.mktemp("tui-held"), clouds_env=True)


def _interrupted_scale_up(lab: Lab) -> str:
    """The run id of a scale-up of NODE stopped by SIGINT right after its cordon."""
    env = lab_env(lab) | {"XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]} | journalsignal.env("cordon", "SIGINT")
    proc = subprocess.run(journalsignal.command("scale-up", NODE, "--flavor", "m1.large", "--yes"), env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 4, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "interrupted before drain; the node is cordoned by the console" in line, line
    return line.rsplit("--resume ", 1)[1]


def _row_name(app: Any, node: str) -> str:
    table = app.screen.query_one("#nodes-table")
    cell = table.cells[table.keys.index(node)][0]
    return cell.plain if hasattr(cell, "plain") else str(cell)


async def test_held_node_is_marked_and_R_opens_its_resume(lab: Lab) -> None:
    run_id = _interrupted_scale_up(lab)
    app = make_app(lab)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            legend = app.screen.query_one("#nodes-held")
            await wait_until(pilot, lambda: legend.display, what="the held-runs legend")
            text = str(legend.render())
            assert "held by an unfinished run (R resumes)" in text
            assert f"{NODE} scale-up interrupted: cordoned by the console" in text
            assert _row_name(app, NODE) == f"{NODE}*"
            assert _row_name(app, "kube-worker01") == "kube-worker01"

            app.screen.query_one("#nodes-table").move_to("kube-worker01")
            await pilot.press("R")  # not held: says so, opens nothing
            await pilot.pause()
            assert type(app.screen).__name__ == "NodesScreen"
            assert any(f"nodes held by one: {NODE}" in n.message for n in app._notifications)

            app.screen.query_one("#nodes-table").move_to(NODE)
            await pilot.press("R")
            await wait_until(pilot, lambda: isinstance(app.screen, ScaleUpScreen), what="the scale-up screen")
            screen = app.screen
            await wait_until(pilot, lambda: screen.plan is not None or screen.plan_error, 60, what="the plan")
            assert screen.node == NODE and screen.journal is not None, screen.plan_error
            assert screen.journal.run_id == run_id  # the interrupted run, offered for resuming
    finally:
        app.kube.stop()


async def test_an_unusable_journal_marks_its_node_and_the_scale_up_screen_names_it(lab: Lab) -> None:
    """Issue 9: a bad journal was skipped silently (or crashed the reader). The nodes screen marks its node
    "unusable" with what is wrong and the --discard command; R opens the scale-up screen, which refuses naming
    the file; the file is left as it was."""
    from pathlib import Path

    node = "kube-worker01"
    runbooks = Path(os.environ["XDG_STATE_HOME"]) / "console" / "runbooks"
    runbooks.mkdir(parents=True, exist_ok=True)
    bad = runbooks / f"scale-up-{node}-20261201T000000-beef.json"
    bad.write_text('{"version": 2, "run_id": "scale-up-kube-worker01-20261201T000000-beef", "steps": [')
    app = make_app(lab)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            legend = app.screen.query_one("#nodes-held")
            await wait_until(pilot, lambda: legend.display, what="the held-runs legend")
            text = str(legend.render())
            assert f"{node} scale-up unusable: journal {bad.name} is not valid JSON" in text, text
            assert f"--discard {bad.stem}" in text
            assert _row_name(app, node) == f"{node}*"
            app.screen.query_one("#nodes-table").move_to(node)
            await pilot.press("R")
            await wait_until(pilot, lambda: isinstance(app.screen, ScaleUpScreen), what="the scale-up screen")
            screen = app.screen
            await wait_until(pilot, lambda: screen.plan_error, 60, what="the refusal")
            assert f"runbook journal {bad} is not valid JSON" in screen.plan_error and screen.plan is None
            assert f"--discard {bad.stem}" in screen.plan_error
    finally:
        app.kube.stop()
    assert bad.read_text().endswith('"steps": [')
