"""Shared fixtures: labs started through the same code path as `python -m console lab`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from console.lab import scenarios
from console.lab.world import Lab


def _start(name: str, root: Path) -> Iterator[Lab]:
    lab = Lab(scenarios.get(name), root)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


@pytest.fixture(scope="module")
def seed_resize_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from _start("seed-resize", tmp_path_factory.mktemp("lab-seed-resize"))


@pytest.fixture(scope="module")
def seed_live_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from _start("seed-live", tmp_path_factory.mktemp("lab-seed-live"))
