"""A table that renders only its visible rows (Textual's line API), for thousands of nodes.

Rows are (key, cells) with cells as str or rich Text; the screen computes them from a
snapshot and calls `set_rows` at a steady cadence. Columns have a priority: when the widget is
narrow, columns are dropped in priority order (highest number first) so the important ones stay
readable, and a note line under the rows says so (`+3 columns: widen or press w`); `w` shows every
column (wide mode, scrolled with ←/→). Flex columns share the width left over (the text people read).
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


@dataclass(frozen=True)
class Layout:
    """Which columns show and how wide: (index in columns, column, width) each; what was dropped."""

    shown: tuple[tuple[int, Column, int], ...]
    hidden: tuple[Column, ...]
    width: int  # of a whole line (wider than the widget in wide mode)


def layout(columns: Sequence[Column], width: int, *, wide: bool = False) -> Layout:
    """Columns by priority (then position) while they fit, stopping at the first that does not: a dropped
    column never leaves a less important one shown. Wide: all of them. The width left over goes to the
    flex columns (shared, the first ones take the remainder), or to the first column if none is flex."""
    order = sorted(range(len(columns)), key=lambda i: (columns[i].priority, i))
    chosen: list[int] = []
    used = 0
    for i in order:
        need = columns[i].width + (1 if chosen else 0)
        if not wide and columns[i].priority and used + need > width:
            break
        chosen.append(i)
        used += need
    chosen.sort()
    hidden = tuple(c for i, c in enumerate(columns) if i not in chosen)
    extra = max(width - used, 0)
    flex = [i for i in chosen if columns[i].flex] or chosen[:1]
    share = {i: extra // len(flex) + (1 if n < extra % len(flex) else 0) for n, i in enumerate(flex)} if flex else {}
    shown = tuple((i, columns[i], columns[i].width + share.get(i, 0)) for i in chosen)
    return Layout(shown, hidden, max(used, width))


class VirtualTable(ScrollView, can_focus=True):
    """Cursor with ↑/↓/pgup/pgdn/home/end (or j/k/g/G), enter or double click selects; w shows every column."""

    DEFAULT_CSS = """
    VirtualTable { height: 1fr; scrollbar-size-vertical: 1; scrollbar-size-horizontal: 1; }
    VirtualTable > .virtual-table--header { text-style: bold; color: $primary; background: $panel; }
    VirtualTable > .virtual-table--cursor { background: $primary 30%; text-style: bold; }
    VirtualTable:focus > .virtual-table--cursor { background: $primary 45%; }
    VirtualTable > .virtual-table--marked { color: $marked; text-style: bold; }
    VirtualTable > .virtual-table--empty { color: $text-muted; }
    VirtualTable > .virtual-table--note { color: $text-muted; background: $panel; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "virtual-table--header", "virtual-table--cursor", "virtual-table--marked", "virtual-table--empty",
        "virtual-table--note",
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False, id="table-up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id="table-down"),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False, id="table-page-up"),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False, id="table-page-down"),
        Binding("home,g", "jump(0)", "First row", show=False, id="table-first"),
        Binding("end,G", "jump(-1)", "Last row", show=False, id="table-last"),
        Binding("enter", "select", "Open", show=False, id="table-open"),
        Binding("w", "toggle_wide", "Wide: all columns", show=False, id="table-wide"),
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
        self.legend = ""  # the screen's legend of its markers, on the note line while it shows
        self.wide = False  # every column, scrolled horizontally
        self._layout_: Layout = Layout((), (), 0)
        self._layout_key: tuple[int, bool] | None = None

    # -- data ----------------------------------------------------------
    def set_columns(self, columns: Sequence[Column]) -> None:
        self.columns = list(columns)
        self._layout_key = None
        self._resize_virtual()
        self.refresh()

    def set_rows(self, keys: list[str], cells: Sequence[Sequence[Cell]]) -> None:
        """Replace all rows, keeping the cursor on the same key when it is still there."""
        current = self.cursor_key
        self.keys, self.cells = keys, cells
        self._resize_virtual()
        if current is not None and current in keys:
            index = keys.index(current) if len(keys) < 50_000 else min(self.cursor, len(keys) - 1)
        else:
            index = min(self.cursor, max(len(keys) - 1, 0))
        self.cursor = index
        self._scroll_to_cursor()
        self.refresh()

    def set_legend(self, legend: str) -> None:
        if legend != self.legend:
            self.legend = legend
            self._resize_virtual()
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
        return [c for _, c, _ in self._layout().shown]

    @property
    def hidden_columns(self) -> list[Column]:
        return list(self._layout().hidden)

    @property
    def note(self) -> str:
        """The line under the rows: what is hidden and how to see it, then the screen's legend."""
        lay = self._layout()
        parts = []
        if lay.hidden:
            n = len(lay.hidden)
            parts.append(f"+{n} column{'s' if n > 1 else ''}: widen or press w")
        elif self.wide and lay.width > self._width():
            parts.append("wide: ←/→ scroll · w: fit")
        if self.legend:
            parts.append(self.legend)
        return " · ".join(parts)

    # -- layout & rendering ---------------------------------------------
    def _width(self) -> int:
        return self.scrollable_content_region.width or self.size.width

    def _layout(self) -> Layout:
        key = (self._width(), self.wide)
        if key != self._layout_key:
            self._layout_key = key
            self._layout_ = layout(self.columns, key[0], wide=self.wide)
        return self._layout_

    def _resize_virtual(self) -> None:
        lay = self._layout()
        self.virtual_size = Size(lay.width if self.wide else self._width(), len(self.keys) + 1 + self._note_lines())

    def _note_lines(self) -> int:
        return 1 if self.note else 0

    def _rows_visible(self) -> int:
        return max(self.scrollable_content_region.height - 1 - self._note_lines(), 1)

    def _cell_text(self, cell: Cell, width: int, right: bool) -> Text:
        text = cell.copy() if isinstance(cell, Text) else Text(str(cell))
        text.truncate(width, overflow="ellipsis")
        if right:
            text.align("right", width)
        else:
            text.pad_right(width - text.cell_len)
        return text

    def _line(self, cells: Sequence[Cell] | None, style: Style) -> Strip:
        lay = self._layout()
        line = Text(no_wrap=True, end="")
        for n, (i, col, w) in enumerate(lay.shown):
            if n:
                line.append(" ")
            if cells is None:
                line.append_text(self._cell_text(col.label, w, col.right))
            else:
                line.append_text(self._cell_text(cells[i] if i < len(cells) else "", w, col.right))
        # Text.render drops its own style when it has no spans: the style goes on every segment here, so no
        # cell is left on the terminal's default background (ESC[49m)
        strip = Strip(list(line.render(self.app.console))).apply_style(style)
        width = self._width()
        x = self.scroll_offset.x if self.wide else 0
        return strip.crop_extend(x, x + width, style)

    def render_line(self, y: int) -> Strip:
        self._layout()
        base = self.rich_style
        width = self.size.width
        note = self.note
        if note and y == self.scrollable_content_region.height - 1:
            style = base + self.get_component_rich_style("virtual-table--note")
            return Strip([Segment(note, style)]).adjust_cell_length(width, style).crop(0, width)
        if y == 0:
            return self._line(None, base + self.get_component_rich_style("virtual-table--header"))
        row = self.scroll_offset.y + y - 1
        if not self.keys:
            if y == 1:
                style = base + self.get_component_rich_style("virtual-table--empty")
                return Strip([Segment(self.empty_text, style)]).adjust_cell_length(width, style)
            return Strip.blank(width, base)
        if row >= len(self.keys):
            return Strip.blank(width, base)
        style = base
        if self.keys[row] in self.marked:
            style = style + self.get_component_rich_style("virtual-table--marked")
        if row == self.cursor:
            style = style + self.get_component_rich_style("virtual-table--cursor")
        return self._line(self.cells[row], style)

    def on_resize(self, event: events.Resize) -> None:
        self._layout_key = None
        self._resize_virtual()

    def action_toggle_wide(self) -> None:
        self.wide = not self.wide
        self._layout_key = None
        self._resize_virtual()
        if not self.wide:
            self.scroll_to(x=0, animate=False)
        self.refresh()

    # -- cursor ---------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        self.post_message(self.Highlighted(self, self.cursor_key))

    def _scroll_to_cursor(self) -> None:
        rows_visible = self._rows_visible()
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
        self.action_cursor(direction * max(self._rows_visible() - 1, 1))

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
        if 1 <= event.y <= self._rows_visible() and 0 <= row < len(self.keys):
            self.cursor = row
            if event.chain >= 2:
                self.action_select()
