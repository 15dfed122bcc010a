"""Pure scheduling predicates and the FailedScheduling text, per Kubernetes version.

Mirrors the default profile's filter order (NodeUnschedulable, TaintToleration,
NodeAffinity, NodeResourcesFit; InterPodAffinity last, console/lab/podaffinity.py):
a node reports the reasons of the first filter that rejects it; NodeResourcesFit reports every insufficient resource.
`FitError.Error()` (shared/reference/scale-up.md 5.6): "0/N nodes are
available: " + "<count> <reason>" strings sorted as strings, joined by ", ",
then "."; since v1.24 a preemption message follows.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from kubernetes.utils import parse_quantity

Obj = dict[str, Any]
Resources = dict[str, int]  # cpu in millicores, memory/storage in bytes, others in units

RESOURCE_REASONS = ("Too many pods",)  # plus every "Insufficient <name>"
NO_NODES = "no nodes available to schedule pods"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
# InterPodAffinity's Unschedulable reasons (console/lab/podaffinity.py): preemption is tried, unlike for the
# UnschedulableAndUnresolvable ones (taints, node affinity, pod affinity)
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


@lru_cache(maxsize=4096)
def quantity(resource: str, value: str) -> int:
    """A quantity in the scheduler's integer unit: millicores for cpu, else ceil units."""
    q = parse_quantity(str(value))
    if resource == "cpu":
        return math.ceil(q * 1000)
    return math.ceil(q)


def resources(spec: Mapping[str, Any] | None) -> Resources:
    return {k: quantity(k, v) for k, v in (spec or {}).items()}


def pod_requests(pod: Obj) -> Resources:
    """Sum of containers' requests, at least the largest init container's (the effective request)."""
    spec = pod.get("spec", {})
    total: Resources = {}
    for c in spec.get("containers") or ():
        for k, v in resources((c.get("resources") or {}).get("requests")).items():
            total[k] = total.get(k, 0) + v
    for c in spec.get("initContainers") or ():
        for k, v in resources((c.get("resources") or {}).get("requests")).items():
            total[k] = max(total.get(k, 0), v)
    for k, v in resources(spec.get("overhead")).items():
        total[k] = total.get(k, 0) + v
    return total


def is_terminated(pod: Obj) -> bool:
    return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")


@dataclass(frozen=True)
class Wording:
    """Reason strings of one scheduler generation."""

    version: str
    affinity: str
    untolerated_any: bool  # True: "node(s) had untolerated taint(s)" without key/value
    taint_form: str  # format with {key} and {value}, used when not untolerated_any
    preemption: bool

    def taint(self, key: str, value: str) -> str:
        if self.untolerated_any:
            return "node(s) had untolerated taint(s)"
        return self.taint_form.format(key=key, value=value)


V1_21 = Wording(
    version="v1.21",
    affinity="node(s) didn't match Pod's node affinity",
    untolerated_any=False,
    taint_form="node(s) had taint {{{key}: {value}}}, that the pod didn't tolerate",
    preemption=False,
)
V1_24 = Wording(
    version="v1.24",
    affinity="node(s) didn't match Pod's node affinity/selector",
    untolerated_any=False,
    taint_form="node(s) had untolerated taint {{{key}: {value}}}",
    preemption=True,
)
CURRENT = Wording(
    version="v1.35",
    affinity="node(s) didn't match Pod's node affinity/selector",
    untolerated_any=True,
    taint_form="",
    preemption=True,
)
UNSCHEDULABLE = "node(s) were unschedulable"


def wording_for(version: str) -> Wording:
    """The reason strings a cluster of `version` (e.g. "v1.21.6") writes."""
    parts = version.lstrip("v").split(".")
    try:
        minor = int(parts[1])
    except (IndexError, ValueError):
        return CURRENT
    if minor < 24:
        return V1_21
    if minor < 34:
        return V1_24
    return CURRENT


