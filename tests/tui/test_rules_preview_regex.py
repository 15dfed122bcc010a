"""The rule editor's dry-run and validation use the same Go (RE2) engine as NFD: linear, RE2 syntax.

NFD: pkg/apis/nfd/nodefeaturerule/expression.go (InRegexp: regexp.Compile + MatchString).
"""

from __future__ import annotations

import time

import yaml

from console.nfd import versions as V
from console.nfd.master import MasterConfig
from console.nfd.model import Features, make_node_feature
from console.nfd_preview import dry_run_rule
from console.tui.screens.rules import parse_rule

V19 = V.parse_version("v0.19.0")

RULE = """apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: redos}
spec:
  rules:
  - name: redos
    labels: {example.dev/redos: "true"}
    matchFeatures:
    - feature: custom.attrs
      matchExpressions:
        value: {op: InRegexp, value: ["PATTERN"]}
"""


def test_dry_run_of_a_pathological_regexp_is_instant() -> None:
    nfs = {"a": [make_node_feature("a", Features(attributes={"custom.attrs": {"value": "a" * 10_000 + "!"}}), {})]}
    nodes = {"a": {"metadata": {"name": "a"}}}
    start = time.monotonic()
    r = dry_run_rule(yaml.safe_load(RULE.replace("PATTERN", "(a+)+$")), [], nfs, nodes, MasterConfig(version=V19))
    assert time.monotonic() - start < 1.0
    assert r.error == "" and not r.affected  # no match: "a…a!" does not end in a's


def test_python_only_regexp_is_an_editor_error() -> None:
    _, errors, _ = parse_rule(RULE.replace("PATTERN", "(?<=x)a"), V19)
    assert any("error parsing regexp: invalid named capture" in e and "lookbehind" in e for e in errors), errors
