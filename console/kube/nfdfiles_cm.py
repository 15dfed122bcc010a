"""Hooks and feature files in the ConfigMap the nfd-worker DaemonSet mounts at source.d / features.d.

The NFD article's alternative to NFD's own hostPath volumes: the DaemonSet has a volume
`configMap: {name: X, defaultMode, items}` mounted at the worker's source.d or features.d, so the kubelet
projects X's keys as files in every nfd-worker pod. What that means here (Kubernetes API reference,
ConfigMapVolumeSource and KeyToPath):

- without `items` every key of `data` / `binaryData` is a file of that name; with `items` only the listed keys
  appear, each at its `path`, and a listed key missing from the ConfigMap makes the volume setup fail (so a push
  of a name the items do not list is refused, as is removing a listed key);
- file modes are `defaultMode` (unset: 0644) or the item's `mode`. nfd-worker starts each hook with exec, so a
  hook without an execute bit fails with "permission denied" (shared/reference/nfd.md, runHook): pushing a hook
  into a volume whose mode is not executable is refused, naming the volume and the mode to set;
- a volume mounted with `subPath` is never updated by the kubelet, so a push is refused there too;
- one ConfigMap reaches every node the DaemonSet runs on: `nodes()` are the nodes its pods are on (a DaemonSet
  without pods reaches none), and push / remove report the same result for each of them.

A file's version (console/kube/nfdfiles_model.py) is `<resourceVersion>/<sha256 of the key's content>` (no key:
an empty sha256), the ConfigMap as the caller read it. A push or remove carries the version the admin was shown
and is ONE update of the ConfigMap at the resourceVersion it reads at write time, made only when that is the
resourceVersion shown or the key's content is still the one shown (another key changed: that change is kept,
as the update sends the ConfigMap just read); otherwise nothing is sent and every node's result is a conflict
with the key's content now. A 409 (someone changed it between that read and the update) is a conflict too. It
goes through the guard (read-only refuses before anything is read; the audit intent, naming the resourceVersion
and content it replaces, before; the outcome after) and is refused unsent when console/kube/access.Access says
this user may not update ConfigMaps in that namespace. Content already there sends nothing. Blocking calls: run
them in thread workers.
"""

from __future__ import annotations

import base64
import builtins
import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from console.guard import Guard, ReadOnly
from console.kube import rest
from console.kube.access import Need
from console.kube.nfdfiles_model import FileState, NodeFile, NodeListing, WriteResult
from console.kube.nfdstore import AUDIT_CAP, NfdStoreError, StoreConflict, _api_error, _check_name, _permitted
from console.nfd.deployment import FileKind, Mount, NfdDeployment

KUBELET_DEFAULT_MODE = 0o644  # ConfigMapVolumeSource.defaultMode when unset
CONFIG_MAP = "/api/v1/namespaces/{namespace}/configmaps/{name}"
NFD_FILE_LIMIT = 64 * 1024  # bytes: nfd-worker skips a larger feature file (v0.14, 026534e35)


def _sha(content: str | None) -> str:
    return "" if content is None else hashlib.sha256(content.encode()).hexdigest()


def _rv(cm: dict[str, Any] | None) -> str:
    return str(cm["metadata"].get("resourceVersion") or "") if cm else ""


def _version(rv: str, content: str | None) -> str:
    return f"{rv}/{_sha(content)}"


