"""`?`: every key of the screen underneath, built from its active bindings (so remapped keys show)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from console.tui.command_grammar import COMMANDS
from console.tui.safety import why_disabled

HIDDEN_ACTIONS = {"screen.copy_text", "copy_text"}


def binding_rows(screen: Screen[Any]) -> list[tuple[str, str, str]]:
    """(keys, description, id) for each enabled binding of `screen` (its focused widget and the app):
    the screen's own first, then the focused widget's, then the app's. A binding shown disabled because this
    user may not run it (RBAC) is listed with the reason (console/tui/safety.why_disabled)."""
    app = screen.app
    seen: dict[str, tuple[int, str, str, str]] = {}
    for active in screen.active_bindings.values():
        b, node = active.binding, active.node
        rank = 0 if node is screen else 2 if node is app else 1
        why = "" if active.enabled else why_disabled(app, b.action.split("(")[0])
        if (not active.enabled and not why) or b.action in HIDDEN_ACTIONS or (b.id is None and rank == 1):
            continue  # Textual's own scrolling keys on widgets carry no id: not ours to document
        ident = b.id or b.action
        display = app.get_key_display(b)
        if ident in seen:
            r, keys, desc, _ = seen[ident]
            if display not in keys.split(", "):
                seen[ident] = (r, f"{keys}, {display}", desc, ident)
            continue
        desc = b.description or b.action
        seen[ident] = (rank, display, f"{desc} — disabled: {why}" if why else desc, ident)
    return [(k, d, i) for _, k, d, i in sorted(seen.values(), key=lambda r: (r[0], r[2].lower()))]


class HelpScreen(ModalScreen[None]):
    CSS = """
    HelpScreen { align: center middle; }
    HelpScreen #help-box { width: 90%; max-width: 96; height: 90%; border: thick $primary;
        background: $surface; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close", id="help-close"),
    ]

    def __init__(self, target: Screen[Any]) -> None:
        super().__init__()
        self.target = target

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(self._text(), id="help-text")

    def _text(self) -> Text:
        name = type(self.target).__name__.removesuffix("Screen")
        out = Text(f"{name} — keys\n", style="bold")
        help_text = getattr(self.target, "HELP", "")
        if help_text:
            out.append(f"{help_text}\n", style="italic")
        out.append("\n")
        rows = binding_rows(self.target)
        width = max((len(k) for k, _, _ in rows), default=4)
        for keys, desc, ident in rows:
            out.append(f"  {keys:<{width}}  ", style="bold")
            out.append(f"{desc}")
            out.append(f"  ({ident})\n", style="dim")
        out.append("\nCommands (after :)\n", style="bold")
        for cmd, (_aliases, arg, text) in COMMANDS.items():
            usage = f":{cmd}" + (" NAME" if arg == "required" else " [NAME]" if arg == "optional" else "")
            out.append(f"  {usage:<18} {text}\n")
        out.append("\nFilter (after /): text · !text (invert) · -l key=value,!key (label selector)\n", style="dim")
        out.append("Remap a key: key_overrides: {binding-id: key} in the config file\n", style="dim")
        return out

    def action_close(self) -> None:
        self.dismiss(None)
