"""What a store of hooks and feature files reports (console/kube/nfdfiles.py picks the store): files on a node,
a node's listing, a file as read, a write's result, and the FileTarget every store implements. Apart from
nfdfiles.py so that its stores (nfdfiles.HostPathTarget, nfdfiles_cm.ConfigMapTarget) share them without
importing each other.

Versions (optimistic concurrency, as a resourceVersion is for an API object): every listing and read says which
version of a file each node has, as a token only its store interprets (a hostPath file: the sha256 of its
content, "" when there is none; a ConfigMap key: the ConfigMap's resourceVersion with the key's sha256). A push or
remove is given, per node, the version the caller showed the admin (`expected`), and the store writes a node only
while it still has that version; otherwise the node's result is a conflict carrying what is there now (its
version and content), which the caller shows, then reloads or sends again with that version to overwrite.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from console.kube.access import Need
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
        return {"node": self.node, "kind": self.kind, "name": self.name, "size": self.size, "sha256": self.sha256,
                "mode": f"{self.mode:04o}", "mtime": self.mtime}


@dataclass(frozen=True)
class NodeListing:
    node: str
    files: tuple[NodeFile, ...]
    error: str = ""  # this node could not be read (access refused, unreachable): why
    version: str = ""  # a store whose files are one object (a ConfigMap): its resourceVersion when listed

    def as_dict(self) -> dict[str, Any]:
        return {"node": self.node, "files": [f.as_dict() for f in self.files], "error": self.error}


@dataclass(frozen=True)
class FileState:
    """One file as read from a node: its content (None: no such file) and the version a write must carry."""

    content: str | None
    version: str


@dataclass(frozen=True)
class WriteResult:
    node: str
    ok: bool
    changed: bool  # False: the node already had this content (push) or no such file (remove): nothing written
    error: str = ""
    # ok: the version the node has now; conflict: the version it has instead of the one expected (send it as
    # `expected` to overwrite what `current` shows)
    version: str = ""
    conflict: bool = False  # not written: the file changed since the version the caller was shown
    current: str | None = None  # conflict: the content there now (None: no such file, or too large to show)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"node": self.node, "ok": self.ok, "changed": self.changed, "error": self.error}
        if self.version:
            out["version"] = self.version
        if self.conflict:
            out["conflict"] = True
        return out


def conflicts(results: Sequence[WriteResult]) -> builtins.list[WriteResult]:
    return [r for r in results if r.conflict]


class FileTarget(Protocol):
    kind: FileKind
    mount: Mount

    @property
    def description(self) -> str: ...

    def nodes(self, selector: str | None = None, names: Sequence[str] = ()) -> list[str]: ...
    def list(self, nodes: Sequence[str]) -> list[NodeListing]: ...
    def read(self, node: str, name: str) -> FileState: ...
    def version(self, listing: NodeListing, name: str) -> str | None:
        """The version of `name` this listing shows on its node (None: not known, e.g. the node was not read)."""
        ...
    def read_needs(self) -> builtins.list[Need]:
        """The permissions listing and reading ask the API server for (what this user's RBAC must allow)."""
        ...
    def push(self, name: str, content: str, nodes: Sequence[str], *,
             expected: Mapping[str, str | None]) -> builtins.list[WriteResult]: ...
    def remove(self, name: str, nodes: Sequence[str], *,
               expected: Mapping[str, str | None]) -> builtins.list[WriteResult]: ...
