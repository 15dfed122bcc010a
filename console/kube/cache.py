"""List+watch caches: one list, then a watch that resumes from its resourceVersion.

A 410 Gone (history compacted) relists; other errors back off and retry. Raw
JSON is projected straight into domain objects (see model.py), so 150,000 pods
never become client model objects.

Health: while the API server cannot be reached (or refuses us), `down_since` is when that started and
`fresh_at` when the cache last knew its data current (a list, an event, a watch that ended normally);
`on_health` is called on each change between the two states, not on every retry.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")
Key = tuple[str, str]
PAGE = 500


class ResourceCache(Generic[T]):
    """Objects of one kind, kept current by a watch; read with `snapshot()`."""

    def __init__(
        self,
        list_fn: Callable[..., Any],
        project: Callable[[dict[str, Any]], T],
        on_change: Callable[[], None] = lambda: None,
        on_health: Callable[[], None] = lambda: None,
    ) -> None:
        self._list_fn = list_fn
        self._project = project
        self._on_change = on_change
        self._lock = threading.Lock()
        self._items: dict[Key, T] = {}
        self.resource_version = ""
        self.synced = threading.Event()
        self.generation = 0  # bumped on every change; cheap "did anything change" for the UI
        self._on_health = on_health
        self.fresh_at = 0.0  # time.time() when the data was last known current
        self.down_since: float | None = None  # the API server unreachable/refusing since (time.time())
        self.last_error: BaseException | None = None

    def _fresh(self) -> None:
        self.fresh_at = time.time()
        if self.down_since is not None:
            self.down_since, self.last_error = None, None
            self._on_health()

    def _failed(self, error: BaseException) -> None:
        self.last_error = error
        if self.down_since is None:
            self.down_since = time.time()
            self._on_health()

    @staticmethod
    def _key(obj: dict[str, Any]) -> Key:
        meta = obj["metadata"]
        return meta.get("namespace", ""), meta["name"]

    def snapshot(self) -> dict[Key, T]:
        with self._lock:
            return dict(self._items)

    def relist(self) -> None:
        items: dict[Key, T] = {}
        token = None
        while True:
            kwargs: dict[str, Any] = {"limit": PAGE, "_preload_content": False}
            if token:
                kwargs["_continue"] = token
            body = json.loads(self._list_fn(**kwargs).data)
            for obj in body.get("items") or []:
                items[self._key(obj)] = self._project(obj)
            token = (body.get("metadata") or {}).get("continue")
            if not token:
                break
        with self._lock:
            self._items = items
            self.resource_version = body["metadata"].get("resourceVersion", "")
            self.generation += 1
        self.synced.set()
        self._fresh()
        self._on_change()

    def apply(self, event: dict[str, Any]) -> bool:
        """Apply one watch event; False when the watch must restart with a relist (410)."""
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            return obj.get("code") != 410
        if kind == "BOOKMARK":
            self.resource_version = obj["metadata"]["resourceVersion"]
            return True
        key = self._key(obj)
        with self._lock:
            if kind == "DELETED":
                self._items.pop(key, None)
            else:
                self._items[key] = self._project(obj)
            self.resource_version = obj["metadata"].get("resourceVersion", self.resource_version)
            self.generation += 1
        self._on_change()
        return True

    def run(self, stop: threading.Event, *, timeout_seconds: int = 30, backoff: float = 1.0) -> None:
        """List, then watch until `stop` is set; survives API errors with backoff."""
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        need_list = True
        delay = 0.0
        while not stop.is_set():
            if delay:
                stop.wait(delay)
            try:
                if need_list:
                    self.relist()
                    need_list = False
                w = watch.Watch()
                for event in w.stream(
                    self._list_fn,
                    resource_version=self.resource_version,
                    timeout_seconds=timeout_seconds,
                    allow_watch_bookmarks=True,
                    deserialize=False,
                ):
                    if stop.is_set():
                        w.stop()
                        return
                    if not self.apply(event):
                        need_list = True
                        w.stop()
                        break
                    self._fresh()
                else:
                    self._fresh()  # the watch ran its timeoutSeconds: nothing was missed
                delay = 0.0
            except ApiException as e:
                need_list = need_list or e.status == 410
                if e.status != 410:
                    self._failed(e)
                delay = min(max(delay * 2, backoff), 30.0)
            except (HTTPError, OSError) as e:
                self._failed(e)
                delay = min(max(delay * 2, backoff), 30.0)
