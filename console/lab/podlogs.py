"""Container logs of lab pods (what `kubectl logs` and the node-exec helper read)."""

from __future__ import annotations

import threading
from collections.abc import Callable


class PodLogs:
    """Thread-safe text log per (namespace, pod); followers are called on append."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._logs: dict[tuple[str, str], str] = {}
        self._followers: dict[tuple[str, str], list[Callable[[str], None]]] = {}

    def append(self, namespace: str, pod: str, text: str) -> None:
        key = (namespace, pod)
        with self._lock:
            self._logs[key] = self._logs.get(key, "") + text
            followers = list(self._followers.get(key, ()))
        for follow in followers:
            follow(text)

    def read(self, namespace: str, pod: str) -> str:
        with self._lock:
            return self._logs.get((namespace, pod), "")

    def follow(self, namespace: str, pod: str, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call `callback` with each later chunk; returns a function that stops following."""
        key = (namespace, pod)
        with self._lock:
            self._followers.setdefault(key, []).append(callback)

        def stop() -> None:
            with self._lock:
                if callback in self._followers.get(key, []):
                    self._followers[key].remove(callback)

        return stop

    def drop(self, namespace: str, pod: str) -> None:
        with self._lock:
            self._logs.pop((namespace, pod), None)
            self._followers.pop((namespace, pod), None)
