"""`python -m console nfd dryrun|validate` with regexps NFD (Go, RE2) evaluates in linear time or rejects.

Sources: kubernetes-sigs/node-feature-discovery pkg/apis/nfd/nodefeaturerule/expression.go (InRegexp:
regexp.Compile + MatchString), pkg/utils/flags.go (-label-whitelist is a Go regexp flag; Go's flag
package exits 2 on an invalid value).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
FNS = "feature.node.kubernetes.io"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "console", "nfd", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})


def _rule(path: Path, pattern: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "redos"},
        "spec": {"rules": [{"name": "aaa", "labels": {"aaa": "true"}, "matchFeatures": [
            {"feature": "custom.attrs", "matchExpressions": {"value": {"op": "InRegexp", "value": [pattern]}}}]}]}}))
    return path


def _nodefeature(path: Path, value: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
        "metadata": {"name": "n1", "namespace": "node-feature-discovery",
                     "labels": {"nfd.node.kubernetes.io/node-name": "n1"}},
        "spec": {"features": {"attributes": {"custom.attrs": {"elements": {"value": value}}}}}}))
    return path


def test_dryrun_pathological_regexp_on_10000_chars_is_prompt(tmp_path: Path) -> None:
    rule = _rule(tmp_path / "rule.yaml", "(a+)+$")
    start = time.monotonic()
    p = cli("dryrun", "-f", str(rule), "-n", str(_nodefeature(tmp_path / "nf.yaml", "a" * 10_000 + "!")), "-o", "json")
    elapsed = time.monotonic() - start
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["rules"][0]["matched"] is False and f"{FNS}/aaa" not in out["node_labels"]
    # the same rule matches when the attribute really ends in a's
    p = cli("dryrun", "-f", str(rule), "-n", str(_nodefeature(tmp_path / "nf2.yaml", "!" + "a" * 10_000)), "-o", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["node_labels"][f"{FNS}/aaa"] == "true"
    assert elapsed < 30  # a Python start-up and a few ms of matching; backtracking `re` would not finish


def test_dryrun_python_only_regexp_is_an_invalid_rule(tmp_path: Path) -> None:
    rule = _rule(tmp_path / "rule.yaml", "^(?!aaa)")
    p = cli("dryrun", "-f", str(rule), "-n", str(_nodefeature(tmp_path / "nf.yaml", "x")))
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "error parsing regexp: invalid or unsupported Perl syntax: `(?!`" in p.stderr
    assert "lookahead" in p.stderr


def test_validate_names_the_go_error(tmp_path: Path) -> None:
    p = cli("validate", "-f", str(_rule(tmp_path / "rule.yaml", "(a)\\1")))
    assert p.returncode == 1
    assert "invalid escape sequence: `\\1`" in p.stderr and "backreference" in p.stderr


def test_label_whitelist_invalid_is_a_usage_error(tmp_path: Path) -> None:
    p = cli("dryrun", "-f", str(_rule(tmp_path / "rule.yaml", "a")), "-n", str(_nodefeature(tmp_path / "nf.yaml", "a")),
            "--label-whitelist", "(?<=x)y")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "--label-whitelist" in p.stderr and "error parsing regexp" in p.stderr
