"""ApiStore, the lab's object-store interface over the real kube-apiserver: what the lab's agents rely on from Store
(read-after-write, status through /status, mutate's retry on a conflict, watch events in order across an API
server restart and a 410, errors as the store's) holds against upstream's v1.37.2."""

from __future__ import annotations

import asyncio
import copy
import logging
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from labtools import wait_for

from console.lab.apistore import ApiStore
from console.lab.controlplane import ControlPlane
from console.lab.kubeclient import ApiError, KubeClient
from console.lab.resources import RESOURCES
from console.lab.store import AlreadyExists, Conflict, Gone, Invalid, NotFound, StoreError, WatchEvent

Obj = dict[str, Any]


def _until(what: str, check: Callable[[], Any], timeout: float = 30) -> Any:
    return wait_for(check, timeout, 0.1, what)


def _client(cp: ControlPlane) -> KubeClient:
    return KubeClient(cp.url, ca=cp.pki_dir / "ca.crt", cert=cp.pki_dir / "admin.crt", key=cp.pki_dir / "admin.key")


def _cm(ns: str, name: str, **data: str) -> Obj:
    return {"metadata": {"name": name, "namespace": ns}, "data": dict(data)}


def _pod(ns: str, name: str, node: str = "", **status: Any) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec, **({"status": status} if status else {})}


ROOT_CA = "kube-root-ca.crt"


class Events:
    """A subscriber: records what it gets (on the informer's thread)."""

    def __init__(self) -> None:
        self.seen: list[WatchEvent] = []

    def __call__(self, ev: WatchEvent) -> None:
        # kube-controller-manager's root-ca-cert-publisher writes this ConfigMap into every namespace whenever it
        # gets to it (pkg/controller/certificates/rootcacertpublisher): not the test's, and its timing is the
        # controller's (late under load, or again after the controller restarts)
        if ev.object["metadata"]["name"] != ROOT_CA:
            self.seen.append(ev)

    def names(self) -> list[tuple[str, str]]:
        return [(e.type, e.object["metadata"]["name"]) for e in self.seen]

    def wait(self, n: int) -> list[tuple[str, str]]:
        _until(f"{n} events (have {self.names()})", lambda: len(self.seen) >= n)
        return self.names()


@pytest.fixture
def ns(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40].strip("-")
    client = _client(control_plane)
    client.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    try:  # the ServiceAccount admission plugin refuses pods until `default` exists; not waiting for the controller
        client.request("POST", f"/api/v1/namespaces/{name}/serviceaccounts", {"metadata": {"name": "default"}})
    except ApiError as e:
        if e.code != 409:
            raise
    yield name
    client.request("DELETE", f"/api/v1/namespaces/{name}")
    client.close()


@pytest.fixture
def store(control_plane: ControlPlane) -> Iterator[ApiStore]:
    s = ApiStore(_client(control_plane), sync_timeout=30)
    yield s
    s.stop()


@pytest.fixture
def node(control_plane: ControlPlane, ns: str) -> Iterator[str]:
    client = _client(control_plane)
    client.request("POST", "/api/v1/nodes", {"metadata": {"name": f"{ns}-node"}})
    yield f"{ns}-node"
    client.request("DELETE", f"/api/v1/nodes/{ns}-node")
    client.close()