def _time(text: str | None) -> float:
    if not text:
        return 0.0
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class ConfigMapTarget:
    """FileTarget (console/kube/nfdfiles.py) for a Mount whose source is "configMap"."""

    def __init__(self, deployment: NfdDeployment, kind: FileKind, *, api_client: Any, guard: Guard | None,
                 access: Any = None) -> None:
        mount = deployment.mounts.get(kind)
        if mount is None or mount.source != "configMap" or not mount.config_map:
            raise NfdStoreError(f"nfd-worker does not mount a ConfigMap for {kind}s")
        if deployment.worker is None:
            raise NfdStoreError("no nfd-worker DaemonSet was found: nothing reads the ConfigMap")
        self.kind: FileKind = kind
        self.mount: Mount = mount
        self.namespace = deployment.worker.namespace or deployment.namespace
        self.daemonset = deployment.worker.name
        self.config_map = mount.config_map
        self.guard = guard
        self.access = access  # console/kube/access.Access: writes this user may not make are refused unsent
        self.api = api_client
        self._reach: list[str] | None = None

    @property
    def _cm_params(self) -> dict[str, str]:
        return {"namespace": self.namespace, "name": self.config_map}

    # -- what the volume projects ---------------------------------------------------------------------------
    @property
    def default_mode(self) -> int:
        return KUBELET_DEFAULT_MODE if self.mount.default_mode is None else self.mount.default_mode

    @property
    def where(self) -> str:
        return f"ConfigMap {self.namespace}/{self.config_map}"

    @property
    def description(self) -> str:
        mode = f"mode {self.default_mode:04o}" + (" (defaultMode unset)" if self.mount.default_mode is None else "")
        reach = ("every node nfd-worker runs on" if self._reach is None
                 else f"all {len(self._reach)} nodes nfd-worker runs on (its pods)")
        return f"{self.where} (volume {self.mount.volume}, {mode}), {reach}"

    def _mode_text(self) -> str:
        if self.mount.default_mode is None:
            return f"defaultMode unset, so the kubelet's {KUBELET_DEFAULT_MODE:04o}"
        return f"defaultMode {self.mount.default_mode:04o}"

    def _projected(self, cm: dict[str, Any] | None) -> dict[str, tuple[str, int]]:
        """File name in source.d / features.d -> (ConfigMap key, mode), as the kubelet projects them; names in
        subdirectories are left out (nfd-worker skips subdirectories)."""
        keys = set((cm or {}).get("data") or {}) | set((cm or {}).get("binaryData") or {})
        if self.mount.items:
            out = {path: (key, self.default_mode if mode is None else mode)
                   for key, path, mode in self.mount.items if key in keys}
        else:
            out = {key: (key, self.default_mode) for key in keys}
        return {p: v for p, v in out.items() if "/" not in p.strip("/")}

    def _key_for(self, name: str) -> tuple[str, int]:
        """The ConfigMap key projected as `name` and its mode; NfdStoreError when the volume would not show it."""
        if self.mount.items:
            for key, path, mode in self.mount.items:
                if path.strip("/") == name:
                    return key, self.default_mode if mode is None else mode
            listed = ", ".join(f"{k}->{p}" for k, p, _ in self.mount.items)
            raise NfdStoreError(f"volume {self.mount.volume} of DaemonSet {self.namespace}/{self.daemonset} lists "
                                f"items ({listed}) and none is projected as {name}: the kubelet would not show it "
                                "to nfd-worker; add it to the volume's items first")
        return name, self.default_mode

    # -- reads ----------------------------------------------------------------------------------------------
    def _read_cm(self) -> dict[str, Any] | None:
        from kubernetes.client.rest import ApiException

        try:
            return rest.get(self.api, CONFIG_MAP, params=self._cm_params)
        except ApiException as e:
            if e.status == 404:
                return None
            raise _api_error(e, self.where) from e

    @staticmethod
    def _content(cm: dict[str, Any] | None, key: str) -> str | None:
        if cm is None:
            return None
        if key in (cm.get("data") or {}):
            return str(cm["data"][key])
        raw = (cm.get("binaryData") or {}).get(key)
        return None if raw is None else base64.b64decode(raw).decode(errors="replace")

    def nodes(self, selector: str | None = None, names: Sequence[str] = ()) -> list[str]:
        """The nodes the DaemonSet's pods are on (where the kubelet projects the ConfigMap), narrowed to those
        matching `selector` (evaluated by the API server) or named in `names`."""
        from kubernetes.client.rest import ApiException

        ds_name = f"DaemonSet {self.namespace}/{self.daemonset}"
        try:
            ds = rest.get(self.api, "/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}",
                          params={"namespace": self.namespace, "name": self.daemonset})
            match = ((ds.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            pods = rest.items(self.api, "/api/v1/namespaces/{namespace}/pods", params={"namespace": self.namespace},
                              label_selector=",".join(f"{k}={v}" for k, v in sorted(match.items())))
        except ApiException as e:
            raise _api_error(e, ds_name) from e
        uid = ds["metadata"].get("uid")
        reach = sorted({str((p.get("spec") or {}).get("nodeName")) for p in pods
                        if any(o.get("uid") == uid for o in p["metadata"].get("ownerReferences") or ())
                        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                        and (p.get("spec") or {}).get("nodeName")})
        self._reach = reach
        if selector:
            try:
                chosen = rest.items(self.api, "/api/v1/nodes", label_selector=selector)
            except ApiException as e:
                raise _api_error(e, f"nodes matching {selector!r}") from e
            picked = {n["metadata"]["name"] for n in chosen}
            reach = [n for n in reach if n in picked]
        if names:
            reach = [n for n in reach if n in set(names)]
        return reach

    def list(self, nodes: Sequence[str]) -> list[NodeListing]:
        """The same files for every node the ConfigMap reaches; a node it does not reach says so."""
        cm = self._read_cm()
        reach = set(self._reach if self._reach is not None else self.nodes())
        stamp = _time(max((f.get("time") or "" for f in (cm or {}).get("metadata", {}).get("managedFields") or ()),
                          default="") or (cm or {}).get("metadata", {}).get("creationTimestamp"))
        out = []
        for node in nodes:
            if node not in reach:
                out.append(NodeListing(node, (), error=f"nfd-worker ({self.daemonset}) has no pod on {node}: "
                                                         f"{self.where} does not reach it"))
                continue
            files = []
            for path, (key, mode) in sorted(self._projected(cm).items()):
                content = self._content(cm, key) or ""
                files.append(NodeFile(node, self.kind, path, len(content.encode()), _sha(content), mode, stamp))
            out.append(NodeListing(node, tuple(files), version=_rv(cm)))
        return out

    def read(self, node: str, name: str) -> FileState:
        cm = self._read_cm()
        found = self._projected(cm).get(name)
        content = None if found is None else self._content(cm, found[0])
        return FileState(content, _version(_rv(cm), content))

    def version(self, listing: NodeListing, name: str) -> str | None:
        if listing.error:
            return None
        f = next((f for f in listing.files if f.name == name), None)
        return f"{listing.version}/{f.sha256 if f else ''}"

    def read_needs(self) -> builtins.list[Need]:
        """The ConfigMap, and the DaemonSet's pods for the nodes it reaches."""
        return [Need("get", "configmaps", namespace=self.namespace),
                Need("get", "daemonsets", "apps", namespace=self.namespace),
                Need("list", "pods", namespace=self.namespace)]

    # -- writes ---------------------------------------------------------------------------------------------
    def push(self, name: str, content: str, nodes: Sequence[str], *,
             expected: Mapping[str, str | None]) -> builtins.list[WriteResult]:
        """Put `content` under `name`: one ConfigMap update reaching every node the DaemonSet runs on, made while
        the file is the version `expected` (the same for every node: the ConfigMap as the caller read it)."""
        _check_name(name)
        if len(content.encode()) > NFD_FILE_LIMIT:
            raise NfdStoreError(f"{name} is {len(content.encode())} bytes: nfd-worker skips files over "
                                f"{NFD_FILE_LIMIT} bytes (64 KiB); make it smaller")
        return self._write(name, content, nodes, expected)

    def remove(self, name: str, nodes: Sequence[str], *,
               expected: Mapping[str, str | None]) -> builtins.list[WriteResult]:
        _check_name(name)
        return self._write(name, None, nodes, expected)

    def _refuse_early(self, what: str) -> None:
        if self.mount.sub_path:
            raise NfdStoreError(f"volume {self.mount.volume} is mounted with subPath {self.mount.sub_path}: the "
                                f"kubelet never updates a subPath mount, so {what} would not reach nfd-worker")
        if self.guard is None:
            raise ReadOnly(f"{what} (opened for reading only)")
        self.guard.check(what)  # read-only: refused before anything is read

    def _write(self, name: str, content: str | None, nodes: Sequence[str],
               expected: Mapping[str, str | None]) -> builtins.list[WriteResult]:
        from kubernetes.client.rest import ApiException

        verb = "push" if content is not None else "remove"
        what = f"{verb} of {self.kind} {name} in {self.where}"
        self._refuse_early(what)
        key, mode = self._key_for(name)
        if content is not None and self.kind == "hook" and not mode & 0o111:
            raise NfdStoreError(
                f"hook {name} would be projected with mode {mode:04o} ({self._mode_text()} on volume "
                f"{self.mount.volume} of DaemonSet {self.namespace}/{self.daemonset}): nfd-worker could not execute "
                "it (permission denied), so NFD would not run it; set defaultMode: 0755 on that volume first")
        if content is None and self.mount.items:
            raise NfdStoreError(f"volume {self.mount.volume} lists key {key} in its items: without it the kubelet "
                                "cannot set up the volume for new nfd-worker pods; remove the item from the "
                                "DaemonSet first")
        _permitted(self.access, "hook-save", needs=self._needs("get", "update"))
        cm = self._read_cm()
        if cm is None:
            _permitted(self.access, "hook-save", needs=self._needs("create"))
        reach = self.nodes()
        before = self._content(cm, key)
        if before == content:  # already there (or already absent): send nothing
            return self._results(reach, nodes, changed=False, version=_version(_rv(cm), before))
        shown = {v for v in expected.values() if v is not None}  # one object: every node's is a version of it
        if not shown:
            return self._results(reach, nodes, changed=False, error=f"not written: the version of {name} in "
                                 f"{self.where} was not read before; list it again")
        changed = self._changed(name, cm, before, shown)
        if changed:
            return self._results(reach, nodes, changed=False, error=changed, conflict=True,
                                 version=_version(_rv(cm), before), current=before)
        target = f"configmap {self.namespace}/{self.config_map} key {key}"
        read_at = _rv(cm) or "(created)"
        detail = f"reaches {len(reach)} nodes: {', '.join(reach) or '(none)'}"
        # what this write replaces, on disk before it is sent: the resourceVersion and the key's content
        replaced = {"resourceVersion": _rv(cm) or None, "sha256": _sha(before) or None,
                    "content": None if before is None else before[:AUDIT_CAP]}
        try:
            with self.guard.mutation(f"nfd.{self.kind}.{verb}", target, what=what,  # type: ignore[union-attr]
                                     before=replaced) as m:
                try:
                    out = self._send(cm, key, content)
                except ApiException as e:
                    err = _api_error(e, self.where)
                    if isinstance(err, StoreConflict):
                        err = StoreConflict(f"{self.where} was changed by someone else while it was written (409 "
                                            f"Conflict: read at resourceVersion {read_at})")
                    raise err from e
                rv = out["metadata"]["resourceVersion"]
                m.after = None if content is None else content[:AUDIT_CAP]
                m.detail = f"resourceVersion {read_at} -> {rv}; {detail}"
        except StoreConflict as e:  # theirs as it is now, for the caller to show
            try:
                now = self._read_cm()
            except NfdStoreError as again:  # not readable now: a conflict all the same, theirs not shown
                return self._results(reach, nodes, changed=False, error=f"not written: {e}; and it cannot be read "
                                     f"again ({again})", conflict=True, version="?/?")
            theirs = self._content(now, key)
            return self._results(reach, nodes, changed=False, error=f"not written: {e}", conflict=True,
                                 version=_version(_rv(now), theirs), current=theirs)
        except NfdStoreError as e:
            return self._results(reach, nodes, changed=False, error=str(e))
        return self._results(reach, nodes, changed=True, version=_version(rv, content))

    def _changed(self, name: str, cm: dict[str, Any] | None, now: str | None, shown: set[str]) -> str:
        """Why the ConfigMap read for the write is not a version the caller was shown ("" when it is): neither its
        resourceVersion nor the key's content is the one shown."""
        rv, sha = _rv(cm), _sha(now)
        for version in sorted(shown):
            shown_rv, _, shown_sha = version.rpartition("/")
            if rv != shown_rv and sha != shown_sha:
                return (f"not written: {name} in {self.where} changed since it was read (resourceVersion "
                        f"{shown_rv or '(none)'} → {rv or '(none)'}, "
                        f"{'gone' if now is None else 'created' if not shown_sha else 'other content'})")
        return ""

    def _needs(self, *verbs: str) -> builtins.list[Need]:
        return [Need(v, "configmaps", namespace=self.namespace) for v in verbs]

    def _send(self, cm: dict[str, Any] | None, key: str, content: str | None) -> dict[str, Any]:
        if cm is None:  # the DaemonSet names a ConfigMap that does not exist yet: make it
            body: Any = {"apiVersion": "v1", "kind": "ConfigMap",  # the client sends a dict as it is
                    "metadata": {"name": self.config_map, "namespace": self.namespace}, "data": {key: content}}
            return rest.send(self.api, "POST", "/api/v1/namespaces/{namespace}/configmaps", body,
                             params={"namespace": self.namespace})
        data = dict(cm.get("data") or {})
        binary = dict(cm.get("binaryData") or {})
        binary.pop(key, None)  # a key lives in data or binaryData, never both
        if content is None:
            data.pop(key, None)
        else:
            data[key] = content
        body = {**cm, "data": data, "binaryData": binary or None}  # metadata keeps the resourceVersion read
        return rest.send(self.api, "PUT", CONFIG_MAP, body, params=self._cm_params)

    def _results(self, reach: Sequence[str], asked: Sequence[str], *, changed: bool, error: str = "",
                 conflict: bool = False, version: str = "", current: str | None = None) -> builtins.list[WriteResult]:
        """The same result for every node the ConfigMap reaches; a node asked for that it does not reach fails."""
        out = [WriteResult(n, not error, changed and not error, error, version, conflict, current) for n in reach]
        out += [WriteResult(n, False, False, f"nfd-worker has no pod on {n}: {self.where} does not reach it")
                for n in asked if n not in reach]
        return out
