"""nfd-master simulation: NodeFeatures + NodeFeatureRules -> what the master writes on the Node.

Entry point for the lab and the TUI: `compute_node_outcome(...)`. Pure; no network.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.nfd import versions as V
from console.nfd.budget import check_cancelled
from console.nfd.expressions import EvaluationError
from console.nfd.goconv import go_atoi
from console.nfd.labels import (
    ANNOTATION_NS,
    FEATURE_NS,
    DroppedItem,
    LabelPolicy,
    add_ns,
    add_ns_to_keys,
    is_kubernetes_ns,
    qualified_name_errors,
    resolve_dynamic_value,
    split_ns,
    tracking_list,
)
from console.nfd.model import Features, NodeFeatureSpec, sort_node_features
from console.nfd.rules import (
    BACKREF_FEATURE,
    TAINT_EFFECTS,
    CompiledRuleObject,
    Taint,
    compile_rule_objects,
)

FEATURE_LABELS_ANNOTATION = "feature-labels"
EXTENDED_RESOURCES_ANNOTATION = "extended-resources"
FEATURE_ANNOTATIONS_ANNOTATION = "feature-annotations"
TAINTS_ANNOTATION = f"{ANNOTATION_NS}/taints"
ANNOTATION_VALUE_LIMIT = 1024


@dataclass
class MasterConfig:
    """The nfd-master options that change what lands on a Node."""

    version: V.NfdVersion = V.CURRENT
    extra_label_ns: frozenset[str] = frozenset()
    deny_label_ns: frozenset[str] = frozenset()
    label_whitelist: str | None = None
    disable_auto_prefix: bool = False  # DisableAutoPrefix gate (v0.16+) / autoDefaultNs=false (v0.15)
    enable_taints: bool = False
    resource_labels: frozenset[str] = frozenset()  # -resource-labels: labels published as extended resources
    namespace: str = "node-feature-discovery"  # the master's own namespace
    instance: str = ""
    deny_node_feature_labels: bool = False
    disable_labels: bool = False
    disable_extended_resources: bool = False
    disable_annotations: bool = False

    def policy(self) -> LabelPolicy:
        """The label policy; cached (with its per-label verdict memo) while these options stay the same."""
        key = (self.version, frozenset(self.extra_label_ns), frozenset(self.deny_label_ns), self.label_whitelist,
               self.disable_auto_prefix)
        cached = self.__dict__.get("_policy")
        if cached is None or cached[0] != key:
            cached = (key, LabelPolicy(*key))
            self.__dict__["_policy"] = cached
        return cached[1]

    def annotation_key(self, name: str) -> str:
        key = f"{ANNOTATION_NS}/{name}"
        return f"{self.instance}.{key}" if self.instance else key


@dataclass(slots=True)
class RuleResult:
    object: str
    rule: str
    matched: bool
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"object": self.object, "rule": self.rule, "matched": self.matched, "error": self.error}


@dataclass
class RawRuleOutput:
    """Raw rule output merged in rule order (as `kubectl nfd dryrun` shows it, before filtering)."""

    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    vars: dict[str, str] = field(default_factory=dict)
    taints: list[Taint] = field(default_factory=list)
    extended_resources: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"labels": self.labels, "annotations": self.annotations, "vars": self.vars,
                "taints": [t.as_dict() for t in self.taints], "extendedResources": self.extended_resources}


@dataclass
class NodeOutcome:
    """What nfd-master writes for one node."""

    labels: dict[str, str]
    annotations: dict[str, str]  # feature annotations + NFD's tracking annotations
    extended_resources: dict[str, str]
    taints: list[Taint]
    dropped: list[DroppedItem]
    raw: RawRuleOutput
    features: Features  # merged features incl. rule.matched
    warnings: list[str] = field(default_factory=list)
    patch: dict[str, Any] | None = None  # with `node`: labels/annotations add, replace, remove
    # the final labels a NodeFeatureRule wrote (it won over the NodeFeatures) -> (rule object, rule)
    rule_label_origins: dict[str, tuple[str, str]] = field(default_factory=dict)
    _results: list[tuple[str, str, bool, str]] = field(default_factory=list, repr=False)

    @property
    def rule_results(self) -> list[RuleResult]:
        """Per rule, in execution order: matched or not, and the error that made NFD skip it."""
        return [RuleResult(*r) for r in self._results]

    @property
    def rule_errors(self) -> list[RuleResult]:
        return [RuleResult(*r) for r in self._results if r[3]]

    def as_dict(self) -> dict[str, Any]:
        out = {
            "labels": self.labels,
            "annotations": self.annotations,
            "extendedResources": self.extended_resources,
            "taints": [t.as_dict() for t in self.taints],
            "dropped": [d.as_dict() for d in self.dropped],
            "rules": [r.as_dict() for r in self.rule_results],
            "raw": self.raw.as_dict(),
            "warnings": self.warnings,
        }
        if self.patch is not None:
            out["patch"] = self.patch
        return out


def _merge_order(objs: Iterable[Mapping[str, Any] | NodeFeatureSpec], config: MasterConfig
                 ) -> list[tuple[NodeFeatureSpec, dict[str, str]]]:
    """The node's NodeFeatures in the master's merge order, each with the labels it contributes."""
    specs = [o if isinstance(o, NodeFeatureSpec) else NodeFeatureSpec.from_object(o) for o in objs]
    prefix = config.policy().prefix_mode == "prefix"
    out = []
    for s in sort_node_features(specs, config.namespace):
        lab = s.labels
        if config.deny_node_feature_labels and (s.namespace != config.namespace or s.name != s.node_name):
            lab = {}
        out.append((s, add_ns_to_keys(lab) if prefix else dict(lab)))
    return out


def merge_node_features(objs: Iterable[Mapping[str, Any] | NodeFeatureSpec], config: MasterConfig
                        ) -> tuple[Features, dict[str, str]]:
    """getAndMergeNodeFeatures: sort, merge features, collect (auto-prefixed) spec.labels."""
    features = Features()
    labels: dict[str, str] = {}
    for i, (s, lab) in enumerate(_merge_order(objs, config)):
        if i == 0:
            features = s.features.copy()
        else:
            features.merge_from(s.features)
        labels.update(lab)
    return features, labels


def node_feature_label_origins(objs: Iterable[Mapping[str, Any] | NodeFeatureSpec], config: MasterConfig
                               ) -> dict[str, NodeFeatureSpec]:
    """Which NodeFeature each merged label comes from (a later object in the merge order wins, as in
    getAndMergeNodeFeatures)."""
    return {k: s for s, lab in _merge_order(objs, config) for k in lab}


def compute_node_outcome(
    node_features: Sequence[Mapping[str, Any] | NodeFeatureSpec],
    rules: Sequence[Mapping[str, Any]] | Sequence[CompiledRuleObject] = (),
    version: V.NfdVersion | str | None = None,
    extra_label_ns: Iterable[str] = (),
    *,
    config: MasterConfig | None = None,
    node: Mapping[str, Any] | None = None,
) -> NodeOutcome:
    """The node's labels/annotations/taints/ERs as nfd-master writes them.

    `node_features`: NodeFeature dicts (API shape) targeting this node; `rules`: NodeFeatureRule
    dicts (or `compile_rule_objects` output, to compile once for many nodes). `config` overrides
    `version`/`extra_label_ns`. With `node` (a Node dict), `patch` lists what would be added,
    replaced and removed, using the tracking annotations to find stale labels.
    Raises RuleError for a NodeFeatureRule of the wrong shape and InvalidObject for a bad NodeFeature.
    """
    if config is None:
        config = MasterConfig(version=V.parse_version(version), extra_label_ns=frozenset(extra_label_ns))
    v = config.version
    policy = config.policy()
    prefix = policy.prefix_mode == "prefix"
    features, labels = merge_node_features(node_features, config)
    if prefix:
        labels = add_ns_to_keys(labels)
    warnings: list[str] = option_warnings(config)
    compiled: list[CompiledRuleObject]
    if rules and not isinstance(rules[0], CompiledRuleObject):
        compiled = compile_rule_objects(list(rules), v)  # type: ignore[arg-type]
    else:
        compiled = list(rules)  # type: ignore[arg-type]
    if compiled and not V.rules_supported(v):
        warnings.append(f"NodeFeatureRule needs NFD v0.10+; NFD {v} ignores the {len(compiled)} rule object(s)")
        compiled = []

    raw = RawRuleOutput()
    results: list[tuple[str, str, bool, str]] = []
    cr_labels: dict[str, str] = {}
    cr_origin: dict[str, tuple[str, str]] = {}  # label -> (NodeFeatureRule, rule) that last wrote it
    cr_ann: dict[str, str] = {}
    cr_ers: dict[str, str] = {}
    cr_taints: list[Taint] = []
    backref: dict[str, str] | None = None
    raw_labels, raw_vars = raw.labels, raw.vars
    for obj in compiled:
        oname = obj.name
        warnings.extend(obj.warnings(v))
        for rule in obj.rules:
            check_cancelled()  # a cancelled dry-run stops between rules (templates check within)
            try:
                out = rule.execute(features)
            except EvaluationError as exc:
                results.append((oname, rule.name, False, str(exc)))
                continue
            # Fed back for later rules; NFD inserts even an empty map, so the feature then exists.
            if backref is None:
                backref = features.attributes.setdefault(BACKREF_FEATURE, {})
            if not out.matched:
                results.append((oname, rule.name, False, ""))
                continue
            results.append((oname, rule.name, True, ""))
            ol = out.labels
            if ol:
                backref.update(ol)
                raw_labels.update(ol)
                written = rule.prefixed_labels(ol) if prefix else ol
                cr_labels.update(written)
                cr_origin.update(dict.fromkeys(written, (oname, rule.name)))
            if out.vars:
                backref.update(out.vars)
                raw_vars.update(out.vars)
            if out.annotations:
                raw.annotations.update(out.annotations)
                cr_ann.update(add_ns_to_keys(out.annotations) if prefix else out.annotations)
            if out.extended_resources:
                raw.extended_resources.update(out.extended_resources)
                cr_ers.update(add_ns_to_keys(out.extended_resources) if prefix else out.extended_resources)
            if out.taints:
                raw.taints.extend(out.taints)
                cr_taints.extend(out.taints)

    labels.update(cr_labels)
    dropped: list[DroppedItem] = []
    final_labels: dict[str, str] = {}
    for key, value in labels.items():
        fv, reason = policy.filter_label(key, value, features.attributes)
        if fv is None:
            dropped.append(DroppedItem(key, value, reason))
        else:
            final_labels[key] = fv
    label_ers = resource_label_split(final_labels, config, warnings)
    if final_labels and config.disable_labels:
        dropped.extend(DroppedItem(k, val, "restrictions.disableLabels is set") for k, val in final_labels.items())
        final_labels = {}

    ers: dict[str, str] = {}
    if not V.resource_labels_validated(v):
        ers.update(label_ers)  # before v0.13 nfd-master published them as they were
        label_ers = {}
    for key, value in {**label_ers, **cr_ers}.items():  # maps.Copy: a rule's ER wins over a resource label
        fv, reason = filter_extended_resource(key, value, features, policy.prefix_mode)
        if fv is None:
            dropped.append(DroppedItem(key, value, reason))
        else:
            ers[key] = fv
    if ers and config.disable_extended_resources:
        dropped.extend(DroppedItem(k, val, "restrictions.disableExtendedResources is set") for k, val in ers.items())
        ers = {}

    ann: dict[str, str] = {}
    for key, value in cr_ann.items():
        reason = annotation_error(key, value)
        if reason and not (reason == "unprefixed keys are not allowed" and policy.prefix_mode == "keep-unprefixed"):
            dropped.append(DroppedItem(key, value, reason))
        else:
            ann[key] = value
    if ann and config.disable_annotations:
        dropped.extend(DroppedItem(k, val, "restrictions.disableAnnotations is set") for k, val in ann.items())
        ann = {}

    taints: list[Taint] = []
    for t in cr_taints:
        if not config.enable_taints:
            dropped.append(DroppedItem(t.key, t.to_string(), "taints need nfd-master -enable-taints"))
            continue
        reason = taint_error(t)
        if reason:
            dropped.append(DroppedItem(t.key, t.to_string(), reason))
        else:
            taints.append(t)

    annotations: dict[str, str] = {}
    if final_labels:
        annotations[config.annotation_key(FEATURE_LABELS_ANNOTATION)] = tracking_list(final_labels)
    if ers and V.tracks_extended_resources(v):
        annotations[config.annotation_key(EXTENDED_RESOURCES_ANNOTATION)] = tracking_list(ers)
    if ann:
        annotations[config.annotation_key(FEATURE_ANNOTATIONS_ANNOTATION)] = tracking_list(ann)
        annotations.update(ann)
    if taints:
        annotations[TAINTS_ANNOTATION] = ",".join(t.to_string() for t in taints)

    outcome = NodeOutcome(final_labels, annotations, ers, taints, dropped, raw, features, warnings,
                          rule_label_origins={k: cr_origin[k] for k in cr_labels if k in final_labels},
                          _results=results)
    if node is not None:
        outcome.patch = node_patch(node, outcome, config)
    return outcome


def option_warnings(config: MasterConfig) -> list[str]:
    """Options this nfd-master version does not have (cmd/nfd-master/main.go per tag): its flag parser would
    refuse them ("flag provided but not defined") and nfd-master would not start."""
    v, out = config.version, []
    flags = ((config.deny_label_ns, "-deny-label-ns", 13), (config.enable_taints, "-enable-taints", 12))
    for given, flag, since in flags:
        if given and not v.at_least(since):
            out.append(f"nfd-master {flag} arrived in v0.{since}.0: NFD {v} has no such flag (it would not start); "
                       "the preview ignores it")
    return out


def go_atoi_ok(value: str) -> bool:
    """strconv.Atoi(value) succeeds: optional sign, ASCII decimal digits, within int64."""
    return go_atoi(value) is not None


def resource_label_split(labels: dict[str, str], config: MasterConfig, warnings: list[str]) -> dict[str, str]:
    """-resource-labels: move the named labels (default namespace added) out of `labels` into extended resources.

    As filterFeatureLabels (pkg/nfd-master/nfd-master.go, v0.6.0-v0.16.x) does: only labels that passed
    the label filters, only integer values (strconv.Atoi; a non-integer stays a label), and the name keeps
    the label's full name. v0.17.0 removed the option.
    """
    if not config.resource_labels:
        return {}
    v = config.version
    if not V.resource_labels_supported(v):
        if v.at_least(17):
            warnings.append(f"nfd-master -resource-labels was removed in v0.17.0: NFD {v} has no such option "
                            "(use a NodeFeatureRule's extendedResources)")
        else:
            warnings.append(f"nfd-master -resource-labels arrived in v0.6.0: NFD {v} has no such option")
        return {}
    ers: dict[str, str] = {}
    for name in sorted(config.resource_labels):
        key = add_ns(name)
        value = labels.get(key)
        if value is None:
            continue
        if not go_atoi_ok(value):
            warnings.append(f"label {key}={value!r} stays a label: -resource-labels needs an integer value "
                            "(strconv.Atoi)")
            continue
        ers[key] = labels.pop(key)
    return ers


def filter_extended_resource(key: str, value: str, features: Features, prefix_mode: str) -> tuple[str | None, str]:
    if value.startswith("@"):
        value, err = resolve_dynamic_value(value, features.attributes)
        if err:
            return None, err
    errs = qualified_name_errors(key)
    if errs:
        return None, f"invalid name {key!r}: " + "; ".join(errs)
    ns, _ = split_ns(key)
    if not ns:
        if prefix_mode != "keep-unprefixed":
            return None, "unprefixed keys are not allowed"
    elif is_kubernetes_ns(ns) and ns != FEATURE_NS and not ns.endswith("." + FEATURE_NS):
        return None, "namespace is not allowed"
    from kubernetes.utils import parse_quantity  # heavy; only when a rule has extended resources

    try:
        parse_quantity(value)
    except ValueError as exc:
        return None, f"invalid value {value!r}: {exc}"
    return value, ""


def annotation_error(key: str, value: str) -> str:
    errs = qualified_name_errors(key)
    if errs:
        return f"invalid annotation key {key!r}: " + "; ".join(errs)
    ns, _ = split_ns(key)
    if not ns:
        return "unprefixed keys are not allowed"
    if is_kubernetes_ns(ns) and ns != FEATURE_NS and not ns.endswith("." + FEATURE_NS):
        return "namespace is not allowed"
    if len(value) > ANNOTATION_VALUE_LIMIT:
        return ("invalid value: too long: feature annotations must not be longer than "
                f"{ANNOTATION_VALUE_LIMIT} characters")
    return ""


def taint_error(t: Taint) -> str:
    ns, _ = split_ns(t.key)
    if not ns:
        return "unprefixed keys are not allowed"
    if is_kubernetes_ns(ns) and ns != FEATURE_NS and not ns.endswith("." + FEATURE_NS):
        return "namespace is not allowed"
    if not t.effect:
        return "empty taint effect"
    if t.effect not in TAINT_EFFECTS:
        return "invalid taint effect"
    return ""


def _names(cslist: str, ns: str) -> set[str]:
    return {n if "/" in n else f"{ns}/{n}" for n in cslist.split(",")} if cslist else set()


def _patches(remove: set[str], old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, Any]:
    """createPatches (allowOverwrite=true: NFD replaces values even of labels it did not create)."""
    return {
        "remove": sorted(k for k in remove if k in old and k not in new),
        "add": {k: v for k, v in sorted(new.items()) if k not in old},
        "replace": {k: v for k, v in sorted(new.items()) if k in old and old[k] != v},
    }


def node_patch(node: Mapping[str, Any], outcome: NodeOutcome, config: MasterConfig) -> dict[str, Any]:
    """What updateNodeObject would patch, from the old tracking annotations."""
    meta = node.get("metadata") or {}
    old_labels = meta.get("labels") or {}
    old_ann = meta.get("annotations") or {}
    remove_labels = _names(old_ann.get(config.annotation_key(FEATURE_LABELS_ANNOTATION), ""), FEATURE_NS)
    remove_ann = _names(old_ann.get(config.annotation_key(FEATURE_ANNOTATIONS_ANNOTATION), ""), FEATURE_NS)
    remove_ann |= {config.annotation_key(n) for n in (FEATURE_LABELS_ANNOTATION, EXTENDED_RESOURCES_ANNOTATION,
                                                      FEATURE_ANNOTATIONS_ANNOTATION, "master.version",
                                                      "worker.version")}
    remove_ann.add(TAINTS_ANNOTATION)
    return {
        "labels": _patches(remove_labels, old_labels, outcome.labels),
        "annotations": _patches(remove_ann, old_ann, outcome.annotations),
    }


def dry_run_many(rule_objects: Sequence[Mapping[str, Any]], node_features_by_node: Mapping[str, Sequence[Any]],
                 config: MasterConfig | None = None) -> dict[str, NodeOutcome]:
    """Compile rules once and compute the outcome for every node (the TUI's preview over a cluster)."""
    config = config or MasterConfig()
    compiled = compile_rule_objects(list(rule_objects), config.version)
    return {node: compute_node_outcome(nfs, compiled, config=config) for node, nfs in node_features_by_node.items()}
