"""What the cluster runs as NFD: the nfd-master and nfd-worker workloads, their flags, config files and mounts.

Pure, no I/O: built from the Deployment / DaemonSet / ConfigMap objects as the API returns them (dicts, camelCase)
by `from_objects`; console/kube/nfddiscovery.py reads them. NFD is recognised by what its containers run
(`command: ["nfd-master"]` in NFD's kustomize base and Helm chart, deployment/base/master/master-deployment.yaml,
deployment/helm/node-feature-discovery/templates/master.yaml; v0.8's nfd-daemonset-combined.yaml.template runs
both in one DaemonSet), not by a namespace or a name: the GPU operator deploys it in `gpu-operator`, OpenShift's
operator in `openshift-nfd`, Helm names it `<release>-master` / `<release>-worker`.

The version comes from the image tag (registry.k8s.io/nfd/node-feature-discovery:v0.16.4, `-minimal`/`-full`
suffixes); an image without a version tag (a digest, `latest`, a vendor's rebuild) takes the caller's hint (the
worker's NodeFeature annotation `nfd.node.kubernetes.io/worker.version`, or the Node annotations NFD wrote up to
v0.14).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from console.nfd import versions as V
from console.nfd.master import MasterConfig
from console.nfd.masterflags import (
    MasterSettings,
    WorkerConfig,
    hooks_on,
    master_config_path,
    parse_go_flags,
    parse_master,
    parse_worker,
    unknown_flags,
    worker_config_path,
)

__all__ = ["FileKind", "Mount", "NfdDeployment", "WorkerConfig", "Workload", "from_objects", "image_version",
           "nfd_containers", "wanted_config_maps"]

FileKind = Literal["hook", "feature"]
Role = Literal["master", "worker"]
NFD_ETC = "/etc/kubernetes/node-feature-discovery"
# source/local/local.go: the directories nfd-worker's local source reads (fixed paths, not configurable)
FILE_DIRS: dict[FileKind, str] = {"hook": f"{NFD_ETC}/source.d", "feature": f"{NFD_ETC}/features.d"}
PROGRAMS: dict[str, Role] = {"nfd-master": "master", "nfd-worker": "worker"}
# the label-changing master flags the status line names (cmd/nfd-master/main.go)
_MASTER_STATUS_FLAGS = ("extra-label-ns", "deny-label-ns", "label-whitelist", "resource-labels", "enable-taints",
                        "no-publish", "instance", "feature-gates")


@dataclass(frozen=True)
class Mount:
    """The nfd-worker volume mounted at source.d / features.d."""

    kind: FileKind
    source: Literal["hostPath", "configMap", "none", "other"]  # none: not mounted; other: emptyDir, projected, …
    mount_path: str                # in the worker container
    volume: str = ""               # the volume's name in the DaemonSet
    host_path: str = ""            # hostPath: the directory on each node
    config_map: str = ""           # configMap: its name (in the DaemonSet's namespace)
    default_mode: int | None = None  # configMap defaultMode (None = unset: the kubelet's 0644)
    items: tuple[tuple[str, str, int | None], ...] = ()  # configMap items: (key, path, mode)
    sub_path: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "mountPath": self.mount_path}
        for key, value in (("volume", self.volume), ("hostPath", self.host_path), ("configMap", self.config_map),
                           ("subPath", self.sub_path)):
            if value:
                out[key] = value
        if self.default_mode is not None:
            out["defaultMode"] = f"{self.default_mode:04o}"
        if self.items:
            out["items"] = [{"key": k, "path": p, **({"mode": f"{m:04o}"} if m is not None else {})}
                            for k, p, m in self.items]
        return out

    def describe(self) -> str:
        if self.source == "hostPath":
            return f"hostPath {self.host_path}"
        if self.source == "configMap":
            mode = f", mode {self.default_mode:04o}" if self.default_mode is not None else ""
            return f"ConfigMap {self.config_map} (volume {self.volume}{mode})"
        if self.source == "none":
            return "not mounted"
        return f"volume {self.volume} (not a hostPath or ConfigMap)"


@dataclass(frozen=True)
class Workload:
    kind: str                      # Deployment | DaemonSet
    namespace: str
    name: str
    container: str
    image: str
    args: tuple[str, ...]          # command[1:] + args as the pod runs them
    config: Mapping[str, Any]      # the parsed config file (nfd-worker.conf / nfd-master.conf); {} if none
    config_source: str = ""        # "configmap NS/NAME key nfd-worker.conf", "" if none
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    affinity: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name, "container": self.container,
                "image": self.image, "args": list(self.args), "config": dict(self.config),
                "configSource": self.config_source, "nodeSelector": dict(self.node_selector)}


@dataclass(frozen=True)
class NfdDeployment:
    namespace: str
    version: V.NfdVersion | None
    version_source: str            # "image registry.k8s.io/nfd/node-feature-discovery:v0.16.4", "NodeFeature …"
    master: Workload | None
    worker: Workload | None
    node_feature_api: bool         # the NodeFeature CRD is served and the master reads it
    mounts: Mapping[FileKind, Mount]
    warnings: tuple[str, ...] = ()  # what could not be read or does not add up (RBAC, a missing ConfigMap, …)

    @property
    def model_version(self) -> V.NfdVersion:
        """The version to model: the detected one, else the current release."""
        return self.version or V.CURRENT

    def master_settings(self) -> MasterSettings:
        m = self.master
        return parse_master(m.args if m else (), m.config if m else {}, self.model_version, self.namespace)

    def master_config(self) -> MasterConfig:
        """The master's label options: its flags over its config file, with this version's precedence."""
        return self.master_settings().config

    def worker_config(self) -> WorkerConfig:
        w = self.worker
        return parse_worker(w.args if w else (), w.config if w else {}, self.model_version)

    def hooks_enabled(self) -> bool:
        return hooks_on(self.model_version, self.worker_config())

    def status_line(self) -> str:
        """"NFD v0.16.4 in gpu-operator · master -extra-label-ns=nvidia.com · hooks enabled · relabel every 60s"."""
        parts = [f"NFD {self.version or '(version unknown)'} in {self.namespace}"]
        if self.master is None:
            parts.append("no nfd-master found")
        else:
            shown = [_shown_flag(n, v) for n, v in parse_go_flags(self.master.args) if n in _MASTER_STATUS_FLAGS]
            shown = [f for f in shown if f]
            conf = sorted(k for k in self.master.config if k in _MASTER_CONF_KEYS)
            if conf:
                shown.append("config " + ",".join(conf))
            parts.append("master " + (" ".join(shown) if shown else "defaults"))
        if self.worker is None:
            parts.append("no nfd-worker found")
        else:
            v = self.model_version
            status = V.hooks_status(v)
            parts.append("hooks removed (v0.17+)" if status == "removed"
                         else "hooks enabled" if self.hooks_enabled() else "hooks disabled")
            interval = self.worker_config().sleep_interval
            parts.append(f"relabel every {_seconds(interval)}" if interval > 0 else "no relabel (sleepInterval <= 0)")
        return " · ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """`nfd status -o json`."""
        out: dict[str, Any] = {
            "namespace": self.namespace, "version": str(self.version) if self.version else None,
            "versionSource": self.version_source, "nodeFeatureAPI": self.node_feature_api,
            "master": None, "worker": None,
            "mounts": {k: m.as_dict() for k, m in self.mounts.items()},
            "statusLine": self.status_line(), "warnings": list(self.warnings),
        }
        if self.master is not None:
            s = self.master_settings()
            c = s.config
            out["master"] = self.master.as_dict() | {"effective": {
                "extraLabelNs": sorted(c.extra_label_ns), "denyLabelNs": sorted(c.deny_label_ns),
                "labelWhiteList": c.label_whitelist, "resourceLabels": sorted(c.resource_labels),
                "enableTaints": c.enable_taints, "noPublish": s.no_publish, "instance": c.instance,
                "disableAutoPrefix": c.disable_auto_prefix, "featureGates": dict(s.feature_gates),
                "nodeFeatureAPI": s.node_feature_api, "configPath": s.config_path, "warnings": list(s.warnings)}}
        if self.worker is not None:
            w = self.worker_config()
            out["worker"] = self.worker.as_dict() | {"effective": {
                "sleepInterval": w.sleep_interval, "hooksEnabled": self.hooks_enabled(),
                "labelWhiteList": w.label_whitelist, "labelSources": list(w.sources) if w.sources else None,
                "noPublish": w.no_publish}}
        return out


_MASTER_CONF_KEYS = frozenset({"extraLabelNs", "denyLabelNs", "labelWhiteList", "resourceLabels", "enableTaints",
                               "noPublish", "autoDefaultNs"})


_DEFAULT_GATES = frozenset({"NodeFeatureAPI=true", "DisableAutoPrefix=false", "NodeFeatureGroupAPI=false"})


def _shown_flag(name: str, value: str) -> str:
    """A master flag as the status line names it; "" when it changes nothing (a boolean off, a default gate: the
    Helm chart passes `-feature-gates=NodeFeatureAPI=true` always, templates/master.yaml)."""
    if name == "feature-gates":
        value = ",".join(g for g in value.split(",") if g.replace(" ", "") not in _DEFAULT_GATES)
        return f"-feature-gates={value}" if value else ""
    if value in ("true", "false") and name not in ("extra-label-ns", "deny-label-ns", "label-whitelist"):
        return f"-{name}" if value == "true" else ""
    return f"-{name}={value}"


def _seconds(s: float) -> str:
    return f"{s:g}s"


# --- recognising NFD ----------------------------------------------------------------------------------------


def _pod_spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}


def container_role(container: Mapping[str, Any]) -> tuple[Role, tuple[str, ...]] | None:
    """("master" | "worker", the program's arguments) when this container runs nfd-master / nfd-worker."""
    command = [str(c) for c in container.get("command") or []]
    args = [str(a) for a in container.get("args") or []]
    if command and posixpath.basename(command[0]) in PROGRAMS:
        return PROGRAMS[posixpath.basename(command[0])], (*command[1:], *args)
    if not command and args and posixpath.basename(args[0]) in PROGRAMS:  # the image has no entrypoint
        return PROGRAMS[posixpath.basename(args[0])], tuple(args[1:])
    if not command and "node-feature-discovery" in str(container.get("image") or ""):
        name = str(container.get("name") or "")
        for role in ("master", "worker"):
            if name in (role, f"nfd-{role}"):
                return role, tuple(args)
    return None


def nfd_containers(obj: Mapping[str, Any]) -> list[tuple[Role, Mapping[str, Any], tuple[str, ...]]]:
    out = []
    for c in _pod_spec(obj).get("containers") or []:
        found = container_role(c)
        if found:
            out.append((found[0], c, found[1]))
    return out


def image_version(image: str) -> V.NfdVersion | None:
    """The NFD version of an image reference's tag (`repo:v0.16.4`, `repo:v0.16.4-minimal`, `repo:v0.16.4@sha256:…`);
    None for a tag that is no NFD version (a digest only, `latest`, a vendor's own numbering)."""
    ref = image.split("@", 1)[0]
    name, _, tag = ref.rpartition(":")
    if not name or "/" in tag:
        return None
    try:
        return V.parse_version(tag)
    except V.UnsupportedVersion:
        return None


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else ""


def _volume(spec: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    return next((v for v in spec.get("volumes") or [] if v.get("name") == name), {})


def _mount_for(spec: Mapping[str, Any], container: Mapping[str, Any], path: str
               ) -> tuple[Mapping[str, Any], Mapping[str, Any], str] | None:
    """(volumeMount, volume, path relative to the mount) of the mount that holds `path`: the longest mountPath
    that is `path` or a parent of it (the kubelet mounts the deeper one over the other)."""
    best: tuple[Mapping[str, Any], Mapping[str, Any], str] | None = None
    target = _norm(path)
    for vm in container.get("volumeMounts") or []:
        mp = _norm(str(vm.get("mountPath") or ""))
        if not mp:
            continue
        inside = target == mp or target.startswith(mp.rstrip("/") + "/")
        if inside and (best is None or len(mp) > len(_norm(str(best[0].get("mountPath"))))):
            best = (vm, _volume(spec, str(vm.get("name") or "")), posixpath.relpath(target, mp))
    return best


def file_mount(spec: Mapping[str, Any], container: Mapping[str, Any], kind: FileKind) -> Mount:
    """Where the worker container's source.d / features.d comes from (its volumeMounts + the pod's volumes)."""
    path = FILE_DIRS[kind]
    found = _mount_for(spec, container, path)
    if found is None:
        return Mount(kind, "none", path)
    vm, vol, rel = found
    mount_path, name, sub = _norm(str(vm.get("mountPath"))), str(vm.get("name") or ""), str(vm.get("subPath") or "")
    if "hostPath" in vol:
        host = _norm(str((vol.get("hostPath") or {}).get("path") or ""))
        host = posixpath.join(host, sub) if sub else host
        return Mount(kind, "hostPath", path, volume=name, host_path=_norm(posixpath.join(host, rel)), sub_path=sub)
    if rel != ".":  # a parent directory from a ConfigMap or elsewhere: nothing puts files into this directory
        return Mount(kind, "none", path)
    if "configMap" in vol:
        cm = vol.get("configMap") or {}
        items = tuple((str(i.get("key")), str(i.get("path")), i.get("mode")) for i in cm.get("items") or [])
        return Mount(kind, "configMap", mount_path, volume=name, config_map=str(cm.get("name") or ""),
                     default_mode=cm.get("defaultMode"), items=items, sub_path=sub)
    return Mount(kind, "other", mount_path, volume=name, sub_path=sub)


def _config_ref(spec: Mapping[str, Any], container: Mapping[str, Any], path: str) -> tuple[str, str] | None:
    """(ConfigMap name, key) the config file at `path` is projected from, None when it is not from a ConfigMap."""
    found = _mount_for(spec, container, path)
    if found is None:
        return None
    vm, vol, rel = found
    cm = vol.get("configMap")
    if not cm:
        return None
    file = str(vm.get("subPath") or "") if rel == "." else rel
    if vm.get("subPath") and rel != ".":
        file = posixpath.join(str(vm["subPath"]), rel)
    items = cm.get("items") or []
    if items:
        key = next((str(i.get("key")) for i in items if _norm(str(i.get("path"))) == _norm(file)), None)
        return (str(cm.get("name") or ""), key) if key else None
    return (str(cm.get("name") or ""), file) if file and "/" not in file else None


def _config_path(role: Role, args: Sequence[str], version: V.NfdVersion) -> str:
    return master_config_path(version, args) if role == "master" else worker_config_path(args)


def wanted_config_maps(objects: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """(namespace, name) of every ConfigMap the NFD containers' config files may come from (what to read)."""
    out: set[tuple[str, str]] = set()
    for obj in objects:
        ns = str((obj.get("metadata") or {}).get("namespace") or "")
        for role, c, args in nfd_containers(obj):
            ref = _config_ref(_pod_spec(obj), c, _config_path(role, args, V.CURRENT))
            if ref:
                out.add((ns, ref[0]))
    return out


@dataclass(frozen=True)
class _Found:
    role: Role
    obj: Mapping[str, Any]
    container: Mapping[str, Any]
    args: tuple[str, ...]

    @property
    def namespace(self) -> str:
        return str((self.obj.get("metadata") or {}).get("namespace") or "")


def _workload(f: _Found, version: V.NfdVersion, config_maps: Mapping[tuple[str, str], Mapping[str, Any] | None],
              warnings: list[str]) -> Workload:
    import yaml

    spec = _pod_spec(f.obj)
    meta = f.obj.get("metadata") or {}
    config: Mapping[str, Any] = {}
    source = ""
    path = _config_path(f.role, f.args, version)
    ref = _config_ref(spec, f.container, path) if path else None
    if ref:
        name, key = ref
        source = f"configmap {f.namespace}/{name} key {key}"
        data = config_maps.get((f.namespace, name), None)
        if data is None:
            warnings.append(f"nfd-{f.role} config: ConfigMap {f.namespace}/{name} is missing or could not be read; "
                            "its defaults are assumed")
        elif key in (data.get("data") or {}):
            try:
                loaded = yaml.safe_load((data.get("data") or {})[key]) or {}
            except yaml.YAMLError as e:
                warnings.append(f"nfd-{f.role} config {source}: not YAML ({str(e).splitlines()[0]})")
                loaded = {}
            config = loaded if isinstance(loaded, Mapping) else {}
        else:
            warnings.append(f"nfd-{f.role} config: ConfigMap {f.namespace}/{name} has no key {key} "
                            f"(nfd-{f.role} then runs with its defaults)")
    return Workload(kind=str(f.obj.get("kind") or ""), namespace=f.namespace, name=str(meta.get("name") or ""),
                    container=str(f.container.get("name") or ""), image=str(f.container.get("image") or ""),
                    args=f.args, config=config, config_source=source,
                    node_selector=dict(spec.get("nodeSelector") or {}),
                    tolerations=tuple(spec.get("tolerations") or ()), affinity=dict(spec.get("affinity") or {}))


def from_objects(objects: Iterable[Mapping[str, Any]],
                 config_maps: Mapping[tuple[str, str], Mapping[str, Any] | None] | None = None, *,
                 crd_served: bool = False, version_hint: tuple[V.NfdVersion, str] | None = None,
                 warnings: Sequence[str] = ()) -> NfdDeployment | None:
    """The NFD deployment among these Deployments/DaemonSets (their `kind` set), None when none runs NFD.

    `config_maps`: (namespace, name) -> the ConfigMap object (None: it could not be read); `crd_served`: the API
    server serves nfd.k8s-sigs.io/v1alpha1 nodefeatures; `version_hint`: (version, where it was read) for an image
    without a version tag. With several installations, the namespace holding both a master and a worker wins."""
    found = [_Found(role, o, c, a) for o in objects for role, c, a in nfd_containers(o)]
    if not found:
        return None
    by_ns: dict[str, dict[str, _Found]] = {}
    for f in sorted(found, key=lambda f: (f.namespace, str((f.obj.get("metadata") or {}).get("name")))):
        by_ns.setdefault(f.namespace, {}).setdefault(f.role, f)
    namespace = max(sorted(by_ns), key=lambda ns: len(by_ns[ns]))
    notes = list(warnings)
    others = [ns for ns in sorted(by_ns) if ns != namespace]
    if others:
        notes.append(f"NFD is also deployed in {', '.join(others)}; showing {namespace}")
    picked = by_ns[namespace]
    version, version_source = None, ""
    for role in ("master", "worker"):
        if role in picked and version is None:
            image = str(picked[role].container.get("image") or "")
            version = image_version(image)
            version_source = f"image {image}" if version else ""
    images = {image_version(str(f.container.get("image") or "")) for f in picked.values()} - {None}
    if len(images) > 1:
        notes.append("nfd-master and nfd-worker run different versions: " + ", ".join(sorted(map(str, images))))
    if version is None and version_hint is not None:
        version, version_source = version_hint
    if version is None:
        notes.append(f"the NFD version is unknown (no version in the image tag); modelling {V.CURRENT}")
    cms = config_maps or {}
    model = version or V.CURRENT
    master = _workload(picked["master"], model, cms, notes) if "master" in picked else None
    worker = _workload(picked["worker"], model, cms, notes) if "worker" in picked else None
    for role, f in picked.items():
        notes += [f"nfd-{role} {model} has no flag -{name}: it exits at start (flag provided but not defined)"
                  for name in unknown_flags(role, model, f.args)]
    mounts: dict[FileKind, Mount] = {}
    for kind in ("hook", "feature"):
        if worker is not None:
            w = picked["worker"]
            mounts[kind] = file_mount(_pod_spec(w.obj), w.container, kind)
        else:
            mounts[kind] = Mount(kind, "none", FILE_DIRS[kind])
    if master is not None:
        api = crd_served and parse_master(master.args, master.config, model, namespace).node_feature_api
    else:
        api = crd_served and model.at_least(14)
    return NfdDeployment(namespace=namespace, version=version, version_source=version_source, master=master,
                         worker=worker, node_feature_api=api, mounts=mounts, warnings=tuple(notes))
