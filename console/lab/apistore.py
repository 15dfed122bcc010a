"""The lab's agents' view of the API server: reads from informers, writes at once.

Reads come from informers (a list, then a watch resumed from its resourceVersion, relisted after a 410, as
client-go's reflector does), one per resource, started on first use; writes go to the server at once and what
it answers is in the next read. Status is a subresource for nodes, pods and workloads: a write that changes it
goes to `/status` as well, as a kubelet's and a controller's do. Subscribers get the watch's events, in order,
on the informer's thread: they must only enqueue.
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import logging
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sized
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

import urllib3

from console.lab.kubeclient import ApiError, KubeClient
from console.lab.resources import CRD_RESOURCE, ResourceType, rtype
from console.lab.store import AlreadyExists, Conflict, Gone, Invalid, NotFound, StoreError, WatchEvent

log = logging.getLogger(__name__)
Obj = dict[str, Any]
Key = tuple[str, str]
Predicate = Callable[[Obj], bool]
HISTORY = 20_000
_CONFLICT_RETRIES = 8
BULK_WORKERS = 16  # bulk_load's requests in flight (KubeClient's pool keeps 32 connections: watches use some)
MERGE_PATCH = "application/merge-patch+json"
_ERRORS: dict[int, type[StoreError]] = {404: NotFound, 410: Gone, 422: Invalid}


def _error(e: ApiError) -> StoreError:
    if e.code == 409:
        return AlreadyExists(str(e)) if e.reason == "AlreadyExists" else Conflict(str(e))
    return _ERRORS.get(e.code, StoreError)(str(e))


def _rv(obj: Obj) -> int:
    return int(obj.get("metadata", {}).get("resourceVersion") or 0)


def _uid(obj: Obj | None) -> str:
    return str((obj or {}).get("metadata", {}).get("uid", ""))


def _key(obj: Obj) -> Key:
    meta = obj.get("metadata", {})
    return (meta.get("namespace") or "", meta["name"])


def path(rt: ResourceType, namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
    base = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
    if rt.namespaced and namespace:
        base += f"/namespaces/{namespace}"
    base += f"/{rt.plural}"
    if name:
        base += f"/{name}"
    return base + (f"/{sub}" if sub else "")


class _Watcher:
    """A list, then a watch resumed from its resourceVersion and listed again after a 410, as client-go's
    reflector does; subclasses say what a list and an event do."""

    rv: int
    resource: str
    stopping: threading.Event
    client: KubeClient
    rt: ResourceType

    def _list(self) -> None:
        raise NotImplementedError

    def _event(self, ev: Obj) -> None:
        """A watch event other than ERROR."""
        raise NotImplementedError

    def _run(self) -> None:
        backoff = 0.2
        while not self.stopping.is_set():
            try:
                if self.rv == 0:
                    self._list()
                for ev in self.client.watch(path(self.rt), {"resourceVersion": str(self.rv)}):
                    if self.stopping.is_set():
                        return
                    if ev["type"] == "ERROR":  # a Status; 410 Expired: list again (below)
                        st = ev["object"]
                        raise ApiError(int(st.get("code", 500)), str(st.get("reason", "")), str(st.get("message", "")))
                    self._event(ev)
                backoff = 0.2
            except ApiError as e:
                if e.code == 410:  # compacted, or a restarted server's cache starts later: list again
                    log.info("%s %s: %s; relisting", type(self).__name__, self.resource, e)
                    self.rv = 0
                    continue
                if e.code == 404 and self.rt.custom:  # its CRD is gone, or not served yet: list again, later
                    self.rv = 0
                log.debug("%s %s: %s", type(self).__name__, self.resource, e)
            except Exception as e:  # the server restarting: reconnect after a pause
                log.debug("%s %s: %s", type(self).__name__, self.resource, e)
            if self.stopping.wait(backoff):
                return
            backoff = min(backoff * 2, 2.0)


class _Informer(_Watcher):
    def __init__(self, client: KubeClient, rt: ResourceType, resource: str) -> None:
        self.client, self.rt, self.resource = client, rt, resource
        self.objects: dict[Key, Obj] = {}  # as the watch has shown them
        # this store's own writes the watch has not shown yet, so a read right after a write sees it
        self.written: dict[Key, Obj] = {}
        self.deleted: dict[Key, str] = {}  # key -> uid
        self.history: deque[WatchEvent] = deque(maxlen=HISTORY)
        self.floor = 0  # the history lacks events at or before this resourceVersion
        self.subscribers: dict[int, tuple[str | None, Callable[[WatchEvent], object]]] = {}
        self.rv = 0
        self.synced = threading.Event()
        self.lock = threading.RLock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"informer-{resource}", daemon=True)

    def _list(self) -> None:
        unserved = None
        try:
            doc = self.client.request("GET", path(self.rt))
        except ApiError as e:
            if e.code != 404 or not self.rt.custom:
                raise
            # a custom resource whose CRD does not exist or is not established yet: the server serves nothing
            # there, so there is nothing to list; the informer counts as synced, empty, and lists again after a
            # pause (as client-go's reflector retries a failing list) until the CRD is served
            unserved, doc = e, {"metadata": {"resourceVersion": "0"}, "items": []}
        rv = int(doc["metadata"]["resourceVersion"])
        fresh = {}
        for item in doc.get("items", []):
            item.setdefault("apiVersion", self.rt.api_version)
            item.setdefault("kind", self.rt.kind)
            fresh[_key(item)] = item
        with self.lock:
            if not self.synced.is_set():
                self.floor = rv
            else:  # a relist after a gap: what changed meanwhile reaches subscribers as events
                for key, gone in self.objects.items():
                    if _uid(fresh.get(key)) != _uid(gone):
                        self._emit(WatchEvent("DELETED", self.resource, gone, rv))
                for key, obj in fresh.items():
                    old = self.objects.get(key)
                    if old is None or _uid(old) != _uid(obj):
                        self._emit(WatchEvent("ADDED", self.resource, obj, rv))
                    elif _rv(old) != _rv(obj):
                        self._emit(WatchEvent("MODIFIED", self.resource, obj, rv, old))
            self.objects, self.rv = fresh, rv
            self.written = {k: o for k, o in self.written.items() if _rv(o) > rv}
            self.deleted = {k: u for k, u in self.deleted.items() if _uid(fresh.get(k)) == u}
        self.synced.set()
        if unserved is not None:
            raise unserved

    def _event(self, ev: Obj) -> None:
        kind, obj = ev["type"], ev["object"]
        rv = _rv(obj)
        if kind == "BOOKMARK":
            self.rv = rv
            return
        obj.setdefault("apiVersion", self.rt.api_version)
        obj.setdefault("kind", self.rt.kind)
        key = _key(obj)
        with self.lock:
            old = self.objects.get(key)
            if kind == "DELETED":
                self.objects.pop(key, None)
            else:
                self.objects[key] = obj
            self.rv = rv
            mine = self.written.get(key)
            if mine is not None and _rv(mine) <= rv:
                del self.written[key]
            if key in self.deleted and (kind == "DELETED" or self.deleted[key] != _uid(obj)):
                del self.deleted[key]
            self._emit(WatchEvent(kind, self.resource, obj, rv, old if kind == "MODIFIED" else None))

    def _emit(self, ev: WatchEvent) -> None:
        if len(self.history) == HISTORY:
            self.floor = self.history[0].rv
        self.history.append(ev)
        ns = ev.object.get("metadata", {}).get("namespace")
        for want_ns, cb in list(self.subscribers.values()):
            if want_ns is None or want_ns == ns:
                try:
                    cb(ev)
                except Exception:  # one subscriber's bug must not cost the others this event
                    log.exception("informer %s: a subscriber failed", self.resource)

    # -- the view reads see: the watch's objects, then this store's writes the watch has not shown yet --
    def get(self, key: Key) -> Obj | None:
        with self.lock:
            if key in self.deleted:
                return None
            return self.written.get(key) or self.objects.get(key)

    def items(self) -> Iterable[tuple[Key, Obj]]:
        """Under `lock`."""
        if not self.written and not self.deleted:
            return self.objects.items()
        view = {**self.objects, **self.written}
        for key in self.deleted:
            view.pop(key, None)
        return view.items()

    def wrote(self, obj: Obj) -> None:
        key = _key(obj)
        with self.lock:
            self.deleted.pop(key, None)
            seen = self.written.get(key) or self.objects.get(key)
            if seen is None or _rv(seen) < _rv(obj):
                self.written[key] = obj

    def removed(self, key: Key, uid: str) -> None:
        with self.lock:
            mine = self.written.pop(key, None)
            # hidden until the watch shows the deletion (not if it already has: nothing would end the hiding)
            if uid in (_uid(mine), _uid(self.objects.get(key))):
                self.deleted[key] = uid


class _Follower(_Watcher):
    """A watch whose events reach one callback and are not kept: a client-go reflector without a store. For an
    agent of many objects that only reacts to changes (the scale world's PodFinisher: its 150,000 pods held
    in an informer cost the lab's process some 4 GB). It lists in pages (each item as an ADDED event), then
    watches from the list's resourceVersion; after a 410 it lists again, so an object changed meanwhile is seen."""

    PAGE = 500

    def __init__(self, client: KubeClient, rt: ResourceType, resource: str,
                 callback: Callable[[WatchEvent], object]) -> None:
        self.client, self.rt, self.resource, self.callback = client, rt, resource, callback
        self.rv = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"follower-{resource}", daemon=True)

    def _list(self) -> None:
        token = ""
        while True:
            query = urllib.parse.urlencode({"limit": self.PAGE, **({"continue": token} if token else {})})
            doc = self.client.request("GET", f"{path(self.rt)}?{query}")
            rv = int(doc["metadata"]["resourceVersion"])
            for item in doc.get("items", []):
                self._deliver(WatchEvent("ADDED", self.resource, item, rv))
            token = doc["metadata"].get("continue") or ""
            if not token:
                self.rv = rv  # a paged list is a snapshot at its first page's resourceVersion
                return

    def _event(self, ev: Obj) -> None:
        kind, obj = ev["type"], ev["object"]
        self.rv = _rv(obj)
        if kind != "BOOKMARK":
            self._deliver(WatchEvent(kind, self.resource, obj, self.rv))

    def _deliver(self, ev: WatchEvent) -> None:
        try:
            self.callback(ev)
        except Exception:  # the callback's bug must not end the watch
            log.exception("follower %s: the callback failed", self.resource)


