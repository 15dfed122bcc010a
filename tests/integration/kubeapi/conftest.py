"""Fixtures: a Store with a few realistic objects served by the lab API server on a background loop."""

from __future__ import annotations

import asyncio
import os
import secrets
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from console.lab import nfd_deploy
from console.lab.kubeapi import KubeAPI, start_kube_api
from console.lab.kubeconfig import write_kubeconfig
from console.lab.podlogs import PodLogs
from console.lab.store import Store
from console.nfd.versions import CURRENT

T = TypeVar("T")


def node(name: str, *, cpu: str = "4", memory: str = "16Gi", roles: tuple[str, ...] = (), ip: str = "10.0.0.1") -> dict:
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    labels.update({f"node-role.kubernetes.io/{r}": "" for r in roles})
    cond = {"lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    return {
        "metadata": {"name": name, "labels": labels, "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "50Gi"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "50Gi"},
            "conditions": [
                {**cond, "type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
                 "message": "kubelet has sufficient memory available"},
                {**cond, "type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure",
                 "message": "kubelet has no disk pressure"},
                {**cond, "type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID",
                 "message": "kubelet has sufficient PID available"},
                {**cond, "type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status"},
            ],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "nodeInfo": {
                "machineID": "0" * 32, "systemUUID": "0" * 32, "bootID": "0" * 32,
                "kernelVersion": "6.1.0-lab", "osImage": "Debian GNU/Linux 12 (bookworm)",
                "containerRuntimeVersion": "containerd://1.7.24", "kubeletVersion": "v1.32.0",
                "kubeProxyVersion": "v1.32.0", "operatingSystem": "linux", "architecture": "amd64",
            },
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }


def make_pod(name: str, *, namespace: str = "default", node_name: str | None = None, cpu: str = "500m",
        memory: str = "256Mi", phase: str | None = None, labels: dict | None = None) -> dict:
    running = node_name is not None
    phase = phase or ("Running" if running else "Pending")
    status: dict[str, Any] = {"phase": phase, "qosClass": "Burstable"}
    if running:
        status.update({
            "hostIP": "10.0.0.1", "podIP": "10.244.1.10", "startTime": "2026-01-01T00:00:00Z",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                           {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0, "image": "nginx:1.27",
                                   "imageID": "", "started": True,
                                   "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}],
        })
    else:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": "0/2 nodes are available: 2 Insufficient cpu.",
                                 "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": "nginx:1.27",
                        "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}}}],
        "restartPolicy": "Always", "schedulerName": "default-scheduler",
    }
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": name}},
            "spec": spec, "status": status}


def event(name: str, *, kind: str, obj_name: str, uid: str, reason: str, message: str, namespace: str = "default",
          obj_namespace: str = "", type_: str = "Normal") -> dict:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": kind, "name": obj_name, "uid": uid, "namespace": obj_namespace,
                           "apiVersion": "v1"},
        "reason": reason, "message": message, "type": type_, "count": 1,
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
        "source": {"component": "kubelet", "host": obj_name},
    }


