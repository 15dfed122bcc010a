"""An nfd-worker DaemonSet whose features.d and source.d are ConfigMap volumes, made through the real client.

Shaped as NFD's deployment/base/worker-daemonset with the NFD article's alternative to its hostPath volumes:
`features-d: configMap: {name: nfd-features}` and `source-d: configMap: {name: nfd-hooks}` mounted at
/etc/kubernetes/node-feature-discovery/{features.d,source.d}. `deployment()` is the NfdDeployment the discovery
would make of it (until the discovery merges, tests build it by hand).
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client

from console.nfd import versions as V
from console.nfd.deployment import Mount, NfdDeployment, Workload

FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d"
SOURCE_D = "/etc/kubernetes/node-feature-discovery/source.d"
IMAGE = "registry.k8s.io/nfd/node-feature-discovery:v0.16.4"


def worker_daemonset(namespace: str, hooks_mode: int | None = None) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "nfd-worker"}
    hooks: dict[str, Any] = {"name": "nfd-hooks", **({"defaultMode": hooks_mode} if hooks_mode is not None else {})}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "nfd-worker", "namespace": namespace},
            "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
                "containers": [{"name": "nfd-worker", "image": IMAGE, "command": ["nfd-worker"],
                                "volumeMounts": [{"name": "features-d", "mountPath": FEATURES_D, "readOnly": True},
                                                 {"name": "source-d", "mountPath": SOURCE_D, "readOnly": True}]}],
                "volumes": [{"name": "features-d", "configMap": {"name": "nfd-features"}},
                            {"name": "source-d", "configMap": hooks}]}}}}


def create_worker(api_client: Any, namespace: str, features: dict[str, str], hooks_mode: int | None = None) -> None:
    """The namespace, the features ConfigMap and the DaemonSet (its pods follow from the lab's controller)."""
    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    core.create_namespace({"metadata": {"name": namespace}})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "nfd-features"}, "data": features})
    # _preload_content=False: the response's empty status does not fit the client's typed model
    apps.create_namespaced_daemon_set(namespace, worker_daemonset(namespace, hooks_mode), _preload_content=False)


def deployment(namespace: str, *, version: str = "v0.16.4", hooks_mode: int | None = None,
               **feature_mount: Any) -> NfdDeployment:
    worker = Workload("DaemonSet", namespace, "nfd-worker", "nfd-worker", IMAGE, ("nfd-worker",), {})
    mounts = {"feature": Mount("feature", "configMap", FEATURES_D, volume="features-d",
                               config_map=feature_mount.pop("config_map", "nfd-features"), **feature_mount),
              "hook": Mount("hook", "configMap", SOURCE_D, volume="source-d", config_map="nfd-hooks",
                            default_mode=hooks_mode)}
    return NfdDeployment(namespace, V.parse_version(version), f"image {IMAGE}", None, worker, True, mounts)


def scheduled(api_client: Any, namespace: str) -> list[str]:
    """The nodes the DaemonSet's pods are on, once it has a pod on every node it should run on (its status's
    desiredNumberScheduled; a real DaemonSet controller creates them in growing batches); [] until then."""
    ds = json.loads(client.AppsV1Api(api_client).read_namespaced_daemon_set(
        "nfd-worker", namespace, _preload_content=False).data)
    status = ds.get("status") or {}
    if status.get("observedGeneration", 0) < ds["metadata"].get("generation", 1):
        return []  # the controller has not looked at it yet: its counts are the zeros of a new object
    pods = client.CoreV1Api(api_client).list_namespaced_pod(
        namespace, label_selector="app.kubernetes.io/name=nfd-worker").items
    nodes = sorted(p.spec.node_name for p in pods if p.spec.node_name)
    return nodes if len(nodes) >= status.get("desiredNumberScheduled", 0) else []
