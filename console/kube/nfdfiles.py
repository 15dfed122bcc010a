"""Hooks and feature files where nfd-worker reads them — a MINIMAL COPY of the issue-11 contract.

The `files` slice owns this module (HostPathTarget, node access, the real `wait_relabel`); this copy has the
shared types with the contract's names and fields, a plain `differences`, a `file_target` that builds the
ConfigMap-volume target (console/kube/nfdfiles_cm.py) and a simple `wait_relabel`, so the `cmfiles` slice (the
ConfigMap target and the hooks screen) works before the merge. At the merge the lead takes files' version.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from console.guard import Guard
from console.kube.nfdstore import NfdStoreError
from console.nfd.deployment import FileKind, Mount, NfdDeployment


@dataclass(frozen=True)
class NodeFile:
    node: str
    kind: FileKind
    name: str
    size: int
    sha256: str
    mode: int
    mtime: float


@dataclass(frozen=True)
class NodeListing:
    node: str
    files: tuple[NodeFile, ...]
    error: str = ""  # this node could not be read (access refused, unreachable): why


@dataclass(frozen=True)
class Difference:
    """One file name whose content is not the same everywhere."""

    kind: FileKind
    name: str
    by_hash: Mapping[str, tuple[str, ...]]  # sha256 -> nodes holding that content
    missing_on: tuple[str, ...]


def differences(listings: Sequence[NodeListing]) -> list[Difference]:
    """File names whose content differs between the readable nodes, or that some of them lack."""
    readable = [x for x in listings if not x.error]
    by_name: dict[tuple[FileKind, str], dict[str, list[str]]] = {}
    for listing in readable:
        for f in listing.files:
            by_name.setdefault((f.kind, f.name), {}).setdefault(f.sha256, []).append(listing.node)
    out = []
    for (kind, name), hashes in sorted(by_name.items()):
        holding = {n for nodes in hashes.values() for n in nodes}
        missing = tuple(x.node for x in readable if x.node not in holding)
        if len(hashes) > 1 or missing:
            out.append(Difference(kind, name, {h: tuple(n) for h, n in hashes.items()}, missing))
    return out


@dataclass(frozen=True)
class WriteResult:
    node: str
    ok: bool
    changed: bool  # False: already had this content (no-op)
    error: str = ""


class FileTarget(Protocol):
    kind: FileKind
    mount: Mount
    description: str

    def nodes(self, selector: str | None = None, names: Sequence[str] = ()) -> list[str]: ...

    def list(self, nodes: Sequence[str]) -> list[NodeListing]: ...

    def read(self, node: str, name: str) -> str | None: ...

    def push(self, name: str, content: str, nodes: Sequence[str]) -> list[WriteResult]: ...

    def remove(self, name: str, nodes: Sequence[str]) -> list[WriteResult]: ...


class NoFileTarget(NfdStoreError):
    """The deployment's nfd-worker does not read this kind of file from anything the console can write."""


def file_target(deployment: NfdDeployment, kind: FileKind, *, api_client: Any, settings: Any, guard: Guard | None,
                access: Any = None) -> FileTarget:
    """The target for `kind` by what the DaemonSet mounts (this copy: the ConfigMap volume only)."""
    mount = deployment.mounts.get(kind)
    if mount is not None and mount.source == "configMap":
        from console.kube.nfdfiles_cm import ConfigMapTarget

        return ConfigMapTarget(deployment, kind, api_client=api_client, guard=guard, access=access)
    where = "source.d" if kind == "hook" else "features.d"
    raise NoFileTarget(f"nfd-worker's {where} is {mount.source if mount else 'not mounted'}; "
                       "this build writes only ConfigMap volumes")


def wait_relabel(api_client: Any, expected: Mapping[str, Mapping[str, str | None]], *, timeout: float,
                 progress: Callable[[str], None] = lambda _: None) -> dict[str, dict[str, str | None]]:
    """Poll the nodes' labels until each has the expected values (None: absent) or `timeout` passes."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    deadline = time.monotonic() + timeout
    seen: dict[str, dict[str, str | None]] = {}
    while True:
        labels = {n.metadata.name: n.metadata.labels or {} for n in core.list_node().items}
        seen = {node: {k: labels.get(node, {}).get(k) for k in want} for node, want in expected.items()}
        done = [n for n, want in expected.items() if seen[n] == dict(want)]
        progress(f"{len(done)}/{len(expected)} nodes relabelled")
        if len(done) == len(expected) or time.monotonic() >= deadline:
            return seen
        time.sleep(0.5)
