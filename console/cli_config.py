"""`console config keys`: the config file's keys (name, value, default, meaning) as a Markdown table, generated
from the settings definition (console/config_keys.py); the README's "Config file" section is this text.
`console config path`: where the config file is read from. `-o json`: {"keys": [{"key", "value", "default",
"meaning"}]} / {"path"}."""

from __future__ import annotations

import argparse
import json

from console import config


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="about the config file: `config keys` lists its keys",
                       description=f"The config file: {config.config_path()} (YAML).")
    what = p.add_subparsers(dest="config_command", metavar="WHAT", required=True)
    keys = what.add_parser("keys", help="every key of the config file: value, default, meaning (Markdown)")
    path = what.add_parser("path", help="where the config file is read from")
    for q in (keys, path):
        q.add_argument("-o", "--output", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    as_json = args.output == "json"
    if args.config_command == "path":
        print(json.dumps({"path": str(config.config_path())}) if as_json else config.config_path())
        return 0
    from console.config_keys import keys_markdown, keys_rows

    print(json.dumps({"keys": keys_rows()}, indent=1) if as_json else keys_markdown(), end="\n" if as_json else "")
    return 0
