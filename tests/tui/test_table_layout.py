"""The generic table's layout (console/tui/widgets/table.py): columns drop in their stated priority order and
the table says so, `w` shows them all (scrolled), flex columns take the width left over, every cell is drawn on
the theme's background. No cluster: a bare App with the console's themes (tests/support/tuitools.Host)."""

from __future__ import annotations

from typing import Any

import pytest
from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from tuitools import Host

from console.config import Settings
from console.tui.themes import load_themes
from console.tui.widgets.table import Column, VirtualTable, layout

COLUMNS = [
    Column("name", "NAME", 10),
    Column("why", "WHY", 20, flex=True),
    Column("a", "A", 10, priority=1),
    Column("b", "B", 30, priority=2),  # too wide at 60: C (priority 3) must not show while B is dropped
    Column("c", "C", 3, priority=3),
]


def test_columns_drop_in_priority_order_never_skipping_one() -> None:
    """Before: the layout skipped a wide column and kept a less important narrow one (C shown, B dropped)."""
    lay = layout(COLUMNS, 60)
    assert [c.key for _, c, _ in lay.shown] == ["name", "why", "a"]
    assert [c.key for c in lay.hidden] == ["b", "c"]


def test_flex_columns_take_the_width_left_over() -> None:
    """Before: the first column took all the extra width, whatever `flex` said (Column.flex had no semantics)."""
    widths = {c.key: w for _, c, w in layout(COLUMNS, 60).shown}
    assert widths == {"name": 10, "why": 20 + (60 - 42), "a": 10}
    two = [Column("k", "K", 10), Column("x", "X", 5, flex=True), Column("y", "Y", 5, flex=True)]
    assert [w for _, _, w in layout(two, 33).shown] == [10, 5 + 6, 5 + 5]  # 11 extra: shared, remainder first
    plain = [Column("k", "K", 10), Column("v", "V", 5)]
    assert [w for _, _, w in layout(plain, 30).shown] == [24, 5]  # no flex column: the first one


def test_wide_layout_shows_every_column_wider_than_the_widget() -> None:
    lay = layout(COLUMNS, 60, wide=True)
    assert [c.key for _, c, _ in lay.shown] == ["name", "why", "a", "b", "c"] and not lay.hidden
    assert lay.width == 10 + 20 + 10 + 30 + 3 + 4


class TableScreen(Screen[None]):
    def compose(self) -> ComposeResult:
        yield VirtualTable(COLUMNS, empty_text="nothing here", id="t")

    def on_mount(self) -> None:
        table = self.query_one(VirtualTable)
        table.set_rows([f"r{i}" for i in range(40)],
                       [(f"row{i}", Text("why", style="bold"), "a", "b" * 30, "c") for i in range(40)])
        table.focus()


def lines(app: Any) -> list[str]:
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


async def test_the_table_says_what_it_hides_and_w_shows_it_scrolled() -> None:
    """Before: columns vanished with no word; there was no way to see them but a wider terminal."""
    app = Host(TableScreen(), Settings())
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(VirtualTable)
        shown = lines(app)
        assert shown[0].startswith("NAME") and " B " not in shown[0]
        assert shown[-1].startswith("+2 columns: widen or press w")  # the note line under the rows
        assert [c.key for c in table.hidden_columns] == ["b", "c"]
        await pilot.press("w")
        assert table.wide and not table.hidden_columns
        assert "wide: ←/→ scroll" in lines(app)[-2]  # the last line is the horizontal scrollbar now
        await pilot.press("end")  # the cursor on the last row stays above the note line
        assert table.cursor == 39 and "row39" in "".join(lines(app))
        await pilot.press("right", "right", "right", "right", "right")
        assert table.scroll_offset.x > 0 and not lines(app)[0].startswith("NAME")  # the header scrolls too
        await pilot.press("w")
        assert not table.wide and table.scroll_offset.x == 0 and lines(app)[0].startswith("NAME")


@pytest.mark.parametrize("theme", sorted(load_themes().themes))
async def test_every_cell_of_the_table_has_the_themes_background(theme: str) -> None:
    """Before: rows and the header whose cells had no colour span were rendered with no style at all (rich's
    Text.render drops its base style without spans): ESC[49m, the terminal's default background."""

    class Themed(Host):
        def on_mount(self) -> None:
            super().on_mount()
            self.theme = theme

    app = Themed(TableScreen(), Settings())
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        for y, strip in enumerate(app.screen._compositor.render_strips()):
            for seg in strip:
                assert seg.style is not None and seg.style.bgcolor is not None, (theme, y, seg.text)
