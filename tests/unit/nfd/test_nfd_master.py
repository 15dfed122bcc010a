"""nfd-master simulation: merging, backrefs, @ values, namespaces per version, tracking annotations."""

from __future__ import annotations

from console.nfd.master import MasterConfig, compute_node_outcome, dry_run_many
from console.nfd.model import Features, make_node_feature
from console.nfd.versions import parse_version

from .conftest import nfr, nodefeature

FNS = "feature.node.kubernetes.io"


def test_doc_backreference_example() -> None:
    rules = [nfr("a-rules",
                 {"name": "my kernel label rule", "labels": {"kernel-feature": "true"},
                  "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {
                      "major": {"op": "Gt", "value": ["4"]}}}]},
                 {"name": "my var rule", "vars": {"nolabel.feature": "true"},
                  "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {"AVX512F": {"op": "Exists"}}}]}),
             nfr("b-rules",
                 {"name": "my high level feature rule", "labels": {"high-level-feature": "true"},
                  "matchFeatures": [{"feature": "rule.matched", "matchExpressions": {
                      "kernel-feature": {"op": "IsTrue"}, "nolabel.feature": {"op": "IsTrue"}}}]})]
    out = compute_node_outcome([nodefeature()], rules)
    assert out.labels == {f"{FNS}/kernel-feature": "true", f"{FNS}/high-level-feature": "true"}
    assert out.raw.vars == {"nolabel.feature": "true"}
    assert out.annotations["nfd.node.kubernetes.io/feature-labels"] == "high-level-feature,kernel-feature"
    # Objects run in name order: the same rules in reverse object order cannot see the backrefs.
    rules[0]["metadata"]["name"], rules[1]["metadata"]["name"] = "z-rules", "b-rules"
    assert f"{FNS}/high-level-feature" not in compute_node_outcome([nodefeature()], rules).labels


