"""Ask before unsaved editor changes are dropped: `Discard unsaved changes to NAME?` (d: discard, esc/k: keep)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class DiscardDialog(ModalScreen[bool]):
    """Dismisses with True (discard the edits) or False (keep editing, the default)."""

    DEFAULT_CSS = """
    DiscardDialog { align: center middle; }
    DiscardDialog #discard-box {
        width: 90%; max-width: 72; height: auto; border: thick $warning; background: $surface; padding: 0 1;
    }
    DiscardDialog #discard-title { text-style: bold; color: $warning; }
    DiscardDialog #discard-buttons { height: 3; align-horizontal: right; }
    DiscardDialog Button { margin-left: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "choose(True)", "Discard", id="discard-discard"),
        Binding("escape,k", "choose(False)", "Keep editing", id="discard-keep"),
    ]

    def __init__(self, name: str, leaving: str = "") -> None:
        super().__init__()
        self.name_shown = name
        self.leaving = leaving  # what the user asked for, e.g. "open rack" (shown under the question)

    def compose(self) -> ComposeResult:
        with Vertical(id="discard-box"):
            yield Static(f"Discard unsaved changes to {self.name_shown}?", id="discard-title", markup=False)
            why = f"To {self.leaving}, the edits go. " if self.leaving else ""
            yield Static(f"{why}d: discard them · esc or k: keep editing", id="discard-hint", markup=False)
            with Horizontal(id="discard-buttons"):
                yield Button("Keep editing", id="discard-keep")
                yield Button("Discard", id="discard-discard", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#discard-keep", Button).focus()  # enter keeps the edits: discarding needs `d` or a click

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "discard-discard")

    def action_choose(self, discard: bool) -> None:
        self.dismiss(discard)
