"""TUI fixtures: one default lab per test module, apps built as `python -m console --lab` builds them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.lab import scenarios
from console.lab.world import Lab


@pytest.fixture(autouse=True)
def _xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user config, themes or state leak in or out of a test."""
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    for var in [v for v in os.environ if v.startswith("CONSOLE_")]:
        monkeypatch.delenv(var)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    the_lab = Lab(scenarios.get("default"), tmp_path_factory.mktemp("tui-lab"))
    old = os.environ.get("OS_CLIENT_CONFIG_FILE")
    try:
        the_lab.start()
        os.environ["OS_CLIENT_CONFIG_FILE"] = str(the_lab.state.clouds_yaml)
        yield the_lab
    finally:
        the_lab.stop()
        if old is None:
            os.environ.pop("OS_CLIENT_CONFIG_FILE", None)
        else:
            os.environ["OS_CLIENT_CONFIG_FILE"] = old
