"""Scale-up screen tests: one lab per scenario per module, a bare host App with the console's themes.

The screen builds its own Session from Settings pointing at the lab (kubeconfig, cloud "lab", the
libvirt URI); openstacksdk finds clouds.yaml through OS_CLIENT_CONFIG_FILE, set for the module.
XDG_STATE_HOME (journal, audit log) is a per-test tmp dir (tests/tui/conftest.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.app import App

from console.config import Settings
from console.lab import scenarios
from console.lab.world import Lab
from console.tui.themes import FALLBACK_COLORS, domain_defaults, load_themes


class Host(App[None]):
    """A bare app with the console's themes and settings that pushes one screen."""

    def __init__(self, screen: Any, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        self._screen = screen

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return domain_defaults(FALLBACK_COLORS)

    def on_mount(self) -> None:
        for theme in load_themes().themes.values():
            self.register_theme(theme)
        self.theme = "dark"
        self.push_screen(self._screen)


def _start(name: str, root: Path) -> Iterator[Lab]:
    lab = Lab(scenarios.get(name), root)
    old = os.environ.get("OS_CLIENT_CONFIG_FILE")
    try:
        lab.start(progress=lambda *_a: None)
        os.environ["OS_CLIENT_CONFIG_FILE"] = str(lab.state.clouds_yaml)
        yield lab
    finally:
        lab.stop()
        if old is None:
            os.environ.pop("OS_CLIENT_CONFIG_FILE", None)
        else:
            os.environ["OS_CLIENT_CONFIG_FILE"] = old


@pytest.fixture(scope="module")
def resize_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from _start("seed-resize", tmp_path_factory.mktemp("tui-scaleup-resize"))


@pytest.fixture(scope="module")
def live_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from _start("seed-live", tmp_path_factory.mktemp("tui-scaleup-live"))


def lab_settings(lab: Lab, **kw: Any) -> Settings:
    return Settings(kubeconfig=str(lab.state.kubeconfig), cloud="lab", libvirt_uris=(lab.libvirt_uri,), **kw)


@pytest.fixture
def settings_for() -> Callable[..., Settings]:
    return lab_settings


@pytest.fixture
def host() -> Callable[[Any, Settings], Host]:
    return Host


async def _until(pilot: Any, predicate: Callable[[], object], timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        await pilot.pause(0.05)


@pytest.fixture
def until() -> Callable[..., Any]:
    """`await until(pilot, predicate, timeout, what=...)`: poll the UI (never sleep blindly) with a deadline."""
    return _until
