"""How caches decode what the API server sends: list pages and watch-stream lines.

A list response is one JSON document (`items`, `metadata.resourceVersion`, `metadata.continue`);
a watch response is newline-delimited JSON, one `{"type": ..., "object": ...}` per line
(k8s.io/apimachinery pkg/watch: ADDED MODIFIED DELETED BOOKMARK ERROR; an ERROR's object is a
metav1.Status, a BOOKMARK's carries only metadata.resourceVersion). A codec turns those bytes into
`Page`/`Event` holding projections (NodeInfo, PodInfo, ...), never client model objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")
Key = tuple[str, str]  # (namespace or "", name)


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[tuple[Key, T]]
    resource_version: str  # the list's metadata.resourceVersion
    continue_token: str  # metadata.continue ("" on the last page)


@dataclass(frozen=True, slots=True)
class Event(Generic[T]):
    type: str  # ADDED MODIFIED DELETED BOOKMARK ERROR
    key: Key | None  # None for BOOKMARK / ERROR
    obj: T | None  # the projection; None for BOOKMARK / ERROR
    resource_version: str  # object's / bookmark's metadata.resourceVersion ("" for ERROR)
    status: dict[str, Any] | None  # ERROR: the Status object (code, reason, message); else None


class Codec(Protocol[T]):
    def page(self, data: bytes) -> Page[T]: ...

    def event(self, line: bytes) -> Event[T]: ...


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return meta.get("namespace") or "", meta["name"]


class JsonCodec(Generic[T]):
    """Stdlib json plus a projection of the object dict (e.g. NodeInfo.from_api)."""

    def __init__(self, project: Callable[[dict[str, Any]], T]) -> None:
        self._project = project

    def page(self, data: bytes) -> Page[T]:
        body = json.loads(data)
        meta = body.get("metadata") or {}
        items = [(key_of(obj), self._project(obj)) for obj in body.get("items") or []]
        return Page(items, meta.get("resourceVersion") or "", meta.get("continue") or "")

    def event(self, line: bytes) -> Event[T]:
        body = json.loads(line)
        kind = body.get("type") or ""
        obj = body.get("object") or {}
        if kind == "ERROR":
            return Event(kind, None, None, "", obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion") or ""
        if kind == "BOOKMARK":
            return Event(kind, None, None, rv, None)
        return Event(kind, key_of(obj), self._project(obj), rv, None)
