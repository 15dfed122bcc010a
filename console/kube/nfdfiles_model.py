"""What a store of hooks and feature files reports (console/kube/nfdfiles.py picks the store): files on a node,
a node's listing, a write's result, and the FileTarget every store implements. Apart from nfdfiles.py so that its
stores (nfdfiles.HostPathTarget, nfdfiles_cm.ConfigMapTarget) share them without importing each other."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from console.nfd.deployment import FileKind, Mount


@dataclass(frozen=True)
class NodeFile:
    node: str
    kind: FileKind
    name: str
    size: int
    sha256: str  # "" when the file was too large to hash
    mode: int
    mtime: float

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mode": f"{self.mode:04o}"}


@dataclass(frozen=True)
class NodeListing:
    node: str
    files: tuple[NodeFile, ...]
    error: str = ""  # this node could not be read (access refused, unreachable): why

    def as_dict(self) -> dict[str, Any]:
        return {"node": self.node, "files": [f.as_dict() for f in self.files], "error": self.error}


@dataclass(frozen=True)
class WriteResult:
    node: str
    ok: bool
    changed: bool  # False: the node already had this content (push) or no such file (remove): nothing written
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class FileTarget(Protocol):
    kind: FileKind
    mount: Mount

    @property
    def description(self) -> str: ...

    def nodes(self, selector: str | None = None, names: Sequence[str] = ()) -> list[str]: ...
    def list(self, nodes: Sequence[str]) -> list[NodeListing]: ...
    def read(self, node: str, name: str) -> str | None: ...
    def push(self, name: str, content: str, nodes: Sequence[str]) -> builtins.list[WriteResult]: ...
    def remove(self, name: str, nodes: Sequence[str]) -> builtins.list[WriteResult]: ...
