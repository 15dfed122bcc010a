"""kubectl apply of a NodeFeatureRule with `(a+)+$` against a 10,000-character attribute: the default lab's
upstream nfd-master v0.19.0 evaluates it with Go's regexp (RE2 semantics, linear time), so the rule's outcome is on
the node with the other rule's of the same object, and the API server answers meanwhile.

NFD: pkg/apis/nfd/nodefeaturerule/expression.go (InRegexp is regexp.Compile + MatchString).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from typing import Any

import pytest
from labtools import lab_env, wait_for

from console.lab.world import Lab

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")

NS = "node-feature-discovery"
FNS = "feature.node.kubernetes.io"


def kubectl(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=60, input=stdin)
    assert p.returncode == 0, f"kubectl {' '.join(args)}: {p.stderr}"
    return p


def test_pathological_rule_applied_with_kubectl_is_evaluated_in_linear_time(default_lab: Lab) -> None:
    env, node = lab_env(default_lab), default_lab.scenario.nodes[-1].name
    nf = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
          "metadata": {"name": f"{node}-custom", "namespace": NS, "labels": {"nfd.node.kubernetes.io/node-name": node}},
          "spec": {"features": {"attributes": {"custom.attrs": {"elements": {"value": "a" * 10_000 + "!"}}}}}}

    def in_regexp(name: str, pattern: str) -> dict[str, Any]:
        return {"name": name, "labels": {name: "true"}, "matchFeatures": [
            {"feature": "custom.attrs", "matchExpressions": {"value": {"op": "InRegexp", "value": [pattern]}}}]}

    rule = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "redos"},
            "spec": {"rules": [in_regexp("redos", "(a+)+$"), in_regexp("bang", "^a+!$")]}}
    kubectl(env, "apply", "-f", "-", stdin=json.dumps(nf))
    kubectl(env, "apply", "-f", "-", stdin=json.dumps(rule))
    try:
        start = time.monotonic()
        got = json.loads(kubectl(env, "get", "node", node, "-o", "json").stdout)  # answered right after the apply
        assert got["metadata"]["name"] == node
        assert time.monotonic() - start < 30  # one kubectl start-up; a blocked API server would time kubectl out

        def labels() -> dict[str, str]:
            return dict(json.loads(kubectl(env, "get", "node", node, "-o", "json").stdout)["metadata"]["labels"])

        # the master writes one object's rules for a node in one update: `bang` there means `redos` was decided
        wait_for(lambda: labels().get(f"{FNS}/bang") == "true", 30, what="the rule object evaluated")
        assert f"{FNS}/redos" not in labels()  # `(a+)+$` does not match "aaa…a!": Go semantics, in linear time
    finally:
        kubectl(env, "delete", "nodefeaturerule", "redos", "--ignore-not-found")
        kubectl(env, "-n", NS, "delete", "nodefeature", f"{node}-custom", "--ignore-not-found")
