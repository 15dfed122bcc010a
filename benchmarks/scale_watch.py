"""Benchmark: the console's caches on the lab's scale world, side by side with kubectl, then idle.

Starts `python -m console lab --nodes N --pods-per-node M` (with `--watch-expiry S` when the lab has that
switch: every watch then ends with a 410 ERROR after S seconds, as after etcd compaction) and measures, in a
fresh child process running the TUI headless (App.run_test, 120×40) on a real Cluster:

- time to the first page of nodes in the cache, to the first painted node table, and to full sync of the
  node and pod caches — next to `kubectl get nodes -o json` and `kubectl get nodes,pods -A -o json` (ratios);
- RSS after the full load, and RSS / CPU of the console process over an idle period (`--idle SECONDS`);
- the requests the caches made while idle: list calls (relists after a 410) and watch calls.

    .venv/bin/python benchmarks/scale_watch.py [--nodes 5000] [--pods-per-node 30] [--idle 300] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from labproc import LabFailed, lab_has, scale_lab


def rss_mb(field: str = "VmRSS") -> float:
    """Current (VmRSS) or peak (VmHWM) resident memory of this process (not ru_maxrss: it survives fork+exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(kubeconfig: str, out: str, idle: float) -> None:
    """One console run: connect, paint from the first page, load everything, idle; figures as JSON."""
    t0 = time.monotonic()  # the process started just before: the console's imports count, as kubectl's start does
    from console.config import Settings
    from console.kube.cluster import Cluster

    figures: dict[str, Any] = {}
    calls: Counter[str] = Counter()

    def start() -> Cluster:  # in the order console/cli_tui.py open_console does it
        cluster = Cluster(kubeconfig)
        call_api = cluster.api_client.call_api

        def counting(method: str, url: str, *args: Any, **kw: Any) -> Any:
            # what the caches ask the API server: list (first list and relists) vs watch, per resource
            parts = urlsplit(url)
            watch = parse_qs(parts.query).get("watch") == ["true"]
            what = "watch" if watch else "list" if method == "GET" else method.lower()
            calls[f"{what} {parts.path.rstrip('/').rsplit('/', 1)[-1]}"] += 1
            return call_api(method, url, *args, **kw)

        cluster.api_client.call_api = counting  # type: ignore[method-assign]

        def changed() -> None:
            if "first_node_page_s" not in figures and cluster.nodes.generation:
                figures["first_node_page_s"] = time.monotonic() - t0
                figures["first_node_page_items"] = len(cluster.nodes.snapshot())

        cluster.on_change(changed)
        return cluster

    from console.gateways import Gateways

    cluster = start()
    gateways = Gateways.connect(Settings(kubeconfig=kubeconfig, theme="dark"), cluster_factory=lambda *_: cluster)
    gateways.start()  # the node/pod caches, the events watch and the metrics poll, as the console starts them
    from console.tui.app import ConsoleApp

    figures["rss_imports_mb"] = rss_mb()

    async def run() -> None:
        app = ConsoleApp(gateways)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.screen
            while not screen.table.keys:
                await pilot.pause(0.01)
            await pilot.pause()
            figures["first_paint_s"] = time.monotonic() - t0
            figures["first_paint_rows"] = len(screen.table.keys)
            while cluster.nodes.loading or cluster.pods.loading:
                await pilot.pause(0.01)
            figures["synced_s"] = time.monotonic() - t0
            while app.view.generation[:2] != (cluster.nodes.generation, cluster.pods.generation):
                await pilot.pause(0.01)
            await pilot.pause()
            figures["all_painted_s"] = time.monotonic() - t0
            figures["nodes"], figures["pods"] = len(app.view.rows), len(app.view.snapshot.pods)
            figures["rss_loaded_mb"] = rss_mb()
            before = dict(calls)
            c0, w0 = cpu_s(), time.monotonic()
            rss_samples = []
            while time.monotonic() - w0 < idle:
                await pilot.pause(min(5.0, max(0.1, idle - (time.monotonic() - w0))))
                rss_samples.append(rss_mb())
            figures["idle_s"] = time.monotonic() - w0
            figures["idle_cpu_s"] = cpu_s() - c0
            figures["rss_idle_end_mb"] = rss_mb()
            figures["rss_idle_max_mb"] = max(rss_samples or [rss_mb()])
            figures["idle_calls"] = {k: v - before.get(k, 0) for k, v in calls.items() if v != before.get(k, 0)}
            figures["nodes_after_idle"] = len(cluster.nodes.snapshot())
            figures["pods_after_idle"] = len(cluster.pods.snapshot())
        cluster.stop()

    asyncio.run(run())
    figures["peak_rss_mb"] = rss_mb("VmHWM")
    figures["calls"] = dict(calls)
    Path(out).write_text(json.dumps(figures))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--lab-state", type=Path, metavar="DIR",
                    help="use the lab already running with --state-dir DIR (and its size) instead of starting one")
    ap.add_argument(
        "--kubectl-table",
        action="store_true",
        help="kubectl's reference run prints its table, not -o json (which holds every object in kubectl's memory)",
    )
    ap.add_argument("--idle", type=float, default=300.0, help="seconds the console stays open idle (default 300)")
    ap.add_argument("--watch-expiry", type=int, default=30, help="lab --watch-expiry SECONDS (0: off)")
    ap.add_argument("--repeat", type=int, default=3, help="kubectl runs (median)")
    ap.add_argument("--child", nargs=3, metavar=("KUBECONFIG", "OUT", "IDLE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], float(args.child[2]))
        return 0

    extra, notes = [], []
    if args.lab_state:
        notes.append(f"the lab in {args.lab_state} was already running: its own --watch-expiry, if any, holds")
    elif args.watch_expiry:
        if lab_has("--watch-expiry"):
            extra = ["--watch-expiry", str(args.watch_expiry)]
        else:
            notes.append(f"this lab has no --watch-expiry: watches are not expired (asked for {args.watch_expiry}s)")
    try:
        with scale_lab(args.nodes, args.pods_per_node, extra, running=args.lab_state) as lab:
            print(f"lab: {args.nodes} nodes, {args.nodes * args.pods_per_node} pods, ready in {lab.ready_s:.1f}s "
                  f"({' '.join(lab.command[2:])})")

            def kubectl(*kargs: str) -> float:
                t = time.monotonic()
                fmt = () if args.kubectl_table else ("-o", "json")
                subprocess.run(["kubectl", *kargs, *fmt], env=lab.env, stdout=subprocess.DEVNULL, check=True)
                return time.monotonic() - t

            k_nodes = statistics.median(kubectl("get", "nodes") for _ in range(args.repeat))
            k_all = statistics.median(kubectl("get", "nodes,pods", "-A") for _ in range(args.repeat))
            result = lab.state / "console.json"
            subprocess.run([sys.executable, __file__, "--child", lab.env["KUBECONFIG"], str(result), str(args.idle)],
                           env=lab.env, check=True, timeout=args.idle + 900)
            c = json.loads(result.read_text())
    except LabFailed as e:
        print(e)
        return 1

    how = "  (kubectl: its table)" if args.kubectl_table else ""
    print(f"\n{'':50}{'console':>10}{'kubectl':>10}{'ratio':>8}{how}")
    print(f"  {'first node page in the cache':48}{c['first_node_page_s']:9.2f}s"
          f"   ({c['first_node_page_items']} nodes)")
    print(f"  {'first paint / kubectl get nodes -o json':48}{c['first_paint_s']:9.2f}s{k_nodes:9.2f}s"
          f"{c['first_paint_s'] / k_nodes:7.2f}x  ({c['first_paint_rows']} rows painted)")
    print(f"  {'full sync / kubectl get nodes,pods -A -o json':48}{c['synced_s']:9.2f}s{k_all:9.2f}s"
          f"{c['synced_s'] / k_all:7.2f}x  (goal <= 0.04x)")
    print(f"  {'all painted / kubectl get nodes,pods -A':48}{c['all_painted_s']:9.2f}s{k_all:9.2f}s"
          f"{c['all_painted_s'] / k_all:7.2f}x")
    print(f"  nodes / pods in the console                      {c['nodes']} / {c['pods']}")
    print(f"  RSS after imports / loaded / peak                {c['rss_imports_mb']:.0f} / {c['rss_loaded_mb']:.0f} / "
          f"{c['peak_rss_mb']:.0f} MB  (goal <= 120 MB loaded)")
    share = 100 * c["idle_cpu_s"] / c["idle_s"]
    print(f"  idle {c['idle_s']:.0f}s: CPU {c['idle_cpu_s']:.1f}s ({share:.1f}% of a core), "
          f"RSS end {c['rss_idle_end_mb']:.0f} MB, max {c['rss_idle_max_mb']:.0f} MB")
    idle_calls = c["idle_calls"]
    lists = sum(v for k, v in idle_calls.items() if k.startswith("list "))
    print(f"  requests while idle: {lists} list calls (relists), "
          f"{sum(v for k, v in idle_calls.items() if k.startswith('watch '))} watches  {idle_calls or ''}")
    print(f"  after idle: {c['nodes_after_idle']} nodes, {c['pods_after_idle']} pods in the caches")
    print(f"  all requests: {c['calls']}")
    for note in notes:
        print(f"  note: {note}")
    return 0 if c["nodes"] == args.nodes else 1


if __name__ == "__main__":
    sys.exit(main())
