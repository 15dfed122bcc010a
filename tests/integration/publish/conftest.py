"""A default lab (NFD v0.19) per module, and a kubernetes ApiClient on it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from labstart import start_lab

from console.lab.world import Lab


@pytest.fixture(scope="module")
def default_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("default", tmp_path_factory.mktemp("lab-default-publish"))


@pytest.fixture(scope="module")
def kube(default_lab: Lab) -> Iterator[Any]:
    from kubernetes import config

    client = config.new_client_from_config(config_file=str(default_lab.state.kubeconfig))
    yield client
    client.close()
