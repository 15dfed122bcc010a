"""Hooks and feature files where nfd-worker reads them: source.d / features.d as its DaemonSet mounts them.

`file_target(deployment, kind, ...)` picks the store from the volume the nfd-worker DaemonSet mounts there
(console/nfd/deployment.py Mount): a hostPath (NFD's own manifests: deployment/helm/.../worker.yaml and
deployment/base/worker-daemonset mount /etc/kubernetes/node-feature-discovery/features.d/ from the node) is a
HostPathTarget, which reaches each node with the node access of the scale-up runbooks (debug pod, SSH, guest
agent: console/kube/nodeaccess.py) and the scripts of console/kube/nfdfiles_sh.py; a ConfigMap volume is a
ConfigMapTarget (console/kube/nfdfiles_cm.py).

Limits as nfd-worker's local source (source/local/local.go): a feature file larger than MaxFeatureFileSize
(65536 bytes) is skipped whole, so a push refuses more before touching anything; nfd-worker reads every
entry of the directory that is a regular file and (v0.15+) does not start with '.', so a name is one plain
path component, not hidden; we keep to the characters a ConfigMap key allows (the ConfigMap target's rule,
and what older versions put into label names: `<file name>-<key>`).

Every write goes through the Guard (console/guard.py): read-only refuses, one audit intent for the batch is
on disk before any node is touched (naming each node's version it replaces), its outcome after with each node's
result. Every write carries, per node, the version of the file the caller showed (console/kube/nfdfiles_model.py):
a hostPath node compares it with the file's sha256 in the same script that renames (console/kube/nfdfiles_sh.py).
"""

from __future__ import annotations

import base64
import binascii
import builtins
import hashlib
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from console.kube import nfdfiles_sh as sh
from console.kube.nfdfiles_model import FileState, FileTarget, NodeFile, NodeListing, WriteResult
from console.kube.nfdstore import NfdStoreError
from console.nfd import versions as V

if TYPE_CHECKING:
    from console.guard import Guard
    from console.kube.access import Need
    from console.kube.nodeshell import NodeAccess
    from console.nfd.deployment import FileKind, NfdDeployment

MAX_FILE_BYTES = 65536  # source/local/local.go MaxFeatureFileSize: `filestat.Size() > MaxFeatureFileSize` skips
PARALLEL = 4  # nodes written at once: a handful of debug pods, not a burst on the API server
NODE_TIMEOUT = 60.0
HOOK_MODE, FEATURE_MODE = 0o755, 0o644
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
# the DaemonSet controller adds these tolerations to every daemon pod
# (kubernetes pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations)
DAEMON_TOLERATED = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
                    "node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
                    "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable",
                    "node.kubernetes.io/network-unavailable")


WATCH_SLICE = 10  # seconds per watch request in wait_relabel


class FileTargetError(NfdStoreError):
    """The files cannot be reached or written as asked (no such mount, bad name, too big); says why."""


@dataclass(frozen=True)
class Difference:
    """One file name whose content is not the same everywhere."""

    kind: FileKind
    name: str
    by_hash: Mapping[str, tuple[str, ...]]  # sha256 -> nodes holding that content
    missing_on: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "by_hash": {h: list(n) for h, n in self.by_hash.items()},
                "missing_on": list(self.missing_on)}


def differences(listings: Sequence[NodeListing]) -> list[Difference]:
    """Names held with different content on different nodes, or missing on some (nodes that could not be
    read are left out: they are neither missing the file nor holding it)."""
    read = [ls for ls in listings if not ls.error]
    nodes = [ls.node for ls in read]
    held: dict[tuple[FileKind, str], dict[str, list[str]]] = {}
    for ls in read:
        for f in ls.files:
            held.setdefault((f.kind, f.name), {}).setdefault(f.sha256, []).append(ls.node)
    out = []
    for (kind, name), by_hash in sorted(held.items()):
        having = {n for ns in by_hash.values() for n in ns}
        missing = tuple(n for n in nodes if n not in having)
        if len(by_hash) > 1 or missing:
            out.append(Difference(kind, name, {h: tuple(sorted(ns)) for h, ns in sorted(by_hash.items())}, missing))
    return out


