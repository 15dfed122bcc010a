"""Big-cluster reads against the lab's API server through the real kubernetes client.

- the msgspec codecs equal JsonCodec(from_api) on the bytes the server really sends (every page of a
  limit/continue list, and watch lines);
- the caches publish each page of their first list (`loading` until the last page), so a table paints
  from the first page (kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks);
- Pending pods are read in pages (limit/continue) with `spec.nodeName=` selecting the unbound ones, as
  cluster-autoscaler's unschedulable-pod lister does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from labstart import start_lab

from console.kube import nodes_ops, rest
from console.kube.cache import PAGE, ResourceCache
from console.kube.cluster import Cluster
from console.kube.codec import JsonCodec
from console.kube.fastcodec import NODE_CODEC, POD_CODEC
from console.kube.model import NodeInfo, PodInfo
from console.kube.rest import Lister
from console.lab import scenarios
from console.lab.world import Lab

NODES, PODS_PER_NODE = 1200, 2  # three node pages, five pod pages


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab(scenarios.get("scale", nodes=NODES, pods_per_node=PODS_PER_NODE),
                         tmp_path_factory.mktemp("scale-caches"))


@pytest.fixture(scope="module")
def cluster(lab: Lab) -> Iterator[Cluster]:
    c = Cluster(str(lab.state.kubeconfig))
    yield c
    c.stop()


def wait_for(cond, timeout: float = 60.0, what: str = "") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_every_page_decodes_alike(cluster: Cluster) -> None:
    for list_fn, fast, slow, total in ((Lister(cluster.api_client, "/api/v1/nodes"), NODE_CODEC,
                                        JsonCodec(NodeInfo.from_api), NODES),
                                       (Lister(cluster.api_client, "/api/v1/pods"), POD_CODEC,
                                        JsonCodec(PodInfo.from_api), NODES * PODS_PER_NODE)):
        token, seen, pages = "", 0, 0
        while True:
            data = list_fn(limit=PAGE, _preload_content=False, **({"_continue": token} if token else {})).data
            got, want = fast.page(data), slow.page(data)
            assert got == want and got.resource_version
            seen, pages, token = seen + len(got.items), pages + 1, got.continue_token
            if not token:
                break
        assert seen == total and pages == -(-total // PAGE)


def test_first_list_publishes_pages_then_the_watch_applies_changes(lab: Lab, cluster: Cluster) -> None:
    seen: list[tuple[int, bool]] = []
    cache: ResourceCache[NodeInfo] = ResourceCache(
        Lister(cluster.api_client, "/api/v1/nodes"), NODE_CODEC,
        on_change=lambda: seen.append((len(cache.snapshot()), cache.loading)))
    assert cache.loading and not cache.snapshot()
    stop = threading.Event()
    t = threading.Thread(target=cache.run, args=(stop,), daemon=True)
    t.start()
    try:
        wait_for(cache.synced.is_set, what="the node list")
        # one publication per page while loading, then the full list marked synced
        assert seen[:3] == [(500, True), (1000, True), (1200, False)]
        rv = cache.resource_version
        rest.send(cluster.api_client, "PATCH", "/api/v1/nodes/node-00007",
                  {"metadata": {"labels": {"perf": "watched"}}}, content_type="application/merge-patch+json")
        wait_for(lambda: cache.snapshot()[("", "node-00007")].labels.get("perf") == "watched", what="the label")
        assert cache.resource_version != rv and len(cache.snapshot()) == NODES
    finally:
        stop.set()
        t.join(60)


def test_lister_raises_the_clients_api_exception(cluster: Cluster) -> None:
    """As `list_node(_preload_content=False)` does: the cache's 410/403 handling sees the same exception."""
    from kubernetes.client.exceptions import ApiException

    with pytest.raises(ApiException) as err:
        Lister(cluster.api_client, "/api/v1/nopes")(limit=1)
    assert err.value.status == 404 and err.value.body


def test_pending_pods_are_read_in_pages(cluster: Cluster) -> None:
    names = [f"waiting-{i}" for i in range(5)]
    for name in names:  # a node selector no node has: the pods stay Pending and unbound
        rest.send(cluster.api_client, "POST", "/api/v1/namespaces/default/pods", {
            "metadata": {"name": name}, "spec": {"nodeSelector": {"perf": "nowhere"},
                                                 "containers": [{"name": "c", "image": "x"}]}})
    try:
        paged = nodes_ops.pending_pods(cluster.api_client, page=2)
        assert sorted(p.name for p in paged) == names
        assert nodes_ops.pending_pods(cluster.api_client) == paged
        assert all(p.phase == "Pending" and p.node == "" for p in paged)
    finally:
        for name in names:
            rest.send(cluster.api_client, "DELETE", f"/api/v1/namespaces/default/pods/{name}", None,
                      grace_period_seconds=0)
