"""Two nodes' labels side by side; differences highlighted."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header, Static

from console.kube.nodelabels import label_group
from console.nfd.labels import FEATURE_NS
from console.tui.messages import ClusterView
from console.tui.screens.base import ConsoleScreen
from console.tui.widgets.cells import theme_colors
from console.tui.widgets.table import Column, VirtualTable


def compare_rows(a: dict[str, str], b: dict[str, str], only_diff: bool) -> list[tuple[str, str | None, str | None]]:
    """(key, value on a, value on b) for the union of keys; None when the node lacks it."""
    out = []
    for key in sorted(set(a) | set(b), key=lambda k: (label_group(k), k)):
        va, vb = a.get(key), b.get(key)
        if only_diff and va == vb:
            continue
        out.append((key, va, vb))
    return out


class CompareScreen(ConsoleScreen):
    HELP = "Labels of two nodes side by side: only-on-one in add/remove colours, different values highlighted."
    DEFAULT_CSS = "CompareScreen #compare-table { height: 1fr; }"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "toggle_diff", "Only differences", id="compare-diff"),
        Binding("x", "swap", "Swap", show=False, id="compare-swap"),
    ]

    def __init__(self, a: str, b: str) -> None:
        super().__init__()
        self.a, self.b = a, b
        self.only_diff = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="compare-status", classes="status-line")
        yield VirtualTable(self._columns(), empty_text="no labels", id="compare-table")
        yield Footer()

    def _columns(self) -> list[Column]:
        # all three flex: a wide terminal shows long values (kernel-version.full, os_release) whole, not only keys
        return [Column("key", f"LABEL ({FEATURE_NS}/ omitted)", 30, flex=True), Column("a", self.a, 14, flex=True),
                Column("b", self.b, 14, flex=True)]

    def on_mount(self) -> None:
        self.ready = True
        self.query_one(VirtualTable).focus()
        self.view_changed(self.app.view)

    def view_changed(self, view: ClusterView) -> None:
        if not self.ready:
            return
        na, nb = view.snapshot.nodes.get(self.a), view.snapshot.nodes.get(self.b)
        if na is None or nb is None:
            self.query_one("#compare-status", Static).update(f"{self.a if na is None else self.b} is gone")
            return
        c = theme_colors(self.app)
        rows = compare_rows(na.labels, nb.labels, self.only_diff)
        keys, cells = [], []
        for key, va, vb in rows:
            style = "" if va == vb else c.get("diff-change", "yellow")
            ta = Text("—", style=c.get("diff-remove", "red")) if va is None else Text(va or '""', style=style)
            tb = Text("—", style=c.get("diff-remove", "red")) if vb is None else Text(vb or '""', style=style)
            keys.append(key)
            shown = key.removeprefix(FEATURE_NS + "/")
            cells.append((Text(shown, style="" if va == vb else "bold"), ta, tb))
        table = self.query_one(VirtualTable)
        table.set_rows(keys, cells)
        differ = sum(1 for _, va, vb in rows if va != vb)
        only_a = sum(1 for _, va, vb in rows if vb is None)
        only_b = sum(1 for _, va, vb in rows if va is None)
        self.query_one("#compare-status", Static).update(
            f"{self.a} vs {self.b}: {differ} differ ({only_a} only on {self.a}, {only_b} only on {self.b})"
            + (" · showing differences" if self.only_diff else "")
        )

    def action_toggle_diff(self) -> None:
        self.only_diff = not self.only_diff
        self.view_changed(self.app.view)

    def action_swap(self) -> None:
        self.a, self.b = self.b, self.a
        self.query_one(VirtualTable).set_columns(self._columns())
        self.view_changed(self.app.view)
