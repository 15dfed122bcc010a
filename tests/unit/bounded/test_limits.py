"""The limits themselves: what real files and rules need passes, what exceeds a limit fails naming it."""

from __future__ import annotations

import threading

import pytest

from console.bounded import InputError, Limits, allowed_alias_ratio, load_yaml, load_yaml_all, read_capped
from console.nfd.budget import MAX_STEPS, Budget, Cancelled, cancellable
from console.nfd.templates import TemplateError, expand_map, parse_template


def test_anchors_and_merge_keys_of_real_files_load() -> None:
    """Moderate aliasing (shared defaults, `<<` merges) is what yaml.v3's ratio rule is built to allow."""
    text = "defaults: &d {op: In, value: [a, b, c]}\nrules:\n" + "".join(
        f"- name: r{i}\n  labels: {{k{i}: v}}\n  match: {{<<: *d, extra: {i}}}\n  again: *d\n" for i in range(300))
    doc = load_yaml(text, "rules.yaml")
    assert doc["rules"][299]["match"] == {"op": "In", "value": ["a", "b", "c"], "extra": 299}


def test_alias_ratio_follows_yaml_v3() -> None:
    """gopkg.in/yaml.v3 decode.go: 99% up to 400,000 decodes, 10% from 4,000,000, linear in between."""
    assert allowed_alias_ratio(1000) == 0.99
    assert allowed_alias_ratio(4_000_000) == 0.10
    assert allowed_alias_ratio(2_200_000) == pytest.approx(0.545)
    # an anchor of 10 scalars used 100 times next to 1,000 written nodes: 1,100 of ~2,100 from aliases, allowed
    ok = "a: &a [" + ",".join(["x"] * 10) + "]\nb: [" + ",".join(["*a"] * 100) + "]\nc: [" + ",".join(
        ["y"] * 1000) + "]\n"
    assert len(load_yaml(ok, "ok.yaml")["b"]) == 100
    # the same anchor used 2,000 times in a document of 15 written nodes: 99.9% from aliases, refused (as yaml.v3)
    with pytest.raises(InputError, match="aliases expand it to 22015 nodes from 15 written"):
        load_yaml("a: &a [" + ",".join(["x"] * 10) + "]\nb: [" + ",".join(["*a"] * 2000) + "]\n", "many.yaml")
    # nested two levels: ~200 written nodes expand past 1,000,000: refused
    bad = "a: &a [" + ",".join(["x"] * 100) + "]\nb: &b [" + ",".join(["*a"] * 100) + "]\nc: [" + ",".join(
        ["*b"] * 100) + "]\n"
    with pytest.raises(InputError, match=r"^bad.yaml: document contains excessive aliasing"):
        load_yaml(bad, "bad.yaml")


def test_depth_limit_is_exact() -> None:
    assert load_yaml("[" * 100 + "]" * 100, "f") is not None
    with pytest.raises(InputError, match=r"^f: line 1: nesting deeper than 100 levels \(limit 100\)$"):
        load_yaml("[" * 101 + "]" * 101, "f")


def test_size_cap_and_documents(tmp_path) -> None:
    p = tmp_path / "x.yaml"
    p.write_bytes(b"a: 1\n" + b"#" * 100)
    assert read_capped(p, Limits(max_bytes=200)) == p.read_bytes()
    with pytest.raises(InputError, match=r"x.yaml: file is 105 bytes \(105 bytes\), over the 100 bytes limit"):
        read_capped(p, Limits(max_bytes=100))
    with pytest.raises(InputError, match="is a directory"):
        read_capped(tmp_path)
    with pytest.raises(InputError, match="expected one YAML document, found 2"):
        load_yaml("a: 1\n---\nb: 2\n", "two")
    assert load_yaml_all("---\n...\n---\na: 1\n", "s") == [None, {"a": 1}]


def test_values_are_json_types_as_kubernetes_reads_them() -> None:
    """sigs.k8s.io/yaml decodes into interface{}: a timestamp stays the text written; a !!set is a map of nulls."""
    doc = load_yaml("name: 2026-01-01\nwhen: 2001-12-14t21:59:43.10-05:00\ns: !!set {a, b}\n", "f")
    assert doc == {"name": "2026-01-01", "when": "2001-12-14t21:59:43.10-05:00", "s": {"a": None, "b": None}}
    with pytest.raises(InputError, match="invalid YAML"):
        load_yaml("!!python/object:os.system x", "f")