def test_reads_see_the_stores_own_writes_at_once(store: ApiStore, ns: str) -> None:
    assert store.list("configmaps", ns)[0] == []  # the informer runs before the writes: its watch lags them
    for i in range(15):
        made = store.create("configmaps", _cm(ns, f"c{i}", v="1"))
        assert store.get("configmaps", ns, f"c{i}") == made
        assert [o["metadata"]["name"] for o in store.list("configmaps", ns)[0]] == [f"c{i}"]

        # a write that changes nothing is no write, as with Store
        assert store.mutate("configmaps", ns, f"c{i}", lambda o: None) == made
        changed = store.update("configmaps", {**made, "data": {"v": "2"}})
        assert int(changed["metadata"]["resourceVersion"]) > int(made["metadata"]["resourceVersion"])
        assert store.get("configmaps", ns, f"c{i}")["data"] == {"v": "2"}

        store.mutate("configmaps", ns, f"c{i}", lambda o: o["data"].update(v="3"))
        assert store.get("configmaps", ns, f"c{i}")["data"] == {"v": "3"}

        gone = store.delete("configmaps", ns, f"c{i}")  # answered with a Status, not the object
        assert gone["metadata"]["uid"] == made["metadata"]["uid"]
        with pytest.raises(NotFound):
            store.get("configmaps", ns, f"c{i}")
        assert store.list("configmaps", ns)[0] == []
    # and once the watch caught up, nothing it brought late comes back
    _until("the watch to catch up", lambda: not store._informers["configmaps"].deleted)
    assert store.list("configmaps", ns)[0] == []


def test_a_recreated_object_is_read_at_once(store: ApiStore, ns: str) -> None:
    store.list("configmaps", ns)
    first = store.create("configmaps", _cm(ns, "again", v="1"))
    store.delete("configmaps", ns, "again")
    second = store.create("configmaps", _cm(ns, "again", v="2"))
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert store.get("configmaps", ns, "again")["data"] == {"v": "2"}
    _until("the watch to show the second", lambda: store._informers["configmaps"].objects.get((ns, "again")))
    assert store.get("configmaps", ns, "again")["metadata"]["uid"] == second["metadata"]["uid"]


def test_deleting_a_pod(store: ApiStore, ns: str, node: str) -> None:
    store.list("pods", ns)
    store.create("pods", _pod(ns, "now", node))
    # the server answers a grace-0 deletion with the pod, deletionTimestamp set, though it is gone
    assert store.delete("pods", ns, "now")["metadata"]["deletionTimestamp"]
    with pytest.raises(NotFound):
        store.get("pods", ns, "now")
    assert store.pods_on_node(node) == []

    store.create("pods", _pod(ns, "graceful", node))
    store.delete("pods", ns, "graceful", grace_seconds=None)  # a bound pod waits for its kubelet
    assert store.get("pods", ns, "graceful")["metadata"]["deletionTimestamp"]
    assert [p["metadata"]["name"] for p in store.pods_on_node(node)] == ["graceful"]


def test_status_is_written_through_the_status_subresource(store: ApiStore, ns: str, node: str) -> None:
    # a POST drops a pod's status (the server sets Pending): create() writes it through /status after
    made = store.create("pods", _pod(ns, "p", node, phase="Running", podIP="10.0.0.7"))
    assert made["status"]["phase"] == "Running"
    assert store.fetch("pods", ns, "p")["status"]["podIP"] == "10.0.0.7"

    def spec_and_status(pod: Obj) -> None:
        pod["metadata"].setdefault("labels", {})["app"] = "web"
        pod["status"]["phase"] = "Succeeded"

    store.mutate("pods", ns, "p", spec_and_status)
    server = store.fetch("pods", ns, "p")
    assert (server["metadata"]["labels"], server["status"]["phase"]) == ({"app": "web"}, "Succeeded")
    assert store.get("pods", ns, "p")["status"]["phase"] == "Succeeded"

    current = copy.deepcopy(store.get("pods", ns, "p"))
    current["status"]["message"] = "done"
    assert store.update("pods", current)["status"]["message"] == "done"
    assert store.fetch("pods", ns, "p")["status"]["message"] == "done"

    # a node's status as a kubelet writes it
    store.mutate("nodes", None, node, lambda n: n.setdefault("status", {}).update(
        capacity={"cpu": "8", "memory": "16Gi", "pods": "110"}))
    assert store.fetch("nodes", None, node)["status"]["capacity"]["cpu"] == "8"
    assert store.get("nodes", None, node)["status"]["capacity"]["cpu"] == "8"

    # a workload in an API group; its status is its controller's (kube-controller-manager's here)
    dep = store.create("deployments.apps", {
        "metadata": {"name": "d", "namespace": ns},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}}, "spec": _pod(ns, "x")["spec"]}}})
    assert dep["metadata"]["generation"] == 1
    store.mutate("deployments.apps", ns, "d", lambda d: d["spec"].update(paused=True))
    assert store.fetch("deployments.apps", ns, "d")["spec"]["paused"] is True
    assert store.get("deployments.apps", ns, "d")["metadata"]["generation"] == 2


