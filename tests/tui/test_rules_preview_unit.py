"""Pure parts of the rule editor: YAML/validation messages and the per-node change computation."""

from __future__ import annotations

from typing import Any

import yaml

from console.nfd import versions as V
from console.nfd.master import MasterConfig
from console.nfd.model import Features, make_node_feature
from console.nfd_preview import RULE_TEMPLATES, dry_run_rule
from console.tui.screens.rules import parse_rule, rule_yaml

V19 = V.parse_version("v0.19.0")


def nf(node: str, flags: set[str], pci_vendor: str = "1af4") -> dict[str, Any]:
    f = Features(flags={"cpu.cpuid": flags}, attributes={"cpu.topology": {"socket_count": "2"}},
                 instances={"pci.device": [{"vendor": pci_vendor, "class": "0300"}]})
    return make_node_feature(node, f, {})


def test_parse_rule_reports_yaml_line_and_rule_errors() -> None:
    obj, errors, _ = parse_rule("metadata:\n  name: x\nspec: [\n", V19)
    assert obj is None and errors[0].startswith("YAML error at line 4")
    obj, errors, _ = parse_rule(RULE_TEMPLATES["AVX512F nodes"].replace("Exists", "Bogus"), V19)
    assert obj is not None and any("Bogus" in e and "cpu has AVX512F" in e for e in errors)
    for text in RULE_TEMPLATES.values():
        assert parse_rule(text, V19)[1] == []


def test_dry_run_added_changed_removed_taints_and_resources() -> None:
    nfs = {"a": [nf("a", {"AVX512F"}, "10de")], "b": [nf("b", {"AVX"})]}
    nodes = {
        "a": {"metadata": {"name": "a", "labels": {"example.dev/avx512": "old"},
                           "annotations": {"nfd.node.kubernetes.io/feature-labels": "example.dev/avx512"}}},
        "b": {"metadata": {"name": "b", "labels": {"example.dev/avx512": "true"},
                           "annotations": {"nfd.node.kubernetes.io/feature-labels": "example.dev/avx512"}}},
        "c": {"metadata": {"name": "c"}},
    }
    r = dry_run_rule(yaml.safe_load(RULE_TEMPLATES["AVX512F nodes"]), [], nfs, nodes, MasterConfig(version=V19))
    by = {n.node: n for n in r.nodes}
    assert by["a"].labels.changed == {"example.dev/avx512": ("old", "true")}
    assert by["b"].labels.removed == {"example.dev/avx512": "true"}  # tracked by NFD and no longer produced
    assert any("no NodeFeature for c" in w for w in r.warnings)

    taint = dry_run_rule(yaml.safe_load(RULE_TEMPLATES["taint nodes with a PCI vendor"]), [], nfs, nodes,
                         MasterConfig(version=V19, enable_taints=True))
    ta = {n.node: n for n in taint.nodes}["a"]
    assert ta.taints.added == {"example.dev/nvidia:NoSchedule": "true"}
    no_taints = dry_run_rule(yaml.safe_load(RULE_TEMPLATES["taint nodes with a PCI vendor"]), [], nfs, nodes,
                             MasterConfig(version=V19))
    assert any("enable-taints" in d.reason for d in no_taints.nodes[0].dropped)

    er = dry_run_rule(yaml.safe_load(RULE_TEMPLATES["extended resource from an attribute"]), [], nfs, nodes,
                      MasterConfig(version=V19))
    assert {n.node: n.extended_resources.added for n in er.nodes}["a"] == {"example.dev/cpu-sockets": "2"}


def test_rule_yaml_drops_server_fields() -> None:
    obj = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
           "metadata": {"name": "x", "resourceVersion": "7", "uid": "u"}, "spec": {"rules": []}, "status": {}}
    doc = yaml.safe_load(rule_yaml(obj))
    assert doc["metadata"] == {"name": "x"} and "status" not in doc
