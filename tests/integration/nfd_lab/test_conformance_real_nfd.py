"""Conformance of the console's NFD previews with upstream's nfd-worker and nfd-master (issue 22 deliverable 4).

For each NFD release the lab builds that has NodeFeatureRules and the NodeFeature API (v0.16.6, v0.18.3, v0.19.0),
a lab runs that release's nfd-worker on every node and its nfd-master (console/lab/nfd_release.py). Generated
rules (hypothesis: matchFeatures and matchAny over the features the real workers published, every operator the
release has, label names with and without prefixes, labelsTemplate over matched elements, vars read back through
rule.matched) go to the cluster as NodeFeatureRules; the real nfd-master writes the nodes' labels. The console
predicts them with `console nfd dryrun --from-cluster` (the cluster's NodeFeatures, its nfd-master's flags and
config) before the rules are created; then, once the master has relabelled, each node's NFD labels (those its
feature-labels annotation names) must equal the prediction exactly. Likewise generated feature files (keys with
and without prefixes, invalid names, values, comments, the expiry and no-label/no-feature directives) in a node's
features.d, predicted by `console nfd local --from-cluster`; and NFD's own Go test vectors (below). The count of
cases per release is printed.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from nfdconformance import (
    BATCH_SETTINGS,
    BATCHES,
    FNS,
    all_nfd_labels,
    api,
    console,
    feature_file,
    feature_lines,
    label_diff,
    labels_follow,
    running_lab,
)
from nfdvectors import R1, R1_TERMS, R2_TERMS, ex

from console.lab import scenarios
from console.lab.world import Lab

pytestmark = pytest.mark.lab

GROUP, VERSION = "nfd.k8s-sigs.io", "v1alpha1"
RULES_PER_CASE = 24  # rules per NodeFeatureRule batch: one relabel by nfd-master checks them all
RELEASES = ("v0.16.6", "v0.18.3", "v0.19.0")
CASES: dict[str, int] = {}  # rules compared, per release
MATCHED: dict[str, int] = {}  # (rule, node) pairs that matched: the comparison is not of empty label sets
FILES: dict[str, int] = {}  # feature files compared, per release
LINES: dict[str, int] = {}


@pytest.fixture(scope="module", params=RELEASES)
def real_lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    v = request.param
    yield from running_lab(
        dataclasses.replace(scenarios.get("default"), nfd_version=v, objects=(), pods=()),
        tmp_path_factory.mktemp(f"lab-conformance-{v}"),
        lambda: f"\nconformance cases on NFD {v}: {CASES.get(v, 0)} rules, {MATCHED.get(v, 0)} (rule, node) matches; "
        f"{FILES.get(v, 0)} feature files, {LINES.get(v, 0)} lines; {VECTORS.get(v, 0)} rules of NFD's Go test vectors",
    )


def _features(lab: Lab) -> dict[str, Any]:
    """The union of what the real workers published: flags, attributes and instances by feature name."""
    from kubernetes import client

    with api(lab) as c:
        items = client.CustomObjectsApi(c).list_cluster_custom_object(GROUP, VERSION, "nodefeatures")["items"]
    out: dict[str, Any] = {"flags": {}, "attributes": {}, "instances": {}}
    for nf in items:
        f = nf["spec"].get("features") or {}
        for name, s in (f.get("flags") or {}).items():
            out["flags"].setdefault(name, set()).update((s.get("elements") or {}).keys())
        for name, s in (f.get("attributes") or {}).items():
            for k, v in (s.get("elements") or {}).items():
                out["attributes"].setdefault(name, {}).setdefault(k, set()).add(v)
        for name, s in (f.get("instances") or {}).items():
            for inst in s.get("elements") or []:
                for k, v in (inst.get("attributes") or {}).items():
                    out["instances"].setdefault(name, {}).setdefault(k, set()).add(v)
    return out


def _ops(version: str) -> list[str]:
    ops = ["In", "NotIn", "InRegexp", "Exists", "DoesNotExist", "Gt", "Lt", "GtLt", "IsTrue", "IsFalse"]
    return ops + (["Ge", "Le", "GeLe"] if version >= "v0.18" else [])


def _expression(draw: st.DrawFn, version: str, values: list[str]) -> dict[str, Any]:
    """One expression over a key whose values (on some node) are `values`. Comparisons only where every value
    parses (numbers, or versions): NFD evaluates a rule's matchExpressions in Go map order, so a comparison that
    fails on one value ("not a number") and an expression that is false decide the rule by chance (seen once in
    four runs: GtLt over pci.device `device`, hex ids among them); that is NFD's own non-determinism, not a case."""
    known = values or ["x"]
    numeric = all(re.fullmatch(r"-?\d{1,9}", v) for v in known)
    versions = [v for v in known if re.fullmatch(r"\d+\.\d+\.\d+.*", v)]
    comparable = numeric or (len(versions) == len(known) and version >= "v0.18")
    ops = [o for o in _ops(version) if comparable or o not in ("Gt", "Lt", "GtLt", "Ge", "Le", "GeLe")]
    op = draw(st.sampled_from(ops))
    if op in ("Exists", "DoesNotExist", "IsTrue", "IsFalse"):
        return {"op": op}
    if op in ("In", "NotIn"):
        return {"op": op, "value": draw(st.lists(st.sampled_from([*known, "zz-none"]), min_size=1, max_size=3))}
    if op == "InRegexp":
        v = draw(st.sampled_from(known))
        return {"op": op, "value": [draw(st.sampled_from(["^" + re.escape(v[:2]), re.escape(v) + "$", ".*", "^z"]))]}
    if not numeric:  # `type: version` (v0.18): bounds may be equal
        bounds = sorted(draw(st.lists(st.sampled_from([*versions, "1.0.0", "99.0.0"]), min_size=2, max_size=2)))
        return {"op": op, "type": "version", "value": bounds if op in ("GtLt", "GeLe") else bounds[:1]}
    numbers = [int(v) for v in known]
    n = draw(st.sampled_from(numbers)) + draw(st.integers(-2, 2))
    if op in ("GtLt", "GeLe"):  # NFD refuses value[0] >= value[1] for numbers (at evaluation, as the console)
        return {"op": op, "value": [str(n - draw(st.integers(0, 3))), str(n + draw(st.integers(1, 3)))]}
    return {"op": op, "value": [str(n)]}


