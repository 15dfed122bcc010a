"""NFD's own rule-engine and template unit tests, ported to the console's engine.

Each test names its source: github:kubernetes-sigs/node-feature-discovery at the tag given, file
pkg/apis/nfd/nodefeaturerule/rule_test.go (TestRule, TestTemplating) and pkg/apis/nfd/template/template.go
(NewHelper: `template.New("").Funcs(funcMap()).Option("missingkey=error")`; v0.18 sprig.FuncMap(), v0.19
sprig.TxtFuncMap() without env/expandenv/getHostByName and a 64 KiB cap), plus the Go text/template
behaviours NFD relies on (github:golang/go src/text/template/exec_test.go, funcs.go).
"""

from __future__ import annotations

from typing import Any

import pytest
from nfdvectors import R1, R1_TERMS, R2_TERMS, ex

from console.nfd.expressions import EvaluationError
from console.nfd.model import Features
from console.nfd.rules import compile_rule
from console.nfd.templates import TemplateError, parse_template

V19 = "v0.19.0"


def execute(rule: dict[str, Any], f: Features, version: str = V19):
    return compile_rule({"name": "r", **rule}, version).execute(f)


def templating_features() -> Features:
    """The `f` of TestTemplating (v0.19.0 rule_test.go)."""
    f = Features()
    f.flags["domain_1.kf_1"] = {"key-a", "key-b", "key-c"}
    f.flags["domain.mf"] = {"key-a", "key-b", "key-c"}
    f.attributes["domain_1.vf_1"] = {"key-1": "val-1", "keu-2": "val-2", "key-3": "val-3", "key-4": "val-4"}
    f.attributes["domain.mf"] = {"key-d": "val-d", "key-e": "val-e"}
    f.instances["domain_1.if_1"] = [{"attr-1": "1", "attr-2": "val-2"}, {"attr-1": "10", "attr-2": "val-20"},
                                    {"attr-1": "100", "attr-2": "val-200"},
                                    {"attr-1": "1000", "attr-2": "val-2000", "attr-3": "3000"}]
    return f


EXPECTED_LABELS = {"label-1": "label-val-1", "label-2": "", "kf-key-a": "present", "kf-key-c": "present",
                   "kf-foo": "present", "vf-key-1": "vf-val-1", "vf-bar": "vf-", "if-1_val-2": "present",
                   "if-10_val-20": "present", "if-1000_val-2000": "present"}
EXPECTED_VARS = {"var-1": "var-val-1", "var-2": "", "kf-key-a": "true", "kf-key-c": "true", "kf-foo": "true"}


@pytest.mark.parametrize("version", ["v0.15.0", "v0.16.0", "v0.18.0", V19])
def test_templating_labels_and_vars(version: str) -> None:
    """v0.19.0 rule_test.go TestTemplating, r1: static labels/vars win over the templates, DoesNotExist terms
    give elements with an empty Value, two terms on one instance feature are united (v0.15+)."""
    m = execute(R1, templating_features(), version)
    assert m.matched and m.labels == EXPECTED_LABELS and m.vars == EXPECTED_VARS


def test_templating_match_any() -> None:
    """v0.19.0 rule_test.go TestTemplating, r3: the same terms under matchAny give the same output."""
    r3 = {k: v for k, v in R1.items() if k != "matchFeatures"} | {"matchAny": [{"matchFeatures": R1_TERMS}]}
    m = execute(r3, templating_features())
    assert m.labels == EXPECTED_LABELS and m.vars == EXPECTED_VARS


def test_templating_multi_type_feature() -> None:
    """v0.19.0 rule_test.go TestTemplating "multi-type" feature: flags and attributes of one name are both
    matched and both ranged over."""
    r = {"labelsTemplate": "\n{{range .domain.mf}}mf-{{.Name}}=found\n{{end}}",
         "matchFeatures": [{"feature": "domain.mf", "matchExpressions": {"key-a": ex("Exists"),
                                                                          "key-d": ex("In", "val-d")}}]}
    m = execute(r, templating_features())
    assert m.labels == {"mf-key-a": "found", "mf-key-d": "found"} and m.vars == {}



