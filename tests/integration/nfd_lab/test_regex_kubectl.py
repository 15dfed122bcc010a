"""kubectl apply of a NodeFeatureRule with `(a+)+$` against a 10,000-character attribute: the lab's NFD
evaluates it with the console's engine (Go RE2, linear), so its API server keeps answering.

NFD: pkg/apis/nfd/nodefeaturerule/expression.go (InRegexp is regexp.Compile + MatchString).
Real kubectl against the lab API server, NfdSim (console/lab/nfd_sim.py) on the same store.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from console.lab import scenarios, seed
from console.lab.kubeapi import start_kube_api
from console.lab.kubeconfig import write_kubeconfig
from console.lab.loop import LoopThread
from console.lab.nfd_sim import NfdSim
from console.lab.podlogs import PodLogs
from console.lab.store import Store

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")

NS = "node-feature-discovery"
FNS = "feature.node.kubernetes.io"


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[dict[str, Any]]:
    sc = scenarios.get("default")
    st = Store()
    for ns in sc.namespaces:
        st.create("namespaces", seed.namespace(ns))
    for r, o in seed.nfd_objects(sc):  # NFD's manifests: the CRDs, nfd-master, nfd-worker
        st.create(r, o)
    for n in sc.nodes:
        st.create("nodes", seed.node_object(n, None))
    sim = NfdSim(st, sc, tmp_path / "nfd", debounce=0.02)
    loop = LoopThread("regex-kubectl")
    loop.start()
    token = secrets.token_urlsafe(24)
    api = loop.call(start_kube_api(st, PodLogs(), token=token))
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, api.url, token, ca_pem=api.ca_pem)
    sim.start()
    env = {"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path), "KUBECACHEDIR": str(tmp_path / "cache"),
           "PATH": "/usr/local/bin:/usr/bin:/bin"}
    try:
        yield {"store": st, "sim": sim, "env": env, "node": sc.nodes[-1].name}
    finally:
        sim.stop()
        loop.call(api.stop())
        loop.stop()


def kubectl(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=60, input=stdin)
    assert p.returncode == 0, f"kubectl {' '.join(args)}: {p.stderr}"
    return p


def test_pathological_rule_applied_with_kubectl_keeps_the_api_answering(lab: dict[str, Any]) -> None:
    env, node = lab["env"], lab["node"]
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
    start = time.monotonic()
    got = json.loads(kubectl(env, "get", "node", node, "-o", "json").stdout)  # answered right after the apply
    assert got["metadata"]["name"] == node
    assert time.monotonic() - start < 30  # one kubectl start-up; a blocked API server would time kubectl out
    assert lab["sim"].wait_idle(30.0)
    labels = json.loads(kubectl(env, "get", "node", node, "-o", "json").stdout)["metadata"]["labels"]
    assert labels.get(f"{FNS}/bang") == "true"  # the rule object was evaluated
    assert f"{FNS}/redos" not in labels  # `(a+)+$` does not match "aaa…a!": Go semantics, in linear time
