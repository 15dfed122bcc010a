"""Domain views of Kubernetes objects: only the fields the console shows or plans with.

Built from raw API dicts (the JSON the server sent), so library types never
leave `kube/` and big lists skip the client's slow model deserialisation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

ROLE_PREFIX = "node-role.kubernetes.io/"


def cpu_millis(q: str | int | None) -> int:
    """A CPU quantity ("2", "500m") in millicores; absent counts as 0."""
    return int(parse_quantity(q) * 1000) if q not in (None, "") else 0


def mem_bytes(q: str | int | None) -> int:
    return int(parse_quantity(q)) if q not in (None, "") else 0


@dataclass(frozen=True)
class Resources:
    cpu_m: int = 0
    memory: int = 0  # bytes
    pods: int = 0

    @classmethod
    def from_map(cls, m: dict[str, Any] | None) -> Resources:
        m = m or {}
        return cls(cpu_millis(m.get("cpu")), mem_bytes(m.get("memory")), int(parse_quantity(m.get("pods") or 0)))


@dataclass(frozen=True)
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


def _sum_requests(containers: list[dict[str, Any]]) -> tuple[int, int]:
    cpu = mem = 0
    for c in containers:
        req = (c.get("resources") or {}).get("requests") or {}
        cpu += cpu_millis(req.get("cpu"))
        mem += mem_bytes(req.get("memory"))
    return cpu, mem


@dataclass(frozen=True)
class PodInfo:
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
        cpu, mem = _sum_requests(spec.get("containers") or [])
        # init containers run first and alone: the pod needs the larger of the two
        icpu, imem = 0, 0
        for c in spec.get("initContainers") or []:
            c_cpu, c_mem = _sum_requests([c])
            icpu, imem = max(icpu, c_cpu), max(imem, c_mem)
        return cls(
            namespace=meta.get("namespace", ""),
            name=meta["name"],
            node=spec.get("nodeName") or "",
            phase=(obj.get("status") or {}).get("phase", "Pending"),
            requests=Resources(max(cpu, icpu), max(mem, imem), 1),
        )


def fmt_cpu(millis: int) -> str:
    return f"{millis // 1000}" if millis % 1000 == 0 else f"{Decimal(millis) / 1000:.1f}"


def fmt_mem(n: int) -> str:
    gib = n / 2**30
    return f"{gib:.1f}Gi" if gib >= 1 else f"{n / 2**20:.0f}Mi"
