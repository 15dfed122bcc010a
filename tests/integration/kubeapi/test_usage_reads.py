"""Reads sized to what a screen shows, counted at the lab's API server (its request log):

- the NFD version from ONE NodeFeature (`limit=1`), not a list of every NodeFeature in the cluster;
- events through field-selected list+watch: one node's (`involvedObject.kind=Node,involvedObject.name=X`, what
  `kubectl describe node` asks) and pods' FailedScheduling (`involvedObject.kind=Pod,reason=FailedScheduling`);
- the lab answers event field selectors as kube-apiserver does: the Event field label conversion
  (k8s pkg/apis/core/v1/conversion.go, AddFieldLabelConversionsForEvent; pkg/registry/core/event/strategy.go
  ToSelectableFields) and the 400 `field label not supported: X` of apiserver handlers/get.go ListResource.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from labtools import kube_raw, wait_for

from console.kube.events import Events
from console.kube.nfdstore import NF_PAGE, WORKER_VERSION_ANNOTATION, cluster_nfd_version, list_node_features
from console.nfd.model import NODE_NAME_LABEL

KubeLab = Any  # the kube_lab fixture's type, from conftest.py
NF_PATH = "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeatures"


def _params(request: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(request.split(" ", 1)[1]).query))


def test_nfd_version_is_one_limit_1_read(kube_lab: KubeLab, kube: Any) -> None:
    for i in range(5):
        kube_lab.store.create("nodefeatures.nfd.k8s-sigs.io", {
            "metadata": {"name": f"n{i}", "namespace": "nfd", "labels": {NODE_NAME_LABEL: f"n{i}"},
                         "annotations": {WORKER_VERSION_ANNOTATION: "v0.17.3"}},
            "spec": {"features": {}, "labels": {}}})
    seen = len(kube_lab.api.requests())
    assert cluster_nfd_version(kube) == "v0.17.3"
    reads = [r for r in kube_lab.api.requests()[seen:] if "nodefeatures" in r]
    assert len(reads) == 1 and reads[0].startswith(f"GET {NF_PATH}?")
    assert _params(reads[0]) == {"limit": "1", "labelSelector": NODE_NAME_LABEL}


def test_all_node_features_are_read_in_pages(kube_lab: KubeLab, kube: Any) -> None:
    """The rule dry-run previews every node, so it reads every NodeFeature — in pages, not one huge list."""
    kube_lab.store.bulk_load("nodefeatures.nfd.k8s-sigs.io", [
        {"metadata": {"name": f"n{i:04d}", "namespace": "nfd", "labels": {NODE_NAME_LABEL: f"n{i:04d}"}},
         "spec": {"features": {}, "labels": {}}} for i in range(2 * NF_PAGE + 1)])
    seen = len(kube_lab.api.requests())
    nfs = list_node_features(kube)
    assert len(nfs) == 2 * NF_PAGE + 2 and nfs["n0000"][0]["metadata"]["name"] == "n0000"  # + the seed's worker-1
    reads = [_params(r) for r in kube_lab.api.requests()[seen:] if "nodefeatures" in r]
    assert len(reads) == 3 and all(p["limit"] == str(NF_PAGE) for p in reads)
    assert "continue" not in reads[0] and all("continue" in p for p in reads[1:])


def test_node_events_are_a_field_selected_list_and_watch(kube_lab: KubeLab, kube: Any) -> None:

    from .conftest import event

    events = Events(kube)
    seen = len(kube_lab.api.requests())
    watch = events.watch_object("Node", "worker-1")
    try:
        wait_for(watch.cache.synced.is_set, timeout=10, what="worker-1's events listed")
        assert sorted(e.reason for e in watch.recent()) == ["NodeReady", "Starting"]
        wait_for(lambda: any("watch=true" in r for r in kube_lab.api.requests("GET /api/v1/events")), timeout=10,
                 what="the watch")
        kube_lab.store.create("events", event("worker-2.oom", kind="Node", obj_name="worker-2", uid="worker-2",
                                              reason="SystemOOM", message="oom"))
        kube_lab.store.create("events", event("worker-1.oom", kind="Node", obj_name="worker-1", uid="worker-1",
                                              reason="SystemOOM", message="oom"))
        wait_for(lambda: "SystemOOM" in [e.reason for e in watch.recent()], timeout=10, what="the new event")
        assert {e.object_name for e in watch.cache.snapshot().values()} == {"worker-1"}  # only what is shown
    finally:
        events.stop()
    reads = [r for r in kube_lab.api.requests()[seen:] if r.startswith("GET /api/v1/events")]
    assert reads and all(_params(r)["fieldSelector"] == "involvedObject.kind=Node,involvedObject.name=worker-1"
                         for r in reads)
    assert any(_params(r).get("watch") == "true" for r in reads)


def test_scheduling_events_keep_only_failed_scheduling(kube_lab: KubeLab, kube: Any) -> None:

    events = Events(kube)
    seen = len(kube_lab.api.requests())
    events.start()
    try:
        wait_for(events.cache.synced.is_set, timeout=10, what="FailedScheduling events listed")
        latest = events.failed_scheduling()
        assert list(latest) == [("default", "big-1")] and "Insufficient cpu" in latest[("default", "big-1")].message
        assert len(events.cache.snapshot()) == 1  # the node events of the cluster are not kept
    finally:
        events.stop()
    reads = [r for r in kube_lab.api.requests()[seen:] if r.startswith("GET /api/v1/events")]
    assert reads and {_params(r)["fieldSelector"] for r in reads} == {"involvedObject.kind=Pod,reason=FailedScheduling"}


def test_lab_event_field_selectors_are_the_api_servers(kube_lab: KubeLab) -> None:
    def get(selector: str) -> tuple[int, dict]:
        return kube_raw(kube_lab, "GET", "/api/v1/events?fieldSelector=" + urllib.parse.quote(selector))

    code, body = get("involvedObject.kind=Node,involvedObject.name=worker-1")
    assert code == 200 and {i["reason"] for i in body["items"]} == {"Starting", "NodeReady"}
    code, body = get("type=Warning,source=kubelet,reason!=Starting")
    assert code == 200 and [i["metadata"]["name"] for i in body["items"]] == ["big-1.failed"]
    for supported in ("involvedObject.uid=x", "involvedObject.apiVersion=v1", "involvedObject.resourceVersion=1",
                      "involvedObject.fieldPath=x", "involvedObject.namespace=default", "reportingComponent=x",
                      "metadata.name=x", "metadata.namespace=default"):
        assert get(supported)[0] == 200, supported
    code, body = get("involvedObject.kind=Node,message=oom")
    assert code == 400 and body["reason"] == "BadRequest" and body["message"] == "field label not supported: message"
    code, body = kube_raw(kube_lab, "GET", "/api/v1/events?watch=true&fieldSelector=count%3D1")
    assert code == 400 and body["message"] == "field label not supported: count"