def seed(store: Store, logs: PodLogs) -> None:
    for c in nfd_deploy.crd_names(CURRENT):  # NFD's CRDs: the API server serves its resources while they exist
        store.create("customresourcedefinitions.apiextensions.k8s.io", nfd_deploy.crd(*c))
    for ns in ("default", "kube-system", "nfd"):
        store.create("namespaces", {"metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
                                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    store.create("nodes", node("control-1", roles=("control-plane",), ip="10.0.0.10"))
    store.create("nodes", node("worker-1", ip="10.0.0.11"))
    store.create("nodes", node("worker-2", cpu="2", memory="8Gi", ip="10.0.0.12"))
    store.create("pods", make_pod("web-1", node_name="worker-1", labels={"app": "web", "tier": "front"}))
    store.create("pods", make_pod("web-2", node_name="worker-2", labels={"app": "web", "tier": "front"}))
    store.create("pods", make_pod("db-1", node_name="worker-1", cpu="1", memory="1Gi", labels={"app": "db"}))
    store.create("pods", make_pod("big-1", cpu="8", memory="32Gi", labels={"app": "big"}))
    store.create("pods", make_pod("coredns-1", namespace="kube-system", node_name="control-1",
                                  labels={"k8s-app": "dns"}))
    w1 = store.get("nodes", None, "worker-1")
    store.create("events", event("worker-1.start", kind="Node", obj_name="worker-1", uid="worker-1",
                                 reason="Starting", message="Starting kubelet."))
    store.create("events", event("worker-1.ready", kind="Node", obj_name="worker-1", uid=w1["metadata"]["uid"],
                                 reason="NodeReady", message="Node worker-1 status is now: NodeReady"))
    big = store.get("pods", "default", "big-1")
    store.create("events", event("big-1.failed", kind="Pod", obj_name="big-1", uid=big["metadata"]["uid"],
                                 obj_namespace="default", reason="FailedScheduling", type_="Warning",
                                 message="0/3 nodes are available: 3 Insufficient cpu."))
    store.create("configmaps", {"metadata": {"name": "nfd-hooks", "namespace": "nfd"},
                                "data": {"hook.sh": "#!/bin/sh\necho feature.example.com/gpu=true\n"}})
    store.create("nodefeaturerules.nfd.k8s-sigs.io", {
        "metadata": {"name": "gpu-rule"},
        "spec": {"rules": [{"name": "gpu", "labels": {"example.com/gpu": "true"},
                            "matchFeatures": [{"feature": "kernel.loadedmodule",
                                               "matchExpressions": {"nvidia": {"op": "Exists"}}}]}]},
    })
    store.create("nodefeatures.nfd.k8s-sigs.io", {
        "metadata": {"name": "worker-1", "namespace": "nfd",
                     "labels": {"nfd.node.kubernetes.io/node-name": "worker-1"}},
        "spec": {"features": {"flags": {}, "attributes": {}, "instances": {}}, "labels": {}},
    })
    logs.append("default", "web-1", "starting nginx\nlistening on :80\n")


class LoopThread:
    """An asyncio loop on a daemon thread, as the lab runs its servers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="kubeapi-test-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


@dataclass
class KubeLab:
    store: Store
    logs: PodLogs
    api: KubeAPI
    token: str
    kubeconfig: Path
    loop: LoopThread

    def env(self) -> dict[str, str]:
        home = self.kubeconfig.parent
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig), "HOME": str(home),
                "KUBECACHEDIR": str(home / "cache")}


@pytest.fixture
def kube_lab(tmp_path: Path) -> Iterator[KubeLab]:
    store, logs = Store(), PodLogs()
    seed(store, logs)
    loop = LoopThread()
    token = secrets.token_urlsafe(24)
    api = loop.run(start_kube_api(store, logs, token=token))
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, api.url, token, ca_pem=api.ca_pem)
    try:
        yield KubeLab(store, logs, api, token, kubeconfig, loop)
    finally:
        loop.run(api.stop())
        loop.close()


@pytest.fixture
def kube(kube_lab: KubeLab) -> Iterator[Any]:
    """A kubernetes.client.ApiClient configured from the lab kubeconfig."""
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=str(kube_lab.kubeconfig))
    try:
        yield api_client
    finally:
        api_client.close()
    del client


@pytest.fixture
def pod() -> Any:
    """The factory for realistic pod dicts: pod(name, namespace=, node_name=, cpu=, memory=, phase=, labels=)."""
    return make_pod


@dataclass
class RbacLab:
    """The seeded API server with RBAC users: contexts `lab` (system:masters), `lab-viewer`, `lab-operator`,
    `lab-nobody` (authenticated, no binding) in one kubeconfig, as the lab writes them."""

    store: Store
    api: KubeAPI
    kubeconfig: Path

    def env(self) -> dict[str, str]:
        home = self.kubeconfig.parent
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig), "HOME": str(home),
                "KUBECACHEDIR": str(home / "cache")}


@pytest.fixture(scope="module")
def rbac_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RbacLab]:
    from console.lab.kubeconfig import add_contexts
    from console.lab.rbac_policy import lab_users
    from console.lab.rbac_policy import seed as seed_rbac

    store, logs = Store(), PodLogs()
    seed(store, logs)
    loop = LoopThread()
    token = secrets.token_urlsafe(24)
    users = {"lab-viewer": ("viewer", secrets.token_urlsafe(24)),
             "lab-operator": ("operator", secrets.token_urlsafe(24))}
    nobody = secrets.token_urlsafe(24)
    api = loop.run(start_kube_api(store, logs, token=token, unbound={nobody: "lab-nobody"},
                                  users={t: u for u, t in users.values()}))
    seed_rbac(store, lab_users())
    kubeconfig = tmp_path_factory.mktemp("rbac") / "kubeconfig"
    write_kubeconfig(kubeconfig, api.url, token, ca_pem=api.ca_pem)
    add_contexts(kubeconfig, {**users, "lab-nobody": ("lab-nobody", nobody)})
    try:
        yield RbacLab(store, api, kubeconfig)
    finally:
        loop.run(api.stop())
        loop.close()
