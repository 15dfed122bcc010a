"""The Textual application: wiring only — gateways in, screens out, workers report by messages."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.events import Key, Resize
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from console.config import Settings
from console.gateways import ClusterFactory, Gateways, vm_inventory_for
from console.guard import Guard
from console.infra.inventory import VmListError
from console.infra.sizes import FlavorInfo
from console.infra.vms import VmView
from console.kube.clusterview import build_view
from console.planner.model import Plan, PlanInput
from console.tui.appbase import ConsoleAppBase, FleetRefused, PreparedFleet
from console.tui.command_grammar import Command, CommandError, parse_command
from console.tui.commands import ConsoleCommands
from console.tui.errors import explain
from console.tui.messages import (
    AccessReviewed,
    ApiProbed,
    CacheHealthChanged,
    ClusterView,
    ContextsListed,
    ContextSwitched,
    NodesChanged,
    VMsLoaded,
)
from console.tui.themes import DEFAULT_THEME, FALLBACK_COLORS, domain_defaults, load_themes, not_found
from console.tui.unsaved import before_navigation

VM_REFRESH_SECONDS = 30.0
FLOOR = (80, 24)  # the size every screen is laid out for; below it the header says what is hidden


def small_terminal(width: int, height: int) -> str:
    """The header's notice below 80×24 ("" at or above it): the screens drop columns and collapse panels."""
    if width >= FLOOR[0] and height >= FLOOR[1]:
        return ""
    # short enough to be read whole in the header at 60 columns
    return f"{width}×{height} < {FLOOR[0]}×{FLOOR[1]}: columns, panels hidden"