def test_real_templates_stay_far_below_the_budget() -> None:
    """A node's kernel.config (~10,000 elements) ranged over with a few commands each: well inside MAX_STEPS."""
    elems = [{"Name": f"CONFIG_{i}", "Value": "y"} for i in range(10_000)]
    tmpl = parse_template('{{range .kernel.config}}{{if eq .Value "y"}}kc.{{.Name | lower}}=true\n{{end}}{{end}}')
    # steps, not time: the 1 s budget is wall time, which a loaded machine stretches (it ran out once in the suite
    # with two busy loops beside four workers)
    budget = Budget(seconds=float("inf"))
    labels = expand_map(tmpl, {"kernel": {"config": elems}}, budget)
    assert len(labels) == 10_000
    assert MAX_STEPS - budget.steps_left < MAX_STEPS // 5


def test_budget_limits_are_template_errors() -> None:
    with pytest.raises(TemplateError, match="exceeded its budget of 100 steps"):
        parse_template("{{range 1000}}x{{end}}").execute({}, Budget(steps=100))
    with pytest.raises(TemplateError, match="template output exceeded its budget of 10 bytes"):
        parse_template("{{range 20}}x{{end}}").execute({}, Budget(output=10))
    with pytest.raises(TemplateError, match="repeat 11 would produce 11 bytes"):
        parse_template('{{repeat 11 "x"}}').execute({}, Budget(output=10))
    with pytest.raises(TemplateError, match=r"exceeded its budget of 0 s"):
        parse_template("{{range 100000}}{{end}}").execute({}, Budget(seconds=0))


def test_regex_replace_is_charged_while_it_builds() -> None:
    """An empty pattern matches at every character (Go's ReplaceAllString): 1,000 matches × a 1,000-byte
    replacement is refused at the output budget, before the whole string is built."""
    tmpl = '{{regexReplaceAll "" (repeat 1000 "a") (repeat 1000 "b")}}'
    with pytest.raises(TemplateError, match="regexReplaceAll"):
        parse_template(tmpl).execute({}, Budget(output=100_000))
    assert parse_template('{{regexReplaceAll "a" "banana" "o"}}').execute({}, Budget(output=100)) == "bonono"


def test_cancellation_stops_a_running_template() -> None:
    ev = threading.Event()
    ev.set()
    with cancellable(ev), pytest.raises(Cancelled):
        parse_template("{{range 2000000000}}{{end}}").execute({})
    # outside the block the same template is only bounded by its budget
    with pytest.raises(TemplateError, match="exceeded its budget"):
        parse_template("{{range 2000000000}}{{end}}").execute({})


def test_feature_files_are_never_read_whole(tmp_path) -> None:
    """v0.14+ skips files past 64 KiB (NFD's limit); before v0.14 NFD has none, the console stops at 1.5 MiB."""
    from console.nfd.featurefile import read_features_dir

    (tmp_path / "big").write_bytes(b"a=1\n")
    with (tmp_path / "big").open("r+b") as f:
        f.truncate(100 * 1024 * 1024)
    (tmp_path / "small").write_text("b=2\n")
    for version, why in (("v0.19.0", "file size limit exceeded"), ("v0.13.0", "would read it whole")):
        res = read_features_dir(tmp_path, version)
        assert res.labels == {"b": "2"}
        assert any(w.startswith("big: ") and why in w for w in res.warnings), res.warnings


def test_shared_structure_cannot_format_into_a_bomb() -> None:
    """`$x = list $x $x` thirty times is 31 lists in memory and 2^30 elements as text: refused before building."""
    doubling = "{{$x := list 1}}{{range 30}}{{$x = list $x $x}}{{end}}"
    for tail in ("{{$x}}", "{{len (print $x)}}", '{{join "," (list $x)}}', "{{printf \"%v\" $x}}"):
        with pytest.raises(TemplateError, match="formatting a value would produce more than the template output "
                                                "budget of 1572864 bytes"):
            parse_template(doubling + tail).execute({})
    y = '{{$y := repeat 1000000 "x"}}'
    with pytest.raises(TemplateError, match="join would produce 2000000 bytes"):
        parse_template(y + '{{join "" (list $y $y)}}').execute({})
    with pytest.raises(TemplateError, match="print would produce 2000000 bytes"):
        parse_template(y + "{{print $y $y}}").execute({})


def test_has_compares_shared_structure_like_reflect_deepequal() -> None:
    """Sprig `has` uses reflect.DeepEqual: its visited map makes shared structure cheap (Python == is exponential)."""
    d = "{{$x := list 1}}{{range 30}}{{$x = list $x $x}}{{end}}{{$y := list 1}}{{range 30}}{{$y = list $y $y}}{{end}}"
    assert parse_template(d + "{{has $x (list $y)}}").execute({}) == "true"
    assert parse_template("{{has 1 (list 2 1)}} {{has 1 (list true)}} {{has (list 1) (list (list 1))}}").execute(
        {}) == "true false true"
