"""Quitting while a scale-up or revert runs: ask first, and stop the run between steps rather than mid-step.

The run is journaled: stopped (console/runbook/interrupt.py: the engine checks its stop flag before each step and
cuts pure waits), it is "interrupted", nothing rolled back, and resumes where it stopped (R on the nodes screen,
or `:scale-up NODE` then r) — the same as Ctrl-C on `console scale-up`.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


def quit_question(node: str, what: str = "run") -> str:
    return (f"A {what} is in progress on {node}: quit anyway? It stops before the next step (nothing is rolled "
            f"back) and can be resumed with R on the nodes screen, or :scale-up {node} then r.")


class QuitDuringRun(ModalScreen[bool]):
    """True: stop the run and quit; False: keep running (the default: esc, n, enter on the focused button)."""

    CSS = """
    QuitDuringRun { align: center middle; }
    QuitDuringRun #quit-box { width: 90%; max-width: 90; height: auto; border: thick $warning;
        background: $surface; padding: 0 1; }
    QuitDuringRun #quit-text { width: 1fr; height: auto; color: $foreground; }
    QuitDuringRun #quit-buttons { height: auto; margin-top: 1; }
    QuitDuringRun Button { margin-right: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Stop and quit", id="quit-run-yes"),
        Binding("n,escape", "answer(False)", "Keep running", id="quit-run-no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box"):
            yield Static(self.question, id="quit-text", markup=False)
            yield Static("y stops and quits · n or esc keeps it running", markup=False)
            with Horizontal(id="quit-buttons"):
                yield Button("Keep running", id="quit-no", variant="primary")
                yield Button("Stop and quit", id="quit-yes", variant="error")

    def on_mount(self) -> None:
        self.query_one("#quit-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "quit-yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
