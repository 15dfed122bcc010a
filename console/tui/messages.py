"""Typed messages workers post back to the UI (workers never touch widgets)."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from console.kube.clusterview import ClusterView

__all__ = ["ClusterView"]  # the screens' view type, computed headless (console/kube/clusterview.py)


class NodesChanged(Message):
    """A new ClusterView is ready (computed off the UI thread)."""

    def __init__(self, view: ClusterView) -> None:
        super().__init__()
        self.view = view


class VMsLoaded(Message):
    def __init__(self, servers: dict[str, Any], flavors: list[Any], problems: list[str] | None = None) -> None:
        super().__init__()
        self.servers = servers
        self.flavors = flavors
        self.problems = problems or []  # a backend that failed while another answered


class ApiProbed(Message):
    """The first request to the API server finished: `error` is None when it answered."""

    def __init__(self, server: str, error: str | None) -> None:
        super().__init__()
        self.server = server
        self.error = error


class CacheHealthChanged(Message):
    """The node/pod caches of `kube` went stale (API server gone or refusing) or became current again."""

    def __init__(self, kube: Any, health: Any) -> None:
        super().__init__()
        self.kube = kube
        self.health = health  # console.kube.cluster.CacheHealth


class ContextSwitched(Message):
    """Connected to `context`: `gateways` is its bundle, started (console/gateways.py); or `error`."""

    def __init__(self, gateways: Any, error: str | None = None, context: str = "") -> None:
        super().__init__()
        self.gateways = gateways
        self.error = error
        self.context = context


class AccessReviewed(Message):
    """What the user of `gateways`' context may do (console.kube.access.Access), asked in a worker."""

    def __init__(self, gateways: Any, access: Any) -> None:
        super().__init__()
        self.gateways = gateways
        self.access = access


class ContextsListed(Message):
    def __init__(self, contexts: list[str], current: str) -> None:
        super().__init__()
        self.contexts = contexts
        self.current = current
