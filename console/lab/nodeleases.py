"""Heartbeats for nodes without a kubelet (the scale world), as kwok keeps its
kubelet-less nodes alive: their Leases renewed, their status reported now and then.

What kube-controller-manager's node lifecycle controller reads (pkg/controller/nodelifecycle/
node_lifecycle_controller.go, tryUpdateNodeHealth): a node stays healthy while, within --node-monitor-grace-period,
its Lease in kube-node-lease shows a later spec.renewTime or its Ready condition a new lastHeartbeatTime (either
one refreshes the controller's probe time). Past that, every condition becomes Unknown, the node is tainted
unreachable and its pods are evicted after their tolerationSeconds. A kubelet does both, at different rates: it
renews its Lease every quarter of nodeLeaseDurationSeconds (40 s, so every 10 s: k8s.io/component-helpers/
apimachinery/lease/controller.go, pkg/kubelet/apis/config/v1beta1/defaults.go) and posts its status, when
nothing changed, every nodeStatusReportFrequency (5 min: pkg/kubelet/kubelet_node_status.go,
isUpdateStatusPeriodExpired). This does the same for every node it is given, with the Lease the kubelet creates
(console/lab/nodelease.py: holder and owner the node).

Cost: each renewal is one merge patch of spec.renewTime (no read first). They are spread evenly over the
interval (node i at i/N of it), a tick's slice sent together by a few threads over the shared client. The
interval is the kubelet's 10 s up to RATE × 10 nodes and grows with the count beyond, so the renewals stay at
RATE a second (5000 nodes: every 200 s); the lease duration, the status report and the grace period the
controller must be given (`grace_period`) keep the kubelet's ratios to it (4, 30 and 5 intervals).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import urllib3

from console.lab.apistore import MERGE_PATCH
from console.lab.kubeclient import ApiError
from console.lab.kubelet_status import conditions
from console.lab.nodelease import LEASES, NAMESPACE, micro_time
from console.lab.store import NotFound, Obj

log = logging.getLogger(__name__)

RATE = 25  # renewals a second, at most
KUBELET_RENEW_S = 10.0  # the kubelet's: a quarter of nodeLeaseDurationSeconds 40
LEASE_DURATION = 4  # intervals
STATUS_REPORT = 30  # intervals: nodeStatusReportFrequency 5 min against the 10 s renewals
GRACE = 5  # intervals: kube-controller-manager's default --node-monitor-grace-period 50 s against the 10 s
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


def renew_interval(nodes: int) -> float:
    return max(KUBELET_RENEW_S, nodes / RATE)


def grace_period(nodes: int) -> str:
    """kube-controller-manager's --node-monitor-grace-period for `nodes` nodes renewed here (50s up to
    RATE × 10 nodes)."""
    return f"{math.ceil(GRACE * renew_interval(nodes))}s"


class NodeLeases:
    def __init__(self, store: Any, nodes: dict[str, str], *, tick: float = 1.0, workers: int = 4) -> None:
        """`store` an ApiStore (its client sends, its node informer tells the current conditions); `nodes`
        name -> uid."""
        self.store, self.client = store, store.client
        self.uids = dict(nodes)
        self.names = sorted(nodes)
        self.interval = renew_interval(len(self.names))
        self.duration = math.ceil(LEASE_DURATION * self.interval)
        self.tick = tick
        self.gone: set[str] = set()  # nodes deleted meanwhile: no more heartbeats
        self._stopping = threading.Event()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="node-lease")
        self._thread = threading.Thread(target=self._run, name="node-leases", daemon=True)

    def start(self, progress: Callable[[str], None] = lambda _msg: None) -> None:
        """Each node's Lease, then its renewals (and status reports) until stop()."""
        progress(f"creating {len(self.names)} node leases (renewed every {self.interval:.0f}s: no kubelets)")
        stamp = micro_time()
        self.store.bulk_load(LEASES, [self._lease(name, stamp) for name in self.names], progress=progress)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(10)
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _lease(self, name: str, stamp: str) -> Obj:
        return {"metadata": {"name": name, "namespace": NAMESPACE,
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                                                  "uid": self.uids[name]}]},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": self.duration, "renewTime": stamp}}

    def _run(self) -> None:
        n = len(self.names)
        if not n:
            return
        t0 = time.monotonic()
        renewed = reported = 0  # slots done so far: slot k is node k % n, due at t0 + k × every / n
        while not self._stopping.wait(self.tick):
            elapsed = time.monotonic() - t0
            due_lease = int(elapsed * n / self.interval)
            due_status = int(elapsed * n / (STATUS_REPORT * self.interval))
            # after a pause (the API server away) each node once, not every missed slot
            renewed, reported = max(renewed, due_lease - n), max(reported, due_status - n)
            jobs = [(self._renew, self.names[k % n]) for k in range(renewed, due_lease)]
            jobs += [(self._report, self.names[k % n]) for k in range(reported, due_status)]
            renewed, reported = due_lease, due_status
            futures = [self._pool.submit(self._quietly, fn, name) for fn, name in jobs if name not in self.gone]
            wait(futures)

    def _quietly(self, fn: Callable[[str], None], name: str) -> None:
        try:
            fn(name)
        except (ApiError, urllib3.exceptions.HTTPError) as e:  # the API server away: the next round tries again
            log.debug("node heartbeat for %s: %s", name, e)

    def _renew(self, name: str) -> None:
        url = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{name}"
        try:
            self.client.request("PATCH", url, {"spec": {"renewTime": micro_time()}}, content_type=MERGE_PATCH)
        except ApiError as e:
            if e.code != 404:
                raise
            self._recreate(name)

    def _recreate(self, name: str) -> None:
        """The Lease is gone: with its node (garbage collected by its owner reference), or deleted by hand."""
        try:
            node = self.client.request("GET", f"/api/v1/nodes/{name}")
        except ApiError as e:
            if e.code == 404:
                self.gone.add(name)
                return
            raise
        self.uids[name] = node["metadata"]["uid"]
        self.client.request("POST", f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases",
                            {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                             **self._lease(name, micro_time())})

    def _report(self, name: str) -> None:
        """The node's conditions, as its kubelet posts them: Ready, no pressure, a new heartbeat time (a strategic
        merge patch of status.conditions, merged by type, as the kubelet's PatchNodeStatus)."""
        try:
            node = self.store.get("nodes", None, name)
        except NotFound:
            return
        stamp = micro_time()[:19] + "Z"  # metav1.Time: whole seconds
        self.client.request("PATCH", f"/api/v1/nodes/{name}/status",
                            {"status": {"conditions": conditions(node, True, stamp)}},
                            content_type=STRATEGIC_MERGE_PATCH)


