"""Kubernetes placement semantics (console/planner/constraints.py), table-driven from the real sources' cases.

- tolerations: k8s.io/api/core/v1/toleration_test.go TestTolerationToleratesTaint (the same descriptions);
- node affinity: k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go and
  k8s.io/apimachinery/pkg/labels/selector.go (Requirement.Matches: NotIn/DoesNotExist hold on a missing label,
  Gt/Lt need the label and one int64 value, an empty term matches nothing, matchFields only metadata.name);
- the unschedulable taint: pkg/scheduler/framework/plugins/nodeunschedulable;
- pod anti-affinity: pkg/scheduler/framework/plugins/interpodaffinity/filtering.go (both directions, the
  topologyKey's domains, a node without the key in no domain, namespaces default to the term owner's).
"""

from __future__ import annotations

import pytest

from console.planner import constraints as c
from console.planner.model import AntiAffinityTerm, BoundPod, Node, PendingPod, PlanInput
from console.planner.problem import build

NS, NE = "NoSchedule", "NoExecute"

TOLERATION_CASES = [
    ("same key and effect, Exists, taint has no value", {"key": "foo", "operator": "Exists", "effect": NS},
     {"key": "foo", "effect": NS}, True),
    ("same key and effect, Exists, taint has some value", {"key": "foo", "operator": "Exists", "effect": NS},
     {"key": "foo", "value": "bar", "effect": NS}, True),
    ("empty key and Exists matches all taints", {"key": "", "operator": "Exists", "effect": NS},
     {"key": "foo", "value": "bar", "effect": NS}, True),
    ("same key, effect and value, Equal", {"key": "foo", "operator": "Equal", "value": "bar", "effect": NS},
     {"key": "foo", "value": "bar", "effect": NS}, True),
    ("same key and effect, different values, Equal",
     {"key": "foo", "operator": "Equal", "value": "value1", "effect": NS},
     {"key": "foo", "value": "value2", "effect": NS}, False),
    ("same key and value, different effects", {"key": "foo", "operator": "Equal", "value": "bar", "effect": NS},
     {"key": "foo", "value": "bar", "effect": NE}, False),
    ("Gt: taint value less than toleration value", {"key": "sla", "operator": "Gt", "value": "950", "effect": NS},
     {"key": "sla", "value": "800", "effect": NS}, False),
    ("Gt: taint value greater", {"key": "sla", "operator": "Gt", "value": "750", "effect": NS},
     {"key": "sla", "value": "950", "effect": NS}, True),
    ("Lt: taint value greater", {"key": "sla", "operator": "Lt", "value": "800", "effect": NS},
     {"key": "sla", "value": "950", "effect": NS}, False),
    ("Lt: taint value less", {"key": "sla", "operator": "Lt", "value": "950", "effect": NS},
     {"key": "sla", "value": "800", "effect": NS}, True),
    ("Gt: equal values", {"key": "sla", "operator": "Gt", "value": "950", "effect": NS},
     {"key": "sla", "value": "950", "effect": NS}, False),
    ("Gt: non-numeric taint value", {"key": "sla", "operator": "Gt", "value": "950", "effect": NS},
     {"key": "sla", "value": "high", "effect": NS}, False),
    ("Gt: negative values", {"key": "k", "operator": "Gt", "value": "-100", "effect": NS},
     {"key": "k", "value": "-200", "effect": NS}, False),
    ("Gt: large int64", {"key": "k", "operator": "Gt", "value": "9223372036854775806", "effect": NS},
     {"key": "k", "value": "100", "effect": NS}, False),
    # the defaults the API applies: empty operator = Equal, empty effect = every effect
    ("empty operator is Equal", {"key": "foo", "value": "bar"}, {"key": "foo", "value": "bar", "effect": NE}, True),
    ("empty operator, other value", {"key": "foo", "value": "x"}, {"key": "foo", "value": "bar", "effect": NS},
     False),
]


@pytest.mark.parametrize(("toleration", "taint", "tolerated"), [c[1:] for c in TOLERATION_CASES],
                         ids=[c[0] for c in TOLERATION_CASES])
def test_toleration_tolerates_taint(toleration: dict, taint: dict, tolerated: bool) -> None:
    assert c.tolerates(toleration, taint) is tolerated


