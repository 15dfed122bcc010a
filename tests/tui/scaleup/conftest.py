"""Scale-up screen tests: one lab per scenario per module, a bare host App with the console's themes.

The screen's Session runs on the Host's gateways, built from Settings pointing at the lab (kubeconfig, cloud "lab", the
libvirt URI); openstacksdk finds clouds.yaml through OS_CLIENT_CONFIG_FILE, set for the module.
XDG_STATE_HOME (journal, audit log) is a per-test tmp dir (tests/tui/conftest.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from labstart import start_lab
from labtools import quick_scheduler_retries
from tuitools import Host

from console.config import Settings
from console.gateways import Gateways
from console.lab.world import Lab


@pytest.fixture(scope="module")
def resize_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Field report 2's offline lab; its scheduler retries every second (labtools.quick_scheduler_retries), so the
    Pending nginx a run makes fit binds right after the uncordon, not after a 10 s backoff."""
    for lab in start_lab("seed-resize", tmp_path_factory.mktemp("tui-scaleup-resize"), clouds_env=True):
        yield quick_scheduler_retries(lab)


@pytest.fixture(scope="module")
def live_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Field report 2's online lab, its scheduler retrying every second as resize_lab's."""
    for lab in start_lab("seed-live", tmp_path_factory.mktemp("tui-scaleup-live"), clouds_env=True):
        yield quick_scheduler_retries(lab)


def lab_settings(lab: Lab, **kw: Any) -> Settings:
    return Settings(kubeconfig=str(lab.state.kubeconfig), cloud="lab", libvirt_uris=(lab.libvirt_uri,), **kw)


@pytest.fixture
def settings_for() -> Callable[..., Settings]:
    return lab_settings


@pytest.fixture
def host() -> Iterator[Callable[[Any, Settings], Host]]:
    """A Host whose gateways are the settings' (console/gateways.py): the screen's Session runs on them."""
    made: list[Gateways] = []

    def build(screen: Any, settings: Settings) -> Host:
        made.append(Gateways.connect(settings))
        return Host(screen, settings, made[-1])

    yield build
    for gateways in made:
        gateways.stop()


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
