"""The Textual application: wiring only — gateways in, screens out, workers report by messages."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from console.config import Settings
from console.guard import Guard
from console.infra.inventory import VmListError
from console.infra.vms import VmView, match_nodes
from console.kube.events import Events
from console.kube.nodetable import node_rows
from console.tui.command_grammar import Command, CommandError, parse_command
from console.tui.commands import ConsoleCommands
from console.tui.errors import explain
from console.tui.messages import (
    ApiProbed,
    CacheHealthChanged,
    ClusterView,
    ContextsListed,
    ContextSwitched,
    NodesChanged,
    VMsLoaded,
)
from console.tui.themes import DEFAULT_THEME, FALLBACK_COLORS, domain_defaults, load_themes

VM_REFRESH_SECONDS = 30.0


class ConsoleApp(App[None]):
    TITLE = "console"
    CSS = """
    Screen { background: $background; }
    .status-line {
        height: 1; padding: 0 1; color: $text-muted; background: $surface; text-wrap: nowrap; text-overflow: ellipsis;
    }
    """
    # the default (root) screen's CSS_PATH is not loaded by Textual for get_default_screen(): load it here
    CSS_PATH: ClassVar = [Path(__file__).parent / "screens" / "nodes.tcss"]
    COMMANDS: ClassVar = App.COMMANDS | {ConsoleCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("colon", "command_bar", "Cmd", id="command-bar"),
        Binding("question_mark", "help", "Help", id="help"),
        Binding("ctrl+p", "command_palette", "Palette", show=False, id="palette"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, id="quit-now"),
    ]

    def __init__(
        self,
        kube: Any,
        infra: Any = None,
        settings: Settings | None = None,
        *,
        vms: Any = None,
        clock: Callable[[], float] = time.time,
        label: str = "",
        kube_factory: Callable[[str | None, str | None], Any] | None = None,
        refresh_interval: float = 0.25,
        vm_refresh: float = VM_REFRESH_SECONDS,
        guard: Guard | None = None,
    ) -> None:
        super().__init__()
        self.kube = kube
        self.infra = infra
        self.settings = settings or Settings()
        # every write the screens' gateways make goes through it (console/guard.py)
        self.guard = guard or Guard.from_settings(self.settings)
        self.vms = vms  # VmInventory-like: list() -> VmListing, flavors(); None hides VM columns
        self.clock = clock
        self.label = label
        self.kube_factory = kube_factory
        self.refresh_interval = refresh_interval
        self.vm_refresh = vm_refresh
        self.view = ClusterView.empty()
        self.events: Events | None = None
        self.servers: dict[str, VmView] = {}
        self.vm_problems: list[str] = []
        self.flavors: list[Any] = []
        self.api_error: str | None = None
        self.stale: str | None = None  # "API server unreachable since ... — data below is from ...", or None
        self._worker_errors: dict[str, str] = {}  # the last failure toast per worker group (said once)
        self._vm_generation = 0
        self._computing = False
        self._last_generation: tuple[int, ...] | None = None
        self._theme_names: list[str] = []

    # -- lifecycle -------------------------------------------------------
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return domain_defaults(FALLBACK_COLORS)

    def get_default_screen(self) -> Screen[Any]:
        from console.tui.screens.nodes import NodesScreen

        return NodesScreen()

    def on_mount(self) -> None:
        self._install_themes()
        if self.settings.key_overrides:
            self.set_keymap(dict(self.settings.key_overrides))
        self._update_subtitle()
        self._start_events()
        self._watch_health()
        self.probe_api()
        self.set_interval(self.refresh_interval, self.maybe_recompute)
        if self.vms is not None:
            self.refresh_vms()
            self.set_interval(self.vm_refresh, self.refresh_vms)

    def _install_themes(self) -> None:
        found = load_themes(getattr(self, "theme_dirs", None))
        for theme in found.themes.values():
            self.register_theme(theme)
        for err in found.errors:
            self.notify(f"theme skipped: {err}", severity="warning", timeout=10)
        self._theme_names = sorted(found.themes)
        self._use_theme(self.settings.theme)

    def _use_theme(self, wanted: str | None) -> None:
        wanted = wanted or DEFAULT_THEME
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            fallback = DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"
            self.notify(f"theme {wanted!r} not found; using {fallback}. Themes: {', '.join(self._theme_names)}",
                        severity="warning", timeout=10)
            self.theme = fallback

    def _update_subtitle(self) -> None:
        parts = [self.label or getattr(self.kube.target, "context", "")]
        if self.settings.read_only:
            parts.append("read-only")
        if self.stale:  # in the header of every screen
            parts.append(f"STALE: {self.stale}")
        self.sub_title = " · ".join(p for p in parts if p)

    def _start_events(self) -> None:
        api_client = getattr(self.kube, "api_client", None)
        if api_client is not None:  # a Lister, not CoreV1Api: that import costs seconds and ~20 MB at start
            from console.kube.lister import Lister

            self.events = Events(Lister(api_client, "/api/v1/events"))
            self.events.start()

    def _explain(self, error: BaseException) -> str:
        """console/tui/errors.explain with what the connection points at (kubeconfig, context, server)."""
        target = self.kube.target
        return explain(error, server=getattr(target, "server", ""), kubeconfig=getattr(target, "kubeconfig", ""),
                       context=getattr(target, "context", ""))

    def _watch_health(self) -> None:
        kube = self.kube
        if hasattr(kube, "on_health"):
            kube.on_health(lambda health: self.post_message(CacheHealthChanged(kube, health)))

    def on_cache_health_changed(self, message: CacheHealthChanged) -> None:
        """Say once that the data is stale (and once that it is current again); every screen's header shows it."""
        if message.kube is not self.kube:
            return
        health = message.health
        if health.down_since is None:
            was = self.stale
            self.stale = None
            if was:
                self.notify("the API server answers again; the data is current", title="Kubernetes API", timeout=8)
        else:
            from console import faults

            target = message.kube.target
            where = faults.Where(target.kubeconfig, target.context, server=target.server)
            fault = faults.classify(health.error, where) if health.error is not None else None
            state = "refusing us" if fault and fault.kind in ("kube-unauthorized", "kube-forbidden") else \
                "unreachable"
            data = f"data below is from {_hms(health.fresh_at)}" if health.fresh_at else "no data loaded yet"
            self.stale = f"API server {state} since {_hms(health.down_since)} — {data}"
            reason = fault.message if fault else explain(health.error) if health.error else ""
            self.notify(f"{self.stale}. {reason}".strip(), title="Kubernetes API", severity="error", timeout=30)
        self._update_subtitle()
        for screen in self.screen_stack:
            if hasattr(screen, "view_changed"):
                screen.view_changed(self.view)

    def on_unmount(self) -> None:
        if self.events is not None:
            self.events.stop()

    # -- data, off the UI thread -----------------------------------------
    def maybe_recompute(self) -> None:
        nodes, pods = self.kube.nodes, self.kube.pods
        # while the first pod list streams in (hundreds of pages), its pages do not recompute the view: each
        # recompute copies and joins every pod read so far, and would slow the list it waits for
        gen = (nodes.generation, -1 if pods.loading else pods.generation, self._vm_generation, id(self.kube))
        # paint from the first page of nodes: the cache publishes each page of its first list (`loading`)
        if gen == self._last_generation or self._computing or not nodes.generation:
            return
        self._computing = True
        self.compute_view(gen)

    @work(thread=True, exclusive=True, group="view", exit_on_error=False)
    def compute_view(self, gen: tuple[int, ...]) -> None:
        try:
            snap = self.kube.snapshot()
            vms = match_nodes(snap.nodes.values(), self.servers) if self.servers else None
            rows = node_rows(snap, vms)
            by_node = snap.pods_by_node()
            pending = sorted(
                (p for p in by_node.get("", ()) if p.phase == "Pending"), key=lambda p: (p.namespace, p.name)
            )
            view = ClusterView(snap, rows, {r.name: r for r in rows}, by_node, pending, gen)
        finally:
            self._computing = False
        self.post_message(NodesChanged(view))

    def on_nodes_changed(self, message: NodesChanged) -> None:
        if message.view.generation[-1] != id(self.kube):
            return  # computed for a context we left
        self._last_generation = message.view.generation
        self.view = message.view
        for screen in self.screen_stack:
            if hasattr(screen, "view_changed"):
                screen.view_changed(self.view)

    @work(thread=True, exclusive=True, group="vms", exit_on_error=False)
    def refresh_vms(self) -> None:
        listing = self.vms.list()
        problems = list(listing.problems)
        try:
            flavors = self.flavors or self.vms.flavors()
        except VmListError as e:  # the VMs were listed: show them, say why the flavors are missing
            flavors = []
            problems.append(str(e))
        self.post_message(VMsLoaded(listing.vms, flavors, problems))

    def on_vms_loaded(self, message: VMsLoaded) -> None:
        self.servers = message.servers
        self.flavors = message.flavors
        self._vm_generation += 1
        if message.problems != self.vm_problems:  # one backend failed while the other answered: say it once
            for problem in message.problems:
                self.notify(problem, title="VMs", severity="warning", timeout=15)
        self.vm_problems = message.problems

    @property
    def show_vms(self) -> bool:
        return self.vms is not None

    @work(thread=True, exclusive=True, group="probe", exit_on_error=False)
    def probe_api(self) -> None:
        from kubernetes import client

        server = getattr(self.kube.target, "server", "")
        try:
            client.VersionApi(self.kube.api_client).get_code(_request_timeout=5)
        except Exception as e:  # any failure becomes a message for the user
            self.post_message(ApiProbed(server, self._explain(e)))
            return
        self.post_message(ApiProbed(server, None))

    def on_api_probed(self, message: ApiProbed) -> None:
        self.api_error = message.error
        if message.error:
            self.notify(message.error, title="Kubernetes API", severity="error", timeout=30)
        for screen in self.screen_stack:
            if hasattr(screen, "view_changed"):
                screen.view_changed(self.view)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place worker failures become notifications that say what to do."""
        if event.state == WorkerState.SUCCESS:
            self._worker_errors.pop(event.worker.group, None)
        if event.state != WorkerState.ERROR or event.worker.error is None:
            return
        if event.worker.group == "view":
            self._computing = False
        text = self._explain(event.worker.error)
        if self._worker_errors.get(event.worker.group) == text:
            return  # a periodic worker failing the same way again: said already
        self._worker_errors[event.worker.group] = text
        self.notify(text, title=f"{event.worker.group} failed", severity="error", timeout=15)

    # -- contexts --------------------------------------------------------
    @work(thread=True, exclusive=True, group="contexts", exit_on_error=False)
    def list_contexts(self) -> None:
        from console.kube.connection import contexts

        names, current = contexts(self.kube.target.kubeconfig)
        self.post_message(ContextsListed(names, self.kube.target.context or current))

    def on_contexts_listed(self, message: ContextsListed) -> None:
        from console.tui.screens.pickers import ContextPicker

        def chosen(name: str | None) -> None:
            if name:
                self.switch_context(name)

        self.push_screen(ContextPicker(message.contexts, message.current), chosen)

    @work(thread=True, exclusive=True, group="contexts", exit_on_error=False)
    def switch_context(self, name: str) -> None:
        from console.config import ConfigError, for_context
        from console.kube.cluster import Cluster
        from console.kube.connection import KubeConfigError

        try:  # the settings of the new context (read_only, theme, …), resolved as at start
            settings = for_context(self.settings, name)
        except ConfigError as e:
            self.post_message(ContextSwitched(None, f"not switched to {name}: {e}", name))
            return
        factory = self.kube_factory or Cluster
        self.call_from_thread(self.notify, f"connecting to context {name}…", timeout=3)
        try:
            new = factory(self.kube.target.kubeconfig, name)
        except KubeConfigError as e:
            self.post_message(ContextSwitched(None, explain(e), name))
            return
        new.start()
        self.post_message(ContextSwitched(new, None, name, settings))

    def on_context_switched(self, message: ContextSwitched) -> None:
        if message.error or message.kube is None:
            self.notify(message.error or "context switch failed", severity="error", timeout=15)
            return
        old = self.kube
        if self.events is not None:
            self.events.stop()
        self.kube = message.kube
        self.label = ""
        self.stale = None
        old.stop()
        if message.settings is not None:
            previous, self.settings = self.settings, message.settings
            if self.settings.theme != previous.theme:
                self._use_theme(self.settings.theme)
            if self.settings.key_overrides != previous.key_overrides:
                self.set_keymap(dict(self.settings.key_overrides))
            # read-only is the session's: the new context's setting holds below the UI too
            self.guard = Guard(read_only=self.settings.read_only, audit=self.guard.audit)
        self._start_events()
        self._watch_health()
        self._last_generation = None
        self.view = ClusterView.empty()
        self._update_subtitle()
        while len(self.screen_stack) > 1 and not isinstance(self.screen, _root_type()):
            self.pop_screen()
        mode = "; read-only" if self.settings.read_only else ""
        self.notify(f"switched to context {message.context} ({self.kube.target.server}){mode}")
        self.probe_api()

    # -- navigation ------------------------------------------------------
    def action_command_bar(self) -> None:
        from console.tui.screens.pickers import CommandBar

        def run(text: str | None) -> None:
            if text:
                self.run_command_text(text)

        self.push_screen(CommandBar(), run)

    def run_command_text(self, text: str) -> None:
        try:
            cmd = parse_command(text)
        except CommandError as e:
            self.notify(str(e), severity="warning")
            return
        self.run_command(cmd)

    def run_command(self, cmd: Command) -> None:
        from console.tui import navigation

        navigation.run(self, cmd)

    def action_help(self) -> None:
        from console.tui.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.screen))

    def action_back(self) -> None:
        if len(self.screen_stack) > 1:
            self.pop_screen()


def _hms(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def _root_type() -> type:
    from console.tui.screens.nodes import NodesScreen

    return NodesScreen
