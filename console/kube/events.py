"""Events, cached by list+watch: recent events per node and the latest FailedScheduling per pod."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console.kube.cache import ResourceCache
from console.kube.codec import JsonCodec


@dataclass(frozen=True)
class EventInfo:
    namespace: str
    kind: str  # of the involved object
    object_name: str
    object_namespace: str
    type: str
    reason: str
    message: str
    count: int
    last_seen: datetime | None

    @classmethod
    def from_api(cls, obj: dict[str, Any]) -> EventInfo:
        inv = obj.get("involvedObject") or obj.get("regarding") or {}
        stamp = obj.get("lastTimestamp") or obj.get("eventTime") or (obj.get("metadata") or {}).get("creationTimestamp")
        when = None
        if stamp:
            try:
                when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
            except ValueError:
                when = None
        return cls(
            namespace=(obj.get("metadata") or {}).get("namespace", ""),
            kind=inv.get("kind", ""),
            object_name=inv.get("name", ""),
            object_namespace=inv.get("namespace", "") or "",
            type=obj.get("type", ""),
            reason=obj.get("reason", ""),
            message=(obj.get("message") or obj.get("note") or "").strip(),
            count=int(obj.get("count") or 1),
            last_seen=when,
        )


def _order(e: EventInfo) -> float:
    return e.last_seen.timestamp() if e.last_seen else 0.0


class Events:
    """All events in the cluster (watched), with the two lookups the UI needs."""

    def __init__(self, list_fn: Any) -> None:
        """`list_fn`: the events collection's list/watch call (console/kube/lister.Lister for /api/v1/events)."""
        self.cache: ResourceCache[EventInfo] = ResourceCache(list_fn, JsonCodec(EventInfo.from_api))
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self.cache.run, args=(self._stop,), name="watch-events", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def for_object(self, kind: str, name: str, namespace: str = "", limit: int = 20) -> list[EventInfo]:
        evs = [
            e for e in self.cache.snapshot().values()
            if e.kind == kind and e.object_name == name and (not namespace or e.object_namespace == namespace)
        ]
        return sorted(evs, key=_order, reverse=True)[:limit]

    def failed_scheduling(self) -> dict[tuple[str, str], EventInfo]:
        """The latest FailedScheduling event per (namespace, pod)."""
        out: dict[tuple[str, str], EventInfo] = {}
        for e in self.cache.snapshot().values():
            if e.kind != "Pod" or e.reason != "FailedScheduling":
                continue
            key = (e.object_namespace or e.namespace, e.object_name)
            cur = out.get(key)
            if cur is None or _order(e) >= _order(cur):
                out[key] = e
        return out
