"""One default lab per test module, and a kubernetes ApiClient for it (the console's own connect())."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from console.kube.connection import connect
from console.lab import scenarios
from console.lab.world import Lab


@pytest.fixture(scope="module")
def default_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab = Lab(scenarios.get("default"), tmp_path_factory.mktemp("lab-default-nfdstore"), wait_usage=False)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


@pytest.fixture(scope="module")
def api_client(default_lab: Lab) -> Iterator[Any]:
    client, _target = connect(str(default_lab.state.kubeconfig))
    try:
        yield client
    finally:
        client.close()
