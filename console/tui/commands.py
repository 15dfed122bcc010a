"""Command palette (ctrl+p): "category: verb" commands for every view and node."""

from __future__ import annotations

from functools import partial
from typing import cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from console.tui.appbase import ConsoleAppBase
from console.tui.command_grammar import Command


class ConsoleCommands(Provider):
    @property
    def console_app(self) -> ConsoleAppBase:
        return cast(ConsoleAppBase, self.app)  # Provider.app is typed App[object]; ours is the ConsoleApp

    def _commands(self) -> list[tuple[str, Command, str]]:
        app = self.app
        out = [
            ("nodes: show", Command("nodes"), "all nodes with capacity and NFD labels"),
            ("pending: show", Command("pending"), "Pending pods and where they would fit"),
            ("hooks: edit", Command("hooks"), "NFD hooks and feature files"),
            ("rules: edit", Command("rules"), "NodeFeatureRules"),
            ("context: switch", Command("ctx"), "pick another kube context"),
            ("help: keys", Command("help"), "keys of the current screen"),
        ]
        for theme in getattr(app, "theme_names", None) or ("dark", "light", "high-contrast"):
            out.append((f"theme: {theme}", Command("theme", theme), f"switch to the {theme} theme"))
        view = getattr(app, "view", None)
        names = sorted(view.snapshot.nodes) if view else []
        for name in names[:2000]:  # enough to jump anywhere; the filter handles bigger clusters
            out.append((f"node: open {name}", Command("node", name), "node detail"))
        for name in names[:2000]:
            out.append((f"scale-up: plan {name}", Command("scale-up", name), "scale this node's VM up"))
        return out

    async def discover(self) -> Hits:
        for title, cmd, help_text in self._commands()[:9]:
            yield DiscoveryHit(title, partial(self.console_app.run_command, cmd), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, cmd, help_text in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self.console_app.run_command, cmd), help=help_text)
