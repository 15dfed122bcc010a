"""CPU and memory in use, from metrics.k8s.io (metrics-server), polled at its resolution.

metrics-server answers get and list only (no watch) and scrapes every 15 s (--metric-resolution), so the reader
lists NodeMetrics (and, while a screen shows pod usage, PodMetrics) every `interval` seconds in a daemon thread.
A cluster without metrics-server (the group is not served: 404), a user who may not read it (403) or an
APIService that is down (503) leaves usage *absent* — `Usage` is None and `MetricsSnapshot.reason` says why —
never zero. Units as kubectl top reads them: CPU quantities ("123456789n") in millicores, memory in bytes.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from console.kube.model import mem_bytes
from console.kube.raw import raw

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
INTERVAL = 15.0  # metrics-server's default --metric-resolution
TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Usage:
    cpu_m: int
    memory: int  # bytes


@dataclass(frozen=True)
class MetricsSnapshot:
    """`state`: "loading" (not read yet), "live", "absent" (not served), "forbidden" or "failing"; `reason` one
    line for the user when not live; `at` the time.time() of the read the values come from."""

    state: str = "loading"
    reason: str = ""
    nodes: dict[str, Usage] = field(default_factory=dict)
    pods: dict[tuple[str, str], Usage] = field(default_factory=dict)
    at: float = 0.0

    def node(self, name: str) -> Usage | None:
        """The node's usage, or None when it is not known (no metrics for it, or none at all)."""
        return self.nodes.get(name) if self.state == "live" else None

    def pod(self, namespace: str, name: str) -> Usage | None:
        return self.pods.get((namespace, name)) if self.state == "live" else None


def cpu_millis(q: str | None) -> int:
    """Nanocores ("123456789n") in millicores rounded up, as Quantity.MilliValue() — what kubectl top prints."""
    from kubernetes.utils import parse_quantity

    return math.ceil(parse_quantity(q) * 1000) if q else 0


def node_usage(obj: dict[str, Any]) -> tuple[str, Usage]:
    u = obj.get("usage") or {}
    return obj["metadata"]["name"], Usage(cpu_millis(u.get("cpu")), mem_bytes(u.get("memory")))


def pod_usage(obj: dict[str, Any]) -> tuple[tuple[str, str], Usage]:
    """A pod's usage is the sum over its containers (kubectl top pod without --containers)."""
    cpu = mem = 0
    for c in obj.get("containers") or []:
        u = c.get("usage") or {}
        cpu += cpu_millis(u.get("cpu"))
        mem += mem_bytes(u.get("memory"))
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"]), Usage(cpu, mem)


def _why(status: int, body: bytes, plural: str) -> tuple[str, str]:
    """(state, reason) for a failed read of nodes/pods.metrics.k8s.io."""
    try:
        message = str(json.loads(body).get("message") or "")
    except (ValueError, AttributeError):
        message = ""
    if status == 404:
        return "absent", f"{GROUP} is not served (no metrics-server)"
    if status == 403:
        return "forbidden", message or f"forbidden: list {plural}.{GROUP}"
    if status == 503:
        return "failing", f"{GROUP} unavailable (metrics-server down?): {message or 'service unavailable'}"
    return "failing", f"reading {plural}.{GROUP} failed: HTTP {status} {message}".strip()


class MetricsReader:
    """Polls NodeMetrics (and PodMetrics while `pods` is on) through an ApiClient; read with `snapshot()`.

    One per cluster connection; `start()` runs the poll thread, `stop()` ends it. `on_change()` is called from
    that thread after each read that changed the snapshot.
    """

    def __init__(self, api_client: Any, *, interval: float = INTERVAL,
                 on_change: Callable[[], None] = lambda: None) -> None:
        from kubernetes import client

        self._custom = client.CustomObjectsApi(api_client)
        self.interval = interval
        self._on_change = on_change
        self._lock = threading.Lock()
        self._snap = MetricsSnapshot()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._pods = False
        self.generation = 0  # bumped on every new snapshot

    def snapshot(self) -> MetricsSnapshot:
        with self._lock:
            return self._snap

    def want_pods(self, on: bool) -> None:
        """PodMetrics are listed only while a screen shows them (one list of every pod's metrics per poll)."""
        if on and not self._pods:
            self._pods = True
            self._wake.set()
        self._pods = on

    def _list(self, plural: str) -> tuple[int, bytes]:
        from kubernetes.client.exceptions import ApiException

        try:
            resp = self._custom.list_cluster_custom_object(GROUP, VERSION, plural, _preload_content=False,
                                                           _request_timeout=TIMEOUT)
            return raw(resp).status, raw(resp).data
        except ApiException as e:
            return e.status or 0, e.body.encode() if isinstance(e.body, str) else (e.body or b"")

    def poll(self) -> MetricsSnapshot:
        """One read of the metrics API (blocking): the new snapshot, also kept for `snapshot()`."""
        from urllib3.exceptions import HTTPError

        now = time.time()
        try:
            status, body = self._list("nodes")
            pods: dict[tuple[str, str], Usage] = {}
            if status == 200 and self._pods:
                pstatus, pbody = self._list("pods")
                if pstatus == 200:
                    pods = dict(pod_usage(o) for o in json.loads(pbody).get("items") or [])
            if status == 200:
                nodes = dict(node_usage(o) for o in json.loads(body).get("items") or [])
                snap = MetricsSnapshot("live", "", nodes, pods, now)
            else:
                state, reason = _why(status, body, "nodes")
                snap = MetricsSnapshot(state, reason, at=now)
        except (HTTPError, OSError) as e:
            snap = MetricsSnapshot("failing", f"reading {GROUP} failed: {e}", at=now)
        except (ValueError, KeyError, TypeError, AttributeError) as e:  # not what metrics-server sends
            snap = MetricsSnapshot("failing", f"{GROUP} sent an unreadable answer: {e!r}", at=now)
        with self._lock:
            changed = (snap.state, snap.reason, snap.nodes, snap.pods) != \
                (self._snap.state, self._snap.reason, self._snap.nodes, self._snap.pods)
            self._snap = snap
            if changed:
                self.generation += 1
        if changed:
            self._on_change()
        return snap

    def run(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._wake.wait(self.interval)
            self._wake.clear()

    def start(self) -> None:
        threading.Thread(target=self.run, name="poll-metrics", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
