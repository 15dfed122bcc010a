"""console/kube/codec.JsonCodec on what an API server sends: list pages and watch lines.

Watch event shapes from k8s.io/apimachinery/pkg/watch (ADDED MODIFIED DELETED BOOKMARK ERROR) and
k8s.io/apimachinery/pkg/apis/meta/v1 WatchEvent: an ERROR's object is a metav1.Status, a BOOKMARK's
carries only metadata.resourceVersion (KEP-956 watch bookmarks).
"""

from __future__ import annotations

import json

from console.kube.codec import Event, JsonCodec, Page
from console.kube.model import NodeInfo, PodInfo

NODE = {"kind": "Node", "apiVersion": "v1",
        "metadata": {"name": "w1", "uid": "u1", "resourceVersion": "41", "labels": {"a": "b"}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
POD = {"kind": "Pod", "apiVersion": "v1",
       "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "42"},
       "spec": {"nodeName": "w1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "250m"}}}]},
       "status": {"phase": "Running"}}


def _line(kind: str, obj: dict) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode()


def test_error_line_carries_the_status_and_no_object() -> None:
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": "too old resource version: 12 (40)", "reason": "Expired", "code": 410}
    ev = JsonCodec(NodeInfo.from_api).event(_line("ERROR", status))
    assert ev == Event("ERROR", None, None, "", status)


def test_bookmark_line_carries_only_its_resource_version() -> None:
    mark = {"kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": "77"}}
    assert JsonCodec(NodeInfo.from_api).event(_line("BOOKMARK", mark)) == Event("BOOKMARK", None, None, "77", None)


def test_object_lines_are_projected_and_keyed() -> None:
    codec = JsonCodec(PodInfo.from_api)
    for kind in ("ADDED", "MODIFIED", "DELETED"):
        ev = codec.event(_line(kind, POD))
        assert (ev.type, ev.key, ev.resource_version, ev.status) == (kind, ("ns", "p"), "42", None)
        assert ev.obj == PodInfo.from_api(POD)
    node = JsonCodec(NodeInfo.from_api).event(_line("ADDED", NODE))
    assert node.key == ("", "w1") and node.obj == NodeInfo.from_api(NODE)


def test_page_has_items_resource_version_and_continue() -> None:
    body = {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "50", "continue": "tok"},
            "items": [NODE]}
    page = JsonCodec(NodeInfo.from_api).page(json.dumps(body).encode())
    assert page == Page([(("", "w1"), NodeInfo.from_api(NODE))], "50", "tok")
    last = JsonCodec(NodeInfo.from_api).page(b'{"metadata": {"resourceVersion": "51"}, "items": null}')
    assert last == Page([], "51", "")
