"""Domain views of Kubernetes objects: only the fields the console shows or plans with.

Built from raw API dicts (the JSON the server sent), so library types never
leave `kube/` and big lists skip the client's slow model deserialisation.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any

import msgspec
from kubernetes.utils import parse_quantity

ROLE_PREFIX = "node-role.kubernetes.io/"
Quantity = str | int | float | None


# a cluster repeats a handful of quantities ("100m", "128Mi") across 150,000 pods: parse each once
@lru_cache(maxsize=4096)
def cpu_millis(q: Quantity) -> int:
    """A CPU quantity ("2", "500m") in millicores; absent counts as 0."""
    return int(parse_quantity(q) * 1000) if q not in (None, "") else 0


@lru_cache(maxsize=4096)
def mem_bytes(q: Quantity) -> int:
    return int(parse_quantity(q)) if q not in (None, "") else 0


@lru_cache(maxsize=256)
def _count(q: Quantity) -> int:
    return int(parse_quantity(q or 0))


def intern(s: str) -> str:
    """One string object for the values every pod repeats (namespace, node name, phase)."""
    return sys.intern(s) if s.__class__ is str else s


class Resources(msgspec.Struct, frozen=True, gc=False):
    """Immutable, without cycles: shared between pods with the same requests, and skipped by the GC."""

    cpu_m: int = 0
    memory: int = 0  # bytes
    pods: int = 0

    @classmethod
    def of(cls, cpu: Quantity, memory: Quantity, pods: Quantity = None) -> Resources:
        return cls(cpu_millis(cpu), mem_bytes(memory), _count(pods))

    @classmethod
    def from_map(cls, m: dict[str, Any] | None) -> Resources:
        m = m or {}
        return cls.of(m.get("cpu"), m.get("memory"), m.get("pods"))


@lru_cache(maxsize=4096)
def _pod_resources(cpu_m: int, memory: int) -> Resources:
    return Resources(cpu_m, memory, 1)


def pod_requests(
    containers: Iterable[tuple[Quantity, Quantity]],
    init_containers: Iterable[tuple[Quantity, Quantity, bool]] = (),
    overhead: tuple[Quantity, Quantity] = (None, None),
) -> Resources:
    """A pod's effective CPU/memory request, as the scheduler and `kubectl describe node` count it.

    k8s.io/component-helpers/resource/helpers.go AggregateContainerRequests (and the docs' "Resource sharing
    within containers", kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/): app containers
    sum; init containers run one at a time, so the largest counts; a sidecar (init container with
    restartPolicy Always) keeps running, so it adds to the sum and to every later init container; then
    the RuntimeClass overhead (spec.overhead) is added. `containers` are (cpu, memory) request quantities,
    `init_containers` (cpu, memory, is_sidecar) in order.
    """
    cpu = mem = 0
    for c, m in containers:
        cpu += cpu_millis(c)
        mem += mem_bytes(m)
    if not init_containers and overhead == (None, None):
        return _pod_resources(cpu, mem)
    side_cpu = side_mem = init_cpu = init_mem = 0
    for c, m, sidecar in init_containers:
        c_m, m_b = cpu_millis(c), mem_bytes(m)
        if sidecar:
            cpu, mem = cpu + c_m, mem + m_b
            side_cpu, side_mem = side_cpu + c_m, side_mem + m_b
            c_m, m_b = side_cpu, side_mem
        else:
            c_m, m_b = c_m + side_cpu, m_b + side_mem
        init_cpu, init_mem = max(init_cpu, c_m), max(init_mem, m_b)
    return _pod_resources(max(cpu, init_cpu) + cpu_millis(overhead[0]), max(mem, init_mem) + mem_bytes(overhead[1]))


@dataclass(frozen=True, slots=True)
class NodeInfo:
    name: str
    uid: str
    resource_version: str
    labels: dict[str, str]
    roles: tuple[str, ...]
    ready: str  # "True" | "False" | "Unknown"
    unschedulable: bool
    capacity: Resources
    allocatable: Resources
    kubelet_version: str
    system_uuid: str
    provider_id: str
    taints: tuple[dict[str, str], ...] = ()
    annotations: dict[str, str] = field(default_factory=dict)
    conditions: tuple[tuple[str, str, str], ...] = ()  # (type, status, reason) as the kubelet posted them

    @property
    def status(self) -> str:
        state = {"True": "Ready", "False": "NotReady"}.get(self.ready, "Unknown")
        return f"{state},SchedulingDisabled" if self.unschedulable else state

    @classmethod
    def from_api(cls, obj: dict[str, Any]) -> NodeInfo:
        meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
        labels = meta.get("labels") or {}
        roles = tuple(sorted(k[len(ROLE_PREFIX):] for k in labels if k.startswith(ROLE_PREFIX)))
        ready = next(
            (c.get("status", "Unknown") for c in status.get("conditions") or [] if c.get("type") == "Ready"),
            "Unknown",
        )
        info = status.get("nodeInfo") or {}
        return cls(
            name=meta["name"],
            uid=meta.get("uid", ""),
            resource_version=meta.get("resourceVersion", ""),
            labels=labels,
            roles=roles,
            ready=ready,
            unschedulable=bool(spec.get("unschedulable")),
            capacity=Resources.from_map(status.get("capacity")),
            allocatable=Resources.from_map(status.get("allocatable")),
            kubelet_version=info.get("kubeletVersion", ""),
            system_uuid=info.get("systemUUID", ""),
            provider_id=spec.get("providerID", ""),
            taints=tuple(spec.get("taints") or ()),
            annotations=meta.get("annotations") or {},
            conditions=tuple(
                (c.get("type", ""), c.get("status", ""), c.get("reason", "")) for c in status.get("conditions") or ()
            ),
        )


def _requests(c: dict[str, Any]) -> dict[str, Any]:
    return (c.get("resources") or {}).get("requests") or {}


class PodInfo(msgspec.Struct, frozen=True, gc=False):
    """One pod as the console counts it; a Struct without GC tracking, since a cluster holds 150,000."""

    namespace: str
    name: str
    node: str
    phase: str
    requests: Resources

    @property
    def terminated(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @classmethod
    def from_api(cls, obj: dict[str, Any]) -> PodInfo:
        meta, spec = obj["metadata"], obj.get("spec") or {}
        overhead = spec.get("overhead") or {}
        requests = pod_requests(
            [((r := _requests(c)).get("cpu"), r.get("memory")) for c in spec.get("containers") or ()],
            [((r := _requests(c)).get("cpu"), r.get("memory"), c.get("restartPolicy") == "Always")
             for c in spec.get("initContainers") or ()],
            (overhead.get("cpu"), overhead.get("memory")),
        )
        return cls(
            namespace=intern(meta.get("namespace") or ""),
            name=meta["name"],
            node=intern(spec.get("nodeName") or ""),
            phase=intern((obj.get("status") or {}).get("phase", "Pending")),
            requests=requests,
        )


def fmt_cpu(millis: int) -> str:
    return f"{millis // 1000}" if millis % 1000 == 0 else f"{Decimal(millis) / 1000:.1f}"


def fmt_mem(n: int) -> str:
    gib = n / 2**30
    return f"{gib:.1f}Gi" if gib >= 1 else f"{n / 2**20:.0f}Mi"
