"""Benchmark: the console on the lab's scale world, side by side with kubectl.

Starts `python -m console lab --nodes N --pods-per-node M` as a subprocess, then measures
(each console run in a fresh child process, so its RSS is the console's alone):

- time to first painted node table (headless App.run_test, 120×40);
- time until all nodes and pods are loaded, vs `kubectl get nodes,pods -A -o json` wall time;
- peak RSS of the console process;
- filter keystroke → repaint latency at N nodes (p50/p95 over typed text and a label selector).

    .venv/bin/python benchmarks/tui_scale.py [--nodes 5000] [--pods-per-node 30] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from labproc import LabFailed, kubectl_timed, scale_lab


def rss_mb(field: str = "VmRSS") -> float:
    """Current (VmRSS) or peak (VmHWM) resident memory of this process. Not ru_maxrss: that survives
    fork+exec, so it would report the parent's peak (which parsed kubectl's JSON)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def child(kubeconfig: str, out: str) -> None:
    """One console run: connect, paint, load everything, filter; write figures as JSON."""
    t0 = time.monotonic()
    from console.config import Settings
    from console.gateways import Gateways
    from console.tui.app import ConsoleApp

    figures: dict[str, float] = {}

    async def run() -> None:
        gateways = Gateways.connect(Settings(kubeconfig=kubeconfig, theme="dark"))
        gateways.start()
        cluster = gateways.cluster
        app = ConsoleApp(gateways)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.screen
            while not screen.table.keys:
                await pilot.pause(0.01)
            await pilot.pause()
            figures["first_paint_s"] = time.monotonic() - t0
            figures["rss_first_paint_mb"] = rss_mb()
            while not (cluster.pods.synced.is_set() and cluster.nodes.synced.is_set()):
                await pilot.pause(0.01)
            figures["synced_s"] = time.monotonic() - t0
            while (
                len(app.view.snapshot.pods) < len(cluster.pods.snapshot())
                or app.view.generation[1] != cluster.pods.generation
            ):
                await pilot.pause(0.01)
            await pilot.pause()
            figures["all_loaded_s"] = time.monotonic() - t0
            figures["rss_loaded_mb"] = rss_mb()
            figures["peak_rss_loaded_mb"] = rss_mb("VmHWM")
            figures["nodes"] = len(app.view.rows)
            figures["pods"] = len(app.view.snapshot.pods)
            await pilot.press("slash")
            await pilot.pause()
            # keystroke -> repaint: from posting the key to the table's first rendered line after it
            table = screen.table
            painted: list[float] = []
            render_line = table.render_line

            def timed_render_line(y: int) -> object:
                painted.append(time.perf_counter())
                return render_line(y)

            table.render_line = timed_render_line  # type: ignore[method-assign]
            latencies = []
            text = "node-0123" + "\b" * 9 + "-l feature.node.kubernetes.io/cpu-cpuid.AVX512F=true" + "\b" * 6
            for ch in text:
                painted.clear()
                t = time.perf_counter()
                await pilot.press("backspace" if ch == "\b" else ch)
                await pilot.pause()
                if painted:
                    latencies.append(painted[0] - t)
            latencies.sort()
            figures["filter_p50_ms"] = statistics.median(latencies) * 1000
            figures["filter_p95_ms"] = latencies[int(len(latencies) * 0.95) - 1] * 1000
            figures["filter_max_ms"] = latencies[-1] * 1000
            figures["filtered_rows"] = len(screen.table.keys)
        gateways.stop()

    asyncio.run(run())
    figures["peak_rss_mb"] = rss_mb("VmHWM")
    Path(out).write_text(json.dumps(figures))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument(
        "--lab-state",
        type=Path,
        metavar="DIR",
        help="use the lab already running with --state-dir DIR (and its size) instead of starting one",
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--kubectl-table",
        action="store_true",
        help="kubectl's reference run prints its table, not -o json (which holds every object in kubectl's memory)",
    )
    ap.add_argument("--child", nargs=2, metavar=("KUBECONFIG", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0

    try:
        with scale_lab(args.nodes, args.pods_per_node, running=args.lab_state) as lab:
            print(f"lab: {args.nodes} nodes, {args.nodes * args.pods_per_node} pods, ready in {lab.ready_s:.1f}s")
            env, state = lab.env, lab.state
            kubeconfig = env["KUBECONFIG"]

            kubectl, kubectl_rss, console = [], [], []
            for i in range(args.repeat):
                took, items, peak = kubectl_timed(
                    ["get", "nodes,pods", "-A"], env, state / "kubectl.out", table=args.kubectl_table
                )
                kubectl.append(took)
                kubectl_rss.append(peak)
                result = Path(state / f"console-{i}.json")
                subprocess.run(
                    [sys.executable, __file__, "--child", kubeconfig, str(result)], env=env, check=True, timeout=600
                )
                console.append(json.loads(result.read_text()))
                c = console[-1]
                print(
                    f"run {i + 1}: kubectl {kubectl[-1]:.2f}s ({items} items, peak RSS {peak:.0f} MB) · console "
                    f"first paint {c['first_paint_s']:.2f}s, all loaded {c['all_loaded_s']:.2f}s, filter p95 "
                    f"{c['filter_p95_ms']:.1f} ms, peak RSS {c['peak_rss_mb']:.0f} MB"
                )

            def med(key: str) -> float:
                return statistics.median(c[key] for c in console)

            k = statistics.median(kubectl)
            print("\nmedian over", args.repeat, "runs")
            print(f"  time to first painted node table      {med('first_paint_s'):6.2f} s")
            print(f"  all nodes and pods loaded (console)   {med('all_loaded_s'):6.2f} s")
            print(f"  kubectl get nodes,pods -A {'(table)' if args.kubectl_table else '-o json'}     {k:6.2f} s")
            print(f"  ratio console / kubectl               {med('all_loaded_s') / k:6.2f}x   (goal <= 1.0x)")
            print(f"  peak RSS (console process)            {med('peak_rss_mb'):6.0f} MB  (goal <= 400 MB)")
            print(f"  peak RSS (kubectl)                    {statistics.median(kubectl_rss):6.0f} MB")
            print(f"  filter keystroke -> repaint p50       {med('filter_p50_ms'):6.1f} ms")
            print(f"  filter keystroke -> repaint p95       {med('filter_p95_ms'):6.1f} ms  (goal <= 50 ms)")
            print(f"  nodes / pods in the console           {med('nodes'):.0f} / {med('pods'):.0f}")
    except LabFailed as e:
        print(e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
