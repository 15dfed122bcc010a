"""The console's gateway to one Kubernetes cluster: node and pod caches."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from console.kube.cache import CacheState, ResourceCache
from console.kube.codec import Key
from console.kube.connection import connect
from console.kube.execauth import EXEC_PLUGIN_TIMEOUT_S
from console.kube.fastcodec import NODE_CODEC, POD_CODEC
from console.kube.model import NodeInfo, PodInfo
from console.kube.rest import Lister

DOWN = ("reconnecting", "forbidden", "unauthorized")
NODES_FIRST_S = 5.0  # the pod cache starts when the node list is in, or after this long


@dataclass(frozen=True)
class CacheHealth:
    """Whether the caches are current: `down_since` the API server has been unreachable (or refusing) since
    then (time.time()), and the data shown is from `fresh_at`; `error` is the last failure; `states` each
    cache's own health."""

    down_since: float | None
    fresh_at: float
    error: BaseException | None = None
    states: tuple[CacheState, ...] = ()

    def stale_text(self) -> str | None:
        """The header's words for every cache that is down, or None when all answer:
        "nodes: reconnecting since 14:02:11 — connection refused; pods: …". A cache still loading its first
        list is not stale (its screen says "Loading")."""
        # a forbidden cache is RBAC, not an outage: its screen says what cannot be read and why
        # (Gateways.unreadable) while the other data stays current, so it is not called stale
        parts = [f"{s.name}: {s.state} since {_hms(s.since)} — {s.reason}" for s in self.states
                 if s.state in DOWN and s.state != "forbidden" and s.since is not None]
        return "; ".join(parts) or None

    def loading_text(self) -> str | None:
        """The header's words for caches still on their first list ("pods: loading since 14:02:11 — listing")."""
        parts = [f"{s.name}: loading since {_hms(s.since)} — {s.reason}" for s in self.states
                 if s.state == "loading" and s.since is not None]
        return "; ".join(parts) or None


def _hms(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


@dataclass(frozen=True)
class ClusterSnapshot:
    nodes: dict[str, NodeInfo]
    pods: dict[Key, PodInfo]

    def pods_by_node(self) -> dict[str, list[PodInfo]]:
        """One pass over the pods (never nodes × pods)."""
        out: dict[str, list[PodInfo]] = {}
        for pod in self.pods.values():
            out.setdefault(pod.node, []).append(pod)
        return out


class Cluster:
    """Connection plus list+watch caches; `start()` runs them in daemon threads."""

    def __init__(self, kubeconfig: str | None = None, context: str | None = None, *,
                 exec_timeout: float = EXEC_PLUGIN_TIMEOUT_S) -> None:
        self.api_client, self.target = connect(kubeconfig, context, exec_timeout=exec_timeout)
        self._listeners: list[Callable[[], None]] = []
        self._health_listeners: list[Callable[[CacheHealth], object]] = []
        self._health_lock = threading.Lock()
        self._last_health: tuple[tuple[str, str], ...] = ()
        self.nodes: ResourceCache[NodeInfo] = ResourceCache(
            Lister(self.api_client, "/api/v1/nodes"), NODE_CODEC, self._changed, self._health_changed, name="nodes")
        self.pods: ResourceCache[PodInfo] = ResourceCache(
            Lister(self.api_client, "/api/v1/pods"), POD_CODEC, self._changed, self._health_changed, name="pods")
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def on_change(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def _changed(self) -> None:
        for cb in self._listeners:
            cb()

    def on_health(self, callback: Callable[[CacheHealth], object]) -> None:
        """`callback(health)` (from a watch thread) when a cache changes state (live, reconnecting, …) or why."""
        self._health_listeners.append(callback)

    def health(self) -> CacheHealth:
        states = tuple(c.health() for c in (self.nodes, self.pods))
        down = [s.since for s in states if s.state in DOWN and s.since is not None]
        error = next((s.error for s in states if s.state in DOWN and s.error is not None), None)
        return CacheHealth(min(down) if down else None, min(s.fresh_at for s in states), error, states)

    def _health_changed(self) -> None:
        with self._health_lock:  # two caches notice the same outage: tell the listeners once per change
            health = self.health()
            seen = tuple((s.state, s.reason) for s in health.states)
            if seen == self._last_health:
                return
            self._last_health = seen
        for cb in self._health_listeners:
            cb(health)

    def start(self) -> None:
        t = threading.Thread(target=self.nodes.run, args=(self._stop,), name="watch-nodes", daemon=True)
        t.start()
        self._threads.append(t)

        def pods() -> None:
            # the node table paints from the node list: let it have the CPU (decoding is GIL-bound) before
            # 150,000 pods are read; a node list that cannot be read does not hold the pods up for long
            self.nodes.synced.wait(NODES_FIRST_S)
            self.pods.run(self._stop)

        t = threading.Thread(target=pods, name="watch-pods", daemon=True)
        t.start()
        self._threads.append(t)

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self.nodes.synced.wait(timeout) and self.pods.synced.wait(timeout)

    def snapshot(self) -> ClusterSnapshot:
        nodes = {name: n for (_, name), n in self.nodes.snapshot().items()}
        return ClusterSnapshot(nodes, self.pods.snapshot())

    def stop(self) -> None:
        self._stop.set()
