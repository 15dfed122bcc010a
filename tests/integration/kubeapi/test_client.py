"""The lab API server through the real `kubernetes` Python client."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException
from labtools import kube_raw

from console.lab.store import HISTORY

KubeLab = Any  # the kube_lab fixture's type, from conftest.py

NFD = ("nfd.k8s-sigs.io", "v1alpha1")


def test_token_is_required(kube_lab: KubeLab) -> None:
    import urllib.request

    ctx = __import__("ssl").create_default_context(cadata=kube_lab.api.ca_pem.decode())
    req = urllib.request.Request(f"{kube_lab.api.url}/api/v1/nodes", headers={"Authorization": "Bearer wrong"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, context=ctx, timeout=5)
    assert err.value.code == 401
    body = json.loads(err.value.read())
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
    with urllib.request.urlopen(f"{kube_lab.api.url}/readyz", context=ctx, timeout=5) as resp:
        assert resp.read() == b"ok"


def test_kubeconfig_is_private(kube_lab: KubeLab) -> None:
    assert kube_lab.kubeconfig.stat().st_mode & 0o777 == 0o600
    assert kube_lab.token in kube_lab.kubeconfig.read_text()


def test_list_get_and_not_found(kube: client.ApiClient) -> None:
    v1 = client.CoreV1Api(kube)
    nodes = v1.list_node()
    assert [n.metadata.name for n in nodes.items] == ["control-1", "worker-1", "worker-2"]
    assert int(nodes.metadata.resource_version) > 0
    assert nodes.items[1].status.capacity["cpu"] == "4"
    assert v1.read_node("worker-2").status.node_info.kubelet_version == "v1.32.0"
    with pytest.raises(ApiException) as err:
        v1.read_node("nope")
    assert err.value.status == 404
    assert json.loads(err.value.body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'nodes "nope" not found', "reason": "NotFound",
        "details": {"name": "nope", "kind": "nodes"}, "code": 404,
    }
    assert [p.metadata.name for p in v1.list_namespaced_pod("kube-system").items] == ["coredns-1"]
    assert len(v1.list_pod_for_all_namespaces().items) == 5


def test_selectors(kube: client.ApiClient) -> None:
    v1 = client.CoreV1Api(kube)

    def names(**kw: str) -> list[str]:
        return [p.metadata.name for p in v1.list_pod_for_all_namespaces(**kw).items]

    assert names(label_selector="app=web") == ["web-1", "web-2"]
    assert names(label_selector="app==web,tier") == ["web-1", "web-2"]
    assert names(label_selector="app!=web") == ["big-1", "db-1", "coredns-1"]  # by namespace, then name
    assert names(label_selector="app in (db, big)") == ["big-1", "db-1"]
    assert names(label_selector="app notin (db,big),!tier") == ["coredns-1"]
    assert names(field_selector="status.phase=Pending") == ["big-1"]
    assert names(field_selector="spec.nodeName=worker-1,metadata.name!=db-1") == ["web-1"]
    assert names(field_selector="metadata.namespace=kube-system") == ["coredns-1"]
    events = v1.list_event_for_all_namespaces(field_selector="involvedObject.kind=Pod,reason=FailedScheduling")
    assert [e.involved_object.name for e in events.items] == ["big-1"]
    assert [e.reason for e in v1.list_namespaced_event("default", field_selector="type=Warning").items] == [
        "FailedScheduling"]
    with pytest.raises(ApiException) as err:
        v1.list_pod_for_all_namespaces(field_selector="spec.bogus=1")
    assert err.value.status == 400
    assert "field label not supported: spec.bogus" in err.value.body


def test_pagination(kube_lab: KubeLab, kube: client.ApiClient, pod: Any) -> None:
    for i in range(23):
        kube_lab.store.create("pods", pod(f"page-{i:02d}", node_name="worker-2"))
    v1 = client.CoreV1Api(kube)
    seen, token, pages = [], None, 0
    while True:
        page = v1.list_pod_for_all_namespaces(limit=5, _continue=token)
        seen += [p.metadata.name for p in page.items]
        pages += 1
        token = page.metadata._continue
        if pages == 1:
            # a write between pages does not change what the paged list shows (one snapshot)
            kube_lab.store.create("pods", pod("zz-late", node_name="worker-2"))
            assert page.metadata.remaining_item_count == 28 - 5
        if not token:
            break
    assert pages == 6
    assert len(seen) == 28 and len(set(seen)) == 28
    assert "zz-late" not in seen
    assert len(v1.list_pod_for_all_namespaces().items) == 29


def test_watch_resume_and_gone(kube_lab: KubeLab, kube: client.ApiClient, pod: Any) -> None:
    v1 = client.CoreV1Api(kube)
    start = v1.list_namespaced_pod("default").metadata.resource_version
    kube_lab.store.create("pods", pod("w-1"))
    kube_lab.store.mutate("pods", "default", "w-1", lambda p: p["metadata"]["labels"].update(x="1"))
    kube_lab.store.delete("pods", "default", "w-1")
    w = watch.Watch()
    got = []
    for ev in w.stream(v1.list_namespaced_pod, "default", resource_version=start, timeout_seconds=2):
        got.append((ev["type"], ev["object"].metadata.name))
        if len(got) == 3:
            w.stop()
    assert got == [("ADDED", "w-1"), ("MODIFIED", "w-1"), ("DELETED", "w-1")]
    # timeoutSeconds ends the stream
    assert list(watch.Watch().stream(v1.list_node, resource_version=start, timeout_seconds=1)) == []
    # a resourceVersion older than the history is 410 Gone, as an ERROR event
    for i in range(HISTORY + 5):
        kube_lab.store.mutate("configmaps", "nfd", "nfd-hooks", lambda c, i=i: c["data"].update(n=str(i)))
    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(v1.list_namespaced_pod, "default", resource_version=start, timeout_seconds=2))
    assert err.value.status == 410


def test_watch_selector_sends_deleted_when_object_leaves(kube_lab: KubeLab, kube: client.ApiClient) -> None:
    v1 = client.CoreV1Api(kube)
    rv = v1.list_node().metadata.resource_version
    kube_lab.store.mutate("nodes", None, "worker-1", lambda n: n["metadata"]["labels"].update(pool="gpu"))
    kube_lab.store.mutate("nodes", None, "worker-2", lambda n: n["metadata"]["labels"].update(other="1"))
    kube_lab.store.mutate("nodes", None, "worker-1", lambda n: n["metadata"]["labels"].clear())
    events = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        v1.list_node, label_selector="pool=gpu", resource_version=rv, timeout_seconds=1)]
    assert events == [("ADDED", "worker-1"), ("DELETED", "worker-1")]


def test_watch_without_resource_version_starts_with_current_state(kube_lab: KubeLab, kube: client.ApiClient) -> None:
    v1 = client.CoreV1Api(kube)
    w = watch.Watch()
    got = []

    def later() -> None:
        kube_lab.store.mutate("nodes", None, "worker-2", lambda n: n["spec"].update(unschedulable=True))

    timer = threading.Timer(0.3, later)
    timer.start()
    for ev in w.stream(v1.list_node, timeout_seconds=5):
        got.append((ev["type"], ev["object"].metadata.name))
        if len(got) == 4:
            w.stop()
    timer.join()
    assert got == [("ADDED", "control-1"), ("ADDED", "worker-1"), ("ADDED", "worker-2"), ("MODIFIED", "worker-2")]


def test_create_replace_conflict_delete(kube: client.ApiClient) -> None:
    v1 = client.CoreV1Api(kube)
    body = {"metadata": {"name": "made", "labels": {"app": "made"}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36",
                                     "resources": {"requests": {"cpu": "100m"}}}]}}
    made = v1.create_namespaced_pod("default", body)
    assert made.status.phase == "Pending" and made.status.qos_class == "Burstable"
    assert made.spec.scheduler_name == "default-scheduler"
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_pod("default", body)
    assert err.value.status == 409 and json.loads(err.value.body)["reason"] == "AlreadyExists"
    stale = v1.read_namespaced_pod("made", "default")
    fresh = v1.read_namespaced_pod("made", "default")
    fresh.metadata.labels["v"] = "2"
    replaced = v1.replace_namespaced_pod("made", "default", fresh)
    assert replaced.metadata.labels["v"] == "2"
    assert int(replaced.metadata.resource_version) > int(stale.metadata.resource_version)
    stale.metadata.labels["v"] = "3"
    with pytest.raises(ApiException) as err:
        v1.replace_namespaced_pod("made", "default", stale)
    status = json.loads(err.value.body)
    assert err.value.status == 409 and status["reason"] == "Conflict"
    assert status["message"] == ('Operation cannot be fulfilled on pods "made": the object has been modified; '
                                 "please apply your changes to the latest version and try again")
    deleted = v1.delete_namespaced_pod("made", "default")
    assert deleted.metadata.name == "made"
    with pytest.raises(ApiException) as err:
        v1.read_namespaced_pod("made", "default")
    assert err.value.status == 404
    cm = v1.create_namespaced_config_map("default", {"metadata": {"name": "c1"}, "data": {"k": "v"}})
    gone = v1.delete_namespaced_config_map("c1", "default")  # a Status (the client leaves it a dict)
    assert gone["status"] == "Success" and gone["details"]["uid"] == cm.metadata.uid


def test_invalid_objects_are_422(kube: client.ApiClient) -> None:
    v1 = client.CoreV1Api(kube)
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_pod("default", {"metadata": {"name": "bad"}, "spec": {"containers": []}})
    body = json.loads(err.value.body)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "spec.containers"
    with pytest.raises(ApiException) as err:
        v1.patch_node("worker-1", {"metadata": {"labels": {"bad": "no spaces allowed"}}})
    assert err.value.status == 422
    assert "metadata.labels: Invalid value" in json.loads(err.value.body)["message"]
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_config_map("missing-ns", {"metadata": {"name": "x"}})
    assert err.value.status == 404


def test_patch_types(kube: client.ApiClient) -> None:
    v1 = client.CoreV1Api(kube)
    # strategic merge: what the client sends for a dict body
    n = v1.patch_node("worker-1", {"metadata": {"labels": {"a": "b"}}, "spec": {"unschedulable": True}})
    assert n.metadata.labels["a"] == "b" and n.metadata.labels["kubernetes.io/os"] == "linux"
    assert n.spec.unschedulable is True
    # strategic merge merges containers by name
    p = v1.patch_namespaced_pod("web-1", "default", {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}})
    assert p.spec.containers[0].image == "nginx:1.28" and p.spec.containers[0].resources.requests["cpu"] == "500m"
    # merge patch: null deletes
    n = v1.patch_node("worker-1", {"metadata": {"labels": {"a": None}}},
                      _content_type="application/merge-patch+json")
    assert "a" not in n.metadata.labels
    # JSON patch with a passing and a failing test op
    n = v1.patch_node("worker-1", [
        {"op": "test", "path": "/spec/unschedulable", "value": True},
        {"op": "replace", "path": "/spec/unschedulable", "value": False},
        {"op": "add", "path": "/metadata/labels/j~1p", "value": "1"},
    ])
    assert n.spec.unschedulable is False and n.metadata.labels["j/p"] == "1"
    with pytest.raises(ApiException) as err:
        v1.patch_node("worker-1", [{"op": "test", "path": "/spec/unschedulable", "value": True},
                                   {"op": "remove", "path": "/metadata/labels"}])
    assert err.value.status == 422
    assert "j/p" in v1.read_node("worker-1").metadata.labels
    # a resourceVersion in the patch is a precondition
    with pytest.raises(ApiException) as err:
        v1.patch_node("worker-1", {"metadata": {"resourceVersion": "1", "labels": {"z": "1"}}})
    assert err.value.status == 409


def test_status_subresource(kube: client.ApiClient) -> None:
    v1 = client.CoreV1Api(kube)
    n = v1.patch_node_status("worker-2", {"status": {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"}},
                                          "metadata": {"labels": {"ignored": "yes"}}})
    assert n.status.capacity["cpu"] == "8" and n.status.capacity["memory"] == "8Gi"
    assert "ignored" not in n.metadata.labels
    # a main-resource write leaves status alone
    n = v1.patch_node("worker-2", {"status": {"capacity": {"cpu": "1"}}, "metadata": {"labels": {"kept": "y"}}})
    assert n.status.capacity["cpu"] == "8" and n.metadata.labels["kept"] == "y"
    # strategic merge of conditions by type
    n = v1.patch_node_status("worker-2", {"status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}})
    ready = [c for c in n.status.conditions if c.type == "Ready"]
    assert len(n.status.conditions) == 4 and ready[0].status == "False"
    full = v1.read_node_status("worker-2")
    full.status.capacity["cpu"] = "16"
    assert v1.replace_node_status("worker-2", full).status.capacity["cpu"] == "16"


def test_dry_run(kube_lab: KubeLab, kube: client.ApiClient) -> None:
    v1 = client.CoreV1Api(kube)
    before = kube_lab.store.resource_version
    made = v1.create_namespaced_config_map("default", {"metadata": {"name": "dry"}, "data": {"a": "1"}},
                                           dry_run="All")
    assert made.metadata.uid and made.metadata.name == "dry"
    n = v1.patch_node("worker-1", {"metadata": {"labels": {"dry": "1"}}}, dry_run="All")
    assert n.metadata.labels["dry"] == "1"
    assert kube_lab.store.resource_version == before
    assert "dry" not in v1.read_node("worker-1").metadata.labels
    with pytest.raises(ApiException) as err:
        v1.read_namespaced_config_map("dry", "default")
    assert err.value.status == 404
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_pod("default", {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c"}]}},
                                 dry_run="All")
    assert err.value.status == 422


def test_binding_eviction_and_logs(kube_lab: KubeLab, kube: client.ApiClient) -> None:
    v1 = client.CoreV1Api(kube)
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "big-1"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "worker-2"}}
    # the API answers a Status, which this client cannot turn into V1Binding: read it raw
    resp = v1.create_namespaced_binding("default", body, _preload_content=False)
    assert resp.status == 201 and json.loads(resp.data)["status"] == "Success"
    assert v1.read_namespaced_pod("big-1", "default").spec.node_name == "worker-2"
    kube_lab.store.mutate("pods", "default", "big-1", lambda p: p["spec"].pop("nodeName") and None)
    resp = v1.create_namespaced_pod_binding("big-1", "default", body, _preload_content=False)
    assert resp.status == 201
    bound = v1.read_namespaced_pod("big-1", "default")
    assert bound.spec.node_name == "worker-2"
    assert [(c.type, c.status) for c in bound.status.conditions] == [("PodScheduled", "True")]
    assert "big-1" in {p["metadata"]["name"] for p in kube_lab.store.pods_on_node("worker-2")}
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_binding("default", body, _preload_content=False)
    assert err.value.status == 409 and "is already assigned to node" in err.value.body
    ev = v1.create_namespaced_pod_eviction("web-2", "default", {
        "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web-2", "namespace": "default"}})
    assert ev is not None
    with pytest.raises(ApiException):
        v1.read_namespaced_pod("web-2", "default")
    assert v1.read_namespaced_pod_log("web-1", "default") == "starting nginx\nlistening on :80\n"
    assert v1.read_namespaced_pod_log("web-1", "default", tail_lines=1) == "listening on :80\n"
    with pytest.raises(ApiException) as err:
        v1.read_namespaced_pod_log("web-1", "default", container="nope")
    assert err.value.status == 400


def test_follow_logs_until_pod_completes(kube_lab: KubeLab, kube: client.ApiClient) -> None:
    v1 = client.CoreV1Api(kube)
    resp = v1.read_namespaced_pod_log("web-1", "default", follow=True, _preload_content=False)
    kube_lab.logs.append("default", "web-1", "GET / 200\n")

    def finish() -> None:
        kube_lab.logs.append("default", "web-1", "bye\n")
        kube_lab.store.mutate("pods", "default", "web-1", lambda p: p["status"].update(phase="Succeeded"))

    timer = threading.Timer(0.3, finish)
    timer.start()
    text = resp.data.decode()  # returns only once the stream ends
    timer.join()
    assert text == "starting nginx\nlistening on :80\nGET / 200\nbye\n"


def test_nodefeaturerule_crud(kube: client.ApiClient) -> None:
    co = client.CustomObjectsApi(kube)
    rules = co.list_cluster_custom_object(*NFD, "nodefeaturerules")
    assert [r["metadata"]["name"] for r in rules["items"]] == ["gpu-rule"]
    body = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "r2"},
            "spec": {"rules": [{"name": "one", "labels": {"example.com/one": "true"}}]}}
    dry = co.create_cluster_custom_object(*NFD, "nodefeaturerules", body, dry_run="All")
    assert dry["metadata"]["name"] == "r2" and "resourceVersion" not in dry["metadata"]
    created = co.create_cluster_custom_object(*NFD, "nodefeaturerules", body)
    assert created["kind"] == "NodeFeatureRule" and created["metadata"]["generation"] == 1
    patched = co.patch_cluster_custom_object(*NFD, "nodefeaturerules", "r2",
                                             {"spec": {"rules": [{"name": "two", "labels": {}}]}})
    assert patched["spec"]["rules"][0]["name"] == "two" and patched["metadata"]["generation"] == 2
    patched["spec"]["rules"].append({"name": "three"})
    replaced = co.replace_cluster_custom_object(*NFD, "nodefeaturerules", "r2", patched)
    assert len(replaced["spec"]["rules"]) == 2
    with pytest.raises(ApiException) as err:
        co.replace_cluster_custom_object(*NFD, "nodefeaturerules", "r2", patched)  # stale resourceVersion
    assert err.value.status == 409
    assert 'nodefeaturerules.nfd.k8s-sigs.io "r2"' in json.loads(err.value.body)["message"]
    with pytest.raises(ApiException) as err:
        co.create_cluster_custom_object(*NFD, "nodefeaturerules", {**body, "metadata": {"name": "r3"},
                                                                    "spec": {}}, dry_run="All")
    assert err.value.status == 422 and "spec.rules: Required value" in json.loads(err.value.body)["message"]
    with pytest.raises(ApiException) as err:  # custom resources take no strategic merge patch
        co.patch_cluster_custom_object(*NFD, "nodefeaturerules", "r2", {"spec": {}},
                                       _content_type="application/strategic-merge-patch+json")
    assert err.value.status == 415
    status = co.delete_cluster_custom_object(*NFD, "nodefeaturerules", "r2")
    assert status["status"] == "Success"
    nf = co.get_namespaced_custom_object(*NFD, "nfd", "nodefeatures", "worker-1")
    assert nf["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] == "worker-1"




def test_http_errors(kube_lab: KubeLab) -> None:
    code, body = kube_raw(kube_lab, "PATCH", "/api/v1/nodes/worker-1", b"{}", "application/xml")
    assert code == 415 and body["reason"] == "UnsupportedMediaType"
    code, body = kube_raw(kube_lab, "GET", "/api/v1/widgets")
    assert code == 404 and body["kind"] == "Status" and body["reason"] == "NotFound"
    code, body = kube_raw(kube_lab, "PUT", "/api/v1/nodes", b"{}", "application/json")
    assert code == 405 and body["reason"] == "MethodNotAllowed"
    code, body = kube_raw(kube_lab, "PUT", "/api/v1/nodes/worker-1", b'{"metadata":{"name":"other"}}',
                      "application/json")
    assert code == 400 and "does not match the name on the URL" in body["message"]
    code, body = kube_raw(kube_lab, "GET", "/version")
    assert code == 200 and body["gitVersion"].startswith("v1.32")
    code, body = kube_raw(kube_lab, "GET", "/apis/nfd.k8s-sigs.io/v1alpha1")
    assert {r["name"] for r in body["resources"]} == {"nodefeatures", "nodefeaturerules"}
    code, body = kube_raw(kube_lab, "DELETE", "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb")
    assert code == 200 and body["kind"] == "PodList" and len(body["items"]) == 2
    assert [p["metadata"]["name"] for p in kube_lab.store.list("pods", "default")[0]] == ["big-1", "db-1"]
