"""What every console screen shares: back/quit keys, read-only filtering of dangerous bindings."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.screen import Screen

from console.tui.appbase import ConsoleAppBase
from console.tui.safety import allow_action


class ConsoleScreen(Screen[None]):
    """A pushed screen: `esc`/`q` go back to the previous one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.back", "Back", id="back"),
        Binding("q", "app.back", "Back", show=False, id="back-q"),
    ]
    app: ConsoleAppBase  # typed for the checker only (Screen.app is a property): ConsoleApp at run time
    HELP = ""  # one paragraph shown on top of the help screen
    ready = False  # set in on_mount: widgets exist, views may render

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return allow_action(self.app, action)

    def view_changed(self, view: Any) -> None:
        """Called with each new ClusterView (about every 250 ms while the cluster changes)."""
