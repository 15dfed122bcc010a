"""The code editor used by the hook and rule screens: a TextArea with a BROWSE and an EDIT mode, whose language
follows the file.

BROWSE (the default): the text is read-only and keys pass through to the screen, so plain letters are the
screen's actions. EDIT (`e`, or `enter` on the editor): the text is editable and printable keys type; `escape`
goes back to BROWSE with the edits kept. The mode is the editor's `editing`; every change posts `ModeChanged`.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import TextArea

_SHEBANG_LANGUAGES = (("python", "python"), ("bash", "bash"), ("/sh", "bash"), ("env sh", "bash"),
                      ("zsh", "bash"), ("dash", "bash"), ("ksh", "bash"))


class CodeEditor(TextArea):
    """A TextArea that is read-only until the user starts editing (the screens' EDIT mode)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "start_editing", "Edit", show=False, id="editor-edit"),
        Binding("escape", "stop_editing", "Stop editing", id="editor-stop-editing"),
    ]
    editing: reactive[bool] = reactive(False, init=False)

    class ModeChanged(Message):
        def __init__(self, editor: CodeEditor, editing: bool) -> None:
            super().__init__()
            self.editor, self.editing = editor, editing

        @property
        def control(self) -> CodeEditor:
            return self.editor

    def watch_editing(self, editing: bool) -> None:
        self.read_only = not editing
        self.set_class(editing, "-editing")
        self.post_message(self.ModeChanged(self, editing))
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "start_editing":
            return not self.editing
        if action == "stop_editing":
            return self.editing
        return super().check_action(action, parameters)

    def action_start_editing(self) -> None:
        self.editing = True
        self.focus()

    def action_stop_editing(self) -> None:
        self.editing = False

    async def _on_key(self, event: events.Key) -> None:
        # a code editor's escape moves the focus on (TextArea, tab_behavior "indent"); here it ends EDIT mode
        # and the focus stays, so the next plain letter is an action the user can see in the footer
        if event.key == "escape" and self.editing:
            event.stop()
            event.prevent_default()
            self.editing = False


def language_for(kind: str, name: str, content: str) -> str | None:
    """Highlighting language: hooks by shebang (or extension), rules YAML, feature files plain text."""
    if kind == "rule":
        return "yaml"
    if kind != "hook":
        return None
    first = content.split("\n", 1)[0]
    if first.startswith("#!"):
        for needle, lang in _SHEBANG_LANGUAGES:
            if needle in first:
                return lang
        return None
    if name.endswith(".py"):
        return "python"
    if name.endswith((".sh", ".bash")):
        return "bash"
    return None


def code_editor(*, id: str, kind: str = "hook") -> CodeEditor:
    """An empty editor in BROWSE mode; `load_into` fills it."""
    editor = CodeEditor.code_editor("", language=None, id=id, soft_wrap=False, read_only=True)
    assert isinstance(editor, CodeEditor)
    editor.border_title = kind
    return editor


def load_into(editor: TextArea, kind: str, name: str, content: str) -> None:
    """Replace the editor's document and pick its language (plain text without tree-sitter)."""
    lang = language_for(kind, name, content)
    editor.load_text(content)
    if lang in editor.available_languages:
        editor.language = lang
    else:
        editor.language = None
    editor.border_title = f"{name} ({lang or 'text'})"
