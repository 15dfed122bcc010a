"""Opening the TUI: on the current kube context, or on a freshly started lab (`--lab`)."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path


def run_tui(args: argparse.Namespace) -> int:
    from console.kube.connection import KubeConfigError

    lab = None
    kubeconfig, context = args.kubeconfig, args.context
    if args.lab:
        from console.lab import scenarios
        from console.lab.world import Lab, LabError

        state_dir = Path(tempfile.mkdtemp(prefix="console-lab-"))
        lab = Lab(scenarios.get(args.scenario), state_dir)
        try:
            lab.start(progress=lambda msg: print(f"lab: {msg}", file=sys.stderr, flush=True))
        except LabError as e:
            print(f"console: the lab did not start: {e}", file=sys.stderr)
            lab.stop()
            return 1
        kubeconfig, context = str(lab.state.kubeconfig), None
    try:
        from console.kube.cluster import Cluster
        from console.tui.app import ConsoleApp

        try:
            cluster = Cluster(kubeconfig, context)
        except KubeConfigError as e:
            print(f"console: {e}", file=sys.stderr)
            return 1
        cluster.start()
        ConsoleApp(cluster, subtitle=f"lab: {args.scenario}" if lab else "").run()
        cluster.stop()
        return 0
    finally:
        if lab is not None:
            lab.stop()
            shutil.rmtree(lab.state.root, ignore_errors=True)
