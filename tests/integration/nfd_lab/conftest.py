"""The `default` lab for the NFD tests, started once per module, plus Kubernetes API helpers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from console.lab import scenarios
from console.lab.world import Lab


@pytest.fixture(scope="module")
def default_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab = Lab(scenarios.get("default"), Path(tmp_path_factory.mktemp("lab-default-nfd")), wait_usage=False)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


@pytest.fixture(scope="module")
def kube(default_lab: Lab):
    """A kubernetes ApiClient on the default lab (the same kubeconfig the console uses)."""
    from kubernetes import config

    client = config.new_client_from_config(config_file=str(default_lab.state.kubeconfig))
    yield client
    client.close()
