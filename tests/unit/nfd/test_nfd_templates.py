"""The Go text/template subset NFD rules use."""

from __future__ import annotations

import pytest

from console.nfd.templates import TemplateError, expand_map, parse_template

DATA = {"cpu": {"cpuid": [{"Name": "AVX"}, {"Name": "AVX2"}]},
        "kernel": {"version": [{"Name": "major", "Value": "5"}, {"Name": "minor", "Value": "15"}]},
        "pci": {"device": [{"vendor": "8086", "class": "0200"}, {"vendor": "10de", "class": "0300"}]}}


def run(src: str, sprig: bool = True) -> str:
    return parse_template(src, sprig=sprig).execute(DATA)


@pytest.mark.parametrize(("src", "want"), [
    ("{{ range .cpu.cpuid }}{{ .Name }},{{ end }}", "AVX,AVX2,"),
    ("{{ range $i, $e := .kernel.version }}{{ $i }}:{{ $e.Name }}={{ $e.Value }};{{ end }}", "0:major=5;1:minor=15;"),
    ("{{ range .pci.device }}{{ if eq .vendor \"10de\" }}gpu{{ else }}nic{{ end }} {{ end }}", "nic gpu "),
    ("{{ range .pci.device }}{{ if ne .class \"0300\" }}{{ .vendor }}{{ end }}{{ end }}", "8086"),
    ("a\n  {{- \" b\" -}}  \nc", "a bc"),
    ("{{/* comment */}}x", "x"),
    ("{{ len .cpu.cpuid }}", "2"),
    ("{{ index .pci.device 1 \"vendor\" }}", "10de"),
    ("{{ $x := \"v\" }}{{ $x }}", "v"),
    ("{{ if and (eq 1 1) (not false) }}y{{ end }}", "y"),
    ("{{ if or false \"\" }}y{{ else if true }}z{{ end }}", "z"),
    ("{{ printf \"%s-%d\" \"a\" 3 }}", "a-3"),
    ("{{ \"ABC\" | lower }}", "abc"),
    ("{{ range .nope.x }}{{ end }}", "ERROR"),
    ("{{ with .kernel.version }}{{ len . }}{{ end }}", "2"),
    ("{{ range .cpu.cpuid }}{{ .Name }}{{ else }}empty{{ end }}", "AVXAVX2"),
    ("{{ range $x := (slice) }}{{ else }}empty{{ end }}", "SLICE"),
    ("{{ lt 1 2 }}", "true"),
])
def test_templates(src: str, want: str) -> None:
    if want == "ERROR":
        with pytest.raises(TemplateError, match='map has no entry for key "nope"'):
            run(src)
    elif want == "SLICE":  # slice is defined (Go builtin; Sprig's from v0.18): the call has too few args
        with pytest.raises(TemplateError, match="wrong number of args for slice: want at least 1 got 0"):
            run(src)
    else:
        assert run(src) == want


def test_range_else_on_empty_list() -> None:
    assert parse_template("{{ range .a }}x{{ else }}empty{{ end }}").execute({"a": []}) == "empty"


@pytest.mark.parametrize(("src", "msg"), [
    ("{{ range .x }}", "unexpected EOF"),
    ("{{ end }}", "unexpected {{end}}"),
    ("{{ nosuchfunc 1 }}", 'function "nosuchfunc" not defined'),
    ("{{ .x ", "unclosed action"),
    ("{{ define \"x\" }}{{ end }}", "not supported"),
])
def test_parse_errors(src: str, msg: str) -> None:
    with pytest.raises(TemplateError, match=msg):
        parse_template(src)


def test_sprig_only_from_v018() -> None:
    with pytest.raises(TemplateError, match='function "lower" not defined'):
        parse_template("{{ lower \"A\" }}", sprig=False)
    with pytest.raises(TemplateError, match='function "env" not defined'):
        parse_template("{{ env \"HOME\" }}")


def test_execution_errors() -> None:
    with pytest.raises(TemplateError, match="incompatible types for comparison"):
        run("{{ eq 1 \"1\" }}")
    with pytest.raises(TemplateError, match="can't evaluate field Name"):
        run("{{ .cpu.cpuid.Name }}")
    with pytest.raises(TemplateError, match="undefined variable"):
        run("{{ $nope }}")


def test_expand_map_rules() -> None:
    t = parse_template("  a=1  \n\n b = x=y \n")
    assert expand_map(t, {}) == {"a": "1", "b ": " x=y"}
    with pytest.raises(TemplateError, match="missing value in expanded template line \"bare\""):
        expand_map(parse_template("bare\n"), {})


def test_size_cap() -> None:
    with pytest.raises(TemplateError, match="exceeds maximum allowed size"):
        parse_template("x" * (64 * 1024 + 1))
    assert parse_template("x" * (64 * 1024 + 1), size_capped=False).execute({}) == "x" * (64 * 1024 + 1)