class ApiStore:
    def __init__(self, client: KubeClient, *, sync_timeout: float = 60) -> None:
        self.client = client
        self.sync_timeout = sync_timeout
        self._informers: dict[str, _Informer] = {}
        self._lock = threading.Lock()
        self._sub_ids = iter(range(1, 1 << 62))

    # -- helpers --------------------------------------------------------
    rtype = staticmethod(rtype)  # the resource table (console/lab/resources.py)

    def served(self, rt: ResourceType) -> bool:
        """Built-in kinds always; a custom one once its CRD has accepted names or is established, as the
        apiextensions-apiserver's handler decides (k8s.io/apiextensions-apiserver
        pkg/apiserver/customresource_handler.go ServeHTTP)."""
        if not rt.custom:
            return True
        try:
            crd = self.get(CRD_RESOURCE, None, rt.key)
        except NotFound:
            return False
        conds = (crd.get("status") or {}).get("conditions") or []
        return any(c.get("type") in ("NamesAccepted", "Established") and c.get("status") == "True" for c in conds)

    def _informer(self, resource: str) -> _Informer:
        rt = self.rtype(resource)
        with self._lock:
            inf = self._informers.get(resource)
            if inf is None:
                inf = self._informers[resource] = _Informer(self.client, rt, resource)
                inf.thread.start()
        if not inf.synced.wait(self.sync_timeout):
            raise StoreError(f"the API server did not list {resource} within {self.sync_timeout:.0f}s")
        return inf

    def _call(self, method: str, url: str, body: Obj | None = None, *,
              content_type: str = "application/json") -> Obj:
        try:
            return self.client.request(method, url, body, content_type=content_type)
        except ApiError as e:
            raise _error(e) from None
        except urllib3.exceptions.HTTPError as e:  # no answer (a restarting server): a store error all the same
            raise StoreError(f"the API server did not answer: {e}") from None

    @property
    def resource_version(self) -> int:
        return max((i.rv for i in self._informers.values()), default=0)

    def stop(self) -> None:
        for inf in self._informers.values():
            inf.stopping.set()
        self.client.close()  # ends the informers' watches
        for inf in self._informers.values():
            inf.thread.join(5)

    # -- reads ----------------------------------------------------------
    def get(self, resource: str, namespace: str | None, name: str) -> Obj:
        rt = self.rtype(resource)
        obj = self._informer(resource).get(((namespace or "default") if rt.namespaced else "", name))
        if obj is None:
            group = f".{rt.group}" if rt.group else ""
            raise NotFound(f'{rt.plural}{group} "{name}" not found')
        return obj

    def list(self, resource: str, namespace: str | None = None,
             predicate: Predicate | None = None) -> tuple[list[Obj], int]:
        inf = self._informer(resource)
        with inf.lock:
            out = [o for (ns, _), o in inf.items()
                   if (namespace is None or ns == namespace) and (predicate is None or predicate(o))]
            rv = inf.rv
        out.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return out, rv

    def pods_on_node(self, node: str) -> builtins.list[Obj]:
        return self.list("pods", None, lambda p: p.get("spec", {}).get("nodeName") == node)[0]

    def fetch(self, resource: str, namespace: str | None, name: str) -> Obj:
        """The object as the server has it now (not the informer's copy)."""
        rt = self.rtype(resource)
        if not name:  # the path would name the collection
            raise NotFound(f'{rt.plural} "" not found')
        return self._call("GET", path(rt, namespace or "default", name))

    # -- writes ---------------------------------------------------------
    def create(self, resource: str, obj: Obj) -> Obj:
        rt = self.rtype(resource)
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        namespace = (meta.get("namespace") or "default") if rt.namespaced else None
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        made = self._call("POST", path(rt, namespace), obj)
        self._written(resource, made)
        status = obj.get("status")
        have = made.get("status") or {}
        if status and "status" in rt.subresources and any(have.get(k) != v for k, v in status.items()):
            # a merge patch: what the server or a controller set meanwhile (a pod's qosClass, the scheduler's
            # PodScheduled condition) stays, and no resourceVersion to conflict on
            made = self._call("PATCH", path(rt, namespace, made["metadata"]["name"], "status"), {"status": status},
                              content_type=MERGE_PATCH)
            self._written(resource, made)
        return made

    def bulk_load(self, resource: str, objs: Iterable[Obj], *, workers: int = BULK_WORKERS,
                  progress: Callable[[str], None] | None = None, every: float = 5.0) -> int:
        """Create many objects (taken over, not copied), `workers` requests in flight over the client's shared,
        thread-safe connection pool. Where status is a subresource the create drops it (the API server's
        strategies reset status on create), so each object's status follows as a merge patch of its /status,
        which keeps what the server set (a pod's qosClass, immutable once set: ValidatePodStatusUpdate in
        pkg/apis/core/validation/validation.go). `progress` gets "created 12000 of 150000 pods" every `every`
        seconds and at the end. The first error stops the load and is raised. Returns the number created."""
        rt = self.rtype(resource)
        total = f" of {len(objs)}" if isinstance(objs, Sized) else ""
        with_status = "status" in rt.subresources

        def create(obj: Obj) -> None:
            status = obj.pop("status", None) if with_status else None
            meta = obj.setdefault("metadata", {})
            namespace = (meta.get("namespace") or "default") if rt.namespaced else None
            obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
            made = self._post(rt, namespace, obj)
            if status:
                url = path(rt, namespace, made["metadata"]["name"], "status")
                made = _transient(lambda: self.client.request("PATCH", url, {"status": status},
                                                              content_type=MERGE_PATCH))
            self._written(resource, made)

        n, said, shown = 0, -1, time.monotonic()
        inflight: set[Future[None]] = set()

        def say() -> None:
            nonlocal said, shown
            if progress is not None and said != n:
                said, shown = n, time.monotonic()
                progress(f"created {n}{total} {rt.plural}")

        def reap(done: set[Future[None]]) -> None:
            nonlocal n
            for f in done:
                f.result()
                n += 1
            if time.monotonic() - shown >= every:
                say()

        with ThreadPoolExecutor(max(1, workers), thread_name_prefix=f"bulk-{rt.plural}") as pool:
            try:
                for obj in objs:
                    if len(inflight) >= 2 * workers:
                        done, inflight = wait(inflight, return_when=FIRST_COMPLETED)
                        reap(done)
                    inflight.add(pool.submit(create, obj))
                done, inflight = wait(inflight)
                reap(done)
            except BaseException:
                for f in inflight:
                    f.cancel()
                raise
        say()
        return n

    def _post(self, rt: ResourceType, namespace: str | None, obj: Obj) -> Obj:
        """A create, tried again while the server is busy or did not answer: AlreadyExists after a try that got
        no answer means that try created it."""
        tries = 0

        def post() -> Obj:
            nonlocal tries
            tries += 1
            try:
                return self.client.request("POST", path(rt, namespace), obj)
            except ApiError as e:
                if tries == 1 or e.code != 409 or e.reason != "AlreadyExists":
                    raise
                return self.client.request("GET", path(rt, namespace, obj["metadata"]["name"]))

        return _transient(post)

    def update(self, resource: str, obj: Obj, *, check_rv: bool = True) -> Obj:
        """Replace an object (and its status, where status is a subresource). With `check_rv`, a stale
        metadata.resourceVersion is a Conflict, as the server decides; without (or without one), the last
        write wins."""
        meta = obj.get("metadata", {})
        if not check_rv or not meta.get("resourceVersion"):
            # not an unconditional PUT: custom resources and CRDs refuse those
            return self.mutate(resource, meta.get("namespace"), meta.get("name", ""), lambda _: copy.deepcopy(obj))
        return self._put(resource, obj, None)

    def _put(self, resource: str, obj: Obj, current: Obj | None) -> Obj:
        rt = self.rtype(resource)
        sent = copy.deepcopy(obj)
        meta = sent.setdefault("metadata", {})
        name = meta.get("name", "")
        namespace = (meta.get("namespace") or "default") if rt.namespaced else None
        sent["apiVersion"], sent["kind"] = rt.api_version, rt.kind
        has_status = "status" in rt.subresources
        result = current
        if result is None or _body(sent, has_status) != _body(result, has_status):
            result = self._call("PUT", path(rt, namespace, name), sent)  # a PUT that changes nothing is no write
            self._written(resource, result)
        if has_status and "status" in sent and sent["status"] != result.get("status"):
            meta["resourceVersion"] = result["metadata"]["resourceVersion"]
            result = self._call("PUT", path(rt, namespace, name, "status"), sent)
            self._written(resource, result)
        return result

    def mutate(self, resource: str, namespace: str | None, name: str, fn: Callable[[Obj], Obj | None], *,
               expect_rv: str | None = None) -> Obj:
        """Read-modify-write against the server's current object: `fn` edits a copy; a write that meets a
        newer object is tried again on that one (unless `expect_rv` pins the version it must edit)."""
        for attempt in range(_CONFLICT_RETRIES):
            current = self.fetch(resource, namespace, name)
            if expect_rv is not None and expect_rv != current["metadata"]["resourceVersion"]:
                raise Conflict(f'Operation cannot be fulfilled on {self.rtype(resource).plural} "{name}": the '
                               "object has been modified; please apply your changes to the latest version and "
                               "try again")
            draft = copy.deepcopy(current)
            new = fn(draft)
            new = new if new is not None else draft
            new.setdefault("metadata", {})["resourceVersion"] = current["metadata"]["resourceVersion"]
            try:
                return self._put(resource, new, current)
            except Conflict:
                if expect_rv is not None or attempt == _CONFLICT_RETRIES - 1:
                    raise
                time.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")

    def delete(self, resource: str, namespace: str | None, name: str, *, grace_seconds: int | None = 0) -> Obj:
        """Delete at once (grace 0: what the lab's agents mean when they remove an object), or with the grace
        period given (None: the object's own, as `kubectl delete` without --grace-period). Returns the object
        as it was deleted, or as marked for deletion."""
        rt = self.rtype(resource)
        ns = (namespace or "default") if rt.namespaced else None
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        gone = self._call("DELETE", path(rt, ns, name), body)
        inf = self._informers.get(resource)
        key = (ns or "", name)
        if gone.get("kind") == "Status":  # most kinds answer a deletion with a Status naming the uid
            uid = str(gone.get("details", {}).get("uid", ""))
            known = inf.get(key) if inf is not None else None
            gone = known if known is not None and _uid(known) == uid else {
                "apiVersion": rt.api_version, "kind": rt.kind,
                "metadata": {"name": name, "uid": uid, **({"namespace": ns} if ns else {})}}
        else:  # the object, with a deletionTimestamp whether deleted now or pending (grace, finalizers)
            try:
                self._written(resource, self.fetch(resource, ns, name))
                return gone
            except NotFound:
                uid = _uid(gone)
        if inf is not None:
            inf.removed(key, uid)
        return gone

    def _written(self, resource: str, obj: Obj) -> None:
        inf = self._informers.get(resource)
        if inf is not None:
            inf.wrote(obj)

    # -- watch ----------------------------------------------------------
    def subscribe(self, resource: str, callback: Callable[[WatchEvent], object], *, namespace: str | None = None,
                  since_rv: int | None = None) -> Callable[[], None]:
        inf = self._informer(resource)
        with inf.lock:
            if since_rv is not None and since_rv < inf.rv:
                if since_rv < inf.floor:
                    raise Gone(f"too old resource version: {since_rv} ({inf.floor})")
                for ev in inf.history:
                    if ev.rv > since_rv and (namespace is None
                                             or ev.object["metadata"].get("namespace") == namespace):
                        callback(ev)
            sid = next(self._sub_ids)
            inf.subscribers[sid] = (namespace, callback)

        def unsubscribe() -> None:
            with inf.lock:
                inf.subscribers.pop(sid, None)

        return unsubscribe

    def follow(self, resource: str, callback: Callable[[WatchEvent], object]) -> Callable[[], None]:
        """`callback` gets every object of `resource` (as ADDED), then each change, on a thread of its own; nothing
        is kept (no reads from it, unlike subscribe's informer). Returns what stops it."""
        follower = _Follower(self.client, self.rtype(resource), resource, callback)
        follower.thread.start()
        return follower.stopping.set

    async def watch(self, resource: str, *, namespace: str | None = None,
                    since_rv: int | None = None) -> AsyncIterator[WatchEvent]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[WatchEvent] = asyncio.Queue()
        unsubscribe = self.subscribe(resource, lambda ev: loop.call_soon_threadsafe(queue.put_nowait, ev),
                                     namespace=namespace, since_rv=since_rv)
        try:
            while True:
                yield await queue.get()
        finally:
            unsubscribe()


def _transient(fn: Callable[[], Obj], tries: int = 4) -> Obj:
    """fn() again after a pause when the server answered 429 or 5xx (busy: etcd timing out under a bulk load) or
    did not answer at all; its error as a store error otherwise."""
    for attempt in range(tries):
        try:
            return fn()
        except ApiError as e:
            if (e.code != 429 and e.code < 500) or attempt == tries - 1:
                raise _error(e) from None
            log.info("the API server answered %s %s; trying again", e.code, e)
        except urllib3.exceptions.HTTPError as e:
            if attempt == tries - 1:
                raise StoreError(f"the API server did not answer: {e}") from None
            log.info("the API server did not answer (%s); trying again", e)
        time.sleep(0.5 * 2**attempt)
    raise AssertionError("unreachable")


def _body(obj: Obj, without_status: bool) -> Obj:
    """What a PUT to the object itself changes: all but server-set metadata (and status, a subresource)."""
    meta = {k: v for k, v in obj.get("metadata", {}).items()
            if k not in ("resourceVersion", "managedFields", "generation", "creationTimestamp", "uid")}
    rest = {k: v for k, v in obj.items() if k not in ("metadata", "status" if without_status else "")}
    return {**rest, "metadata": meta}
