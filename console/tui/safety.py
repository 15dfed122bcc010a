"""Dangerous actions: read-only mode and the confirmation every mutation goes through.

Stable API (the editors use it too):

- `is_read_only(app)` — True when mutations must be hidden/disabled (`--read-only` or config).
- `dangerous(binding, needs=ACTION)` — mark a `Binding` as a mutation; `check_action` hides it in read-only
  mode when the screen's `check_action` calls `allow_action(app, action)`, and
  shows it disabled when the RBAC review says this user may not do ACTION ("scale-up", "rule-apply", … of
  console/kube/access.py); `why_disabled(app, action)` is the reason (the toast on the key, the `?` help).
- `ConfirmDanger(action, target, preview)` — a modal naming the target; dismisses with True
  (confirmed) or False. Use `app.push_screen(ConfirmDanger(...), callback)` or, in a worker,
  `await app.push_screen_wait(ConfirmDanger(...))`. The confirm button is focused last-resort:
  the default focus is "Cancel", and confirming needs `y` or a click on the named button.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

DANGEROUS_ACTIONS: set[str] = set()  # action names registered through `dangerous()`
ACTION_NEEDS: dict[str, str] = {}  # action name -> the access action it needs (console/kube/access.action_needs)


def is_read_only(app: App[Any]) -> bool:
    settings = getattr(app, "settings", None)
    return bool(getattr(settings, "read_only", False))


def dangerous(binding: Binding, needs: str = "") -> Binding:
    """Register a binding's action as a mutation (hidden in read-only mode; disabled when RBAC says no to
    `needs`)."""
    action = binding.action.split("(")[0]
    DANGEROUS_ACTIONS.add(action)
    if needs:
        assert ACTION_NEEDS.setdefault(action, needs) == needs, f"{action} registered with two needs"
    return binding


def why_disabled(app: App[Any], action: str) -> str:
    """Why this user may not run `action` here ("" when they may): what the RBAC review found missing."""
    gateways = getattr(app, "gateways", None)
    needs = ACTION_NEEDS.get(action)
    return gateways.why_not(needs) if gateways is not None and needs else ""


def allow_action(app: App[Any], action: str) -> bool | None:
    """For `check_action`: False (hidden) for a dangerous action in read-only mode, None (shown disabled) when
    the RBAC review says this user may not do it, True otherwise."""
    if action not in DANGEROUS_ACTIONS:
        return True
    if is_read_only(app):
        return False
    return None if why_disabled(app, action) else True


class ConfirmDanger(ModalScreen[bool]):
    """Confirm one mutation, naming exactly what it touches and showing a preview."""

    CSS = """
    ConfirmDanger { align: center middle; }
    ConfirmDanger #danger-box {
        width: 90%; max-width: 100; height: auto; max-height: 90%;
        border: thick $error; background: $surface; padding: 0 1;
    }
    ConfirmDanger #danger-title { width: 1fr; height: auto; text-style: bold; color: $error; }
    ConfirmDanger #danger-preview { height: auto; max-height: 14; border: round $panel; }
    ConfirmDanger #danger-buttons { height: 3; align-horizontal: right; }
    ConfirmDanger Button { margin-left: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Confirm", id="danger-confirm"),
        Binding("n,escape", "cancel", "Cancel", id="danger-cancel"),
    ]

    def __init__(self, action: str, target: str, preview: str) -> None:
        super().__init__()
        self.action_name = action
        self.target = target
        self.preview = preview

    def compose(self) -> ComposeResult:
        with Vertical(id="danger-box"):
            # the whole target in the title (wrapped); the button says only the verb, so it is never cut
            yield Static(f"{self.action_name}: {self.target}", id="danger-title", markup=False)
            with VerticalScroll(id="danger-preview"):
                yield Static(self.preview or "(no changes)", markup=False)
            yield Label("Press y to confirm, n or esc to cancel.", markup=False)
            with Horizontal(id="danger-buttons"):
                yield Button("Cancel", id="danger-no")
                yield Button(self.action_name[:1].upper() + self.action_name[1:], id="danger-yes", variant="error")

    def on_mount(self) -> None:
        if is_read_only(self.app):  # belt and braces: nothing mutates in read-only mode
            self.notify("read-only mode: this change is disabled", severity="warning")
            self.dismiss(False)
            return
        self.query_one("#danger-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "danger-yes")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
