"""InterPodAffinity's required terms as the lab's scheduler applies them.

Source: kubernetes pkg/scheduler/framework/plugins/interpodaffinity/filtering.go (PreFilter counts per
topology pair, Filter's three reasons, the self-affinity exception) and framework/types.go newAffinityTerm
(namespaces default to the pod's own; nil selectors select nothing, empty ones everything).
"""

from __future__ import annotations

from console.lab import fit
from console.lab.podaffinity import AFFINITY, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY, Check, Placed, required_terms

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def pod(name: str, labels: dict[str, str], *, ns: str = "default", anti: list[dict] | None = None,
        affinity: list[dict] | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c"}]}
    aff = {}
    if anti:
        aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    if affinity:
        aff["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": affinity}
    if aff:
        spec["affinity"] = aff
    return {"metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": spec}


def node(name: str, zone: str | None = None) -> dict[str, str]:
    labels = {HOST: name}
    if zone:
        labels[ZONE] = zone
    return labels


def placed(p: dict, node_labels: dict[str, str]) -> Placed:
    return Placed(p["metadata"]["namespace"], p["metadata"]["labels"], node_labels,
                  required_terms(p, "podAntiAffinity"))


def term(key: str = HOST, **selector: object) -> dict:
    return {"labelSelector": selector or {"matchLabels": {"job-name": "train"}}, "topologyKey": key}


def test_incoming_anti_affinity_on_hostname() -> None:
    a, b = node("a"), node("b")
    running = pod("train-1", {"job-name": "train"}, anti=[term()])
    check = Check(pod("train-2", {"job-name": "train"}, anti=[term()]), [placed(running, a)], {})
    assert check.reason(a) == ANTI_AFFINITY
    assert check.reason(b) is None


def test_existing_pods_anti_affinity_binds_the_other_way() -> None:
    a = node("a")
    guard = pod("guard", {"app": "db"}, anti=[term(matchLabels={"app": "web"})])
    assert Check(pod("web", {"app": "web"}), [placed(guard, a)], {}).reason(a) == EXISTING_ANTI_AFFINITY
    assert Check(pod("api", {"app": "api"}), [placed(guard, a)], {}).reason(a) is None


def test_topology_domains_and_nodes_without_the_key() -> None:
    running = pod("x", {"job-name": "train"})
    check = Check(pod("y", {}, anti=[term(ZONE)]), [placed(running, node("a", "z1"))], {})
    assert check.reason(node("b", "z1")) == ANTI_AFFINITY  # same zone, other node
    assert check.reason(node("c", "z2")) is None
    assert check.reason(node("d")) is None  # no zone label: no domain to conflict in


def test_match_expressions_and_empty_or_missing_selectors() -> None:
    a = node("a")
    running = [placed(pod("x", {"tier": "gpu"}), a)]
    expr = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gpu", "hpc"]}]}
    assert Check(pod("y", {}, anti=[term(**expr)]), running, {}).reason(a) == ANTI_AFFINITY
    notin = {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gpu"]}]}
    assert Check(pod("y", {}, anti=[term(**notin)]), running, {}).reason(a) is None
    everything = {"labelSelector": {}, "topologyKey": HOST}
    assert Check(pod("y", {}, anti=[everything]), running, {}).reason(a) == ANTI_AFFINITY
    nothing = {"topologyKey": HOST}  # no labelSelector: selects no pod
    assert Check(pod("y", {}, anti=[nothing]), running, {}).reason(a) is None


def test_namespaces_default_to_the_pods_own() -> None:
    a = node("a")
    other = [placed(pod("x", {"job-name": "train"}, ns="batch"), a)]
    assert Check(pod("y", {}, anti=[term()]), other, {}).reason(a) is None
    named = {**term(), "namespaces": ["batch"]}
    assert Check(pod("y", {}, anti=[named]), other, {}).reason(a) == ANTI_AFFINITY
    by_label = {**term(), "namespaceSelector": {"matchLabels": {"team": "ml"}}}
    ns_labels = {"batch": {"team": "ml"}}
    assert Check(pod("y", {}, anti=[by_label]), other, ns_labels).reason(a) == ANTI_AFFINITY
    assert Check(pod("y", {}, anti=[by_label]), other, {"batch": {"team": "web"}}).reason(a) is None
    all_ns = {**term(), "namespaceSelector": {}}
    assert Check(pod("y", {}, anti=[all_ns]), other, {}).reason(a) == ANTI_AFFINITY


def test_required_affinity_and_the_first_pod_of_a_group() -> None:
    a, b = node("a"), node("b")
    group = term(matchLabels={"app": "cache"})
    first = Check(pod("cache-0", {"app": "cache"}, affinity=[group]), [], {})
    assert first.reason(a) is None  # nothing matches yet and it matches itself
    running = [placed(pod("cache-0", {"app": "cache"}), a)]
    second = Check(pod("cache-1", {"app": "cache"}, affinity=[group]), running, {})
    assert (second.reason(a), second.reason(b)) == (None, AFFINITY)


def test_anti_affinity_failures_are_worth_a_preemption_attempt() -> None:
    msg = fit.fit_error(2, [[ANTI_AFFINITY], ["node(s) had untolerated taint {a: b}"]], fit.V1_24)
    assert msg == ("0/2 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 1 node(s) had "
                   "untolerated taint {a: b}. preemption: 0/2 nodes are available: 1 No preemption victims found "
                   "for incoming pod, 1 Preemption is not helpful for scheduling..")
