"""core/v1 Events for the lab's simulators, aggregated as client-go's recorder does.

A repeated (involvedObject, type, reason, message, source) bumps `count` and
`lastTimestamp` on the existing Event instead of creating a new one, so a pod
that fails scheduling every few seconds shows `3x over 10s`, not a flood.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

from console.lab.apistore import ApiStore
from console.lab.store import NotFound, Obj, now_iso

# client-go keeps 4096 entries in its aggregation cache
_CACHE_SIZE = 4096


def object_ref(obj: Obj) -> dict[str, Any]:
    """An ObjectReference to a stored object (Pod, Node, ...)."""
    meta = obj.get("metadata", {})
    ref: dict[str, Any] = {
        "kind": obj.get("kind", ""),
        "name": meta.get("name", ""),
        "apiVersion": obj.get("apiVersion", "v1"),
    }
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    if meta.get("resourceVersion"):
        ref["resourceVersion"] = meta["resourceVersion"]
    return ref


def node_ref(node_name: str) -> dict[str, Any]:
    """The kubelet's reference to its node: UID is the node name (kubelet.go nodeRef)."""
    return {"kind": "Node", "name": node_name, "uid": node_name, "apiVersion": "v1"}


class EventRecorder:
    """Records Events for one component (`kubelet` on a host, `default-scheduler`)."""

    def __init__(self, store: ApiStore, component: str, host: str | None = None) -> None:
        self.store = store
        self.component = component
        self.host = host
        self._lock = threading.Lock()
        self._seen: OrderedDict[tuple[Any, ...], tuple[str, str]] = OrderedDict()

    def event(
        self,
        involved: dict[str, Any],
        type_: str,
        reason: str,
        message: str,
        *,
        host: str | None = None,
    ) -> Obj:
        """Create or aggregate an Event; `involved` is an ObjectReference (see object_ref)."""
        host = host if host is not None else self.host
        namespace = involved.get("namespace") or "default"
        key = (
            involved.get("kind"), namespace, involved.get("name"), involved.get("uid"),
            type_, reason, message, self.component, host,
        )
        stamp = now_iso()
        with self._lock:
            known = self._seen.get(key)
            if known is not None:
                self._seen.move_to_end(key)
                try:
                    return self.store.mutate("events", known[0], known[1], lambda ev: _bump(ev, stamp))
                except NotFound:
                    del self._seen[key]
            name = f"{involved.get('name', 'unknown')}.{time.time_ns():x}"
            source: dict[str, str] = {"component": self.component}
            if host:
                source["host"] = host
            ev: Obj = {
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": dict(involved),
                "reason": reason,
                "message": message,
                "type": type_,
                "source": source,
                "count": 1,
                "firstTimestamp": stamp,
                "lastTimestamp": stamp,
                "eventTime": None,
                "reportingComponent": self.component,
                "reportingInstance": host or "",
            }
            created = self.store.create("events", ev)
            self._seen[key] = (namespace, name)
            if len(self._seen) > _CACHE_SIZE:
                self._seen.popitem(last=False)
            return created


def _bump(ev: Obj, stamp: str) -> None:
    ev["count"] = int(ev.get("count") or 1) + 1
    ev["lastTimestamp"] = stamp