@pytest.mark.parametrize(("field", "src", "want"), [
    ("labelsTemplate", "foo=bar", {"foo": "bar"}),
    ("labelsTemplate", "foo", None),
    ("labelsTemplate", "{{", None),
    ("varsTemplate", "bar=baz", {"bar": "baz"}),
    ("varsTemplate", "bar", None),
    ("varsTemplate", "{{", None),
])
def test_templating_error_cases(field: str, src: str, want: dict[str, str] | None) -> None:
    """v0.19.0 rule_test.go TestTemplating "Test error cases": a line without '=' and a template that does
    not parse fail the rule (Execute returns an error)."""
    r = {"matchFeatures": R2_TERMS, field: src}
    if want is None:
        with pytest.raises(EvaluationError):
            execute(r, templating_features())
    else:
        m = execute(r, templating_features())
        assert (m.labels if field == "labelsTemplate" else m.vars) == want
        assert not (m.vars if field == "labelsTemplate" else m.labels)


def test_templating_match_name() -> None:
    """v0.19.0 rule_test.go TestTemplating matchName: the names matchName selects plus the expression's
    DoesNotExist element (with an empty Value); a matchName that selects nothing does not match."""
    r4 = {"labelsTemplate": "{{range .domain_1.vf_1}}{{.Name}}={{.Value}}\n{{end}}",
          "matchFeatures": [{"feature": "domain_1.vf_1", "matchExpressions": {"key-5": ex("DoesNotExist")},
                             "matchName": ex("In", "key-1", "key-4")}]}
    m = execute(r4, templating_features())
    assert m.labels == {"key-1": "val-1", "key-4": "val-4", "key-5": ""}
    r4 = {"labels": {"should-not-match": "true"},
          "matchFeatures": [{"feature": "domain_1.vf_1", "matchName": ex("In", "key-not-exists")}]}
    m = execute(r4, templating_features())
    assert not m.matched and not m.labels


def test_rule_empty_and_missing_features() -> None:
    """v0.19.0 rule_test.go TestRule: a rule without matchers matches empty features; a term on a missing
    feature does not match and is not an error; an empty matchExpressions set matches any present feature."""
    r1 = {"labels": {"label-1": "", "label-2": "true"}}
    r2 = {"labels": {"label-1": "label-val-1"}, "vars": {"var-1": "var-val-1"},
          "matchFeatures": [{"feature": "domain-1.kf-1", "matchExpressions": {"key-1": ex("Exists")}}]}
    f = Features()
    assert execute(r1, f).labels == r1["labels"]
    assert not execute(r2, f).matched
    f.flags["domain-1.kf-1"] = set()
    f.attributes["domain-1.vf-1"] = {}
    f.instances["domain-1.if-1"] = []
    assert not execute(r2, f).matched
    f.flags["domain-1.kf-1"].add("key-x")
    empty = {**r1, "matchFeatures": [{"feature": "domain-1.kf-1", "matchExpressions": {}}]}
    assert execute(empty, f).labels == r1["labels"]
    f.flags["domain-1.kf-1"].add("key-1")
    m = execute(r2, f)
    assert m.labels == r2["labels"] and m.vars == r2["vars"]


def test_rule_multi_type_features() -> None:
    """v0.19.0 rule_test.go TestRule "multi-type" features: a term matches the flags, attributes or instances
    of the same name; flags and attributes together in one term."""
    f2 = Features()
    f2.flags["dom.feat"] = {"k-1", "k-2"}
    f2.attributes["dom.feat"] = {"a-1": "v-1", "a-2": "v-2"}
    f2.instances["dom.feat"] = [{"ia-1": "iv-1"}, {"ia-2": "iv-2"}]
    for exprs in ({"k-1": ex("Exists")}, {"a-1": ex("In", "v-1")}, {"ia-1": ex("In", "iv-1")},
                  {"k-2": ex("Exists"), "a-2": ex("In", "v-2")}, {"ia-2": ex("In", "iv-2")}):
        r3 = {"labels": {"feat": "val-1"}, "matchFeatures": [{"feature": "dom.feat", "matchExpressions": exprs}]}
        assert execute(r3, f2).labels == {"feat": "val-1"}, exprs


