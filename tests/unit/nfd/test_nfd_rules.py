"""The rule engine: NFD's documented examples and every field's edge cases."""

from __future__ import annotations

import pytest

from console.nfd.expressions import EvaluationError
from console.nfd.model import Features
from console.nfd.rules import RuleError, compile_rule

SAMPLE = {
    "name": "my sample rule",
    "labels": {"feature.node.kubernetes.io/my-sample-feature": "true"},
    "matchFeatures": [
        {"feature": "kernel.loadedmodule", "matchExpressions": {"dummy": {"op": "Exists"}}},
        {"feature": "kernel.config", "matchExpressions": {"X86": {"op": "In", "value": ["y"]}}},
    ],
}


def test_doc_sample_rule(features: Features) -> None:
    out = compile_rule(SAMPLE).execute(features)
    assert out.matched and out.labels == {"feature.node.kubernetes.io/my-sample-feature": "true"}
    features.flags["kernel.loadedmodule"].discard("dummy")
    assert not compile_rule(SAMPLE).execute(features).matched


def test_doc_template_rule(features: Features) -> None:
    rule = compile_rule({
        "name": "my template rule",
        "labelsTemplate": "{{ range .system.osrelease }}vendor.io/my-release.{{ .Name }}={{ .Value }}\n{{ end }}",
        "matchFeatures": [{"feature": "system.osrelease", "matchExpressions": {
            "ID": {"op": "InRegexp", "value": ["^open.*"]},
            "VERSION_ID.major": {"op": "In", "value": ["13", "15"]}}}],
    })
    out = rule.execute(features)
    # Only elements named in the expressions are template data.
    assert out.labels == {"vendor.io/my-release.ID": "opensuse-leap", "vendor.io/my-release.VERSION_ID.major": "15"}


def test_doc_match_name_template(features: Features) -> None:
    rule = compile_rule({
        "name": "avx", "labelsTemplate": "{{ range .cpu.cpuid }}cpu-{{ .Name }}=true\n{{ end }}",
        "matchFeatures": [{"feature": "cpu.cpuid", "matchName": {"op": "InRegexp", "value": ["^AVX"]}}],
    })
    assert rule.execute(features).labels == {"cpu-AVX": "true", "cpu-AVX10_VERSION": "true", "cpu-AVX2": "true",
                                             "cpu-AVX512F": "true"}


def test_doc_match_any(features: Features) -> None:
    rule = {
        "name": "my multi-device rule", "labels": {"my-multi-device-feature": "true"},
        "matchAny": [
            {"matchFeatures": [
                {"feature": "kernel.loadedmodule", "matchExpressions": {"driver-module-X": {"op": "Exists"}}},
                {"feature": "pci.device", "matchExpressions": {"vendor": {"op": "In", "value": ["8086"]},
                                                               "class": {"op": "In", "value": ["0200"]}}}]},
            {"matchFeatures": [
                {"feature": "kernel.loadedmodule", "matchExpressions": {"kvm": {"op": "Exists"}}}]},
        ],
    }
    assert compile_rule(rule).execute(features).matched
    features.flags["kernel.loadedmodule"].discard("kvm")
    assert not compile_rule(rule).execute(features).matched


def test_match_any_template_runs_for_each_matching_element(features: Features) -> None:
    rule = compile_rule({
        "name": "t", "labelsTemplate": "{{ range .kernel.loadedmodule }}mod-{{ .Name }}=true\n{{ end }}",
        "matchAny": [
            {"matchFeatures": [{"feature": "kernel.loadedmodule", "matchExpressions": {"kvm": {"op": "Exists"}}}]},
            {"matchFeatures": [{"feature": "kernel.loadedmodule", "matchExpressions": {"nope": {"op": "Exists"}}}]},
            {"matchFeatures": [{"feature": "kernel.loadedmodule", "matchExpressions": {"dummy": {"op": "Exists"}}}]},
        ],
    })
    assert rule.execute(features).labels == {"mod-kvm": "true", "mod-dummy": "true"}


def test_several_terms_on_same_feature_are_united(features: Features) -> None:
    raw = {"name": "t", "labelsTemplate": "{{ range .cpu.cpuid }}{{ .Name }}=1\n{{ end }}",
           "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}},
                             {"feature": "cpu.cpuid", "matchExpressions": {"AVX2": {"op": "Exists"}}}]}
    assert compile_rule(raw, "v0.15.0").execute(features).labels == {"AVX": "1", "AVX2": "1"}
    assert compile_rule(raw, "v0.14.0").execute(features).labels == {"AVX2": "1"}  # only the last term counted


def test_static_labels_win_over_template(features: Features) -> None:
    rule = compile_rule({"name": "t", "labels": {"a": "static"}, "labelsTemplate": "a=tmpl\nb=tmpl",
                         "matchFeatures": [{"feature": "cpu.model"}]})
    assert rule.execute(features).labels == {"a": "static", "b": "tmpl"}


def test_rule_without_matchers_always_matches_and_runs_no_template(features: Features) -> None:
    out = compile_rule({"name": "t", "labels": {"x": "1"}, "labelsTemplate": "y=2"}).execute(features)
    assert out.matched and out.labels == {"x": "1"}


def test_missing_feature_fails_even_with_doesnotexist(features: Features) -> None:
    rule = compile_rule({"name": "t", "labels": {"x": "1"},
                         "matchFeatures": [{"feature": "usb.device",
                                            "matchExpressions": {"vendor": {"op": "DoesNotExist"}}}]})
    assert not rule.execute(features).matched


