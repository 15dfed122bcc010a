"""A coloured diff of deployed vs edited text, unified or side by side.

Colours come from the theme's `diff-add` / `diff-remove` variables (falling back to `success` /
`error` for themes that lack them).
"""

from __future__ import annotations

import difflib
from itertools import zip_longest

from rich.table import Table
from rich.text import Text
from textual._context import NoActiveAppError
from textual.widgets import Static

DiffLine = tuple[str, str]  # tag ("+", "-", " ", "@", "h"), text


def unified_lines(old: str, new: str, old_name: str = "deployed", new_name: str = "edited",
                  context: int = 3) -> list[DiffLine]:
    """Unified diff rows; an empty list when the texts are equal."""
    out: list[DiffLine] = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name, n=context,
                                     lineterm=""):
        if line.startswith(("---", "+++")):
            out.append(("h", line))
        elif line.startswith("@@"):
            out.append(("@", line))
        else:
            out.append((line[:1] or " ", line))
    return out


def unified_text(old: str, new: str, old_name: str = "deployed", new_name: str = "edited") -> str:
    """Plain unified diff (for confirmations and the audit log)."""
    return "\n".join(t for _, t in unified_lines(old, new, old_name, new_name))


def side_by_side_rows(old: str, new: str) -> list[tuple[str, str, str]]:
    """(tag, left, right) rows: " " equal, "-" only left, "+" only right, "~" changed."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[tuple[str, str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            rows.extend((" ", x, y) for x, y in zip(a[i1:i2], b[j1:j2], strict=True))
        elif op == "delete":
            rows.extend(("-", x, "") for x in a[i1:i2])
        elif op == "insert":
            rows.extend(("+", "", y) for y in b[j1:j2])
        else:
            rows.extend(("~", x or "", y or "") for x, y in zip_longest(a[i1:i2], b[j1:j2]))
    return rows


class DiffView(Static):
    """Shows `old` vs `new`; `mode` is "unified" or "split"."""

    DEFAULT_CSS = """
    DiffView { height: auto; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", id=id, classes=classes)
        self.old = ""
        self.new = ""
        self.old_name = "deployed"
        self.new_name = "edited"
        self.mode = "unified"

    def _colors(self) -> tuple[str, str]:
        try:
            v = self.app.get_css_variables()
        except NoActiveAppError:  # not running in an app (e.g. rendered in a test): plain colours
            return "green", "red"
        return v.get("diff-add") or v.get("success", "green"), v.get("diff-remove") or v.get("error", "red")

    def show(self, old: str, new: str, old_name: str = "deployed", new_name: str = "edited") -> bool:
        """Render the diff; False when there is no difference."""
        self.old, self.new, self.old_name, self.new_name = old, new, old_name, new_name
        self.render_diff()
        return old != new

    def toggle_mode(self) -> str:
        self.mode = "split" if self.mode == "unified" else "unified"
        self.render_diff()
        return self.mode

    def render_diff(self) -> None:
        add, remove = self._colors()
        if self.old == self.new:
            self.update(Text(f"no differences between {self.old_name} and {self.new_name}"))
            return
        if self.mode == "unified":
            text = Text(no_wrap=False)
            for tag, line in unified_lines(self.old, self.new, self.old_name, self.new_name):
                style = {"+": add, "-": remove, "@": "bold", "h": "bold"}.get(tag, "")
                text.append(line + "\n", style=style)
            self.update(text)
            return
        table = Table(expand=True, show_edge=False, box=None, padding=(0, 1))
        table.add_column(self.old_name, ratio=1, overflow="fold")
        table.add_column(self.new_name, ratio=1, overflow="fold")
        for tag, left, right in side_by_side_rows(self.old, self.new):
            ls = remove if tag in ("-", "~") else ""
            rs = add if tag in ("+", "~") else ""
            table.add_row(Text(left, style=ls), Text(right, style=rs))
        self.update(table)
