"""NFD as its own manifests deploy it, per version: the objects the lab seeds and how it reads them back.

Followed (github:kubernetes-sigs/node-feature-discovery, at each version's tag):
- v0.8.x-v0.9.x: nfd-master.yaml.template, nfd-worker-daemonset.yaml.template (image k8s.gcr.io/nfd/…,
  `command: [nfd-master]` without args, worker `--server=nfd-master:8080`, volumes host-boot, host-os-release,
  host-sys, source-d, features-d, nfd-worker-conf).
- v0.10+: deployment/overlays/default = base/{rbac,nfd-crds,master,worker-daemonset} + components/{common,
  worker-config[, master-config v0.13+]}: worker `-server=nfd-master:8080` up to v0.16, host-usr-lib (v0.10),
  host-lib (v0.13), host-proc-swaps (v0.16), source-d up to v0.16 (hooks removed in v0.17), nfd-master-conf
  mounted at /etc/kubernetes/node-feature-discovery (v0.13+); registry.k8s.io from v0.12.
- CRDs (base/nfd-crds/nfd-api-crds.yaml): NodeFeatureRule from v0.10, NodeFeature from v0.12, NodeFeatureGroup
  from v0.16.
- RBAC (v0.8.2 nfd-master.yaml.template, v0.9+ base/rbac): nfd-master's ServiceAccount, ClusterRole and
  ClusterRoleBinding; nfd-worker's ServiceAccount, Role and RoleBinding from v0.12 (before, the worker ran as the
  namespace's `default` service account and its DaemonSet named none).
- The master's flags (cmd/nfd-master/main.go): Go `flag` syntax (`-name=value`, `--name value`, bare bools);
  `-enable-nodefeature-api` (v0.12-v0.13 default false, v0.14-v0.15 default true) and
  `-feature-gates=NodeFeatureAPI=…` (v0.16) choose between gRPC and the NodeFeature API; gRPC is gone in v0.17.
  Flags win over the config file (nfd-master.conf: extraLabelNs, denyLabelNs, resourceLabels, enableTaints,
  labelWhiteList, noPublish, autoDefaultNs).
- The worker's config (nfd-worker.conf): core.sleepInterval (Go duration), core.labelWhiteList,
  core.labelSources (v0.12; core.sources before), sources.local.hooksEnabled (v0.14-v0.16).
Lab choices: names as the Helm chart with release `nfd` gives them (Deployment nfd-master, DaemonSet nfd-worker,
ConfigMaps nfd-worker-conf / nfd-master-conf, no kustomize name hash); the worker tolerates the control-plane
taints (as gpu-operator's NFD values do) so the control-plane node is labelled too; the CRDs are NFD's own for the
release (console/lab/nfd_crds.py, without descriptions).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from console.lab.apistore import ApiStore
from console.lab.store import NotFound
from console.nfd import versions as V
from console.nfd.master import MasterConfig

Obj = dict[str, Any]

NFD_CONF_DIR = "/etc/kubernetes/node-feature-discovery"
SOURCE_D = f"{NFD_CONF_DIR}/source.d/"
FEATURES_D = f"{NFD_CONF_DIR}/features.d/"
MASTER, WORKER = "nfd-master", "nfd-worker"
WORKER_CONF, MASTER_CONF = "nfd-worker-conf", "nfd-master-conf"
WORKER_CONF_KEY, MASTER_CONF_KEY = "nfd-worker.conf", "nfd-master.conf"
NFD_API_GROUP = "nfd.k8s-sigs.io"
CONTROL_PLANE_TOLERATIONS = (
    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
)


def image(version: V.NfdVersion) -> str:
    registry = "registry.k8s.io/nfd" if version.at_least(12) else "k8s.gcr.io/nfd"
    return f"{registry}/node-feature-discovery:{version}"


def has_master_config(version: V.NfdVersion) -> bool:
    return version.at_least(13)


def has_worker_rbac(version: V.NfdVersion) -> bool:
    """nfd-worker's own ServiceAccount, Role and RoleBinding (it writes NodeFeatures): v0.12+."""
    return version.at_least(12)


def crd_names(version: V.NfdVersion) -> list[tuple[str, str, str, str]]:
    """(plural, kind, singular, scope) of the NFD CRDs this version's manifests install."""
    out = []
    if version.at_least(12):
        out.append(("nodefeatures", "NodeFeature", "nodefeature", "Namespaced"))
    if version.at_least(10):
        out.append(("nodefeaturerules", "NodeFeatureRule", "nodefeaturerule", "Cluster"))
    if version.at_least(16):  # nothing in the lab reads NodeFeatureGroups
        out.append(("nodefeaturegroups", "NodeFeatureGroup", "nodefeaturegroup", "Namespaced"))
    return out


