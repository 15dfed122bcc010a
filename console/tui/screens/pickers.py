"""Small modal pickers: the `:` command bar and the kube context picker."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from console.tui.command_grammar import COMMANDS


class CommandBar(ModalScreen[str | None]):
    """A one-line prompt at the bottom: `:nodes`, `:node NAME`, `:ctx NAME`, `:q`…"""

    CSS = """
    CommandBar { align: left bottom; background: $background 0%; }
    CommandBar #command-input { dock: bottom; height: 1; border: none; padding: 0 1; background: $panel; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="command-cancel")]

    def compose(self) -> ComposeResult:
        app: Any = self.app
        words = [f"{c} " if arg else c for c, (_, arg, _) in COMMANDS.items()]
        nodes = sorted(app.view.snapshot.nodes)[:5000] if hasattr(app, "view") else []
        suggestions = words + [f"node {n}" for n in nodes] + [f"scale-up {n}" for n in nodes]
        yield Input(placeholder=":nodes :pending :hooks :rules :node NAME :ctx NAME :q", id="command-input",
                    suggester=SuggestFromList(suggestions, case_sensitive=False))

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ContextPicker(ModalScreen[str | None]):
    CSS = """
    ContextPicker { align: center middle; }
    ContextPicker #ctx-box { width: 60; max-width: 90%; height: auto; max-height: 80%;
        border: thick $primary; background: $surface; }
    ContextPicker OptionList { height: auto; max-height: 16; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="ctx-cancel")]

    def __init__(self, contexts: list[str], current: str) -> None:
        super().__init__()
        self.contexts, self.current = contexts, current

    def compose(self) -> ComposeResult:
        with Vertical(id="ctx-box"):
            yield Label(f"Kube context (now {self.current})")
            yield OptionList(*[Option(f"{'* ' if c == self.current else '  '}{c}", id=c) for c in self.contexts])

    def on_mount(self) -> None:
        ol = self.query_one(OptionList)
        ol.focus()
        if self.current in self.contexts:
            ol.highlighted = self.contexts.index(self.current)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