@dataclass
class NodeInfo:
    """The scheduler's cached view of one node."""

    name: str
    allocatable: Resources = field(default_factory=dict)
    requested: Resources = field(default_factory=dict)
    pod_count: int = 0
    taints: list[Obj] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False

    @classmethod
    def from_node(cls, node: Obj) -> NodeInfo:
        spec = node.get("spec", {})
        status = node.get("status", {})
        return cls(
            name=node["metadata"]["name"],
            allocatable=resources(status.get("allocatable") or status.get("capacity")),
            taints=list(spec.get("taints") or ()),
            labels=dict(node["metadata"].get("labels") or {}),
            unschedulable=bool(spec.get("unschedulable")),
        )

    def add(self, req: Resources, sign: int = 1) -> None:
        for k, v in req.items():
            self.requested[k] = self.requested.get(k, 0) + sign * v
        self.pod_count += sign


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """v1.Toleration.ToleratesTaint."""
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


def untolerated_taint(taints: Iterable[Obj], tolerations: Sequence[Obj]) -> Obj | None:
    """The first NoSchedule/NoExecute taint no toleration matches."""
    for taint in taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _match_expression(expr: Obj, labels: Mapping[str, str]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), list(expr.get("values") or ())
    has = key in labels
    if op == "In":
        return has and labels[key] in values
    if op == "NotIn":
        return not has or labels[key] not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt"):
        if not has or len(values) != 1:
            return False
        try:
            left, right = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return left > right if op == "Gt" else left < right
    return False


def match_node_selector_terms(terms: Sequence[Obj], labels: Mapping[str, str], name: str = "") -> bool:
    """Terms are ORed; expressions and fields within a term are ANDed; an empty term matches nothing."""
    for term in terms:
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not exprs and not fields:
            continue
        if all(_match_expression(e, labels) for e in exprs) and all(
            _match_expression(f, {"metadata.name": name}) for f in fields
        ):
            return True
    return False


def matches_node_affinity(pod: Obj, node: NodeInfo) -> bool:
    spec = pod.get("spec", {})
    selector = spec.get("nodeSelector") or {}
    if any(node.labels.get(k) != v for k, v in selector.items()):
        return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    if required is None:
        return True
    return match_node_selector_terms(required.get("nodeSelectorTerms") or [], node.labels, node.name)


def insufficient(req: Resources, node: NodeInfo) -> list[str]:
    """NodeResourcesFit: "Too many pods" and one "Insufficient <name>" per short resource."""
    reasons = []
    allowed_pods = node.allocatable.get("pods", 0)
    if node.pod_count + 1 > allowed_pods:
        reasons.append("Too many pods")
    for name, want in req.items():
        if want <= 0:
            continue
        if want > node.allocatable.get(name, 0) - node.requested.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


def filter_node(pod: Obj, req: Resources, node: NodeInfo, wording: Wording = V1_21) -> list[str]:
    """Reasons `node` rejects `pod` (empty: it fits), first failing filter only."""
    tolerations = pod.get("spec", {}).get("tolerations") or []
    if node.unschedulable and not any(
        tolerates(t, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}) for t in tolerations
    ):
        return [UNSCHEDULABLE]
    taint = untolerated_taint(node.taints, tolerations)
    if taint is not None:
        return [wording.taint(taint.get("key", ""), taint.get("value") or "")]
    if not matches_node_affinity(pod, node):
        return [wording.affinity]
    return insufficient(req, node)


def _histogram(counts: Counter[str]) -> str:
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))


def preemption_reason(reasons: Sequence[str]) -> str:
    """Without lower-priority pods, failures preemption might resolve (resources, anti-affinity) have no victims;
    the rest cannot be helped (pkg/scheduler/framework/preemption nodesWherePreemptionMightHelp)."""
    if all(r in ("Too many pods", ANTI_AFFINITY, EXISTING_ANTI_AFFINITY) or r.startswith("Insufficient ")
           for r in reasons):
        return NO_VICTIMS
    return NOT_HELPFUL


def fit_error(num_nodes: int, node_reasons: Iterable[Sequence[str]], wording: Wording = V1_21) -> str:
    """FitError.Error() for a pod every node rejected."""
    if num_nodes == 0:
        return NO_NODES
    per_node = [list(r) for r in node_reasons]
    counts: Counter[str] = Counter(r for reasons in per_node for r in reasons)
    msg = f"0/{num_nodes} nodes are available: {_histogram(counts)}."
    if wording.preemption:
        pre: Counter[str] = Counter(preemption_reason(r) for r in per_node)
        msg += f" preemption: 0/{num_nodes} nodes are available: {_histogram(pre)}.."
    return msg