def test_feature_names_are_lowercased_for_lookup(features: Features) -> None:
    raw = {"name": "t", "labels": {"x": "1"},
           "matchFeatures": [{"feature": "System.OsRelease", "matchExpressions": {"ID": {"op": "Exists"}}}]}
    assert compile_rule(raw, "v0.12.0").execute(features).matched
    assert not compile_rule(raw, "v0.11.0").execute(features).matched
    features.attributes["vendor.MyThing"] = {"a": "1"}  # published with capitals: can never match
    raw2 = {"name": "t", "matchFeatures": [{"feature": "vendor.MyThing"}]}
    assert not compile_rule(raw2).execute(features).matched


def test_template_key_keeps_rule_case(features: Features) -> None:
    # DOC≠CODE: docs' `feature: system.osRelease` with `{{ .system.osrelease }}` fails.
    rule = compile_rule({"name": "t", "labelsTemplate": "{{ range .system.osrelease }}{{ .Name }}=1{{ end }}",
                         "matchFeatures": [{"feature": "system.osRelease",
                                            "matchExpressions": {"ID": {"op": "Exists"}}}]})
    with pytest.raises(EvaluationError, match='map has no entry for key "osrelease"'):
        rule.execute(features)


def test_template_errors_fail_the_rule(features: Features) -> None:
    bare = compile_rule({"name": "t", "labelsTemplate": "justakey", "matchFeatures": [{"feature": "cpu.model"}]})
    with pytest.raises(EvaluationError, match="missing value in expanded template line"):
        bare.execute(features)
    unparsable = compile_rule({"name": "t", "labelsTemplate": "{{ range .x }", "matchFeatures": [
        {"feature": "cpu.model"}]})
    with pytest.raises(EvaluationError, match="failed to parse template"):
        unparsable.execute(features)
    flag_value = compile_rule({"name": "t", "labelsTemplate": "{{ range .cpu.cpuid }}{{ .Name }}={{ .Value }}{{end}}",
                               "matchFeatures": [{"feature": "cpu.cpuid",
                                                  "matchExpressions": {"AVX": {"op": "Exists"}}}]})
    with pytest.raises(EvaluationError, match='no entry for key "Value"'):
        flag_value.execute(features)


def test_gt_on_non_number_is_an_error(features: Features) -> None:
    rule = compile_rule({"name": "t", "matchFeatures": [
        {"feature": "kernel.version", "matchExpressions": {"full": {"op": "Gt", "value": ["4"]}}}]})
    with pytest.raises(EvaluationError, match=r'not a number "5\.15\.0-76-generic"'):
        rule.execute(features)


def test_regexp_error(features: Features) -> None:
    rule = compile_rule({"name": "t", "matchFeatures": [
        {"feature": "kernel.config", "matchExpressions": {"X86": {"op": "InRegexp", "value": ["(y"]}}}]})
    with pytest.raises(EvaluationError, match="valid regexps"):
        rule.execute(features)


def test_empty_values_and_missing_keys(features: Features) -> None:
    def run(expr: dict) -> bool:
        return compile_rule({"name": "t", "matchFeatures": [
            {"feature": "kernel.config", "matchExpressions": expr}]}).execute(features).matched

    assert run({"LOCALVERSION": {"op": "In", "value": [""]}})
    assert run({"LOCALVERSION": {"op": "Exists"}})
    assert not run({"NOPE": {"op": "NotIn", "value": ["y"]}})
    assert run({"NOPE": {"op": "DoesNotExist"}})
    assert run({})  # empty set: the feature exists


def test_match_features_and_match_any_both_required(features: Features) -> None:
    rule = {"name": "t", "labels": {"x": "1"},
            "matchAny": [{"matchFeatures": [{"feature": "cpu.model",
                                             "matchExpressions": {"vendor_id": {"op": "In", "value": ["Intel"]}}}]}],
            "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {"major": {"op": "Gt",
                                                                                          "value": ["5"]}}}]}
    assert not compile_rule(rule).execute(features).matched
    rule["matchFeatures"][0]["matchExpressions"]["major"]["value"] = ["4"]
    assert compile_rule(rule).execute(features).matched


def test_unsupported_fields_by_version_are_ignored(features: Features) -> None:
    raw = {"name": "t", "annotations": {"a": "b"}, "taints": [{"key": "x/y", "effect": "NoSchedule"}],
           "extendedResources": {"r": "1"}, "matchFeatures": [
               {"feature": "cpu.cpuid", "matchName": {"op": "In", "value": ["NOPE"]}}]}
    old = compile_rule(raw, "v0.11.0")
    assert len(old.ignored_fields) == 4
    out = old.execute(features)
    assert out.matched and not out.annotations and not out.taints and not out.extended_resources
    new = compile_rule(raw, "v0.19.0")
    assert new.ignored_fields == [] and not new.execute(features).matched


@pytest.mark.parametrize("raw", [
    {"labels": {"a": "b"}},
    {"name": "t", "labels": ["a"]},
    {"name": "t", "matchFeatures": {"feature": "x.y"}},
    {"name": "t", "matchFeatures": [{"matchExpressions": {}}]},
    {"name": "t", "matchFeatures": [{"feature": "a.b", "matchExpressions": ["x"]}]},
    {"name": "t", "matchFeatures": [{"feature": "a.b", "matchExpressions": {"x": {"op": "In", "value": "y"}}}]},
    {"name": "t", "taints": [{"value": "x"}]},
])
def test_bad_shapes_raise_rule_error(raw: dict) -> None:
    with pytest.raises(RuleError):
        compile_rule(raw)
