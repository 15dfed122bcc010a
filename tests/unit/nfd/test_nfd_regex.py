"""console.nfd.regex: Go's regexp (RE2) semantics for every pattern NFD evaluates.

Cases ported from the real systems: golang/go src/regexp/all_test.go (badRe, replaceTests,
replaceLiteralTests, splitTests, metaTests), kubernetes-sigs/node-feature-discovery
pkg/apis/nfd/nodefeaturerule/expression_test.go (MatchInRegexp cases), Masterminds/sprig regex.go.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.nfd import regex as R
from console.nfd.expressions import EvaluationError, MatchExpression, match_names_multi
from console.nfd.labels import LabelPolicy
from console.nfd.templates import TemplateError, parse_template
from console.nfd.validation import validate_rule_object

# golang/go src/regexp/all_test.go badRe
BAD_RE = [
    ("*", "missing argument to repetition operator: `*`"),
    ("+", "missing argument to repetition operator: `+`"),
    ("?", "missing argument to repetition operator: `?`"),
    ("(abc", "missing closing ): `(abc`"),
    ("abc)", "unexpected ): `abc)`"),
    ("x[a-z", "missing closing ]: `[a-z`"),
    ("[z-a]", "invalid character class range: `z-a`"),
    ("abc\\", "trailing backslash at end of expression"),
    ("a**", "invalid nested repetition operator: `**`"),
    ("a*+", "invalid nested repetition operator: `*+`"),
    ("\\x", "invalid escape sequence: `\\x`"),
]


@pytest.mark.parametrize(("pattern", "message"), BAD_RE)
def test_go_bad_compile_messages(pattern: str, message: str) -> None:
    with pytest.raises(R.RegexpError) as exc:
        R.compile_regexp(pattern)
    assert str(exc.value).startswith("error parsing regexp: ")
    assert message in str(exc.value)


@pytest.mark.parametrize(("pattern", "what"), [
    ("(?=foo)bar", "lookahead"), ("foo(?!bar)", "lookahead"), ("(?<=a)b", "lookbehind"), ("(?<!a)b", "lookbehind"),
    ("(a)\\1", "backreference"), ("(?>a+)b", "atomic group"), ("a++", "possessive"), ("a*+b", "possessive"),
    ("(a)?(?(1)b|c)", "conditional"), ("(?P<n>a)(?P=n)", "named backreference"), ("foo\\Z", "\\z in Go"),
    ("(?x) a b ", "verbose"), ("(?#c)a", "comment"),
])
def test_python_only_syntax_rejected_with_a_hint(pattern: str, what: str) -> None:
    with pytest.raises(R.RegexpError) as exc:
        R.compile_regexp(pattern)
    assert str(exc.value).startswith("error parsing regexp: ")
    assert what in exc.value.describe() and "Go's RE2 syntax" in exc.value.describe()


def test_lookbehind_reads_as_go_reads_it() -> None:
    # Go 1.22+ parses `(?<` as a named group: "invalid named capture" (src/regexp/syntax/parse.go)
    with pytest.raises(R.RegexpError, match=r"invalid named capture: `\(\?<=a\)b`"):
        R.compile_regexp("(?<=a)b")


@pytest.mark.parametrize("pattern", [r"a\C", "(?P<é>x)", "(" * 1000 + ")" * 1000])
def test_what_cpp_re2_accepts_and_go_rejects(pattern: str) -> None:
    with pytest.raises(R.RegexpError):
        R.compile_regexp(pattern)


@pytest.mark.parametrize(("pattern", "text", "want"), [
    (r"\Aab\z", "ab", True), (r"(?P<n>a)(?<m>b)", "ab", True), (r"[[:alpha:]]+", "abc", True),
    (r"\pL", "é", True), (r"\p{Greek}", "α", True), (r"\Qa.b\E", "a.b", True), (r"\Qa.b\E", "axb", False),
    ("a$", "a\n", False),  # Python's `$` also matches before a final newline; Go's does not
    (r"\d", "٣", False),  # Go's \d is ASCII; Python's is Unicode
    (r"\w+", "é", False), ("(?i)straße", "STRASSE", False), ("(?m)^b", "a\nb", True),
    ("(?s)a.b", "a\nb", True), ("a.b", "a\nb", False), ("a{,3}", "a{,3}", True),
])
def test_go_semantics(pattern: str, text: str, want: bool) -> None:
    assert R.match_string(pattern, text) is want


def test_pathological_pattern_is_linear() -> None:
    """`(a+)+$` against 10,000 'a's and a '!' (Python's re: exponential) in well under a second."""
    rx = R.compile_regexp("(a+)+$")
    text = "a" * 10_000 + "!"
    start = time.monotonic()
    assert rx.match_string(text) is False
    assert rx.find_string(text) == ""
    assert rx.replace_all_string(text, "$1") == text
    assert time.monotonic() - start < 1.0


def test_huge_program_is_refused_not_compiled_for_seconds() -> None:
    start = time.monotonic()
    with pytest.raises(R.RegexpError, match="expression too large"):
        R.compile_regexp(r"\pL{1000}")
    assert time.monotonic() - start < 2.0


# golang/go src/regexp/all_test.go replaceTests
REPLACE = [
    ("", "", "", ""), ("", "x", "", "x"), ("", "", "abc", "abc"), ("", "x", "abc", "xaxbxcx"),
    ("b", "", "", ""), ("b", "x", "", ""), ("b", "", "abc", "ac"), ("b", "x", "abc", "axc"),
    ("y", "", "", ""), ("y", "x", "", ""), ("y", "", "abc", "abc"), ("y", "x", "abc", "abc"),
    ("[a-c]*", "x", "\u65e5", "x\u65e5x"), ("[^\u65e5]", "x", "abc\u65e5def", "xxx\u65e5xxx"),
    ("^[a-c]*", "x", "abcdabc", "xdabc"), ("[a-c]*$", "x", "abcdabc", "abcdx"), ("^[a-c]*$", "x", "abcdabc", "abcdabc"),
    ("^[a-c]*", "x", "abc", "x"), ("[a-c]*$", "x", "abc", "x"), ("^[a-c]*$", "x", "abc", "x"),
    ("^[a-c]*", "x", "dabce", "xdabce"), ("[a-c]*$", "x", "dabce", "dabcex"), ("^[a-c]*$", "x", "dabce", "dabce"),
    ("^[a-c]*", "x", "", "x"), ("[a-c]*$", "x", "", "x"), ("^[a-c]*$", "x", "", "x"),
    ("^[a-c]+", "x", "abcdabc", "xdabc"), ("[a-c]+$", "x", "abcdabc", "abcdx"), ("^[a-c]+$", "x", "abcdabc", "abcdabc"),
    ("^[a-c]+", "x", "abc", "x"), ("[a-c]+$", "x", "abc", "x"), ("^[a-c]+$", "x", "abc", "x"),
    ("^[a-c]+", "x", "dabce", "dabce"), ("[a-c]+$", "x", "dabce", "dabce"), ("^[a-c]+$", "x", "dabce", "dabce"),
    ("^[a-c]+", "x", "", ""), ("[a-c]+$", "x", "", ""), ("^[a-c]+$", "x", "", ""),
    ("abc", "def", "abcdefg", "defdefg"), ("bc", "BC", "abcbcdcdedef", "aBCBCdcdedef"), ("abc", "", "abcdabc", "d"),
    ("x", "xXx", "xxxXxxx", "xXxxXxxXxXxXxxXxxXx"), ("abc", "d", "", ""), ("abc", "d", "abc", "d"),
    (".+", "x", "abc", "x"), ("[a-c]*", "x", "def", "xdxexfx"), ("[a-c]+", "x", "abcbcdcdedef", "xdxdedef"),
    ("[a-c]*", "x", "abcbcdcdedef", "xdxdxexdxexfx"),
    ("a+", "($0)", "banana", "b(a)n(a)n(a)"), ("a+", "(${0})", "banana", "b(a)n(a)n(a)"),
    ("a+", "(${0})$0", "banana", "b(a)an(a)an(a)a"),
    ("hello, (.+)", "goodbye, ${1}", "hello, world", "goodbye, world"),
    ("hello, (.+)", "goodbye, $1x", "hello, world", "goodbye, "),
    ("hello, (.+)", "goodbye, ${1}x", "hello, world", "goodbye, worldx"),
    ("hello, (.+)", "<$0><$1><$2><$3>", "hello, world", "<hello, world><world><><>"),
    ("hello, (?P<noun>.+)", "goodbye, $noun!", "hello, world", "goodbye, world!"),
    ("hello, (?P<noun>.+)", "goodbye, ${noun}", "hello, world", "goodbye, world"),
    ("(?P<x>hi)|(?P<x>bye)", "$x$x$x", "hi", "hihihi"), ("(?P<x>hi)|(?P<x>bye)", "$x$x$x", "bye", "byebyebye"),
    ("(?P<x>hi)|(?P<x>bye)", "$xyz", "hi", ""), ("(?P<x>hi)|(?P<x>bye)", "${x}yz", "hi", "hiyz"),
    ("(?P<x>hi)|(?P<x>bye)", "hello $$x", "hi", "hello $x"),
    ("a+", "${oops", "aaa", "${oops"), ("a+", "$$", "aaa", "$"), ("a+", "$", "aaa", "$"),
    ("(x)?", "$1", "123", "123"), ("abc", "$1", "123", "123"),
    ("(a)(b){0}(c)", ".$1|$3.", "xacxacx", "x.a|c.x.a|c.x"), ("(a)(((b))){0}c", ".$1.", "xacxacx", "x.a.x.a.x"),
    ("((a(b){0}){3}){5}(h)", "y caramb$2", "say aaaaaaaaaaaaaaaah", "say ay caramba"),
    ("((a(b){0}){3}){5}h", "y caramb$2", "say aaaaaaaaaaaaaaaah", "say ay caramba"),
]


@pytest.mark.parametrize(("pattern", "repl", "text", "want"), REPLACE)
def test_go_replace_all_string(pattern: str, repl: str, text: str, want: str) -> None:
    assert R.compile_regexp(pattern).replace_all_string(text, repl) == want
    if "$" not in repl:
        assert R.compile_regexp(pattern).replace_all_literal_string(text, repl) == want


@pytest.mark.parametrize(("pattern", "repl", "text", "want"), [
    ("a+", "($0)", "banana", "b($0)n($0)n($0)"), ("hello, (.+)", "goodbye, ${1}", "hello, world", "goodbye, ${1}"),
    ("(?P<x>hi)|(?P<x>bye)", "hello $$x", "hi", "hello $$x"), ("a+", "$$", "aaa", "$$"), ("a+", "$", "aaa", "$"),
])
def test_go_replace_all_literal_string(pattern: str, repl: str, text: str, want: str) -> None:
    assert R.compile_regexp(pattern).replace_all_literal_string(text, repl) == want


# golang/go src/regexp/all_test.go splitTests
SPLIT = [
    ("foo:and:bar", ":", -1, ["foo", "and", "bar"]), ("foo:and:bar", ":", 1, ["foo:and:bar"]),
    ("foo:and:bar", ":", 2, ["foo", "and:bar"]), ("foo:and:bar", "foo", -1, ["", ":and:bar"]),
    ("foo:and:bar", "bar", -1, ["foo:and:", ""]), ("foo:and:bar", "baz", -1, ["foo:and:bar"]),
    ("baabaab", "a", -1, ["b", "", "b", "", "b"]), ("baabaab", "a*", -1, ["b", "b", "b"]),
    ("baabaab", "ba*", -1, ["", "", "", ""]), ("foobar", "f*b*", -1, ["", "o", "o", "a", "r"]),
    ("foobar", "f+.*b+", -1, ["", "ar"]), ("foobooboar", "o{2}", -1, ["f", "b", "boar"]),
    ("a,b,c,d,e,f", ",", 3, ["a", "b", "c,d,e,f"]), ("a,b,c,d,e,f", ",", 0, []), (",", ",", -1, ["", ""]),
    (",,,", ",", -1, ["", "", "", ""]), ("", ",", -1, [""]), ("", ".*", -1, [""]), ("", ".+", -1, [""]),
    ("", "", -1, []), ("foobar", "", -1, ["f", "o", "o", "b", "a", "r"]),
    ("abaabaccadaaae", "a*", 5, ["", "b", "b", "c", "cadaaae"]), (":x:y:z:", ":", -1, ["", "x", "y", "z", ""]),
]


@pytest.mark.parametrize(("text", "pattern", "n", "want"), SPLIT)
def test_go_split(text: str, pattern: str, n: int, want: list[str]) -> None:
    assert R.compile_regexp(pattern).split(text, n) == want


def test_go_find_all_skips_empty_match_after_a_match() -> None:
    # golang/go src/regexp/find_test.go: `a*` on "baaab" matches at [0,0], [1,4], [5,5]
    assert R.compile_regexp("a*").find_all_string("baaab", -1) == ["", "aaa", ""]
    assert R.compile_regexp("a").find_all_string("banana", 2) == ["a", "a"]
    assert R.compile_regexp("x").find_all_string("banana", -1) == []


def test_go_quote_meta() -> None:
    assert R.quote_meta("!@#$%^&*()_+-=[{]}\\|,<.>/?~") == "!@#\\$%\\^&\\*\\(\\)_\\+-=\\[\\{\\]\\}\\\\\\|,<\\.>/\\?~"
    assert R.quote_meta("日本語+") == "日本語\\+"


# kubernetes-sigs/node-feature-discovery pkg/apis/nfd/nodefeaturerule/expression_test.go
@pytest.mark.parametrize(("values", "value", "valid", "want"), [
    (("val-[0-9]$",), "val-1", False, False), (("val-[0-9]$",), "val-1", True, True),
    (("val-[0-9]$",), "val-12", True, False), (("val-[0-9]$", "al-[1-9]"), "val-12", True, True),
])
def test_nfd_in_regexp_cases(values: tuple[str, ...], value: str, valid: bool, want: bool) -> None:
    assert MatchExpression("InRegexp", values).test(valid, value) is want


def test_in_regexp_invalid_and_python_only_patterns_fail_the_rule_as_nfd() -> None:
    for pattern in ("(", "(?=a)", "(a)\\1", "a++"):
        with pytest.raises(EvaluationError, match="'value' field must only contain valid regexps"):
            MatchExpression("InRegexp", (pattern,)).test(True, "a")


def test_in_regexp_and_match_name_are_linear_on_10000_chars() -> None:
    e = MatchExpression("InRegexp", ("(a+)+$",))
    name = "a" * 10_000 + "!"
    start = time.monotonic()
    assert e.test(True, name) is False
    assert match_names_multi(e, {name}, {name: "x"}, [{name: "y"}]) == (False, [])
    assert time.monotonic() - start < 1.0


def test_label_whitelist_is_go_regexp() -> None:
    assert LabelPolicy(label_whitelist="^cpu").whitelist_error("feature.node.kubernetes.io/cpu-x") is None
    assert LabelPolicy(label_whitelist="(a+)+$").whitelist_error("feature.node.kubernetes.io/" + "a" * 60 + "!")
    with pytest.raises(ValueError, match=r"invalid label whitelist regexp.*lookahead"):
        LabelPolicy(label_whitelist="^(?!cpu)")


def test_validation_names_the_go_error() -> None:
    rule = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "r"},
            "spec": {"rules": [{"name": "x", "labels": {"a": "b"}, "matchFeatures": [
                {"feature": "kernel.version", "matchExpressions": {"major": {"op": "InRegexp", "value": ["(?<=4)1"]}}},
                {"feature": "cpu.cpuid", "matchName": {"op": "InRegexp", "value": ["AVX\\Z"]}}]}]}}
    issues = [str(i) for i in validate_rule_object(rule, "v0.18.0")]
    assert any("error parsing regexp: invalid named capture" in i and "lookbehind" in i for i in issues), issues
    assert any("matchName" in i and "invalid escape sequence: `\\Z`" in i for i in issues), issues


