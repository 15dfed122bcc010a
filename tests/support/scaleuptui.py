"""Driving the scale-up screen in Pilot tests: read its panels, wait for it to load, run with confirmation.

`until` is the `until` fixture of tests/tui/scaleup/conftest.py: `await until(pilot, predicate, timeout, what=...)`.
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from textual.widgets import OptionList, Static

from console.tui.safety import ConfirmDanger
from console.tui.screens.scaleup import ScaleUpScreen
from console.tui.widgets.runbook_pickers import TargetPicker


def text_of(screen: ScaleUpScreen, wid: str) -> str:
    """The plain text a Static shows (Rich tables and groups rendered wide, so nothing wraps)."""
    console = Console(width=200, record=True, color_system=None, file=io.StringIO())
    console.print(screen.query_one(wid, Static).content)
    return console.export_text()


def log_text(screen: ScaleUpScreen) -> str:
    """Every log entry (open or closed: a short terminal shows the log as its latest line)."""
    return "\n".join(screen.log_pane.entries)


async def open_screen(pilot: Any, until: Any) -> ScaleUpScreen:
    """The pushed ScaleUpScreen once its node and VM are loaded (fails with the plan error otherwise)."""
    screen = pilot.app.screen
    assert isinstance(screen, ScaleUpScreen)
    await until(pilot, lambda: screen.info is not None or screen.plan_error, 30, what="node and VM loaded")
    assert screen.info is not None, screen.plan_error
    return screen


async def pick_flavor(pilot: Any, until: Any, screen: ScaleUpScreen, flavor: str) -> None:
    """t, highlight `flavor` in the target picker, enter; wait for the plan (or the plan error)."""
    await pilot.press("t")
    await until(pilot, lambda: isinstance(pilot.app.screen, TargetPicker), 5, what="target picker")
    picker = pilot.app.screen
    olist = picker.query_one("#target-flavors", OptionList)
    ids = [olist.get_option_at_index(i).id for i in range(olist.option_count)]
    olist.highlighted = ids.index(flavor)
    await pilot.press("enter")
    await until(pilot, lambda: (screen.plan is not None and screen.target is not None
                                and screen.target.flavor == flavor) or bool(screen.plan_error), 30, what="plan")


async def run_confirmed(pilot: Any, until: Any, screen: ScaleUpScreen, *, timeout: float) -> ConfirmDanger:
    """Press r, confirm with y, and wait up to `timeout` s for the run to finish and the VM to be read back."""
    await pilot.press("r")
    await until(pilot, lambda: isinstance(pilot.app.screen, ConfirmDanger), 5, what="confirmation")
    confirm = pilot.app.screen
    await pilot.press("y")
    try:
        await until(pilot, lambda: screen.run.result is not None and screen.live is not None
                    and screen.live.vm_now is not None, timeout, what="run finished and verified")
    except AssertionError as e:
        seen = "\n".join(f"{ev.time} {ev.kind} {ev.step} {ev.message}" for ev in screen.run.events)
        raise AssertionError(f"{e}; engine events so far:\n{seen}") from None
    return confirm
