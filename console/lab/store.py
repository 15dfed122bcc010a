"""The lab's in-memory Kubernetes object store.

Thread-safe: the HTTP server (asyncio) and the simulators (kubelet, scheduler,
NFD, node exec) share one store. Objects are plain dicts in API shape.

Objects handed out are the stored ones, not copies (150,000 pods must list
fast): treat them as read-only. Writes replace the stored dict; use
`mutate()` for read-modify-write.
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import itertools
import threading
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from console.lab.resources import CRD_RESOURCE, RESOURCES, ResourceType

Obj = dict[str, Any]
Predicate = Callable[[Obj], bool]

# Watch events kept for resuming a watch from an older resourceVersion;
# older than that gets 410 Gone, as from a compacted etcd.
HISTORY = 20_000


class StoreError(Exception):
    """Base error; `code`/`reason` map onto a Kubernetes Status body."""

    code = 500
    reason = "InternalError"


class NotFound(StoreError):
    code = 404
    reason = "NotFound"


class AlreadyExists(StoreError):
    code = 409
    reason = "AlreadyExists"


class Conflict(StoreError):
    code = 409
    reason = "Conflict"


class Gone(StoreError):
    code = 410
    reason = "Expired"


class Invalid(StoreError):
    code = 422
    reason = "Invalid"


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED
    resource: str
    object: Obj
    rv: int
    old: Obj | None = None  # the previous object of a MODIFIED event (selector-aware watches)


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _meta(obj: Obj) -> Obj:
    return obj.setdefault("metadata", {})


class Store:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._rv = itertools.count(1)
        self._last_rv = 0
        self._objects: dict[str, dict[tuple[str, str], Obj]] = {k: {} for k in RESOURCES}
        self._history: deque[WatchEvent] = deque(maxlen=HISTORY)
        self.compacted = 0  # revisions up to this one are compacted away (compact())
        self._subscribers: dict[int, tuple[str, str | None, Callable[[WatchEvent], object]]] = {}
        self._sub_ids = itertools.count(1)
        # pods by spec.nodeName: the kubelet, scheduler and UI join through it
        self._pods_by_node: dict[str, dict[tuple[str, str], Obj]] = {}

    # -- helpers --------------------------------------------------------
    @staticmethod
    def rtype(resource: str) -> ResourceType:
        try:
            return RESOURCES[resource]
        except KeyError:
            raise NotFound(f"the server could not find the requested resource ({resource})") from None

    def served(self, rt: ResourceType) -> bool:
        """Whether the API server serves `rt`: built-in kinds always, custom ones while their CRD exists."""
        return not rt.custom or ("", rt.key) in self._objects[CRD_RESOURCE]

    def _key(self, resource: str, namespace: str | None, name: str) -> tuple[str, str]:
        rt = self.rtype(resource)
        return ((namespace or "default") if rt.namespaced else "", name)

    @property
    def resource_version(self) -> int:
        return self._last_rv

    def _next_rv(self) -> int:
        self._last_rv = next(self._rv)
        return self._last_rv

    def _emit(self, ev: WatchEvent) -> None:
        self._history.append(ev)
        ns = ev.object.get("metadata", {}).get("namespace")
        for resource, want_ns, cb in list(self._subscribers.values()):
            if resource == ev.resource and (want_ns is None or want_ns == ns):
                cb(ev)

    def _index(self, resource: str, key: tuple[str, str], old: Obj | None, new: Obj | None) -> None:
        if resource != "pods":
            return
        old_node = (old or {}).get("spec", {}).get("nodeName")
        new_node = (new or {}).get("spec", {}).get("nodeName")
        if old_node and old_node != new_node:
            self._pods_by_node.get(old_node, {}).pop(key, None)
        if new_node and new is not None:
            self._pods_by_node.setdefault(new_node, {})[key] = new

    def _kind_fields(self, rt: ResourceType, obj: Obj) -> None:
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind

    # -- reads ----------------------------------------------------------
    def get(self, resource: str, namespace: str | None, name: str) -> Obj:
        with self._lock:
            key = self._key(resource, namespace, name)
            try:
                return self._objects[resource][key]
            except KeyError:
                rt = self.rtype(resource)
                group = f".{rt.group}" if rt.group else ""
                raise NotFound(f'{rt.plural}{group} "{name}" not found') from None

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        predicate: Predicate | None = None,
    ) -> tuple[list[Obj], int]:
        """Matching objects sorted by (namespace, name), and the list's resourceVersion."""
        with self._lock:
            self.rtype(resource)
            items: Iterable[tuple[tuple[str, str], Obj]] = self._objects[resource].items()
            out = [
                o
                for (ns, _), o in items
                if (namespace is None or ns == namespace) and (predicate is None or predicate(o))
            ]
            rv = self._last_rv
        out.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return out, rv

    def pods_on_node(self, node: str) -> builtins.list[Obj]:
        with self._lock:
            return list(self._pods_by_node.get(node, {}).values())

    # -- writes ---------------------------------------------------------
    def create(self, resource: str, obj: Obj) -> Obj:
        rt = self.rtype(resource)
        obj = copy.deepcopy(obj)
        meta = _meta(obj)
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise Invalid(f"{rt.kind} is invalid: metadata.name: Required value: name or generateName is required")
            meta["name"] = prefix + uuid.uuid4().hex[:5]
        if rt.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        with self._lock:
            key = self._key(resource, meta.get("namespace"), meta["name"])
            if key in self._objects[resource]:
                group = f".{rt.group}" if rt.group else ""
                raise AlreadyExists(f'{rt.plural}{group} "{meta["name"]}" already exists')
            if rt.namespaced and resource != "events" and ("", meta["namespace"]) not in self._objects["namespaces"]:
                raise NotFound(f'namespaces "{meta["namespace"]}" not found')
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now_iso())
            meta["generation"] = 1
            rv = self._next_rv()
            meta["resourceVersion"] = str(rv)
            self._kind_fields(rt, obj)
            self._objects[resource][key] = obj
            self._index(resource, key, None, obj)
            self._emit(WatchEvent("ADDED", resource, obj, rv))
            return obj

    def bulk_load(self, resource: str, objs: Iterable[Obj]) -> int:
        """Seed many fresh objects (taken over, not copied) without watch events.

        For starting big worlds: 150,000 pods through create() would deep-copy
        and notify each one. Returns the number loaded.
        """
        rt = self.rtype(resource)
        created = now_iso()
        n = 0
        with self._lock:
            table = self._objects[resource]
            for obj in objs:
                meta = obj["metadata"]
                if rt.namespaced:
                    meta.setdefault("namespace", "default")
                key = self._key(resource, meta.get("namespace"), meta["name"])
                if key in table:
                    raise AlreadyExists(f'{rt.plural} "{meta["name"]}" already exists')
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("creationTimestamp", created)
                meta["generation"] = 1
                meta["resourceVersion"] = str(self._next_rv())
                self._kind_fields(rt, obj)
                table[key] = obj
                self._index(resource, key, None, obj)
                n += 1
        return n

    def update(self, resource: str, obj: Obj, *, check_rv: bool = True) -> Obj:
        """Replace an object. With `check_rv`, a stale metadata.resourceVersion is a Conflict."""
        rt = self.rtype(resource)
        obj = copy.deepcopy(obj)
        meta = _meta(obj)
        with self._lock:
            key = self._key(resource, meta.get("namespace"), meta.get("name", ""))
            current = self.get(resource, meta.get("namespace"), meta.get("name", ""))
            cur_meta = current["metadata"]
            sent_rv = meta.get("resourceVersion")
            if check_rv and sent_rv and sent_rv != cur_meta["resourceVersion"]:
                group = f".{rt.group}" if rt.group else ""
                raise Conflict(
                    f'Operation cannot be fulfilled on {rt.plural}{group} "{cur_meta["name"]}": '
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again"
                )
            for immutable in ("uid", "creationTimestamp", "name"):
                meta[immutable] = cur_meta[immutable]
            if rt.namespaced:
                meta["namespace"] = cur_meta["namespace"]
            else:
                meta.pop("namespace", None)
            if obj.get("spec") != current.get("spec"):
                meta["generation"] = cur_meta.get("generation", 1) + 1
            else:
                meta["generation"] = cur_meta.get("generation", 1)
            self._kind_fields(rt, obj)
            if self._same(current, obj):
                return current  # a no-op write keeps its resourceVersion, as the API server does
            rv = self._next_rv()
            meta["resourceVersion"] = str(rv)
            self._objects[resource][key] = obj
            self._index(resource, key, current, obj)
            self._emit(WatchEvent("MODIFIED", resource, obj, rv, current))
            return obj

    @staticmethod
    def _same(a: Obj, b: Obj) -> bool:
        strip = ("resourceVersion",)
        am = {k: v for k, v in a.get("metadata", {}).items() if k not in strip}
        bm = {k: v for k, v in b.get("metadata", {}).items() if k not in strip}
        return am == bm and {k: v for k, v in a.items() if k != "metadata"} == {
            k: v for k, v in b.items() if k != "metadata"
        }

    def mutate(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        fn: Callable[[Obj], Obj | None],
        *,
        expect_rv: str | None = None,
    ) -> Obj:
        """Read-modify-write under the lock: `fn` edits a deep copy (or returns a new object)."""
        with self._lock:
            current = self.get(resource, namespace, name)
            if expect_rv is not None and expect_rv != current["metadata"]["resourceVersion"]:
                rt = self.rtype(resource)
                raise Conflict(
                    f'Operation cannot be fulfilled on {rt.plural} "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again"
                )
            draft = copy.deepcopy(current)
            result = fn(draft)
            new = result if result is not None else draft
            new.setdefault("metadata", {})["resourceVersion"] = current["metadata"]["resourceVersion"]
            return self.update(resource, new)

    def delete(self, resource: str, namespace: str | None, name: str) -> Obj:
        with self._lock:
            obj = self.get(resource, namespace, name)
            key = self._key(resource, namespace, name)
            del self._objects[resource][key]
            self._index(resource, key, obj, None)
            rv = self._next_rv()
            gone = copy.deepcopy(obj)
            gone["metadata"]["resourceVersion"] = str(rv)
            self._emit(WatchEvent("DELETED", resource, gone, rv))
            return gone

    # -- watch ----------------------------------------------------------
    def subscribe(
        self,
        resource: str,
        callback: Callable[[WatchEvent], object],
        *,
        namespace: str | None = None,
        since_rv: int | None = None,
    ) -> Callable[[], None]:
        """Call `callback` for each later event (after replaying events newer than `since_rv`).

        The callback runs under the store lock: it must only enqueue. Returns an
        unsubscribe function. Raises Gone when `since_rv` is older than the
        retained history.
        """
        self.rtype(resource)
        with self._lock:
            if since_rv is not None and since_rv < self.compacted:
                raise Gone(f"too old resource version: {since_rv} ({self.compacted})")
            if since_rv is not None and since_rv < self._last_rv:
                oldest = self._history[0].rv if self._history else self._last_rv + 1
                if since_rv < oldest - 1:
                    raise Gone(f"too old resource version: {since_rv} ({oldest - 1})")
                for ev in self._history:
                    if ev.rv > since_rv and ev.resource == resource and (
                        namespace is None or ev.object["metadata"].get("namespace") == namespace
                    ):
                        callback(ev)
            sid = next(self._sub_ids)
            self._subscribers[sid] = (resource, namespace, callback)

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers.pop(sid, None)

        return unsubscribe

    def compact(self, rv: int) -> None:
        """Forget the history up to revision `rv`, as etcd compaction does: a watch from before it is Gone."""
        with self._lock:
            self.compacted = max(self.compacted, min(rv, self._last_rv))
            while self._history and self._history[0].rv <= self.compacted:
                self._history.popleft()

    async def watch(
        self,
        resource: str,
        *,
        namespace: str | None = None,
        since_rv: int | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """Async iterator of events for one resource, for use on an asyncio loop."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[WatchEvent] = asyncio.Queue()
        unsubscribe = self.subscribe(
            resource,
            lambda ev: loop.call_soon_threadsafe(queue.put_nowait, ev),
            namespace=namespace,
            since_rv=since_rv,
        )
        try:
            while True:
                yield await queue.get()
        finally:
            unsubscribe()
