"""Server-side `Table` rendering (what `kubectl get` asks for with as=Table).

Columns and cell text follow the API server's printers for the built-in types;
custom resources get NAME and AGE like a CRD without printer columns.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from console.lab.kubeapi import apps

Obj = dict[str, Any]


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rem = s % 60
        return f"{minutes}m" if rem == 0 else f"{minutes}m{rem}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rem = minutes % 60
        return f"{hours}h" if rem == 0 else f"{hours}h{rem}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rem = hours % 24
        return f"{hours // 24}d" if rem == 0 else f"{hours // 24}d{rem}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def _age(ts: str | None, now: datetime) -> str:
    if not ts:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(ts)
    except ValueError:
        return "<unknown>"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return human_duration((now - then).total_seconds())


def _col(name: str, typ: str = "string", fmt: str = "", priority: int = 0, desc: str = "") -> Obj:
    return {"name": name, "type": typ, "format": fmt, "description": desc or name, "priority": priority}


_NAME = _col("Name", fmt="name", desc="Name must be unique within a namespace.")
_AGE = _col("Age", desc="CreationTimestamp is a timestamp representing the server time when this object was created.")


# -- nodes --------------------------------------------------------------------
def _node_roles(labels: dict[str, str]) -> str:
    roles = set()
    for k, v in labels.items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k[len("node-role.kubernetes.io/"):]
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    return ",".join(sorted(roles)) if roles else "<none>"


def _node_row(o: Obj, now: datetime) -> list[Any]:
    status = o.get("status", {})
    states = []
    for c in status.get("conditions") or []:
        if c.get("type") == "Ready":
            states.append("Ready" if c.get("status") == "True" else "NotReady")
    if not states:
        states.append("Unknown")
    if o.get("spec", {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    addrs = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    info = status.get("nodeInfo", {})
    return [
        o["metadata"]["name"],
        ",".join(states),
        _node_roles(o["metadata"].get("labels") or {}),
        _age(o["metadata"].get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        addrs.get("InternalIP") or "<none>",
        addrs.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


_NODE_COLS = [
    _NAME,
    _col("Status", desc="The status of the node"),
    _col("Roles", desc="The roles of the node"),
    _AGE,
    _col("Version", desc="Kubelet Version reported by the node."),
    _col("Internal-IP", priority=1, desc="List of internal IPs."),
    _col("External-IP", priority=1, desc="List of external IPs."),
    _col("OS-Image", priority=1, desc="OS Image reported by the node from /etc/os-release."),
    _col("Kernel-Version", priority=1, desc="Kernel Version reported by the node."),
    _col("Container-Runtime", priority=1, desc="Container Runtime Version reported by the node."),
]


# -- pods ---------------------------------------------------------------------
def _pod_row(o: Obj, now: datetime) -> list[Any]:
    spec, status, meta = o.get("spec", {}), o.get("status", {}), o["metadata"]
    reason = status.get("reason") or status.get("phase") or ""
    for c in status.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    restarts, ready, running = 0, 0, False
    last_restart: str | None = None
    init_statuses = status.get("initContainerStatuses") or []
    initializing = False
    for i, cs in enumerate(init_statuses):
        restarts += cs.get("restartCount", 0)
        state = cs.get("state", {})
        term = state.get("terminated")
        if term and term.get("exitCode") == 0:
            continue
        initializing = True
        if term:
            reason = "Init:" + (term.get("reason") or f"ExitCode:{term.get('exitCode')}")
        elif state.get("waiting", {}).get("reason") not in (None, "", "PodInitializing"):
            reason = "Init:" + state["waiting"]["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        break
    if not initializing:
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += cs.get("restartCount", 0)
            finished = cs.get("lastState", {}).get("terminated", {}).get("finishedAt")
            if finished and (last_restart is None or finished > last_restart):
                last_restart = finished
            state = cs.get("state", {})
            if state.get("waiting", {}).get("reason"):
                reason = state["waiting"]["reason"]
            elif state.get("terminated", {}).get("reason"):
                reason = state["terminated"]["reason"]
            elif "terminated" in state:
                term = state["terminated"]
                reason = f"Signal:{term['signal']}" if term.get("signal") else f"ExitCode:{term.get('exitCode')}"
            elif cs.get("ready") and "running" in state:
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running"
    if meta.get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    restart_text = str(restarts)
    if restarts and last_restart:
        restart_text = f"{restarts} ({_age(last_restart, now)} ago)"
    gates = spec.get("readinessGates") or []
    return [
        meta["name"],
        f"{ready}/{len(spec.get('containers') or [])}",
        reason,
        restart_text,
        _age(meta.get("creationTimestamp"), now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"{len(gates)}/{len(gates)}" if gates else "<none>",
    ]


_POD_COLS = [
    _NAME,
    _col("Ready", desc="The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", desc="The aggregate status of the containers in this pod."),
    _col("Restarts", desc="The number of times the containers in this pod have been restarted and when the "
         "last container in this pod has restarted."),
    _AGE,
    _col("IP", priority=1, desc="IP address allocated to the pod. Routable at least within the cluster."),
    _col("Node", priority=1, desc="NodeName is a request to schedule this pod onto a specific node."),
    _col("Nominated Node", priority=1, desc="nominatedNodeName is set only when this pod preempts other pods."),
    _col("Readiness Gates", priority=1, desc="If specified, all readiness gates will be evaluated for pod "
         "readiness."),
]


# -- events, namespaces, configmaps, default --------------------------------------
def _event_row(o: Obj, now: datetime) -> list[Any]:
    inv = o.get("involvedObject", {})
    src = o.get("source", {})
    source = src.get("component", "") or o.get("reportingComponent", "")
    if src.get("host"):
        source = f"{source}, {src['host']}"
    last = o.get("lastTimestamp") or o.get("eventTime") or o["metadata"].get("creationTimestamp")
    first = o.get("firstTimestamp") or o.get("eventTime") or o["metadata"].get("creationTimestamp")
    return [
        _age(last, now),
        o.get("type", ""),
        o.get("reason", ""),
        f"{inv.get('kind', '').lower()}/{inv.get('name', '')}",
        inv.get("fieldPath", ""),
        source,
        (o.get("message") or "").strip(),
        _age(first, now),
        o.get("count", 1),
        o["metadata"]["name"],
    ]


_EVENT_COLS = [
    _col("Last Seen", desc="Time when this Event was last observed."),
    _col("Type", desc="Type of this event (Normal, Warning), new types could be added in the future"),
    _col("Reason", desc="This should be a short, machine understandable string that gives the reason for the "
         "transition into the object's current status."),
    _col("Object", desc="The object that this event is about."),
    _col("Subobject", priority=1, desc="The subobject that this event is about."),
    _col("Source", priority=1, desc="The component reporting this event."),
    _col("Message", desc="A human-readable description of the status of this operation."),
    _col("First Seen", priority=1, desc="The time at which the event was first recorded."),
    _col("Count", "integer", priority=1, desc="The number of times this event has occurred."),
    {**_NAME, "priority": 1},
]

RowFn = Callable[[Obj, datetime], list[Any]]

_TABLES: dict[str, tuple[list[Obj], RowFn]] = {
    "nodes": (_NODE_COLS, _node_row),
    "pods": (_POD_COLS, _pod_row),
    "events": (_EVENT_COLS, _event_row),
    "namespaces": (
        [_NAME, _col("Status", desc="The status of the namespace"), _AGE],
        lambda o, now: [o["metadata"]["name"], o.get("status", {}).get("phase", ""),
                        _age(o["metadata"].get("creationTimestamp"), now)],
    ),
    "configmaps": (
        [_NAME, _col("Data", "integer", desc="Data contains the configuration data."), _AGE],
        lambda o, now: [o["metadata"]["name"], len(o.get("data") or {}) + len(o.get("binaryData") or {}),
                        _age(o["metadata"].get("creationTimestamp"), now)],
    ),
}
# kubernetes pkg/printers/internalversion/printers.go leaseColumnDefinitions
_TABLES["leases.coordination.k8s.io"] = (
    [_NAME, _col("Holder", desc="The holder of the lease"), _AGE],
    lambda o, now: [o["metadata"]["name"], (o.get("spec") or {}).get("holderIdentity") or "",
                    _age(o["metadata"].get("creationTimestamp"), now)],
)
_TABLES.update(apps.tables(_col, _NAME, _AGE, _age))
_DEFAULT: tuple[list[Obj], RowFn] = (
    [_NAME, _AGE],
    lambda o, now: [o["metadata"]["name"], _age(o["metadata"].get("creationTimestamp"), now)],
)


def table(
    resource: str,
    items: list[Obj],
    *,
    table_version: str = "v1",
    include_object: str = "Metadata",
    list_meta: Obj | None = None,
    headers: bool = True,
) -> Obj:
    """A meta.k8s.io Table of `items`; rows carry PartialObjectMetadata unless told otherwise."""
    cols, row_fn = _TABLES.get(resource, _DEFAULT)
    now = datetime.now(UTC)
    api_version = f"meta.k8s.io/{table_version}"
    rows = []
    for o in items:
        row: Obj = {"cells": row_fn(o, now)}
        if include_object == "Object":
            row["object"] = o
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": o["metadata"]}
        rows.append(row)
    out: Obj = {"kind": "Table", "apiVersion": api_version, "metadata": list_meta or {}}
    if headers:
        out["columnDefinitions"] = cols
    out["rows"] = rows
    return out
