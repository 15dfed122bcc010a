"""Shared fixtures: labs started through the same code path as `python -m console lab`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labstart import start_lab

from console.lab.world import Lab


@pytest.fixture(scope="module")
def seed_resize_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-resize", tmp_path_factory.mktemp("lab-seed-resize"))


@pytest.fixture(scope="module")
def seed_live_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("seed-live", tmp_path_factory.mktemp("lab-seed-live"))