def released_crd(version: V.NfdVersion, kind: str) -> Obj | None:
    """NFD's own CRD of `kind` as the latest release up to `version` installs it (console/lab/nfd_crds.py:
    annotations and spec, schemas included, descriptions left out); None where the lab has no such release."""
    from console.lab.nfd_crds import CRDS

    known = [r for r in CRDS if V.parse_version(r) <= version and kind in CRDS[r]]
    if not known:
        return None
    best = max(known, key=V.parse_version)
    return copy.deepcopy(CRDS[best][kind])


def crd(plural: str, kind: str, singular: str, scope: str, version: V.NfdVersion | None = None) -> Obj:
    """The CRD object: with `version`, NFD's own for that release (its validation schemas: a real API server
    checks and prunes custom objects by them); otherwise names and a schema that takes any object."""
    released = released_crd(version, kind) if version is not None else None
    if released is not None:
        spec = released["spec"]
        return {"metadata": {"name": f"{plural}.{NFD_API_GROUP}", "annotations": released["annotations"]},
                "spec": spec,
                "status": {"acceptedNames": spec["names"], "storedVersions": [v["name"] for v in spec["versions"]
                                                                              if v.get("storage")],
                           "conditions": [{"type": "Established", "status": "True",
                                           "reason": "InitialNamesAccepted"}]}}
    names: Obj = {"plural": plural, "singular": singular, "kind": kind, "listKind": f"{kind}List"}
    short = {"NodeFeatureRule": "nfr", "NodeFeatureGroup": "nfg"}.get(kind)
    if short:
        names["shortNames"] = [short]
    served: Obj = {"name": "v1alpha1", "served": True, "storage": True,
                   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    if kind == "NodeFeatureGroup":  # nfd-master writes the nodes it found into its status subresource
        served["subresources"] = {"status": {}}
    return {
        "metadata": {"name": f"{plural}.{NFD_API_GROUP}", "annotations": {"controller-gen.kubebuilder.io/version":
                                                                          "v0.14.0"}},
        "spec": {"group": NFD_API_GROUP, "names": names, "scope": scope, "versions": [served]},
        "status": {"acceptedNames": names, "storedVersions": ["v1alpha1"],
                   "conditions": [{"type": "Established", "status": "True", "reason": "InitialNamesAccepted"}]},
    }


def _labels(app: str) -> dict[str, str]:
    return {"app": app}


def master_deployment(version: V.NfdVersion, namespace: str, extra_args: Sequence[str] = ()) -> Obj:
    container: Obj = {"name": MASTER, "image": image(version), "imagePullPolicy": "IfNotPresent",
                      "command": [MASTER],
                      "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                      "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}} if version.at_least(12) else {}}
    if extra_args:
        container["args"] = list(extra_args)
    pod: Obj = {"serviceAccountName": MASTER, "enableServiceLinks": False, "containers": [container],
                "tolerations": [dict(t) for t in CONTROL_PLANE_TOLERATIONS],
                "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchExpressions": [
                        {"key": "node-role.kubernetes.io/control-plane", "operator": "In", "values": [""]}]}}]}}}
    if has_master_config(version):
        container["volumeMounts"] = [{"name": MASTER_CONF, "mountPath": NFD_CONF_DIR, "readOnly": True}]
        pod["volumes"] = [{"name": MASTER_CONF, "configMap": {"name": MASTER_CONF}}]
    return {"metadata": {"name": MASTER, "namespace": namespace, "labels": {"app": "nfd"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": _labels(MASTER)},
                     "template": {"metadata": {"labels": _labels(MASTER)}, "spec": pod}}}


def _worker_volumes(version: V.NfdVersion, features_configmap: str) -> tuple[list[Obj], list[Obj]]:
    host = [("host-boot", "/boot", "/host-boot")]
    if version.at_least(16):
        host.append(("host-proc-swaps", "/proc/swaps", "/host-proc/swaps"))
    host += [("host-os-release", "/etc/os-release", "/host-etc/os-release"), ("host-sys", "/sys", "/host-sys")]
    if version.at_least(10):
        host.append(("host-usr-lib", "/usr/lib", "/host-usr/lib"))
    if version.at_least(13):
        host.append(("host-lib", "/lib", "/host-lib"))
    if not version.at_least(17):
        host.append(("source-d", SOURCE_D, SOURCE_D))
    volumes: list[Obj] = [{"name": n, "hostPath": {"path": p}} for n, p, _ in host]
    mounts: list[Obj] = [{"name": n, "mountPath": m, "readOnly": True} for n, _, m in host]
    if features_configmap:  # the NFD article's alternative: feature files delivered by a ConfigMap
        volumes.append({"name": "features-d", "configMap": {"name": features_configmap}})
    else:
        volumes.append({"name": "features-d", "hostPath": {"path": FEATURES_D}})
    mounts.append({"name": "features-d", "mountPath": FEATURES_D, "readOnly": True})
    volumes.append({"name": WORKER_CONF, "configMap": {"name": WORKER_CONF}})
    mounts.append({"name": WORKER_CONF, "mountPath": NFD_CONF_DIR, "readOnly": True})
    return volumes, mounts


def worker_daemonset(version: V.NfdVersion, namespace: str, *, features_configmap: str = "",
                     extra_args: Sequence[str] = (), tolerations: Sequence[Obj] = ()) -> Obj:
    volumes, mounts = _worker_volumes(version, features_configmap)
    args: list[str] = []
    if not version.at_least(10):
        args.append("--server=nfd-master:8080")
    elif not version.at_least(17):
        args.append("-server=nfd-master:8080")
    args += extra_args
    container: Obj = {"name": WORKER, "image": image(version), "imagePullPolicy": "IfNotPresent",
                      "command": [WORKER],
                      "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                      "resources": {"requests": {"cpu": "5m", "memory": "64Mi"}} if version.at_least(12) else {},
                      "volumeMounts": mounts}
    if args:
        container["args"] = args
    pod: Obj = {"dnsPolicy": "ClusterFirstWithHostNet", "containers": [container], "volumes": volumes,
                "tolerations": [dict(t) for t in (*CONTROL_PLANE_TOLERATIONS, *tolerations)]}
    if has_worker_rbac(version):  # before v0.12 the worker ran as its namespace's `default` service account
        pod = {"serviceAccountName": WORKER, **pod}
    return {"metadata": {"name": WORKER, "namespace": namespace, "labels": {"app": "nfd"}},
            "spec": {"selector": {"matchLabels": _labels(WORKER)},
                     "template": {"metadata": {"labels": _labels(WORKER)}, "spec": pod}}}


def configmap(namespace: str, name: str, data: Mapping[str, str]) -> Obj:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"app": "nfd"}}, "data": dict(data)}


