"""Events through field-selected list+watch: one object's recent events, and the latest FailedScheduling per pod."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console.kube.cache import ResourceCache
from console.kube.codec import JsonCodec
from console.kube.rest import Lister


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


# core/v1 Event field selectors the API server supports (k8s pkg/apis/core/v1/conversion.go, Event field label
# conversion; pkg/registry/core/event/strategy.go ToSelectableFields): involvedObject.{kind,namespace,name,uid,
# apiVersion,resourceVersion,fieldPath}, reason, reportingComponent, source, type, metadata.{name,namespace}
SCHEDULING_SELECTOR = "involvedObject.kind=Pod,reason=FailedScheduling"


def object_selector(kind: str, name: str, namespace: str = "") -> str:
    """The fieldSelector of one object's events (what `kubectl describe` asks for)."""
    sel = f"involvedObject.kind={kind},involvedObject.name={name}"
    return f"{sel},involvedObject.namespace={namespace}" if namespace else sel


class EventWatch:
    """The events one fieldSelector selects, kept current by list+watch: the API server filters them, so only
    what a screen shows crosses the wire and stays in memory."""

    def __init__(self, api_client: Any, field_selector: str, name: str = "events") -> None:
        # straight to /api/v1/events (console/kube/rest.py): CoreV1Api is not imported for it
        self.field_selector = field_selector
        self.cache: ResourceCache[EventInfo] = ResourceCache(
            Lister(api_client, "/api/v1/events"), JsonCodec(EventInfo.from_api), name=name,
            field_selector=field_selector)
        self._stop = threading.Event()
        self._name = name

    def start(self) -> EventWatch:
        threading.Thread(target=self.cache.run, args=(self._stop,), name=f"watch-{self._name}", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def recent(self, limit: int = 20) -> list[EventInfo]:
        """Newest first."""
        return sorted(self.cache.snapshot().values(), key=_order, reverse=True)[:limit]


class Events:
    """The events the screens show, each through its own field-selected watch: pods' FailedScheduling for the
    session (the Pending screen's reasons), and one object's events while a screen shows them (`watch_object`)."""

    def __init__(self, api_client: Any) -> None:
        self._api = api_client
        self.scheduling = EventWatch(api_client, SCHEDULING_SELECTOR, "events-scheduling")
        self.cache = self.scheduling.cache
        self._open: list[EventWatch] = []

    def start(self) -> None:
        self.scheduling.start()

    def stop(self) -> None:
        self.scheduling.stop()
        for w in self._open:
            w.stop()
        self._open.clear()

    def watch_object(self, kind: str, name: str, namespace: str = "") -> EventWatch:
        """A started watch of one object's events; the caller stops it when its screen closes."""
        w = EventWatch(self._api, object_selector(kind, name, namespace), f"events-{kind.lower()}").start()
        self._open = [o for o in self._open if not o.stopped] + [w]
        return w

    def failed_scheduling(self) -> dict[tuple[str, str], EventInfo]:
        """The latest FailedScheduling event per (namespace, pod)."""
        out: dict[tuple[str, str], EventInfo] = {}
        for e in self.scheduling.cache.snapshot().values():
            key = (e.object_namespace or e.namespace, e.object_name)
            cur = out.get(key)
            if cur is None or _order(e) >= _order(cur):
                out[key] = e
        return out


def read_failed_scheduling(api_client: Any) -> tuple[dict[tuple[str, str], EventInfo], str]:
    """The latest FailedScheduling event per pod, listed once (headless: `get pending`, `plan`), or why none is known:
    a user who may not list events (403) still gets the rest, with that said."""
    from kubernetes.client.exceptions import ApiException

    from console.faults import redact, status_message

    events = Events(api_client)
    try:
        events.scheduling.cache.relist()
    except ApiException as e:
        if e.status != 403:
            raise
        return {}, (f"cannot list events: {redact(status_message(e)) or 'forbidden'} (403 Forbidden): the "
                    "scheduler's FailedScheduling reasons are not shown")
    return events.failed_scheduling(), ""