def _node(labels: dict[str, str] | None = None, name: str = "n1", **kw: object) -> Node:
    return Node(name, labels or {}, **kw)  # type: ignore[arg-type]


def expr(key: str, op: str, *values: str) -> dict:
    return {"key": key, "operator": op, "values": list(values)}


AFFINITY_CASES = [
    ("In matches", [{"matchExpressions": [expr("zone", "In", "a", "b")]}], {"zone": "b"}, True),
    ("In, other value", [{"matchExpressions": [expr("zone", "In", "a")]}], {"zone": "b"}, False),
    ("In, label missing", [{"matchExpressions": [expr("zone", "In", "a")]}], {}, False),
    ("NotIn, label missing holds", [{"matchExpressions": [expr("zone", "NotIn", "a")]}], {}, True),
    ("NotIn, value listed", [{"matchExpressions": [expr("zone", "NotIn", "a")]}], {"zone": "a"}, False),
    ("Exists", [{"matchExpressions": [expr("gpu", "Exists")]}], {"gpu": ""}, True),
    ("DoesNotExist, present", [{"matchExpressions": [expr("gpu", "DoesNotExist")]}], {"gpu": "1"}, False),
    ("DoesNotExist, missing", [{"matchExpressions": [expr("gpu", "DoesNotExist")]}], {}, True),
    ("Gt", [{"matchExpressions": [expr("cores", "Gt", "8")]}], {"cores": "16"}, True),
    ("Gt, equal", [{"matchExpressions": [expr("cores", "Gt", "16")]}], {"cores": "16"}, False),
    ("Gt, label not an integer", [{"matchExpressions": [expr("cores", "Gt", "8")]}], {"cores": "many"}, False),
    ("Gt, label missing", [{"matchExpressions": [expr("cores", "Gt", "8")]}], {}, False),
    ("Gt, two values is invalid", [{"matchExpressions": [expr("cores", "Gt", "8", "9")]}], {"cores": "16"}, False),
    ("Lt", [{"matchExpressions": [expr("cores", "Lt", "8")]}], {"cores": "4"}, True),
    ("expressions ANDed", [{"matchExpressions": [expr("zone", "In", "a"), expr("gpu", "Exists")]}],
     {"zone": "a"}, False),
    ("terms ORed", [{"matchExpressions": [expr("zone", "In", "x")]}, {"matchExpressions": [expr("zone", "In", "a")]}],
     {"zone": "a"}, True),
    ("an empty term matches nothing", [{}], {"zone": "a"}, False),
    ("an empty term ORed with a matching one", [{}, {"matchExpressions": [expr("zone", "Exists")]}],
     {"zone": "a"}, True),
    ("matchFields metadata.name In", [{"matchFields": [expr("metadata.name", "In", "n1")]}], {}, True),
    ("matchFields metadata.name NotIn", [{"matchFields": [expr("metadata.name", "NotIn", "n1")]}], {}, False),
    ("matchFields only knows metadata.name", [{"matchFields": [expr("metadata.uid", "In", "n1")]}], {}, False),
    ("matchFields ANDed with expressions",
     [{"matchFields": [expr("metadata.name", "In", "n1")], "matchExpressions": [expr("zone", "In", "b")]}],
     {"zone": "a"}, False),
    ("no terms: no constraint", [], {}, True),
]


@pytest.mark.parametrize(("terms", "labels", "matches"), [c[1:] for c in AFFINITY_CASES],
                         ids=[c[0] for c in AFFINITY_CASES])
def test_required_node_affinity(terms: list, labels: dict, matches: bool) -> None:
    assert c.affinity_matches(terms, _node(labels)) is matches


def test_node_selector_needs_every_pair() -> None:
    n = _node({"a": "1", "b": "2"})
    assert c.selector_matches({"a": "1", "b": "2"}, n)
    assert not c.selector_matches({"a": "1", "c": "3"}, n)
    assert c.selector_matches({}, n)


def test_only_noschedule_and_noexecute_taints_filter() -> None:
    n = _node(taints=({"key": "soft", "effect": "PreferNoSchedule"}, {"key": "hard", "value": "x", "effect": NE}))
    assert c.untolerated_taint((), n) == {"key": "hard", "value": "x", "effect": NE}
    assert c.untolerated_taint(({"key": "hard", "operator": "Exists"},), n) is None