def _rule(groups: Sequence[str], resources: Sequence[str], verbs: Sequence[str], names: Sequence[str] = ()) -> Obj:
    rule: Obj = {"apiGroups": list(groups), "resources": list(resources)}
    if names:
        rule["resourceNames"] = list(names)
    return {**rule, "verbs": list(verbs)}


def master_cluster_role(version: V.NfdVersion) -> Obj:
    """ClusterRole nfd-master as each version's manifests have it (v0.8.2 nfd-master.yaml.template, v0.9+
    deployment/base/rbac/master-clusterrole.yaml)."""
    read = ["get", "list", "watch"]
    rules = []
    if version.at_least(17):
        rules.append(_rule([""], ["namespaces"], ["watch", "list"]))
    node_verbs = ["get", "patch", "update"] if version.minor == 9 else ["get", "patch", "update", "list"]
    rules.append(_rule([""], ["nodes", "nodes/status"] if version.at_least(13) else ["nodes"], node_verbs))
    if version.at_least(10) and not version.at_least(12):
        rules.append(_rule(["topology.node.k8s.io"], ["noderesourcetopologies"], ["create", "get", "update"]))
    if version.at_least(16):
        rules.append(_rule([NFD_API_GROUP], ["nodefeatures", "nodefeaturerules", "nodefeaturegroups"], read))
        status = "nodefeaturegroups/status" if version.at_least(19) else "nodefeaturegroup/status"
        rules.append(_rule([NFD_API_GROUP], [status], ["patch", "update"]))
    elif version.at_least(12):
        rules.append(_rule([NFD_API_GROUP], ["nodefeatures", "nodefeaturerules"], read))
    elif version.at_least(10):
        rules.append(_rule([NFD_API_GROUP], ["nodefeaturerules"], read))
    if version.at_least(14):
        rules.append(_rule(["coordination.k8s.io"], ["leases"], ["create"]))
        rules.append(_rule(["coordination.k8s.io"], ["leases"], ["get", "update"],
                           ["nfd-master.nfd.kubernetes.io"]))
    return {"metadata": {"name": MASTER}, "rules": rules}


