"""What the lab's agents (kubelets, node exec, NFD, the seeding) see of the API server's objects, whatever reads
them (console/lab/apistore.py ApiStore): objects as plain dicts in API shape, the errors a read or write meets,
and watch events.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]


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
