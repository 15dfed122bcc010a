"""Scale: 5,000 kubelets on one fleet thread, 150,000 bound pods, 100 pods to schedule."""

from __future__ import annotations

import time

import pytest

from console.lab.kubelet import Fleet, Kubelet
from console.lab.scheduler import Scheduler
from console.lab.store import Store

NODES, PODS_PER_NODE, PENDING = 5000, 30, 100


def _bound_pods():
    for i in range(NODES):
        for j in range(PODS_PER_NODE):
            yield {"metadata": {"name": f"app-{i:05d}-{j:02d}", "namespace": "default"},
                   "spec": {"nodeName": f"node-{i:05d}", "containers": [
                       {"name": "app", "image": "registry.lab/app:1",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
                   "status": {"phase": "Running"}}


@pytest.mark.slow
def test_scale_world_schedules_quickly(fake_guest, wait_for):
    store = Store()
    store.create("namespaces", {"metadata": {"name": "default"}})
    fleet = Fleet(store)
    fleet.start()
    kubelets = [Kubelet(store, f"node-{i:05d}", fake_guest(16, 65842860), fleet=fleet, heartbeat=False,
                        record_events=False, not_ready_seconds=0) for i in range(NODES)]
    scheduler = Scheduler(store, version="v1.32.4")
    try:
        t0 = time.perf_counter()
        for k in kubelets:
            k.start()
        fleet.run_sync(lambda: None, timeout=120)  # every queued start has run
        t_kubelets = time.perf_counter() - t0
        nodes, _ = store.list("nodes")
        assert len(nodes) == NODES
        assert all(n["status"]["conditions"][-1]["status"] == "True" for n in nodes)

        pods = list(_bound_pods())
        if hasattr(store, "bulk_load"):
            store.bulk_load("pods", pods)
        else:
            for p in pods:
                store.create("pods", p)
        t0 = time.perf_counter()
        scheduler.start()
        assert scheduler.wait_idle(120)
        t_cache = time.perf_counter() - t0

        t0 = time.perf_counter()
        for n in range(PENDING):
            store.create("pods", {"metadata": {"name": f"pending-{n}", "namespace": "default"},
                                  "spec": {"containers": [{"name": "c", "image": "registry.lab/app:1", "resources": {
                                      "requests": {"cpu": "500m", "memory": "1Gi"}}}]},
                                  "status": {"phase": "Pending"}})
        wait_for(lambda: all(store.get("pods", "default", f"pending-{n}")["spec"].get("nodeName")
                             for n in range(PENDING)), timeout=60, what="all pending pods bound")
        t_bind = time.perf_counter() - t0
        wait_for(lambda: all(store.get("pods", "default", f"pending-{n}")["status"]["phase"] == "Running"
                             for n in range(PENDING)), timeout=60, what="kubelets ran them")
        # the scheduler counted the 30 pods already on each node: no node got more than its share
        per_node: dict[str, int] = {}
        for n in range(PENDING):
            node = store.get("pods", "default", f"pending-{n}")["spec"]["nodeName"]
            per_node[node] = per_node.get(node, 0) + 1
        assert max(per_node.values()) == 1
        print(f"\nscale: {NODES} kubelets ready in {t_kubelets:.2f}s, scheduler cache of "
              f"{NODES * PODS_PER_NODE} pods in {t_cache:.2f}s, {PENDING} pods bound in {t_bind:.2f}s")
        assert t_bind < 30  # a regression to N×M work would take minutes
    finally:
        scheduler.stop()
        for k in kubelets:
            k.stop()
        fleet.stop()


def test_resync_picks_up_objects_seeded_without_events(wait_for):
    store = Store()
    store.create("namespaces", {"metadata": {"name": "default"}})
    scheduler = Scheduler(store, initial_backoff=0.01, max_backoff=0.05)
    scheduler.start()
    try:
        store.create("pods", {"metadata": {"name": "p", "namespace": "default"},
                              "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                              "status": {"phase": "Pending"}})
        wait_for(lambda: store.list("events")[0], what="FailedScheduling")
        assert store.list("events")[0][0]["message"] == "no nodes available to schedule pods"
        cap = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        store.bulk_load("nodes", [{"metadata": {"name": "n1"}, "spec": {},
                                   "status": {"capacity": cap, "allocatable": cap}}])
        scheduler.resync()
        wait_for(lambda: store.get("pods", "default", "p")["spec"].get("nodeName") == "n1", what="bound after resync")
    finally:
        scheduler.stop()
