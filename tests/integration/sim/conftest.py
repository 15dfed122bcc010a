"""Fixtures for the cluster simulators: a real Store, FakeGuests, one kubelet fleet.

Tests use the fixtures (`make_cluster`, `fake_guest`, `wait_for`); under
--import-mode=importlib test modules cannot import this file.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from console.lab.guestroot import GuestRoot
from console.lab.kubelet import Fleet, Kubelet
from console.lab.nodeexec import NodeExec
from console.lab.podlogs import PodLogs
from console.lab.scheduler import Scheduler
from console.lab.store import Store

MASTER_TAINT = {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}


class FakeGuest:
    """The Guest protocol in memory: hot-added vCPUs arrive offline, a boot onlines all."""

    def __init__(self, vcpus: int, mem_total_kib: int, *, running: bool = True) -> None:
        self.uuid = str(uuid.uuid4())
        self._lock = threading.Lock()
        self._running = running
        self._boot_id = str(uuid.uuid4())
        self._present = vcpus
        self._online = frozenset(range(vcpus))
        self._mem = mem_total_kib
        self._subs: list[Callable[[str], None]] = []

    @property
    def running(self) -> bool:
        return self._running

    @property
    def boot_id(self) -> str:
        return self._boot_id

    @property
    def present_vcpus(self) -> int:
        return self._present

    @property
    def online_cpus(self) -> frozenset[int]:
        return self._online

    @property
    def mem_total_kib(self) -> int:
        return self._mem

    def set_cpu_online(self, cpu: int, online: bool) -> None:
        with self._lock:
            if not 0 <= cpu < self._present:
                raise ValueError(f"cpu{cpu} is not present")
            self._online = self._online | {cpu} if online else self._online - {cpu}
        self._emit("cpu-online")

    def subscribe(self, callback: Callable[[str], None]) -> Callable[[], None]:
        self._subs.append(callback)
        return lambda: self._subs.remove(callback) if callback in self._subs else None

    def _emit(self, kind: str) -> None:
        for cb in list(self._subs):
            cb(kind)

    # test controls: what the hypervisor does to the guest
    def shutdown(self) -> None:
        self._running = False
        self._emit("shutdown")

    def boot(self, vcpus: int | None = None, mem_total_kib: int | None = None) -> None:
        if vcpus is not None:
            self._present = vcpus
        if mem_total_kib is not None:
            self._mem = mem_total_kib
        self._online = frozenset(range(self._present))
        self._boot_id = str(uuid.uuid4())
        self._running = True
        self._emit("boot")

    def hotplug_vcpus(self, total: int) -> None:
        self._present = total
        self._emit("vcpus")

    def set_memory(self, mem_total_kib: int) -> None:
        self._mem = mem_total_kib
        self._emit("memory")


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


class Cluster:
    """Three nodes as in field report 2, with kubelets, a scheduler and node exec on one store."""

    def __init__(self, worker_vcpus: int, worker_mem_kib: int, **kubelet_opts: Any) -> None:
        self.store = Store()
        self.store.create("namespaces", {"metadata": {"name": "default"}})
        self.logs = PodLogs()
        self.fleet = Fleet(self.store)
        self.guests: dict[str, FakeGuest] = {}
        self.kubelets: dict[str, Kubelet] = {}
        self._tree = Path(tempfile.mkdtemp(prefix="sim-guests-"))
        self.roots: dict[str, GuestRoot] = {}  # each node's / as a directory, where node exec runs commands
        self._detach: list[Callable[[], None]] = []
        self.store.create("nodes", {
            "metadata": {"name": "kube-controlplane01", "labels": {"node-role.kubernetes.io/master": ""}},
            "spec": {"taints": [dict(MASTER_TAINT)]},
        })
        opts = {"status_interval": 0.2, "node_monitor_grace": 0.3, "not_ready_seconds": 0.05,
                "restart_sec": 0.1, **kubelet_opts}
        for name in ("kube-controlplane01", "kube-worker01", "kube-worker02"):
            big = name == "kube-worker02"
            guest = FakeGuest(worker_vcpus if big else 2, worker_mem_kib if big else 4030532)
            self.guests[name] = guest
            self.roots[name] = root = GuestRoot(self._tree / name)
            self._detach.append(root.attach(guest, hostname=name))
            node_opts = dict(opts)
            if not big:
                node_opts.pop("cpu_manager_policy", None)
                node_opts.pop("in_place_resize", None)
            self.kubelets[name] = Kubelet(self.store, name, guest, fleet=self.fleet, files=root.files, **node_opts)
        self.scheduler = Scheduler(self.store, version="v1.21.6", initial_backoff=0.05, max_backoff=0.2)
        self.nodeexec = NodeExec(self.store, self.logs, dict(self.guests), self.kubelets, roots=self.roots)

    def start(self) -> None:
        self.fleet.start()
        for k in self.kubelets.values():
            k.start()
        for name in self.kubelets:
            wait_for(lambda n=name: self.ready(n) == "True", what=f"{name} Ready")
        self.scheduler.start()
        self.nodeexec.start()

    def stop(self) -> None:
        self.nodeexec.stop()
        self.scheduler.stop()
        for k in self.kubelets.values():
            k.stop()
        self.fleet.stop()
        for detach in self._detach:
            detach()
        shutil.rmtree(self._tree, ignore_errors=True)

    def node(self, name: str) -> dict[str, Any]:
        return self.store.get("nodes", None, name)

    def ready(self, name: str) -> str | None:
        for c in self.node(name).get("status", {}).get("conditions") or []:
            if c["type"] == "Ready":
                return c["status"]
        return None

    def pod(self, name: str) -> dict[str, Any]:
        return self.store.get("pods", "default", name)

    def events(self, reason: str, name: str | None = None) -> list[dict[str, Any]]:
        items, _ = self.store.list("events")
        return [e for e in items if e["reason"] == reason and (name is None or e["involvedObject"]["name"] == name)]

    def create_app_pod(self, name: str, cpu: str, memory: str, *, image: str = "nginx:1.21") -> None:
        self.store.create("pods", {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "schedulerName": "default-scheduler",
                "containers": [{"name": name, "image": image,
                                "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                     "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                     "tolerationSeconds": 300},
                ],
            },
            "status": {"phase": "Pending"},
        })

    def create_debug_pod(self, name: str, node: str, script: str, *, nsenter: bool = True,
                         image: str = "ubuntu:20.04") -> None:
        if nsenter:
            spec: dict[str, Any] = {
                "hostPID": True,
                "containers": [{"name": "restart", "image": image,
                                "securityContext": {"privileged": True},
                                "command": ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--",
                                            "sh", "-c", script]}],
            }
        else:  # kubectl debug node/<n> --profile=sysadmin -- chroot /host sh -c ...
            spec = {
                "hostPID": True, "hostNetwork": True, "hostIPC": True,
                "containers": [{"name": "debugger", "image": "busybox:1.36",
                                "securityContext": {"privileged": True},
                                "command": ["chroot", "/host", "sh", "-c", script],
                                "volumeMounts": [{"name": "host-root", "mountPath": "/host"}]}],
                "volumes": [{"name": "host-root", "hostPath": {"path": "/"}}],
            }
        spec.update(nodeName=node, restartPolicy="Never", tolerations=[{"operator": "Exists"}])
        self.store.create("pods", {"metadata": {"name": name, "namespace": "default"}, "spec": spec,
                                   "status": {"phase": "Pending"}})


@pytest.fixture
def make_cluster() -> Iterator[Callable[..., Cluster]]:
    made: list[Cluster] = []

    def make(worker_vcpus: int = 2, worker_mem_kib: int = 4030532, **opts: Any) -> Cluster:
        cluster = Cluster(worker_vcpus, worker_mem_kib, **opts)
        made.append(cluster)
        cluster.start()
        return cluster

    yield make
    for cluster in made:
        cluster.stop()


@pytest.fixture
def fake_guest() -> type[FakeGuest]:
    return FakeGuest


@pytest.fixture(name="wait_for")
def wait_for_fixture() -> Callable[..., Any]:
    return wait_for
