"""The lab's kube-scheduler: binds Pending pods that fit, explains those that do not.

One thread. A cache of per-node requested resources is kept from pod watch
events (as the real scheduler cache does), so a scheduling attempt costs one
pass over the nodes, never a pass over the cluster's pods. Unschedulable pods
wait in a pool and are retried after their backoff (1 s doubling to 10 s) when
a node is added or changes allocatable, taints, labels or unschedulable, when
an assigned pod goes away, and at the latest after `flush_interval`
(shared/reference/scale-up.md 5.6).
"""

from __future__ import annotations

import heapq
import logging
import queue
import threading
import time
from collections import deque
from typing import Any

from console.lab import fit, podaffinity
from console.lab.recorder import EventRecorder, object_ref
from console.lab.store import NotFound, Obj, Store, WatchEvent, now_iso

log = logging.getLogger(__name__)

Key = tuple[str, str]


def _key(obj: Obj) -> Key:
    meta = obj["metadata"]
    return meta.get("namespace", "default"), meta["name"]


def num_feasible_nodes_to_find(num_nodes: int) -> int:
    """The default percentageOfNodesToScore rule: stop after this many feasible nodes."""
    if num_nodes < 100:
        return num_nodes
    pct = max(5, 50 - num_nodes // 125)
    return max(100, num_nodes * pct // 100)


class Scheduler:
    def __init__(
        self,
        store: Store,
        *,
        version: str = "v1.21.6",
        scheduler_name: str = "default-scheduler",
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        flush_interval: float = 300.0,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.store = store
        self.wording = fit.wording_for(version)
        self.scheduler_name = scheduler_name
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.flush_interval = flush_interval
        self.recorder = recorder or EventRecorder(store, scheduler_name)
        self._q: queue.SimpleQueue[tuple[str, WatchEvent | None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._unsubs: list[Any] = []
        self._idle = threading.Condition()
        self._busy = True
        # cache
        self._nodes: dict[str, fit.NodeInfo] = {}
        self._assigned: dict[Key, tuple[str, fit.Resources]] = {}
        # what InterPodAffinity reads of assigned pods: labels, and their required anti-affinity terms
        self._labels: dict[Key, dict[str, str]] = {}
        self._anti: dict[Key, tuple[podaffinity.Term, ...]] = {}
        self._pending: dict[Key, Obj] = {}
        self._active: deque[Key] = deque()
        self._in_active: set[Key] = set()
        self._unsched: dict[Key, float] = {}  # key -> time it became unschedulable
        self._backoff: list[tuple[float, Key]] = []
        self._attempts: dict[Key, int] = {}
        self._last_try: dict[Key, float] = {}
        self._list_rv = 0
        self.stats = {"attempts": 0, "bound": 0, "unschedulable": 0}

    # -- lifecycle ------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._unsubs = [
            self.store.subscribe("nodes", lambda ev: self._q.put(("nodes", ev))),
            self.store.subscribe("pods", lambda ev: self._q.put(("pods", ev))),
        ]
        self._thread = threading.Thread(target=self._run, name="lab-scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        for unsub in self._unsubs:
            unsub()
        self._unsubs = []
        self._q.put(("wake", None))
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def resync(self) -> None:
        """Re-list nodes and pods (after objects were seeded without watch events)."""
        self._q.put(("resync", None))

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until every queued event is handled and no pod is ready for an attempt."""
        deadline = time.monotonic() + timeout
        self._q.put(("wake", None))
        with self._idle:
            while self._busy or not self._q.empty():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(min(left, 0.05))
        return True

    # -- loop -----------------------------------------------------------
    def _run(self) -> None:
        self._relist()
        while not self._stop.is_set():
            timeout = 0.0 if self._active else self._next_timeout()
            try:
                kind, ev = self._q.get(timeout=timeout) if timeout > 0 else self._q.get_nowait()
            except queue.Empty:
                kind, ev = "", None
            with self._idle:
                self._busy = True
            self._handle(kind, ev)
            self._drain()
            self._promote(time.monotonic())
            if self._active:
                key = self._active.popleft()
                self._in_active.discard(key)
                try:
                    self._schedule_one(key)
                except Exception:  # one bad pod must not stop the scheduler
                    log.exception("scheduling %s/%s failed", *key)
            elif self._q.empty():
                with self._idle:
                    self._busy = False
                    self._idle.notify_all()

    def _drain(self) -> None:
        while True:
            try:
                kind, ev = self._q.get_nowait()
            except queue.Empty:
                return
            self._handle(kind, ev)

    def _next_timeout(self) -> float:
        now = time.monotonic()
        due = now + 1.0
        if self._backoff:
            due = min(due, self._backoff[0][0])
        return max(0.001, due - now)

    def _handle(self, kind: str, ev: WatchEvent | None) -> None:
        if kind == "resync":
            self._relist()
        elif ev is None or ev.rv <= self._list_rv:
            return
        elif kind == "nodes":
            self._on_node(ev.type, ev.object)
        elif kind == "pods":
            self._on_pod(ev.type, ev.object)

    def _relist(self) -> None:
        nodes, rv = self.store.list("nodes")
        pods, prv = self.store.list("pods")
        self._list_rv = max(rv, prv)
        self._nodes = {n["metadata"]["name"]: fit.NodeInfo.from_node(n) for n in nodes}
        self._assigned.clear()
        self._labels.clear()
        self._anti.clear()
        for pod in pods:
            self._on_pod("ADDED", pod, moving=False)
        self._move_all()

    # -- cache ----------------------------------------------------------
    def _on_node(self, type_: str, node: Obj) -> None:
        name = node["metadata"]["name"]
        if type_ == "DELETED":
            self._nodes.pop(name, None)
            return
        info = fit.NodeInfo.from_node(node)
        old = self._nodes.get(name)
        if old is None:
            for pod in self.store.pods_on_node(name):
                held = self._assigned.get(_key(pod))
                if held is not None and held[0] == name:
                    info.add(held[1])
            self._nodes[name] = info
            self._move_all()
            return
        info.requested, info.pod_count = old.requested, old.pod_count
        self._nodes[name] = info
        if (info.allocatable, info.taints, info.labels, info.unschedulable) != (
            old.allocatable, old.taints, old.labels, old.unschedulable
        ):
            self._move_all()

    def _unassign(self, key: Key) -> bool:
        self._labels.pop(key, None)
        self._anti.pop(key, None)
        held = self._assigned.pop(key, None)
        if held is None:
            return False
        info = self._nodes.get(held[0])
        if info is not None:
            info.add(held[1], -1)
        return True

    def _on_pod(self, type_: str, pod: Obj, *, moving: bool = True) -> None:
        key = _key(pod)
        node = pod.get("spec", {}).get("nodeName")
        if type_ == "DELETED" or node or fit.is_terminated(pod):
            self._forget_pending(key)
        if type_ == "DELETED" or fit.is_terminated(pod):
            if self._unassign(key) and moving:
                self._move_all()
            return
        if node:
            held = self._assigned.get(key)
            if held is not None and held[0] == node:
                return
            self._unassign(key)
            req = fit.pod_requests(pod)
            self._assigned[key] = (node, req)
            self._remember(key, pod)
            info = self._nodes.get(node)
            if info is not None:
                info.add(req)
            if moving and self._waiting_for_affinity():
                self._move_all()  # a pod that pending pods' required podAffinity may select
            return
        if (pod.get("spec", {}).get("schedulerName") or "default-scheduler") != self.scheduler_name:
            return
        if pod.get("metadata", {}).get("deletionTimestamp"):
            return
        prev = self._pending.get(key)
        self._pending[key] = pod
        if prev is None or prev["metadata"].get("generation") != pod["metadata"].get("generation"):
            self._unsched.pop(key, None)
            self._activate(key)

    def _remember(self, key: Key, pod: Obj) -> None:
        self._labels[key] = dict(pod["metadata"].get("labels") or {})
        anti = podaffinity.required_terms(pod, "podAntiAffinity")
        if anti:
            self._anti[key] = anti

    def _waiting_for_affinity(self) -> bool:
        return any(podaffinity.required_terms(self._pending[k], "podAffinity")
                   for k in self._unsched if k in self._pending)

    def _affinity_check(self, pod: Obj) -> podaffinity.Check | None:
        """InterPodAffinity's PreFilter: None when neither the pod nor any assigned pod has required terms."""
        own = podaffinity.has_required_terms(pod)
        if not own and not self._anti:
            return None
        keys = self._assigned if own else self._anti
        placed = []
        for key in keys:
            node = self._nodes.get(self._assigned[key][0]) if key in self._assigned else None
            if node is not None:
                placed.append(podaffinity.Placed(key[0], self._labels.get(key, {}), node.labels,
                                                 self._anti.get(key, ())))
        namespaces, _ = self.store.list("namespaces")
        ns_labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in namespaces}
        return podaffinity.Check(pod, placed, ns_labels)

    def _forget_pending(self, key: Key) -> None:
        self._pending.pop(key, None)
        self._unsched.pop(key, None)
        self._attempts.pop(key, None)
        self._last_try.pop(key, None)

    # -- queues ---------------------------------------------------------
    def _activate(self, key: Key) -> None:
        if key not in self._in_active and key in self._pending:
            self._in_active.add(key)
            self._active.append(key)

    def _backoff_for(self, key: Key) -> float:
        n = self._attempts.get(key, 0)
        return min(self.initial_backoff * (2 ** max(0, n - 1)), self.max_backoff) if n else 0.0

    def _move_all(self) -> None:
        """MoveAllToActiveOrBackoffQueue: an event that may make unschedulable pods fit."""
        now = time.monotonic()
        for key in list(self._unsched):
            del self._unsched[key]
            ready = self._last_try.get(key, 0.0) + self._backoff_for(key)
            if ready <= now:
                self._activate(key)
            else:
                heapq.heappush(self._backoff, (ready, key))

    def _promote(self, now: float) -> None:
        while self._backoff and self._backoff[0][0] <= now:
            _, key = heapq.heappop(self._backoff)
            self._activate(key)
        stale = [k for k, since in self._unsched.items() if now - since >= self.flush_interval]
        for key in stale:
            del self._unsched[key]
            self._activate(key)

    # -- one attempt ----------------------------------------------------
    def _schedule_one(self, key: Key) -> None:
        pod = self._pending.get(key)
        if pod is None:
            return
        self.stats["attempts"] += 1
        req = fit.pod_requests(pod)
        want = num_feasible_nodes_to_find(len(self._nodes))
        feasible: list[fit.NodeInfo] = []
        rejected: list[list[str]] = []
        check = self._affinity_check(pod)
        for info in self._nodes.values():
            reasons = fit.filter_node(pod, req, info, self.wording)
            if not reasons and check is not None:
                reason = check.reason(info.labels)  # InterPodAffinity filters last in the default profile
                reasons = [reason] if reason else []
            if reasons:
                rejected.append(reasons)
            else:
                feasible.append(info)
                if len(feasible) >= want:
                    break
        now = time.monotonic()
        self._last_try[key] = now
        if feasible:
            prefs = {n.name: _preferred(pod, n) for n in feasible}
            best = max(prefs.values())
            self._bind(key, pod, req, max(feasible, key=lambda n: _score(prefs[n.name], best, n, req)))
            return
        self._attempts[key] = self._attempts.get(key, 0) + 1
        self._unsched[key] = now
        self.stats["unschedulable"] += 1
        self._fail(key, pod, fit.fit_error(len(self._nodes), rejected, self.wording))

    def _bind(self, key: Key, pod: Obj, req: fit.Resources, node: fit.NodeInfo) -> None:
        stamp = now_iso()

        def bind(draft: Obj) -> None:
            if draft["spec"].get("nodeName"):
                raise _AlreadyBound
            draft["spec"]["nodeName"] = node.name
            _set_condition(draft, {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                   "lastTransitionTime": stamp})

        try:
            bound = self.store.mutate("pods", key[0], key[1], bind)
        except (NotFound, _AlreadyBound):
            self._forget_pending(key)
            return
        self._forget_pending(key)
        self._assigned[key] = (node.name, req)  # assume: the cache counts it before the watch event
        self._remember(key, bound)
        node.add(req)
        self.stats["bound"] += 1
        self.recorder.event(object_ref(bound), "Normal", "Scheduled",
                            f"Successfully assigned {key[0]}/{key[1]} to {node.name}")

    def _fail(self, key: Key, pod: Obj, message: str) -> None:
        stamp = now_iso()

        def mark(draft: Obj) -> None:
            if draft["spec"].get("nodeName"):
                raise _AlreadyBound
            cond = {"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                    "lastTransitionTime": stamp, "reason": "Unschedulable", "message": message}
            _set_condition(draft, cond)

        try:
            updated = self.store.mutate("pods", key[0], key[1], mark)
        except (NotFound, _AlreadyBound):
            self._forget_pending(key)
            return
        self._pending[key] = updated
        self.recorder.event(object_ref(updated), "Warning", "FailedScheduling", message)


class _AlreadyBound(Exception):
    pass


def _set_condition(pod: Obj, cond: Obj) -> None:
    """Replace the condition of the same type; keep lastTransitionTime when the status is unchanged."""
    conds = pod.setdefault("status", {}).setdefault("conditions", [])
    for i, old in enumerate(conds):
        if old.get("type") == cond["type"]:
            if old.get("status") == cond["status"]:
                cond["lastTransitionTime"] = old.get("lastTransitionTime", cond["lastTransitionTime"])
            conds[i] = cond
            return
    conds.append(cond)


def _preferred(pod: Obj, node: fit.NodeInfo) -> int:
    """NodeAffinity scoring: the weights of the preferred terms the node matches."""
    prefs = ((((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {})
             .get("preferredDuringSchedulingIgnoredDuringExecution") or [])
    return sum(int(p.get("weight") or 0) for p in prefs
               if fit.match_node_selector_terms([p.get("preference") or {}], node.labels, node.name))


def _score(preferred: int, best: int, node: fit.NodeInfo, req: fit.Resources) -> float:
    """kube-scheduler's default score: NodeAffinity (weight 2, normalized to the best feasible node) plus
    NodeResourcesFit LeastAllocated (weight 1); pkg/scheduler/apis/config/v1 default plugins."""
    return 2 * (preferred / best if best > 0 else 0.0) + _free_score(node, req) / 2


def _free_score(node: fit.NodeInfo, req: fit.Resources) -> float:
    """LeastAllocated: the share of cpu and memory left after placing the pod."""
    score = 0.0
    for name in ("cpu", "memory"):
        alloc = node.allocatable.get(name, 0)
        if alloc > 0:
            score += (alloc - node.requested.get(name, 0) - req.get(name, 0)) / alloc
    return score