def worker_role(version: V.NfdVersion, namespace: str) -> Obj:
    """Role nfd-worker (deployment/base/rbac/worker-role.yaml, v0.12+): its NodeFeature; its own pod from v0.15
    (the owner reference it puts on the NodeFeature); delete from v0.17."""
    rules = [_rule([NFD_API_GROUP], ["nodefeatures"],
                   ["create", "get", "update", "delete"] if version.at_least(17) else ["create", "get", "update"])]
    if version.at_least(15):
        rules.append(_rule([""], ["pods"], ["get"]))
    return {"metadata": {"name": WORKER, "namespace": namespace}, "rules": rules}


def _binding(name: str, namespace: str, role_kind: str) -> Obj:
    # kustomize's namespace transformer puts the ServiceAccount subjects in the overlay's namespace
    meta: Obj = {"name": name, "namespace": namespace} if role_kind == "Role" else {"name": name}
    return {"metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]}


def rbac_objects(version: V.NfdVersion, namespace: str) -> list[tuple[str, Obj]]:
    """NFD's service accounts and RBAC (deployment/base/rbac; the v0.8 templates had nfd-master's only): what a
    real API server needs before the pods that name the service accounts may be created (the ServiceAccount
    admission plugin refuses a pod whose service account does not exist)."""
    def sa(name: str) -> Obj:
        return {"metadata": {"name": name, "namespace": namespace}}

    out: list[tuple[str, Obj]] = [
        ("serviceaccounts", sa(MASTER)),
        ("clusterroles.rbac.authorization.k8s.io", master_cluster_role(version)),
        ("clusterrolebindings.rbac.authorization.k8s.io", _binding(MASTER, namespace, "ClusterRole"))]
    if has_worker_rbac(version):
        out += [("serviceaccounts", sa(WORKER)),
                ("roles.rbac.authorization.k8s.io", worker_role(version, namespace)),
                ("rolebindings.rbac.authorization.k8s.io", _binding(WORKER, namespace, "Role"))]
    return out


@dataclass(frozen=True)
class Manifest:
    """What a scenario deploys (console/lab/scenarios.py's NfdSetup, resolved for one version)."""

    version: V.NfdVersion
    namespace: str = "node-feature-discovery"
    master_args: tuple[str, ...] = ()
    worker_args: tuple[str, ...] = ()
    worker_config: str = ""
    master_config: str = ""
    features_configmap: str = ""  # "" = hostPath, as NFD's manifests
    features_files: tuple[tuple[str, str], ...] = ()  # that ConfigMap's data
    workloads: bool = True  # False: only the CRDs (the synthetic scale world has no nodes to run on)
    worker_tolerations: tuple[Obj, ...] = ()  # beyond the control plane's (Helm value worker.tolerations)


def objects(m: Manifest) -> list[tuple[str, Obj]]:
    """(store resource, object) in the order `kubectl apply -k` would create them, the service accounts and RBAC
    objects (rbac_objects) included."""
    out: list[tuple[str, Obj]] = [("customresourcedefinitions.apiextensions.k8s.io", crd(*c, m.version))
                                  for c in crd_names(m.version)]
    if not m.workloads:
        return out
    out.append(("namespaces", {"metadata": {"name": m.namespace, "labels": {
        "kubernetes.io/metadata.name": m.namespace}}, "spec": {}, "status": {"phase": "Active"}}))
    out += rbac_objects(m.version, m.namespace)
    out.append(("configmaps", configmap(m.namespace, WORKER_CONF, {WORKER_CONF_KEY: m.worker_config})))
    if has_master_config(m.version):
        out.append(("configmaps", configmap(m.namespace, MASTER_CONF, {MASTER_CONF_KEY: m.master_config})))
    if m.features_configmap:
        out.append(("configmaps", configmap(m.namespace, m.features_configmap, dict(m.features_files))))
    out.append(("deployments.apps", master_deployment(m.version, m.namespace, m.master_args)))
    out.append(("daemonsets.apps", worker_daemonset(m.version, m.namespace, features_configmap=m.features_configmap,
                                                    extra_args=m.worker_args, tolerations=m.worker_tolerations)))
    return out


# -- reading the deployed objects back (what the lab's master and workers run with) -------------------------

def container(workload: Obj | None, name: str) -> Obj:
    spec = (((workload or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
    cs = spec.get("containers") or []
    return next((c for c in cs if c.get("name") == name), cs[0] if cs else {})


def container_args(workload: Obj | None, name: str) -> list[str]:
    """command[1:] + args, as the process sees its argv."""
    c = container(workload, name)
    return [str(a) for a in [*(c.get("command") or [])[1:], *(c.get("args") or [])]]


def go_flags(argv: Sequence[str], bools: frozenset[str]) -> dict[str, str]:
    """Go `flag` parsing: `-n=v`, `--n=v`, `-n v`; names in `bools` take no separate value. Last one wins."""
    out: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if not a.startswith("-") or a in ("-", "--"):
            break  # flag.Parse stops at the first non-flag
        name, eq, value = a.lstrip("-").partition("=")
        if not eq:
            if name in bools:
                value = "true"
            elif i < len(argv):
                value, i = argv[i], i + 1
        if name == "feature-gates":  # repeatable: -feature-gates=A=true -feature-gates=B=false
            out[name] = f"{out[name]},{value}" if name in out else value
        else:
            out[name] = value
    return out


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "t", "true")


def _csv(value: Any) -> frozenset[str]:
    if isinstance(value, list | tuple):
        return frozenset(str(x).strip() for x in value if str(x).strip())
    return frozenset(x.strip() for x in str(value or "").split(",") if x.strip())


def _gates(value: str) -> dict[str, bool]:
    gates = {}
    for item in value.split(","):
        k, _, v = item.partition("=")
        if k.strip():
            gates[k.strip()] = _truthy(v or "true")
    return gates


_MASTER_BOOLS = frozenset({"enable-taints", "no-publish", "enable-nodefeature-api", "prune", "verify-node-name",
                           "enable-leader-election", "crd-controller", "featurerules-controller", "version"})


@dataclass(frozen=True)
class MasterSettings:
    config: MasterConfig
    node_feature_api: bool  # the master reads NodeFeature objects (else the workers send labels over gRPC)
    no_publish: bool = False


def master_settings(version: V.NfdVersion, namespace: str, args: Sequence[str], config_text: str) -> MasterSettings:
    """nfd-master's effective options from its argv and nfd-master.conf (flags win, as in cmd/nfd-master)."""
    flags = go_flags(args, _MASTER_BOOLS)
    conf = _yaml(config_text)
    gates = _gates(flags.get("feature-gates", ""))

    def pick(flag: str, key: str) -> Any:
        return flags[flag] if flag in flags else conf.get(key)

    if version.at_least(17):
        api = True
    elif version.at_least(16):
        api = gates.get("NodeFeatureAPI", True)
    elif version.at_least(12):
        api = _truthy(flags.get("enable-nodefeature-api", "true" if version.at_least(14) else "false"))
    else:
        api = False
    whitelist = pick("label-whitelist", "labelWhiteList")
    auto_ns = conf.get("autoDefaultNs", True)
    cfg = MasterConfig(
        version=version, namespace=namespace,
        extra_label_ns=_csv(pick("extra-label-ns", "extraLabelNs")),
        deny_label_ns=_csv(pick("deny-label-ns", "denyLabelNs")),
        label_whitelist=str(whitelist) if whitelist else None,
        resource_labels=_csv(pick("resource-labels", "resourceLabels")),
        enable_taints=_truthy(pick("enable-taints", "enableTaints") or False),
        instance=str(flags.get("instance") or ""),
        disable_auto_prefix=gates.get("DisableAutoPrefix", False) or (version.minor == 15 and not _truthy(auto_ns)),
    )
    return MasterSettings(cfg, bool(api), _truthy(pick("no-publish", "noPublish") or False))


@dataclass(frozen=True)
class WorkerSettings:
    sleep_interval: float = 60.0
    hooks_enabled: bool | None = None
    label_whitelist: str | None = None
    sources: frozenset[str] | None = None  # None: all
    errors: tuple[str, ...] = field(default=())


def worker_settings(args: Sequence[str], config_text: str) -> WorkerSettings:
    """nfd-worker's options from nfd-worker.conf, with its deprecated flags on top (cmd/nfd-worker)."""
    flags = go_flags(args, frozenset({"oneshot", "no-publish", "version"}))
    errors: list[str] = []
    try:
        conf = _yaml(config_text, strict=True)
    except ValueError as exc:
        conf, errors = {}, [str(exc)]
    core = conf.get("core") or {}
    local = ((conf.get("sources") or {}).get("local") or {})
    interval = flags.get("sleep-interval") or core.get("sleepInterval") or "60s"
    try:
        seconds = go_duration(str(interval))
    except ValueError as exc:
        errors.append(str(exc))
        seconds = 60.0
    srcs = flags.get("label-sources") or flags.get("sources") or core.get("labelSources") or core.get("sources")
    sources = None if srcs is None or "all" in _csv(srcs) else _csv(srcs)
    whitelist = flags.get("label-whitelist") or core.get("labelWhiteList")
    hooks = local.get("hooksEnabled")
    return WorkerSettings(seconds, None if hooks is None else _truthy(hooks), str(whitelist) if whitelist else None,
                          sources, tuple(errors))


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(text: str) -> float:
    """time.ParseDuration ("2s", "1m30s", "500ms") in seconds."""
    s = text.strip()
    if s in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        raise ValueError(f"time: invalid duration {text!r}")
    return total


def _yaml(text: str, *, strict: bool = False) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text or "") or {}
    except yaml.YAMLError as exc:
        if strict:
            raise ValueError(f"failed to parse config file: {exc}") from None
        return {}
    return data if isinstance(data, dict) else {}


# -- what the deployed objects say (read by the NFD simulation, console/lab/nfd_sim.py) --------------------


@dataclass(frozen=True)
class Mount:
    source: str  # hostPath | configMap | none
    path: str = ""  # hostPath: the node's directory
    config_map: str = ""
    default_mode: int = 0o644  # configMap: the files' mode (the kubelet's 0644 unless defaultMode says otherwise)


@dataclass(frozen=True)
class Running:
    """What the deployed objects say NFD runs with (one snapshot; replaced when any of them changes)."""

    master: MasterSettings | None  # None: no nfd-master Deployment (nothing labels)
    worker: WorkerSettings | None  # None: no nfd-worker DaemonSet
    daemonset: Obj | None = field(compare=False)  # its status changes often; what matters is compared below
    mounts: dict[str, Mount]  # "hook" | "feature" -> the volume at source.d / features.d
    placement: str = ""  # the worker pods' nodeSelector and tolerations (where the DaemonSet runs)

    @property
    def api(self) -> bool:
        return self.master is not None and self.master.node_feature_api


def read_running(store: ApiStore, namespace: str, version: V.NfdVersion) -> Running:
    """Parse the Deployment, DaemonSet and config ConfigMaps (the one place the lab reads NFD's configuration)."""
    def get(resource: str, name: str) -> Obj | None:
        try:
            return store.get(resource, namespace, name)
        except NotFound:
            return None

    def conf(name: str, key: str) -> str:
        return str(((get("configmaps", name) or {}).get("data") or {}).get(key) or "")

    dep, ds = get("deployments.apps", MASTER), get("daemonsets.apps", WORKER)
    master = None if dep is None else master_settings(version, namespace, container_args(dep, MASTER),
                                                      conf(MASTER_CONF, MASTER_CONF_KEY))
    worker = None if ds is None else worker_settings(container_args(ds, WORKER), conf(WORKER_CONF, WORKER_CONF_KEY))
    pod = ((((ds or {}).get("spec") or {}).get("template") or {}).get("spec") or {})
    placement = json.dumps([pod.get("nodeSelector"), pod.get("tolerations"), pod.get("affinity")], sort_keys=True)
    return Running(master, worker, ds, _mounts(ds), placement)


def _mounts(ds: Obj | None) -> dict[str, Mount]:
    c = container(ds, WORKER)
    spec = ((((ds or {}).get("spec") or {}).get("template") or {}).get("spec") or {})
    volumes = {v.get("name"): v for v in spec.get("volumes") or []}
    out = {"hook": Mount("none"), "feature": Mount("none")}
    for m in c.get("volumeMounts") or []:
        path = str(m.get("mountPath") or "").rstrip("/")
        kind = {SOURCE_D.rstrip("/"): "hook", FEATURES_D.rstrip("/"): "feature"}.get(path)
        vol = volumes.get(m.get("name")) or {}
        if kind is None:
            continue
        if "hostPath" in vol:
            out[kind] = Mount("hostPath", path=str(vol["hostPath"].get("path") or ""))
        elif "configMap" in vol:
            mode = vol["configMap"].get("defaultMode")
            out[kind] = Mount("configMap", config_map=str(vol["configMap"].get("name") or ""),
                              default_mode=int(mode) if isinstance(mode, int) else 0o644)
    return out