def test_bulk_load_creates_with_status_and_says_how_far(store: ApiStore, ns: str, node: str) -> None:
    """Concurrent creates, each object's status through /status after (a merge patch: the qosClass the server
    set stays), progress lines, and the first error raised."""
    lines: list[str] = []
    pods = [_pod(ns, f"b{i:02d}", node, phase="Running", podIP=f"10.0.1.{i}") for i in range(60)]
    assert store.bulk_load("pods", pods, workers=8, progress=lines.append, every=0) == 60
    server = store.client.request("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
    assert sorted(p["metadata"]["name"] for p in server) == [f"b{i:02d}" for i in range(60)]
    assert {(p["spec"]["nodeName"], p["status"]["phase"], p["status"]["qosClass"]) for p in server} == {
        (node, "Running", "BestEffort")}
    assert lines[-1] == "created 60 of 60 pods" and all(re.fullmatch(r"created \d+ of 60 pods", x) for x in lines)
    assert store.get("pods", ns, "b07")["status"]["podIP"] == "10.0.1.7"  # read after write, as create()'s

    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
    store.bulk_load("nodes", [{"metadata": {"name": f"{ns}-bulk"}, "status": {
        "capacity": {"cpu": "4", "pods": "110"}, "conditions": [ready]}}])
    try:
        status = store.fetch("nodes", None, f"{ns}-bulk")["status"]
        assert status["capacity"] == {"cpu": "4", "pods": "110"} and status["conditions"][0]["status"] == "True"
    finally:
        store.delete("nodes", None, f"{ns}-bulk")

    with pytest.raises(AlreadyExists):
        store.bulk_load("pods", [_pod(ns, "fresh", node), _pod(ns, "b00", node)], workers=1)


def test_mutate_tries_again_on_a_conflict(control_plane: ControlPlane, store: ApiStore, ns: str) -> None:
    store.create("configmaps", _cm(ns, "counter", n="0"))
    other = _client(control_plane)
    seen: list[str] = []

    def bump(cm: Obj) -> Obj:
        seen.append(cm["metadata"]["resourceVersion"])
        if len(seen) == 1:  # another writer gets in between this read and its write
            theirs = other.request("GET", f"/api/v1/namespaces/{ns}/configmaps/counter")
            theirs["data"]["other"] = "yes"
            other.request("PUT", f"/api/v1/namespaces/{ns}/configmaps/counter", theirs)
        cm["data"]["n"] = str(int(cm["data"]["n"]) + 1)
        return cm

    result = store.mutate("configmaps", ns, "counter", bump)
    assert len(seen) == 2 and seen[0] != seen[1]
    assert result["data"] == {"n": "1", "other": "yes"}
    assert store.get("configmaps", ns, "counter")["data"] == {"n": "1", "other": "yes"}

    # pinned to a version: no retry
    calls: list[Obj] = []
    with pytest.raises(Conflict):
        store.mutate("configmaps", ns, "counter", calls.append, expect_rv=seen[0])
    assert calls == []

    other.close()


def test_errors_are_the_stores(store: ApiStore, ns: str) -> None:
    with pytest.raises(NotFound):
        store.get("configmaps", ns, "missing")
    with pytest.raises(NotFound):
        store.mutate("configmaps", ns, "missing", lambda o: None)
    with pytest.raises(NotFound):
        store.delete("configmaps", ns, "missing")
    with pytest.raises(NotFound):
        store.rtype("widgets")
    made = store.create("configmaps", _cm(ns, "c", v="1"))
    with pytest.raises(AlreadyExists):
        store.create("configmaps", _cm(ns, "c"))
    store.update("configmaps", {**made, "data": {"v": "2"}})
    with pytest.raises(Conflict):  # made's resourceVersion is stale now
        store.update("configmaps", {**made, "data": {"v": "3"}})
    assert store.get("configmaps", ns, "c")["data"] == {"v": "2"}
    # without the check, the last write wins
    assert store.update("configmaps", {**made, "data": {"v": "4"}}, check_rv=False)["data"] == {"v": "4"}
    with pytest.raises(Invalid):
        store.create("configmaps", _cm(ns, "Not_A_Name"))
    with pytest.raises(Gone):
        store.subscribe("configmaps", lambda ev: None, since_rv=1)
    assert store.served(RESOURCES["pods"])
    assert not store.served(RESOURCES["nodefeatures.nfd.k8s-sigs.io"])


def test_subscribers_get_the_events_in_order(store: ApiStore, ns: str) -> None:
    events = Events()
    store.subscribe("configmaps", events, namespace=ns)
    store.create("configmaps", _cm("default", f"{ns}-elsewhere"))  # another namespace: not this subscriber's
    made = store.create("configmaps", _cm(ns, "a", v="1"))
    store.update("configmaps", {**made, "data": {"v": "2"}})
    store.mutate("configmaps", ns, "a", lambda o: o["data"].update(v="3"))
    store.create("configmaps", _cm(ns, "b"))
    store.delete("configmaps", ns, "a")
    assert events.wait(5) == [("ADDED", "a"), ("MODIFIED", "a"), ("MODIFIED", "a"), ("ADDED", "b"),
                              ("DELETED", "a")]
    rvs = [e.rv for e in events.seen]
    assert rvs == sorted(rvs) and len(set(rvs)) == 5
    # a MODIFIED event carries the object before it (the store's own write did not replace it early)
    assert [((e.old or {}).get("data"), e.object["data"]) for e in events.seen if e.type == "MODIFIED"] == [
        ({"v": "1"}, {"v": "2"}), ({"v": "2"}, {"v": "3"})]
    store.delete("configmaps", "default", f"{ns}-elsewhere")

    # resuming from a version replays what came after it
    replayed = Events()
    store.subscribe("configmaps", replayed, namespace=ns, since_rv=rvs[2])
    assert replayed.names() == [("ADDED", "b"), ("DELETED", "a")]

    async def watch() -> list[str]:
        seen = []
        async for ev in store.watch("configmaps", namespace=ns):
            seen.append(ev.type)
            if ev.type == "DELETED":
                return seen
        return seen

    async def main() -> list[str]:
        task = asyncio.create_task(watch())
        await asyncio.sleep(0)  # let it subscribe
        await asyncio.to_thread(store.mutate, "configmaps", ns, "b", lambda o: o.update(data={"k": "v"}))
        await asyncio.to_thread(store.delete, "configmaps", ns, "b")
        return await asyncio.wait_for(task, 30)

    assert asyncio.run(main()) == ["MODIFIED", "DELETED"]


def test_events_continue_across_an_api_server_restart(control_plane: ControlPlane, store: ApiStore, ns: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """The informer's watch drops with the server; it watches again (the restarted server's cache starts after
    the informer's resourceVersion: a 410, a relist) and subscribers learn what changed while it was away."""
    caplog.set_level(logging.INFO, logger="console.lab.apistore")
    events = Events()
    store.subscribe("configmaps", events, namespace=ns)
    store.create("configmaps", _cm(ns, "kept", v="1"))
    store.create("configmaps", _cm(ns, "changed", v="1"))
    store.create("configmaps", _cm(ns, "removed"))
    events.wait(3)

    # the informer does not watch again until the test lets it, so the changes below happen while it is away
    gate = threading.Event()
    watch = store.client.watch

    def gated(*args: Any, **kwargs: Any) -> Iterator[Obj]:
        gate.wait(60)
        yield from watch(*args, **kwargs)

    store.client.watch = gated  # type: ignore[method-assign]
    control_plane.apiserver_down()
    try:
        assert store.get("configmaps", ns, "kept")["data"] == {"v": "1"}  # reads go on from the informer
        with pytest.raises(StoreError):
            store.create("configmaps", _cm(ns, "refused"))
    finally:
        control_plane.apiserver_up()
        # kube-controller-manager exits when the API server goes away while it still builds its controllers
        # (this early in the package): the tests after this one need it
        if not control_plane.components["kube-controller-manager"].running():
            control_plane.start_component("kube-controller-manager")
    other = ApiStore(_client(control_plane))
    other.mutate("configmaps", ns, "changed", lambda o: o["data"].update(v="2"))
    other.delete("configmaps", ns, "removed")
    other.create("configmaps", _cm(ns, "new"))
    other.stop()
    gate.set()

    assert sorted(events.wait(6)[3:]) == [("ADDED", "new"), ("DELETED", "removed"), ("MODIFIED", "changed")]
    modified = next(e for e in events.seen[3:] if e.type == "MODIFIED")
    assert (modified.old and modified.old["data"], modified.object["data"]) == ({"v": "1"}, {"v": "2"})
    assert any("relisting" in r.getMessage() for r in caplog.records)
    assert [o["metadata"]["name"] for o in store.list("configmaps", ns)[0] if o["metadata"]["name"] != ROOT_CA] == [
        "changed", "kept", "new"]

    # and the watch goes on after the relist
    store.delete("configmaps", ns, "kept")
    assert events.wait(7)[6] == ("DELETED", "kept")
    assert len(events.seen) == 7


def test_stop_ends_the_informers(store: ApiStore, ns: str) -> None:
    store.list("configmaps", ns)
    store.list("pods", ns)
    threads = [i.thread for i in store._informers.values()]
    store.stop()
    assert not any(t.is_alive() for t in threads)


def test_custom_resources_follow_their_crd(control_plane: ControlPlane, store: ApiStore, tmp_path: Path) -> None:
    """A custom resource whose CRD does not exist lists empty at once (not after sync_timeout) and is not served;
    once the CRD is established its objects reach subscribers; deleting the CRD deletes them (their DELETED
    events) and the resource is not served any more."""
    import time

    from console.lab import nfd_release, scenarios
    from console.lab.resources import CRD_RESOURCE

    nfr = "nodefeaturerules.nfd.k8s-sigs.io"
    rt = store.rtype(nfr)
    t0 = time.monotonic()
    assert store.list(nfr)[0] == [] and not store.served(rt)
    assert time.monotonic() - t0 < 5
    events = Events()
    store.subscribe(nfr, events)
    # NFD's own CRD, as its newest release's manifests install it
    crd = next(o for r, o in nfd_release.objects(scenarios.get("default"), tmp_path / "nfd-release")
               if r == CRD_RESOURCE and o["metadata"]["name"] == nfr)
    store.create(CRD_RESOURCE, crd)
    try:
        _until("the CRD served", lambda: store.served(rt))
        store.create(nfr, {"metadata": {"name": "r1"}, "spec": {"rules": [{"name": "a", "labels": {"x": "y"}}]}})
        assert events.wait(1) == [("ADDED", "r1")]
        with pytest.raises(Invalid):  # NFD's schema: spec.rules is a list
            store.create(nfr, {"metadata": {"name": "r2"}, "spec": {"rules": "not a list"}})
    finally:
        store.delete(CRD_RESOURCE, None, crd["metadata"]["name"])
    assert events.wait(2) == [("ADDED", "r1"), ("DELETED", "r1")]
    _until("the CRD gone", lambda: not store.served(rt) and store.list(nfr)[0] == [])
