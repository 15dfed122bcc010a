"""What the hook and rule editor screens share: a list, a code editor and an output panel (result or diff).

Widget ids are `<PREFIX>-status`, `-body`, `-list`, `-main`, `-editor`, `-output`, `-result` and `-diffview`,
so each screen keeps its own ids (tests, TCSS and users' key maps name them).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, OptionList, Static, TextArea
from textual.worker import Worker, WorkerState

from console.config import Settings
from console.gateways import Gateways
from console.guard import Guard, GuardRefusal
from console.nfd import versions as V
from console.tui.safety import DANGEROUS_ACTIONS, allow_action, is_read_only
from console.tui.widgets.diff import DiffView
from console.tui.widgets.editor import code_editor


class EditorScreen(Screen[None]):
    """Base of HooksScreen and RulesScreen; subclasses set the class constants and `_deployed`."""

    KEEPS_ITS_PLACE: ClassVar[bool] = True  # `:hooks` / `:rules` on it again keeps the edits (navigation.show)
    PREFIX: ClassVar[str] = ""  # widget id prefix
    LIST_TITLE: ClassVar[str] = ""
    OUTPUT_TITLE: ClassVar[str] = ""  # the output panel's title while it shows a result (not a diff)
    LOADING: ClassVar[str] = ""  # the status line until the first load
    HINT: ClassVar[str] = ""  # the result panel before the first preview
    EDITOR_KIND: ClassVar[str] = "hook"
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (110, "-wide")]  # type: ignore[misc]

    def __init__(self, gateways: Gateways | None = None, settings: Settings | None = None) -> None:
        super().__init__()
        self.gateways = gateways  # the cluster's (console/gateways.py); None: no cluster (a local hook directory)
        self.settings = settings or Settings()
        self._own_settings = settings is not None
        self.version: V.NfdVersion = V.CURRENT
        self.version_text = ""
        self.guard: Guard | None = None  # the app's (mount_common): the stores' writes go through it

    # -- layout -------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        p = self.PREFIX
        yield Header()
        yield Static(self.LOADING, id=f"{p}-status", markup=False)
        with Horizontal(id=f"{p}-body"):
            yield OptionList(id=f"{p}-list")
            with Vertical(id=f"{p}-main"):
                yield code_editor(id=f"{p}-editor", kind=self.EDITOR_KIND)
                yield from self.compose_under_editor()
                with VerticalScroll(id=f"{p}-output"):
                    yield Static(self.HINT, id=f"{p}-result", markup=False)
                    yield DiffView(id=f"{p}-diffview")
        yield Footer()

    def compose_under_editor(self) -> ComposeResult:
        """Widgets between the editor and the output panel (none by default)."""
        yield from ()

    def mount_common(self) -> None:
        """The first part of every subclass's on_mount (a base on_mount would run after the subclass's)."""
        self.query_one(f"#{self.PREFIX}-list", OptionList).border_title = self.LIST_TITLE
        self.query_one(f"#{self.PREFIX}-output").border_title = self.OUTPUT_TITLE
        self.query_one(f"#{self.PREFIX}-diffview").display = False
        # pushed without arguments (e.g. by `:hooks` or `:rules`): use the app's gateways and settings
        if self.gateways is None:
            self.gateways = getattr(self.app, "gateways", None)
        if not self._own_settings:
            self.settings = getattr(self.app, "settings", None) or self.settings
        if self.settings.nfd_version:
            self.version = V.parse_version(self.settings.nfd_version)
        self.guard = getattr(self.app, "guard", None) or Guard.from_settings(self.settings)
        if self.read_only and not self.guard.read_only:  # this screen's own read-only settings hold below it too
            self.guard = Guard(read_only=True, audit=self.guard.audit)

    # -- read-only ----------------------------------------------------------------------------------------
    @property
    def read_only(self) -> bool:
        return self.settings.read_only or is_read_only(self.app)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # dangerous actions disappear in read-only mode (the app's settings or this screen's), and show disabled
        # where RBAC says no (console/tui/safety.py)
        if action in DANGEROUS_ACTIONS and self.read_only:
            return False
        return allow_action(self.app, action)

    @property
    def editor(self) -> TextArea:
        return self.query_one(f"#{self.PREFIX}-editor", TextArea)

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    # -- result panel and diff ----------------------------------------------------------------------------
    def _show_result(self, text: Text) -> None:
        self.query_one(f"#{self.PREFIX}-diffview").display = False
        result = self.query_one(f"#{self.PREFIX}-result", Static)
        result.display = True
        result.update(text)
        self.query_one(f"#{self.PREFIX}-output").border_title = self.OUTPUT_TITLE

    def _deployed(self) -> tuple[str, str] | None:
        """(deployed text, its label) to diff the editor against; None when nothing is open."""
        raise NotImplementedError

    def action_diff(self) -> None:
        deployed = self._deployed()
        if deployed is None:
            return
        view = self.query_one(f"#{self.PREFIX}-diffview", DiffView)
        if view.display:
            view.display = False
            self.query_one(f"#{self.PREFIX}-result").display = True
            return
        view.show(deployed[0], self.editor.text, deployed[1], "edited")
        self.query_one(f"#{self.PREFIX}-result").display = False
        view.display = True
        self.query_one(f"#{self.PREFIX}-output").border_title = f"diff ({view.mode}; v toggles)"

    def action_diff_mode(self) -> None:
        mode = self.query_one(f"#{self.PREFIX}-diffview", DiffView).toggle_mode()
        self.query_one(f"#{self.PREFIX}-output").border_title = f"diff ({mode}; v toggles)"

    def notify_refusal(self, err: GuardRefusal, done: str, refused: str) -> None:
        """A write the guard stopped: refused before it was made, or (`err.done`) made but not audited."""
        self.notify(str(err), title=done if err.done else refused, severity="error", timeout=15)

    # -- worker failures ----------------------------------------------------------------------------------
    def _worker_failed(self) -> None:
        """Reset screen state after a worker raised (before the notification)."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            event.stop()  # reported here, once
            self.query_one(f"#{self.PREFIX}-output").loading = False
            self._worker_failed()
            self.notify(f"{event.worker.name} failed: {event.worker.error}. Check the connection and retry.",
                        title="error", severity="error")
