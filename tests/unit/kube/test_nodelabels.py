"""console/kube/nodelabels.py: a node's labels by origin from what NFD records.

References: pkg/nfd-master/nfd-master.go (feature-labels annotation; getAndMergeNodeFeatures: own namespace
first, then name, then namespace, a later object's labels win; rule labels win over NodeFeature labels);
pkg/nfd-worker/nfd-worker.go GetFeatureLabels (`<source>-` prefix except for the local and custom sources);
source/local/local.go (the local source's labels are its `local.label` feature).
"""

from __future__ import annotations

from typing import Any

from console.kube.nodelabels import OTHER, UNKNOWN, group_labels, label_origins, nfd_label_count
from console.nfd.master import MasterConfig, compute_node_outcome
from console.nfd.model import Features, make_node_feature
from console.nfd.versions import parse_version

FNS = "feature.node.kubernetes.io"
NS = "gpu-operator"  # nfd-master's namespace here: not the default one
CONFIG = MasterConfig(version=parse_version("v0.19.0"), namespace=NS)


def worker_nf(node: str) -> dict[str, Any]:
    f = Features()
    f.flags["cpu.cpuid"] = {"AVX512F"}
    f.attributes["local.label"] = {"rack": "r1", "example.com/site": "s1"}
    labels = {f"{FNS}/cpu-cpuid.AVX512F": "true", "rack": "r1", "example.com/site": "s1",
              f"{FNS}/storage-nonrotationaldisk": "true", "rdma.capable": "true"}  # the last: a custom rule
    return make_node_feature(node, f, labels, namespace=NS, worker_version="v0.19.0")


def third_party(node: str, ns: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    nf = make_node_feature(node, Features(), labels, namespace=ns)
    nf["metadata"]["name"] = name
    return nf


RULE = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "avx"},
        "spec": {"rules": [{"name": "avx512 ready", "labels": {"avx512-ready": "true", "example.dev/fast": "1",
                                                               "rack": "rule-wins"},
                            "matchFeatures": [{"feature": "cpu.cpuid",
                                               "matchExpressions": {"AVX512F": {"op": "Exists"}}}]}]}}


def node_state(nfs: list[dict[str, Any]]) -> tuple[dict[str, str], dict[str, str]]:
    """Labels and annotations as nfd-master leaves them, plus a non-NFD label and a stale NFD one."""
    out = compute_node_outcome(nfs, [RULE], config=CONFIG)
    labels = {**out.labels, "kubernetes.io/hostname": "w1", f"{FNS}/gone": "x"}
    ann = dict(out.annotations)
    ann["nfd.node.kubernetes.io/feature-labels"] += ",gone"
    return labels, ann


def test_origins_by_worker_source_third_party_object_and_rule() -> None:
    nfs = [worker_nf("w1"), third_party("w1", "vendor", "accel", {"vendor.example/accel": "yes"}),
           third_party("w1", NS, "w1-console", {"published": "yes"})]
    labels, ann = node_state(nfs)
    groups = group_labels(labels, ann, label_origins("w1", labels, ann, nfs, [RULE], CONFIG))
    assert groups == {
        "cpu": {f"{FNS}/cpu-cpuid.AVX512F": "true"},
        "storage": {f"{FNS}/storage-nonrotationaldisk": "true"},
        "local": {"example.com/site": "s1"},  # a feature file's label in another namespace: still local
        "custom": {f"{FNS}/rdma.capable": "true"},
        f"NodeFeature {NS}/w1-console": {f"{FNS}/published": "yes"},
        "NodeFeature vendor/accel": {"vendor.example/accel": "yes"},
        "rule avx: avx512 ready": {f"{FNS}/avx512-ready": "true", f"{FNS}/rack": "rule-wins",
                                   "example.dev/fast": "1"},
        UNKNOWN: {f"{FNS}/gone": "x"},
        OTHER: {"kubernetes.io/hostname": "w1"},
    }
    assert list(groups)[:4] == ["cpu", "storage", "local", "custom"] and list(groups)[-2:] == [UNKNOWN, OTHER]
    nfd = sum(len(v) for k, v in groups.items() if k != OTHER)
    assert nfd == nfd_label_count(labels, ann) == len(labels) - 1  # the nodes table's count: rule labels too


def test_the_annotation_decides_what_is_nfd() -> None:
    """A label NFD would write but does not list (not relabelled yet, or set by hand) is not NFD's."""
    nfs = [worker_nf("w1")]
    labels, ann = node_state(nfs)
    origins = label_origins("w1", labels, ann, nfs, [RULE], CONFIG)
    ann["nfd.node.kubernetes.io/feature-labels"] = "cpu-cpuid.AVX512F"
    groups = group_labels(labels, ann, origins)
    assert groups["cpu"] == {f"{FNS}/cpu-cpuid.AVX512F": "true"}
    assert set(groups) == {"cpu", OTHER} and nfd_label_count(labels, ann) == 1


def test_a_managed_label_no_object_yields_is_origin_unknown() -> None:
    nfs = [worker_nf("w1")]
    labels = {f"{FNS}/stale-label": "true", "kubernetes.io/os": "linux"}
    ann = {"nfd.node.kubernetes.io/feature-labels": "stale-label"}
    assert group_labels(labels, ann, label_origins("w1", labels, ann, nfs, [], CONFIG)) == {
        UNKNOWN: {f"{FNS}/stale-label": "true"}, OTHER: {"kubernetes.io/os": "linux"}}


def test_before_v0_10_local_and_custom_are_one_group() -> None:
    """No `local.label` feature before v0.10: the worker's record cannot tell a hook's label from a custom one."""
    config = MasterConfig(version=parse_version("v0.8.2"), namespace=NS)
    nf = make_node_feature("w1", Features(), {"my-script-kernel.pid_max": "4194304", "cpu-model.family": "6"},
                           namespace=NS, worker_version="v0.8.2")
    labels = {f"{FNS}/my-script-kernel.pid_max": "4194304", f"{FNS}/cpu-model.family": "6"}
    ann = {"nfd.node.kubernetes.io/feature-labels": "cpu-model.family,my-script-kernel.pid_max"}
    groups = group_labels(labels, ann, label_origins("w1", labels, ann, [nf], [], config))
    assert groups == {"cpu": {f"{FNS}/cpu-model.family": "6"},
                      "local/custom": {f"{FNS}/my-script-kernel.pid_max": "4194304"}}


def test_without_node_feature_api_the_worker_names_tell_the_source() -> None:
    """NFD v0.8.2 sends labels over gRPC (no NodeFeature): `<source>-` names are the worker's record; the rest
    is the local source (hooks and feature files, `<file>-<key>` then) or custom — no rules before v0.10."""
    labels = {f"{FNS}/cpu-model.family": "6", f"{FNS}/my-script-kernel.pid_max": "4194304", "kubernetes.io/os": "l"}
    ann = {"nfd.node.kubernetes.io/feature-labels": "cpu-model.family,my-script-kernel.pid_max"}
    old = MasterConfig(version=parse_version("v0.8.2"))
    assert group_labels(labels, ann, label_origins("w1", labels, ann, config=old)) == {
        "cpu": {f"{FNS}/cpu-model.family": "6"}, "local/custom": {f"{FNS}/my-script-kernel.pid_max": "4194304"},
        OTHER: {"kubernetes.io/os": "l"}}
    new = MasterConfig(version=parse_version("v0.19.0"))
    assert UNKNOWN in group_labels(labels, ann, label_origins("w1", labels, ann, config=new))