@st.composite
def _matcher(draw: st.DrawFn, feats: dict[str, Any], version: str) -> dict[str, Any]:
    kind = draw(st.sampled_from([k for k in ("flags", "attributes", "instances") if feats[k]]))
    name = draw(st.sampled_from(sorted(feats[kind])))
    domain = feats[kind][name]
    keys = sorted(domain)
    exprs = {}
    for key in draw(st.lists(st.sampled_from([*keys, "zzNoSuchKey"]), min_size=1, max_size=2, unique=True)):
        if kind == "flags":
            exprs[key] = {"op": draw(st.sampled_from(["Exists", "DoesNotExist"]))}
        else:
            exprs[key] = _expression(draw, version, sorted(domain.get(key, ())))
    return {"feature": name, "matchExpressions": exprs}


LABEL_PREFIXES = ("", "example.com/", f"{FNS}/", f"sub.{FNS}/", "vendor.example.org/")


@st.composite
def _rules(draw: st.DrawFn, feats: dict[str, Any], version: str) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for i in range(RULES_PER_CASE):
        rule: dict[str, Any] = {"name": f"case-{i}"}
        matchers = draw(st.lists(_matcher(feats, version), min_size=1, max_size=2))
        if draw(st.booleans()) and i % 3 == 0:
            rule["matchAny"] = [{"matchFeatures": matchers}, {"matchFeatures": [draw(_matcher(feats, version))]}]
        else:
            rule["matchFeatures"] = matchers
        prefix = draw(st.sampled_from(LABEL_PREFIXES))
        rule["labels"] = {f"{prefix}c{i}": draw(st.sampled_from(["true", "v1", "0", "x-y.z"]))}
        flags = [m["feature"] for m in matchers if m["feature"] in feats["flags"]]
        if flags and draw(st.booleans()):
            # a template over the matched elements of a flag feature (what matched, by name)
            rule["labelsTemplate"] = "{{ range ." + flags[0] + " }}example.com/t" + str(i) + "-{{ .Name }}=1\n{{ end }}"
        if draw(st.booleans()):
            rule["vars"] = {f"var{i}": "true"}
        rules.append(rule)
    # rules reading earlier rules' vars back through the rule.matched feature (rules run in order)
    with_vars = [r for r in rules if "vars" in r]
    for j, r in enumerate(with_vars[:3]):
        var = next(iter(r["vars"]))
        rules.append(
            {
                "name": f"vars-{j}",
                "labels": {f"example.com/from-{var}": "yes"},
                "matchFeatures": [{"feature": "rule.matched", "matchExpressions": {var: {"op": "IsTrue"}}}],
            }
        )
    return rules