def test_rule_matched_exists_after_first_rule_even_without_match() -> None:
    rules = [nfr("r", {"name": "nomatch", "labels": {"a": "1"},
                       "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {"NOPE": {"op": "Exists"}}}]},
                 {"name": "dne", "labels": {"b": "1"},
                  "matchFeatures": [{"feature": "rule.matched", "matchExpressions": {"a": {"op": "DoesNotExist"}}}]})]
    assert compute_node_outcome([nodefeature()], rules).labels == {f"{FNS}/b": "1"}
    first_only = [nfr("r", rules[0]["spec"]["rules"][1])]
    assert compute_node_outcome([nodefeature()], first_only).labels == {}


def test_dynamic_values_and_their_failures() -> None:
    rules = [nfr("r", {"name": "dyn", "labels": {"kmajor": "@kernel.version.major",
                                                 "os": "@system.osrelease.VERSION_ID.major",
                                                 "gone": "@kernel.version.nope", "bad": "@kernel"},
                       "extendedResources": {"vendor.io/dynamic": "@kernel.version.major", "static": "3",
                                             "notqty": "abc"}})]
    out = compute_node_outcome([nodefeature()], rules)
    assert out.labels[f"{FNS}/kmajor"] == "5" and out.labels[f"{FNS}/os"] == "15"
    reasons = {d.key: d.reason for d in out.dropped}
    assert reasons[f"{FNS}/gone"] == "element nope not found on feature kernel.version"
    assert "not in the form" in reasons[f"{FNS}/bad"]
    assert out.extended_resources == {"vendor.io/dynamic": "5", f"{FNS}/static": "3"}
    assert "invalid value 'abc'" in reasons[f"{FNS}/notqty"]
    assert out.annotations["nfd.node.kubernetes.io/extended-resources"] == "static,vendor.io/dynamic"
    # rule.matched keeps raw keys and unresolved values
    assert out.features.attributes["rule.matched"]["kmajor"] == "@kernel.version.major"


def test_rule_error_skips_only_that_rule() -> None:
    rules = [nfr("r", {"name": "bad", "labels": {"x": "1"}, "matchFeatures": [
        {"feature": "kernel.version", "matchExpressions": {"full": {"op": "Gt", "value": ["1"]}}}]},
                 {"name": "good", "labels": {"y": "1"}})]
    out = compute_node_outcome([nodefeature()], rules)
    assert out.labels == {f"{FNS}/y": "1"}
    assert [(r.rule, bool(r.error)) for r in out.rule_results] == [("bad", True), ("good", False)]
    assert "not a number" in out.rule_errors[0].error


def test_merge_order_and_instances_append() -> None:
    own = make_node_feature("w1", Features(attributes={"a.b": {"k": "own"}}, instances={"p.d": [{"x": "1"}]}),
                            {"l": "own"})
    third = make_node_feature("w1", Features(attributes={"a.b": {"k": "third"}}, instances={"p.d": [{"x": "2"}]}),
                              {"l": "third"}, namespace="vendor")
    third["metadata"]["name"] = "a-vendor"
    out = compute_node_outcome([third, own], [nfr("r", {"name": "t", "labelsTemplate":
                                                        "{{ range .p.d }}i{{ .x }}=1\n{{ end }}",
                                                        "matchFeatures": [{"feature": "p.d"}]})])
    # master namespace first, then by name: the third-party object is merged last and wins
    assert out.labels[f"{FNS}/l"] == "third"
    assert out.features.attributes["a.b"]["k"] == "third"
    assert out.features.instances["p.d"] == [{"x": "1"}, {"x": "2"}]
    cfg = MasterConfig(deny_node_feature_labels=True)
    assert compute_node_outcome([third, own], [], config=cfg).labels == {f"{FNS}/l": "own"}


def test_label_namespaces_by_version() -> None:
    labels = {"vendor.io/a": "1", "sub.feature.node.kubernetes.io/b": "1", "profile.node.kubernetes.io/c": "1",
              "kubernetes.io/d": "1", "node-role.kubernetes.io/e": "1", "example.k8s.io/f": "1", "plain": "1"}
    nf = nodefeature(labels=labels)

    def kept(version: str, **kw) -> set[str]:
        cfg = MasterConfig(version=parse_version(version), **kw)
        return set(compute_node_outcome([nf], [], config=cfg).labels)

    assert kept("v0.8.0") == {f"{FNS}/plain"}
    assert kept("v0.9.0") == {f"{FNS}/plain", "sub.feature.node.kubernetes.io/b"}
    assert kept("v0.10.0") == {f"{FNS}/plain", "sub.feature.node.kubernetes.io/b", "profile.node.kubernetes.io/c"}
    v13 = {f"{FNS}/plain", "sub.feature.node.kubernetes.io/b", "profile.node.kubernetes.io/c", "vendor.io/a",
           "example.k8s.io/f"}
    assert kept("v0.13.0") == v13
    assert kept("v0.19.0") == v13
    assert kept("v0.8.0", extra_label_ns=frozenset({"vendor.io"})) == {f"{FNS}/plain", "vendor.io/a"}
    assert "kubernetes.io/d" in kept("v0.19.0", extra_label_ns=frozenset({"kubernetes.io"}))
    assert "vendor.io/a" not in kept("v0.19.0", deny_label_ns=frozenset({"*.io"}))
    # v0.13-v0.14: feature./profile. always pass; v0.15+: the deny list applies to them too
    assert f"{FNS}/plain" in kept("v0.14.0", deny_label_ns=frozenset({"*"}))
    assert kept("v0.15.0", deny_label_ns=frozenset({"*"})) == set()
    dropped = compute_node_outcome([nf], [], version="v0.8.0").dropped
    assert any("add -extra-label-ns=vendor.io" in d.reason for d in dropped)


def test_auto_prefix_modes() -> None:
    nf = nodefeature(labels={"gke-no-default-nvidia-gpu-device-plugin": "true"})

    def labels(version: str) -> dict[str, str]:
        cfg = MasterConfig(version=parse_version(version), disable_auto_prefix=True)
        return compute_node_outcome([nf], [], config=cfg).labels

    assert labels("v0.14.0") == {f"{FNS}/gke-no-default-nvidia-gpu-device-plugin": "true"}
    assert labels("v0.16.0") == {}  # dropped: "unprefixed keys are not allowed"
    assert labels("v0.18.0") == {"gke-no-default-nvidia-gpu-device-plugin": "true"}


def test_prefixed_key_wins_over_unprefixed() -> None:
    nf = nodefeature(labels={"foo": "unprefixed", f"{FNS}/foo": "prefixed"})
    assert compute_node_outcome([nf], []).labels == {f"{FNS}/foo": "prefixed"}


def test_invalid_labels_dropped_never_truncated() -> None:
    long = "x" * 64
    nf = nodefeature(labels={long: "1", "ok": long, "bad value": "1", "v": "a b"})
    out = compute_node_outcome([nf], [])
    assert out.labels == {}
    assert len(out.dropped) == 4 and all(d.reason for d in out.dropped)


def test_whitelist_on_basename() -> None:
    nf = nodefeature(labels={"cpu-x": "1", "mem-y": "1"})
    out = compute_node_outcome([nf], [], config=MasterConfig(label_whitelist="^cpu"))
    assert set(out.labels) == {f"{FNS}/cpu-x"}
    assert "does not match the whitelist" in out.dropped[0].reason


def test_annotations_and_taints() -> None:
    rules = [nfr("r", {"name": "t", "annotations": {"note": "hello", "kubernetes.io/x": "no", "big": "x" * 1025},
                       "taints": [{"key": "feature.node.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"},
                                  {"key": "nokey", "effect": "NoSchedule"},
                                  {"key": "example.com/t", "effect": "Sometimes"}]})]
    off = compute_node_outcome([nodefeature()], rules)
    assert off.taints == [] and off.annotations["feature.node.kubernetes.io/note"] == "hello"
    assert off.annotations["nfd.node.kubernetes.io/feature-annotations"] == "note"
    on = compute_node_outcome([nodefeature()], rules, config=MasterConfig(enable_taints=True))
    assert [t.to_string() for t in on.taints] == ["feature.node.kubernetes.io/gpu=true:NoSchedule"]
    assert on.annotations["nfd.node.kubernetes.io/taints"] == "feature.node.kubernetes.io/gpu=true:NoSchedule"
    reasons = sorted(d.reason for d in on.dropped)
    assert "invalid taint effect" in reasons and "unprefixed keys are not allowed" in reasons


def test_instance_prefix_and_stale_label_patch() -> None:
    node = {"metadata": {"labels": {f"{FNS}/old": "1", f"{FNS}/keep": "0", f"{FNS}/untracked": "1",
                                    "vendor.io/x": "1"},
                         "annotations": {"nfd.node.kubernetes.io/feature-labels": "keep,old,vendor.io/x"}}}
    nf = nodefeature(labels={"keep": "1", "new": "1"})
    out = compute_node_outcome([nf], [], node=node)
    assert out.patch["labels"] == {"remove": [f"{FNS}/old", "vendor.io/x"],
                                   "add": {f"{FNS}/new": "1"}, "replace": {f"{FNS}/keep": "1"}}
    cfg = MasterConfig(instance="blue")
    out2 = compute_node_outcome([nf], [], config=cfg, node=node)
    assert "blue.nfd.node.kubernetes.io/feature-labels" in out2.annotations
    assert out2.patch["labels"]["remove"] == []  # another instance's tracking list is not ours


def test_rules_ignored_before_v010() -> None:
    out = compute_node_outcome([nodefeature()], [nfr("r", {"name": "t", "labels": {"x": "1"}})], version="v0.9.0")
    assert out.labels == {} and "needs NFD v0.10+" in out.warnings[0]


def test_dry_run_many_compiles_once() -> None:
    rules = [nfr("r", {"name": "t", "labels": {"avx512": "true"},
                       "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {"AVX512F": {"op": "Exists"}}}]})]
    plain = Features(flags={"cpu.cpuid": {"AVX"}})
    res = dry_run_many(rules, {"a": [nodefeature("a")], "b": [make_node_feature("b", plain)]})
    assert res["a"].labels == {f"{FNS}/avx512": "true"} and res["b"].labels == {}
