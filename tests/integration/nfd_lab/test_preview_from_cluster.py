"""`nfd local --from-cluster` on the lab whose nfd-master runs with -extra-label-ns=nvidia.com (issue 11 acceptance).

The preview takes the version, master flags and worker config from the cluster's NFD deployment
(console.kube.nfddiscovery), so it equals the labels upstream's NFD v0.16.6 writes on the node. On v0.16 a vendor
namespace (nvidia.com) is allowed by itself; -extra-label-ns lets through a namespace that is denied
(github:kubernetes-sigs/node-feature-discovery v0.16.6 pkg/nfd-master/nfd-master.go filterFeatureLabel): so a
preview that denies nvidia.com differs exactly by the nvidia.com labels, unless the cluster's flag is taken too.
Needs the discovery (nfddiscovery), labnfd (scenario `nfd-gpu-operator`) and guestfs (guest roots) slices.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.lab import scenarios
from console.lab.guestroot import NFD_FEATURES_D
from console.lab.world import Lab

REPO = Path(__file__).resolve().parents[3]
NODE = "kube-worker02"


@pytest.fixture(scope="module")
def gpu_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab = Lab(scenarios.get("nfd-gpu-operator"), tmp_path_factory.mktemp("lab-nfd-gpu-operator"), wait_usage=False)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


def _cli(lab: Lab, *args: str) -> dict:
    p = subprocess.run([sys.executable, "-m", "console", "--kubeconfig", str(lab.state.kubeconfig), "nfd", *args,
                        "-o", "json"], cwd=REPO, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _node_labels(lab: Lab, want: str, timeout: float = 90.0) -> dict[str, str]:
    """The node's labels once NFD has written `want` (a condition, polled; the worker relabels on its interval)."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(lab.state.kubeconfig))
    try:
        core = client.CoreV1Api(api)
        deadline = time.monotonic() + timeout
        while True:
            labels = core.read_node(NODE).metadata.labels or {}
            if want in labels or time.monotonic() > deadline:
                return labels
            time.sleep(0.5)
    finally:
        api.close()


def test_from_cluster_preview_equals_what_nfd_writes(gpu_lab: Lab) -> None:
    features_d = str(gpu_lab.guest_roots[NODE].path(NFD_FEATURES_D))
    cluster = _cli(gpu_lab, "local", "--features-dir", features_d, "--from-cluster")
    assert cluster["version"] == "v0.16.6" and "gpu-operator" in cluster["config_source"]
    assert cluster["master"]["extra-label-ns"] == ["nvidia.com"]
    nvidia = {k: v for k, v in cluster["labels"].items() if k.startswith("nvidia.com/")}
    assert nvidia.get("nvidia.com/gpu.present") == "true"
    on_node = _node_labels(gpu_lab, "nvidia.com/gpu.present")
    assert {k: on_node.get(k) for k in cluster["labels"]} == cluster["labels"]
    # denied, nvidia.com gets through only by the cluster's -extra-label-ns
    denied = _cli(gpu_lab, "local", "--features-dir", features_d, "--from-cluster", "--deny-label-ns=nvidia.com")
    assert denied["labels"] == cluster["labels"]
    alone = _cli(gpu_lab, "local", "--features-dir", features_d, "--nfd-version", "v0.16.6",
                 "--deny-label-ns=nvidia.com")
    assert cluster["labels"] == {**alone["labels"], **nvidia}  # differs exactly by the nvidia.com labels
    assert not any(k.startswith("nvidia.com/") for k in alone["labels"])


def test_explicit_flag_overrides_the_cluster(gpu_lab: Lab) -> None:
    features_d = str(gpu_lab.guest_roots[NODE].path(NFD_FEATURES_D))
    out = _cli(gpu_lab, "local", "--features-dir", features_d, "--from-cluster", "--extra-label-ns=example.com",
               "--deny-label-ns=nvidia.com")
    assert out["master"]["extra-label-ns"] == ["example.com"]
    assert not any(k.startswith("nvidia.com/") for k in out["labels"])
