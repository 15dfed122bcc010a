"""Benchmark: the lab's scale world through real kubectl.

Starts `python -m console lab --nodes N --pods-per-node M` as a subprocess,
times it until the `ready` file appears, then times `kubectl get nodes -o json`
(and `get nodes,pods -A -o json`) against it and reports the lab's memory.

    .venv/bin/python benchmarks/lab_scale.py [--nodes 5000] [--pods-per-node 30] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def rss_mb(pid: int) -> tuple[float, float]:
    """Current and peak resident memory of a process, from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = {line.split(":")[0]: line.split()[1] for line in status.splitlines() if line.startswith("Vm")}
    return int(fields["VmRSS"]) / 1024, int(fields["VmHWM"]) / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    state = Path(tempfile.mkdtemp(prefix="lab-bench-"))
    cmd = [sys.executable, "-m", "console", "lab", "--nodes", str(args.nodes),
           "--pods-per-node", str(args.pods_per_node), "--state-dir", str(state)]
    t0 = time.monotonic()
    lab = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while not (state / "ready").exists():
            if lab.poll() is not None:
                print(f"lab exited early ({lab.returncode}): {lab.stderr.read() if lab.stderr else ''}")
                return 1
            time.sleep(0.05)
        start_s = time.monotonic() - t0
        env = dict(os.environ)
        for line in (state / "env").read_text().splitlines():
            k, _, v = line.partition("=")
            env[k] = shlex.split(v)[0]

        def timed(kubectl_args: list[str]) -> tuple[float, int]:
            t = time.monotonic()
            out = subprocess.run(["kubectl", *kubectl_args], env=env, capture_output=True, check=True).stdout
            return time.monotonic() - t, len(json.loads(out)["items"])

        nodes_runs = [timed(["get", "nodes", "-o", "json"]) for _ in range(args.repeat)]
        all_runs = [timed(["get", "nodes,pods", "-A", "-o", "json"]) for _ in range(args.repeat)]
        rss, peak = rss_mb(lab.pid)
        print(f"lab scale world: {args.nodes} nodes, {args.nodes * args.pods_per_node} pods")
        print(f"  start until ready:                 {start_s:6.2f} s")
        print(f"  kubectl get nodes -o json:         {statistics.median(t for t, _ in nodes_runs):6.2f} s "
              f"(median of {args.repeat}; {nodes_runs[0][1]} items)")
        print(f"  kubectl get nodes,pods -A -o json: {statistics.median(t for t, _ in all_runs):6.2f} s "
              f"(median of {args.repeat}; {all_runs[0][1]} items)")
        print(f"  lab memory: RSS {rss:.0f} MB, peak {peak:.0f} MB")
        return 0 if nodes_runs[0][1] == args.nodes else 1
    finally:
        lab.send_signal(signal.SIGINT)
        try:
            lab.wait(30)
        except subprocess.TimeoutExpired:
            lab.kill()


if __name__ == "__main__":
    sys.exit(main())