@pytest.mark.parametrize(("tolerations", "blocked"), [
    ((), True),
    (({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": NS},), False),
    (({"operator": "Exists"},), False),  # tolerates everything, as DaemonSet pods do
    (({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": NE},), True),
])
def test_cordoned_node_admits_only_the_unschedulable_toleration(tolerations: tuple, blocked: bool) -> None:
    assert c.cordon_blocks(tolerations, _node(unschedulable=True)) is blocked
    assert not c.cordon_blocks(tolerations, _node())


JOB = AntiAffinityTerm({"matchLabels": {"job": "train"}}, "kubernetes.io/hostname")


def test_label_selector_semantics() -> None:
    sel = {"matchLabels": {"app": "db"}, "matchExpressions": [expr("tier", "NotIn", "test")]}
    assert c.label_selector_matches(sel, {"app": "db"})
    assert not c.label_selector_matches(sel, {"app": "db", "tier": "test"})
    assert not c.label_selector_matches(sel, {"app": "web"})
    assert c.label_selector_matches({}, {"anything": "x"})  # an empty selector selects every pod


def test_anti_affinity_conflicts_both_directions_and_namespaces() -> None:
    train = {"job": "train"}
    # a's term selects b: they conflict, whichever holds the term
    assert c.conflicts("ml", {}, (JOB,), "ml", train, ()) == {"kubernetes.io/hostname"}
    assert c.conflicts("ml", train, (), "ml", {}, (JOB,)) == {"kubernetes.io/hostname"}
    # the term's namespaces default to its owner's: a pod elsewhere is not selected
    assert c.conflicts("ml", {}, (JOB,), "web", train, ()) == set()
    other_ns = AntiAffinityTerm({"matchLabels": train}, "kubernetes.io/hostname", namespaces=("web",))
    assert c.conflicts("ml", {}, (other_ns,), "web", train, ()) == {"kubernetes.io/hostname"}


def _pods_node(name: str, labels: dict[str, str], pods: tuple[BoundPod, ...] = ()) -> Node:
    return Node(name, {"kubernetes.io/hostname": name, **labels}, allocatable_cpu_m=8000,
                allocatable_memory=16 * 2**30, pods=pods)


def test_bound_pods_close_their_domain_both_directions() -> None:
    """filtering.go: the incoming pod's term against pods in the node's domain, and existing pods' terms
    against the incoming pod in their domain; a node without the topology key is in no domain."""
    zone_term = AntiAffinityTerm({"matchLabels": {"job": "train"}}, "topology.kubernetes.io/zone")
    holder = BoundPod("ml", "old", {"job": "train"})
    keeper = BoundPod("ml", "keeper", {}, (zone_term,))  # its term selects the pending pod
    nodes = (
        _pods_node("a1", {"topology.kubernetes.io/zone": "a"}, (holder,)),
        _pods_node("a2", {"topology.kubernetes.io/zone": "a"}),
        _pods_node("b1", {"topology.kubernetes.io/zone": "b"}, (keeper,)),
        _pods_node("b2", {"topology.kubernetes.io/zone": "b"}),
        _pods_node("none", {}),  # no zone label: no domain, never excluded
    )
    incoming = PendingPod("ml", "new", 100, 2**20, labels={"job": "train"}, anti_affinity=(zone_term,))
    plain = PendingPod("ml", "plain", 100, 2**20, labels={"job": "train"})
    prob = build(PlanInput(nodes, (incoming, plain)))
    names = [[prob.nodes[i].node.name for i in pp.static] for pp in prob.pods]
    assert names[0] == ["none"]  # zone a holds a train pod (its term), zone b's keeper selects it
    assert names[1] == ["a1", "a2", "none"]  # no term of its own: only the keeper's term excludes zone b


def test_pending_pods_of_one_job_form_one_clique() -> None:
    pods = tuple(PendingPod("ml", f"t{i}", 100, 2**20, labels={"job": "train"}, anti_affinity=(JOB,))
                 for i in range(3))
    prob = build(PlanInput((_pods_node("n1", {}),), pods))
    assert prob.conflicts == [((0, 1, 2), "kubernetes.io/hostname")]
