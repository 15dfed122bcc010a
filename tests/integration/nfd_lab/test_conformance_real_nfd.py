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
features.d, predicted by `console nfd local --from-cluster`. The count of cases per release is printed.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from labtools import lab_env

from console.lab import scenarios
from console.lab.world import Lab

pytestmark = pytest.mark.lab

GROUP, VERSION = "nfd.k8s-sigs.io", "v1alpha1"
FNS = "feature.node.kubernetes.io"
RULES_PER_CASE = 24  # rules per NodeFeatureRule batch: one relabel by nfd-master checks them all
BATCHES = 6  # hypothesis examples (batches) per release
RELEASES = ("v0.16.6", "v0.18.3", "v0.19.0")
# no shrinking: each try is a relabel by the real master; a difference is reported with its whole batch
BATCH_SETTINGS = settings(
    max_examples=BATCHES,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
CASES: dict[str, int] = {}  # rules compared, per release
MATCHED: dict[str, int] = {}  # (rule, node) pairs that matched: the comparison is not of empty label sets
FILES: dict[str, int] = {}  # feature files compared, per release
LINES: dict[str, int] = {}


@pytest.fixture(scope="module", params=RELEASES)
def real_lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    scenario = dataclasses.replace(scenarios.get("default"), nfd_version=request.param, objects=(), pods=())
    lab = Lab(scenario, tmp_path_factory.mktemp(f"lab-conformance-{request.param}"), wait_usage=False)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()
        print(
            f"\nconformance cases on NFD {request.param}: {CASES.get(request.param, 0)} rules, "
            f"{MATCHED.get(request.param, 0)} (rule, node) matches; {FILES.get(request.param, 0)} feature files, "
            f"{LINES.get(request.param, 0)} lines"
        )


def _api(lab: Lab) -> Any:
    from kubernetes import config

    return config.new_client_from_config(config_file=str(lab.state.kubeconfig))


def _features(lab: Lab) -> dict[str, Any]:
    """The union of what the real workers published: flags, attributes and instances by feature name."""
    from kubernetes import client

    with _api(lab) as api:
        items = client.CustomObjectsApi(api).list_cluster_custom_object(GROUP, VERSION, "nodefeatures")["items"]
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


def _nfd_labels(node: Any) -> dict[str, str]:
    """The labels nfd-master owns on a node: those its feature-labels annotation names."""
    names = ((node.metadata.annotations or {}).get("nfd.node.kubernetes.io/feature-labels") or "").split(",")
    keys = {n if "/" in n else f"{FNS}/{n}" for n in names if n}
    return {k: v for k, v in (node.metadata.labels or {}).items() if k in keys}


def _console(lab: Lab, *args: str) -> tuple[int, dict[str, Any], str]:
    p = subprocess.run(
        [sys.executable, "-m", "console", "nfd", *args, "-o", "json"],
        env=lab_env(lab),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, json.loads(p.stdout) if p.stdout.strip() else {}, p.stderr


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
        code, doc, err = _console(real_lab, "dryrun", "--from-cluster", "--rule", str(path))
        if code == 1 and doc.get("error") == "invalid-rule":
            print(f"\nNFD {version}: batch {n} refused by the console: {doc.get('message')}")
            return  # the console refuses it before the cluster would see it: not a conformance case
        assert code in (0, 1) and doc.get("nodes"), err
        expected = {node: row["node_labels"] for node, row in doc["nodes"].items()}
        with _api(real_lab) as api:
            custom = client.CustomObjectsApi(api)

            def snapshot() -> dict[str, dict[str, str]]:
                return {n.metadata.name: _nfd_labels(n) for n in client.CoreV1Api(api).list_node().items}

            baseline = snapshot()
            custom.create_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", obj)
            try:
                deadline, seen = time.monotonic() + 60, {}
                while time.monotonic() < deadline:
                    seen = snapshot()
                    if seen == expected:
                        break
                    time.sleep(0.3)
                diff = {
                    node: {
                        "console": {k: v for k, v in expected[node].items() if seen[node].get(k) != v},
                        "nfd-master": {k: v for k, v in seen[node].items() if expected[node].get(k) != v},
                    }
                    for node in expected
                    if seen.get(node) != expected[node]
                }
                assert not diff, (
                    f"NFD {version}: console and nfd-master differ:\n{yaml.safe_dump(diff)}\nrules:\n{path.read_text()}"
                )
            finally:
                custom.delete_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", name)
                # the master takes the rule's labels away again: the next case (and test) starts from there
                deadline = time.monotonic() + 60
                while snapshot() != baseline and time.monotonic() < deadline:
                    time.sleep(0.3)
            assert snapshot() == baseline, "nfd-master did not remove the rule's labels within 60s"
        CASES[version] = CASES.get(version, 0) + len(rules)
        MATCHED[version] = MATCHED.get(version, 0) + sum(len(row["matched_rules"]) for row in doc["nodes"].values())

    case()
    assert CASES.get(version, 0) > 0 and MATCHED.get(version, 0) > 0


# feature-file lines (NFD docs/usage/customization-guide.md "Feature files"): plain and prefixed keys, values,
# `/`-prefixed and invalid names, comments, blank lines, and the directives of v0.14+ (# +expiry-time) and
# v0.15+ (# +no-label, # +no-feature)
LINE_KEYS = (
    "rack",
    "zone.a",
    "example.com/tier",
    f"{FNS}/gpu-count",
    "sub.example.org/x_y",
    "/slash",
    "bad key",
    "UPPER-case",
    "-dash",
    "a" * 70,
)
LINE_VALUES = ("", "=1", "=true", "=r7", "=a b", "==x", "=" + "v" * 70, "=@local.rack")
DIRECTIVES = (
    "# a comment",
    "",
    "   ",
    "# +expiry-time=2099-01-01T00:00:00Z",
    "# +expiry-time=2001-01-01T00:00:00Z",
    "# +no-label",
    "# +no-feature",
    "# +unknown=1",
)


@st.composite
def _feature_file(draw: st.DrawFn) -> str:
    lines = []
    for i in range(draw(st.integers(1, 12))):
        if draw(st.integers(0, 3)) == 0:
            lines.append(draw(st.sampled_from(DIRECTIVES)))
        else:
            key = draw(st.sampled_from(LINE_KEYS))
            lines.append(f"{key}{i}{draw(st.sampled_from(LINE_VALUES))}")
    return "\n".join(lines) + "\n"


NODE = "kube-worker01"


def test_feature_file_preview_equals_what_upstream_nfd_writes(real_lab: Lab, tmp_path: Path) -> None:
    """A generated feature file in kube-worker01's features.d (hostPath): `console nfd local --from-cluster` on
    that directory, before and after, gives the labels the real nfd-worker and nfd-master then write."""
    from kubernetes import client

    from console.lab.guestroot import NFD_FEATURES_D

    version = real_lab.scenario.nfd_version
    features_d = real_lab.guest_roots[NODE].path(NFD_FEATURES_D)
    files = iter(range(BATCHES))

    def local() -> dict[str, str]:
        code, doc, err = _console(real_lab, "local", "--features-dir", str(features_d), "--from-cluster")
        assert code == 0, err
        return dict(doc["labels"])

    def node_labels(api: Any) -> dict[str, str]:
        return _nfd_labels(client.CoreV1Api(api).read_node(NODE))

    @BATCH_SETTINGS
    @given(_feature_file())
    def case(text: str) -> None:
        n = next(files, BATCHES)
        with _api(real_lab) as api:
            before_local, before = local(), node_labels(api)
            path = features_d / f"conformance-{n}"
            path.write_text(text)
            try:
                after_local = local()
                expected = {k: v for k, v in before.items() if k not in before_local} | after_local
                deadline, seen = time.monotonic() + 60, {}
                while time.monotonic() < deadline:
                    if (seen := node_labels(api)) == expected:
                        break
                    time.sleep(0.3)
                assert seen == expected, (
                    f"NFD {version}: console and nfd-worker/master differ for\n{text}\n"
                    f"console only: {set(expected.items()) - set(seen.items())}\n"
                    f"nfd only: {set(seen.items()) - set(expected.items())}"
                )
            finally:
                path.unlink()
            deadline = time.monotonic() + 60
            while node_labels(api) != before and time.monotonic() < deadline:
                time.sleep(0.3)
        FILES[version] = FILES.get(version, 0) + 1
        LINES[version] = LINES.get(version, 0) + len(text.splitlines())

    case()
    assert FILES.get(version, 0) == BATCHES
