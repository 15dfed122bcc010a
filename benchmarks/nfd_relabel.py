"""Benchmark: how soon the lab's NFD relabels nodes after a rule, feature-file or hook change.

Starts the lab in this process and, through the Kubernetes API (the `kubernetes` client, as an
admin or the console would), times each change until every affected node shows the result:

- default lab (NFD v0.19.0): NodeFeatureRule create / edit / delete; a feature file written into the
  workers' features.d (4 nodes; bounded by nfd-worker's core.sleepInterval, 2s in the lab);
- seed-resize (NFD v0.8.2, hooks run): a hook written into the workers' source.d (2 nodes).

Reference, side by side on the same lab: a label patched onto the Node directly with the same client,
until a read shows it — what any label change through the API costs at least. The issue's goal is
"within a second"; ratios are against the reference.

    .venv/bin/python benchmarks/nfd_relabel.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FNS = "feature.node.kubernetes.io"
GROUP, VERSION = "nfd.k8s-sigs.io", "v1alpha1"


def until(predicate: Callable[[], bool], timeout: float = 30.0) -> float:
    t0 = time.monotonic()
    while not predicate():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"not done after {timeout}s")
        time.sleep(0.002)
    return time.monotonic() - t0


def timed(change: Callable[[], Any], done: Callable[[], bool]) -> float:
    t0 = time.monotonic()
    change()
    until(done)
    return time.monotonic() - t0


FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d/"
SOURCE_D = "/etc/kubernetes/node-feature-discovery/source.d/"


def write_all(lab: Any, nodes: list[str], guest_path: str, content: str, mode: int) -> None:
    """A file into each node's tree, where nfd-worker's hostPath volume reads it (lab.guest_roots)."""
    for n in nodes:
        path = lab.guest_roots[n].path(guest_path)
        path.write_text(content)
        path.chmod(mode)


def start(scenario: str) -> tuple[Any, Any]:
    from kubernetes.config import new_client_from_config

    from console.lab import scenarios
    from console.lab.world import Lab

    lab = Lab(scenarios.get(scenario), Path(tempfile.mkdtemp(prefix=f"bench-nfd-{scenario}-")))
    lab.start()
    return lab, new_client_from_config(str(lab.state.kubeconfig))


def default_lab(repeat: int) -> dict[str, list[float]]:
    from kubernetes import client

    lab, api_client = start("default")
    core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
    workers = [n.metadata.name for n in core.list_node().items if "worker" in n.metadata.name]

    def labels(node: str) -> dict[str, str]:
        return core.read_node(node).metadata.labels or {}

    out: dict[str, list[float]] = {k: [] for k in ("reference", "rule create", "rule edit", "rule delete",
                                                   "feature file (4 nodes)")}
    key = f"{FNS}/bench.modules"
    try:
        for i in range(repeat):
            out["reference"].append(timed(
                lambda i=i: core.patch_node("kube-worker02", {"metadata": {"labels": {"bench/ref": str(i)}}}),
                lambda i=i: labels("kube-worker02").get("bench/ref") == str(i)))
            rule = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeFeatureRule",
                    "metadata": {"name": "bench-modules"},
                    "spec": {"rules": [{"name": "vfio", "labels": {"bench.modules": "true"},
                                        "matchFeatures": [{"feature": "kernel.loadedmodule", "matchExpressions": {
                                            "vfio_pci": {"op": "Exists"}, "vhost_net": {"op": "Exists"}}}]}]}}
            out["rule create"].append(timed(
                lambda rule=rule: custom.create_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", rule),
                lambda: labels("kube-worker02").get(key) == "true"))
            current = custom.get_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", "bench-modules")
            current["spec"]["rules"][0]["labels"] = {"bench.modules": "edited"}
            out["rule edit"].append(timed(
                lambda c=current: custom.replace_cluster_custom_object(GROUP, VERSION, "nodefeaturerules",
                                                                       "bench-modules", c),
                lambda: labels("kube-worker02").get(key) == "edited"))
            out["rule delete"].append(timed(
                lambda: custom.delete_cluster_custom_object(GROUP, VERSION, "nodefeaturerules", "bench-modules"),
                lambda: key not in labels("kube-worker02")))
            value = f"b{i}"
            out["feature file (4 nodes)"].append(timed(
                lambda value=value: write_all(lab, workers, FEATURES_D + "bench", f"bench.file={value}\n", 0o644),
                lambda value=value: all(labels(w).get(f"{FNS}/bench.file") == value for w in workers)))
    finally:
        lab.stop()
    return out


def seed_resize(repeat: int) -> dict[str, list[float]]:
    from kubernetes import client

    lab, api_client = start("seed-resize")
    core = client.CoreV1Api(api_client)
    workers = ["kube-worker01", "kube-worker02"]
    out: dict[str, list[float]] = {"reference (v0.8 lab)": [], "hook added (2 nodes, v0.8)": []}
    try:
        for i in range(repeat):
            out["reference (v0.8 lab)"].append(timed(
                lambda i=i: core.patch_node("kube-worker02", {"metadata": {"labels": {"bench/ref": str(i)}}}),
                lambda i=i: (core.read_node("kube-worker02").metadata.labels or {}).get("bench/ref") == str(i)))
            script = f"#!/bin/sh\necho bench={i}\n"
            out["hook added (2 nodes, v0.8)"].append(timed(
                lambda script=script: write_all(lab, workers, SOURCE_D + "benchhook", script, 0o755),
                lambda i=i: all((core.read_node(w).metadata.labels or {}).get(f"{FNS}/benchhook-bench") == str(i)
                                for w in workers)))
    finally:
        lab.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    results = default_lab(args.repeat) | seed_resize(args.repeat)
    ref = statistics.median(results["reference"])
    ref08 = statistics.median(results["reference (v0.8 lab)"])
    print(f"{'change → labels on every affected node':<40} {'median':>9} {'max':>9} {'× reference':>12}"
          f"  (goal ≤ 1 s; {args.repeat} runs)")
    for name, times in results.items():
        base = ref08 if "v0.8" in name else ref
        med = statistics.median(times)
        print(f"{name:<40} {med * 1000:>7.0f}ms {max(times) * 1000:>7.0f}ms {med / base:>11.1f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
