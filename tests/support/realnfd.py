"""Upstream NFD outside a pod on the upstream control plane, for the tests that run it (issue 22).

Run as its manifests run it: `-kubeconfig`, the node in NODE_NAME, the namespace in KUBERNETES_NAMESPACE (no
service-account file), its own HTTP port (`-port`, as its pods each have their own network namespace).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from console.lab.controlplane import ControlPlane, free_port
from console.lab.upstream.build import NFD_MODULE, Program, module_dir


def crds(program: Program) -> Path:
    """The release's own CRDs (deployment/base/nfd-crds/nfd-api-crds.yaml, in Go's module cache)."""
    return module_dir(program, NFD_MODULE) / "deployment" / "base" / "nfd-crds" / "nfd-api-crds.yaml"


def node_object(name: str) -> dict[str, Any]:
    """A Node as a kubelet registers it, with labels and annotations: nfd-master's JSON patch adds keys under both
    maps (a Node without them is answered 422)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
            "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
        },
    }


def send(kubectl: Any, verb: str, tmp: Path, obj: dict[str, Any]) -> None:
    """`kubectl create|apply -f` of `obj` (the package's kubectl takes no stdin)."""
    path = tmp / f"{obj['kind']}-{obj['metadata']['name']}.json"
    path.write_text(json.dumps(obj))
    kubectl(verb, "-f", str(path))


def start_master(cp: ControlPlane, binary: Path, node: str, namespace: str, log: Path) -> subprocess.Popen[bytes]:
    """nfd-master for `node` (which must exist: it patches that Node at start and exits if it cannot)."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(binary), f"-kubeconfig={cp.root / 'admin.kubeconfig'}", f"-port={free_port()}"],
            env={**os.environ, "NODE_NAME": node, "KUBERNETES_NAMESPACE": namespace},
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def feature_labels(kubectl: Any, node: str, prefix: str = "feature.node.kubernetes.io/") -> dict[str, str]:
    """The node's labels under `prefix`, the prefix cut off."""
    labels = json.loads(kubectl("get", "node", node, "-o", "json").stdout)["metadata"].get("labels", {})
    return {k.removeprefix(prefix): v for k, v in labels.items() if k.startswith(prefix)}
