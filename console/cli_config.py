"""`console config keys`: the config file's keys (name, value, default, meaning) as a Markdown table, generated
from the settings definition (console/config_keys.py); the README's "Config file" section is this text."""

from __future__ import annotations

import argparse

from console import config


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="about the config file: `config keys` lists its keys",
                       description=f"The config file: {config.config_path()} (YAML).")
    what = p.add_subparsers(dest="config_command", metavar="WHAT", required=True)
    what.add_parser("keys", help="every key of the config file: value, default, meaning (Markdown)")
    what.add_parser("path", help="where the config file is read from")


def run(args: argparse.Namespace) -> int:
    if args.config_command == "path":
        print(config.config_path())
        return 0
    from console.config_keys import keys_markdown

    print(keys_markdown(), end="")
    return 0
