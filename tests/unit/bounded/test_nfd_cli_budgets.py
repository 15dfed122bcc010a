"""Acceptance: hostile rule/NodeFeature files end fast, small and with a clear error in `console nfd dryrun|validate`.

Each case runs the real CLI in a subprocess under a tiny wrapper that reports the child's peak RSS
(getrusage(RUSAGE_CHILDREN).ru_maxrss, so only that child counts) and its CPU time; CPU time is the
bound asserted (< 2 s) because wall time on a shared, loaded machine is not a property of the code.
Before the budgets: the 762-byte bomb took 50 s and 2.9 GB, depth 10,000 a RecursionError traceback,
a 100 MB file 381 s and 5.9 GB, `repeat 2000000000` minutes (issue 9).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
NF = REPO / "tests" / "fixtures" / "nfd" / "nodefeature-worker-1.yaml"
MAX_RSS_MB = 200
MAX_CPU_S = 2.0

_MEASURE = """
import json, resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "out": p.stdout, "err": p.stderr, "rss_mb": ru.ru_maxrss / 1024,
                  "cpu_s": ru.ru_utime + ru.ru_stime}))
"""

BOMB = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
    "kind: NodeFeatureRule\n"
    "metadata: {name: bomb, annotations: {x: *i}}\n"
    "spec: {rules: [{name: r, labels: {a: b}}]}\n"
)


def measured(*args: str, stdin: int | None = None) -> dict[str, object]:
    p = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "console", "nfd", *args], cwd=REPO,
                       capture_output=True, text=True, timeout=180, env={**os.environ, "PYTHONPATH": str(REPO)},
                       stdin=stdin)
    assert p.returncode == 0, p.stderr
    res: dict[str, object] = json.loads(p.stdout)
    assert "Traceback" not in str(res["err"]), res["err"]
    assert float(res["rss_mb"]) < MAX_RSS_MB, res  # type: ignore[arg-type]
    assert float(res["cpu_s"]) < MAX_CPU_S, res  # type: ignore[arg-type]
    return res


def rule_file(tmp_path: Path, template: str) -> Path:
    p = tmp_path / "rule.yaml"
    p.write_text("apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {name: t}\nspec:\n"
                 "  rules:\n  - name: tmpl\n    labelsTemplate: " + json.dumps(template) + "\n"
                 "    matchFeatures:\n    - feature: cpu.cpuid\n      matchName: {op: InRegexp, value: ['.']}\n")
    return p


def wide_node_feature(tmp_path: Path, n: int = 200) -> Path:
    """A NodeFeature with `n` cpuid flags: the matched elements a nested range multiplies."""
    p = tmp_path / "wide.yaml"
    flags = {f"F{i}": {} for i in range(n)}
    p.write_text(json.dumps({"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
                             "metadata": {"name": "w", "labels": {"nfd.node.kubernetes.io/node-name": "w"}},
                             "spec": {"features": {"flags": {"cpu.cpuid": {"elements": flags}}}}}))
    return p


def test_yaml_bomb_is_refused(tmp_path: Path) -> None:
    """gopkg.in/yaml.v3 decode.go allowedAliasRatio: 'document contains excessive aliasing'."""
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    for cmd in (("dryrun", "-f", str(bomb), "-n", str(NF)), ("validate", "-f", str(bomb))):
        res = measured(*cmd)
        assert res["rc"] == 1
        assert f"{bomb}: document contains excessive aliasing" in str(res["err"])


@pytest.mark.parametrize("style", ["flow", "block"])
def test_depth_10000_is_refused(tmp_path: Path, style: str) -> None:
    deep = tmp_path / "deep.yaml"
    body = "[" * 10000 + "]" * 10000 if style == "flow" else "\n" + "- " * 10000 + "x"
    deep.write_text("kind: NodeFeatureRule\nmetadata: {name: deep}\nspec: {rules: [{name: r}]}\nx: " + body)
    res = measured("validate", "-f", str(deep))
    assert res["rc"] == 1
    assert f"{deep}:" in str(res["err"]) and "nesting deeper than 100 levels" in str(res["err"])


def test_100_mb_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as f:
        f.write(b"kind: NodeFeatureRule\nmetadata: {name: big}\n# ")
        f.truncate(100 * 1024 * 1024)
    res = measured("dryrun", "-f", str(rule_file(tmp_path, "a=b")), "-n", str(big))
    assert res["rc"] == 1
    assert f"{big}: file is 100.0 MiB (104857600 bytes), over the 1.5 MiB limit" in str(res["err"])


def test_100_mb_from_standard_input_is_cut_at_the_cap() -> None:
    """`-f -` reads a pipe, which has no size: one byte past the cap at most. (A FIFO named on the command line is
    refused before it is opened, tests/unit/test_special_files.py: nothing may wait on a writer that never comes.)"""
    read_end, write_end = os.pipe()

    def writer() -> None:
        chunk = b"# " + b"x" * (1024 * 1024 - 3) + b"\n"
        try:
            for _ in range(100):
                os.write(write_end, chunk)
        except BrokenPipeError:
            pass  # the reader stopped at the cap, as it should
        finally:
            os.close(write_end)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        res = measured("validate", "-f", "-", stdin=read_end)
    finally:
        os.close(read_end)
    t.join(30)
    assert not t.is_alive()
    assert res["rc"] == 1
    assert "-: input is over the 1.5 MiB limit" in str(res["err"])


# the step budget (500,000) or, on a loaded machine, the 1 s budget may end an exploding loop first: both are
# the bound this checks (the budgets' own unit tests pin each one)
EXECUTION = "template execution exceeded its budget of "


@pytest.mark.parametrize(("template", "expect"), [
    ("{{range $a := 2000000000}}{{range $b := 2000000000}}x{{end}}{{end}}", EXECUTION),
    ("{{range .cpu.cpuid}}{{range $.cpu.cpuid}}{{range $.cpu.cpuid}}{{range $.cpu.cpuid}}"
     "{{.Name}}=x\n{{end}}{{end}}{{end}}{{end}}", EXECUTION),
    ('a={{repeat 2000000000 "x"}}', "repeat 2000000000 would produce 2000000000 bytes, over the template "
                                    "output budget of 1572864 bytes"),
    ('{{range 100}}a={{printf "%1000000d" 1}}{{end}}', "template output exceeded its budget of 1572864 bytes"),
])
def test_exploding_templates_are_rule_evaluation_errors(tmp_path: Path, template: str, expect: str) -> None:
    """Go text/template has no limit; the budget makes each a "failed to process rule" error, exit 1 (DESIGN.md)."""
    res = measured("dryrun", "-f", str(rule_file(tmp_path, template)), "-n", str(wide_node_feature(tmp_path)),
                   "-o", "json")
    assert res["rc"] == 1, res
    assert "evaluation failed" in str(res["err"]) and expect in str(res["err"]), res["err"]
    assert json.loads(str(res["out"]))["rules"][0]["error"]


def test_printf_width_past_go_limit_is_noverb_as_in_go(tmp_path: Path) -> None:
    """fmt/print.go parsenum: a width past tooLarge (1e6) consumes the format: %!(NOVERB), then %!(EXTRA int=5).

    NFD then gets the label value '%!(NOVERB)%!(EXTRA int=5)', which nfd-master drops as an invalid value.
    """
    res = measured("dryrun", "-f", str(rule_file(tmp_path, 'a={{printf "%999999999d" 5}}')), "-n", str(NF),
                   "-o", "json")
    out = json.loads(str(res["out"]))
    assert out["labels"] == {"a": "%!(NOVERB)%!(EXTRA int=5)"}
    assert [d["key"] for d in out["dropped"]] == ["feature.node.kubernetes.io/a"]
