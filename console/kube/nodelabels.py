"""A node's labels by their real origin, from what NFD records, not from the label names.

- NFD's record of what it manages is nfd-master's `nfd.node.kubernetes.io/feature-labels` annotation on the
  Node (the label names it wrote, the default namespace left out): those labels, and only those, are NFD's —
  the nodes table counts them (`nfd_label_count`) and the node detail splits them by origin.
- Which object a managed label comes from is what nfd-master computes: the node's NodeFeatures merged in its
  order (its own namespace first, then by name, then by namespace; a later object wins) and then the
  NodeFeatureRules, whose labels win over the NodeFeatures' (pkg/nfd-master/nfd-master.go
  getAndMergeNodeFeatures, processNodeFeatureRule) — console/nfd/master evaluates the cluster's rules against
  the node's NodeFeatures to tell which rule yields which label.
- nfd-worker's own NodeFeature (named after the node, in nfd-master's namespace) carries every source's
  labels; the worker names them `<source>-<feature>` except for the `local` (feature files, hooks) and
  `custom` sources, which it leaves unmangled (pkg/nfd-worker/nfd-worker.go GetFeatureLabels). The local
  source's labels are also its `local.label` feature (source/local/local.go, v0.10+), which tells them
  from `custom` ones; before v0.10 the worker keeps no such feature, so those two stay one group.
- third-party NodeFeatures by namespace/name; a managed label neither the NodeFeatures nor the rules yield
  now (nfd-master has not caught up) is "NFD, origin not known"; every label the annotation does not list is
  "other". Without NodeFeatures (NFD before v0.12 sent labels over gRPC) the worker's `<source>-` names are
  the only record: those go to their source, the rest to local/custom before v0.10 (no rules yet), else to
  "origin not known".
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from console.nfd.labels import FEATURE_NS, add_ns, is_nfd_label_ns, split_ns

# NFD's built-in feature sources, in the order the console lists them
SOURCES = ("cpu", "kernel", "memory", "network", "pci", "usb", "system", "storage")
WORKER_GROUPS = (*SOURCES, "local", "custom", "local/custom")
FEATURE_LABELS_ANNOTATION = "nfd.node.kubernetes.io/feature-labels"
LOCAL_LABEL_FEATURE = "local.label"
UNKNOWN = "NFD, origin not known"
OTHER = "other"


@dataclass(frozen=True, order=True)
class Origin:
    """Where one label comes from. `kind`: worker (detail = its source), nodefeature (detail = ns/name),
    rule (detail = object/rule), nfd (managed, origin not known), other (not NFD's)."""

    rank: int
    kind: str
    detail: str = ""

    @property
    def group(self) -> str:
        if self.kind == "worker":
            return self.detail
        if self.kind == "nodefeature":
            return f"NodeFeature {self.detail}"
        if self.kind == "rule":
            obj, _, rule = self.detail.partition("/")
            return f"rule {obj}: {rule}"
        return UNKNOWN if self.kind == "nfd" else OTHER

    @property
    def nfd(self) -> bool:
        return self.kind != "other"


def _worker(source: str) -> Origin:
    return Origin(WORKER_GROUPS.index(source), "worker", source)


_NODEFEATURE_RANK, _RULE_RANK, _UNKNOWN_RANK, _OTHER_RANK = 100, 200, 300, 400


def feature_label_keys(annotations: Mapping[str, str]) -> set[str]:
    """Label keys NFD says it manages (its feature-labels annotation, names without the default namespace)."""
    raw = annotations.get(FEATURE_LABELS_ANNOTATION, "")
    return {add_ns(item.strip()) for item in raw.split(",") if item.strip()}


def nfd_managed(labels: Mapping[str, str], annotations: Mapping[str, str]) -> set[str]:
    """The node's labels NFD manages: listed in its feature-labels annotation and on the node."""
    return feature_label_keys(annotations) & set(labels)


def nfd_label_count(labels: Mapping[str, str], annotations: Mapping[str, str]) -> int:
    """The nodes table's NFD count: the same labels the node detail files under NFD origins."""
    return len(nfd_managed(labels, annotations))


def _worker_source(key: str, local_keys: Collection[str] | None) -> str:
    if local_keys is not None and key in local_keys:
        return "local"
    ns, name = split_ns(key)
    source = name.split("-", 1)[0] if "-" in name else ""
    if ns == FEATURE_NS and source in SOURCES:
        return source
    return "custom" if local_keys is not None else "local/custom"


def label_origins(node: str, labels: Mapping[str, str], annotations: Mapping[str, str],
                  node_features: Sequence[Mapping[str, Any]] = (), rules: Sequence[Mapping[str, Any]] = (),
                  config: Any = None) -> dict[str, Origin]:
    """Each label's origin. `node_features`: the node's NodeFeature objects; `rules`: the cluster's
    NodeFeatureRules; `config`: console/nfd/master.MasterConfig (version, nfd-master's namespace)."""
    from console.nfd.master import MasterConfig, compute_node_outcome, node_feature_label_origins
    from console.nfd.model import InvalidObject
    from console.nfd.rules import RuleError

    managed = nfd_managed(labels, annotations)
    config = config or MasterConfig()
    from_nf: dict[str, Any] = {}
    from_rule: dict[str, tuple[str, str]] = {}
    local_keys: set[str] | None = None
    if node_features:
        # errors (an invalid NodeFeature or rule) are the rules screen's to show; here those labels stay
        # "origin not known"
        with contextlib.suppress(InvalidObject):
            from_nf = node_feature_label_origins(node_features, config)
        with contextlib.suppress(RuleError, InvalidObject):
            from_rule = compute_node_outcome(node_features, rules, config=config).rule_label_origins
        worker = next((s for s in from_nf.values() if s.namespace == config.namespace and s.name == node), None)
        if worker is not None and LOCAL_LABEL_FEATURE in worker.features.attributes:
            local_keys = {add_ns(k) for k in worker.features.attributes[LOCAL_LABEL_FEATURE]}
    out: dict[str, Origin] = {}
    for key in labels:
        if key not in managed:
            out[key] = Origin(_OTHER_RANK, "other")
        elif key in from_rule:
            obj, rule = from_rule[key]
            out[key] = Origin(_RULE_RANK, "rule", f"{obj}/{rule}")
        elif key in from_nf:
            s = from_nf[key]
            if s.namespace == config.namespace and s.name == node:
                out[key] = _worker(_worker_source(key, local_keys))
            else:
                out[key] = Origin(_NODEFEATURE_RANK, "nodefeature", f"{s.namespace}/{s.name}")
        elif not node_features:
            out[key] = _by_name(key, config.version)
        else:
            out[key] = Origin(_UNKNOWN_RANK, "nfd")
    return out


def _by_name(key: str, version: Any) -> Origin:
    """A managed label with no NodeFeature to read (NFD before v0.12 sent its labels over gRPC): nfd-worker's
    `<source>-` names are its record of the source; before v0.10 (no NodeFeatureRules) the rest can only be the
    local or custom source."""
    ns, name = split_ns(key)
    source = name.split("-", 1)[0] if "-" in name else ""
    if ns == FEATURE_NS and source in SOURCES:
        return _worker(source)
    if not version.at_least(10):
        return _worker("local/custom")
    return Origin(_UNKNOWN_RANK, "nfd")


def group_labels(labels: Mapping[str, str], annotations: Mapping[str, str],
                 origins: Mapping[str, Origin] | None = None) -> dict[str, dict[str, str]]:
    """Labels by origin group: nfd-worker's sources, third-party NodeFeatures, rules, origin not known, other;
    keys sorted within a group. The feature-labels annotation decides what is NFD's: an origin computed
    earlier that disagrees with it now (or none yet) gives "NFD, origin not known" or "other" — so the NFD
    groups always hold `nfd_label_count` labels."""
    managed = nfd_managed(labels, annotations)
    groups: dict[Origin, dict[str, str]] = {}
    for key in sorted(labels):
        origin = (origins or {}).get(key)
        if origin is None or origin.nfd != (key in managed):
            origin = Origin(_UNKNOWN_RANK, "nfd") if key in managed else Origin(_OTHER_RANK, "other")
        groups.setdefault(origin, {})[key] = labels[key]
    return {o.group: groups[o] for o in sorted(groups)}


def label_group(key: str) -> str:
    """A sort key from the name alone (the compare screen's order): NFD's namespaces, then the rest."""
    ns, name = split_ns(key)
    if is_nfd_label_ns(ns):
        source = name.split("-", 1)[0] if "-" in name else ""
        return source if source in SOURCES else "local"
    return OTHER



def read_label_origins(node: Any, node_features: Callable[[], list[dict[str, Any]]],
                       rules: Callable[[], list[dict[str, Any]]], nfd_version: str | None = None
                       ) -> tuple[dict[str, Origin], str]:
    """Each label of `node` (console/kube/model.NodeInfo) with its origin, and why the origins are not known
    ("" when they are): `node_features()` reads its NodeFeatures, `rules()` the cluster's NodeFeatureRules (two
    list calls; the rules only when there are NodeFeatures). No NodeFeature API (NFD < v0.12) or no access:
    NFD's annotation and the label names alone. What the node detail shows and `console get node` prints."""
    from console.kube.nfdstore import NfdStoreError
    from console.kube.nodefeatures import nfd_from_objects

    note = ""
    try:
        nfs = node_features()
        found_rules = rules() if nfs else []
    except NfdStoreError as e:
        nfs, found_rules, note = [], [], f"no NodeFeature read ({e}): origins from NFD's annotation and label names"
    if not nfs and not note:
        note = "no NodeFeature for this node: origins from NFD's annotation and label names"
    # the Node's own NFD version annotations (v0.4-v0.14) when there is no worker NodeFeature to tell it
    config = nfd_from_objects(nfs, [{"metadata": {"annotations": node.annotations}}], nfd_version).master_config()
    return label_origins(node.name, node.labels, node.annotations, nfs, found_rules, config), note
