"""Unsaved editor changes are never dropped silently: before a screen with unsaved edits is left (back, `:`
navigation) or its buffer replaced (another file or rule, reload, new), ask with a DiscardDialog.

A screen takes part by defining `unsaved_name() -> str | None` (what has unsaved edits, None when nothing) and
`discard_unsaved() -> None` (drop them); the editor screens do (console/tui/screens/editor_base.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from console.tui.widgets.discard_dialog import DiscardDialog


def unsaved_screens(app: Any) -> list[Any]:
    """The stacked screens that hold unsaved edits, the top one first."""
    return [s for s in reversed(app.screen_stack) if callable(getattr(s, "unsaved_name", None)) and s.unsaved_name()]


def confirm_discard(app: Any, screens: list[Any], then: Callable[[], object], leaving: str = "") -> None:
    """Run `then` once the user has agreed to discard the unsaved edits of each of `screens` (none: at once);
    "keep editing" on any of them stops there and `then` never runs."""
    pending = [s for s in screens if s.unsaved_name()]
    if not pending:
        then()
        return
    screen = pending[0]

    def answered(discard: bool | None) -> None:
        if discard:
            screen.discard_unsaved()
            confirm_discard(app, pending[1:], then, leaving)

    app.push_screen(DiscardDialog(screen.unsaved_name(), leaving), answered)


def before_navigation(app: Any, then: Callable[[], object], leaving: str = "") -> None:
    """`:` navigation: ask for every stacked screen with unsaved edits (a command may pop any of them)."""
    confirm_discard(app, unsaved_screens(app), then, leaving)
