"""The kubelet fleet: one thread with a timer heap that drives every simulated kubelet.

It also holds the only pod watch for all of them, so 5,000 nodes cost one
thread; see `kubelet` for what each kubelet does.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from console.lab.apistore import ApiStore
from console.lab.store import WatchEvent


class FleetMember(Protocol):
    """What the fleet needs of a kubelet (console/lab/kubelet.py Kubelet, which imports this module)."""

    node_name: str

    def _sync_pod(self, namespace: str, name: str) -> None: ...

log = logging.getLogger(__name__)


def not_ready(status: dict[str, Any]) -> bool:
    """A Running pod whose Ready or ContainersReady condition is not True."""
    conditions = status.get("conditions") or []
    return status.get("phase") == "Running" and any(
        c.get("type") in ("Ready", "ContainersReady") and c.get("status") != "True" for c in conditions)


class Timer:
    __slots__ = ("args", "cancelled", "fn")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn, self.args, self.cancelled = fn, args, False

    def cancel(self) -> None:
        self.cancelled = True


class Fleet:
    """One thread with a timer heap that runs every kubelet, and one pod watch for all of them."""

    def __init__(self, store: ApiStore) -> None:
        self.store = store
        self._cv = threading.Condition()
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._running = False
        self._kubelets: dict[str, FleetMember] = {}
        self._unsub: Callable[[], None] | None = None
        self._index = itertools.count()

    def start(self) -> None:
        with self._cv:
            if self._running:
                return
            self._running = True
        self._unsub = self.store.subscribe("pods", self._on_pod_event)
        self._thread = threading.Thread(target=self._run, name="lab-kubelets", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._unsub:
            self._unsub()
            self._unsub = None
        with self._cv:
            self._running = False
            self._heap.clear()
            self._cv.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(10)
        self._thread = None

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> Timer:
        timer = Timer(fn, args)
        with self._cv:
            heapq.heappush(self._heap, (time.monotonic() + max(0.0, delay), next(self._seq), timer))
            self._cv.notify()
        return timer

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> Timer:
        return self.call_later(0.0, fn, *args)

    def run_sync(self, fn: Callable[..., Any], *args: Any, timeout: float = 10.0) -> Any:
        """Run `fn` on the fleet thread and return its result (for callers on other threads)."""
        if threading.current_thread() is self._thread:
            return fn(*args)
        done = threading.Event()
        box: dict[str, Any] = {}

        def call() -> None:
            try:
                box["result"] = fn(*args)
            except BaseException as exc:  # handed back to the caller
                box["error"] = exc
            done.set()

        self.call_soon(call)
        if not done.wait(timeout):
            raise TimeoutError("kubelet fleet did not answer")
        if "error" in box:
            raise box["error"]
        return box.get("result")

    def register(self, kubelet: FleetMember) -> int:
        self._kubelets[kubelet.node_name] = kubelet
        return next(self._index)

    def unregister(self, kubelet: FleetMember) -> None:
        if self._kubelets.get(kubelet.node_name) is kubelet:
            del self._kubelets[kubelet.node_name]

    def _on_pod_event(self, ev: WatchEvent) -> None:
        # runs under the store lock: only look up and enqueue
        if ev.type == "DELETED":
            return
        pod = ev.object
        kubelet = self._kubelets.get(pod.get("spec", {}).get("nodeName") or "")
        status = pod.get("status") or {}
        # Pending: to start; deleted: to stop; Running and not Ready: to write its Ready back (kubelet._sync_pod)
        if kubelet is not None and (status.get("phase", "Pending") == "Pending"
                                    or pod["metadata"].get("deletionTimestamp") or not_ready(status)):
            meta = pod["metadata"]
            self.call_soon(kubelet._sync_pod, meta.get("namespace", "default"), meta["name"])

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._running and (not self._heap or self._heap[0][0] > time.monotonic()):
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cv.wait(wait)
                if not self._running:
                    return
                _, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            try:
                timer.fn(*timer.args)
            except Exception:  # one kubelet's bug must not stop the others
                log.exception("kubelet fleet task %r failed", timer.fn)
