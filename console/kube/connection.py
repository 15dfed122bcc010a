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


def _shape_errors() -> tuple[type[BaseException], ...]:
    """What the kubernetes client raises on a file that is not a kubeconfig: it indexes the YAML blindly (a list,
    a string or `contexts: 5` end in TypeError/AttributeError/KeyError), and garbage or non-UTF-8 bytes end in
    yaml's errors or UnicodeDecodeError (a ValueError)."""
    import yaml

    return (TypeError, AttributeError, KeyError, IndexError, ValueError, yaml.YAMLError)


def _not_a_kubeconfig(path: str, e: BaseException) -> KubeConfigError:
    why = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
    return KubeConfigError(f"{path} is not a kubeconfig ({why}); expected a Config with clusters, users and "
                           "contexts. Set KUBECONFIG or pass --kubeconfig.")


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
    except _shape_errors() as e:
        raise _not_a_kubeconfig(path, e) from e
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
    except OSError as e:
        raise KubeConfigError(f"cannot read kubeconfig {path}: {e.strerror or e}") from e
    except _shape_errors() as e:
        raise _not_a_kubeconfig(path, e) from e
    _, current = contexts(path)
    return client, KubeTarget(path, context or current, client.configuration.host)
