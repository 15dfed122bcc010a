"""Kubernetes' placement rules for one pod on one node, as the scheduler's filters apply them.

Pure functions over the API's shapes (dicts as the server sends them), so the planner predicts exactly what the
scheduler will accept after the scale-ups:

- nodeSelector: every key=value must be a node label (NodeAffinity plugin).
- required nodeAffinity: nodeSelectorTerms are ORed, a term's requirements ANDed; a term with neither
  matchExpressions nor matchFields matches nothing; In/NotIn/Exists/DoesNotExist/Gt/Lt on labels (NotIn and
  DoesNotExist hold when the label is absent; Gt/Lt need the label and a single integer value on both sides);
  matchFields supports only metadata.name with In/NotIn.
  k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go (nodeSelectorTerms.Match,
  nodeSelectorRequirementsAsSelector, nodeSelectorRequirementsAsFieldSelector) and
  k8s.io/apimachinery/pkg/labels/selector.go (Requirement.Matches: Gt/Lt parse int64).
- taints: only NoSchedule and NoExecute taints filter (TaintToleration plugin, PreferNoSchedule only scores);
  a toleration tolerates a taint when its effect is empty or equal, its key empty (with Exists: every taint)
  or equal, and Exists, or Equal (the default operator) with the same value.
  k8s.io/api/core/v1/toleration.go ToleratesTaint.
- a cordoned node (spec.unschedulable) takes only pods that tolerate the taint
  node.kubernetes.io/unschedulable:NoSchedule (pkg/scheduler/framework/plugins/nodeunschedulable).
- required pod anti-affinity, both directions (pkg/scheduler/framework/plugins/interpodaffinity/filtering.go):
  the incoming pod's terms must match no pod already in the node's topology domain (same value of the term's
  topologyKey), and no existing pod's term may match the incoming pod in that existing pod's domain; a node
  without the topologyKey label is in no domain, so a term never excludes it. A term's namespaces default to
  its pod's own namespace (GetNamespacesFromPodAffinityTerm); LabelSelector = matchLabels AND matchExpressions
  (In/NotIn/Exists/DoesNotExist), an empty selector matches every pod (metav1.LabelSelectorAsSelector).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from console.planner.model import AntiAffinityTerm, Node

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
UNSCHEDULABLE_TAINT: Mapping[str, str] = {"key": "node.kubernetes.io/unschedulable", "effect": NO_SCHEDULE}
FIELD_NODE_NAME = "metadata.name"


def _int(s: Any) -> int | None:
    try:
        return int(str(s), 10)
    except ValueError:
        return None


def requirement_matches(req: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One nodeSelectorRequirement / LabelSelectorRequirement against a label set."""
    key, op, values = req.get("key", ""), req.get("operator", ""), list(req.get("values") or ())
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        have, want = _int(labels[key]), _int(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False  # an unknown operator is a validation error in the API: it never matches


def field_matches(req: Mapping[str, Any], node_name: str) -> bool:
    """A matchFields requirement: only metadata.name with In / NotIn is valid."""
    if req.get("key") != FIELD_NODE_NAME:
        return False
    values = list(req.get("values") or ())
    if req.get("operator") == "In":
        return node_name in values
    if req.get("operator") == "NotIn":
        return node_name not in values
    return False


def term_matches(term: Mapping[str, Any], node: Node) -> bool:
    """One nodeSelectorTerm: its matchExpressions and matchFields ANDed; an empty term matches nothing."""
    exprs = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not exprs and not fields:
        return False
    return all(requirement_matches(r, node.labels) for r in exprs) and all(
        field_matches(r, node.name) for r in fields
    )


def selector_matches(node_selector: Mapping[str, str], node: Node) -> bool:
    return all(node.labels.get(k) == v for k, v in node_selector.items())


def affinity_matches(terms: Sequence[Mapping[str, Any]], node: Node) -> bool:
    """Required node affinity: no terms = no constraint; else any term (ORed)."""
    return not terms or any(term_matches(t, node) for t in terms)


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, str]) -> bool:
    """k8s.io/api/core/v1/toleration.go ToleratesTaint."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def untolerated_taint(tolerations: Sequence[Mapping[str, Any]], node: Node) -> Mapping[str, str] | None:
    """The first NoSchedule/NoExecute taint (or the cordon's taint) the pod does not tolerate; None: none."""
    taints: list[Mapping[str, str]] = [t for t in node.taints if t.get("effect") in (NO_SCHEDULE, NO_EXECUTE)]
    for taint in taints:
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def cordon_blocks(tolerations: Sequence[Mapping[str, Any]], node: Node) -> bool:
    """NodeUnschedulable: a cordoned node admits only pods tolerating node.kubernetes.io/unschedulable."""
    return node.unschedulable and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations)


def fmt_taint(taint: Mapping[str, str]) -> str:
    value = taint.get("value") or ""
    return f"{taint.get('key', '')}{'=' + value if value else ''}:{taint.get('effect', '')}"


def label_selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector: matchLabels AND matchExpressions; {} matches everything."""
    ml = selector.get("matchLabels") or {}
    if any(labels.get(k) != v for k, v in ml.items()):
        return False
    return all(requirement_matches(r, labels) for r in selector.get("matchExpressions") or ())


def term_selects(term: AntiAffinityTerm, owner_namespace: str, namespace: str, labels: Mapping[str, str]) -> bool:
    """Does a pod (namespace, labels) match `term` of a pod in `owner_namespace`?"""
    namespaces = term.namespaces or (owner_namespace,)
    return namespace in namespaces and label_selector_matches(term.selector, labels)


def conflicts(
    a_ns: str, a_labels: Mapping[str, str], a_terms: Iterable[AntiAffinityTerm],
    b_ns: str, b_labels: Mapping[str, str], b_terms: Iterable[AntiAffinityTerm],
) -> set[str]:
    """The topology keys on which pods a and b may not share a domain (either one's term matching the other)."""
    keys = {t.topology_key for t in a_terms if term_selects(t, a_ns, b_ns, b_labels)}
    keys |= {t.topology_key for t in b_terms if term_selects(t, b_ns, a_ns, a_labels)}
    return keys


def domain(node: Node, topology_key: str) -> str | None:
    """The node's value of the topology key; None: the node is in no domain of that key."""
    return node.labels.get(topology_key)
