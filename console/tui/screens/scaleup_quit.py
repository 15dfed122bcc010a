"""Quitting while a scale-up or revert runs: ask first, and stop the run between steps rather than mid-step.

The run is journaled: stopped (console/runbook/interrupt.py: the engine checks its stop flag before each step and
cuts pure waits), it is "interrupted", nothing rolled back, and resumes where it stopped (R on the nodes screen,
or `:scale-up NODE` then r) — the same as Ctrl-C on `console scale-up`. A run already in its last step, or failing
and rolling back, ends otherwise: what the terminal shows after quitting is decided from how the run ended.
"""

from __future__ import annotations

from typing import Any, ClassVar

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


class GuardsItsRun:
    """For a screen running a journaled runbook (scale-up, revert, a fleet): mid-run, esc/q say why it stays
    (`leave_refusal`, which the app's `:` navigation asks too), and the app's quit asks (QuitDuringRun); yes stops
    the run before its next step, and the app quits once the run has stopped (`_quit_if_stopped`)."""

    app: Any
    stop_flag: Any  # console.runbook.interrupt.StopFlag of the run in progress
    quit_when_stopped = False

    # -- what the screen says ---------------------------------------------------------------------------
    def run_in_progress(self) -> bool:
        raise NotImplementedError

    def leave_refusal(self) -> str:
        """Why this screen may not be left now ("" when it may): esc, q and `:` navigation all say it."""
        raise NotImplementedError

    def quit_question(self) -> str:
        raise NotImplementedError

    def stopping_note(self) -> str:
        """The log line once the admin said yes."""
        raise NotImplementedError

    def stopped_message(self) -> str:
        """What the terminal shows after the app quit, once the run has ended: what the run did, decided from its
        result — the stop request is checked only before a step, so the run may have finished, failed or rolled
        back after it — and, when it stopped, how to resume."""
        raise NotImplementedError

    def _log(self, text: str, when: str = "") -> None:
        raise NotImplementedError

    # -- behaviour ----------------------------------------------------------------------------------------
    def action_back(self) -> None:
        refusal = self.leave_refusal()
        if refusal:
            self.app.notify(refusal, severity="warning")
            return
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    def confirm_quit(self) -> None:
        """Ask before quitting mid-run; yes stops the run before its next step, and the app quits once it has."""
        if self.quit_when_stopped:  # asked and answered already: a second ctrl+c quits now
            self.app.exit()
            return

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            if not self.run_in_progress():  # ended while the question was open: say how
                self.app.exit(message=self.stopped_message())
                return
            self.quit_when_stopped = True
            self.stop_flag.set()
            self._log(self.stopping_note())
            self.app.notify("stopping before the next step, then quitting (ctrl+c again quits now)", timeout=30)

        self.app.push_screen(QuitDuringRun(self.quit_question()), answered)

    def _quit_if_stopped(self) -> None:
        if self.quit_when_stopped:
            self.app.exit(message=self.stopped_message())
