"""Themes: YAML files in `themes/` (shipped; installed as the package `console.themes`) and
`$XDG_DATA_HOME/console/themes` (the user's).

A theme file:

    name: dark
    dark: true
    colors: {primary: "#5fafff", background: "#1c1c1c", ...}   # Textual theme colours
    variables: {status-ready: "#5fd787", capacity-crit: ..., ...}  # domain colours ($status-ready in TCSS)

A broken file (unreadable, not UTF-8, not YAML, the wrong shape) is skipped with an error message (the App
shows it as a notification) and the default theme is used instead; `--theme NAME` naming a broken file
(by its file name) is a usage error before the screen opens (`broken_theme`, exit 2).
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.theme import Theme

import console
from console.bounded import InputError, Limits, load_yaml, read_capped
from console.config import xdg_data_home
from console.faults import describe

DEFAULT_THEME = "dark"
# a theme is a few dozen lines (the shipped ones are under 2 KiB): the console's own limit, far above any real one
THEME_LIMITS = Limits(max_bytes=64 * 1024, why="the console's limit for a theme file, which is a few dozen lines")
COLOR_KEYS = (
    "primary", "secondary", "warning", "error", "success", "accent",
    "foreground", "background", "surface", "panel", "boost",
)
# Domain variables every theme provides; missing ones fall back to these (derived from the theme's colours).
DOMAIN_VARIABLES: dict[str, str] = {
    "status-ready": "success",
    "status-notready": "error",
    "status-pending": "warning",
    "status-cordoned": "accent",
    "capacity-ok": "primary",
    "capacity-warn": "warning",
    "capacity-crit": "error",
    "label-nfd": "primary",
    "label-rule": "secondary",
    "label-local": "success",
    "diff-add": "success",
    "diff-remove": "error",
    "diff-change": "warning",
    "danger": "error",
    "marked": "accent",
}
FALLBACK_COLORS = {"primary": "#5fafff", "secondary": "#87afd7", "warning": "#ffd75f", "error": "#ff5f5f",
                   "success": "#5fd787", "accent": "#ffaf5f"}


class ThemeError(Exception):
    """A theme file that cannot be used; the message names the file and the problem."""


@dataclass
class ThemeSet:
    themes: dict[str, Theme] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    broken: dict[str, str] = field(default_factory=dict)  # file stem -> its error


def shipped_dir() -> Path:
    """The shipped themes: `themes/` of the source tree `console` is imported from, else the installed package
    `console.themes` (pyproject.toml maps themes/ to it)."""
    checkout = Path(console.__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "themes").is_dir():
        return checkout / "themes"  # a checkout on PYTHONPATH has no console/themes to import
    # a wheel installs them as console/themes/*.yaml, plain files: the resource is a real directory (files() of
    # `console` itself: console.themes has no __init__.py, and a namespace package's files() is no Path)
    return Path(str(importlib.resources.files("console") / "themes"))


def user_dir() -> Path:
    return xdg_data_home() / "console" / "themes"


def domain_defaults(colors: dict[str, str]) -> dict[str, str]:
    return {var: colors.get(src) or FALLBACK_COLORS[src] for var, src in DOMAIN_VARIABLES.items()}


def theme_from_dict(doc: Any, where: str) -> Theme:
    if not isinstance(doc, dict):
        raise ThemeError(f"{where}: expected a mapping with name, colors and variables")
    name = doc.get("name")
    colors = doc.get("colors") or {}
    variables = doc.get("variables") or {}
    if not isinstance(name, str) or not name:
        raise ThemeError(f"{where}: `name` is missing")
    if not isinstance(colors, dict) or not isinstance(variables, dict):
        raise ThemeError(f"{where}: `colors` and `variables` must be mappings")
    unknown = set(colors) - set(COLOR_KEYS)
    if unknown:
        raise ThemeError(f"{where}: unknown colour(s) {', '.join(sorted(unknown))} (known: {', '.join(COLOR_KEYS)})")
    if "primary" not in colors:
        raise ThemeError(f"{where}: colors.primary is required")
    from textual.color import Color, ColorParseError

    all_vars = {
        **domain_defaults({k: str(v) for k, v in colors.items()}),
        **{str(k): str(v) for k, v in variables.items()},
    }
    for key, value in [*colors.items(), *all_vars.items()]:
        try:
            Color.parse(str(value))
        except ColorParseError:
            raise ThemeError(f"{where}: {key}: {value!r} is not a colour") from None
    return Theme(
        name=name,
        dark=bool(doc.get("dark", True)),
        variables=all_vars,
        **{str(k): str(v) for k, v in colors.items()},  # type: ignore[arg-type]  # only the colour fields
    )


def load_file(path: Path) -> Theme:
    try:
        # capped, depth and alias limits (console/bounded.py); a FIFO or a device is refused, never waited on
        doc = load_yaml(read_capped(path, THEME_LIMITS), str(path), THEME_LIMITS)
    except InputError as e:
        raise ThemeError(str(e)) from e
    except (OSError, ValueError) as e:
        raise ThemeError(f"{path}: cannot read it ({describe(e)})") from e
    return theme_from_dict(doc, str(path))


def load_themes(dirs: list[Path] | None = None) -> ThemeSet:
    """Shipped themes, then the user's (which may override a shipped one by name)."""
    out = ThemeSet()
    for d in dirs if dirs is not None else [shipped_dir(), user_dir()]:
        if not d.is_dir():
            continue
        for path in sorted(d.glob("*.yaml")) + sorted(d.glob("*.yml")):
            try:
                theme = load_file(path)
            except ThemeError as e:
                out.errors.append(str(e))
                out.broken[path.stem] = str(e)
                continue
            out.themes[theme.name] = theme
    return out


def not_found(name: str, names: list[str]) -> str:
    """The one message for a theme name that is not there (`--theme`, the config, `:theme`): the console's themes
    (shipped and the user's), not every built-in Textual theme."""
    return f"theme {name!r} not found; themes: {', '.join(sorted(names))}"


def broken_theme(name: str | None, dirs: list[Path] | None = None) -> str | None:
    """The error of the theme file `name` names when that file cannot be used and no good theme has the name."""
    if not name:
        return None
    found = load_themes(dirs)
    return None if name in found.themes else found.broken.get(name)
