"""Connecting to a cluster through a kubeconfig, as kubectl does."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class KubeConfigError(Exception):
    """The kubeconfig is missing or unusable; the message says what to do."""


@dataclass(frozen=True)
class KubeTarget:
    kubeconfig: str
    context: str
    server: str


def default_kubeconfig() -> str:
    first = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return first or str(Path.home() / ".kube" / "config")


def contexts(kubeconfig: str | None = None) -> tuple[list[str], str]:
    """Context names in a kubeconfig and the current one."""
    from kubernetes import config

    path = kubeconfig or default_kubeconfig()
    try:
        ctxs, current = config.list_kube_config_contexts(config_file=path)
    except (OSError, config.ConfigException) as e:
        raise KubeConfigError(f"cannot read kubeconfig {path}: {e}. Set KUBECONFIG or pass --kubeconfig.") from e
    return [c["name"] for c in ctxs], current["name"]


def connect(kubeconfig: str | None = None, context: str | None = None) -> tuple[Any, KubeTarget]:
    """An ApiClient for the context (default: current) and what it points at."""
    from kubernetes import config

    path = kubeconfig or default_kubeconfig()
    if not Path(path).exists():
        raise KubeConfigError(
            f"no kubeconfig at {path}. Set KUBECONFIG, pass --kubeconfig, or try the lab: python -m console --lab"
        )
    try:
        client = config.new_client_from_config(config_file=path, context=context)
    except config.ConfigException as e:
        raise KubeConfigError(f"kubeconfig {path}: {e}") from e
    _, current = contexts(path)
    return client, KubeTarget(path, context or current, client.configuration.host)
