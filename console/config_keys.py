"""The config file's keys as a Markdown table, generated from the settings definition (console/config_schema.py:
names, types, choices and descriptions; console/config.py Settings: defaults), so the README cannot drift from
what the file accepts. `python -m console config keys` prints it; a test compares it with the README.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from console import config, config_schema


def _value(annotation: Any) -> str:
    """What a key takes, in a reader's words."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return _value(args[0])
    if typing.get_origin(annotation) is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in typing.get_args(annotation))
    if annotation is config_schema.StrictBool:
        return "`true` \\| `false`"
    origin = typing.get_origin(annotation)
    if origin is list:
        (item,) = typing.get_args(annotation)
        return "list of tolerations" if item is config_schema.Toleration else "list of strings"
    if origin is dict:
        (_, item) = typing.get_args(annotation)
        if item is float:
            return "mapping of name to number"
        return "mapping of context name to keys" if item is not config_schema.StrictStr else "mapping"
    if annotation is config_schema.PlanKeys:
        return "mapping"
    if annotation is float:
        return "number"
    if annotation is config_schema.StrictInt:
        return "whole number"
    return "string"


def _default(name: str, defaults: dict[str, Any]) -> str:
    value = defaults.get(name)
    if dataclasses.is_dataclass(value):
        return "–"  # a mapping of keys: each has its own row
    if value is None or value in ((), {}):
        return "–"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def _cells() -> list[tuple[str, str, str, str]]:
    """(key, value, default, meaning) of each key of config.yaml, in the schema's order, as Markdown cells."""
    defaults = {f.name: getattr(config.Settings(), f.name) for f in dataclasses.fields(config.Settings)}
    out = []
    for name, field in config_schema.FileSettings.model_fields.items():
        meaning = (field.description or "").replace("|", "\\|")
        out.append((f"`{name}`", _value(field.annotation), _default(name, defaults), meaning))
        if name == "plan":  # its keys, one row each
            plan = {f.name: getattr(config.PlanSettings(), f.name) for f in dataclasses.fields(config.PlanSettings)}
            for key, sub in config_schema.PlanKeys.model_fields.items():
                text = (sub.description or "").replace("|", "\\|")
                out.append((f"`plan.{key}`", _value(sub.annotation), _default(key, plan), text))
    return out


def keys_rows() -> list[dict[str, str | None]]:
    """The keys as `config keys -o json` gives them: the table's cells as plain text (no default: null)."""
    def plain(cell: str) -> str:
        return cell.replace("\\|", "|").replace("`", "")

    return [{"key": plain(k), "value": plain(v), "default": None if d == "–" else plain(d), "meaning": plain(m)}
            for k, v, d, m in _cells()]


def keys_markdown() -> str:
    """The keys section's text: one row per key of config.yaml, in the schema's order."""
    per_context = set(config_schema.ContextSettings.model_fields)
    top_only = [k for k in config_schema.FileSettings.model_fields if k not in per_context]
    rows = ["| key | value | default | meaning |", "|---|---|---|---|"]
    rows += [f"| {k} | {v} | {d} | {m} |" for k, v, d, m in _cells()]
    tail = (f"Every key but {', '.join(f'`{k}`' for k in top_only)} can be set per context under "
            "`contexts: {NAME: {...}}`; every key but `contexts` also as the environment variable "
            "`CONSOLE_<KEY>` (upper case, e.g. `CONSOLE_READ_ONLY=true`; lists as `a,b`, node_debug_tolerations, "
            "key_overrides and plan as YAML).")
    return "\n".join(rows) + "\n\n" + tail + "\n"