def _tmpl(src: str) -> str:
    return parse_template(src, sprig=True).execute({})


@pytest.mark.parametrize(("src", "want"), [
    ('{{ regexMatch "^[a-z]+$" "abc" }}', "true"), ('{{ regexMatch "(" "abc" }}', "false"),
    ('{{ mustRegexMatch "b+" "abbc" }}', "true"), ('{{ regexFind "[0-9]+" "ab12cd34" }}', "12"),
    ('{{ regexFindAll "[0-9]" "a1b2c3" -1 }}', "[1 2 3]"), ('{{ regexFindAll "[0-9]" "a1b2c3" 2 }}', "[1 2]"),
    ('{{ regexFindAll "x" "abc" -1 }}', "[]"), ('{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}', "-W-xxW-"),
    ('{{ regexReplaceAllLiteral "a(x*)b" "-ab-axxb-" "${1}" }}', "-${1}-${1}-"),
    ('{{ regexSplit "z+" "pizza" -1 }}', "[pi a]"), ('{{ regexQuoteMeta "1.2" }}', "1\\.2"),
])
def test_sprig_regex_functions(src: str, want: str) -> None:
    assert _tmpl(src) == want


def test_sprig_regex_errors_as_go_reports_them() -> None:
    with pytest.raises(TemplateError, match=r"error calling mustRegexFind: error parsing regexp: missing closing \)"):
        _tmpl('{{ mustRegexFind "(" "a" }}')
    with pytest.raises(TemplateError, match=r"error calling regexFind: regexp: Compile\(`\(`\): error parsing regexp"):
        _tmpl('{{ regexFind "(" "a" }}')
    with pytest.raises(TemplateError, match=r"invalid or unsupported Perl syntax: `\(\?=`"):
        _tmpl('{{ mustRegexMatch "(?=a)" "a" }}')


