"""Opening the TUI: on the current kube context, or on a freshly started lab (`--lab`)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "kubeconfig": args.kubeconfig,
        "context": args.context,
        "theme": getattr(args, "theme", None),
        "read_only": getattr(args, "read_only", None),
        "nfd_version": getattr(args, "nfd_version", None),
    }


def run_tui(args: argparse.Namespace) -> int:
    from console.cli import config_error
    from console.config import ConfigError, load

    try:  # before any lab, connection or screen: a bad setting is exit 2 and one line
        settings = load(_flags(args))
    except ConfigError as e:
        return config_error(args, e)
    lab = None
    label = ""
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
        from dataclasses import replace

        # the lab's clouds.yaml is this process's OpenStack config, as `. DIR/env` would make it
        os.environ["OS_CLIENT_CONFIG_FILE"] = str(lab.state.clouds_yaml)
        label = f"lab: {args.scenario}"
    try:
        if lab is not None:  # resolved again: the context in use is the lab kubeconfig's current-context
            settings = replace(load({**_flags(args), "kubeconfig": str(lab.state.kubeconfig), "context": None}),
                               context=None, cloud="lab", libvirt_uris=(lab.libvirt_uri,))
        return open_console(settings, label=label)
    except ConfigError as e:  # the file changed while the lab started
        return config_error(args, e)
    finally:
        if lab is not None:
            lab.stop()
            shutil.rmtree(lab.state.root, ignore_errors=True)


def open_console(settings: Any, *, label: str = "") -> int:
    from console.kube.cluster import Cluster
    from console.kube.connection import KubeConfigError

    try:
        cluster = Cluster(settings.kubeconfig, settings.context)
    except KubeConfigError as e:
        print(f"console: {e}", file=sys.stderr)
        return 2  # a bad kubeconfig (README: exit codes)
    # the first node page is on its way while Textual and the cloud SDKs import (a second or more)
    cluster.start()
    from console.guard import Guard
    from console.infra.inventory import vm_inventory
    from console.infra.libvirt import libvirt_uris
    from console.tui.app import ConsoleApp
    from console.tui.themes import broken_theme

    theme_error = broken_theme(settings.theme)
    if theme_error:
        cluster.stop()
        print(f"console: theme {settings.theme}: {theme_error}", file=sys.stderr)
        return 2
    vms = vm_inventory(settings.cloud, libvirt_uris(settings.libvirt_uris))
    app = ConsoleApp(cluster, None, settings, vms=vms, label=label, guard=Guard.from_settings(settings))
    try:
        app.run()
    finally:
        cluster.stop()
    return app.return_code or 0  # Textual sets 1 when the app died of an exception