def test_console_preview_equals_what_upstream_nfd_master_writes(real_lab: Lab, tmp_path: Path) -> None:
    from kubernetes import client

    version = real_lab.scenario.nfd_version
    feats = _features(real_lab)
    assert feats["flags"], "the real workers published no features"
    batch = iter(range(BATCHES))

    @BATCH_SETTINGS
    @given(_rules(feats, version))
    def case(rules: list[dict[str, Any]]) -> None:
        n = next(batch, BATCHES)
        name = f"conformance-{n}"
        obj = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "NodeFeatureRule",
            "metadata": {"name": name},
            "spec": {"rules": rules},
        }
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(obj, sort_keys=False))
        code, doc, err = console(real_lab, "dryrun", "--from-cluster", "--rule", str(path))
        if code == 1 and doc.get("error") == "invalid-rule":
            print(f"\nNFD {version}: batch {n} refused by the console: {doc.get('message')}")
            return  # the console refuses it before the cluster would see it: not a conformance case
        assert code in (0, 1) and doc.get("nodes"), err
        expected = {node: row["node_labels"] for node, row in doc["nodes"].items()}
        with api(real_lab) as c:
            custom = client.CustomObjectsApi(c)

            baseline = all_nfd_labels(c)
            custom.create_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", obj)
            try:
                deadline, seen = time.monotonic() + 60, {}
                while time.monotonic() < deadline:
                    seen = all_nfd_labels(c)
                    if seen == expected:
                        break
                    time.sleep(0.3)
                diff = label_diff(expected, seen)
                assert not diff, (
                    f"NFD {version}: console and nfd-master differ:\n{yaml.safe_dump(diff)}\nrules:\n{path.read_text()}"
                )
            finally:
                custom.delete_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", name)
                # the master takes the rule's labels away again: the next case (and test) starts from there
                deadline = time.monotonic() + 60
                while all_nfd_labels(c) != baseline and time.monotonic() < deadline:
                    time.sleep(0.3)
            assert all_nfd_labels(c) == baseline, "nfd-master did not remove the rule's labels within 60s"
        CASES[version] = CASES.get(version, 0) + len(rules)
        MATCHED[version] = MATCHED.get(version, 0) + sum(len(row["matched_rules"]) for row in doc["nodes"].values())

    case()
    assert CASES.get(version, 0) > 0 and MATCHED.get(version, 0) > 0


NODE = "kube-worker01"


def test_feature_file_preview_equals_what_upstream_nfd_writes(real_lab: Lab) -> None:
    """A generated feature file in kube-worker01's features.d (hostPath): `console nfd local --from-cluster` on
    that directory, before and after, gives the labels the real nfd-worker and nfd-master then write."""
    from console.lab.guestroot import NFD_FEATURES_D

    version = real_lab.scenario.nfd_version
    features_d = real_lab.guest_roots[NODE].path(NFD_FEATURES_D)
    files = iter(range(BATCHES))

    @BATCH_SETTINGS
    @given(feature_lines())
    def case(lines: list[str]) -> None:
        n = next(files, BATCHES)
        text = "\n".join(lines) + "\n"
        labels_follow(real_lab, NODE, ["--features-dir", str(features_d)], feature_file(features_d, n, text), text)
        FILES[version] = FILES.get(version, 0) + 1
        LINES[version] = LINES.get(version, 0) + len(lines)

    case()
    assert FILES.get(version, 0) == BATCHES


