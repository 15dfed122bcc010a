"""The planner input's conversions (console/planner/inputs.py, console/infra/capacity.py), on API-shaped dicts: a
Pending pod's constraints and requests, the pods a PodDisruptionBudget holds, Nova limits → quota, Placement
inventories/usages → free room, flavors → options.

Sources: the Pod spec (k8s.io/api/core/v1 types.go: nodeSelector, affinity.nodeAffinity
.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms, podAntiAffinity terms with labelSelector /
topologyKey / namespaces); the eviction subresource refuses while a budget's status.disruptionsAllowed is 0
(pkg/registry/core/pod/storage/eviction.go); Nova `GET /limits` absolute fields, -1 = unlimited
(https://docs.openstack.org/api-ref/compute/#limits-limits); Placement capacity = (total − reserved) ×
allocation_ratio, used from `/resource_providers/{uuid}/usages` (https://docs.openstack.org/api-ref/placement/).
"""

from __future__ import annotations

from console.infra.capacity import Flavor, flavor_options, flavor_price, host_free, quota_from_limits
from console.planner.inputs import anti_affinity_terms, pdb_blocked, pending_pod
from console.planner.model import OPENSTACK, HostFree, Quota, Size

AVX = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"


def _pod(name: str, **spec: object) -> dict:
    return {"metadata": {"namespace": "hpc", "name": name, "labels": {"job": "train"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1500m", "memory": "2Gi"}}}],
                     **spec},
            "status": {"phase": "Pending"}}


def test_pending_pod_carries_every_scheduling_constraint():
    term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["hpc"]}]}
    anti = {"labelSelector": {"matchLabels": {"job": "train"}}, "topologyKey": "kubernetes.io/hostname"}
    obj = _pod("train-0", nodeSelector={AVX: "true"},
               tolerations=[{"key": "pool", "operator": "Equal", "value": "hpc", "effect": "NoSchedule"}],
               affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                          {"nodeSelectorTerms": [term]}},
                         "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [anti]}},
               initContainers=[{"name": "big-init", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}])
    p = pending_pod(obj, "0/4 nodes are available: 4 Insufficient cpu.")
    assert p.key == "hpc/train-0"
    assert (p.cpu_m, p.memory) == (3000, 2 * 2**30)  # the largest init container counts (pod_requests)
    assert p.node_selector == {AVX: "true"}
    assert p.affinity_terms == (term,)
    assert p.tolerations[0]["key"] == "pool"
    assert [(t.selector, t.topology_key, t.namespaces) for t in p.anti_affinity] == [
        ({"matchLabels": {"job": "train"}}, "kubernetes.io/hostname", ())]
    assert p.labels == {"job": "train"}
    assert p.reason.startswith("0/4 nodes")


def test_a_pod_without_constraints_has_none():
    p = pending_pod(_pod("plain"))
    assert (p.node_selector, p.affinity_terms, p.tolerations, p.anti_affinity) == ({}, (), (), ())
    assert anti_affinity_terms({"spec": {"affinity": {"podAffinity": {}}}}) == ()


def _bound(name: str, labels: dict, owner: str = "ReplicaSet") -> dict:
    owners = [{"apiVersion": "apps/v1", "kind": owner, "name": "x", "controller": True}]
    return {"metadata": {"namespace": "web", "name": name, "labels": labels, "ownerReferences": owners},
            "spec": {}, "status": {"phase": "Running"}}


def _pdb(namespace: str, match: dict, allowed: int) -> dict:
    return {"metadata": {"namespace": namespace, "name": "pdb"}, "spec": {"selector": {"matchLabels": match}},
            "status": {"disruptionsAllowed": allowed}}


def test_pdb_blocked_names_the_pods_a_budget_at_zero_holds():
    pods = [_bound("db-0", {"app": "db"}), _bound("web-0", {"app": "web"}), _bound("agent", {"app": "db"}, "DaemonSet")]
    mirror = _bound("etcd-node1", {"app": "db"}, "Node")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    pods.append(mirror)
    # the DaemonSet pod and the static (mirror) pod are not evicted: a budget over them blocks nothing
    assert pdb_blocked(pods, [_pdb("web", {"app": "db"}, 0)]) == ("web/db-0",)
    assert pdb_blocked(pods, [_pdb("web", {"app": "db"}, 1)]) == ()  # one disruption allowed: the drain goes on
    assert pdb_blocked(pods, [_pdb("other", {"app": "db"}, 0)]) == ()  # a budget selects in its own namespace
    assert pdb_blocked(pods, [{"metadata": {"namespace": "web"}, "spec": {"selector": {}},
                               "status": {"disruptionsAllowed": 0}}]) == ()  # an empty selector selects nothing


def test_quota_is_what_the_project_may_still_add():
    assert quota_from_limits({"maxTotalCores": 20, "totalCoresUsed": 14, "maxTotalRAMSize": 51200,
                              "totalRAMUsed": 40960}) == Quota(cores=6, ram_mib=10240)
    assert quota_from_limits({"maxTotalCores": -1, "totalCoresUsed": 14, "maxTotalRAMSize": 100,
                              "totalRAMUsed": 400}) == Quota(cores=None, ram_mib=0)


def test_placement_free_is_total_less_reserved_times_ratio_less_used():
    inventories = {"VCPU": {"total": 16, "reserved": 0, "allocation_ratio": 4.0, "max_unit": 16},
                   "MEMORY_MB": {"total": 65536, "reserved": 512, "allocation_ratio": 1.0, "max_unit": 65536}}
    assert host_free(inventories, {"VCPU": 60, "MEMORY_MB": 61440}) == HostFree(
        vcpus=4, memory_mib=3584, max_vcpus=16, max_memory_mib=65536)
    assert host_free({}, {}) == HostFree()  # a provider without them: unknown, not zero


FLAVORS = [Flavor("m1.small", 1, 2048, 20), Flavor("m1.medium", 2, 4096, 40), Flavor("m1.large", 4, 8192, 80),
           Flavor("m1.xlarge", 8, 16384, 160, {"console:price": "0.8"}), Flavor("c1.wide", 8, 4096, 20),
           Flavor("m1.bigmem", 2, 16384, 40)]


def test_flavor_options_are_strictly_larger_and_never_shrink_the_disk():
    opts = flavor_options(Size(2, 4096, "m1.medium"), 40, FLAVORS, {"m1.large": 0.4}, "console:price")
    assert [o.size.flavor for o in opts] == ["m1.bigmem", "m1.large", "m1.xlarge"]  # c1.wide: a 20 GB disk
    assert all(o.method == OPENSTACK for o in opts)
    assert {o.size.flavor: o.price for o in opts} == {"m1.bigmem": None, "m1.large": 0.4, "m1.xlarge": 0.8}


def test_flavor_price_settings_win_over_the_extra_spec():
    xl = FLAVORS[3]
    assert flavor_price(xl, {"m1.xlarge": 2.0}, "console:price") == 2.0
    assert flavor_price(xl, {}, "console:price") == 0.8
    assert flavor_price(xl, {}, None) is None
    assert flavor_price(Flavor("x", 1, 1, 0, {"console:price": "n/a"}), {}, "console:price") is None
