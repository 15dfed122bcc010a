"""navigation.show: `:pending`, `:hooks`, `:rules` on that very screen keep it (its highlighted pod, its edits);
another screen of the same type is replaced, not stacked. Told by the screen's KEEPS_ITS_PLACE, not its name."""

from __future__ import annotations

from typing import Any

from console.tui.navigation import show
from console.tui.screens.editor_base import EditorScreen
from console.tui.screens.node import NodeDetailScreen
from console.tui.screens.pending import PendingScreen


class _App:
    def __init__(self, screen: Any) -> None:
        self.screen, self.calls = screen, []

    def pop_screen(self) -> None:
        self.calls.append("pop")

    def push_screen(self, screen: Any) -> None:
        self.calls.append(("push", type(screen)))


class _Renamed(EditorScreen):  # a subclass under another name keeps its place too (the flag is inherited)
    def __init__(self) -> None:  # no widgets: only its type matters here
        pass


def test_the_screen_that_keeps_its_place_is_not_pushed_again():
    for screen_type in (PendingScreen, _Renamed):
        app = _App(object.__new__(screen_type))
        show(app, screen_type)
        assert app.calls == []


def test_another_screen_of_the_same_type_replaces_the_current_one():
    app = _App(object.__new__(NodeDetailScreen))
    show(app, NodeDetailScreen, "worker-2")
    assert app.calls == ["pop", ("push", NodeDetailScreen)]


def test_a_screen_of_another_type_is_pushed():
    app = _App(object.__new__(NodeDetailScreen))
    show(app, _Renamed)
    assert app.calls == [("push", _Renamed)]
