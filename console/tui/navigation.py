"""What each `:` command does: which screen to show (shared by the command bar and the palette)."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen

from console.tui.command_grammar import Command
from console.tui.scaleup_start import lazy_screen, start_scale_up


def to_root(app: Any) -> None:
    while len(app.screen_stack) > 1:
        app.pop_screen()


def show(app: Any, screen_type: type[Screen[Any]], *args: Any) -> None:
    """Push a screen, replacing the current one when it is of the same type (no deep stacks)."""
    if type(app.screen) is screen_type and screen_type.__name__ in ("PendingScreen", "HooksScreen", "RulesScreen"):
        return
    if type(app.screen) is screen_type:
        app.pop_screen()
    app.push_screen(screen_type(*args))


def run(app: Any, cmd: Command) -> None:
    from console.tui.screens.node import NodeDetailScreen
    from console.tui.screens.pending import PendingScreen

    name = cmd.name
    if name == "nodes":
        to_root(app)
    elif name == "node":
        if cmd.arg not in app.view.snapshot.nodes:
            app.notify(f"no node named {cmd.arg!r}; :nodes lists them", severity="warning")
            return
        show(app, NodeDetailScreen, cmd.arg)
    elif name == "pending":
        show(app, PendingScreen)
    elif name in ("hooks", "rules"):
        show(app, lazy_screen(name), app.gateways, app.settings)
    elif name == "scale-up":
        start_scale_up(app, cmd.arg)
    elif name == "ctx":
        if cmd.arg:
            app.switch_context(cmd.arg)
        else:
            app.list_contexts()
    elif name == "theme":
        if not cmd.arg:
            app.search_themes()
        elif cmd.arg in app.available_themes:
            app.theme = cmd.arg
        else:
            app.notify(f"no theme {cmd.arg!r}; themes: {', '.join(sorted(app.available_themes))}", severity="warning")
    elif name == "help":
        app.action_help()
    elif name == "quit":
        app.exit()