def test_sprig_regex_on_pathological_input_is_linear() -> None:
    src = '{{ regexReplaceAll "(a+)+$" "' + "a" * 10_000 + '!" "x" | len }}'
    start = time.monotonic()
    assert _tmpl(src) == "10001"
    assert time.monotonic() - start < 1.0


_PATTERN_CHARS = "ab()*+?|[]{}^$\\.:=!<>P-,019CQEzZpL_é"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_PATTERN_CHARS, max_size=24), st.text(alphabet="ab!é\n", max_size=64))
def test_any_pattern_compiles_or_fails_with_a_go_error_and_never_crashes(pattern: str, text: str) -> None:
    try:
        rx = R.compile_regexp(pattern)
    except R.RegexpError as exc:
        assert str(exc).startswith("error parsing regexp: ")
        return
    assert isinstance(rx.match_string(text), bool)
    found = rx.find_all_string(text, -1)
    assert rx.find_string(text) == (found[0] if found else "")
    assert isinstance(rx.replace_all_string(text, "<$1${x}$$>"), str)
    assert "".join(rx.split(text, -1)) == rx.replace_all_literal_string(text, "")


def test_match_results_are_remembered_within_a_bound() -> None:
    """The per-regexp memo of MatchString results stays bounded and never changes an answer."""
    rx = R.compile_regexp("^mod[0-9]+$")
    answers = [rx.match_string(f"mod{i}") for i in range(R._MEMO_SIZE + 100)]
    assert all(answers) and len(rx._memo) <= R._MEMO_SIZE
    long = "mod" + "1" * (R._MEMO_KEY_MAX + 1)
    assert rx.match_string(long) and long not in rx._memo
    assert rx.match_string("mod7") and not rx.match_string("mod7x") and not rx.match_string("mod7x")
