"""What each `:` command does: which screen to show (shared by the command bar and the palette)."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen

from console.tui.command_grammar import Command
from console.tui.scaleup_start import lazy_screen, start_scale_up


def refused_leaving(app: Any) -> bool:
    """True (and said) while a screen in the stack may not be left: a run in progress would be hidden."""
    refusal = next((r for s in app.screen_stack if (r := getattr(s, "leave_refusal", lambda: "")())), "")
    if refusal:
        app.notify(refusal, severity="warning")
    return bool(refusal)


def to_root(app: Any) -> None:
    if refused_leaving(app):
        return
    while len(app.screen_stack) > 1:
        app.pop_screen()


def show(app: Any, screen_type: type[Screen[Any]], *args: Any) -> None:
    """Push a screen, replacing the current one when it is of the same type (no deep stacks); a screen that
    KEEPS_ITS_PLACE (edits, a selection) stays as it is."""
    if type(app.screen) is screen_type and getattr(screen_type, "KEEPS_ITS_PLACE", False):
        return
    if type(app.screen) is screen_type:
        app.pop_screen()
    app.push_screen(screen_type(*args))


# the commands that change screens (or the cluster): unsaved editor edits are asked about first
LEAVING = frozenset({"nodes", "node", "pending", "hooks", "rules", "scale-up", "ctx", "quit"})


def run(app: Any, cmd: Command) -> None:
    if cmd.name in LEAVING and not (cmd.name == "ctx" and not cmd.arg):
        from console.tui.unsaved import before_navigation

        before_navigation(app, lambda: _run(app, cmd), f"run :{cmd.name}")
        return
    _run(app, cmd)


def _run(app: Any, cmd: Command) -> None:
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
        if refused_leaving(app):  # a context switch closes every screen but the nodes table
            return
        if cmd.arg:
            app.switch_context(cmd.arg)
        else:
            app.list_contexts()
    elif name == "theme":
        if not cmd.arg:
            app.search_themes()
        else:
            app.switch_theme(cmd.arg)
    elif name == "help":
        app.action_help()
    elif name == "quit":
        app.request_quit()