def check_name(name: str) -> None:
    """FileTargetError unless nfd-worker reads a file of this name as it is (one path component, not hidden)."""
    if not name or "/" in name or "\0" in name:
        raise FileTargetError(f"invalid file name {name!r}: one plain name, without '/' (nfd-worker reads the "
                              "directory's own entries, not subdirectories)")
    if name.startswith("."):
        raise FileTargetError(f"invalid file name {name!r}: nfd-worker (v0.15+) skips names starting with '.'")
    if len(name.encode()) > 253 or not _NAME.fullmatch(name):
        raise FileTargetError(f"invalid file name {name!r}: use letters, digits, '-', '_' and '.' (at most 253; "
                              "older NFD versions put the name into label names, and a ConfigMap key allows no more)")


def check_content(name: str, content: str) -> bytes:
    data = content.encode("utf-8")
    if len(data) > MAX_FILE_BYTES:
        raise FileTargetError(f"{name} is {len(data)} bytes: nfd-worker skips a file larger than {MAX_FILE_BYTES} "
                              "bytes whole (source/local/local.go MaxFeatureFileSize); nothing was written")
    return data


# -- which nodes nfd-worker runs on ---------------------------------------------------------------------------


def _tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """k8s.io/api core/v1 Toleration.ToleratesTaint."""
    if taint.get("key") in DAEMON_TOLERATED:
        return True
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        op = t.get("operator") or "Equal"
        if op == "Exists" and (not t.get("key") or t.get("key") == taint.get("key")):
            return True
        if op == "Equal" and t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def worker_runs_on(worker: Any, node: Mapping[str, Any]) -> bool:
    """Whether the nfd-worker DaemonSet's pod template places a pod on `node`: its nodeSelector, required node
    affinity and tolerations against the node's NoSchedule/NoExecute taints. No worker known: every node."""
    if worker is None:
        return True
    from console.kube.model import NodeInfo
    from console.kube.nodes_ops import selects_node

    pod = {"spec": {"nodeSelector": dict(getattr(worker, "node_selector", {}) or {}),
                    "affinity": dict(getattr(worker, "affinity", {}) or {})}}
    if not selects_node(pod, NodeInfo.from_api(dict(node))):
        return False
    tolerations = tuple(getattr(worker, "tolerations", ()) or ())
    taints = ((node.get("spec") or {}).get("taints")) or []
    return all(_tolerates(tolerations, t) for t in taints if t.get("effect") in ("NoSchedule", "NoExecute"))


def target_nodes(api_client: Any, worker: Any, selector: str | None, names: Sequence[str]) -> list[str]:
    """The nodes matching `selector` (a label selector) and/or `names` that nfd-worker runs on, sorted."""
    from console.kube.nodes_ops import _raw_items

    items = _raw_items(api_client, "/api/v1/nodes", label_selector=selector or None)
    wanted = set(names)
    return sorted(n["metadata"]["name"] for n in items
                  if (not wanted or n["metadata"]["name"] in wanted) and worker_runs_on(worker, n))


# -- hostPath -------------------------------------------------------------------------------------------------


