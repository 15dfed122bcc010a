"""The hooks screen's node choice: nodes marked in the node table (space / enter, a: all) or chosen by a label
selector that the file target evaluates (the API server's label selector)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work
from textual.widgets import DataTable, Input

from console.kube.nfdstore import NfdStoreError
from console.kube.selector import SelectorError, parse_selector
from console.tui.screens import hooks_view as view
from console.tui.screens.hooks_messages import NodesSelected

if TYPE_CHECKING:  # what the mixin is mixed into (HooksScreen), for the type checker
    from console.tui.screens.editor_base import EditorScreen as _Screen
else:
    _Screen = object


class NodeChoice(_Screen):
    """Mixed into HooksScreen (which provides the targets, the listings and `_fill_nodes`)."""

    if TYPE_CHECKING:  # HooksScreen's
        def _fill_nodes(self) -> None: ...

    marked: set[str]
    targets: dict[str, Any]
    listings: dict[str, Any]
    current: Any

    # a plain mixin: handlers by name, not @on (only a MessagePump class collects @on handlers)
    def _cursor_node(self) -> str | None:
        table = self.query_one("#hooks-nodes", DataTable)
        if not table.row_count:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    def action_toggle_node(self) -> None:
        node = self._cursor_node()
        if node is not None:
            self.marked ^= {node}
            self._fill_nodes()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id != "hooks-nodes":
            return
        self.marked ^= {str(event.row_key.value)}
        self._fill_nodes()

    def action_mark_all(self) -> None:
        every = {x.node for xs in self.listings.values() for x in xs if not x.error}
        self.marked = set() if self.marked >= every else every
        self._fill_nodes()

    def action_selector(self) -> None:
        self.query_one("#hooks-selector-input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "hooks-selector-input":
            return
        event.stop()
        kind = self.current.kind if self.current else "feature"
        selector = event.value.strip()
        try:  # say what is wrong here, as kubectl does, rather than send it and show the API's 400
            parse_selector(selector)
        except SelectorError as e:
            self.notify(f"invalid selector {selector!r}: {e}", title="selector", severity="error")
            return
        if kind in self.targets:
            self.select_nodes(kind, selector)

    @work(thread=True, exclusive=True, group="hooks-select", exit_on_error=False)
    def select_nodes(self, kind: str, selector: str) -> None:
        try:
            self.post_message(NodesSelected(selector, self.targets[kind].nodes(selector or None)))
        except NfdStoreError as e:
            self.post_message(NodesSelected(selector, [], str(e)))

    def on_nodes_selected(self, msg: NodesSelected) -> None:
        if msg.error:
            self.notify(msg.error, title="selector", severity="error")
            return
        self.marked = set(msg.nodes)
        self.notify(f"{len(msg.nodes)} node(s) match {msg.selector or '(all)'}: {view.named(list(msg.nodes))}")
        self._fill_nodes()