# -- NFD's own Go test vectors through the real nfd-master ------------------------------------------------------
# The rules and features of tests/unit/nfd/test_nfd_upstream_rules.py (ported from v0.19.0
# pkg/apis/nfd/nodefeaturerule/rule_test.go TestRule and TestTemplating, template.go, and the customization
# guide's Sprig example), published as one extra NodeFeature of kube-worker01 (the master merges every NodeFeature
# labelled with the node's name: getAndMergeNodeFeatures) and one NodeFeatureRule per rule, so a rule that fails
# costs only its own labels. Static label names are made unique per vector; the rules are otherwise as upstream's.


def _flags(*keys: str) -> dict[str, Any]:
    return {"elements": {k: {} for k in keys}}


def _attrs(**kv: str) -> dict[str, Any]:
    return {"elements": dict(kv)}


def _insts(*items: dict[str, str]) -> dict[str, Any]:
    return {"elements": [{"attributes": dict(i)} for i in items]}


VECTOR_FEATURES: dict[str, Any] = {
    "flags": {
        "domain_1.kf_1": _flags("key-a", "key-b", "key-c"),
        "domain.mf": _flags("key-a", "key-b", "key-c"),
        "domain-1.kf-1": _flags("key-1"),
        "domain-1.kf-2": _flags(),  # present and empty: a term on it matches nothing
        "dom.feat": _flags("k-1", "k-2"),
    },
    "attributes": {
        "domain_1.vf_1": _attrs(**{"key-1": "val-1", "keu-2": "val-2", "key-3": "val-3", "key-4": "val-4"}),
        "domain.mf": _attrs(**{"key-d": "val-d", "key-e": "val-e"}),
        "domain-1.vf-1": _attrs(**{"key-1": "val-1"}),
        "dom.feat": _attrs(**{"a-1": "v-1", "a-2": "v-2"}),
    },
    "instances": {
        "domain_1.if_1": _insts({"attr-1": "1", "attr-2": "val-2"}, {"attr-1": "10", "attr-2": "val-20"},
                                {"attr-1": "100", "attr-2": "val-200"},
                                {"attr-1": "1000", "attr-2": "val-2000", "attr-3": "3000"}),
        "domain-1.if-1": _insts({"attr-1": "val-1"}),
        "dom.feat": _insts({"ia-1": "iv-1"}, {"ia-2": "iv-2"}),
        "vec.device": _insts({"vendor": "8086", "class": "0200"}, {"vendor": "8086", "class": "0200"},
                             {"vendor": "10de", "class": "0300"}),
    },
}
IF_TERMS = [{"feature": "domain_1.if_1", "matchExpressions": {"attr-1": ex("Lt", "100")}}]
RT_TERMS = [{"feature": "domain-1.vf-1", "matchExpressions": {"key-1": ex("In", "val-x")}},
            {"feature": "domain-1.if-1", "matchExpressions": {"attr-1": ex("In", "val-1")}}]
KEY1 = {"matchFeatures": [{"feature": "domain-1.kf-1", "matchExpressions": {"key-1": ex("Exists")}}]}
KEYNA = {"matchFeatures": [{"feature": "domain-1.kf-1", "matchExpressions": {"key-na": ex("Exists")}}]}
SPRIG = ['{{ substr 1 3 "abcdef" }}', '{{ nospace " a b c " }}', '{{ adler32sum "a" }}', '{{ b64enc "hi" }}',
         '{{ untitle "Hello" }}', '{{ plural "one" "many" 2 }}', '{{ atoi "12abc" }}', '{{ int "0x10" }}',
         '{{ title "hELLO wORLD" }}', '{{ lower "A" }}', '{{ sha256sum "a" }}', '{{ list 1 2 3 | rest }}']
GUIDE = ("num-intel-network-controllers={{ .vec.device | len }}\n"
         "first-intel-network-controllers={{ (.vec.device | first).class | trim | substr 0 63 }}\n")
