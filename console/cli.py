"""Entry points: the TUI (default), `lab`, `nfd`, `scale-up`.

Each subcommand lives in its own module (`cli_lab.py`, `cli_nfd.py`) exposing
`add_parser(subparsers)` and `run(args) -> int`; they are imported lazily so
`--help` and the TUI start fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = {
    "lab": "console.cli_lab",
    "nfd": "console.cli_nfd",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="console",
        description="Terminal console for Kubernetes clusters on VMs.",
    )
    parser.add_argument("--lab", action="store_true", help="open the console on a freshly started embedded lab")
    parser.add_argument("--scenario", default="default", help="lab scenario with --lab (default: default)")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="kube context to use (default: the kubeconfig's current context)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS.values():
        importlib.import_module(module).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command:
        return importlib.import_module(SUBCOMMANDS[args.command]).run(args)
    from console.cli_tui import run_tui

    return run_tui(args)


if __name__ == "__main__":
    sys.exit(main())
