"""The msgspec codecs (console/kube/fastcodec.py) decode exactly what JsonCodec(NodeInfo/PodInfo.from_api) does.

Same bytes in, equal projections out: the lab's objects of every scenario, the scale world, hand-made edge
cases (absent fields, init and sidecar containers, overhead, quantities, tolerations, deletionTimestamp,
huge labels) and generated objects. Shapes: ListMeta (resourceVersion, continue) and watch events
(ADDED/MODIFIED/DELETED/BOOKMARK/ERROR with a metav1.Status) as in k8s.io/apimachinery
pkg/apis/meta/v1/types.go and pkg/watch/json.go. Requests as k8s.io/component-helpers/resource/helpers.go
AggregateContainerRequests counts them (kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.kube.codec import JsonCodec
from console.kube.fastcodec import NODE_CODEC, POD_CODEC, MalformedResponse
from console.kube.model import NodeInfo, PodInfo, Resources, pod_requests
from console.lab import scenarios, seed

JSON_NODES, JSON_PODS = JsonCodec(NodeInfo.from_api), JsonCodec(PodInfo.from_api)


def page_bytes(items: list[dict[str, Any]], rv: str = "42", cont: str = "") -> bytes:
    meta = {"resourceVersion": rv, **({"continue": cont} if cont else {})}
    return json.dumps({"kind": "List", "apiVersion": "v1", "metadata": meta, "items": items}).encode()


def same_page(items: list[dict[str, Any]], *, pods: bool) -> None:
    data = page_bytes(items, cont="tok")
    fast, slow = (POD_CODEC, JSON_PODS) if pods else (NODE_CODEC, JSON_NODES)
    got, want = fast.page(data), slow.page(data)
    assert got.items == want.items and len(got.items) == len(items)
    assert (got.resource_version, got.continue_token) == (want.resource_version, want.continue_token) == ("42", "tok")


def lab_objects() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes, pods = [], []
    for name in ("default", "seed-resize", "seed-live", "seed-drain"):
        sc = scenarios.get(name)
        vms = {v.node_name: v for v in seed.vm_specs(sc)}
        nodes += [seed.node_object(n, vms.get(n.name)) for n in sc.nodes]
        pods += [seed.pod_object(p) for p in sc.pods]
        pods += [obj for resource, obj in sc.objects if resource == "pods"]
    return nodes, pods


def test_lab_scenarios_and_scale_world_decode_alike() -> None:
    nodes, pods = lab_objects()
    assert nodes and pods
    scale_nodes, scale_pods = seed.scale_objects(scenarios.get("scale", nodes=40, pods_per_node=5))
    same_page(nodes + scale_nodes, pods=False)
    same_page(pods + scale_pods, pods=True)


REALISTIC_NODE = {
    "metadata": {
        "name": "w1", "uid": "9b1", "resourceVersion": "811", "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/gpu": "x", "a": "b"},
        "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
    },
    "spec": {"unschedulable": True, "providerID": "openstack:///abc", "podCIDR": "10.0.0.0/24",
             "taints": [{"key": "k", "value": "v", "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:00Z"}]},
    "status": {
        "capacity": {"cpu": "15500m", "memory": "65842860Ki", "pods": "110", "hugepages-2Mi": "0"},
        "allocatable": {"cpu": 4, "memory": "1.5Gi", "pods": 110},
        "conditions": [{"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                       {"type": "Ready", "reason": "NodeStatusUnknown"}],
        "nodeInfo": {"kubeletVersion": "v1.32.0", "systemUUID": "ABC", "bootID": "x"},
        "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
    },
}


def container(name: str, cpu: Any = None, mem: Any = None, **extra: Any) -> dict[str, Any]:
    req = {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v is not None}
    return {"name": name, "image": "x", "resources": {"requests": req, "limits": {"cpu": "9"}}, **extra}


EDGE_PODS = [
    {"metadata": {"name": "bare"}},  # no namespace, spec or status
    {"metadata": {"name": "nulls", "namespace": "a"}, "spec": None, "status": None},
    {"metadata": {"name": "empty-phase", "namespace": "a"}, "spec": {}, "status": {"phase": ""}},
    {"metadata": {"name": "no-resources", "namespace": "a"}, "spec": {"containers": [{"name": "c"}]}},
    {"metadata": {"name": "quantities", "namespace": "a"}, "spec": {"nodeName": "n", "containers": [
        container("a", "0.5", "1G"), container("b", 2, 1024), container("c", "1500u", "1.5Mi"),
        container("d", "1e3m", "2e3")]},
     "status": {"phase": "Running"}},
    {"metadata": {"name": "init", "namespace": "a", "deletionTimestamp": "2026-01-01T00:00:00Z",
                  "deletionGracePeriodSeconds": 30, "finalizers": ["x"], "ownerReferences": [{"kind": "ReplicaSet"}]},
     "spec": {"containers": [container("app", "100m", "64Mi")],
              "initContainers": [container("i1", "2", "16Mi"), container("i2", "50m", "1Gi")],
              "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                               "tolerationSeconds": 300}]},
     "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}},
    {"metadata": {"name": "sidecars", "namespace": "a"},
     "spec": {"containers": [container("app", "100m", "64Mi")], "overhead": {"cpu": "250m", "memory": "120Mi"},
              "initContainers": [container("log", "200m", "32Mi", restartPolicy="Always"),
                                 container("migrate", "500m", "256Mi"),
                                 container("mesh", "100m", "16Mi", restartPolicy="Always")]}},
    {"metadata": {"name": "huge", "namespace": "big", "labels": {f"l{i}.example.com/{'k' * 50}": "v" * 63
                                                                   for i in range(300)},
                  "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "x" * 200_000}},
     "spec": {"containers": [container(f"c{i}", "10m", "1Mi") for i in range(40)]}},
]

EDGE_NODES = [
    REALISTIC_NODE,
    {"metadata": {"name": "bare"}},
    {"metadata": {"name": "nulls", "labels": None, "annotations": None}, "spec": None, "status": None},
    {"metadata": {"name": "no-ready"}, "status": {"conditions": [{"type": "DiskPressure", "status": "True"}]}},
    {"metadata": {"name": "ready-false", "deletionTimestamp": "2026-01-01T00:00:00Z",
                  "labels": {f"feature.node.kubernetes.io/f{i}": "true" for i in range(2000)}},
     "spec": {"unschedulable": False, "taints": []},
     "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}],
                "capacity": {}, "nodeInfo": {}}},
]


@pytest.mark.parametrize("obj", EDGE_PODS, ids=lambda o: o["metadata"]["name"])
def test_edge_pods(obj: dict[str, Any]) -> None:
    same_page([obj], pods=True)


@pytest.mark.parametrize("obj", EDGE_NODES, ids=lambda o: o["metadata"]["name"])
def test_edge_nodes(obj: dict[str, Any]) -> None:
    same_page([obj], pods=False)


def test_requests_as_the_scheduler_counts_them() -> None:
    """Init containers: the largest; sidecars (restartPolicy Always) add to the app containers and to each later
    init container; overhead on top (the docs' example: max(sum of app + sidecars, init + earlier sidecars))."""
    pod = POD_CODEC.page(page_bytes([EDGE_PODS[6]])).items[0][1]
    # app 100m + sidecars 300m = 400m; migrate 500m + log 200m = 700m → 700m, + 250m overhead
    # memory: app 64 + sidecars 48 = 112Mi; migrate 256 + 32 = 288Mi → 288Mi, + 120Mi overhead
    assert pod.requests == Resources(950, 408 * 2**20, 1)
    init = POD_CODEC.page(page_bytes([EDGE_PODS[5]])).items[0][1]
    assert init.requests == Resources(2000, 2**30, 1) and init.phase == "Pending"
    assert pod_requests([("1", "1Gi"), ("500m", None)]) == Resources(1500, 2**30, 1)


def test_repeated_strings_are_shared() -> None:
    """The pod cache holds one namespace/node/phase string and one Resources per distinct value (RSS)."""
    _, pods = seed.scale_objects(scenarios.get("scale", nodes=2, pods_per_node=3))
    got = [p for _, p in POD_CODEC.page(page_bytes(pods)).items]
    assert len({id(p.namespace) for p in got}) == len({id(p.phase) for p in got}) == 1
    assert len({id(p.node) for p in got}) == 2 and len({id(p.requests) for p in got}) == 1


def events_for(obj: dict[str, Any]) -> list[bytes]:
    lines = [{"type": t, "object": obj} for t in ("ADDED", "MODIFIED", "DELETED")]
    lines.append({"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "99"}}})
    lines.append({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                              "message": "too old resource version: 1 (90)", "reason": "Expired",
                                              "code": 410}})
    return [json.dumps(line).encode() + b"\n" for line in lines]


def test_watch_events_decode_alike() -> None:
    node = {**REALISTIC_NODE}
    for fast, slow, obj in ((NODE_CODEC, JSON_NODES, node),
                            (POD_CODEC, JSON_PODS, {**EDGE_PODS[5], "metadata": {
                                **EDGE_PODS[5]["metadata"], "resourceVersion": "77"}})):
        for line in events_for(obj):
            assert fast.event(line) == slow.event(line)
    added = POD_CODEC.event(events_for({**EDGE_PODS[4], "metadata": {"name": "q", "namespace": "a",
                                                                       "resourceVersion": "5"}})[0])
    assert (added.type, added.key, added.resource_version) == ("ADDED", ("a", "q"), "5")
    error = NODE_CODEC.event(events_for(node)[-1])
    assert error.type == "ERROR" and error.status is not None and error.status["code"] == 410
    assert NODE_CODEC.event(events_for(node)[-2]).resource_version == "99"


@pytest.mark.parametrize("data, where", [
    (b"<html>502 Bad Gateway</html>", "malformed"),
    (b'{"items": {"a": 1}}', "$.items"),
    (b'{"items": [{"metadata": {"namespace": "a"}}]}', "name"),
    (b'{"items": [{"metadata": {"name": "x", "labels": {"a": 1}}}]}', "$.items[0].metadata.labels"),
    (b'{"items": [{"metadata": {"name": "x"}, "status": {"capacity": {"cpu": "lots"}}}]}', "nodes"),
])
def test_malformed_pages_raise_one_clear_error(data: bytes, where: str) -> None:
    with pytest.raises(MalformedResponse) as err:
        NODE_CODEC.page(data)
    assert where in str(err.value) and "nodes" in str(err.value)
    assert isinstance(err.value, ValueError)  # what a cache catches to back off and relist


def test_malformed_watch_line_raises_one_clear_error() -> None:
    with pytest.raises(MalformedResponse, match="pods watch event"):
        POD_CODEC.event(b'{"type": "ADDED", "object": {"metadata": {}}}')
    with pytest.raises(MalformedResponse, match="pods watch event"):
        POD_CODEC.event(b'{"type": "ADDED", "obj')


# generated objects: any mix of present and absent fields the projections read
QUANTITY = st.one_of(st.none(), st.sampled_from(["0", "1", "250m", "1.5", "100Mi", "2Gi", "3G", "1e3", "64Ki"]),
                     st.integers(0, 10**6))
NAME = st.text("abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=20)


def maybe(d: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Each key of `d` (a strategy) present or absent."""
    return st.fixed_dictionaries({}, optional=d)


def req_map() -> st.SearchStrategy[dict[str, Any]]:
    return maybe({"cpu": QUANTITY.filter(lambda q: q is not None), "memory": QUANTITY.filter(lambda q: q is not None),
                  "pods": st.sampled_from(["110", 250])})


CONTAINER = maybe({"name": NAME, "resources": maybe({"requests": req_map(), "limits": req_map()}),
                   "restartPolicy": st.sampled_from(["Always", "OnFailure"])})
POD = st.fixed_dictionaries({"metadata": st.fixed_dictionaries({"name": NAME}, optional={
    "namespace": NAME, "resourceVersion": st.integers(1, 10**9).map(str), "labels": st.dictionaries(NAME, NAME),
    "deletionTimestamp": st.just("2026-01-01T00:00:00Z")})}, optional={
    "spec": maybe({"nodeName": NAME, "containers": st.lists(CONTAINER, max_size=4),
                   "initContainers": st.lists(CONTAINER, max_size=4), "overhead": req_map(),
                   "tolerations": st.lists(maybe({"key": NAME, "operator": st.just("Exists")}), max_size=2)}),
    "status": maybe({"phase": st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown"])})})
CONDITION = maybe({"type": st.sampled_from(["Ready", "MemoryPressure"]),
                   "status": st.sampled_from(["True", "False", "Unknown"]), "reason": NAME})
NODE = st.fixed_dictionaries({"metadata": st.fixed_dictionaries({"name": NAME}, optional={
    "uid": NAME, "resourceVersion": NAME, "annotations": st.dictionaries(NAME, NAME),
    "labels": st.dictionaries(st.one_of(NAME, NAME.map(lambda n: "node-role.kubernetes.io/" + n)), NAME)})},
    optional={"spec": maybe({"unschedulable": st.booleans(), "providerID": NAME,
                             "taints": st.lists(maybe({"key": NAME, "effect": st.just("NoSchedule")}), max_size=2)}),
              "status": maybe({"capacity": req_map(), "allocatable": req_map(),
                               "conditions": st.lists(CONDITION, max_size=3),
                               "nodeInfo": maybe({"kubeletVersion": NAME, "systemUUID": NAME})})})


@settings(max_examples=300, deadline=None)
@given(st.lists(POD, max_size=5))
def test_generated_pods_decode_alike(pods: list[dict[str, Any]]) -> None:
    same_page(pods, pods=True)
    for obj in pods:
        line = json.dumps({"type": "MODIFIED", "object": obj}).encode()
        assert POD_CODEC.event(line) == JSON_PODS.event(line)


@settings(max_examples=300, deadline=None)
@given(st.lists(NODE, max_size=5))
def test_generated_nodes_decode_alike(nodes: list[dict[str, Any]]) -> None:
    same_page(nodes, pods=False)