VECTOR_RULES: list[dict[str, Any]] = [
    # TestTemplating
    R1,
    {**{k: v for k, v in R1.items() if k not in ("labels", "matchFeatures")}, "labels": {"any-label-1": "label-val-1"},
     "matchAny": [{"matchFeatures": R1_TERMS}]},
    {"labelsTemplate": "\n{{range .domain.mf}}mf-{{.Name}}=found\n{{end}}",
     "matchFeatures": [{"feature": "domain.mf", "matchExpressions": {"key-a": ex("Exists"),
                                                                      "key-d": ex("In", "val-d")}}]},
    *({"matchFeatures": R2_TERMS, field: src} for field, src in (
        ("labelsTemplate", "err-foo=bar"), ("labelsTemplate", "err-foo"), ("labelsTemplate", "{{"),
        ("varsTemplate", "bar=baz"), ("varsTemplate", "bar"), ("varsTemplate", "{{"))),
    {"labelsTemplate": "{{range .domain_1.vf_1}}mn-{{.Name}}={{.Value}}\n{{end}}",
     "matchFeatures": [{"feature": "domain_1.vf_1", "matchExpressions": {"key-5": ex("DoesNotExist")},
                        "matchName": ex("In", "key-1", "key-4")}]},
    {"labels": {"should-not-match": "true"},
     "matchFeatures": [{"feature": "domain_1.vf_1", "matchName": ex("In", "key-not-exists")}]},
    # TestRule
    {"labels": {"rt-label-1": "", "rt-label-2": "true"}},
    {"labels": {"rt-missing": "x"}, "matchFeatures": [{"feature": "domain-9.kf-1",
                                                        "matchExpressions": {"key-1": ex("Exists")}}]},
    {"labels": {"rt-empty": "x"}, "matchFeatures": [{"feature": "domain-1.kf-2",
                                                      "matchExpressions": {"key-1": ex("Exists")}}]},
    {"labels": {"rt-any-present": "x"}, "matchFeatures": [{"feature": "domain-1.kf-1", "matchExpressions": {}}]},
    {"labels": {"rt-label-key1": "label-val-1"}, "vars": {"var-1": "var-val-1"}, **KEY1},
    *({"labels": {f"feat-{i}": "val-1"}, "matchFeatures": [{"feature": "dom.feat", "matchExpressions": e}]}
      for i, e in enumerate(({"k-1": ex("Exists")}, {"a-1": ex("In", "v-1")}, {"ia-1": ex("In", "iv-1")},
                             {"k-2": ex("Exists"), "a-2": ex("In", "v-2")}, {"ia-2": ex("In", "iv-2")}))),
    {"labels": {"label-5": "no"}, "matchFeatures": RT_TERMS},
    {"labels": {"label-5b": "yes"}, "matchFeatures": [{**RT_TERMS[0], "matchExpressions": {"key-1": ex("In", "val-1")}},
                                                      RT_TERMS[1]]},
    {"labels": {"label-5c": "no"}, "matchFeatures": RT_TERMS[1:], "matchAny": [KEYNA]},
    {"labels": {"label-5d": "yes"}, "matchFeatures": RT_TERMS[1:], "matchAny": [KEYNA, KEY1]},
    # template.go: missingkey=error on maps, `index` unaffected
    {"labelsTemplate": 'x={{range .domain_1.if_1}}{{index . "attr-3"}}.{{end}}\ny={{index . "nope"}}\n'
                       'z={{index .domain_1 "no"}}', "matchFeatures": IF_TERMS},
    {"labelsTemplate": "nope={{ .nope }}", "matchFeatures": IF_TERMS},
    {"labelsTemplate": "{{range .domain_1.kf_1}}{{.Value}}=1{{end}}", "matchFeatures": R2_TERMS},
    # rule.go Execute: templates run only for matchers that matched
    {"labels": {"static-a": "1"}, "labelsTemplate": "{{"},
    # customization guide "Templating" (Sprig from v0.18) and Sprig functions (github:Masterminds/sprig v3.3.0)
    {"labelsTemplate": GUIDE, "matchFeatures": [{"feature": "vec.device", "matchExpressions": {
        "vendor": ex("In", "8086"), "class": ex("In", "0200")}}]},
    *({"labelsTemplate": f"sprig-{i}={src}", "matchFeatures": R2_TERMS} for i, src in enumerate(SPRIG)),
]
VECTOR_NODE = NODE
VECTORS: dict[str, int] = {}


