"""Every unplaceable pod gets the most specific reason (issue 13): the first rule, in the scheduler's order
(NodeAffinity → NodeUnschedulable/TaintToleration → InterPodAffinity) then the infrastructure's (the largest
size, the hypervisor, the quota, the admin's drops and pins), that leaves it no node; else competition."""

from __future__ import annotations

import pytest
from planner_instances import FLAVORS, node

from console.infra.sizes import GiB
from console.planner.model import (
    AntiAffinityTerm,
    BoundPod,
    HostFree,
    Limits,
    PendingPod,
    PlanInput,
    Preferences,
    Quota,
)
from console.planner.solve import solve

SMALL, MEDIUM, LARGE, XLARGE = FLAVORS
HPC = {"key": "dedicated", "value": "hpc", "effect": "NoSchedule"}
JOB = AntiAffinityTerm({"matchLabels": {"job": "j"}}, "kubernetes.io/hostname")


def _reason(nodes: tuple, p: PendingPod, limits: Limits | None = None, prefs: Preferences | None = None,
            others: tuple[PendingPod, ...] = ()) -> str:
    plan = solve(PlanInput(nodes, (p, *others), limits or Limits(), prefs=prefs or Preferences()))
    by_pod = {u.pod: u.reason for u in plan.unplaceable}
    assert p.key in by_pod, plan.placements
    return by_pod[p.key]


def pod(name: str = "p", cpu_m: int = 1000, mem: int = GiB, **kw: object) -> PendingPod:
    return PendingPod("default", name, cpu_m, mem, **kw)  # type: ignore[arg-type]


AVX = {"feature.node.kubernetes.io/cpu-cpuid.AVX512F": "true"}


@pytest.mark.parametrize(("nodes", "p", "expected"), [
    ((node("w0", MEDIUM),), pod(node_selector=AVX),
     "no node matches its nodeSelector feature.node.kubernetes.io/cpu-cpuid.AVX512F=true"),
    ((node("w0", MEDIUM, labels={"zone": "a"}),),
     pod(affinity_terms=({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b", "c"]}]},)),
     "no node matches its required node affinity (zone In b,c)"),
    ((node("w0", MEDIUM, labels=AVX, taints=(HPC,)), node("w1", MEDIUM)), pod(node_selector=AVX),
     "the matching nodes have taints it does not tolerate: dedicated=hpc:NoSchedule (1 node(s))"),
    ((node("w0", MEDIUM, unschedulable=True),), pod(), "every node matching its selector is cordoned (w0)"),
    ((node("w0", MEDIUM, ready=False),), pod(), "every node matching its selector is NotReady (w0)"),
])
def test_label_and_taint_reasons(nodes: tuple, p: PendingPod, expected: str) -> None:
    assert _reason(nodes, p) == expected


def test_selector_reason_names_the_pair_no_node_has() -> None:
    nodes = (node("w0", MEDIUM, labels={"pool": "a"}),)
    assert _reason(nodes, pod(node_selector={"pool": "a", "gpu": "a100"})) == \
        "no node matches its nodeSelector gpu=a100"


def test_anti_affinity_with_bound_pods() -> None:
    nodes = (node("w0", LARGE, pods=(BoundPod("default", "old", {"job": "j"}),)),)
    r = _reason(nodes, pod(labels={"job": "j"}, anti_affinity=(JOB,)))
    assert r.startswith("anti-affinity: every matching node is in a topology domain (kubernetes.io/hostname)")


def test_anti_affinity_with_pending_pods_of_the_job() -> None:
    nodes = (node("w0", LARGE), node("w1", LARGE))
    job = tuple(pod(f"j-{i}", 500, labels={"job": "j"}, anti_affinity=(JOB,)) for i in range(3))
    plan = solve(PlanInput(nodes, job))
    (u,) = plan.unplaceable
    assert u.reason.startswith("anti-affinity: Pending pods it must keep apart from took every topology domain")


def test_more_than_the_largest_size() -> None:
    r = _reason((node("w0", MEDIUM), node("w1", SMALL, options=(LARGE,))), pod(cpu_m=40000))
    assert r.startswith("needs 40 CPU / 1Gi, more than the largest size any matching node can go to; "
                        "the roomiest, w0 at m1.xlarge, would leave 15.4 CPU"), r


def test_hypervisor_allows_no_larger_vm() -> None:
    limits = Limits({"h1": HostFree(max_vcpus=4)})  # Placement's VCPU max_unit
    r = _reason((node("w0", MEDIUM),), pod(cpu_m=5000), limits)
    assert r.startswith("hypervisor h1 allows at most 4 vCPUs"), r


def test_hypervisor_free_capacity() -> None:
    r = _reason((node("w0", MEDIUM),), pod(cpu_m=5000), Limits({"h1": HostFree(vcpus=5, memory_mib=65536)}))
    # the resize holds m1.medium's 2 vCPUs / 4096 MiB while it claims m1.large
    assert r == "hypervisor h1 has only 3 vCPUs / 61440 MiB free (growing w0 to fit it needs +6 vCPUs / +8192 MiB)"


def test_project_quota() -> None:
    r = _reason((node("w0", MEDIUM),), pod(cpu_m=5000), Limits(quota=Quota(cores=4, ram_mib=None)))
    assert r == "project quota: 4 cores / unlimited MiB RAM left (growing w0 to fit it needs +6 vCPUs / +8192 MiB)"


def test_dropped_and_pinned() -> None:
    r = _reason((node("w0", MEDIUM),), pod(cpu_m=5000), prefs=Preferences(dropped=frozenset({"w0"})))
    assert r == "dropped: the node it could grow to fit, w0, is dropped from the plan"
    r = _reason((node("w0", SMALL),), pod(cpu_m=5000), prefs=Preferences(pinned={"w0": MEDIUM}))
    assert r.startswith("pinned: w0 is pinned to m1.medium"), r


def test_competition() -> None:
    nodes = (node("w0", MEDIUM, options=(LARGE,)),)
    big = pod("big", 5000)
    r = _reason(nodes, pod("other", 5000), others=(big,))
    assert r.startswith("the other pods took the room"), r


def test_placed_pods_have_no_reason_and_every_pod_is_accounted_for() -> None:
    nodes = (node("w0", MEDIUM),)
    pods = (pod("a", 500), pod("b", cpu_m=40000), pod("c", node_selector=AVX))
    plan = solve(PlanInput(nodes, pods))
    assert plan.placements == {"default/a": "w0"}
    assert [u.pod for u in plan.unplaceable] == ["default/b", "default/c"]
