"""Dry-run 100 NodeFeatureRules over 5,000 NodeFeatures; prints the time (goal: <= 2 s on 2 cores).

    python benchmarks/nfd_dryrun.py [--nodes 5000] [--rules 100] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from console.nfd.master import MasterConfig, compute_node_outcome
from console.nfd.model import (
    Features,
    NodeFeatureSpec,
    make_node_feature,
)
from console.nfd.rules import compile_rule_objects

CPU_FLAGS = ["AVX", "AVX2", "AVX512F", "AVX512BW", "FMA3", "SSE42", "AESNI", "SHA", "VMX", "GFNI", "VAES", "ADX"]
MODULES = ["kvm", "kvm_intel", "ib_uverbs", "rdma_ucm", "nvidia", "i915", "vfio_pci", "br_netfilter", "overlay"]
PCI = [("0300", "10de"), ("0300", "1af4"), ("0200", "8086"), ("0b40", "8086"), ("1200", "1da3"), ("0106", "8086")]


def make_node(i: int, rnd: random.Random) -> dict:
    f = Features()
    f.flags["cpu.cpuid"] = {x for x in CPU_FLAGS if rnd.random() < 0.6}
    f.attributes["cpu.model"] = {"vendor_id": rnd.choice(["Intel", "AMD"]), "family": str(rnd.choice([6, 25])),
                                 "id": str(rnd.randint(1, 200))}
    f.attributes["kernel.version"] = {"major": "5", "minor": str(rnd.randint(4, 19)), "revision": "0",
                                      "full": "5.15.0-76-generic"}
    f.attributes["kernel.config"] = {"NO_HZ": "y", "PREEMPT": rnd.choice(["y", "n"]),
                                     "HZ": str(rnd.choice([250, 1000]))}
    f.flags["kernel.loadedmodule"] = {m for m in MODULES if rnd.random() < 0.4}
    f.attributes["system.osrelease"] = {"ID": rnd.choice(["ubuntu", "rhel"]), "VERSION_ID": "22.04",
                                        "VERSION_ID.major": "22", "VERSION_ID.minor": "04"}
    f.instances["pci.device"] = [{"class": c, "vendor": v, "device": f"{rnd.randint(0, 65535):04x}"}
                                 for c, v in PCI if rnd.random() < 0.5]
    f.attributes["memory.numa"] = {"is_numa": rnd.choice(["true", "false"]), "node_count": str(rnd.choice([1, 2]))}
    return make_node_feature(f"node-{i}", f, {"feature.node.kubernetes.io/static": "true"})


def make_rules(n: int, rnd: random.Random) -> list[dict]:
    rules = []
    for i in range(n):
        kind = i % 5
        if kind == 0:
            terms = [{"feature": "cpu.cpuid", "matchExpressions": {rnd.choice(CPU_FLAGS): {"op": "Exists"}}},
                     {"feature": "kernel.version", "matchExpressions": {"minor": {"op": "Gt", "value": ["10"]}}}]
            rule = {"name": f"r{i}", "labels": {f"cpu-rule-{i}": "true"}, "matchFeatures": terms}
        elif kind == 1:
            rule = {"name": f"r{i}", "labels": {f"gpu-{i}": "true"},
                    "matchFeatures": [{"feature": "pci.device", "matchExpressions": {
                        "vendor": {"op": "In", "value": ["10de"]}, "class": {"op": "InRegexp", "value": ["^03"]}}}]}
        elif kind == 2:
            rule = {"name": f"r{i}", "labels": {f"rdma-{i}": "true"},
                    "matchAny": [{"matchFeatures": [{"feature": "kernel.loadedmodule",
                                                     "matchExpressions": {m: {"op": "Exists"}}}]}
                                 for m in ("ib_uverbs", "rdma_ucm")]}
        elif kind == 3:
            rule = {"name": f"r{i}", "labelsTemplate": "{{ range .cpu.cpuid }}avx-" + str(i) + "-{{ .Name }}=true\n"
                    "{{ end }}", "matchFeatures": [{"feature": "cpu.cpuid",
                                                    "matchName": {"op": "InRegexp", "value": ["^AVX512"]}}]}
        else:
            rule = {"name": f"r{i}", "vars": {f"v{i}": "true"}, "labels": {f"os-{i}": "@system.osrelease.ID"},
                    "matchFeatures": [{"feature": "system.osrelease",
                                       "matchExpressions": {"ID": {"op": "In", "value": ["ubuntu"]},
                                                            "VERSION_ID.major": {"op": "GtLt", "value": ["18", "30"]}}},
                                      {"feature": "rule.matched", "matchExpressions": {
                                          f"cpu-rule-{i - 4}": {"op": "IsTrue"}}}]}
        rules.append({"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
                      "metadata": {"name": f"rules-{i // 10:02d}"}, "spec": {"rules": [rule]}})
    # merge into 10 objects of 10 rules
    objs: dict[str, dict] = {}
    for r in rules:
        o = objs.setdefault(r["metadata"]["name"], {**r, "spec": {"rules": []}})
        o["spec"]["rules"].extend(r["spec"]["rules"])
    return list(objs.values())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--rules", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    nodes = [make_node(i, rnd) for i in range(a.nodes)]
    rule_objs = make_rules(a.rules, rnd)
    specs = [NodeFeatureSpec.from_object(n) for n in nodes]  # parsing is the lab's cache, not the dry run
    config = MasterConfig()
    t0 = time.perf_counter()
    compiled = compile_rule_objects(rule_objs, config.version)
    labels = errors = 0
    for spec in specs:
        out = compute_node_outcome([spec], compiled, config=config)
        labels += len(out.labels)
        errors += len(out.rule_errors)
    dt = time.perf_counter() - t0
    print(f"{a.nodes} NodeFeatures x {a.rules} rules: {dt:.3f} s "
          f"({dt / a.nodes * 1e3:.3f} ms/node, {labels} labels, {errors} rule errors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