class HostPathTarget:
    """The directory a hostPath volume gives nfd-worker, on each node, through node access."""

    def __init__(self, deployment: NfdDeployment, kind: FileKind, *, api_client: Any, node_access: NodeAccess,
                 guard: Guard | None, parallel: int = PARALLEL, timeout: float = NODE_TIMEOUT,
                 needs: Sequence[Need] = ()) -> None:
        self.deployment = deployment
        self.kind = kind
        self.mount = deployment.mounts[kind]
        self.api = api_client
        self.access = node_access
        self.guard = guard
        self.parallel = max(1, parallel)
        self.timeout = timeout
        self.directory = self.mount.host_path.rstrip("/") or "/"
        self.description = f"hostPath {self.directory} on each node"
        version = deployment.version
        # before v0.15 nfd-worker reads hidden names too: keep the temp file out of its directory
        self.hidden_read = version is not None and not V.dotfiles_ignored(version)
        self._prepare_lock = threading.Lock()
        self._needs = list(needs)  # what node access asks the API server for (a debug pod: pods in its namespace)

    def read_needs(self) -> builtins.list[Need]:
        return list(self._needs)

    def nodes(self, selector: str | None = None, names: Sequence[str] = ()) -> list[str]:
        return target_nodes(self.api, self.deployment.worker, selector, names)

    def _run(self, node: str, script: str) -> sh.ScriptOutput:
        """Run `script` on `node`; FileTargetError saying why when it did not run to its end."""
        from console.kube.nodeshell import NodeAccessError

        try:
            with self._prepare_lock:  # one clean-up of left-over debug pods per node, not raced
                self.access.prepare(node)
            res = self.access.run(node, script, timeout=self.timeout)
        except NodeAccessError as e:
            raise FileTargetError(str(e)) from e
        out = sh.parse_output(res.output)
        if out.error:
            raise FileTargetError(out.error)
        if res.exit_code is None:
            raise FileTargetError(f"no exit status from {node} ({res.tail()})")
        if not res.ok or not out.ended:
            raise FileTargetError(f"the script on {node} exited {res.exit_code}"
                                  f"{'' if out.ended else ' before its end'} ({res.tail()})")
        return out

    def _each(self, nodes: Sequence[str], fn: Callable[[str], Any]) -> list[Any]:
        with ThreadPoolExecutor(max_workers=min(self.parallel, max(1, len(nodes))),
                                thread_name_prefix="nfdfiles") as pool:
            return list(pool.map(fn, nodes))

    def list(self, nodes: Sequence[str]) -> list[NodeListing]:
        script = sh.list_script(self.directory, hidden=self.hidden_read)

        def one(node: str) -> NodeListing:
            try:
                out = self._run(node, script)
            except FileTargetError as e:
                return NodeListing(node, (), str(e))
            files = tuple(NodeFile(node, self.kind, f.name, f.size, f.sha256, f.mode, f.mtime)
                          for f in sh.listed_files(out) if not f.name.startswith(".console-nfd."))
            return NodeListing(node, files, f"more than {sh.MAX_FILES} files; listed the first"
                               if out.has("truncated") else "")

        return self._each(nodes, one)

    def read(self, node: str, name: str) -> FileState:
        check_name(name)
        try:
            out = self._run(node, sh.read_script(self.directory, name))
        except FileTargetError as e:
            raise FileTargetError(f"{node}: {e}") from e
        if out.has("absent"):
            return FileState(None, "")
        data = self._decode(node, name, out)
        return FileState(data.decode("utf-8", errors="replace"), hashlib.sha256(data).hexdigest())

    def _decode(self, node: str, name: str, out: sh.ScriptOutput) -> bytes:
        try:
            return base64.b64decode("".join(out.data), validate=True)
        except binascii.Error as e:
            raise FileTargetError(f"{node}: {self.directory}/{name} came back garbled ({e})") from e

    def version(self, listing: NodeListing, name: str) -> str | None:
        """The file's sha256 as listed, "" when the node has none; None when not known (the node could not be
        listed, or the file is too large to hash)."""
        if listing.error:
            return None
        f = next((f for f in listing.files if f.name == name), None)
        return "" if f is None else (f.sha256 or None)

    def _checked(self, node: str, name: str, expected: Mapping[str, str | None],
                 script: Callable[[str], str], done: Callable[[sh.ScriptOutput], WriteResult]) -> WriteResult:
        """Run the compare-and-replace `script(expect)` on `node`: its result, or the conflict it met."""
        expect = expected.get(node)
        if expect is None:
            return WriteResult(node, False, False, f"not written: the version of {self.directory}/{name} on {node} "
                                                   "was not read before (the node could not be listed); list it "
                                                   "again")
        try:
            out = self._run(node, script(expect))
        except FileTargetError as e:
            return WriteResult(node, False, False, str(e))
        found = out.first("conflict")
        if found is None:
            return done(out)
        have = "" if found[1:] == ["absent"] else " ".join(found[1:])
        try:
            current = self._decode(node, name, out).decode("utf-8", errors="replace") if out.data else None
        except FileTargetError:
            current = None
        return WriteResult(node, False, False, f"not written: {name} on {node} changed since it was read "
                                               f"({_short(expect)} → {_short(have)})",
                           version=have, conflict=True, current=current)

    def _guarded(self, action: str, what: str, nodes: Sequence[str], detail: str,
                 fn: Callable[[str], WriteResult], expected: Mapping[str, str | None]) -> builtins.list[WriteResult]:
        from console.guard import ReadOnly

        if self.guard is None:
            raise ReadOnly(f"{what} (opened for reading only)")
        target = f"hostPath {self.directory} on {', '.join(nodes)}"
        # the version each node's write replaces, on disk before any node is touched ("absent": no file; None:
        # not known, so that node is not written)
        before = {"sha256": {n: "absent" if expected.get(n) == "" else expected.get(n) for n in nodes}}
        with self.guard.mutation(action, target, what=what, before=before, detail=detail) as m:
            results = self._each(nodes, fn)
            m.after = {r.node: r.as_dict() for r in results}
            failed = [r for r in results if not r.ok]
            m.result = ("ok" if not failed else "partial" if len(failed) < len(results)
                        else "conflict" if all(r.conflict for r in failed) else "error")
            if failed:
                m.detail = f"{what}: failed on {', '.join(r.node for r in failed)}"
        return results

    def push(self, name: str, content: str, nodes: Sequence[str], *,
             expected: Mapping[str, str | None]) -> builtins.list[WriteResult]:
        """Write `content` to each node that still has the version `expected[node]` of the file."""
        check_name(name)
        data = check_content(name, content)
        if not nodes:
            return []
        mode = HOOK_MODE if self.kind == "hook" else FEATURE_MODE
        digest = hashlib.sha256(data).hexdigest()

        def one(node: str) -> WriteResult:
            return self._checked(
                node, name, expected,
                lambda expect: sh.push_script(self.directory, name, data, mode, temp_outside=self.hidden_read,
                                              expect=expect),
                lambda out: WriteResult(node, True, not out.has("unchanged"), version=digest))

        what = f"write of {self.kind} file {self.directory}/{name} on {len(nodes)} node(s)"
        return self._guarded("nfd.file.push", what, nodes,
                             f"{what}: {len(data)} bytes, sha256 {digest}, mode {mode:04o}", one, expected)

    def remove(self, name: str, nodes: Sequence[str], *,
               expected: Mapping[str, str | None]) -> builtins.list[WriteResult]:
        """Remove the file from each node that still has the version `expected[node]` of it."""
        check_name(name)
        if not nodes:
            return []

        def one(node: str) -> WriteResult:
            return self._checked(node, name, expected,
                                 lambda expect: sh.remove_script(self.directory, name, expect=expect),
                                 lambda out: WriteResult(node, True, out.has("removed")))

        what = f"removal of {self.kind} file {self.directory}/{name} on {len(nodes)} node(s)"
        return self._guarded("nfd.file.remove", what, nodes, what, one, expected)


