"""List+watch caches: one list, then a watch that resumes from its resourceVersion.

A 410 Gone (history compacted) relists; other errors back off and retry. List pages
and watch lines are bytes a codec (console/kube/codec.py, fastcodec.py) decodes straight
into domain objects, so 150,000 pods never become client model objects. During the first
list each page is published as it arrives (`loading` until the last one), so a screen
paints from the first page.

Health: while the API server cannot be reached (or refuses us), `down_since` is when that started and
`fresh_at` when the cache last knew its data current (a list, an event, a watch that ended normally);
`on_health` is called on each change between the two states, not on every retry.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from console.kube.codec import Codec, Event, Key

T = TypeVar("T")
PAGE = 500


class ResourceCache(Generic[T]):
    """Objects of one kind, kept current by a watch; read with `snapshot()`."""

    def __init__(
        self,
        list_fn: Callable[..., Any],
        codec: Codec[T],
        on_change: Callable[[], None] = lambda: None,
        on_health: Callable[[], None] = lambda: None,
    ) -> None:
        self._list_fn = list_fn
        self._codec = codec
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

    @property
    def loading(self) -> bool:
        """True until the first full list has arrived (the items so far are its first pages)."""
        return not self.synced.is_set()

    def snapshot(self) -> dict[Key, T]:
        with self._lock:
            return dict(self._items)

    def relist(self) -> None:
        first = not self.synced.is_set()
        items: dict[Key, T] = {}
        if first:  # nothing to show yet: fill the published dict page by page (a relist keeps the old data)
            with self._lock:
                self._items = items
        token = None
        while True:
            kwargs: dict[str, Any] = {"limit": PAGE, "_preload_content": False}
            if token:
                kwargs["_continue"] = token
            page = self._codec.page(self._list_fn(**kwargs).data)
            with self._lock:
                items.update(page.items)
            token = page.continue_token
            if not token:
                break
            if first:
                with self._lock:
                    self.generation += 1
                self._on_change()
        with self._lock:
            self._items = items
            self.resource_version = page.resource_version
            self.generation += 1
        self.synced.set()
        self._fresh()
        self._on_change()

    def apply(self, event: Event[T]) -> bool:
        """Apply one watch event; False when the watch must restart with a relist (410)."""
        if event.type == "ERROR":
            return (event.status or {}).get("code") != 410
        if event.type == "BOOKMARK":
            self.resource_version = event.resource_version
            return True
        assert event.key is not None
        with self._lock:
            if event.type == "DELETED":
                self._items.pop(event.key, None)
            elif event.obj is not None:
                self._items[event.key] = event.obj
            self.resource_version = event.resource_version or self.resource_version
            self.generation += 1
        self._on_change()
        return True

    def run(self, stop: threading.Event, *, timeout_seconds: int = 30, backoff: float = 1.0) -> None:
        """List, then watch until `stop` is set; survives API errors with backoff."""
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
                resp = self._list_fn(watch=True, resource_version=self.resource_version,
                                     timeout_seconds=timeout_seconds, allow_watch_bookmarks=True,
                                     _preload_content=False, _request_timeout=(10, timeout_seconds + 30))
                try:
                    for line in resp:  # urllib3 yields the newline-delimited events one line each
                        if stop.is_set():
                            return
                        if not line.strip():
                            continue
                        if not self.apply(self._codec.event(line)):
                            need_list = True
                            break
                        self._fresh()
                    else:
                        self._fresh()  # the watch ran its timeoutSeconds: nothing was missed
                finally:
                    resp.release_conn()
                delay = 0.0
            except ApiException as e:
                need_list = need_list or e.status == 410
                if e.status != 410:
                    self._failed(e)
                delay = min(max(delay * 2, backoff), 30.0)
            except (HTTPError, OSError) as e:
                self._failed(e)
                delay = min(max(delay * 2, backoff), 30.0)
            except ValueError as e:  # a response the codec could not read (fastcodec.MalformedResponse)
                self._failed(e)
                need_list = True
                delay = min(max(delay * 2, backoff), 30.0)
