"""What the hook and rule editor screens share: a list, a code editor and an output panel (result or diff), the
BROWSE / EDIT modes and the question before unsaved edits are dropped.

BROWSE (on opening): the editor is read-only and plain letters are the screen's actions. EDIT (`e`, or `enter` on
the editor): the editor types; only the ctrl-key actions of EDIT_ACTIONS stay live (save or apply, preview or
dry-run, reload); `escape` goes back to BROWSE with the edits kept (marked `●`), a further `escape` leaves. The
line above the footer (`<PREFIX>-mode`) says which mode and what the keys do. Leaving, opening another entry,
reload, new and `:` navigation ask first when there are unsaved edits (console/tui/unsaved.py).

Widget ids are `<PREFIX>-status`, `-body`, `-list`, `-main`, `-editor`, `-output`, `-result`, `-diffview` and
`-mode`, so each screen keeps its own ids (tests, TCSS and users' key maps name them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import events, on
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
from console.tui.unsaved import confirm_discard
from console.tui.widgets.diff import DiffView
from console.tui.widgets.editor import CodeEditor, code_editor


class EditorScreen(Screen[None]):
    """Base of HooksScreen and RulesScreen; subclasses set the class constants and `_deployed`."""

    KEEPS_ITS_PLACE: ClassVar[bool] = True  # `:hooks` / `:rules` on it again keeps the edits (navigation.show)
    PREFIX: ClassVar[str] = ""  # widget id prefix
    LIST_TITLE: ClassVar[str] = ""
    OUTPUT_TITLE: ClassVar[str] = ""  # the output panel's title while it shows a result (not a diff)
    LOADING: ClassVar[str] = ""  # the status line until the first load
    HINT: ClassVar[str] = ""  # the result panel before the first preview
    EDITOR_KIND: ClassVar[str] = "hook"
    SAVE_WORD: ClassVar[str] = "save"  # what ctrl+s does, as the mode line says it
    PREVIEW_WORD: ClassVar[str] = "preview"  # what ctrl+r does
    EDIT_ACTIONS: ClassVar[frozenset[str]] = frozenset()  # the screen's actions still live in EDIT mode (ctrl keys)
    BROWSE_KEYS: ClassVar[str] = ""  # the screen's own plain-letter keys for the BROWSE mode line
    BROWSE_KEYS_READ_ONLY: ClassVar[str] = ""
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (110, "-wide")]  # type: ignore[misc]
    HELP = ("Two modes, named on the line above the footer. BROWSE: the editor is read-only and plain letters are "
            "the keys below. EDIT (e, or enter on the editor): letters type; only the ctrl-key actions below stay "
            "live; esc goes back to BROWSE, keeping the edits (● unsaved). Unsaved edits are never dropped without "
            "asking.")

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
                    yield Static("", id=f"{p}-result", markup=False)
                    yield DiffView(id=f"{p}-diffview")
        yield Static("", id=f"{p}-mode", markup=False)
        yield Footer()

    def hint(self) -> str:
        """The result panel before the first preview (read-only: without the keys that write)."""
        return self.HINT

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
        self.query_one(f"#{self.PREFIX}-result", Static).update(self.hint())
        self.render_mode()

    # -- read-only ----------------------------------------------------------------------------------------
    @property
    def read_only(self) -> bool:
        return self.settings.read_only or is_read_only(self.app)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "not_saved":  # ctrl+s in read-only mode: a toast instead of silence (never in the footer)
            return self.read_only
        if self.editing and action not in self.EDIT_ACTIONS:
            return False  # EDIT mode: plain letters type, so only the ctrl-key actions stay live
        # dangerous actions disappear in read-only mode (the app's settings or this screen's), and show disabled
        # where RBAC says no (console/tui/safety.py)
        if action in DANGEROUS_ACTIONS and self.read_only:
            return False
        return allow_action(self.app, action)

    def action_not_saved(self) -> None:
        self.notify(f"read-only: {self.open_name() or 'nothing'} not saved", title="read-only", severity="warning")

    @property
    def editor(self) -> CodeEditor:
        return self.query_one(f"#{self.PREFIX}-editor", CodeEditor)

    # -- BROWSE / EDIT ------------------------------------------------------------------------------------
    @property
    def editing(self) -> bool:
        found = self.query(f"#{self.PREFIX}-editor").results(CodeEditor)  # none yet while the screen composes
        return any(e.editing for e in found)

    def can_edit(self) -> str:
        """Why the editor cannot be edited now ("" when it can)."""
        return ""

    def action_edit(self) -> None:
        why = self.can_edit()
        if why:
            self.notify(why, severity="warning")
            return
        self.editor.action_start_editing()

    @on(CodeEditor.ModeChanged)
    def _mode_changed(self, event: CodeEditor.ModeChanged) -> None:
        if event.editing and self.can_edit():  # `enter` on the editor when there is nothing to edit
            event.editor.editing = False
            self.notify(self.can_edit(), severity="warning")
            return
        self.render_mode()
        self.refresh_bindings()

    @on(TextArea.Changed)
    def _text_changed(self, event: TextArea.Changed) -> None:
        if event.text_area is self.editor:
            self.render_mode()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        # the focus left the editor (a click on the list, say): plain letters are actions again, as shown
        if event.widget is not self.editor and self.editor.editing:
            self.editor.editing = False

    def render_mode(self) -> None:
        """The mode line above the footer, and `●` on the editor's title while there are unsaved edits."""
        if not self.is_mounted:
            return
        unsaved = self.unsaved_name() is not None
        editor = self.editor
        title = str(editor.border_title or "").removeprefix("● ")
        editor.border_title = f"● {title}" if unsaved else title
        mark = " ● unsaved" if unsaved else ""
        if self.editing:
            keys = (f"esc: stop editing · ctrl+r: {self.PREVIEW_WORD} · read-only: nothing is saved" if self.read_only
                    else f"esc: stop editing · ctrl+s: {self.SAVE_WORD} · ctrl+r: {self.PREVIEW_WORD}")
            text = f"EDIT{mark} — {keys}"
        else:
            own = self.BROWSE_KEYS_READ_ONLY if self.read_only else self.BROWSE_KEYS
            why = self.can_edit()  # nothing to edit: say why instead of offering keys that do nothing
            keys = " · ".join(k for k in ((why,) if why else ("e: edit", f"ctrl+r: {self.PREVIEW_WORD}", own))
                              + ("esc: back",) if k)
            text = f"BROWSE{' (read-only)' if self.read_only else ''}{mark} — {keys}"
        line = self.query_one(f"#{self.PREFIX}-mode", Static)
        line.update(text)
        line.set_class(self.editing, "-editing")
        self.set_class(self.editing, "-editing")  # the screens' TCSS gives the editor room while editing

    # -- unsaved edits ------------------------------------------------------------------------------------
    def open_name(self) -> str | None:
        """The name of what the editor holds (None when nothing is open)."""
        raise NotImplementedError

    def saved_text(self) -> str | None:
        """What the editor's text is compared with to find unsaved edits (None when nothing is open)."""
        raise NotImplementedError

    def unsaved_name(self) -> str | None:
        """The name of what has unsaved edits; None when the editor holds what is saved."""
        if not self.is_mounted:
            return None
        saved = self.saved_text()
        if saved is None or self.editor.text == saved:
            return None
        return self.open_name() or "the editor's text"

    def discard_unsaved(self) -> None:
        """Put back what is saved (the caller then opens, reloads or leaves)."""
        self.editor.editing = False
        saved = self.saved_text()
        if saved is not None:
            self.editor.load_text(saved)
        self.render_mode()

    def ask_discard(self, then: Callable[[], object], leaving: str = "") -> None:
        """Run `then` now, or after the user agreed to discard this screen's unsaved edits."""
        confirm_discard(self.app, [self], then, leaving)

    def action_back(self) -> None:
        if self.editing:  # escape reaches the screen in EDIT mode only when the focus is elsewhere
            self.editor.editing = False
            return

        def leave() -> None:
            if len(self.app.screen_stack) > 1 and self.app.screen is self:
                self.app.pop_screen()

        self.ask_discard(leave, "leave the screen")

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
