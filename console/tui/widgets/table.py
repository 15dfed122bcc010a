"""A table that renders only its visible rows (Textual's line API), for thousands of nodes.

Rows are (key, cells) with cells as str or rich Text; the screen computes them from a
snapshot and calls `set_rows` at a steady cadence. Columns have a priority: when the widget is
narrow, the lowest-priority columns are dropped so the important ones stay readable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

Cell = str | Text


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int
    priority: int = 0  # 0 is always shown; higher numbers are dropped first when narrow
    right: bool = False
    flex: bool = False  # takes the width left over (shared among flex columns); the first column if none is flex


class VirtualTable(ScrollView, can_focus=True):
    """Cursor with ↑/↓/pgup/pgdn/home/end (or j/k/g/G), enter or double click selects."""

    DEFAULT_CSS = """
    VirtualTable { height: 1fr; scrollbar-size-vertical: 1; }
    VirtualTable > .virtual-table--header { text-style: bold; color: $primary; background: $panel; }
    VirtualTable > .virtual-table--cursor { background: $primary 30%; text-style: bold; }
    VirtualTable:focus > .virtual-table--cursor { background: $primary 45%; }
    VirtualTable > .virtual-table--marked { color: $marked; text-style: bold; }
    VirtualTable > .virtual-table--empty { color: $text-muted; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "virtual-table--header", "virtual-table--cursor", "virtual-table--marked", "virtual-table--empty",
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False, id="table-up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id="table-down"),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False, id="table-page-up"),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False, id="table-page-down"),
        Binding("home,g", "jump(0)", "First row", show=False, id="table-first"),
        Binding("end,G", "jump(-1)", "Last row", show=False, id="table-last"),
        Binding("enter", "select", "Open", show=False, id="table-open"),
    ]

    cursor = reactive(0, always_update=True, repaint=False)

    class Highlighted(Message):
        def __init__(self, table: VirtualTable, key: str | None) -> None:
            super().__init__()
            self.table = table
            self.key = key

    class Selected(Message):
        def __init__(self, table: VirtualTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

    def __init__(self, columns: Sequence[Column], *, empty_text: str = "Loading…", id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns = list(columns)
        self.keys: list[str] = []
        self.cells: Sequence[Sequence[Cell]] = []
        self.marked: set[str] = set()
        self.empty_text = empty_text
        self._visible_cols: list[tuple[int, Column, int]] = []
        self._layout_width = -1

    # -- data ----------------------------------------------------------
    def set_columns(self, columns: Sequence[Column]) -> None:
        self.columns = list(columns)
        self._layout_width = -1
        self.refresh()

    def set_rows(self, keys: list[str], cells: Sequence[Sequence[Cell]]) -> None:
        """Replace all rows, keeping the cursor on the same key when it is still there."""
        current = self.cursor_key
        self.keys, self.cells = keys, cells
        self.virtual_size = Size(self.size.width, len(keys) + 1)
        if current is not None and current in keys:
            index = keys.index(current) if len(keys) < 50_000 else min(self.cursor, len(keys) - 1)
        else:
            index = min(self.cursor, max(len(keys) - 1, 0))
        self.cursor = index
        self._scroll_to_cursor()
        self.refresh()

    @property
    def cursor_key(self) -> str | None:
        return self.keys[self.cursor] if 0 <= self.cursor < len(self.keys) else None

    def move_to(self, key: str) -> bool:
        if key in self.keys:
            self.cursor = self.keys.index(key)
            self._scroll_to_cursor()
            return True
        return False

    @property
    def visible_columns(self) -> list[Column]:
        self._layout()
        return [c for _, c, _ in self._visible_cols]

    # -- layout & rendering ---------------------------------------------
    def _layout(self) -> None:
        width = self.scrollable_content_region.width or self.size.width
        if width == self._layout_width:
            return
        self._layout_width = width
        chosen: list[int] = []
        used = 0
        for i in sorted(range(len(self.columns)), key=lambda i: (self.columns[i].priority, i)):
            need = self.columns[i].width + (1 if chosen else 0)
            if used + need <= width or self.columns[i].priority == 0:
                chosen.append(i)
                used += need
        chosen.sort()
        # the first column (the name) takes whatever width is left over
        extra = max(width - used, 0)
        self._visible_cols = [
            (i, self.columns[i], self.columns[i].width + (extra if n == 0 else 0)) for n, i in enumerate(chosen)
        ]

    def _cell_text(self, cell: Cell, width: int, right: bool) -> Text:
        text = cell.copy() if isinstance(cell, Text) else Text(str(cell))
        text.truncate(width, overflow="ellipsis")
        if right:
            text.align("right", width)
        else:
            text.pad_right(width - text.cell_len)
        return text

    def _line(self, cells: Sequence[Cell] | None, style: Style) -> Strip:
        line = Text(style=style, no_wrap=True, end="")
        for n, (i, col, w) in enumerate(self._visible_cols):
            if n:
                line.append(" ")
            if cells is None:
                line.append_text(self._cell_text(col.label, w, col.right))
            else:
                line.append_text(self._cell_text(cells[i] if i < len(cells) else "", w, col.right))
        segments = list(line.render(self.app.console))
        width = self.scrollable_content_region.width
        return Strip(segments).adjust_cell_length(width, style)

    def render_line(self, y: int) -> Strip:
        self._layout()
        base = self.rich_style
        if y == 0:
            return self._line(None, base + self.get_component_rich_style("virtual-table--header"))
        row = self.scroll_offset.y + y - 1
        if not self.keys:
            if y == 1:
                style = base + self.get_component_rich_style("virtual-table--empty")
                return Strip([Segment(self.empty_text, style)]).adjust_cell_length(self.size.width, style)
            return Strip.blank(self.size.width, base)
        if row >= len(self.keys):
            return Strip.blank(self.size.width, base)
        style = base
        if self.keys[row] in self.marked:
            style = style + self.get_component_rich_style("virtual-table--marked")
        if row == self.cursor:
            style = style + self.get_component_rich_style("virtual-table--cursor")
        return self._line(self.cells[row], style)

    def on_resize(self, event: events.Resize) -> None:
        self._layout_width = -1
        self.virtual_size = Size(event.size.width, len(self.keys) + 1)

    # -- cursor ---------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        self.post_message(self.Highlighted(self, self.cursor_key))

    def _scroll_to_cursor(self) -> None:
        rows_visible = max(self.scrollable_content_region.height - 1, 1)
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + rows_visible:
            self.scroll_to(y=self.cursor - rows_visible + 1, animate=False)

    def action_cursor(self, delta: int) -> None:
        if self.keys:
            self.cursor = max(0, min(len(self.keys) - 1, self.cursor + delta))
            self._scroll_to_cursor()

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(self.scrollable_content_region.height - 2, 1))

    def action_jump(self, index: int) -> None:
        if self.keys:
            self.cursor = index % len(self.keys)
            self._scroll_to_cursor()

    def action_select(self) -> None:
        key = self.cursor_key
        if key is not None:
            self.post_message(self.Selected(self, key))

    def on_click(self, event: events.Click) -> None:
        row = self.scroll_offset.y + event.y - 1
        if event.y >= 1 and 0 <= row < len(self.keys):
            self.cursor = row
            if event.chain >= 2:
                self.action_select()