def test_rule_multiple_matchers_and_match_any() -> None:
    """v0.19.0 rule_test.go TestRule "multiple feature matchers" and "MatchAny": all terms must match;
    matchAny needs one element to match, and matchFeatures too."""
    f = Features(flags={"domain-1.kf-1": {"key-1"}}, attributes={"domain-1.vf-1": {"key-1": "val-1"}},
                 instances={"domain-1.if-1": [{"attr-1": "val-1"}]})
    terms = [{"feature": "domain-1.vf-1", "matchExpressions": {"key-1": ex("In", "val-x")}},
             {"feature": "domain-1.if-1", "matchExpressions": {"attr-1": ex("In", "val-1")}}]
    r3: dict[str, Any] = {"labels": {"label-5": "label-val-5"}, "matchFeatures": terms}
    assert not execute(r3, f).matched
    terms[0]["matchExpressions"]["key-1"] = ex("In", "val-1")
    assert execute(r3, f).labels == {"label-5": "label-val-5"}
    na = {"matchFeatures": [{"feature": "domain-1.kf-1", "matchExpressions": {"key-na": ex("Exists")}}]}
    r3["matchAny"] = [na]
    assert not execute(r3, f).matched
    r3["matchAny"].append({"matchFeatures": [{"feature": "domain-1.kf-1",
                                              "matchExpressions": {"key-1": ex("Exists")}}]})
    assert execute(r3, f).labels == {"label-5": "label-val-5"}


# -- Go text/template as NFD configures it -------------------------------------------------------------------


def test_missingkey_error_on_maps() -> None:
    """NFD sets Option("missingkey=error") and passes maps: a missing map key is an execution error
    (exec_test.go TestMissingMapKey: `map has no entry for key "x"`), not the default `<no value>`; `index`
    is not affected and gives the element type's zero value ("" for NFD's map[string]string elements)."""
    terms = [{"feature": "domain_1.if_1", "matchExpressions": {"attr-1": ex("Lt", "100")}}]
    idx = 'x={{range .domain_1.if_1}}{{index . "attr-3"}}.{{end}}\ny={{index . "nope"}}\nz={{index .domain_1 "no"}}'
    m = execute({"labelsTemplate": idx, "matchFeatures": terms}, templating_features())
    assert m.labels == {"x": "..", "y": "map[]", "z": "[]"}
    with pytest.raises(EvaluationError, match='map has no entry for key "nope"'):
        execute({"labelsTemplate": "x={{ .nope }}", "matchFeatures": terms}, templating_features())
    flags = [{"feature": "domain_1.kf_1", "matchExpressions": {"key-a": ex("Exists")}}]
    with pytest.raises(EvaluationError, match='map has no entry for key "Value"'):  # a flag element has no Value
        execute({"labelsTemplate": "{{range .domain_1.kf_1}}{{.Value}}=1{{end}}", "matchFeatures": flags},
                templating_features())
    # map[string]interface{} (Sprig's dict): a missing key is <no value>, as without NFD's data types
    assert parse_template('{{ index (dict "a" "1") "b" }}').execute({}) == "<no value>"


def test_whitespace_trimming() -> None:
    """text/template doc ("Text and spaces"): `{{- ` trims all preceding white space, ` -}}` the following."""
    src = "{{range .f}}\n  {{- .Name}}=1\n{{end}}"
    assert parse_template(src).execute({"f": [{"Name": "a"}, {"Name": "b"}]}) == "a=1\nb=1\n"


@pytest.mark.parametrize("name", ["slice", "html", "js", "urlquery", "call"])
def test_go_builtins_are_defined(name: str) -> None:
    """text/template funcs.go builtins(): and call html index slice js len not or print printf println
    urlquery eq ge gt le lt ne — all are defined at parse time, with or without Sprig."""
    parse_template("{{ " + name + " .x }}", sprig=False)


