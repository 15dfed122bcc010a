"""The Textual application: wiring only."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

from console.kube.cluster import Cluster
from console.tui.screens.nodes import NodesScreen


class ConsoleApp(App[None]):
    TITLE = "console"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="quit"),
    ]

    def __init__(self, cluster: Cluster, *, subtitle: str = "") -> None:
        super().__init__()
        self.cluster = cluster
        self.sub_title = subtitle or cluster.target.context

    def on_mount(self) -> None:
        self.push_screen(NodesScreen(self.cluster))