class PodFinisher:
    """What the kubelet of a node without one would do last for a pod: once the API server marks a pod bound to
    one of `nodes` for deletion (deletionTimestamp) and no finalizer holds it, remove it (a delete with grace 0),
    as kwok's "pod-delete" Stage does for its kubelet-less nodes (its fast pod stages: selector deletionTimestamp
    Exists, finalizers DoesNotExist; next: delete) — there are no containers to stop, nothing waits out a grace
    period."""

    def __init__(self, store: Any, nodes: set[str], *, workers: int = 4) -> None:
        self.store = store
        self.nodes = nodes
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lab-podfinisher")
        self._unsubscribe: Callable[[], None] | None = None

    def start(self) -> None:
        # followed, not kept: an informer of the scale world's pods would hold them all in the lab's process
        self._unsubscribe = self.store.follow("pods", self._event)

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _event(self, ev: Any) -> None:
        pod = ev.object
        meta = pod.get("metadata") or {}
        if ev.type == "DELETED" or not meta.get("deletionTimestamp") or meta.get("finalizers"):
            return
        if (pod.get("spec") or {}).get("nodeName") in self.nodes:
            self._pool.submit(self._remove, meta.get("namespace", "default"), meta["name"])

    def _remove(self, namespace: str, name: str) -> None:
        try:
            self.store.delete("pods", namespace, name, grace_seconds=0)
        except NotFound:
            return
        except Exception:  # the next event (or none: it is gone) decides; the log says what failed
            log.exception("lab: removing pod %s/%s failed", namespace, name)
