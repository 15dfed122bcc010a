"""console/kube/nodefeatures.py pure parts: which NFD takes third-party NodeFeatures, nfd-worker's own object,
"same spec", the per-node preview text, the RBAC needs of a plan, and a hook / feature file as labels + features.

References: NFD docs/usage/customization-guide.md "NodeFeature custom resource"; pkg/nfd-master/nfd-master.go
isThirdPartyNodeFeature (the worker's object: named after the node, in nfd-master's namespace);
source/local/local.go (local.label = labels, local.feature = every feature of the files).
"""

from __future__ import annotations

import pytest

from console.kube.access import Need
from console.kube.nodefeatures import (
    ClusterNfd,
    NodePlan,
    PublishRefused,
    _spec_view,
    local_file_spec,
    node_feature_body,
    preview_text,
    publish_needs,
    require_third_party,
    worker_object,
)
from console.nfd import versions as V
from console.nfd.master import compute_node_outcome
from console.nfd.model import NODE_NAME_LABEL
from console.nfd_preview import node_change

V19, V16, V13 = V.parse_version("v0.19.0"), V.parse_version("v0.16.4"), V.parse_version("v0.13.0")


@pytest.mark.parametrize(("nfd", "kind", "words"), [
    (ClusterNfd(V.parse_version("v0.8.2"), "", "Node annotations", False), "nfd-too-old", ("v0.8.2", "v0.14.0")),
    (ClusterNfd(V13, "nfd", "annotation", True), "nfd-too-old", ("v0.13.0", "v0.14.0")),
    (ClusterNfd(None, "", "", False), "no-nodefeature-api", ("no NodeFeature API",)),
    (ClusterNfd(None, "nfd", "", True), "nfd-version-unknown", ("nfd_version",)),
])
def test_refused_below_v0_14_or_unknown(nfd: ClusterNfd, kind: str, words: tuple[str, ...]) -> None:
    with pytest.raises(PublishRefused) as e:
        require_third_party(nfd)
    assert e.value.kind == kind and all(w in str(e.value) for w in words)


def test_v0_14_and_later_accepted() -> None:
    require_third_party(ClusterNfd(V.parse_version("v0.14.0"), "nfd", "annotation", True))
    require_third_party(ClusterNfd(V19, "gpu-operator", "annotation", True))


def test_worker_object_is_the_node_named_one_with_the_version_annotation() -> None:
    third = node_feature_body("n1", "nfd", "n1-console", {"a": "b"})
    worker = {"metadata": {"name": "n1", "namespace": "gpu-operator", "labels": {NODE_NAME_LABEL: "n1"},
                           "annotations": {"nfd.node.kubernetes.io/worker.version": "v0.16.4"}}}
    assert worker_object([third]) is None
    assert worker_object([third, worker]) is worker


def test_same_spec_ignores_empty_feature_sections_and_metadata() -> None:
    a = node_feature_body("n1", "ns", "x", {"k": "v"}, {})
    b = node_feature_body("n1", "ns", "x", {"k": "v"}, {"flags": {}})
    b["metadata"]["resourceVersion"] = "7"
    assert _spec_view(a) == _spec_view(b)
    assert _spec_view(a) != _spec_view(node_feature_body("n1", "ns", "x", {"k": "w"}))
    assert _spec_view(a) != _spec_view(node_feature_body("n2", "ns", "x", {"k": "v"}))


def test_preview_names_the_object_and_the_node_changes() -> None:
    body = node_feature_body("n1", "nfd", "n1-console", {"rack": "r42"})
    outcome = compute_node_outcome([body], config=ClusterNfd(V19, "nfd", "", True).master_config())
    plan = NodePlan("n1", "nfd", "n1-console", "create", body=body,
                    change=node_change("n1", {"metadata": {"name": "n1", "labels": {}}}, outcome,
                                       ClusterNfd(V19, "nfd", "", True).master_config(), ""))
    text = preview_text([plan, NodePlan("n2", "nfd", "n2-console", "unchanged")])
    assert "n1: create NodeFeature nfd/n1-console" in text
    assert "+ label feature.node.kubernetes.io/rack=r42" in text
    assert "n2: NodeFeature nfd/n2-console unchanged (same spec: nothing sent)" in text
    assert plan.as_dict()["nodeChanges"] == {"labels": ["+feature.node.kubernetes.io/rack=r42"]}


def test_needs_per_action_and_namespace() -> None:
    plans = [NodePlan("n1", "a", "x", "create"), NodePlan("n2", "a", "x", "update"),
             NodePlan("n3", "b", "x", "delete"), NodePlan("n4", "b", "x", "unchanged")]
    assert publish_needs(plans) == (Need("create", "nodefeatures", "nfd.k8s-sigs.io", namespace="a"),
                                    Need("update", "nodefeatures", "nfd.k8s-sigs.io", namespace="a"),
                                    Need("delete", "nodefeatures", "nfd.k8s-sigs.io", namespace="b"))


def test_feature_file_as_labels_and_features() -> None:
    spec = local_file_spec("feature", "inv", "# c\nrack=r1\nexample.com/x=y\n# +no-label\nserial=S1\n", V19)
    assert spec.labels == {"rack": "r1", "example.com/x": "y"}
    attrs = spec.features["attributes"]
    assert attrs["local.label"]["elements"] == {"example.com/x": "y", "rack": "r1"}
    assert attrs["local.feature"]["elements"] == {"example.com/x": "y", "rack": "r1", "serial": "S1"}


def test_feature_file_bad_label_dropped_with_a_warning() -> None:
    spec = local_file_spec("feature", "inv", "good=1\nbad=has space\n", V19)
    assert spec.labels == {"good": "1"} and any("bad" in w for w in spec.warnings)


def test_hook_runs_with_node_name_and_failure_is_an_error() -> None:
    spec = local_file_spec("hook", "probe", "#!/bin/sh\necho node=$NODE_NAME\n", V16, node_name="w1")
    assert spec.labels == {"node": "w1"}
    with pytest.raises(ValueError, match="did not run cleanly"):
        local_file_spec("hook", "bad", "#!/bin/sh\nexit 2\n", V16)
