"""Entry points: the TUI (default), `lab`, `nfd`, `scale-up`.

Each subcommand lives in its own module (`cli_lab.py`, `cli_nfd.py`) exposing
`add_parser(subparsers)` and `run(args) -> int`; they are imported lazily so
`--help` and the TUI start fast.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

SUBCOMMANDS = {
    "lab": "console.cli_lab",
    "nfd": "console.cli_nfd",
    "scale-up": "console.cli_scaleup",
}


def build_parser() -> argparse.ArgumentParser:
    from console import config

    parser = argparse.ArgumentParser(
        prog="console",
        description="Terminal console for Kubernetes clusters on VMs.",
        epilog=f"config file: {config.config_path()} (YAML; precedence: defaults < file < per-context < "
        f"CONSOLE_* environment < flags)\n{config.__doc__.split(chr(10), 2)[2]}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--lab", action="store_true", help="open the console on a freshly started embedded lab")
    parser.add_argument("--scenario", default="default", help="lab scenario with --lab (default: default)")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="kube context to use (default: the kubeconfig's current context)")
    parser.add_argument(
        "--theme", help="colour theme: dark, light, high-contrast or one in $XDG_DATA_HOME/console/themes"
    )
    parser.add_argument(
        "--read-only", action="store_true", default=None, help="hide every action that changes something"
    )
    parser.add_argument("--nfd-version", help="NFD version to assume for label naming (default: detected)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS.values():
        importlib.import_module(module).add_parser(sub)
    return parser


def stdout_closed() -> None:
    """The reader of stdout went away (`console ... | head`): point stdout at /dev/null so the interpreter's
    final flush does not fail either (https://docs.python.org/3/library/signal.html#note-on-sigpipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def config_error(args: argparse.Namespace, error: Exception) -> int:
    """A bad setting (console.config.ConfigError): one line on stderr, with -o json the error object, exit 2."""
    print(f"console: {error}", file=sys.stderr)
    if getattr(args, "output", None) == "json":
        print(json.dumps({"status": "error", "error": "bad-config", "message": str(error), "exit_code": 2}))
    return 2


def main(argv: list[str] | None = None) -> int:
    from console.config import ConfigError

    args = build_parser().parse_args(argv)
    try:
        if args.command:
            code = importlib.import_module(SUBCOMMANDS[args.command]).run(args)
        else:
            from console.cli_tui import run_tui

            code = run_tui(args)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()
        return 1  # what Python itself exits with on EPIPE
    except ConfigError as e:  # from any subcommand: settings are resolved before anything is done
        return config_error(args, e)
    return code


if __name__ == "__main__":
    sys.exit(main())
