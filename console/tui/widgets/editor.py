"""The code editor used by the hook and rule screens: a TextArea whose language follows the file."""

from __future__ import annotations

from textual.widgets import TextArea

_SHEBANG_LANGUAGES = (("python", "python"), ("bash", "bash"), ("/sh", "bash"), ("env sh", "bash"),
                      ("zsh", "bash"), ("dash", "bash"), ("ksh", "bash"))


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


def code_editor(*, id: str, kind: str = "hook") -> TextArea:
    """An empty editor; `load_into` fills it."""
    editor = TextArea.code_editor("", language=None, id=id, soft_wrap=False)
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
