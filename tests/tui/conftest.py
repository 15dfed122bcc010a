"""TUI fixtures: one default lab per test module, apps built as `python -m console --lab` builds them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labstart import start_lab
from tuitools import isolated_xdg  # noqa: F401 (an autouse fixture)

from console.lab import scenarios
from console.lab.world import Lab


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
