"""A RichLog that re-wraps its lines when its width changes.

RichLog wraps a line once, when it is written, and never narrower than its min_width (78 by
default); in a narrower pane, or after a resize (terminal, or the scale-up screen switching
between its narrow and wide layouts), lines were cut at the edge. This one wraps at the pane's
width and keeps the plain-text entries to write them again when that width changes.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from textual.events import Resize
from textual.widgets import RichLog


class ReflowLog(RichLog):
    DEFAULT_CSS = """
    ReflowLog { scrollbar-gutter: stable; overflow-x: hidden; }
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_width", 1)  # RichLog's default (78) wraps at 78 columns even in a narrower pane
        super().__init__(*args, **kwargs)
        self._entries: deque[str] = deque(maxlen=self.max_lines)
        self._wrapped_at = 0

    @property
    def entries(self) -> list[str]:
        """The entries written so far (also while the log is closed, when RichLog defers rendering them)."""
        return list(self._entries)

    def add(self, text: str) -> None:
        """Append one entry (plain text; wrapped to the current width, re-wrapped on resize)."""
        self._entries.append(text)
        self.write(text)

    def on_resize(self, event: Resize) -> None:
        width = self.scrollable_content_region.width
        if width and width != self._wrapped_at:
            if self._wrapped_at and self._entries:
                self.clear()
                for text in self._entries:
                    self.write(text, scroll_end=False)
                self.scroll_end(animate=False)
            self._wrapped_at = width
