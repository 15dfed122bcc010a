"""List+watch caches, read straight off the wire: list pages, then a watch resumed from their resourceVersion.

The cache does its own HTTP reading (`_preload_content=False`, newline-delimited JSON, decoded by a
console/kube/codec.Codec) instead of `kubernetes.watch.stream`: with kubernetes 37.0.2 and
`deserialize=False`, `Watch.stream` reads `event['raw_object']` of an ERROR event that only has
`object` (kubernetes/watch/watch.py, the `event['type'] == 'ERROR'` branch) and raises KeyError, which
killed the cache thread on the first 410.

What the loop does, after client-go's Reflector (k8s.io/client-go/tools/cache/reflector.go):
- 410 Gone/Expired, as an ERROR event or as the HTTP status of a list or watch → list again and
  replace the map in one swap (objects deleted during the gap disappear), then watch from the new
  resourceVersion. An expired continue token restarts the list unpaged (client-go tools/pager
  FullListIfExpired).
- Watches ask for bookmarks (`allowWatchBookmarks`) and resume from the last bookmark's
  resourceVersion; the server ends each watch after `timeoutSeconds`, randomised in
  [minWatchTimeout, 2×minWatchTimeout) with the reflector's minWatchTimeout of 5 minutes.
- A client-side read timeout notices a dead connection (dropped VPN) that the server can no longer
  close: client-go gets that from HTTP/2 health pings (ReadIdleTimeout 30 s + PingTimeout 15 s,
  k8s.io/apimachinery/pkg/util/net/http.go); over HTTP/1.1 a read idle for 30 s ends the watch, which
  is restarted from its resourceVersion at once (the API server sends a bookmark about every minute,
  so a quiet watch is restarted about twice a minute); if the server is gone the reconnect fails
  within 5 s × 4 (urllib3's default Retry retries a connect 3 times), so the cache reports it within
  a minute.
- Failures back off exponentially with jitter (client-go wait.Backoff Step, as the reflector's
  backoff manager: 800 ms initial, factor 2, jitter, reset after 2 minutes without a failure), capped
  at 2 s while the server is unreachable so a screen recovers within seconds of it returning, and at
  30 s (the reflector's cap) while it refuses us (401/403), where retrying sooner changes nothing.

Health (`health()`): live, loading (first list not finished), reconnecting, forbidden or unauthorized,
with since when, why (one line) and when the data was last known current (`fresh_at`). A forbidden
cache holds no objects: what it had may be anything by now.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from urllib3.exceptions import HTTPError

from console.kube.codec import Codec, Event, Key, Page

log = logging.getLogger(__name__)
T = TypeVar("T")
PAGE = 500
MIN_WATCH_TIMEOUT = 300.0  # client-go reflector.go defaultMinWatchTimeout (5 min)
REQUEST_TIMEOUT = (5.0, 30.0)  # (connect, read) seconds: see the module docstring

__all__ = ["PAGE", "Backoff", "CacheState", "Key", "ResourceCache", "watch_timeout"]


@dataclass(frozen=True)
class CacheState:
    """One cache's health: `state` live | loading | reconnecting | forbidden | unauthorized, `since` when it
    entered that state (time.time(); None while live), `reason` one line ("connection refused"), `fresh_at`
    when its data was last known current (0: never), `error` the failure behind it."""

    name: str
    state: str
    since: float | None
    reason: str
    fresh_at: float
    error: BaseException | None = None

    @property
    def live(self) -> bool:
        return self.state == "live"


class Backoff:
    """client-go's ExponentialBackoffManager: delays grow by `factor` up to `cap`, each plus up to `jitter`×
    itself at random (wait.Jitter), and start again from `initial` after `reset_after` s without one."""

    def __init__(self, initial: float = 0.8, cap: float = 2.0, factor: float = 2.0, jitter: float = 0.5,
                 reset_after: float = 120.0, *, clock: Callable[[], float] = time.monotonic,
                 rand: Callable[[], float] = random.random) -> None:
        self.initial, self.cap, self.factor, self.jitter, self.reset_after = initial, cap, factor, jitter, reset_after
        self._clock, self._rand = clock, rand
        self._next = initial
        self._last: float | None = None

    def reset(self) -> None:
        self._next = self.initial

    def next(self, cap: float | None = None) -> float:
        """The delay before the next attempt; `cap` overrides the cap for this step."""
        now = self._clock()
        if self._last is not None and now - self._last > self.reset_after:
            self._next = self.initial
        self._last = now
        limit = self.cap if cap is None else cap
        base = min(self._next, limit)
        self._next = min(self._next * self.factor, limit)
        return base + self._rand() * self.jitter * base


def watch_timeout(rand: Callable[[], float] = random.random) -> int:
    """timeoutSeconds for one watch: minWatchTimeout × [1, 2), as reflector.go spreads reconnections."""
    return int(MIN_WATCH_TIMEOUT * (rand() + 1.0))


class _Gone(Exception):
    """The server no longer has the history we asked for (410): list again."""


class _Refused(Exception):
    """An ERROR event that is not a 410, or a watch that answered with a Status: back off and watch again."""

    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(f"{status.get('code', '')} {status.get('reason', '')}: {status.get('message', '')}")
        self.status = status


def lines(resp: Any) -> Iterator[bytes]:
    """The non-empty newline-terminated lines of a streamed (chunked) urllib3 response, as bytes."""
    buf = b""
    for chunk in resp.stream(amt=None, decode_content=True):
        buf += chunk
        if b"\n" not in chunk:
            continue
        *done, buf = buf.split(b"\n")
        for line in done:
            if line.strip():
                yield line
    if buf.strip():
        yield buf


def reason_of(error: BaseException) -> str:
    """One line saying why a request failed: "connection refused", "timed out", "HTTP 503: …"."""
    status = getattr(error, "status", None)
    if isinstance(error, _Refused):
        st = error.status
        return f"HTTP {st.get('code', '?')} {st.get('reason', '')}: {st.get('message', '')}".strip()
    if isinstance(status, int) and status:
        return _api_reason(error, status)
    text = f"{error!r} {getattr(error, 'reason', '')}"
    for needle, said in (("Connection refused", "connection refused"), ("timed out", "timed out"),
                         ("Name or service not known", "host name not found"),
                         ("certificate verify failed", "TLS certificate not trusted"),
                         ("Connection reset", "connection reset"), ("RemoteDisconnected", "connection closed"),
                         ("IncompleteRead", "connection closed"), ("Connection broken", "connection closed"),
                         ("ended prematurely", "connection closed")):
        if needle in text:
            return said
    if isinstance(error, socket.timeout | TimeoutError):
        return "timed out"
    from console.faults import describe

    text = str(getattr(error, "reason", "") or error).strip()
    return text.splitlines()[0][:160] if text else describe(error)[:160]


def _api_reason(error: BaseException, status: int) -> str:
    message = ""
    with contextlib.suppress(ValueError, AttributeError):  # not a Status body: the code alone
        message = json.loads(getattr(error, "body", "") or "{}").get("message", "")
    words = {401: "unauthorized", 403: "forbidden", 410: "410 Gone"}.get(status, f"HTTP {status}")
    return f"{words}: {message}"[:200] if message else words


class ResourceCache(Generic[T]):
    """Objects of one kind, kept current by a watch; read with `snapshot()`.

    `on_change()` after every change (and after each page of the first list); `on_health()` when the
    state or its reason changes, not on every retry.
    """

    def __init__(
        self,
        list_fn: Callable[..., Any],
        codec: Codec[T],
        on_change: Callable[[], None] = lambda: None,
        on_health: Callable[[], None] = lambda: None,
        *,
        name: str = "",
        field_selector: str = "",
        request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
        backoff: Backoff | None = None,
    ) -> None:
        self._list_fn = list_fn
        self._codec = codec
        self._on_change = on_change
        self._on_health = on_health
        self.name = name or getattr(list_fn, "__name__", "objects")
        self._selector = {"field_selector": field_selector} if field_selector else {}
        self._timeout = request_timeout
        self._backoff = backoff or Backoff()
        self._lock = threading.Lock()
        self._items: dict[Key, T] = {}
        self.resource_version = ""
        self.synced = threading.Event()
        self.generation = 0  # bumped on every change; cheap "did anything change" for the UI
        self.fresh_at = 0.0
        self.relists = 0  # lists after the first one (410, or back from a failure)
        self.watches = 0  # watch requests made
        self.list_calls = 0  # list requests made (one per page)
        self._state = CacheState(self.name, "loading", time.time(), "listing", 0.0)

    # -- reading --------------------------------------------------------------
    def snapshot(self) -> dict[Key, T]:
        with self._lock:
            return dict(self._items)

    @property
    def loading(self) -> bool:
        """True until the first list has been read whole."""
        return not self.synced.is_set()

    def health(self) -> CacheState:
        state = self._state
        return state if state.fresh_at == self.fresh_at else replace(state, fresh_at=self.fresh_at)

    @property
    def down_since(self) -> float | None:
        """Since when the API server has been unreachable or refusing us (None while it answers)."""
        s = self._state
        return s.since if s.state in ("reconnecting", "forbidden", "unauthorized") else None

    @property
    def last_error(self) -> BaseException | None:
        return self._state.error

    # -- health ---------------------------------------------------------------
    def _set_state(self, state: str, reason: str = "", error: BaseException | None = None) -> None:
        old = self._state
        same = old.state == state and old.reason == reason
        since = old.since if old.state == state else (None if state == "live" else time.time())
        self._state = CacheState(self.name, state, since, reason, self.fresh_at, error)
        if not same:
            self._on_health()

    def _fresh(self) -> None:
        self.fresh_at = time.time()
        if self._state.state != "live":
            self._set_state("live")

    def _failed(self, error: BaseException) -> float:
        """Record a failure; returns how long to wait before the next attempt."""
        status = getattr(error, "status", None)
        if status == 403:
            with self._lock:  # what we held may be anything by now: show none of it as fact
                had = bool(self._items)
                self._items = {}
                self.generation += 1
            if had:
                self._on_change()
            self._set_state("forbidden", reason_of(error), error)
            return self._backoff.next(cap=30.0)
        if status == 401:
            self._set_state("unauthorized", reason_of(error), error)
            return self._backoff.next(cap=30.0)
        self._set_state("reconnecting", reason_of(error), error)
        return self._backoff.next()

    # -- list -----------------------------------------------------------------
    def _call(self, **kwargs: Any) -> Any:
        return self._list_fn(**self._selector, **kwargs, _preload_content=False, _request_timeout=self._timeout)

    def _read_page(self, token: str, limit: int) -> Page[T]:
        self.list_calls += 1
        kwargs: dict[str, Any] = {"limit": limit} if limit else {}
        if token:
            kwargs["_continue"] = token
        resp = self._call(**kwargs)
        try:
            return self._codec.page(resp.data)
        finally:
            resp.release_conn()

    def relist(self) -> None:
        """List every object (paged), then make the result the cache's content in one swap."""
        first = not self.synced.is_set()
        if not first:
            self.relists += 1
        items: dict[Key, T] = {}
        token, limit = "", PAGE
        while True:
            try:
                page = self._read_page(token, limit)
            except Exception as e:
                if getattr(e, "status", None) != 410 or not token:
                    raise
                # the continue token outlived the server's compaction window: list again, whole (pager.go)
                items, token, limit = {}, "", 0
                continue
            items.update(page.items)
            token = page.continue_token
            if first and token:  # nothing shown yet: let a screen paint from the first pages
                with self._lock:
                    self._items.update(page.items)
                    self.generation += 1
                self._on_change()
            if not token:
                break
        with self._lock:
            self._items = items
            self.resource_version = page.resource_version
            self.generation += 1
        self.synced.set()
        self._fresh()
        self._on_change()

    # -- watch ----------------------------------------------------------------
    def _apply(self, ev: Event[T]) -> None:
        if ev.type == "ERROR":
            status = ev.status or {}
            if status.get("code") == 410:
                raise _Gone(status.get("message", ""))
            raise _Refused(status)
        if ev.type == "BOOKMARK":
            if ev.resource_version:
                self.resource_version = ev.resource_version
            self._fresh()
            return
        if ev.key is None:
            return
        with self._lock:
            if ev.type == "DELETED":
                self._items.pop(ev.key, None)
            elif ev.obj is not None:
                self._items[ev.key] = ev.obj
            if ev.resource_version:
                self.resource_version = ev.resource_version
            self.generation += 1
        self._fresh()
        self._on_change()

    def watch_once(self, stop: threading.Event) -> None:
        """One watch from `resource_version` until the server ends it, `stop` is set, or it fails."""
        from urllib3.exceptions import ProtocolError, ReadTimeoutError

        self.watches += 1
        resp = self._call(watch=True, resource_version=self.resource_version, allow_watch_bookmarks=True,
                          timeout_seconds=watch_timeout())
        try:
            self._fresh()  # the server accepted a watch from our resourceVersion: nothing was missed
            for line in lines(resp):
                self._apply(self._codec.event(line))
                if stop.is_set():
                    return
        except (ReadTimeoutError, ProtocolError):
            # idle for the read timeout, or the connection dropped mid-stream (a restarting server): watch
            # again; if the server is gone, that attempt fails to connect and says so
            return
        finally:
            resp.release_conn()
            resp.close()

    def run(self, stop: threading.Event) -> None:
        """List, then watch until `stop` is set; survives every API error (see the module docstring)."""
        need_list = True
        last_list = 0.0
        while not stop.is_set():
            try:
                if need_list:
                    last_list = time.monotonic()
                    self.relist()
                    need_list = False
                started = time.monotonic()
                self.watch_once(stop)
                if time.monotonic() - started < self._backoff.initial:
                    stop.wait(self._backoff.next())  # watches that end at once: do not spin on the server
                else:
                    self._backoff.reset()
            except _Gone as gone:
                log.info("%s: watch ended with 410 (%s); relisting", self.name, gone)
                need_list = True
                # a second 410 straight after a list: the server is churning; do not hammer it
                if time.monotonic() - last_list < self._backoff.initial:
                    stop.wait(self._backoff.next())
            except Exception as e:  # the loop must outlive anything the server or the network does
                if getattr(e, "status", None) == 410:
                    log.info("%s: HTTP 410 (%s); relisting", self.name, reason_of(e))
                    need_list = True
                    continue
                if not isinstance(e, HTTPError | OSError | _Refused) and getattr(e, "status", None) is None:
                    log.warning("%s: unexpected failure; retrying", self.name, exc_info=True)  # a bug: keep it
                if getattr(e, "status", None) == 403:
                    need_list = True  # _failed empties the cache: a watch's deltas alone would leave it partial
                stop.wait(self._failed(e))
