"""Opening the TUI: on the current kube context, or on a freshly started lab (`--lab`)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "kubeconfig": args.kubeconfig,
        "context": args.context,
        "theme": getattr(args, "theme", None),
        "read_only": getattr(args, "read_only", None),
        "nfd_version": getattr(args, "nfd_version", None),
    }


def run_tui(args: argparse.Namespace) -> int:
    """The console on the settings' context, or on a new lab with --lab. A bad setting (ConfigError) is left to
    cli.main, which makes it one line and exit 2: raised here before any lab, connection or screen."""
    from console.config import load

    settings = load(_flags(args))
    lab = None
    label = ""
    if args.lab:
        from console.labdeps import refuse_without_lab

        if (refused := refuse_without_lab()) is not None:  # the TUI prints no JSON: one line
            return refused
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
        return open_console(settings, label=label)  # a ConfigError: the file changed while the lab started
    finally:
        if lab is not None:
            lab.stop()
            shutil.rmtree(lab.state.root, ignore_errors=True)


def suspended_runner(app: Any) -> Callable[[Callable[[], T]], T]:
    """Run `fn` (an exec plugin that reads the terminal) with the TUI suspended, from a worker/watch thread:
    the App gives the terminal back (App.suspend) and takes it again when `fn` returns."""
    import threading

    def run_suspended(fn: Callable[[], T]) -> T:
        from textual.app import SuspendNotSupported

        from console.kube.execauth import ExecPluginError

        try:
            with app.suspend():
                return fn()
        except SuspendNotSupported as e:  # e.g. a web or headless driver: never prompt under the TUI
            raise ExecPluginError("an exec plugin needs the terminal and this TUI cannot hand it over (its "
                                  "driver cannot suspend): log in with kubectl first, then retry") from e

    def runner(fn: Callable[[], T]) -> T:
        if not app.is_running:
            return fn()  # the App is not drawing (before run, after exit): the terminal is free
        if threading.current_thread() is threading.main_thread():
            return run_suspended(fn)  # on the App's own loop
        result: T = app.call_from_thread(run_suspended, fn)
        return result

    return runner


def open_console(settings: Any, *, label: str = "") -> int:
    from console.gateways import Gateways, vm_inventory_for
    from console.kube.connection import KubeConfigError
    from console.kube.execauth import terminal_owner

    try:
        gateways = Gateways.connect(settings, vms=vm_inventory_for(settings), label=label)
    except KubeConfigError as e:  # a bad kubeconfig: 2; an exec plugin that could not log in: 6 (README)
        from console.faults import EXIT_BAD_FILE, classify

        fault = classify(e)
        print(f"console: {fault.message if fault else e}", file=sys.stderr)
        return fault.exit_code if fault else EXIT_BAD_FILE
    gateways.start()  # the first node page is on its way while Textual and the cloud SDKs import
    from console.tui.themes import broken_theme

    theme_error = broken_theme(settings.theme)
    if theme_error:
        gateways.stop()
        print(f"console: theme {settings.theme}: {theme_error}", file=sys.stderr)
        return 2
    from console.tui.app import ConsoleApp

    app = ConsoleApp(gateways)
    try:
        with terminal_owner(suspended_runner(app)):  # an interactive exec plugin prompts with the TUI suspended
            app.run()
    finally:
        app.gateways.stop()  # the bundle in use at the end (a context switch replaced the first one)
    return app.return_code or 0  # Textual sets 1 when the app died of an exception
