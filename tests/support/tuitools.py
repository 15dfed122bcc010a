"""Helpers for TUI tests: a bare host App with the console's themes, waiting for workers, answering dialogs."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from textual.app import App

from console.config import Settings
from console.gateways import Gateways
from console.tui.themes import FALLBACK_COLORS, domain_defaults, load_themes
from console.tui.widgets.diff_dialog import ConflictDialog


class Host(App[None]):
    """A bare app with the console's themes and settings that pushes one screen (the app helper wires the real one)."""

    def __init__(self, screen: Any, settings: Settings, gateways: Gateways | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.gateways = gateways  # what screens pushed without one use (ConsoleApp.gateways); None: no cluster
        self._screen = screen
        self.clock = time.time  # as ConsoleApp's (the screens read the time through the App)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return domain_defaults(FALLBACK_COLORS)

    def on_mount(self) -> None:
        for theme in load_themes().themes.values():
            self.register_theme(theme)
        self.theme = "dark"
        self.push_screen(self._screen)

    def request_quit(self) -> None:
        """As ConsoleApp.request_quit (`:q`, ctrl+c): an editor with unsaved edits asks first."""
        from console.tui.unsaved import before_navigation

        before_navigation(self, self.exit, "quit")


def console_app(settings: Settings, **kw: Any) -> Any:
    """A ConsoleApp on the gateways `settings` name (console/gateways.py), started, as cli_tui builds it."""
    from console.tui.app import ConsoleApp

    gateways = Gateways.connect(settings, guard=kw.pop("guard", None), vms=kw.pop("vms", None))
    gateways.start()
    return ConsoleApp(gateways, **kw)


@asynccontextmanager
async def running(lab: Any, size: tuple[int, int] = (80, 24), **kw: Any) -> AsyncIterator[Any]:
    """A pilot on the console opened on `lab` as `python -m console --lab` opens it, everything loaded."""
    from screenshots import loaded, make_app

    app = make_app(lab, **kw)
    try:
        async with app.run_test(size=size) as pilot:
            await loaded(pilot)
            yield pilot
    finally:
        app.gateways.stop()


async def settle(pilot: Any) -> None:
    """Wait until every worker of the app is done, then let the messages they posted be handled."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def confirm_into_conflict(pilot: Any) -> ConflictDialog:
    """Answer y to the open confirmation of a save/apply that meets a newer version: the conflict dialog shown."""
    await pilot.press("y")
    await settle(pilot)
    assert isinstance(pilot.app.screen, ConflictDialog)
    return pilot.app.screen


@pytest.fixture(autouse=True)
def isolated_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user config, themes or state leak in or out of a test (import it into a conftest or test module)."""
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    for var in [v for v in os.environ if v.startswith("CONSOLE_")]:
        monkeypatch.delenv(var)
