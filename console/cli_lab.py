"""`console lab`: serve the embedded lab in the foreground until Ctrl-C.

`-o json`: one JSON object on stdout when the lab is ready ({"status": "ready", "scenario", "state_dir", "env",
"kubeconfig", "clouds_yaml", "kube_url", "openstack_url", "libvirt_uri", "contexts"}, one line), or the error
object when it cannot start (console/exit_codes.py: `usage` 2, `lab-not-installed` 2, `lab-failed` 1); Ctrl-C
then stops it (exit 0) without printing more."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from console.lab.world import Lab


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "console" / "lab"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "lab",
        help="serve the embedded lab (Kubernetes API, OpenStack, libvirt) until Ctrl-C",
        description="Serve the embedded lab in the foreground. Then: set -a; . DIR/env; kubectl get nodes",
    )
    p.add_argument("--scenario", default="default",
                   help="default | seed-resize | seed-live | seed-drain | nfd-configmap | nfd-gpu-operator | planner | "
                        "scale")
    p.add_argument("--state-dir", type=Path, default=None, help=f"where to write kubeconfig, clouds.yaml, env, ready "
                   f"(default: {default_state_dir()})")
    p.add_argument("--nodes", type=int, default=None, help="synthetic scale world with N nodes (no VMs)")
    p.add_argument("--pods-per-node", type=int, default=None, help="pods per node in the scale world (default 30)")
    p.add_argument("--pending", type=int, default=0, metavar="N",
                   help="Pending pods in the scale world, its nodes Nova servers that can grow (capacity planner)")
    p.add_argument("--libvirt", choices=("auto", "qemu", "test"), default="auto",
                   help="hypervisor: real QEMU driver, libvirt's test driver, or auto (QEMU when installed)")
    p.add_argument("--cloud", choices=("sim", "real"), default="sim",
                   help="OpenStack: the lab's own (sim) or the real Keystone, Nova and Placement with one libvirtd "
                   "per compute host (real)")
    p.add_argument("--watch-expiry", type=float, default=None, metavar="SECONDS",
                   help="compact etcd every SECONDS and serve lists and watches from etcd (kube-apiserver "
                   "--watch-cache=false), so a list or watch from a compacted resourceVersion is answered 410 "
                   "Expired; default off (etcd compacted every 5 minutes, watches served from the watch cache). "
                   "SIGUSR1 stops the Kubernetes API server, SIGUSR2 restarts it")
    p.add_argument("--token-ttl", type=float, default=300, metavar="SECONDS",
                   help="lifetime of the tokens the lab-exec context's exec plugin returns (default 300)")
    p.add_argument("--no-metrics", action="store_true",
                   help="do not serve metrics.k8s.io (as a cluster without metrics-server)")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text",
                   help="json: one object on stdout when ready (or the error object)")


def run(args: argparse.Namespace) -> int:
    from console.exit_codes import USAGE, print_error
    from console.labdeps import refuse_without_lab

    as_json = args.output == "json"

    def usage(message: str) -> int:
        return print_error("console lab", as_json, "usage", message, USAGE)

    if (refused := refuse_without_lab("console lab", as_json=as_json)) is not None:
        return refused
    from console.lab import scenarios
    from console.lab.world import Lab

    try:
        scenario = scenarios.get(args.scenario, nodes=args.nodes, pods_per_node=args.pods_per_node,
                                 pending=args.pending)
    except ValueError as e:
        return usage(str(e))
    if (args.nodes is not None and args.nodes < 1) or (args.pods_per_node is not None and args.pods_per_node < 0) \
            or args.pending < 0:
        return usage("--nodes must be at least 1, --pods-per-node and --pending at least 0")
    if args.watch_expiry is not None and not 0 < args.watch_expiry < float("inf"):  # also refuses nan
        return usage("--watch-expiry must be a positive number of seconds")
    if not 0 < args.token_ttl < float("inf"):  # also refuses nan
        return usage("--token-ttl must be a number of seconds more than 0")
    state_dir = (args.state_dir or default_state_dir()).resolve()
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return usage(f"cannot create the state directory {state_dir}: {e.strerror}; pass --state-dir")
    lab = Lab(scenario, state_dir, libvirt=args.libvirt, cloud=args.cloud, watch_expiry=args.watch_expiry,
              token_ttl=args.token_ttl,
              metrics=not args.no_metrics)
    # restored on return: `run` is also called in-process (as `console.cli.main`), where the caller's
    # handlers must survive it
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)}
    try:
        return _serve(lab, as_json, scenario.name, state_dir)
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def _serve(lab: Lab, as_json: bool, scenario: str, state_dir: Path) -> int:
    """Start the lab, print where it is, and serve until SIGINT/SIGTERM."""
    from console.exit_codes import FAILED, print_error, print_json
    from console.lab.world import LabError

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    # by hand: `kill -USR1 PID` takes the API server away (as a restart), `kill -USR2 PID` brings it back
    signal.signal(signal.SIGUSR1, lambda *_: threading.Thread(target=lab.kube_api_down, daemon=True).start())
    signal.signal(signal.SIGUSR2, lambda *_: threading.Thread(target=lab.kube_api_up, daemon=True).start())
    t0 = time.monotonic()
    try:
        lab.start(progress=lambda msg: print(f"lab: {msg}", file=sys.stderr))
    except LabError as e:
        lab.stop()
        return print_error("console lab", as_json, "lab-failed", str(e), FAILED)
    if as_json:
        print_json({"status": "ready", "scenario": scenario, "state_dir": str(state_dir),
                    "env": str(lab.state.env), "kubeconfig": str(lab.state.kubeconfig),
                    "clouds_yaml": str(lab.state.clouds_yaml), "kube_url": lab.kube_url,
                    "openstack_url": lab.openstack_url, "libvirt_uri": lab.libvirt_uri,
                    "contexts": _contexts(lab.state.kubeconfig), "seconds": round(time.monotonic() - t0, 1)})
    else:
        print(
            f"lab ready in {time.monotonic() - t0:.1f}s: scenario {scenario}\n"
            f"  Kubernetes  {lab.kube_url} (contexts lab: cluster-admin; {', '.join(lab.rbac_contexts)}: RBAC)\n"
            f"  OpenStack   {lab.openstack_url}\n  libvirt     {lab.libvirt_uri}\n"
            f"Point your shell at it:  set -a; . {lab.state.env}; set +a\nCtrl-C stops the lab.",
            flush=True,
        )
    try:
        # in slices: Python runs signal handlers in the main thread only, between bytecodes, and a SIGINT the
        # kernel hands to another of the lab's threads does not wake an untimed wait (seen: a lab that ignored
        # its one Ctrl-C until a second came)
        while not stop.wait(0.5):
            pass
    finally:
        print("lab: stopping", file=sys.stderr)
        lab.stop()
    return 0


def _contexts(kubeconfig: Path) -> list[str]:
    """The contexts of the kubeconfig the lab wrote (lab, lab-viewer, lab-operator, lab-exec, …)."""
    import yaml

    doc = yaml.safe_load(kubeconfig.read_text()) or {}
    return [str(c.get("name")) for c in doc.get("contexts") or [] if isinstance(c, dict)]
