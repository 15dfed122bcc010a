"""Reads sized to what a screen shows, counted at the API server (its audit log, Lab.api_requests):

- the NFD version from ONE NodeFeature (`limit=1`), not a list of every NodeFeature in the cluster;
- every NodeFeature (the rule dry-run) in pages, not one huge list;
- events through field-selected list+watch: one node's (`involvedObject.kind=Node,involvedObject.name=X`, what
  `kubectl describe node` asks) and pods' FailedScheduling (`involvedObject.kind=Pod,reason=FailedScheduling`),
  which kube-apiserver filters (the Event field label conversion, k8s pkg/apis/core/v1/conversion.go).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from labstart import start_lab
from labtools import lab_env, run, wait_for

from console.kube.events import Events
from console.kube.nfdstore import NF_PAGE, cluster_nfd_version, list_node_features
from console.lab.world import Lab
from console.nfd.model import NODE_NAME_LABEL

NF_PATH = "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeatures"
NF_DEFAULT = "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/default/nodefeatures"
NF_RESOURCE = "nodefeatures.nfd.k8s-sigs.io"
NODE = "kube-worker01"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("default", tmp_path_factory.mktemp("lab-reads"), metrics=False)


def _params(request: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(request.split(" ", 1)[1]).query))


def _event(name: str, node: str, reason: str, message: str) -> dict[str, Any]:
    """A node's Event as a kubelet records it (in `default`, the node's uid its name: kubelet.go nodeRef)."""
    return {"metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": "Node", "name": node, "uid": node, "apiVersion": "v1"},
            "reason": reason, "message": message, "type": "Warning", "count": 1,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
            "source": {"component": "kernel-monitor", "host": node}}


def test_nfd_version_is_one_limit_1_read(lab: Lab, kube: Any) -> None:
    """The lab's nfd-worker (NFD v0.19.0) annotates each node's NodeFeature with its version."""
    ours = lab.store.list(NF_RESOURCE)[0]
    assert len(ours) > 1  # one per node nfd-worker runs on: more than the one read
    seen = len(lab.api_requests())
    assert cluster_nfd_version(kube) == lab.scenario.nfd_version == "v0.19.0"
    reads = [r for r in lab.api_requests()[seen:] if "nodefeatures" in r]
    assert len(reads) == 1 and reads[0].startswith(f"GET {NF_PATH}?")
    assert _params(reads[0]) == {"limit": "1", "labelSelector": NODE_NAME_LABEL}


def test_all_node_features_are_read_in_pages(lab: Lab, kube: Any) -> None:
    """The rule dry-run previews every node, so it reads every NodeFeature — in pages, not one huge list. The
    extra NodeFeatures (third-party ones, for nodes the lab does not have) are created as the lab's own user,
    whose requests the audit log leaves out."""
    before = {nf["metadata"]["labels"][NODE_NAME_LABEL] for nf in lab.store.list(NF_RESOURCE)[0]}
    lab.store.bulk_load(NF_RESOURCE, [
        {"metadata": {"name": f"n{i:04d}", "namespace": "default", "labels": {NODE_NAME_LABEL: f"n{i:04d}"}},
         "spec": {"features": {}, "labels": {}}} for i in range(2 * NF_PAGE + 1)])
    try:
        seen = len(lab.api_requests())
        nfs = list_node_features(kube)
        assert len(nfs) == 2 * NF_PAGE + 1 + len(before) and nfs["n0000"][0]["metadata"]["name"] == "n0000"
        reads = [_params(r) for r in lab.api_requests()[seen:] if "nodefeatures" in r]
        assert len(reads) == 3 and all(p["limit"] == str(NF_PAGE) for p in reads)
        assert "continue" not in reads[0] and all("continue" in p for p in reads[1:])
    finally:  # one DELETE of the collection (kubectl delete --all sends one per object)
        lab.store.client.request("DELETE", NF_DEFAULT)


def test_node_events_are_a_field_selected_list_and_watch(lab: Lab, kube: Any) -> None:
    selector = f"involvedObject.kind=Node,involvedObject.name={NODE}"
    listed = json.loads(run(["kubectl", "get", "events", "-A", f"--field-selector={selector}", "-o", "json"],
                            lab_env(lab)).stdout)["items"]
    assert {e["reason"] for e in listed} >= {"Starting", "NodeReady"}  # the lab's kubelet's, at its start
    events = Events(kube)
    seen = len(lab.api_requests())
    watch = events.watch_object("Node", NODE)
    try:
        wait_for(watch.cache.synced.is_set, timeout=10, what=f"{NODE}'s events listed")
        assert {e.reason for e in watch.cache.snapshot().values()} == {e["reason"] for e in listed}
        wait_for(lambda: any("watch=true" in r for r in lab.api_requests("GET /api/v1/events")), timeout=10,
                 what="the watch")
        lab.store.create("events", _event("kube-worker02.oom", "kube-worker02", "SystemOOM", "oom"))
        lab.store.create("events", _event(f"{NODE}.oom", NODE, "SystemOOM", "oom"))
        wait_for(lambda: "SystemOOM" in [e.reason for e in watch.cache.snapshot().values()], timeout=10,
                 what="the new event")
        assert {e.object_name for e in watch.cache.snapshot().values()} == {NODE}  # only what is shown
    finally:
        events.stop()
    reads = [r for r in lab.api_requests()[seen:] if r.startswith("GET /api/v1/events")]
    assert reads and all(_params(r)["fieldSelector"] == selector for r in reads)
    assert any(_params(r).get("watch") == "true" for r in reads)


def test_scheduling_events_keep_only_failed_scheduling(lab: Lab, kube: Any) -> None:
    """The default scenario's nginx (3 CPUs) fits no node: kube-scheduler's FailedScheduling."""
    events = Events(kube)
    seen = len(lab.api_requests())
    events.start()
    try:
        wait_for(events.cache.synced.is_set, timeout=10, what="FailedScheduling events listed")
        latest = events.failed_scheduling()
        assert ("default", "nginx") in latest and "Insufficient cpu" in latest[("default", "nginx")].message
        kept = events.cache.snapshot().values()
        assert kept and all(e.reason == "FailedScheduling" for e in kept)  # no node event of the cluster kept
    finally:
        events.stop()
    reads = [r for r in lab.api_requests()[seen:] if r.startswith("GET /api/v1/events")]
    assert reads and {_params(r)["fieldSelector"] for r in reads} == {
        "involvedObject.kind=Pod,reason=FailedScheduling"}
