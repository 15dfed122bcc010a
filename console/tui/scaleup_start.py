"""Opening the scale-up screen (from `:scale-up`, the nodes, node and Pending screens) and the screens loaded on
first use. Apart from navigation.py, which imports the node and Pending screens: they start a scale-up from here
without importing navigation back."""

from __future__ import annotations

import importlib
from typing import Any

from textual.screen import Screen

# screens imported on first use, so start-up does not load the editors and the runbook engine
LAZY_SCREENS = {
    "hooks": ("console.tui.screens.hooks", "HooksScreen"),
    "rules": ("console.tui.screens.rules", "RulesScreen"),
    "scale-up": ("console.tui.screens.scaleup", "ScaleUpScreen"),
}


def lazy_screen(name: str) -> type[Screen[Any]]:
    module, cls = LAZY_SCREENS[name]
    return getattr(importlib.import_module(module), cls)


def start_scale_up(app: Any, node: str, pod: Any = None) -> None:
    """The scale-up screen when it exists, else the plan (FitAdvice) in a modal."""
    from console.tui.safety import is_read_only, why_disabled

    if is_read_only(app):
        app.notify("read-only mode: scale-up is disabled (--read-only, CONSOLE_READ_ONLY, or read_only in the "
                   "config for this context)", severity="warning")
        return
    why = why_disabled(app, "scale_up")  # `:scale-up` from the command bar: the same answer as the `s` key
    if why:
        app.notify(why, title="Scale up: not allowed", severity="warning", timeout=8)
        return
    if node not in app.view.snapshot.nodes:
        app.notify(f"no node named {node!r}", severity="warning")
        return
    app.push_screen(lazy_screen("scale-up")(node, pod))
