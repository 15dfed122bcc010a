"""Where NFD hooks, feature files and NodeFeatureRules live, with optimistic concurrency.

Hooks and feature files for offline editing: `DirectoryHookStore`, `source.d/` and `features.d/` on this
machine (`hook_store: directory`). A file's `version` is a hash of its content; a save re-reads the file first
and refuses when it changed since it was loaded. Where the cluster's nfd-worker reads them (the DaemonSet's
hostPath or ConfigMap volume) is a FileTarget: console/kube/nfdfiles.py and nfdfiles_cm.py.

`RuleStore` reads and writes NodeFeatureRules (cluster-scoped) through CustomObjectsApi, with
server-side dry-run and resourceVersion on every write. `list_node_features` and `list_nodes`
feed previews; `cluster_nfd_version` reads the version from one NodeFeature. Blocking calls: run them in thread workers.

Every write (save, delete; a rule's create, replace, delete unless it is a server-side dry-run) goes through
the `guard` the store was built with (console/guard.py): read-only refuses it, the audit intent is on disk
before the call and the outcome after. A store built without a guard only reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from console.guard import Guard, Mutation, ReadOnly
from console.nfd.model import NODE_NAME_LABEL

Kind = Literal["hook", "feature"]
NFD_GROUP = "nfd.k8s-sigs.io"
NFD_API_VERSION = "v1alpha1"
RULES_PLURAL = "nodefeaturerules"
NODEFEATURES_PLURAL = "nodefeatures"
WORKER_VERSION_ANNOTATION = "nfd.node.kubernetes.io/worker.version"
MASTER_VERSION_ANNOTATION = "nfd.node.kubernetes.io/master.version"
AUDIT_CAP = 64 * 1024  # characters of a file's content kept in an audit record


class NfdStoreError(Exception):
    """A store operation failed; the message says what happened and what to do."""


class StoreConflict(NfdStoreError):
    """Someone else changed the object since it was loaded (HTTP 409 or a changed file)."""

    audit_result = "conflict"  # the outcome record's result (console/guard.py)

    def __init__(self, message: str, current: Any = None, current_version: str = "") -> None:
        super().__init__(message)
        self.current = current  # StoredFile | rule dict | None: what is there now
        self.current_version = current_version  # send this as expected_version to overwrite


class StoreNotFound(NfdStoreError):
    """The object does not exist (any more)."""


class StoreForbidden(NfdStoreError):
    """Refused before the write: this user's RBAC lacks `missing` (console/kube/access.py), nothing was sent."""

    def __init__(self, message: str, missing: list[str]) -> None:
        super().__init__(message)
        self.missing = missing


def _permitted(access: Any, action: str, settings: Any = None, needs: Iterable[Any] | None = None) -> None:
    """StoreForbidden when `access` (console/kube/access.Access, None: not known) says this user may not
    (`needs`: the permissions this call makes, when the action's defaults do not say)."""
    if access is None:
        return
    from console.kube.access import MissingPermissions, require

    try:
        require(access, action, settings, needs)
    except MissingPermissions as e:
        raise StoreForbidden(str(e), e.details()["missing"]) from e


class StoreRejected(NfdStoreError):
    """The server refused the object (validation, admission); the message is the server's reason."""


@dataclass(frozen=True)
class StoredFile:
    kind: Kind
    name: str
    content: str
    version: str  # a hash of the content; "" = does not exist yet
    location: str  # where it lives, for confirmations and the audit log

    @property
    def target(self) -> str:
        return f"{self.location}:{self.name}"


class HookStore(Protocol):
    """Hooks and feature files in one place (offline: a directory)."""

    description: str

    def list(self) -> list[StoredFile]: ...

    def get(self, kind: Kind, name: str) -> StoredFile | None: ...

    def save(self, kind: Kind, name: str, content: str, *, expected_version: str) -> StoredFile: ...

    def delete(self, kind: Kind, name: str, *, expected_version: str) -> None: ...

    def location(self, kind: Kind) -> str: ...


# -- helpers ------------------------------------------------------------------------------------------------


