"""metrics.k8s.io/v1beta1 as metrics-server serves it through the aggregator: NodeMetrics and PodMetrics.

Shapes follow k8s.io/metrics pkg/apis/metrics/v1beta1/types.go and metrics-server pkg/api (node.go, pod.go):
objects carry the node's / pod's labels (label selectors match them), `timestamp` is the scrape time, `window`
the span the CPU rate was computed over; CPU is in nanocores ("123456789n"), memory (working set) in Ki. Only
get and list are served (no watch). A node that is not Ready (its kubelet does not answer the scrape) has no
metrics, nor do its pods; Pending and finished pods have none either.

Usage is simulated: each running container uses a slowly varying fraction of its requests (a period of minutes,
phase per pod), recomputed once per `RESOLUTION` like metrics-server's --metric-resolution (default 15s); a
node's usage is its pods' plus a system overhead (kubelet, runtime, OS), never above its capacity.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from console.lab.fit import quantity
from console.lab.kubeapi.encoding import json_response
from console.lab.kubeapi.selectors import combine, field_selector, label_selector
from console.lab.kubeapi.status import ApiError
from console.lab.resources import ResourceType
from console.lab.store import Store

Obj = dict[str, Any]

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
RESOLUTION = 15.0  # seconds between scrapes (metrics-server --metric-resolution)
PERIOD = 600.0  # seconds for a pod's usage to go round its cycle
NODES = ResourceType("nodes", "NodeMetrics", GROUP, VERSION, False, verbs=("get", "list"), singular="nodemetrics")
PODS = ResourceType("pods", "PodMetrics", GROUP, VERSION, True, verbs=("get", "list"), singular="podmetrics")


def group() -> Obj:
    gv = {"groupVersion": API_VERSION, "version": VERSION}
    return {"name": GROUP, "versions": [gv], "preferredVersion": gv}


def resource_list() -> Obj:
    resources = [{"name": rt.plural, "singularName": "", "namespaced": rt.namespaced, "kind": rt.kind,
                  "verbs": list(rt.verbs)} for rt in (NODES, PODS)]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": API_VERSION, "resources": resources}


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fraction(key: str, t: float, base: float, swing: float) -> float:
    phase = (zlib.crc32(key.encode()) % 1000) / 1000 * 2 * math.pi
    return base + swing * math.sin(2 * math.pi * t / PERIOD + phase)


def _ready(node: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


def _container_usage(pod_key: str, container: Obj, t: float) -> tuple[int, int]:
    """(nanocores, bytes) a container uses at scrape time `t`."""
    req = (container.get("resources") or {}).get("requests") or {}
    cpu_m = quantity("cpu", str(req["cpu"])) if "cpu" in req else 10
    mem = quantity("memory", str(req["memory"])) if "memory" in req else 32 * 1024 * 1024
    key = f"{pod_key}/{container.get('name', '')}"
    cpu_n = int(cpu_m * 1_000_000 * _fraction(key, t, 0.45, 0.3))
    mem_b = int(mem * _fraction(key + "m", t, 0.6, 0.15))
    return cpu_n, mem_b // 1024 * 1024


def _usage(cpu_n: int, mem_b: int) -> dict[str, str]:
    return {"cpu": f"{cpu_n}n", "memory": f"{mem_b // 1024}Ki"}


class Metrics:
    """What metrics-server would answer now, computed from the store; `served` switches the API off and on."""

    def __init__(self, store: Store, *, served: bool = True, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.served = served
        self.clock = clock
        # one scrape per resolution and store state: the scale world's 150,000 pods are not redone per request
        self._last: tuple[tuple[float, int], list[tuple[Obj, list[tuple[str, int, int]]]]] | None = None

    def _scrape_time(self) -> float:
        return math.floor(self.clock() / RESOLUTION) * RESOLUTION

    def _scraped_pods(self, t: float) -> list[tuple[Obj, list[tuple[str, int, int]]]]:
        key = (t, self.store.resource_version)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        out = self._scrape_pods(t)
        self._last = (key, out)
        return out

    def _scrape_pods(self, t: float) -> list[tuple[Obj, list[tuple[str, int, int]]]]:
        nodes = {n["metadata"]["name"] for n in self.store.list("nodes", None, None)[0] if _ready(n)}
        out = []
        for pod in self.store.list("pods", None, None)[0]:
            spec, status = pod.get("spec") or {}, pod.get("status") or {}
            if status.get("phase") != "Running" or spec.get("nodeName") not in nodes:
                continue
            meta = pod["metadata"]
            # same phase in every run: a controller's pod by its generateName and node (its name is random)
            name = f"{meta['generateName']}@{spec.get('nodeName')}" if meta.get("generateName") else meta["name"]
            key = f"{meta.get('namespace', '')}/{name}"
            out.append((pod, [(c.get("name", ""), *_container_usage(key, c, t)) for c in spec.get("containers") or []]))
        return out

    def node_metrics(self) -> list[Obj]:
        t = self._scrape_time()
        per_node: dict[str, list[int]] = {}
        for pod, containers in self._scraped_pods(t):
            acc = per_node.setdefault(pod["spec"]["nodeName"], [0, 0])
            for _, cpu_n, mem_b in containers:
                acc[0] += cpu_n
                acc[1] += mem_b
        out = []
        for node in self.store.list("nodes", None, None)[0]:
            if not _ready(node):
                continue
            meta, cap = node["metadata"], (node.get("status") or {}).get("capacity") or {}
            cap_n = quantity("cpu", str(cap.get("cpu", "1"))) * 1_000_000
            cap_b = quantity("memory", str(cap.get("memory", "1Gi")))
            pods_n, pods_b = per_node.get(meta["name"], (0, 0))
            # kubelet, container runtime and the OS: ~50m + 3% of the CPUs, ~300Mi + 5% of the memory
            sys_n = int((50_000_000 + 0.03 * cap_n) * _fraction(meta["name"], t, 1.0, 0.2))
            sys_b = int(300 * 1024 * 1024 + 0.05 * cap_b)
            out.append({
                "kind": NODES.kind, "apiVersion": API_VERSION,
                "metadata": {"name": meta["name"], "creationTimestamp": _stamp(self.clock()),
                             "labels": dict(meta.get("labels") or {})},
                "timestamp": _stamp(t), "window": f"{RESOLUTION:g}s",
                "usage": _usage(min(cap_n, pods_n + sys_n), min(cap_b, pods_b + sys_b)),
            })
        return out

    def pod_metrics(self, namespace: str | None) -> list[Obj]:
        t = self._scrape_time()
        out = []
        for pod, containers in self._scraped_pods(t):
            meta = pod["metadata"]
            if namespace is not None and meta.get("namespace") != namespace:
                continue
            out.append({
                "kind": PODS.kind, "apiVersion": API_VERSION,
                "metadata": {"name": meta["name"], "namespace": meta.get("namespace", ""),
                             "creationTimestamp": _stamp(self.clock()), "labels": dict(meta.get("labels") or {})},
                "timestamp": _stamp(t), "window": f"{RESOLUTION:g}s",
                "containers": [{"name": name, "usage": _usage(cpu_n, mem_b)} for name, cpu_n, mem_b in containers],
            })
        return out


def target(segs: list[str]) -> tuple[ResourceType, str | None, str | None]:
    """(resource, namespace, name) of /apis/metrics.k8s.io/v1beta1/... (404 for anything else)."""
    rest = segs[3:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] == "pods":
        namespace, rest = rest[1], rest[2:]
    if rest and rest[0] in ("nodes", "pods") and len(rest) <= 2:
        rt = NODES if rest[0] == "nodes" else PODS
        if not (rt is NODES and namespace is not None) and not (rt is PODS and namespace is None and len(rest) == 2):
            return rt, namespace, rest[1] if len(rest) == 2 else None
    raise ApiError(404, "the server could not find the requested resource", "NotFound", {})


def serve(request: web.Request, metrics: Metrics, rt: ResourceType, namespace: str | None,
          name: str | None) -> web.StreamResponse:
    if request.method != "GET" or request.query.get("watch") in ("true", "1"):
        raise ApiError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed",
                       {})
    items = metrics.node_metrics() if rt is NODES else metrics.pod_metrics(namespace)
    if name is not None:
        for obj in items:
            if obj["metadata"]["name"] == name:
                return json_response(obj)
        shown = name if rt is NODES else f"{namespace}/{name}"
        raise ApiError(404, f'{rt.singular}.{GROUP} "{shown}" not found', "NotFound",
                       {"name": shown, "group": GROUP, "kind": rt.plural})
    q = request.query
    pred = combine(label_selector(q.get("labelSelector")), field_selector(q.get("fieldSelector"), rt))
    if pred is not None:
        items = [o for o in items if pred(o)]
    items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
    return json_response({"kind": f"{rt.kind}List", "apiVersion": API_VERSION,
                          "metadata": {"resourceVersion": ""}, "items": items})
