"""TUI fixtures: one default lab per test module, apps built as `python -m console --lab` builds them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from labstart import start_lab

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
    """The default lab, with OS_CLIENT_CONFIG_FILE naming its clouds.yaml."""
    yield from start_lab("default", tmp_path_factory.mktemp("tui-lab"), clouds_env=True)


@pytest.fixture(scope="module")
def default_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The default lab, the process environment left alone (the NFD editor tests)."""
    yield from start_lab("default", tmp_path_factory.mktemp("lab-default"))


@pytest.fixture(scope="module")
def kube_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The default lab on libvirt's test driver (no QEMU guests): for tests that need only Kubernetes."""
    lab = Lab(scenarios.get("default"), tmp_path_factory.mktemp("kube-lab"), libvirt="test")
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()
