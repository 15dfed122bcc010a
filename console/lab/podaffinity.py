"""Required inter-pod (anti-)affinity, as kube-scheduler's InterPodAffinity filter decides it.

kubernetes pkg/scheduler/framework/plugins/interpodaffinity/filtering.go: PreFilter counts, per topology
pair (topologyKey, the node's value for it),
- the assigned pods whose required anti-affinity terms match the incoming pod (the existing pods' direction),
- the assigned pods matching each of the incoming pod's anti-affinity terms,
- the assigned pods matching all of its affinity terms;
Filter then rejects a node whose value of a term's topologyKey has a count (a node without the key is no
domain: anti-affinity passes there, affinity fails). Reasons: "node(s) didn't match pod affinity rules"
(UnschedulableAndUnresolvable), "node(s) didn't match pod anti-affinity rules", "node(s) didn't satisfy
existing pods anti-affinity rules" (both Unschedulable: preemption is tried). The first pod of a group with
affinity to itself passes when no pod matches yet. Terms (pkg/scheduler/framework/types.go newAffinityTerm):
namespaces = the term's list, or the pod's own namespace when it names neither namespaces nor a
namespaceSelector; a nil labelSelector / namespaceSelector selects nothing, an empty one everything
(metav1.LabelSelectorAsSelector).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from console.lab.fit import ANTI_AFFINITY, EXISTING_ANTI_AFFINITY, _match_expression

Obj = dict[str, Any]
AFFINITY = "node(s) didn't match pod affinity rules"


def selector_matches(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector(selector).Matches(labels): nil nothing, {} everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_match_expression(e, labels) for e in selector.get("matchExpressions") or [])


@dataclass(frozen=True)
class Term:
    namespaces: frozenset[str]
    selector: Obj | None
    namespace_selector: Obj | None
    topology_key: str

    def matches(self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str]) -> bool:
        """AffinityTerm.Matches: the pod's namespace is named or selected, and its labels are selected."""
        in_ns = namespace in self.namespaces or selector_matches(self.namespace_selector, ns_labels)
        return in_ns and selector_matches(self.selector, labels)


def required_terms(pod: Obj, kind: str) -> tuple[Term, ...]:
    """The pod's required terms of `kind` ("podAffinity" / "podAntiAffinity")."""
    spec = pod.get("spec") or {}
    raw = (((spec.get("affinity") or {}).get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
           or [])
    own = (pod.get("metadata") or {}).get("namespace") or "default"
    out = []
    for t in raw:
        names = t.get("namespaces") or []
        ns_sel = t.get("namespaceSelector")
        namespaces = frozenset(names) if names or ns_sel is not None else frozenset({own})
        out.append(Term(namespaces, t.get("labelSelector"), ns_sel, t.get("topologyKey") or ""))
    return tuple(out)


@dataclass(frozen=True)
class Placed:
    """An assigned pod as the filter sees it."""

    namespace: str
    labels: Mapping[str, str]
    node_labels: Mapping[str, str]
    anti_terms: tuple[Term, ...]


class Check:
    """PreFilter's counts for one incoming pod; `reason(node_labels)` is its Filter."""

    def __init__(self, pod: Obj, placed: Iterable[Placed], ns_labels: Mapping[str, Mapping[str, str]]) -> None:
        meta = pod.get("metadata") or {}
        self.namespace = meta.get("namespace") or "default"
        self.labels = meta.get("labels") or {}
        self.affinity = required_terms(pod, "podAffinity")
        self.anti = required_terms(pod, "podAntiAffinity")
        own_ns_labels = ns_labels.get(self.namespace, {})
        self.existing_anti: Counter[tuple[str, str]] = Counter()
        self.incoming_anti: Counter[tuple[str, str]] = Counter()
        self.incoming_aff: Counter[tuple[str, str]] = Counter()
        for p in placed:
            for t in p.anti_terms:
                if t.topology_key in p.node_labels and t.matches(self.namespace, self.labels, own_ns_labels):
                    self.existing_anti[(t.topology_key, p.node_labels[t.topology_key])] += 1
            p_ns_labels = ns_labels.get(p.namespace, {})
            for t in self.anti:
                if t.topology_key in p.node_labels and t.matches(p.namespace, p.labels, p_ns_labels):
                    self.incoming_anti[(t.topology_key, p.node_labels[t.topology_key])] += 1
            if self.affinity and all(t.matches(p.namespace, p.labels, p_ns_labels) for t in self.affinity):
                for t in self.affinity:
                    if t.topology_key in p.node_labels:
                        self.incoming_aff[(t.topology_key, p.node_labels[t.topology_key])] += 1
        self.matches_own_affinity = bool(self.affinity) and all(
            t.matches(self.namespace, self.labels, own_ns_labels) for t in self.affinity)

    def reason(self, node_labels: Mapping[str, str]) -> str | None:
        """Filter: None when the node passes, else the plugin's reason."""
        if not self._affinity_ok(node_labels):
            return AFFINITY
        for t in self.anti:
            value = node_labels.get(t.topology_key)
            if value is not None and self.incoming_anti[(t.topology_key, value)] > 0:
                return ANTI_AFFINITY
        if self.existing_anti and any(self.existing_anti[(k, v)] > 0 for k, v in node_labels.items()):
            return EXISTING_ANTI_AFFINITY
        return None

    def _affinity_ok(self, node_labels: Mapping[str, str]) -> bool:
        found = True
        for t in self.affinity:
            value = node_labels.get(t.topology_key)
            if value is None:
                return False  # every topology label must exist on the node
            if self.incoming_aff[(t.topology_key, value)] <= 0:
                found = False
        # the first pod of a group with affinity to itself: nothing matches anywhere yet
        return found or (not self.incoming_aff and self.matches_own_affinity)


def has_required_terms(pod: Obj) -> bool:
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    return any((affinity.get(k) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
               for k in ("podAffinity", "podAntiAffinity"))
