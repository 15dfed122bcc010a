"""CLI contract: `python -m console nfd ...` in a subprocess; acceptance test on the field report's hooks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIX = REPO / "tests" / "fixtures" / "nfd"
FNS = "feature.node.kubernetes.io"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "console", "nfd", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_dryrun_json_contract() -> None:
    p = cli("dryrun", "--rule", str(FIX / "rules" / "doc-examples.yaml"), "--nodefeature",
            str(FIX / "nodefeature-worker-1.yaml"), "-o", "json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert {"labels", "annotations", "vars", "taints", "extendedResources", "node_labels"} <= set(out)
    assert out["labels"] == {"feature.node.kubernetes.io/my-sample-feature": "true", "kernel-feature": "true",
                             "vendor.io/my-release.ID": "opensuse-leap", "vendor.io/my-release.VERSION_ID.major": "15",
                             "high-level-feature": "true"}
    assert out["vars"] == {"nolabel.feature": "true"}
    assert out["annotations"] == {"note": "from rules"}
    assert out["extendedResources"] == {"vendor.io/dynamic": "@kernel.version.major"}
    assert out["taints"] == [{"key": "feature.node.kubernetes.io/special", "value": "true", "effect": "NoSchedule"}]
    assert out["node_labels"] == {
        f"{FNS}/my-sample-feature": "true", f"{FNS}/kernel-feature": "true", f"{FNS}/high-level-feature": "true",
        f"{FNS}/static-label": "yes", "vendor.io/my-release.ID": "opensuse-leap",
        "vendor.io/my-release.VERSION_ID.major": "15"}
    assert out["node_extendedResources"] == {"vendor.io/dynamic": "5"}


def test_dryrun_no_match_is_success_and_text_output_is_readable(tmp_path: Path) -> None:
    rule = tmp_path / "r.yaml"
    rule.write_text("kind: NodeFeatureRule\nmetadata: {name: r}\nspec:\n  rules:\n  - name: never\n"
                    "    labels: {x: '1'}\n    matchFeatures:\n    - feature: usb.device\n")
    p = cli("dryrun", "--rule", str(rule), "--nodefeature", str(FIX / "nodefeature-worker-1.yaml"))
    assert p.returncode == 0, p.stderr
    assert "r/never: no match" in p.stdout and f"{FNS}/static-label=yes" in p.stdout


def test_dryrun_evaluation_failure_exits_1() -> None:
    p = cli("dryrun", "--rule", str(FIX / "rules" / "eval-error.yaml"), "--nodefeature",
            str(FIX / "nodefeature-worker-1.yaml"), "-o", "json")
    assert p.returncode == 1
    assert "gt on a version string" in p.stderr and 'not a number "5.15.0-76-generic"' in p.stderr
    assert json.loads(p.stdout)["node_labels"][f"{FNS}/y"] == "1"  # later rules still ran


def test_dryrun_evaluates_a_template_that_does_not_parse_as_nfd_master_does(tmp_path: Path) -> None:
    """nfd-master accepts the object and fails such a rule only when it runs the template, on a match; a rule
    without matchers never runs it (v0.19.0 pkg/apis/nfd/nodefeaturerule/rule.go Execute; rule_test.go). So the
    dry run gives the static labels of the first, fails the second alone (exit 1), keeps the third's labels;
    `nfd validate` still refuses the file (pkg/kubectl-nfd/validate.go: validate.Template)."""
    rule = tmp_path / "r.yaml"
    rule.write_text("kind: NodeFeatureRule\nmetadata: {name: r}\nspec:\n  rules:\n"
                    "  - {name: static, labels: {a: '1'}, labelsTemplate: '{{'}\n"
                    "  - name: matched\n    labelsTemplate: '{{'\n    matchFeatures:\n"
                    "    - {feature: kernel.version, matchExpressions: {major: {op: Exists}}}\n"
                    "  - {name: later, labels: {b: '2'}}\n")
    p = cli("dryrun", "--rule", str(rule), "--nodefeature", str(FIX / "nodefeature-worker-1.yaml"), "-o", "json")
    assert p.returncode == 1, p.stderr
    out = json.loads(p.stdout)
    assert out["error"] == "evaluation-failed" and "rule 'matched'" in out["message"]
    assert "unclosed action" in out["message"] and "rule 'static'" not in out["message"]
    assert out["node_labels"][f"{FNS}/a"] == "1" and out["node_labels"][f"{FNS}/b"] == "2"
    assert "never executed" in p.stderr  # the note the validation gives
    v = cli("validate", "-f", str(rule), "-o", "json")
    assert v.returncode == 1 and json.loads(v.stdout)["error"] == "invalid-rule"


def test_dryrun_evaluates_expression_errors_the_api_server_accepts(tmp_path: Path) -> None:
    """The NodeFeatureRule CRD's schema checks op (an enum) and the value list's type, not the values: reversed
    GtLt bounds, In without values, a regexp that does not compile and Exists with a value are errors nfd-master
    meets when it evaluates the term (v0.19.0 pkg/apis/nfd/nodefeaturerule/expression.go), so it skips those
    rules, and only where the feature exists. The dry run does the same and names them, in NFD's words."""
    rule = tmp_path / "r.yaml"
    terms = {"gtlt": "{op: GtLt, value: ['9', '1']}", "in": "{op: In}", "regex": "{op: InRegexp, value: ['(']}",
             "exists": "{op: Exists, value: [x]}"}
    body = "".join(f"  - name: {n}\n    labels: {{{n}: '1'}}\n    matchFeatures:\n    - feature: kernel.version\n"
                   f"      matchExpressions: {{major: {e}}}\n" for n, e in terms.items())
    body += ("  - name: absent\n    labels: {absent: '1'}\n    matchFeatures:\n    - feature: nothere.feat\n"
             "      matchExpressions: {major: {op: GtLt, value: ['9', '1']}}\n  - {name: fine, labels: {fine: '1'}}\n")
    rule.write_text("kind: NodeFeatureRule\nmetadata: {name: r}\nspec:\n  rules:\n" + body)
    p = cli("dryrun", "--rule", str(rule), "--nodefeature", str(FIX / "nodefeature-worker-1.yaml"), "-o", "json")
    assert p.returncode == 1, p.stderr
    out = json.loads(p.stdout)
    msg = out["message"]
    assert "value[0] must be less than Value[1]" in msg and "'value' field must be non-empty" in msg
    assert "must only contain valid regexps" in msg and "'value' field must be empty" in msg
    assert "rule 'absent'" not in msg  # a term on a feature the node lacks is not evaluated
    assert {k.rsplit("/", 1)[1] for k in out["node_labels"]} == {"fine", "static-label"}


