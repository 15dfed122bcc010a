"""A seed-live lab per module for the node-access tests (SSH, guest agent, KEP-3953)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from console.lab import scenarios
from console.lab.world import Lab


@pytest.fixture(scope="module")
def live_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab = Lab(scenarios.get("seed-live"), tmp_path_factory.mktemp("nodeaccess-live"), wait_usage=False)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()