def test_go_builtins_slice_html_js_urlquery() -> None:
    """funcs.go: slice (strings and lists, Go's bounds), html/js/urlquery escaping (HTMLEscapeString,
    JSEscapeString, QueryEscape)."""
    d = {"s": "abcdef", "l": ["a", "b", "c"]}
    assert parse_template("{{ slice .s 1 3 }}", sprig=False).execute(d) == "bc"
    assert parse_template("{{ slice .l 1 }}", sprig=False).execute(d) == "[b c]"
    assert parse_template("{{ html \"<a href='x'>&\" }}").execute(d) == "&lt;a href=&#39;x&#39;&gt;&amp;"
    assert parse_template('{{ js "it\'s <b>" }}').execute(d) == "it\\'s \\u003Cb\\u003E"
    assert parse_template('{{ urlquery "a b&c" }}').execute(d) == "a+b%26c"
    with pytest.raises(TemplateError, match="error calling slice: index out of range: 9"):
        parse_template("{{ slice .s 4 9 }}", sprig=False).execute(d)


def test_sprig_slice_replaces_the_builtin() -> None:
    """text/template exec.go findFunction: the template's Funcs come before builtins, so from v0.18 `slice` is
    Sprig's (list.go: lists only; an empty list gives nil)."""
    d = {"s": "abcdef", "l": ["a", "b", "c"], "e": []}
    assert parse_template("{{ slice .l 1 2 }}").execute(d) == "[b]"
    assert parse_template("{{ slice .e }}").execute(d) == "<no value>"
    with pytest.raises(TemplateError, match="list should be type of slice or array but string"):
        parse_template("{{ slice .s 1 }}").execute(d)


def test_sprig_per_version() -> None:
    """template.go: v0.17 has no Sprig; v0.18 registers sprig.FuncMap() (env included); v0.19 deletes env,
    expandenv and getHostByName (commit 0c99ca0fb): there they are undefined functions."""
    f, mf = templating_features(), {"matchFeatures": R2_TERMS}  # templates run only on matched features
    with pytest.raises(EvaluationError, match='function "lower" not defined'):
        execute({"labelsTemplate": '{{ lower "A" }}=1', **mf}, f, "v0.17.0")
    assert execute({"labelsTemplate": '{{ lower "A" }}=1', **mf}, f, "v0.18.0").labels == {"a": "1"}
    with pytest.raises(EvaluationError, match='function "env" not defined'):
        execute({"labelsTemplate": '{{ env "HOME" }}=1', **mf}, f, V19)
    with pytest.raises(EvaluationError, match="nfd-master's environment"):
        execute({"labelsTemplate": 'x={{ env "HOME" }}', **mf}, f, "v0.18.0")
    with pytest.raises(EvaluationError, match="not implemented by the console"):
        execute({"labelsTemplate": 'x={{ semverCompare ">=1" "1.2" }}', **mf}, f, V19)


def test_templates_never_run_without_matchers() -> None:
    """v0.19.0 rule.go Execute: templates run only for matchAny/matchFeatures that matched; a rule without
    matchers yields its static labels, even with a template that would not parse."""
    m = execute({"labels": {"a": "1"}, "labelsTemplate": "{{"}, templating_features())
    assert m.matched and m.labels == {"a": "1"}


def test_customization_guide_sprig_example() -> None:
    """docs/usage/customization-guide.md (v0.18.0, v0.19.0) "Templating": len, first, trim and substr."""
    f = Features(instances={"pci.device": [{"vendor": "8086", "class": "0200"}, {"vendor": "8086", "class": "0200"},
                                           {"vendor": "10de", "class": "0300"}]})
    tmpl = ("num-intel-network-controllers={{ .pci.device | len }}\n"
            "first-intel-network-controllers={{ (.pci.device | first).class | trim | substr 0 63 }}\n")
    rule = {"labelsTemplate": tmpl,
            "matchFeatures": [{"feature": "pci.device", "matchExpressions": {
                "vendor": ex("In", "8086"), "class": ex("In", "0200")}}]}
    for version in ("v0.18.0", V19):
        assert execute(rule, f, version).labels == {"num-intel-network-controllers": "2",
                                                    "first-intel-network-controllers": "0200"}