def _api_error(exc: Any, what: str) -> NfdStoreError:
    """Turn a kubernetes ApiException into one of ours, with the server's message (never credentials)."""
    from console.faults import status_message

    status = getattr(exc, "status", None)
    message = status_message(exc) or getattr(exc, "reason", "") or str(status)
    if status == 409:
        return StoreConflict(f"{what}: changed by someone else since you loaded it ({message}); reload or overwrite")
    if status == 404:
        return StoreNotFound(f"{what}: not found ({message})")
    if status in (400, 422):
        return StoreRejected(f"{what}: rejected by the API server: {message}")
    if status == 401:
        return NfdStoreError(f"{what}: the API server does not accept these credentials (401 {message}): it cannot "
                             "tell who you are; refresh them in the kubeconfig")
    if status == 403:
        return NfdStoreError(f"{what}: not allowed ({message}): RBAC does not let this user do it; ask for RBAC "
                             "permission")
    return NfdStoreError(f"{what}: API error {status}: {message}")


def _guarded(guard: Guard | None, action: str, target: str, what: str,
             before: Any) -> contextlib.AbstractContextManager[Mutation]:
    """The guard's mutation block; a store built without a guard refuses every write."""
    if guard is None:
        raise ReadOnly(f"{what} (this store was opened for reading only)")
    return guard.mutation(action, target, what=what, before=before)


def _clip(content: str | None) -> str | None:
    return None if content is None else content[:AUDIT_CAP]


def _json(resp: Any) -> dict[str, Any]:
    return json.loads(resp.data)


