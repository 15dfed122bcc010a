"""What a user sees: the plain text of every line of the app's current screen (modals over their background)."""

from __future__ import annotations

from typing import Any


def screen_lines(app: Any) -> list[str]:
    """The screen as rendered now, one string per terminal row (what tmux capture-pane would show)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def screen_text(app: Any) -> str:
    return "\n".join(screen_lines(app))


def region_text(app: Any, widget: Any) -> str:
    """The words a widget shows on screen (its content region, rows joined by spaces): what was cut is missing."""
    r = widget.content_region
    lines = screen_lines(app)[r.y:r.y + r.height]
    return " ".join(" ".join(line[r.x:r.x + r.width].split()) for line in lines).strip()