def _short(version: str) -> str:
    """A hostPath version as a message says it: sha256 abcdef012345, or "no file"."""
    return "no file" if version == "" else "not a regular file" if version == "-" else f"sha256 {version[:12]}"


def file_target(deployment: NfdDeployment, kind: FileKind, *, api_client: Any, settings: Any,
                guard: Guard | None, access: Any = None) -> FileTarget:
    """The store behind nfd-worker's `kind` directory, from the volume its DaemonSet mounts there.

    `access`: what this user may do (console/kube/access.Access; None: not known), for the ConfigMap target's
    up-front RBAC refusal. A hostPath target reaches the nodes with `settings.node_access`."""
    mount = deployment.mounts.get(kind)
    where = "source.d (hooks)" if kind == "hook" else "features.d (feature files)"
    worker = deployment.worker
    ds = f"DaemonSet {worker.namespace}/{worker.name}" if worker is not None else "the nfd-worker DaemonSet"
    if mount is None or mount.source == "none":
        raise FileTargetError(f"{ds} mounts nothing at {where}: nfd-worker reads only what is in its container "
                              "image there; mount a hostPath or a ConfigMap volume at "
                              f"{mount.mount_path if mount else 'that path'} to deploy {kind} files")
    if mount.source == "hostPath":
        from console.kube.access import action_needs
        from console.kube.nodeaccess import node_access

        # reading a node's directory takes the same node access as writing it (a debug pod, SSH, the guest agent)
        return HostPathTarget(deployment, kind, api_client=api_client, guard=guard,
                              node_access=node_access(getattr(settings, "node_access", "debug-pod"),
                                                      api_client, settings),
                              needs=action_needs("hook-save", settings))
    if mount.source == "configMap":
        from console.kube.nfdfiles_cm import ConfigMapTarget

        return ConfigMapTarget(deployment, kind, api_client=api_client, guard=guard, access=access)
    raise FileTargetError(f"{ds} mounts volume {mount.volume!r} at {mount.mount_path}, neither a hostPath nor a "
                          "ConfigMap (an emptyDir, projected or CSI volume): the console cannot write there")