def content_version(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()[:16]


# -- directory store ------------------------------------------------------------------------------------------


def directory_layout(hook_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(source.d, features.d) for a configured directory: either one of them, or their parent."""
    root = Path(hook_dir).expanduser()
    if root.name in ("source.d", "features.d"):
        return root.parent / "source.d", root.parent / "features.d"
    return root / "source.d", root / "features.d"


class DirectoryHookStore:
    """Hooks in `source.d/` and feature files in `features.d/` on this machine."""

    def __init__(self, hook_dir: str | os.PathLike[str], *, guard: Guard | None = None) -> None:
        self.hooks_dir, self.features_dir = directory_layout(hook_dir)
        self.guard = guard
        self.description = f"directory {self.hooks_dir.parent}"

    def _dir(self, kind: Kind) -> Path:
        return self.hooks_dir if kind == "hook" else self.features_dir

    def location(self, kind: Kind) -> str:
        return str(self._dir(kind))

    def _file(self, kind: Kind, path: Path) -> StoredFile | None:
        from console.userfile import open_regular

        try:
            with open_regular(path) as f:  # a FIFO in hook_dir is refused, never waited on
                content = f.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return None
        except OSError as e:
            raise NfdStoreError(f"cannot read {path}: {e.strerror}") from e
        return StoredFile(kind, path.name, content, content_version(content), self.location(kind))

    def list(self) -> list[StoredFile]:
        out: list[StoredFile] = []
        for kind in ("hook", "feature"):
            d = self._dir(kind)
            if not d.is_dir():
                continue
            for p in sorted(d.iterdir()):
                if p.is_file() and not p.name.endswith(".console-tmp"):
                    f = self._file(kind, p)
                    if f:
                        out.append(f)
        return out

    def get(self, kind: Kind, name: str) -> StoredFile | None:
        _check_name(name)
        return self._file(kind, self._dir(kind) / name)

    def _check(self, kind: Kind, name: str, expected_version: str) -> StoredFile | None:
        current = self.get(kind, name)
        have = current.version if current else ""
        if have != expected_version:
            what = "was deleted" if current is None else "was created" if not expected_version else "changed"
            raise StoreConflict(f"{self._dir(kind) / name} {what} since you loaded it; reload or overwrite", current,
                                have)
        return current

    def save(self, kind: Kind, name: str, content: str, *, expected_version: str) -> StoredFile:
        _check_name(name)
        d = self._dir(kind)
        what = f"save of {d / name}"
        if self.guard is None or self.guard.read_only:
            _guarded(self.guard, f"nfd.{kind}.save", str(d / name), what, None)
        current = self._check(kind, name, expected_version)
        with _guarded(self.guard, f"nfd.{kind}.save", str(d / name), what,
                      _clip(current.content) if current else None) as m:
            try:
                d.mkdir(parents=True, exist_ok=True)
                # write then rename, so nfd-worker (or fsnotify) never sees half a file; hooks must be executable
                fd, tmp = tempfile.mkstemp(dir=d, prefix=".", suffix=".console-tmp")
                with os.fdopen(fd, "w") as fh:
                    fh.write(content)
                os.chmod(tmp, 0o755 if kind == "hook" else 0o644)
                os.replace(tmp, d / name)
            except OSError as e:
                raise NfdStoreError(f"cannot write {d / name}: {e.strerror}") from e
            m.after = _clip(content)
            m.detail = f"version {expected_version or '(new)'} -> {content_version(content)}"
        return StoredFile(kind, name, content, content_version(content), self.location(kind))

    def delete(self, kind: Kind, name: str, *, expected_version: str) -> None:
        path = self._dir(kind) / name
        if self.guard is None or self.guard.read_only:
            _guarded(self.guard, f"nfd.{kind}.delete", str(path), f"delete of {path}", None)
        current = self._check(kind, name, expected_version)
        if current is None:
            raise StoreNotFound(f"{path}: not found")
        with _guarded(self.guard, f"nfd.{kind}.delete", str(path), f"delete of {path}", _clip(current.content)):
            try:
                path.unlink()
            except OSError as e:
                raise NfdStoreError(f"cannot delete {path}: {e.strerror}") from e


def _check_name(name: str) -> None:
    if not name or "/" in name or name in (".", "..") or len(name) > 253:
        raise NfdStoreError(f"invalid file name {name!r}: use a plain name without '/'")
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
    if not set(name) <= allowed:
        raise NfdStoreError(f"invalid file name {name!r}: ConfigMap keys allow only letters, digits, '-', '_', '.'")


def hook_store(settings: Any, *, guard: Guard | None = None) -> DirectoryHookStore:
    """The offline store (`hook_store: directory`, `hook_dir`); writes go through `guard` (without one the store
    only reads). NfdStoreError when the settings do not name a directory."""
    if getattr(settings, "hook_store", "cluster") != "directory":
        raise NfdStoreError("hook_store is 'cluster': hooks and feature files go where the cluster's nfd-worker "
                            "reads them; set hook_store: directory and hook_dir to edit a local directory")
    hook_dir = getattr(settings, "hook_dir", None)
    if not hook_dir:
        raise NfdStoreError("hook_store is 'directory' but hook_dir is not set; set hook_dir in config.yaml")
    return DirectoryHookStore(hook_dir, guard=guard)


# -- NodeFeatureRules ------------------------------------------------------------------------------------------


class RuleStore:
    """NodeFeatureRules through CustomObjectsApi; every write can be a server-side dry-run."""

    def __init__(self, api_client: Any, *, guard: Guard | None = None, access: Any = None) -> None:
        from kubernetes import client

        self.custom = client.CustomObjectsApi(api_client)
        self.guard = guard
        self.access = access  # console/kube/access.Access: writes this user may not make are refused unsent

    def _write(self, verb: str, name: str, dry_run: bool, before: Any) -> contextlib.AbstractContextManager[Any]:
        """A server-side dry-run persists nothing (allowed read-only, not audited); a real write is guarded, and
        refused unsent (StoreForbidden) when this user's RBAC lacks it."""
        if dry_run:
            return contextlib.nullcontext(Mutation(""))
        _permitted(self.access, "rule-delete" if verb == "delete" else "rule-apply")
        return _guarded(self.guard, f"nfd.rule.{verb}", f"nodefeaturerule/{name}",
                        f"{verb} of NodeFeatureRule {name}", before)

    def list(self) -> list[dict[str, Any]]:
        from kubernetes.client.rest import ApiException

        try:
            body = self.custom.list_cluster_custom_object(NFD_GROUP, NFD_API_VERSION, RULES_PLURAL,
                                                          _preload_content=False)
        except ApiException as e:
            raise _api_error(e, "NodeFeatureRules") from e
        return sorted(_json(body).get("items") or [], key=lambda o: o["metadata"]["name"])

    def get(self, name: str) -> dict[str, Any]:
        from kubernetes.client.rest import ApiException

        try:
            return _json(self.custom.get_cluster_custom_object(NFD_GROUP, NFD_API_VERSION, RULES_PLURAL, name,
                                                               _preload_content=False))
        except ApiException as e:
            raise _api_error(e, f"NodeFeatureRule {name}") from e

    def create(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        from kubernetes.client.rest import ApiException

        body = _rule_body(obj)
        body["metadata"].pop("resourceVersion", None)
        kwargs: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
        with self._write("create", body["metadata"]["name"], dry_run, None) as m:
            try:
                out = _json(self.custom.create_cluster_custom_object(NFD_GROUP, NFD_API_VERSION, RULES_PLURAL, body,
                                                                     _preload_content=False, **kwargs))
            except ApiException as e:
                err = _api_error(e, f"NodeFeatureRule {body['metadata'].get('name')}")
                if e.status == 409:  # AlreadyExists
                    err = StoreConflict(f"NodeFeatureRule {body['metadata'].get('name')} already exists; "
                                        "reload it or pick another name")
                raise err from e
            m.after, m.detail = _rule_audit(out), f"created; resourceVersion {out['metadata'].get('resourceVersion')}"
        return out

    def replace(self, obj: dict[str, Any], *, resource_version: str, dry_run: bool = False,
                before: Any = None) -> dict[str, Any]:
        """Replace with a resourceVersion precondition (409 when someone changed it); `before`: what the caller
        loaded (for the audit record)."""
        from kubernetes.client.rest import ApiException

        if not resource_version:
            raise NfdStoreError("replace needs the resourceVersion the rule was loaded at")
        body = _rule_body(obj)
        body["metadata"]["resourceVersion"] = resource_version
        name = body["metadata"]["name"]
        kwargs: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
        with self._write("replace", name, dry_run, _rule_audit(before)) as m:
            try:
                out = _json(self.custom.replace_cluster_custom_object(NFD_GROUP, NFD_API_VERSION, RULES_PLURAL,
                                                                      name, body, _preload_content=False, **kwargs))
            except ApiException as e:
                err = _api_error(e, f"NodeFeatureRule {name}")
                if isinstance(err, StoreConflict):
                    with contextlib.suppress(NfdStoreError):
                        err.current = self.get(name)
                        err.current_version = err.current["metadata"]["resourceVersion"]
                raise err from e
            m.after = _rule_audit(out)
            m.detail = f"resourceVersion {resource_version} -> {out['metadata'].get('resourceVersion')}"
        return out

    def delete(self, name: str, *, resource_version: str = "", dry_run: bool = False, before: Any = None) -> None:
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        opts = client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version=resource_version)
                                      if resource_version else None, dry_run=["All"] if dry_run else None)
        with self._write("delete", name, dry_run, _rule_audit(before)):
            try:
                self.custom.delete_cluster_custom_object(NFD_GROUP, NFD_API_VERSION, RULES_PLURAL, name, body=opts,
                                                         _preload_content=False)
            except ApiException as e:
                raise _api_error(e, f"NodeFeatureRule {name}") from e


def _rule_audit(obj: Any) -> Any:
    """What the audit log keeps of a rule: its YAML text as given, or name, resourceVersion and spec."""
    if not isinstance(obj, dict):
        return _clip(obj) if isinstance(obj, str) else obj
    meta = obj.get("metadata") or {}
    return {"name": meta.get("name"), "resourceVersion": meta.get("resourceVersion"), "spec": obj.get("spec")}


def _rule_body(obj: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict) or not obj["metadata"].get("name"):
        raise NfdStoreError("a NodeFeatureRule needs metadata.name")
    body = {**obj, "apiVersion": f"{NFD_GROUP}/{NFD_API_VERSION}", "kind": "NodeFeatureRule"}
    meta = {k: v for k, v in obj["metadata"].items()
            if k in ("name", "labels", "annotations", "resourceVersion")}
    body["metadata"] = meta
    body.pop("status", None)
    return body


# -- inputs for previews ---------------------------------------------------------------------------------------


NF_PAGE = 500  # NodeFeatures per list page (each carries a node's features: tens of KB at scale)


def list_node_features(api_client: Any, node: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """NodeFeature objects in all namespaces, grouped by the node they target, read in pages of `NF_PAGE`
    (limit + continue, one consistent snapshot); with `node`, only that node's, selected by NFD's node-name
    label."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    custom = client.CustomObjectsApi(api_client)
    selector: dict[str, Any] = {"label_selector": f"{NODE_NAME_LABEL}={node}"} if node else {}
    items: list[dict[str, Any]] = []
    token = ""
    try:
        while True:
            more: dict[str, Any] = {"_continue": token} if token else {}
            page = _json(custom.list_cluster_custom_object(NFD_GROUP, NFD_API_VERSION, NODEFEATURES_PLURAL,
                                                           limit=NF_PAGE, _preload_content=False, **selector,
                                                           **more))
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                break
    except ApiException as e:
        raise _api_error(e, "NodeFeatures") from e
    out: dict[str, list[dict[str, Any]]] = {}
    for nf in items:
        node = ((nf.get("metadata") or {}).get("labels") or {}).get(NODE_NAME_LABEL)
        if node:
            out.setdefault(node, []).append(nf)
    return out


VERSION_PAGE = 20  # NodeFeatures per page while looking for one nfd-worker wrote
VERSION_PAGES = 5  # at most this many pages: third-party NodeFeatures (the console's too) carry no version


def cluster_nfd_version(api_client: Any) -> str | None:
    """The NFD version nfd-worker recorded on its NodeFeature (v0.12+): a `limit=1` label-selected read, then
    small pages until one carries the worker-version annotation (a third-party NodeFeature carries none), not
    every NodeFeature of the cluster. None when there is none in the first pages."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    custom = client.CustomObjectsApi(api_client)
    token = ""
    try:
        for i in range(VERSION_PAGES):  # one object first: on most clusters that is nfd-worker's, one small read
            more: dict[str, Any] = {"_continue": token} if token else {}
            page = _json(custom.list_cluster_custom_object(
                NFD_GROUP, NFD_API_VERSION, NODEFEATURES_PLURAL, limit=1 if i == 0 else VERSION_PAGE,
                label_selector=NODE_NAME_LABEL, _preload_content=False, **more))
            found = detect_nfd_version({"": page.get("items") or []})
            token = (page.get("metadata") or {}).get("continue") or ""
            if found or not token:
                return found
    except ApiException as e:
        raise _api_error(e, "NodeFeatures") from e
    return None


def list_nodes(api_client: Any) -> dict[str, dict[str, Any]]:
    """Node objects by name (labels, annotations, taints, capacity) for before/after comparisons."""
    from kubernetes.client.rest import ApiException

    from console.kube import rest

    try:
        items = rest.items(api_client, "/api/v1/nodes")
    except ApiException as e:
        raise _api_error(e, "nodes") from e
    return {n["metadata"]["name"]: n for n in items}


def detect_nfd_version(node_features: dict[str, list[dict[str, Any]]],
                       nodes: Iterable[Mapping[str, Any]] = ()) -> str | None:
    """The NFD version the cluster runs, from the worker's NodeFeature annotation (v0.12+) or, for
    older clusters, the version annotations NFD wrote on Nodes (v0.4-v0.14). None when unknown."""
    seen: dict[str, int] = {}
    for objs in node_features.values():
        for nf in objs:
            v = ((nf.get("metadata") or {}).get("annotations") or {}).get(WORKER_VERSION_ANNOTATION)
            if v:
                seen[v] = seen.get(v, 0) + 1
    if not seen:
        for node in nodes:
            ann = (node.get("metadata") or {}).get("annotations") or {}
            for key in (MASTER_VERSION_ANNOTATION, WORKER_VERSION_ANNOTATION):
                if ann.get(key):
                    seen[ann[key]] = seen.get(ann[key], 0) + 1
    return max(seen, key=lambda k: seen[k]) if seen else None
