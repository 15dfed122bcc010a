"""The console's Kubernetes code against the lab: each module starts its own `lab` (a module-scoped fixture);
`kube` is a kubernetes ApiClient on that lab's kubeconfig (its current context, `lab`: the cluster admin)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def kube(lab: Any) -> Iterator[Any]:
    from kubernetes import config

    api_client = config.new_client_from_config(config_file=str(lab.state.kubeconfig))
    try:
        yield api_client
    finally:
        api_client.close()