@pytest.mark.parametrize(("src", "want"), [
    ('{{ substr 1 3 "abcdef" }}', "bc"), ('{{ substr -1 2 "abcdef" }}', "ab"), ('{{ substr 2 99 "abcdef" }}', "cdef"),
    ('{{ nospace " a b\tc " }}', "abc"), ('{{ cat "a" 1 "b" }}', "a 1 b"), (r'{{ indent 2 "a\nb" }}', "  a\n  b"),
    ('{{ sha256sum "a" }}', "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"),
    ('{{ adler32sum "a" }}', "6422626"), ('{{ b64enc "hi" }}', "aGk="), ('{{ b64dec "aGk=" }}', "hi"),
    ('{{ list 1 2 3 | rest }}', "[2 3]"), ('{{ list 1 2 3 | initial }}', "[1 2]"),
    ('{{ list 1 2 | reverse }}', "[2 1]"),
    ('{{ concat (list 1) (list 2 3) }}', "[1 2 3]"), ('{{ list 0 1 "" "a" | compact }}', "[1 a]"),
    ('{{ without (list 1 2 1) 1 }}', "[2]"), ('{{ until 3 }}', "[0 1 2]"), ('{{ untilStep 5 0 -2 }}', "[5 3 1]"),
    ('{{ plural "one" "many" 2 }}', "many"), ('{{ untitle "Hello" }}', "hello"),
])
def test_more_sprig(src: str, want: str) -> None:
    """github:Masterminds/sprig v3.3.0 strings.go, crypto.go, list.go, numeric.go (and its *_test.go cases)."""
    assert parse_template(src).execute({}) == want


def test_sprig_typed_arguments() -> None:
    """Sprig's Go signatures are typed: substr(int, int, string) given a string index is an error."""
    with pytest.raises(TemplateError, match="wrong type for value; expected int"):
        parse_template('{{ substr "1" 2 "abc" }}').execute({})
    with pytest.raises(TemplateError, match="error calling fail: boom"):
        parse_template('{{ fail "boom" }}').execute({})


@pytest.mark.parametrize(("src", "want"), [
    ('{{ atoi "12abc" }}', "0"), ('{{ atoi " 5" }}', "0"), ('{{ atoi "-12" }}', "-12"), ('{{ atoi "1e3" }}', "0"),
    ('{{ int "0x10" }}', "16"), ('{{ int "010" }}', "8"), ('{{ int "1_000" }}', "1000"), ('{{ int "5.00" }}', "5"),
    ('{{ int "5.5" }}', "0"), ('{{ int 7.9 }}', "7"),
    ('{{ title "hELLO wORLD_x y-z" }}', "HELLO WORLD_x Y-Z"),
    (r'{{ quote `a\b` "c\nd" }}', r'"a\\b" "c\nd"'),
])
def test_sprig_conversions_as_go(src: str, want: str) -> None:
    """Sprig v3.3.0 functions.go: atoi = strconv.Atoi with the error dropped, int = cast.ToInt
    (strconv.ParseInt(trimZeroDecimal(s), 0, 0)), title = strings.Title (no lower-casing), quote = %q per
    argument (github:golang/go src/strconv/atoi_test.go, quote_test.go; strings_test.go TestTitle)."""
    assert parse_template(src).execute({}) == want


def test_quoted_string_cannot_span_lines() -> None:
    """text/template/parse/lex.go lexQuote: a newline inside "..." is "unterminated quoted string"; a raw
    `...` string may hold one (lex_test.go "unclosed quote")."""
    with pytest.raises(TemplateError, match="unterminated quoted string"):
        parse_template('{{ "a\nb" }}')
    assert parse_template("{{ `a\nb` }}").execute({}) == "a\nb"
