"""Kubeconfig files pointing kubectl and the kubernetes client at the lab."""

from __future__ import annotations

import os
from pathlib import Path


def write_kubeconfig(
    path: str | os.PathLike[str],
    server_url: str,
    token: str,
    context: str = "lab",
    cluster: str = "lab",
    user: str = "lab-admin",
    *,
    ca_pem: bytes | None = None,
) -> None:
    """Write a one-context kubeconfig with a bearer token, readable by the owner only (0600).

    For an https server pass the CA to trust (`KubeAPI.ca_pem`); without one the
    kubeconfig skips TLS verification.
    """
    import base64

    import yaml

    cluster_entry: dict[str, object] = {"server": server_url}
    if ca_pem:
        cluster_entry["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    elif server_url.startswith("https://"):
        cluster_entry["insecure-skip-tls-verify"] = True

    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": cluster_entry}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": user, "namespace": "default"}}],
        "current-context": context,
        "preferences": {},
    }
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(doc, fh, default_flow_style=False, sort_keys=False)
    os.chmod(target, 0o600)  # an existing file keeps its old mode through O_CREAT


def add_contexts(path: str | os.PathLike[str], users: dict[str, tuple[str, str]], cluster: str = "lab") -> None:
    """Add a context per {context: (user, token)} to the kubeconfig at `path`, on its cluster, next to the others."""
    import yaml

    target = Path(path)
    doc = yaml.safe_load(target.read_text())
    for context, (user, token) in users.items():
        doc["users"].append({"name": user, "user": {"token": token}})
        doc["contexts"].append({"name": context, "context": {"cluster": cluster, "user": user,
                                                             "namespace": "default"}})
    fd = os.open(target, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(doc, fh, default_flow_style=False, sort_keys=False)
