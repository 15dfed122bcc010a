"""The patch engines on their own (what kubectl apply/label/taint send)."""

from __future__ import annotations

import pytest

from console.lab.kubeapi.patch import json_patch, merge_patch, strategic_merge_patch
from console.lab.kubeapi.selectors import label_selector
from console.lab.kubeapi.status import ApiError

POD = {
    "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["x"]},
    "spec": {
        "containers": [
            {"name": "app", "image": "nginx:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
            {"name": "side", "image": "busybox"},
        ],
        "tolerations": [{"key": "t1", "operator": "Exists"}],
    },
    "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]},
}


def test_strategic_merges_lists_by_key() -> None:
    out = strategic_merge_patch(POD, {
        "spec": {
            "containers": [{"name": "app", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]},
                           {"name": "side", "$patch": "delete"}],
            "tolerations": [{"key": "t2", "operator": "Exists"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
        "metadata": {"finalizers": ["y"], "labels": {"a": None, "b": "2"}},
    })
    assert [c["name"] for c in out["spec"]["containers"]] == ["app"]
    assert out["spec"]["containers"][0]["image"] == "nginx:1"
    assert out["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"},
                                                   {"name": "C", "value": "4"}]
    assert out["spec"]["tolerations"] == [{"key": "t2", "operator": "Exists"}]  # no merge key: replaced
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "False"}, {"type": "PodScheduled",
                                                                                   "status": "True"}]
    assert out["metadata"]["finalizers"] == ["x", "y"] and out["metadata"]["labels"] == {"b": "2"}
    assert POD["spec"]["containers"][1]["name"] == "side"  # the input is untouched


def test_strategic_directives() -> None:
    out = strategic_merge_patch(POD, {
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]},
        "spec": {"$setElementOrder/containers": [{"name": "side"}, {"name": "app"}],
                 "containers": [{"name": "side", "image": "busybox:2"}]},
    })
    assert out["metadata"]["finalizers"] == []
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == [("side", "busybox:2"), ("app", "nginx:1")]
    replaced = strategic_merge_patch(POD, {"spec": {"$patch": "replace", "containers": []}})
    assert replaced["spec"] == {"containers": []}


def test_merge_and_json_patch() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None}, "l": [2]}) == {"a": {"c": 2}, "l": [2]}
    out = json_patch(POD, [
        {"op": "test", "path": "/metadata/labels/a", "value": "1"},
        {"op": "add", "path": "/spec/containers/-", "value": {"name": "third", "image": "x"}},
        {"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/moved"},
        {"op": "copy", "from": "/spec/containers/0/image", "path": "/metadata/annotations"},
        {"op": "remove", "path": "/spec/tolerations/0"},
    ])
    assert [c["name"] for c in out["spec"]["containers"]] == ["app", "side", "third"]
    assert out["metadata"]["labels"] == {"moved": "1"} and out["metadata"]["annotations"] == "nginx:1"
    assert out["spec"]["tolerations"] == []
    with pytest.raises(ApiError) as err:
        json_patch(POD, [{"op": "test", "path": "/metadata/name", "value": "other"}])
    assert err.value.code == 422
    with pytest.raises(ApiError):
        json_patch(POD, [{"op": "replace", "path": "/nope/x", "value": 1}])


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ("a=1", {"a": "1"}, True),
    ("a==1,b", {"a": "1"}, False),
    ("a!=1", {}, True),
    ("!a", {"b": "x"}, True),
    ("a in (1, 2),b notin (x)", {"a": "2", "b": "y"}, True),
    ("a notin (1)", {"a": "1"}, False),
    ("n>3", {"n": "4"}, True),
])
def test_label_selectors(selector: str, labels: dict[str, str], expected: bool) -> None:
    match = label_selector(selector)
    assert match is not None
    assert match({"metadata": {"labels": labels}}) is expected


def test_bad_label_selector_is_400() -> None:
    with pytest.raises(ApiError) as err:
        label_selector("a in b")
    assert err.value.code == 400
