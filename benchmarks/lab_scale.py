"""Benchmark: the lab's scale world through real kubectl, and what its control plane costs.

Starts `python -m console lab --nodes N --pods-per-node M` as a subprocess (or uses one already running,
`--lab-state DIR`), times it until the `ready` file appears, then times `kubectl get nodes -o json` (and
`get nodes,pods -A -o json`) against it and reports the resident memory of the lab's processes: the lab itself
and each upstream component (etcd, kube-apiserver, kube-scheduler, kube-controller-manager), found by the state
directory on their command lines.

    .venv/bin/python benchmarks/lab_scale.py [--nodes 5000] [--pods-per-node 30] [--repeat 3] [--lab-state DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path

from labproc import LabFailed, kubectl_timed, scale_lab

COMPONENTS = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "metrics-server")


def rss_mb(pid: int) -> tuple[float, float]:
    """Current and peak resident memory of a process, from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = {line.split(":")[0]: line.split()[1] for line in status.splitlines() if line.startswith("Vm")}
    return int(fields["VmRSS"]) / 1024, int(fields["VmHWM"]) / 1024


def processes() -> Iterator[tuple[int, list[str]]]:
    """Each process's pid and command line."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            yield int(proc.name), (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue


def component_pids(state: Path) -> dict[str, int]:
    """The upstream components' processes of the lab in `state`: the binary or its first argument (one binary, a
    subcommand each) names the component, and some argument names a file in the state directory."""
    found: dict[str, int] = {}
    for pid, argv in processes():
        if not any(str(state) in a for a in argv):
            continue
        for name in COMPONENTS:
            if name in argv[:2] or Path(argv[0]).name == name:
                found[name] = pid
    return found


def lab_process(state: Path) -> int:
    """The pid of `console lab --state-dir STATE` (0: none found), for a lab this script did not start."""
    return next((pid for pid, argv in processes() if "console" in argv and "lab" in argv and str(state) in argv), 0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--lab-state",
        type=Path,
        metavar="DIR",
        help="use the lab already running with --state-dir DIR instead of starting one",
    )
    args = ap.parse_args()

    try:
        with scale_lab(args.nodes, args.pods_per_node, running=args.lab_state) as lab:

            def timed(kubectl_args: list[str]) -> tuple[float, int, float]:
                return kubectl_timed(kubectl_args, lab.env, lab.state / "kubectl.json")

            nodes_runs = [timed(["get", "nodes"]) for _ in range(args.repeat)]
            all_runs = [timed(["get", "nodes,pods", "-A"]) for _ in range(args.repeat)]
            print(f"lab scale world: {nodes_runs[0][1]} nodes, {all_runs[0][1] - nodes_runs[0][1]} pods")
            if args.lab_state is None:
                print(f"  start until ready:                 {lab.ready_s:6.2f} s")
            print(
                f"  kubectl get nodes -o json:         {statistics.median(t for t, _, _ in nodes_runs):6.2f} s "
                f"(median of {args.repeat}; {nodes_runs[0][1]} items)"
            )
            print(
                f"  kubectl get nodes,pods -A -o json: {statistics.median(t for t, _, _ in all_runs):6.2f} s "
                f"(median of {args.repeat}; {all_runs[0][1]} items; kubectl's peak RSS "
                f"{statistics.median(r for _, _, r in all_runs):.0f} MB)"
            )
            total = 0.0
            pids = component_pids(lab.state)
            lab_pid = lab.proc.pid if lab.proc is not None else lab_process(lab.state)
            if lab_pid:
                pids = {"lab (python)": lab_pid, **pids}
            for name, pid in pids.items():
                rss, peak = rss_mb(pid)
                total += rss
                print(f"  {name + ':':34} RSS {rss:6.0f} MB, peak {peak:6.0f} MB")
            print(f"  {'all of the above:':34} RSS {total:6.0f} MB")
            return 0 if nodes_runs[0][1] == args.nodes else 1
    except LabFailed as e:
        print(e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
