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

    For an https server pass the CA to trust (the API server's, `Lab.kube_ca_pem`); without one the
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


def add_context(path: str | os.PathLike[str], context: str, user: str, user_entry: dict[str, object],
                cluster: str = "lab") -> None:
    """Add (or replace) a user and a context on `cluster` to a kubeconfig written by write_kubeconfig."""
    import yaml

    target = Path(path)
    doc = yaml.safe_load(target.read_text())
    doc["users"] = [u for u in doc["users"] if u["name"] != user] + [{"name": user, "user": user_entry}]
    doc["contexts"] = [c for c in doc["contexts"] if c["name"] != context] + [
        {"name": context, "context": {"cluster": cluster, "user": user, "namespace": "default"}}]
    target.write_text(yaml.safe_dump(doc, default_flow_style=False, sort_keys=False))  # keeps its 0600 mode
