"""Labels and features published as NodeFeature objects: NFD's documented third-party extension (v0.14+).

An extension creates, per node, a NodeFeature (nfd.k8s-sigs.io/v1alpha1) carrying the label
`nfd.node.kubernetes.io/node-name: <node>`, with `spec.labels` (node labels to create) and `spec.features`
(input for NodeFeatureRules); nfd-master lists every NodeFeature carrying that label, keeps those in the
namespaces its `restrictions.nodeFeatureNamespaceSelector` selects (all by default), sorts them — its own
namespace first, then by name, then by namespace — and merges them in that order, a later object's labels
winning (docs/usage/customization-guide.md "NodeFeature custom resource"; pkg/nfd-master/nfd-master.go
getAndMergeNodeFeatures). nfd-worker's own object is the one named after the node in nfd-master's namespace;
anything else is "third party" (isThirdPartyNodeFeature: `restrictions.denyNodeFeatureLabels` drops its labels).

The console writes one such object per chosen node:
- namespace: the admin's choice; by default nfd-master's own namespace — it exists wherever NFD runs, NFD's
  own RBAC is already scoped to it, and nfd-master reads it even when a namespace selector narrows the rest
  (the selector example in NFD's master configuration reference selects exactly that namespace);
- name: the admin's choice, by default `<node>-console`: never the node's own name, which in nfd-master's
  namespace is nfd-worker's object (the console refuses to touch that one);
- created, replaced with the resourceVersion it read (409 when someone changed it since), deleted with a
  resourceVersion precondition; identical content sends nothing. Every write goes through the Guard
  (console/guard.py: read-only refuses, audit intent before, outcome after) and is refused unsent when the
  user's RBAC (console/kube/access.py Access) lacks create/update/delete nodefeatures.nfd.k8s-sigs.io in
  that namespace.

`plan_publish` reads what is there and previews, per node, what nfd-master will then write on it (the node's
other NodeFeatures plus this one, with the cluster's NodeFeatureRules: console/nfd/master.compute_node_outcome
and console/nfd_preview.node_change); `preview_text` is the one text both the CLI and a screen show;
`apply_plan` writes. `local_file_spec` turns a hook or feature file into labels and features, running it
locally as nfd-worker's local source would (console/nfd/featurefile.py, console/nfd/hooks.py).
Blocking calls: run them in thread workers.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from console.guard import Guard
from console.kube.nfdstore import (
    NFD_API_VERSION,
    NFD_GROUP,
    NODEFEATURES_PLURAL,
    WORKER_VERSION_ANNOTATION,
    NfdStoreError,
    StoreConflict,
    StoreForbidden,
    StoreNotFound,
    _api_error,
    list_node_features,
    list_nodes,
)
from console.kube.raw import raw, raw_json
from console.nfd import versions as V
from console.nfd.labels import add_ns
from console.nfd.master import MasterConfig, compute_node_outcome
from console.nfd.model import API_VERSION, NODE_NAME_LABEL, Features, InvalidObject
from console.nfd.rules import RuleError
from console.nfd_preview import NodeChange, node_change

THIRD_PARTY_SINCE = V.NfdVersion(0, 14, 0)  # the NodeFeature API on by default; gRPC deprecated (v0.14.0)
MANAGED_BY = ("app.kubernetes.io/managed-by", "console")
NAME_SUFFIX = "-console"
PER_NODE_LISTS = 20  # up to this many nodes: one label-selected list each; more: one list of all NodeFeatures
Action = Literal["create", "update", "delete", "unchanged", "absent"]


class PublishRefused(NfdStoreError):
    """This cluster's NFD cannot take (or must not get) this NodeFeature; nothing was sent. `kind`: the CLI's
    JSON "error" (nfd-too-old, no-nodefeature-api, nfd-version-unknown, refused)."""

    def __init__(self, message: str, kind: str = "refused") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class ClusterNfd:
    """What the console needs to know of the cluster's NFD to publish: the version, nfd-master's namespace."""

    version: V.NfdVersion | None
    namespace: str  # nfd-master's (and nfd-worker's) namespace; "" when not found
    source: str  # where the version came from, for messages
    node_feature_api: bool  # the NodeFeature CRD is served (and, when discovered, nfd-master reads it)
    config: MasterConfig | None = None  # the deployed nfd-master's flags and config file, when discovered

    def master_config(self) -> MasterConfig:
        if self.config is not None:
            return self.config
        return MasterConfig(version=self.version or V.CURRENT, namespace=self.namespace or MasterConfig.namespace)


def worker_object(node_features: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """nfd-worker's own NodeFeature among some: named after its node and carrying the worker's version
    annotation (v0.12+), as nfd-worker writes it (pkg/nfd-worker: the object `<node>` in its namespace)."""
    for nf in node_features:
        meta = nf.get("metadata") or {}
        node = (meta.get("labels") or {}).get(NODE_NAME_LABEL)
        if node and meta.get("name") == node and (meta.get("annotations") or {}).get(WORKER_VERSION_ANNOTATION):
            return nf
    return None


def cluster_nfd(api_client: Any, settings: Any = None) -> ClusterNfd:
    """The one place the publish path asks which NFD the cluster runs: the discovered deployment
    (console/kube/nfddiscovery.py: its namespace, version, whether nfd-master reads NodeFeatures, its flags and
    config); the `nfd_version` setting overrides the version. NfdStoreError when the API cannot be read."""
    from console.kube.nfddiscovery import NfdDiscoveryError, discover_nfd, node_feature_crd_served

    try:
        dep = discover_nfd(api_client)
        served = dep.node_feature_api if dep is not None else node_feature_crd_served(api_client)
    except NfdDiscoveryError as e:
        raise NfdStoreError(str(e)) from e
    override = getattr(settings, "nfd_version", None)
    if dep is None:  # no workload found or readable: what NFD recorded (nfd-worker's NodeFeature, Node annotations)
        return _recorded_nfd(api_client, override, served)
    version, source = dep.version, dep.version_source
    if override:
        source = "the nfd_version setting"
        try:
            version = V.parse_version(override)
        except V.UnsupportedVersion:
            version = None  # refused below as an unknown version
    config = dep.master_config()
    if version is not None and config.version != version:
        config = replace(config, version=version)
    return ClusterNfd(version, dep.namespace, source, served, config)


def _recorded_nfd(api_client: Any, override: str | None, served: bool) -> ClusterNfd:
    """ClusterNfd from what NFD recorded: one nfd-worker NodeFeature (small pages until one carries the
    worker's version annotation), else NFD's version annotations on the Nodes."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    custom = client.CustomObjectsApi(api_client)
    worker, token = None, ""
    try:
        while served and worker is None:
            more: dict[str, Any] = {"_continue": token} if token else {}
            page = raw_json(custom.list_cluster_custom_object(
                NFD_GROUP, NFD_API_VERSION, NODEFEATURES_PLURAL, limit=20, label_selector=NODE_NAME_LABEL,
                _preload_content=False, **more))
            worker = worker_object(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                break
    except ApiException as e:
        if e.status != 404:
            raise _api_error(e, "NodeFeatures") from e
        served = False
    nodes = () if worker is not None else list_nodes(api_client).values()
    return nfd_from_objects([worker] if worker is not None else [], nodes, override, served=served)


def nfd_from_objects(node_features: Iterable[Mapping[str, Any]], nodes: Iterable[Mapping[str, Any]] = (),
                     override: str | None = None, *, served: bool = True) -> ClusterNfd:
    """ClusterNfd from objects already read: nfd-worker's NodeFeature among `node_features` (its version
    annotation, its namespace), else NFD's version annotations on `nodes` (v0.4-v0.14); `override` (the
    nfd_version setting) wins for the version."""
    from console.kube.nfdstore import detect_nfd_version

    worker = worker_object(node_features)
    meta = (worker or {}).get("metadata") or {}
    text = (meta.get("annotations") or {}).get(WORKER_VERSION_ANNOTATION)
    source = "nfd-worker's NodeFeature annotation" if text else ""
    if not text:
        text = detect_nfd_version({}, nodes)
        source = "NFD's Node annotations" if text else ""
    if override:
        text, source = override, "the nfd_version setting"
    try:
        version = V.parse_version(text) if text else None
    except V.UnsupportedVersion:
        version = None
    return ClusterNfd(version, str(meta.get("namespace") or ""), source, served)


def require_third_party(nfd: ClusterNfd) -> None:
    """PublishRefused unless this NFD reads third-party NodeFeatures (v0.14+, the CRD served)."""
    alternative = "upgrade NFD, or put a feature file on the nodes (`nfd files push`)"
    if nfd.version is not None and nfd.version < THIRD_PARTY_SINCE:
        api = "" if nfd.node_feature_api else "; this cluster does not even serve the NodeFeature API"
        raise PublishRefused(f"NFD {nfd.version} (from {nfd.source}) does not read third-party NodeFeatures: "
                             f"nfd-master merges them from {THIRD_PARTY_SINCE} (NodeFeature API on by default){api} — "
                             f"{alternative}", "nfd-too-old")
    if not nfd.node_feature_api:
        raise PublishRefused("this cluster serves no NodeFeature API (nodefeatures.nfd.k8s-sigs.io): NFD is older "
                             f"than v0.12 or not installed; nfd-master reads third-party NodeFeatures from "
                             f"{THIRD_PARTY_SINCE} — {alternative}", "no-nodefeature-api")
    if nfd.version is None:
        raise PublishRefused("the NFD version could not be told (no nfd-worker NodeFeature or Node annotation "
                             "carries it); set nfd_version in config.yaml (or --nfd-version) if it is v0.14 or "
                             "newer", "nfd-version-unknown")


def default_name(node: str) -> str:
    return f"{node}{NAME_SUFFIX}"


def node_feature_body(node: str, namespace: str, name: str, labels: Mapping[str, str],
                      features: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The NodeFeature the console sends for `node`."""
    return {"apiVersion": API_VERSION, "kind": "NodeFeature",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {NODE_NAME_LABEL: node, MANAGED_BY[0]: MANAGED_BY[1]}},
            "spec": {"labels": dict(sorted(labels.items())), "features": dict(features or {})}}


def _spec_view(obj: Mapping[str, Any] | None) -> Any:
    """What decides "same spec": labels and features, empty sections and their absence alike."""
    if obj is None:
        return None
    spec = obj.get("spec") or {}
    feats = {k: v for k, v in (spec.get("features") or {}).items() if v}
    return {"labels": dict(spec.get("labels") or {}), "features": feats,
            "node": ((obj.get("metadata") or {}).get("labels") or {}).get(NODE_NAME_LABEL)}


@dataclass
class NodePlan:
    """One node: what the console will send and what nfd-master will then change on the node."""

    node: str
    namespace: str
    name: str
    action: Action
    body: dict[str, Any] | None = None  # sent on create/update
    current: dict[str, Any] | None = None  # the object now
    resource_version: str = ""
    change: NodeChange | None = None  # nfd-master's changes to the node once this is done
    warnings: list[str] = field(default_factory=list)
    result: str = ""  # after apply_plan: "created", "updated", "deleted", "unchanged", "failed", "refused"
    error: str = ""

    @property
    def target(self) -> str:
        return f"nodefeature {self.namespace}/{self.name} (node {self.node})"

    @property
    def sends(self) -> bool:
        return self.action in ("create", "update", "delete")

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"node": self.node, "namespace": self.namespace, "name": self.name,
                               "action": self.action, "resourceVersion": self.resource_version,
                               "warnings": self.warnings}
        if self.body is not None:
            out["spec"] = self.body["spec"]
        if self.change is not None:
            out["nodeChanges"] = {sec: [f"{sign}{text}" for sign, text in ch.lines()]
                                  for sec, ch in self.change.sections() if ch}
            out["dropped"] = [d.as_dict() for d in self.change.dropped]
        if self.result:
            out["result"] = self.result
        if self.error:
            out["error"] = self.error
        return out


def _read_object(api_client: Any, namespace: str, name: str) -> dict[str, Any] | None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    try:
        found: dict[str, Any] = raw_json(client.CustomObjectsApi(api_client).get_namespaced_custom_object(
            NFD_GROUP, NFD_API_VERSION, namespace, NODEFEATURES_PLURAL, name, _preload_content=False))
        return found
    except ApiException as e:
        if e.status == 404:
            return None
        raise _api_error(e, f"NodeFeature {namespace}/{name}") from e


def plan_publish(api_client: Any, nfd: ClusterNfd, nodes: Sequence[str], *, namespace: str = "",
                 name: str = "", labels: Mapping[str, str] | None = None, features: Mapping[str, Any] | None = None,
                 delete: bool = False, config: MasterConfig | None = None,
                 per_node: Mapping[str, tuple[Mapping[str, str], Mapping[str, Any]]] | None = None) -> list[NodePlan]:
    """Per node: create / update / delete / unchanged / absent, with nfd-master's resulting node changes.

    `labels`/`features`: the same for every node; `per_node`: node -> (labels, features) instead (a hook run
    with each node's NODE_NAME).
    `namespace` "" = nfd-master's; `name` "" = `<node>-console`. PublishRefused (nothing read beyond what tells
    the version) when this NFD takes no third-party NodeFeatures or the target is nfd-worker's own object;
    NfdStoreError when the cluster cannot be read."""
    from console.kube.nfdstore import RuleStore

    require_third_party(nfd)
    namespace = namespace or nfd.namespace
    if not namespace:
        raise PublishRefused("nfd-master's namespace could not be found (no nfd-worker NodeFeature); give "
                             "--namespace")
    config = config or nfd.master_config()
    node_objs = list_nodes(api_client)
    unknown = [n for n in nodes if n not in node_objs]
    if unknown:
        raise StoreNotFound(f"no such node: {', '.join(unknown)}")
    rules = RuleStore(api_client).list()
    if len(nodes) <= PER_NODE_LISTS:
        by_node = {n: list_node_features(api_client, n).get(n, []) for n in nodes}
    else:
        every = list_node_features(api_client)
        by_node = {n: every.get(n, []) for n in nodes}
    plans = []
    for node in nodes:
        obj_name = name or default_name(node)
        if namespace == config.namespace and obj_name == node:
            raise PublishRefused(f"NodeFeature {namespace}/{node} is nfd-worker's own object for node {node} (it "
                                 "rewrites it on every pass); pick another --name or --namespace")
        current = _read_object(api_client, namespace, obj_name)
        rv = str(((current or {}).get("metadata") or {}).get("resourceVersion") or "")
        others = [nf for nf in by_node[node] if (nf.get("metadata") or {}).get("namespace") != namespace
                  or (nf.get("metadata") or {}).get("name") != obj_name]
        plan = NodePlan(node, namespace, obj_name, "absent", current=current, resource_version=rv)
        if current is not None:
            other_node = ((current.get("metadata") or {}).get("labels") or {}).get(NODE_NAME_LABEL)
            if other_node != node:
                raise PublishRefused(f"NodeFeature {namespace}/{obj_name} exists and targets "
                                     f"{other_node or 'no node'}, not {node}; pick another --name")
            if ((current.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY[0]) != MANAGED_BY[1]:
                plan.warnings.append(f"NodeFeature {namespace}/{obj_name} was not created by the console")
        if delete:
            plan.action = "delete" if current is not None else "absent"
            after = others
        else:
            node_labels, node_features = per_node[node] if per_node is not None else (labels or {}, features)
            plan.body = node_feature_body(node, namespace, obj_name, node_labels, node_features)
            if current is not None:
                plan.body["metadata"]["resourceVersion"] = rv
            plan.action = ("create" if current is None else
                           "unchanged" if _spec_view(current) == _spec_view(plan.body) else "update")
            after = [*others, plan.body]
        try:
            outcome = compute_node_outcome(after, rules, config=config)
        except (RuleError, InvalidObject) as e:
            plan.warnings.append(f"preview not available: {e}")
        else:
            plan.change = node_change(node, node_objs.get(node), outcome, config, "")
            plan.warnings.extend(w for w in outcome.warnings if w not in plan.warnings)
            if config.deny_node_feature_labels and not delete and plan.body and plan.body["spec"]["labels"]:
                plan.warnings.append("nfd-master has restrictions.denyNodeFeatureLabels: it ignores the labels of "
                                     "third-party NodeFeatures (features still feed rules)")
        plans.append(plan)
    return plans


def preview_text(plans: Sequence[NodePlan]) -> str:
    """What will be sent and what nfd-master will then change, per node (the CLI's and a screen's preview)."""
    out = []
    for p in plans:
        obj = f"NodeFeature {p.namespace}/{p.name}"
        out.append(f"{p.node}: " + {
            "create": f"create {obj}", "update": f"update {obj} (resourceVersion {p.resource_version})",
            "delete": f"delete {obj} (resourceVersion {p.resource_version})",
            "unchanged": f"{obj} unchanged (same spec: nothing sent)",
            "absent": f"{obj} does not exist (nothing to delete)"}[p.action])
        if p.body is not None and p.action in ("create", "update"):
            for k, v in p.body["spec"]["labels"].items():
                out.append(f"    spec.labels {k}={v}")
            for kind, feats in (p.body["spec"].get("features") or {}).items():
                out.append(f"    spec.features.{kind}: {', '.join(sorted(feats))}")
        if p.change is not None and p.sends:
            lines = [(sec, sign, text) for sec, ch in p.change.sections() for sign, text in ch.lines()]
            if lines:
                out.append("  nfd-master will then change the node:")
                out.extend(f"    {sign} {sec[:-1] if sec.endswith('s') else sec} {text}" for sec, sign, text in lines)
            else:
                out.append("  nfd-master will change nothing on the node")
            ours = {add_ns(k) for k in (p.body or {}).get("spec", {}).get("labels", {})}
            out.extend(f"  dropped by nfd-master: {d.key}={d.value} ({d.reason})" for d in p.change.dropped
                       if add_ns(d.key) in ours)
        out.extend(f"  warning: {w}" for w in p.warnings)
    return "\n".join(out)


def publish_needs(plans: Iterable[NodePlan]) -> tuple[Any, ...]:
    """The RBAC permissions the writes of `plans` call for (console/kube/access.Need)."""
    from console.kube.access import Need

    verbs = {"create": "create", "update": "update", "delete": "delete"}
    return tuple(dict.fromkeys(Need(verbs[p.action], NODEFEATURES_PLURAL, NFD_GROUP, namespace=p.namespace)
                               for p in plans if p.sends))


def _audit_view(obj: Mapping[str, Any] | None) -> Any:
    if obj is None:
        return None
    meta = obj.get("metadata") or {}
    return {"namespace": meta.get("namespace"), "name": meta.get("name"),
            "resourceVersion": meta.get("resourceVersion"), "spec": obj.get("spec")}


def apply_plan(api_client: Any, plans: Sequence[NodePlan], *, guard: Guard | None, access: Any = None,
               settings: Any = None) -> list[NodePlan]:
    """Send each plan's write through `guard`; a node that fails is reported (`result` "failed", `error`) and
    the others go on. Read-only / audit refusals (GuardRefusal) and missing RBAC (StoreForbidden, checked for
    every node before the first write) stop before anything is sent."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    from console.guard import ReadOnly

    todo = [p for p in plans if p.sends]
    for p in plans:
        if not p.sends:
            p.result = "unchanged" if p.action == "unchanged" else "absent"
    if not todo:
        return list(plans)
    if guard is None:
        raise ReadOnly("publishing NodeFeatures (opened for reading only)")
    guard.check(f"{todo[0].action} of {todo[0].target}")
    if access is not None:
        from console.kube.access import MissingPermissions, require

        try:
            require(access, "nfd-publish", settings, needs=publish_needs(todo))
        except MissingPermissions as e:
            raise StoreForbidden(str(e), e.details()["missing"]) from e
    custom = client.CustomObjectsApi(api_client)
    for p in todo:
        what = f"{p.action} of {p.target}"
        try:
            with guard.mutation(f"nfd.nodefeature.{p.action}", f"nodefeature/{p.namespace}/{p.name}", what=what,
                                before=_audit_view(p.current)) as m:
                try:
                    body = p.body if p.body is not None else {}  # a create or update plan always carries one
                    if p.action == "create":
                        out = custom.create_namespaced_custom_object(
                            NFD_GROUP, NFD_API_VERSION, p.namespace, NODEFEATURES_PLURAL, body,
                            _preload_content=False)
                    elif p.action == "update":
                        out = custom.replace_namespaced_custom_object(NFD_GROUP, NFD_API_VERSION, p.namespace,
                                                                      NODEFEATURES_PLURAL, p.name, body,
                                                                      _preload_content=False)
                    else:
                        opts = client.V1DeleteOptions(preconditions=client.V1Preconditions(
                            resource_version=p.resource_version))
                        out = custom.delete_namespaced_custom_object(NFD_GROUP, NFD_API_VERSION, p.namespace,
                                                                     NODEFEATURES_PLURAL, p.name, body=opts,
                                                                     _preload_content=False)
                except ApiException as e:
                    err = _api_error(e, f"NodeFeature {p.namespace}/{p.name}")
                    if e.status == 409 and p.action == "create":
                        err = StoreConflict(f"NodeFeature {p.namespace}/{p.name} was created by someone else since it "
                                            "was read; run again to see it")
                    raise err from e
                doc = raw_json(out) if raw(out).data else {}
                if p.action != "delete":
                    m.after = _audit_view(doc)
                    rv = str((doc.get("metadata") or {}).get("resourceVersion") or "")
                    m.detail = f"resourceVersion {p.resource_version or '(new)'} -> {rv}"
                    p.resource_version = rv
        except NfdStoreError as e:
            p.result, p.error = "failed", str(e)
            continue
        p.result = {"create": "created", "update": "updated", "delete": "deleted"}[p.action]
    return list(plans)


# -- a hook or feature file as a NodeFeature -------------------------------------------------------------------


@dataclass
class LocalSpec:
    """A hook's or feature file's labels and features, as nfd-worker's local source reads them."""

    labels: dict[str, str]
    features: dict[str, Any]  # spec.features shape
    warnings: list[str] = field(default_factory=list)


def local_file_spec(kind: Literal["hook", "feature"], name: str, content: str, version: V.NfdVersion, *,
                    node_name: str = "node", timeout: float = 10.0) -> LocalSpec:
    """Run a hook (here, in a scratch directory, bounded) or parse a feature file as `version`'s local source:
    its labels become `spec.labels`, its `local.label` / `local.feature` attributes `spec.features` — so rules
    matching them behave as if the file were in features.d. ValueError when a hook fails."""
    import os

    from console.nfd.featurefile import parse_feature_lines
    from console.nfd.hooks import run_hook
    from console.nfd.labels import worker_label_check
    from console.nfd.local import LABEL_FEATURE, RAW_FEATURE

    warnings: list[str] = []
    if kind == "hook":
        with tempfile.TemporaryDirectory(prefix="console-publish-") as tmp:
            path = Path(tmp, name)
            path.write_text(content)
            path.chmod(0o755)
            res = run_hook(path, timeout=timeout, env={**os.environ, "NODE_NAME": node_name})
        if not res.ok:
            raise ValueError(f"hook {name} did not run cleanly ({res.error}); fix it before publishing")
        content = res.stdout  # a hook's stdout is read as a feature file is (source/local parseFeatureFile)
    parsed = parse_feature_lines(content, name, version)
    warnings.extend(parsed.warnings)
    labels = {}
    for k, v in parsed.labels.items():
        reason = worker_label_check(k, v)
        if reason:
            warnings.append(f"label {k}={v!r} dropped by nfd-worker: {reason}")
        else:
            labels[k] = v
    f = Features()
    f.attributes[LABEL_FEATURE] = dict(parsed.labels)
    if parsed.features and V.feature_file_no_label_directives(version):
        f.attributes[RAW_FEATURE] = dict(parsed.features)
    return LocalSpec(labels, f.to_api(), warnings)
