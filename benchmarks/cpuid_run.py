"""Benchmark: what a lab node's CPU (cpuid-run, console/lab/cpu) costs the real nfd-worker.

Runs upstream's nfd-worker v0.19.0 once (`-oneshot -no-publish`: one whole discovery, nothing sent; a kubeconfig
naming no server, which it never dials then) on this machine's CPU and under cpuid-run with a node's model, in turn,
and prints the medians and the ratio of the pairs. Every CPUID the worker and the Go runtime execute becomes a
ptrace stop; the ratio says what that costs a discovery.

    .venv/bin/python benchmarks/cpuid_run.py [--runs 21] [--model skylake]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from console.lab.cpu import cpuid, tracer
from console.lab.scenarios import HASWELL, ICELAKE, SKYLAKE, ZEN3
from console.lab.upstream.build import NFD, binary

MODELS = {"haswell": HASWELL, "skylake": SKYLAKE, "icelake": ICELAKE, "zen3": ZEN3}
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""


def timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} exited {done.returncode}: {done.stderr[-1000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--model", choices=sorted(MODELS), default="skylake")
    args = parser.parse_args()
    worker = binary(NFD["v0.19.0"], print, command="nfd-worker")
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        kubeconfig.write_text(KUBECONFIG)
        table = Path(tmp) / "cpuid.table"
        table.write_text(cpuid.table_text(MODELS[args.model]))
        run = [str(worker), f"-kubeconfig={kubeconfig}", "-oneshot", "-no-publish", "-port=0"]
        env = {**os.environ, "NODE_NAME": "bench"}
        native, traced = [], []
        timed(run, env)  # warm the page cache
        for _ in range(args.runs):
            native.append(timed(run, env))
            traced.append(timed([str(tracer.binary()), str(table), *run], env))
    ratios = [t / n for t, n in zip(traced, native, strict=True)]
    print(f"nfd-worker v0.19.0 -oneshot, {args.runs} pairs, model {MODELS[args.model].model_name}")
    print(f"  host CPU:         median {statistics.median(native) * 1000:7.1f} ms")
    print(f"  under cpuid-run:  median {statistics.median(traced) * 1000:7.1f} ms")
    print(f"  ratio (pairwise): median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