def test_nfd_go_test_vectors_on_the_real_master(real_lab: Lab, tmp_path: Path) -> None:
    """Each vector rule in a NodeFeatureRule of its own over VECTOR_FEATURES, published for kube-worker01; a last
    rule labels the node only from a NodeFeature with this run's marker, so once its label is there the master has
    evaluated every rule against these features. The console's `dryrun --from-cluster` of the same rules must then
    give every node's NFD labels exactly."""
    from kubernetes import client

    version = real_lab.scenario.nfd_version
    ns = real_lab.scenario.nfd.namespace
    marker = f"run-{time.monotonic_ns()}"
    rules = [{"name": f"vector-{i}", **r} for i, r in enumerate(VECTOR_RULES)]
    objs = [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeFeatureRule", "metadata": {"name": f"vectors-{i:02d}"},
             "spec": {"rules": [r]}} for i, r in enumerate(rules)]
    sentinel = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeFeatureRule", "metadata": {"name": "vectors-zz"},
                "spec": {"rules": [{"name": "sentinel", "labels": {"vectors-evaluated": "true"},
                                    "matchFeatures": [{"feature": "vec.marker",
                                                       "matchExpressions": {marker: ex("Exists")}}]}]}}
    features = {**VECTOR_FEATURES, "flags": {**VECTOR_FEATURES["flags"], "vec.marker": _flags(marker)}}
    nodefeature = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeFeature",
                   "metadata": {"name": f"vectors-{VECTOR_NODE}", "namespace": ns,
                                "labels": {"nfd.node.kubernetes.io/node-name": VECTOR_NODE}},
                   "spec": {"features": features}}
    path = tmp_path / "vectors.yaml"
    path.write_text(yaml.safe_dump_all([*objs, sentinel], sort_keys=False))
    with api(real_lab) as c:
        custom = client.CustomObjectsApi(c)

        baseline = all_nfd_labels(c)
        custom.create_namespaced_custom_object(GROUP, VERSION, ns, "nodefeatures", nodefeature)
        try:
            for obj in [*objs, sentinel]:
                custom.create_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", obj)
            deadline = time.monotonic() + 90
            while all_nfd_labels(c)[VECTOR_NODE].get(f"{FNS}/vectors-evaluated") != "true":
                assert time.monotonic() < deadline, "nfd-master did not evaluate the vectors within 90s"
                time.sleep(0.3)
            seen = all_nfd_labels(c)
            code, doc, err = console(real_lab, "dryrun", "--from-cluster", "--rule", str(path))
            assert code in (0, 1) and doc.get("nodes"), err
            expected = {node: row["node_labels"] for node, row in doc["nodes"].items()}
            diff = label_diff(expected, seen)
            assert not diff, f"NFD {version}: console and nfd-master differ on NFD's vectors:\n{yaml.safe_dump(diff)}"
            # the vectors did something on the node: the rule-test labels every release has
            assert seen[VECTOR_NODE].get(f"{FNS}/rt-label-2") == "true"
            assert f"{FNS}/label-5" not in seen[VECTOR_NODE] and seen[VECTOR_NODE].get(f"{FNS}/label-5d") == "yes"
        finally:
            for obj in [*objs, sentinel]:
                custom.delete_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", obj["metadata"]["name"])
            custom.delete_namespaced_custom_object(GROUP, VERSION, ns, "nodefeatures", nodefeature["metadata"]["name"])
            deadline = time.monotonic() + 60
            while all_nfd_labels(c) != baseline and time.monotonic() < deadline:
                time.sleep(0.3)
        assert all_nfd_labels(c) == baseline, "nfd-master did not remove the vectors' labels within 60s"
    VECTORS[version] = len(rules)