class ConsoleApp(ConsoleAppBase):
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
        gateways: Gateways,
        *,
        clock: Callable[[], float] = time.time,
        kube_factory: ClusterFactory | None = None,
        refresh_interval: float = 0.25,
        vm_refresh: float = VM_REFRESH_SECONDS,
    ) -> None:
        super().__init__()
        # everything this context's screens talk to (console/gateways.py); a context switch replaces it whole
        self.gateways = gateways
        self.clock = clock
        self.label = gateways.label
        self.kube_factory = kube_factory  # (kubeconfig, context) -> Cluster for a context switch
        self.refresh_interval = refresh_interval
        self.vm_refresh = vm_refresh
        self.view = ClusterView.empty()
        self.servers: dict[str, VmView] = {}
        self.vm_problems: list[str] = []
        self.flavors: list[FlavorInfo] = []
        self.api_error: str | None = None
        self.stale: str | None = None  # "nodes: reconnecting since 14:02:11 — connection refused; …", or None
        self.loading_note: str | None = None  # "pods: loading since 14:02:11 — listing", or None
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
        self._watch_health()
        self.probe_api()
        self.review_access(self.gateways)
        self.set_interval(self.refresh_interval, self.maybe_recompute)
        if self.vms is not None:
            self.refresh_vms()
        self.set_interval(self.vm_refresh, self._refresh_vms)  # a context switch may bring VMs along

    def _refresh_vms(self) -> None:
        if self.vms is not None:
            self.refresh_vms()

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
            self.notify(f"{not_found(wanted, self._theme_names)}; using {fallback}", severity="warning", timeout=10)
            self.theme = fallback

    @property
    def theme_names(self) -> list[str]:
        """The console's themes (themes/ and the user's), as `--theme` and `:theme` name them."""
        return self._theme_names

    def switch_theme(self, name: str) -> None:
        """`:theme NAME`: the same short message as `--theme NAME` when there is no such theme."""
        if name in self.available_themes:
            self.theme = name
        else:
            self.notify(not_found(name, self._theme_names), severity="warning", timeout=10)

    def on_resize(self, event: Resize) -> None:
        self._update_subtitle(event.size)  # runs before App._on_resize stores the new size

    def _update_subtitle(self, size: Any = None) -> None:
        # below 80×24 the notice is the header's first words, on every screen (the context follows it)
        size = size or self.size
        self.title = small_terminal(size.width, size.height) or self.TITLE
        parts = [self.label or getattr(self.kube.target, "context", "")]
        if self.settings.read_only:
            parts.append("read-only")
        if self.stale:  # in the header of every screen
            parts.append(f"STALE: {self.stale}")
        if self.loading_note:  # a cache still on its first list: what is shown is not all there is yet
            parts.append(self.loading_note)
        self.sub_title = " · ".join(p for p in parts if p)

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
        """The header names every cache that is down, since when and why; one toast when the data goes stale
        and one when it is current again, not one per retry."""
        if message.kube is not self.kube:
            return
        health = message.health
        was, self.stale = self.stale, health.stale_text()
        self.loading_note = health.loading_text()
        if was and not self.stale:
            self.notify("the API server answers again; the data is current", title="Kubernetes API", timeout=8)
        elif self.stale and not was:
            from console import faults

            target = message.kube.target
            where = faults.Where(target.kubeconfig, target.context, server=target.server)
            fault = faults.classify(health.error, where) if health.error is not None else None
            data = f"data below is from {_hms(health.fresh_at)}" if health.fresh_at else "no data loaded yet"
            reason = fault.message if fault else explain(health.error) if health.error else ""
            self.notify(f"{self.stale} ({data}). {reason}".strip(), title="Kubernetes API", severity="error",
                        timeout=30)
        self._update_subtitle()
        self._redraw_screens()

    def on_unmount(self) -> None:
        self.gateways.stop()

    # -- data, off the UI thread -----------------------------------------
    def maybe_recompute(self) -> None:
        nodes, pods = self.kube.nodes, self.kube.pods
        metrics = self.metrics.generation if self.metrics is not None else -1
        # while the first pod list streams in (hundreds of pages), its pages do not recompute the view: each
        # recompute copies and joins every pod read so far, and would slow the list it waits for
        gen = (nodes.generation, -1 if pods.loading else pods.generation, self._vm_generation, metrics,
               id(self.kube))
        # paint from the first page of nodes: the cache publishes each page of its first list (`loading`)
        if gen == self._last_generation or self._computing or not nodes.generation:
            return
        self._computing = True
        self.compute_view(gen)

    @work(thread=True, exclusive=True, group="view", exit_on_error=False)
    def compute_view(self, gen: tuple[int, ...]) -> None:
        try:
            unknown = frozenset(() if self.kube.pods.synced.is_set() else ("pods",))  # before the snapshot: no race
            view = build_view(self.kube.snapshot(), self.servers,
                              self.metrics.snapshot() if self.metrics is not None else None, gen, unknown)
        finally:
            self._computing = False
        self.post_message(NodesChanged(view))

    def _redraw_screens(self) -> None:
        """Every open screen draws the current view."""
        for screen in self.screen_stack:
            if hasattr(screen, "view_changed"):
                try:
                    screen.view_changed(self.view)
                except NoMatches:  # its widgets are being removed (the screen closing, or the app): nothing to draw
                    continue

    def on_nodes_changed(self, message: NodesChanged) -> None:
        if message.view.generation[-1] != id(self.kube):
            return  # computed for a context we left
        self._last_generation = message.view.generation
        self.view = message.view
        self._redraw_screens()

    @work(thread=True, exclusive=True, group="vms", exit_on_error=False)
    def refresh_vms(self) -> None:
        vms = self.vms
        if vms is None:  # a context switch to one without VMs since the worker was asked for
            return
        listing = vms.list()
        problems = list(listing.problems)
        try:
            flavors = self.flavors or vms.flavors()
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
        self._redraw_screens()

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
        from console.kube.connection import KubeConfigError, require_context

        try:  # no such context: one line naming the kubeconfig and its contexts, before "connecting…"
            require_context(self.kube.target.kubeconfig, name)
        except KubeConfigError as e:
            self.post_message(ContextSwitched(None, str(e), name))
            return
        try:  # the settings of the new context (read_only, theme, …), resolved as at start
            settings = for_context(self.settings, name)
        except ConfigError as e:
            self.post_message(ContextSwitched(None, f"not switched to {name}: {e}", name))
            return
        self.call_from_thread(self.notify, f"connecting to context {name}…", timeout=3)
        old = self.gateways
        vms = old.vms if _infra(settings) == _infra(old.settings) else vm_inventory_for(settings)
        try:
            # read-only is the session's: the new context's setting holds below the UI too (same audit log)
            new = Gateways.connect(settings, kubeconfig=self.kube.target.kubeconfig, vms=vms,
                                   guard=Guard(read_only=settings.read_only, audit=old.guard.audit),
                                   cluster_factory=self.kube_factory)
        except KubeConfigError as e:
            self.post_message(ContextSwitched(None, explain(e), name))
            return
        new.start()
        self.post_message(ContextSwitched(new, None, name))
        self._review(new)  # this worker's thread: the footer shows the new context's permissions soon after

    def on_context_switched(self, message: ContextSwitched) -> None:
        if message.error or message.gateways is None:
            self.notify(message.error or "context switch failed", severity="error", timeout=15)
            return
        old, self.gateways = self.gateways, message.gateways
        self.label = ""
        self.stale = self.loading_note = None
        old.stop()  # its caches and event watch end; a late message from them is dropped (not self.kube)
        if self.settings.theme != old.settings.theme:
            self._use_theme(self.settings.theme)
        if self.settings.key_overrides != old.settings.key_overrides:
            self.set_keymap(dict(self.settings.key_overrides))
        if self.vms is not old.vms:
            self.servers, self.flavors, self.vm_problems = {}, [], []
            if self.vms is not None:
                self.refresh_vms()
        self._watch_health()
        self._last_generation = None
        self.view = ClusterView.empty()
        self._update_subtitle()
        while len(self.screen_stack) > 1 and not isinstance(self.screen, _root_type()):
            self.pop_screen()
        mode = "; read-only" if self.settings.read_only else ""
        self.notify(f"switched to context {message.context} ({self.kube.target.server}){mode}")
        self.refresh_bindings()
        self.probe_api()

    # -- what this user may do (console/kube/access.py) ------------------
    @work(thread=True, exclusive=True, group="access", exit_on_error=False)
    def review_access(self, gateways: Gateways) -> None:
        self._review(gateways)

    def _review(self, gateways: Gateways) -> None:
        """In a worker: the review (a few SelfSubject*Reviews), posted for the bundle it was made for."""
        self.post_message(AccessReviewed(gateways, gateways.review_access()))

    def on_access_reviewed(self, message: AccessReviewed) -> None:
        if message.gateways.cluster is not self.kube:
            return  # reviewed for a context we left
        self.gateways = self.gateways.with_access(message.access)
        unknown = message.access.unknown
        if unknown:
            self.notify(f"permissions unknown ({unknown}): actions stay offered; the API server decides",
                        title="RBAC", severity="warning", timeout=10)
        self.refresh_bindings()
        self._redraw_screens()

    def on_key(self, event: Key) -> None:
        """A key bound to an action this user may not run: say why (the footer shows it dimmed)."""
        from console.tui.safety import why_disabled

        active = self.screen.active_bindings.get(event.key)
        if active is None or active.enabled:
            return
        why = why_disabled(self, active.binding.action.split("(")[0])
        if why:
            self.notify(why, title=f"{active.binding.description}: not allowed", severity="warning", timeout=8)

    # -- runs the screens start (safety below them) ------------------------
    def prepare_fleet(self, inp: PlanInput, plan: Plan) -> PreparedFleet:
        """The fleet runbook for `plan` on this context's gateways (console/runbook/fleet.py), as `console plan
        --apply` builds it: each node the scale-up Session's run (preflight, drain rules, Lease, journal, audit),
        an unfinished fleet run continued instead (never re-planned), read-only refused by its run() before
        anything. Blocking (journals, the cluster's identity, each node's scale-up plan): a worker's.
        FleetRefused when it cannot start; a backend fault (console/faults.py) is raised as it is."""
        from console.faults import is_fault
        from console.runbook.fleet import Fleet, FleetError
        from console.runbook.fleet_preview import render_preview
        from console.runbook.scaleup import PlanRefused
        from console.runbook.session import SessionError

        settings = self.settings
        max_unavailable = getattr(getattr(settings, "plan", None), "max_unavailable", 1) or 1
        try:
            fleet = Fleet(self.gateways.scaleup_session(settings), plan, inp, max_unavailable=max_unavailable)
            preview = render_preview(fleet, fleet.preview())
        except (FleetError, SessionError, PlanRefused) as e:
            if is_fault(e):
                raise
            raise FleetRefused(f"{e}; nothing was changed") from e
        nodes = tuple(e["node"] for e in fleet.entries if e["status"] != "done")
        return PreparedFleet(fleet, fleet.fleet_id, nodes, preview, fleet.resuming)

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

    async def action_back(self) -> None:  # App's is async: the same signature, so a binding may await it
        if len(self.screen_stack) > 1:
            self.pop_screen()

    async def action_quit(self) -> None:
        self.request_quit()

    def request_quit(self) -> None:
        """ctrl+c, q on the nodes screen and :q: a screen with a run in progress asks first (scaleup.py)."""
        busy = next((s for s in reversed(self.screen_stack) if getattr(s, "leave_refusal", lambda: "")()), None)
        if busy is None:
            # an editor with unsaved edits asks first (console/tui/unsaved.py)
            before_navigation(self, self.exit, "quit")
        else:
            busy.confirm_quit()


def _infra(settings: Settings) -> tuple[Any, ...]:
    """The settings that choose the VM backends (a context may have its own cloud)."""
    return settings.cloud, settings.libvirt_uris


def _hms(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def _root_type() -> type:
    from console.tui.screens.nodes import NodesScreen

    return NodesScreen