def test_dryrun_invalid_rule_exits_1() -> None:
    p = cli("dryrun", "--rule", str(FIX / "rules" / "invalid.yaml"), "--nodefeature",
            str(FIX / "nodefeature-worker-1.yaml"))
    assert p.returncode == 1 and p.stdout == ""
    assert "rule 'bad op': matchFeatures[0].matchExpressions.major: op 'IsEmpty' is not one of" in p.stderr


@pytest.mark.parametrize("content", ["{not yaml: [", "- just\n- a list\n", "kind: Pod\nmetadata: {name: p}\n"])
def test_dryrun_bad_files(tmp_path: Path, content: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(content)
    p = cli("dryrun", "--rule", str(f), "--nodefeature", str(FIX / "nodefeature-worker-1.yaml"))
    assert p.returncode == 1 and p.stderr.startswith("error: ") and "Traceback" not in p.stderr


def test_validate() -> None:
    ok = cli("validate", "-f", str(FIX / "rules" / "doc-examples.yaml"))
    assert ok.returncode == 0 and "'my-sample-rule-object' is valid" in ok.stdout
    bad = cli("validate", "-f", str(FIX / "rules" / "invalid.yaml"))
    assert bad.returncode == 1 and "is not valid" in bad.stdout and "IsEmpty" in bad.stderr


@pytest.fixture
def field_report(tmp_path: Path) -> dict[str, str]:
    hooks = tmp_path / "source.d"
    shutil.copytree(FIX / "field-report" / "hooks", hooks)
    for h in hooks.iterdir():
        h.chmod(0o755)
    return {"hooks": str(hooks), "features": str(FIX / "field-report" / "features.d"),
            "proc": str(FIX / "field-report" / "host-proc")}


def local(fr: dict[str, str], *extra: str) -> dict:
    p = cli("local", "--features-dir", fr["features"], "--hooks-dir", fr["hooks"], "--hook-env",
            f"HOST_PROC={fr['proc']}", "-o", "json", *extra)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_acceptance_field_report_v08(field_report: dict[str, str]) -> None:
    out = local(field_report, "--nfd-version", "v0.8.0")
    assert out["labels"] == {
        f"{FNS}/my-script-kernel.pid_max": "4194304",
        f"{FNS}/my-script-kernel.threads-max": "63429",
        f"{FNS}/my-script-vm.swappiness": "60",
        f"{FNS}/my-script-net.ipv4.ip_forward": "1",
        f"{FNS}/kernel.osrelease": "5.15.0-76-generic",
        f"{FNS}/cpuinfo-cpu.vendor_id": "GenuineIntel",
        f"{FNS}/cpuinfo-cpu.family": "6",
        f"{FNS}/cpuinfo-cpu.model": "85",
        f"{FNS}/cpuinfo-cpu.stepping": "7",
        f"{FNS}/cpuinfo-cpu.microcode": "0x5003302",
        f"{FNS}/node-info-rack": "r12",
        f"{FNS}/node-info-zone.power": "redundant",
    }
    assert any("example.dev" in w and "-extra-label-ns=example.dev" in w for w in out["warnings"])
    assert any("# Static feature file" in d["key"] for d in out["dropped"])  # no comments before v0.14
    with_ns = local(field_report, "--nfd-version", "v0.8.0", "--extra-label-ns", "example.dev")
    assert with_ns["labels"]["example.dev/kernel.x"] == "1"


def test_acceptance_field_report_current(field_report: dict[str, str]) -> None:
    out = local(field_report, "--nfd-version", "v0.19.0")
    assert out["labels"] == {f"{FNS}/rack": "r12", f"{FNS}/zone.power": "redundant"}
    assert out["hooks_status"] == "removed"
    assert any("removed in v0.17.0" in w and "my-script" in w and "cpuinfo" in w for w in out["warnings"])
    assert out["features"]["local.label"] == {"rack": "r12", "zone.power": "redundant"}
    assert "local.feature" in out["features"]


def test_acceptance_hooks_without_prefix_v012(field_report: dict[str, str]) -> None:
    out = local(field_report, "--nfd-version", "v0.12.0")
    assert out["labels"][f"{FNS}/kernel.pid_max"] == "4194304"
    assert out["labels"][f"{FNS}/cpu.vendor_id"] == "GenuineIntel"
    assert f"{FNS}/my-script-kernel.pid_max" not in out["labels"]
    dropped = {d["key"]: d for d in out["dropped"]}
    assert dropped["/kernel.osrelease"]["stage"] == "worker"  # a leading "/" is invalid since v0.10
    assert "example.dev/kernel.x" in dropped  # v0.12 still needs -extra-label-ns


def test_acceptance_hooks_disabled_by_default_v016(field_report: dict[str, str]) -> None:
    off = local(field_report, "--nfd-version", "v0.16.0")
    assert off["hooks_status"] == "disabled" and f"{FNS}/kernel.pid_max" not in off["labels"]
    on = local(field_report, "--nfd-version", "v0.16.0", "--hooks-enabled", "true")
    assert on["labels"][f"{FNS}/kernel.pid_max"] == "4194304"
    assert on["labels"]["example.dev/kernel.x"] == "1"  # every namespace allowed since v0.13


def test_local_bad_version() -> None:
    p = cli("local", "--features-dir", "/nonexistent", "--nfd-version", "v9")
    assert p.returncode == 1 and "not an NFD version" in p.stderr


def test_discover_outputs() -> None:
    root = str(FIX / "host")
    labels = cli("discover", "--root", root)
    assert labels.returncode == 0 and f"{FNS}/pci-0300_10de.present=true" in labels.stdout.splitlines()
    js = json.loads(cli("discover", "--root", root, "-o", "json").stdout)
    assert js["labels"][f"{FNS}/system-os_release.VERSION_ID"] == "22.04"
    import yaml

    nf = yaml.safe_load(cli("discover", "--root", root, "-o", "nodefeature", "--node-name", "w1").stdout)
    assert nf["kind"] == "NodeFeature" and nf["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] == "w1"
    assert "AVX512F" in nf["spec"]["features"]["flags"]["cpu.cpuid"]["elements"]
