"""The save-conflict dialog: someone else changed the object; show their version vs ours and ask."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from console.tui.widgets.diff import DiffView


class ConflictDialog(ModalScreen[str]):
    """Dismisses with "reload" (take theirs), "overwrite" (keep mine) or "cancel"."""

    DEFAULT_CSS = """
    ConflictDialog { align: center middle; }
    ConflictDialog #conflict-box {
        width: 95%; max-width: 120; height: 90%; border: thick $warning; background: $surface; padding: 0 1;
    }
    ConflictDialog Label { width: 1fr; }  /* long messages wrap instead of being cut */
    ConflictDialog #conflict-title { text-style: bold; color: $warning; }
    ConflictDialog #conflict-diff { height: 1fr; border: round $panel; }
    ConflictDialog #conflict-buttons { height: 3; align-horizontal: right; }
    ConflictDialog Button { margin-left: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "choose('reload')", "Reload theirs", id="conflict-reload"),
        Binding("o", "choose('overwrite')", "Overwrite with mine", id="conflict-overwrite"),
        Binding("v", "toggle_mode", "Split/unified", id="conflict-diff-mode"),
        Binding("escape", "choose('cancel')", "Cancel", id="conflict-cancel"),
    ]

    def __init__(self, message: str, theirs: str, mine: str) -> None:
        super().__init__()
        self.message = message
        self.theirs = theirs
        self.mine = mine

    def compose(self) -> ComposeResult:
        with Vertical(id="conflict-box"):
            yield Label(f"Conflict: {self.message}", id="conflict-title", markup=False)
            yield Label("Their current version (-) vs your edit (+). r: reload theirs (your edit is lost), "
                        "o: overwrite with yours, esc: keep editing.", markup=False)
            with VerticalScroll(id="conflict-diff"):
                yield DiffView(id="conflict-diffview")
            with Horizontal(id="conflict-buttons"):
                yield Button("Cancel", id="conflict-cancel")
                yield Button("Reload theirs", id="conflict-reload")
                yield Button("Overwrite with mine", id="conflict-overwrite", variant="error")

    def on_mount(self) -> None:
        self.query_one(DiffView).show(self.theirs, self.mine, "theirs (current)", "yours")
        self.query_one("#conflict-cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss((event.button.id or "conflict-cancel").removeprefix("conflict-"))

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)

    def action_toggle_mode(self) -> None:
        self.query_one(DiffView).toggle_mode()
