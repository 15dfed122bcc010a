"""Property/fuzz tests (hypothesis) for every parser of user input and the rule engine, with the budgets on.

Properties: each parser raises only its documented error type (never a traceback of another kind),
finishes within hypothesis' deadline (2 s per example; the budgets make this a bound, not luck), and
its output stays bounded. Deterministic for CI: `derandomize=True` (examples derived from the test
itself, no random seed) and no example database; 150-200 examples per property keeps the file fast.
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.bounded import MAX_DEPTH, InputError, depth_of, load_json, load_yaml_all
from console.kube.selector import SelectorError, parse_selector
from console.nfd import versions as V
from console.nfd.budget import MAX_OUTPUT
from console.nfd.featurefile import ParsedLocal, parse_feature_lines
from console.nfd.master import MasterConfig, compute_node_outcome
from console.nfd.model import InvalidObject
from console.nfd.rules import RuleError, compile_rule_objects
from console.nfd.templates import TemplateError, expand_map, parse_template
from console.nfd.validation import Issue, validate_rule_object
from console.tui.filter import parse_filter

FUZZ = settings(max_examples=200, deadline=2000, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
NOW = datetime(2026, 1, 1, tzinfo=UTC)

# ---------------------------------------------------------------- YAML / JSON

_scalars = st.sampled_from(["a", "1", "-1.5e3", "0x1F", "true", "~", "null", "''", '"x\\n"', "2001-12-14", "!!int 3",
                            "!!float .inf", "!!binary aGk=", "!!timestamp 2001-12-14t21:59:43.10-05:00", "!!str 5",
                            "!!python/object:os.system x", "'unterminated", "*nope", "1" * 5000, ".nan", "<<"])


@st.composite
def yaml_docs(draw: st.DrawFn) -> str:
    """YAML from a small grammar: nested flow/block collections, anchors and aliases (also to ancestors), tags."""
    anchors: list[str] = []

    def node(depth: int) -> str:
        kind = draw(st.sampled_from(["scalar", "alias", "seq", "map", "deep"] if depth < 6 else ["scalar", "alias"]))
        if kind == "alias" and anchors:
            return "*" + draw(st.sampled_from(anchors))
        if kind in ("scalar", "alias"):
            return draw(_scalars)
        if kind == "deep":
            n = draw(st.sampled_from([5, 99, 100, 101, 2000]))
            return "[" * n + "]" * n
        anchor = ""
        if draw(st.booleans()):
            anchor = f"&a{len(anchors)} "
            anchors.append(f"a{len(anchors)}")  # an alias inside refers to its ancestor: a recursive document
        kids = [node(depth + 1) for _ in range(draw(st.integers(0, 9)))]
        if kind == "seq":
            return anchor + "[" + ", ".join(kids) + "]"
        return anchor + "{" + ", ".join(f"k{i}: {k}" for i, k in enumerate(kids)) + "}"

    return "\n---\n".join(node(0) for _ in range(draw(st.integers(1, 3))))


def _check_loaded(docs: list[Any]) -> None:
    for d in docs:
        json.dumps(d)  # JSON types only (timestamps, sets and binary come out as Kubernetes would see them)
        assert depth_of(d, MAX_DEPTH) <= MAX_DEPTH


@FUZZ
@given(yaml_docs())
def test_bounded_yaml_grammar(text: str) -> None:
    try:
        docs = load_yaml_all(text, "fuzz.yaml")
    except InputError as exc:
        assert str(exc).startswith("fuzz.yaml: ")
        return
    _check_loaded(docs)


@FUZZ
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300)))
def test_bounded_yaml_random_text(data: str | bytes) -> None:
    with contextlib.suppress(InputError):
        _check_loaded(load_yaml_all(data, "f"))


@FUZZ
@given(st.one_of(st.text(alphabet='[]{}",:0123456789.eE-+ truefalsn\\u', max_size=400), st.binary(max_size=200)))
def test_bounded_json(data: str | bytes) -> None:
    try:
        value = load_json(data, "f.json")
    except InputError:
        return
    assert depth_of(value, MAX_DEPTH) <= MAX_DEPTH


# ---------------------------------------------------------------- rules, NodeFeatures, the engine

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
                     max_leaves=20)
_ops = st.sampled_from(["In", "NotIn", "InRegexp", "Exists", "DoesNotExist", "Gt", "Lt", "GtLt", "IsTrue", "Ge",
                        "GeLe", "Bogus", 5])
_templates = st.sampled_from(["", "a=b", "{{range .cpu.cpuid}}{{.Name}}=true\n{{end}}", "{{", "{{range 2000000000}}"
                              "{{end}}", '{{repeat 2000000000 "x"}}', 'a={{printf "%999999999d" 5}}', "{{.x.y.z}}",
                              "{{range $i, $e := .}}{{range $e}}{{.}}{{end}}{{end}}"])


@st.composite
def expressions(draw: st.DrawFn) -> Any:
    return draw(st.one_of(_json, *[st.fixed_dictionaries(
        {"op": _ops}, optional={"value": st.one_of(_json, st.lists(st.sampled_from(
            ["1", "a", "(a+)+$", "[", "10", "v1.2"]), max_size=3)),
                                "type": st.sampled_from(["version", "x", 5])})] * 3))


@st.composite
def rules(draw: st.DrawFn) -> Any:
    term = st.one_of(_json, *[st.fixed_dictionaries(
        {"feature": st.one_of(st.sampled_from(["cpu.cpuid", "kernel.version", "pci.device", "rule.matched", "x", ""]),
                              st.sampled_from(["cpu.cpuid", "kernel.version"]), _json)},
        optional={"matchExpressions": st.one_of(_json, st.dictionaries(st.sampled_from(["AVX", "major", "vendor"]),
                                                                       expressions(), max_size=3)),
                  "matchName": expressions()})] * 3)
    rule = st.one_of(_json, *[st.fixed_dictionaries(
        {"name": st.one_of(st.text(max_size=5), st.text(max_size=5), _json)},
        optional={"labels": st.one_of(_json, st.dictionaries(st.text(max_size=10), st.one_of(st.text(max_size=10),
                                                                                           _json), max_size=3)),
                  "labelsTemplate": st.one_of(_templates, _json), "varsTemplate": _templates,
                  "vars": _json, "annotations": _json, "taints": _json, "extendedResources": _json,
                  "matchFeatures": st.one_of(_json, st.lists(term, max_size=3)),
                  "matchAny": st.one_of(_json, st.lists(st.fixed_dictionaries({"matchFeatures": st.lists(term,
                                                                                                       max_size=2)}),
                                                        max_size=2))})] * 4)
    well_formed = st.fixed_dictionaries(
        {"kind": st.sampled_from(["NodeFeatureRule", "NodeFeatureRule", "Pod", None]),
         "metadata": st.one_of(st.fixed_dictionaries({"name": st.one_of(st.text(max_size=5), _json)}), _json),
         "spec": st.one_of(_json, *[st.fixed_dictionaries({"rules": st.one_of(_json, st.lists(rule, max_size=3))})]
                           * 4)})
    return draw(st.one_of(_json, well_formed, well_formed, well_formed))


@st.composite
def node_features(draw: st.DrawFn) -> Any:
    elements = st.one_of(_json, st.dictionaries(st.sampled_from(["AVX", "major", "vendor", "x"]),
                                                st.one_of(st.sampled_from(["5", "10de", "true", ""]), _json),
                                                max_size=4))
    return draw(st.one_of(_json, *[st.fixed_dictionaries({
        "kind": st.just("NodeFeature"),
        "metadata": st.one_of(_json, st.just({"name": "n"}), st.just({"name": "n"})),
        "spec": st.one_of(_json, *[st.fixed_dictionaries({"features": st.one_of(_json, *[st.fixed_dictionaries({
            "flags": st.one_of(_json, st.dictionaries(st.sampled_from(["cpu.cpuid", "x"]),
                                                      st.one_of(_json, st.fixed_dictionaries({"elements": elements}))
                                                      , max_size=2)),
            "attributes": st.one_of(_json, st.dictionaries(st.sampled_from(["kernel.version", "cpu.cpuid"]),
                                                           st.fixed_dictionaries({"elements": elements}), max_size=2)),
            "instances": st.one_of(_json, st.just({"pci.device": {"elements": [{"attributes": {"vendor": "10de"}}]}})),
        })] * 3)}, optional={"labels": _json})] * 3)})] * 3))


_values = st.lists(st.sampled_from(["1", "5", "10de", "AVX", "(a+)+$", "[", "^A", "v1.2.3", "x" * 70, ""]), max_size=3)
_plausible_term = st.fixed_dictionaries(
    {"feature": st.sampled_from(["cpu.cpuid", "kernel.version", "pci.device", "rule.matched", "cpu.model"])},
    optional={"matchExpressions": st.dictionaries(st.sampled_from(["AVX", "major", "vendor", "x"]),
                                                  st.fixed_dictionaries({"op": _ops.filter(lambda o: o != 5)},
                                                                        optional={"value": _values}), max_size=2),
              "matchName": st.fixed_dictionaries({"op": st.sampled_from(["In", "InRegexp", "Exists"]),
                                                  "value": _values})})
_plausible_rule = st.fixed_dictionaries(
    {"name": st.text(min_size=1, max_size=5)},
    optional={"labels": st.dictionaries(st.sampled_from(["a", "b.io/c", "@x", "x" * 70, "-bad"]),
                                        st.sampled_from(["true", "@kernel.version.major", "", "x" * 70, "bad value"]),
                                        max_size=3),
              "labelsTemplate": _templates, "varsTemplate": _templates,
              "vars": st.dictionaries(st.sampled_from(["v", "w"]), st.sampled_from(["1", "2"]), max_size=2),
              "annotations": st.dictionaries(st.sampled_from(["a.io/n", "n"]), st.text(max_size=5), max_size=2),
              "extendedResources": st.dictionaries(st.sampled_from(["x.io/r", "r"]),
                                                   st.sampled_from(["1", "@kernel.version.major", "bad"]), max_size=2),
              "taints": st.lists(st.fixed_dictionaries({"key": st.sampled_from(["x.io/t", "t"]),
                                                        "effect": st.sampled_from(["NoSchedule", "Bad", ""])}),
                                 max_size=2),
              "matchFeatures": st.lists(_plausible_term, max_size=2),
              "matchAny": st.lists(st.fixed_dictionaries({"matchFeatures": st.lists(_plausible_term, min_size=1,
                                                                                    max_size=2)}), max_size=2)})
plausible_rules = st.fixed_dictionaries({"kind": st.just("NodeFeatureRule"),
                                         "metadata": st.fixed_dictionaries({"name": st.sampled_from(["a", "b"])}),
                                         "spec": st.fixed_dictionaries({"rules": st.lists(_plausible_rule,
                                                                                          max_size=4)})})
plausible_node_features = st.fixed_dictionaries({
    "kind": st.just("NodeFeature"), "metadata": st.just({"name": "n"}),
    "spec": st.fixed_dictionaries({"features": st.fixed_dictionaries({
        "flags": st.fixed_dictionaries({"cpu.cpuid": st.fixed_dictionaries({"elements": st.dictionaries(
            st.sampled_from(["AVX", "SSE", "x"]), st.just({}), max_size=3)})}),
        "attributes": st.fixed_dictionaries({"kernel.version": st.fixed_dictionaries({"elements": st.dictionaries(
            st.sampled_from(["major", "full"]), st.sampled_from(["5", "6.1", "x", "v1.2.3"]), max_size=2)})}),
        "instances": st.fixed_dictionaries({"pci.device": st.fixed_dictionaries({"elements": st.lists(
            st.fixed_dictionaries({"attributes": st.dictionaries(st.sampled_from(["vendor", "class"]),
                                                                 st.sampled_from(["10de", "0300"]), max_size=2)}),
            max_size=3)})})})}, optional={"labels": st.dictionaries(st.sampled_from(["l", "x.io/l"]),
                                                                   st.sampled_from(["1", "bad value"]), max_size=2)})})


@FUZZ
@given(st.one_of(rules(), plausible_rules), st.sampled_from(["v0.9.0", "v0.13.0", "v0.16.0", "v0.19.0"]))
def test_validation_never_crashes(obj: Any, version: str) -> None:
    issues = validate_rule_object(obj, version)
    assert all(isinstance(i, Issue) and i.severity in ("error", "warning") for i in issues)


@FUZZ
@given(st.lists(st.one_of(rules(), plausible_rules, plausible_rules), max_size=2),
       st.lists(st.one_of(node_features(), plausible_node_features, plausible_node_features), min_size=1, max_size=2))
def test_engine_raises_only_rule_and_object_errors(objs: list[Any], nfs: list[Any]) -> None:
    try:
        compiled = compile_rule_objects(objs, V.CURRENT)
        outcome = compute_node_outcome(nfs, compiled, config=MasterConfig(enable_taints=True))
    except (RuleError, InvalidObject):
        return
    json.dumps(outcome.as_dict())
    assert all(isinstance(r.error, str) for r in outcome.rule_results)
    assert sum(len(v) for v in outcome.raw.labels.values()) <= 2 * MAX_OUTPUT


# ---------------------------------------------------------------- templates

_pieces = st.sampled_from([
    "{{", "}}", "{{-", "-}}", " ", "\n", "=", "a", "range", "if", "else", "end", "with", "$x", ":=", "=", ",", "$",
    ".", ".Name", ".cpu.cpuid", "|", "(", ")", '"s"', "`r`", "'c'", "5", "-3", "2000000000", "1e999", "0x10",
    "printf", '"%d"', '"%999999999d"', '"%1000000s"', "repeat", "replace", '""', "print", "len", "index", "eq",
    "lt", "and", "or", "not", "default", "mul", "add", "list", "dict", "join", "split", "toString", "quote",
    "trunc", "nil", "true", "/*", "*/", "break", "define",
])


_action = st.lists(_pieces, min_size=1, max_size=7).map(lambda p: "{{" + " ".join(p) + "}}")
_template_text = st.lists(st.one_of(_pieces, _action, _action, st.sampled_from(
    ["{{range .cpu.cpuid}}", "{{range $i, $e := .cpu.cpuid}}", "{{if .x}}", "{{with .x}}", "{{end}}", "{{else}}",
     "{{$x := 5}}", "{{.Name}}", "=", "\n"])), max_size=16).map("".join)


@FUZZ
@given(_template_text, st.booleans())
def test_templates_raise_only_template_errors(src: str, sprig: bool) -> None:
    data = {"cpu": {"cpuid": [{"Name": "AVX"}, {"Name": "SSE"}]}, "x": {"Value": "1"}}
    try:
        tmpl = parse_template(src, sprig=sprig)
        out = tmpl.execute(data)
    except TemplateError:
        return
    assert len(out) <= MAX_OUTPUT
    with contextlib.suppress(TemplateError):
        assert all(isinstance(v, str) for v in expand_map(tmpl, data).values())


# ---------------------------------------------------------------- feature files, hook output, selectors

_lines = st.sampled_from(["a=b", "key", "=v", "# +expiry-time=2020-01-01T00:00:00Z",
                          "# +expiry-time=2099-01-01T00:00:00Z", "# +expiry-time=garbage", "# +no-label",
                          "# +no-feature", "# +bogus", "#c", "/p/q=1", "  x = y ", "\x00", "\ufffd", "a" * 300 + "=1",
                          "", "\r"])


@FUZZ
@given(st.one_of(st.lists(_lines, max_size=30).map("\n".join), st.binary(max_size=400), st.text(max_size=200)),
       st.sampled_from(["v0.6.0", "v0.10.0", "v0.14.0", "v0.16.0", "v0.19.0"]))
def test_feature_file_and_hook_output_parser(data: str | bytes, version: str) -> None:
    """featurefile.parse_feature_lines parses feature files and hooks' stdout (console/nfd/hooks.py) alike."""
    parsed = parse_feature_lines(data, "fuzz", version, NOW)
    assert isinstance(parsed, ParsedLocal)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in {**parsed.labels, **parsed.features}.items())
    assert len(parsed.labels) <= len(data) + 1


_sel = st.sampled_from(["a", "b.io/c", "=", "==", "!=", "!", " in ", " notin ", "(", ")", ",", "x", " ", "-", "1",
                        "-l", "--selector", "worker"])


@FUZZ
@given(st.one_of(st.lists(_sel, max_size=20).map("".join), st.text(max_size=60)))
def test_selector_and_filter_parsers(text: str) -> None:
    labels = {"a": "1", "b.io/c": "x"}
    try:
        sel = parse_selector(text)
        assert isinstance(sel.matches(labels), bool)
    except SelectorError:
        pass
    try:
        f = parse_filter(text)
        assert isinstance(f.matches("worker", labels), bool)
    except SelectorError:
        pass