# -- waiting for nfd-master to relabel ----------------------------------------------------------------------


# an expected value meaning "present, whatever its value" (a hook's output on the node is not known in advance);
# never a label value: those are alphanumerics, '-', '_' and '.' (k8s.io/apimachinery validation IsValidLabelValue)
PRESENT = "*"


def _seen(labels: Mapping[str, str], want: Mapping[str, str | None]) -> dict[str, str | None]:
    return {k: labels.get(k) for k in want}


def labels_match(seen: Mapping[str, str | None], want: Mapping[str, str | None]) -> bool:
    """Whether labels seen (label -> value, None: absent) are as wanted (a value, None: absent, PRESENT: any)."""
    return all(seen.get(k) is not None if v == PRESENT else seen.get(k) == v for k, v in want.items())


def wait_relabel(api_client: Any, expected: Mapping[str, Mapping[str, str | None]], *, timeout: float,
                 progress: Callable[[str], None] = lambda _msg: None) -> dict[str, dict[str, str | None]]:
    """Watch the nodes until each node's labels are as `expected` (node -> label -> value, None: absent, PRESENT:
    any value) or `timeout` seconds pass; node -> label -> value seen last (None: absent). One watch: on the one
    node by `metadata.name` field selector, else on all nodes from the list's resourceVersion (field selectors
    have no OR); it restarts after a 410 Gone, a closed stream or the API server away for a while, as
    client-go's reflector does (console/kube/retrywatch.py)."""
    from console.kube import rest, retrywatch
    from console.kube.nodes_ops import _raw

    seen: dict[str, dict[str, str | None]] = {n: {k: None for k in want} for n, want in expected.items()}
    done: set[str] = set()
    selector = f"metadata.name={next(iter(expected))}" if len(expected) == 1 else ""
    kw = {"field_selector": selector} if selector else {}

    def note(obj: Mapping[str, Any]) -> None:
        name = str((obj.get("metadata") or {}).get("name") or "")
        if name not in expected:
            return
        seen[name] = _seen((obj.get("metadata") or {}).get("labels") or {}, expected[name])
        was = len(done)
        if labels_match(seen[name], expected[name]):
            done.add(name)
        else:
            done.discard(name)
        if len(done) != was:
            progress(f"{len(done)}/{len(expected)} nodes relabelled")

    def read() -> tuple[bool, str | None]:
        token, rv = "", None
        while True:  # a paged list (limit/continue), keeping its resourceVersion to watch from
            data = _raw(api_client, "/api/v1/nodes", limit=rest.LIST_PAGE, _continue=token or None, **kw)
            for obj in data.get("items") or []:
                note(obj)
            rv = (data.get("metadata") or {}).get("resourceVersion") or rv
            token = (data.get("metadata") or {}).get("continue") or ""
            if not token:
                return len(done) == len(expected), rv

    def changed(event: str, obj: dict[str, Any]) -> bool:
        if event != "DELETED":
            note(obj)
        return len(done) == len(expected)

    if not expected:
        return seen
    progress(f"0/{len(expected)} nodes relabelled")
    # watches of at most WATCH_SLICE s, each ending in a progress call: a caller that wants to stop (a screen left,
    # Ctrl-C) raises from `progress` within that time, not at the timeout — also while the server is away
    retrywatch.until(rest.Lister(api_client, "/api/v1/nodes"), read=read, on_event=changed,
                     deadline=time.monotonic() + timeout, what=f"labels of {', '.join(sorted(expected))}"[:200],
                     field_selector=selector,
                     slice_s=WATCH_SLICE, between=lambda: progress(f"{len(done)}/{len(expected)} nodes relabelled"))
    return seen
