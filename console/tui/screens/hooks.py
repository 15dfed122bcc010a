"""`:hooks` — NFD hooks (source.d) and feature files (features.d) where the cluster's nfd-worker reads them.

Cluster mode (`hook_store: cluster`, the default): the nfd-worker DaemonSet's volumes say where the files are (a
hostPath on each node, or a ConfigMap; console/kube/nfdfiles.py). The screen lists what each node has and where
nodes differ (≠: same name, different content; n/m: missing on some), edits one file, previews the labels it
gives on each chosen node with this cluster's NFD, then pushes or removes it after a confirmation naming the
nodes and the target, reports per node and watches the nodes' labels until NFD has relabelled them. Nodes are
marked in the node table (space / enter, a: all) or chosen by a label selector (l). A ConfigMap reaches every
node nfd-worker runs on, whatever is marked; the confirmation says so. Every write carries the version of the file
each node had when the editor loaded it, and a node whose file changed since is a conflict shown as the rules
editor shows one (hooks_conflict.py). Where this user may not read the files (RBAC: node access, the ConfigMap),
the list and the node table say so and why, without trying.

Directory mode (`hook_store: directory`): a local source.d / features.d for offline editing, saved with
content-hash conflict detection.

All I/O runs in thread workers that report by the typed messages of hooks_messages.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from console.config import Settings
from console.gateways import Gateways
from console.guard import GuardRefusal
from console.kube.nfdfiles import NodeListing, wait_relabel
from console.kube.nfdstore import DirectoryHookStore, NfdStoreError, StoredFile, hook_store
from console.nfd import versions as V
from console.nfd_preview import PREVIEW_TIMEOUT, FilePreview, hook_to_feature_file, hooks_note, preview_file
from console.tui.safety import ConfirmDanger, allow_action, dangerous
from console.tui.screens import hooks_view as view
from console.tui.screens.editor_base import EditorScreen
from console.tui.screens.hooks_conflict import Concurrency, Versions
from console.tui.screens.hooks_dir import DirectoryMode
from console.tui.screens.hooks_messages import (
    FilePreviewReady,
    FileRead,
    FilesWritten,
    NewFileDialog,
    NodePreviewsReady,
    RelabelDone,
    RelabelProgress,
    TargetsLoaded,
)
from console.tui.screens.hooks_nodes import NodeChoice
from console.tui.widgets.cells import theme_colors
from console.tui.widgets.diff import unified_text
from console.tui.widgets.editor import load_into
from console.tui.widgets.nfdstatus import NfdStatusLine

HOOK_TEMPLATE = ("#!/bin/sh\n# Each line 'key=value' (or 'key') printed on stdout becomes a node label.\n"
                 "echo MY_FEATURE=true\n")
FEATURE_TEMPLATE = "# Each line 'key=value' (or 'key') becomes a node label.\nMY_FEATURE=true\n"
PREVIEW_NODES = 16  # nodes a hook is run for in one preview (each run is a process); the rest are counted


class _Stopped(Exception):
    """The relabel wait's worker was cancelled (the screen was left)."""


class HooksScreen(NodeChoice, DirectoryMode, Concurrency, EditorScreen):
    CSS_PATH = Path(__file__).with_suffix(".tcss")
    PREFIX = "hooks"
    LIST_TITLE = "hooks & feature files"
    OUTPUT_TITLE = "preview"
    LOADING = "Loading hooks and feature files…"
    HINT = "e edits the file · ctrl+r previews it on the chosen nodes · ctrl+s pushes it"
    EDIT_ACTIONS = frozenset({"save", "not_saved", "preview", "reload"})
    BROWSE_KEYS = "d: diff · space: mark · n: new"
    BROWSE_KEYS_READ_ONLY = "d: diff · space: mark"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "edit", "Edit", id="hooks-edit"),
        dangerous(Binding("ctrl+s", "save", "Push", id="hooks-save"), needs="hook-save"),
        Binding("ctrl+s", "not_saved", "Push", show=False, id="hooks-save-read-only"),
        dangerous(Binding("x", "remove", "Remove", id="hooks-remove"), needs="hook-save"),
        Binding("ctrl+r", "preview", "Preview", id="hooks-preview"),
        Binding("space", "toggle_node", "Mark", id="hooks-mark"),
        Binding("a", "mark_all", "All nodes", id="hooks-mark-all", show=False),
        Binding("l", "selector", "Selector", id="hooks-selector", show=False),
        Binding("d", "diff", "Diff", id="hooks-diff"),
        Binding("v", "diff_mode", "Split/unified", id="hooks-diff-mode", show=False),
        dangerous(Binding("n", "new_file", "New", id="hooks-new"), needs="hook-save"),
        dangerous(Binding("c", "convert", "To feature file", id="hooks-convert", show=False), needs="hook-save"),
        Binding("ctrl+l", "reload", "Reload", id="hooks-reload", show=False),
        Binding("escape", "back", "Back", id="hooks-back"),
    ]

    def __init__(self, gateways: Gateways | None = None, settings: Settings | None = None, *,
                 deployment: Any = None, preview_timeout: float = PREVIEW_TIMEOUT) -> None:
        super().__init__(gateways, settings)
        self.preview_timeout = preview_timeout
        self.deployment = deployment  # console/nfd/deployment.NfdDeployment; None: discovered on mount
        self.store: DirectoryHookStore | None = None  # directory mode
        self.targets: dict[str, Any] = {}  # cluster mode: kind -> FileTarget
        self.listings: dict[str, list[NodeListing]] = {}
        self.marked: set[str] = set()
        self.files: list[StoredFile] = []  # directory mode: the store's; cluster mode: one per list entry
        self.entries: list[view.Entry] = []
        self.current: StoredFile | None = None  # cluster mode: version = the version read, location = the node
        self._asked: tuple[str, str] | None = None  # the file last asked for: a read of another, back late, is dropped
        self.drafts: dict[tuple[str, str], str] = {}
        self.bases: dict[tuple[str, str], tuple[StoredFile, Versions]] = {}  # cluster mode: hooks_conflict.py
        self.preview: FilePreview | None = None
        self.preview_content: str | None = None
        self.node_previews: dict[str, FilePreview] = {}
        self._pending: tuple[str, list[str]] | None = None  # (verb, nodes) waiting for its previews
        self._convert_after_preview = False
        self._preview_seq = 0
        self._noted: set[str] = set()  # the mount notes already toasted
        self._report = Text()  # the last write's report; the relabel outcome is shown under it
        self._status_head = ""  # cluster mode: the deployment's status line

    @property
    def cluster_mode(self) -> bool:
        return self.settings.hook_store != "directory"

    def hint(self) -> str:
        if self.read_only:
            return "e edits the file · ctrl+r previews it on the chosen nodes · read-only: nothing is pushed"
        if allow_action(self.app, "save") is not True:  # RBAC: ctrl+s is dimmed, so the hint does not offer it
            return "e edits the file · ctrl+r previews it on the chosen nodes"
        return self.HINT

    # -- unsaved edits (editor_base) ----------------------------------------------------------------------
    def open_name(self) -> str | None:
        return self.current.name if self.current is not None else None

    def saved_text(self) -> str | None:
        return self.current.content if self.current is not None else None

    def can_edit(self) -> str:
        if self.current is not None:
            return ""
        return "open a hook or feature file first" + (" (or n: new)" if self._offers_new() else "")

    def _offers_new(self) -> bool:
        """Whether `n` makes a new file here (not read-only, and RBAC lets this user write the files)."""
        return not self.read_only and allow_action(self.app, "new_file") is True

    def compose_under_editor(self) -> ComposeResult:
        yield Input(placeholder="l: label selector · space marks a node", id="hooks-selector-input")
        yield DataTable(id="hooks-nodes", cursor_type="row", zebra_stripes=False)

    def on_mount(self) -> None:
        self.mount_common()
        self.mount(NfdStatusLine(self.gateways, id="hooks-nfd"), before="#hooks-status")  # NFD as deployed
        table = self.query_one("#hooks-nodes", DataTable)
        table.add_columns("", "node", "this file")
        self.set_class(not self.cluster_mode, "-directory")  # no nodes to choose (hooks.tcss hides the table)
        self._render_status()
        if self.cluster_mode:
            self.load_targets()
            return
        try:
            self.store = hook_store(self.settings, guard=self.guard)
        except NfdStoreError as e:
            self.notify(str(e), title="no hook store", severity="error")
        self.load_files()

    def on_unmount(self) -> None:
        self.workers.cancel_group(self, "hooks-relabel")

    # -- status -------------------------------------------------------------------------------------------
    def _render_status(self, where: str = "") -> None:
        ro = " · read-only: push and remove are disabled" if self.read_only else ""
        if not where:
            where = self.store.description if self.store else ("finding nfd-worker…" if self.cluster_mode else
                                                               "no hook store")
        # the note first, each line cut with … (hooks.tcss): at 80 columns the location must not push it out
        self.query_one("#hooks-status", Static).update(f"{hooks_note(self.version)}{ro}\n{where}")

    # -- cluster mode: loading ----------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="hooks-load", exit_on_error=False)
    def load_targets(self) -> None:
        version, text = self.version, f"NFD {self.version} (from settings)"
        if self.gateways is None:
            self.post_message(TargetsLoaded(None, {}, {}, version, text, error="no cluster connection: set "
                                            "hook_store: directory and hook_dir to edit files offline"))
            return
        deployment = self.deployment if self.deployment is not None else self.gateways.nfd_deployment()
        if deployment is None:
            self.post_message(TargetsLoaded(None, {}, {}, version, text, error=(
                "no NFD found in this cluster (no nfd-worker DaemonSet): previews still work; set "
                "hook_store: directory and hook_dir to edit files offline")))
            return
        if not self.settings.nfd_version and deployment.version is not None:
            version, text = deployment.version, f"NFD {deployment.version} (detected)"
        targets: dict[str, Any] = {}
        listings: dict[str, list[NodeListing]] = {}
        notes: list[str] = []
        for kind in ("hook", "feature"):
            mount = deployment.mounts.get(kind)
            if mount is None or mount.source in ("none", "other"):
                # v0.17+ has no hooks: the status line says so already, and source.d is rightly not mounted
                if kind == "feature" or V.hooks_status(version) != "removed":
                    where = "source.d" if kind == "hook" else "features.d"
                    notes.append(f"nfd-worker has no {where} the console can write "
                                 f"({mount.source if mount else 'none'})")
                continue
            try:
                target = self.gateways.nfd_files(kind, deployment, settings=self.settings, guard=self.guard)
                nodes = target.nodes()
                # what RBAC will not let this user read is said, not tried (no refused node-debug pod per node)
                why = self.gateways.access.cannot(target.read_needs())
                listings[kind] = [NodeListing(n, (), why) for n in nodes] if why else target.list(nodes)
            except NfdStoreError as e:
                notes.append(f"{kind}s: {e}")
                continue
            targets[kind] = target
        self.post_message(TargetsLoaded(deployment, targets, listings, version, text, notes))

    def on_targets_loaded(self, msg: TargetsLoaded) -> None:
        self.deployment, self.targets = msg.deployment, dict(msg.targets)
        self.listings = {kind: list(found) for kind, found in msg.listings.items()}
        self.version, self.version_text = msg.version, msg.version_text
        if msg.error:
            self.notify(msg.error, title="hooks", severity="warning", timeout=12)
        for note in msg.notes:
            if note not in self._noted:  # once per screen, not on every reload after a push
                self._noted.add(note)
                self.notify(note, title="nfd-worker mounts", severity="warning")
        self._status_head = msg.deployment.status_line() if msg.deployment is not None else msg.error
        self.entries = view.entries(self.listings)
        self.files = [StoredFile(e.kind, e.name, "", "", "") for e in self.entries]  # type: ignore[arg-type]
        self._fill_list([(e.id, e.label) for e in self.entries], view.unreadable(self.listings))
        if self.current is None and self.entries:
            self._open_entry(self.entries[0])
        self._fill_nodes()

    def _fill_list(self, items: Sequence[tuple[str, str]], unreadable: str = "") -> None:
        """The files; none: why not (what could not be read, else whether n makes one)."""
        olist = self.query_one("#hooks-list", OptionList)
        olist.clear_options()
        for oid, label in items:
            olist.add_option(Option(label, id=oid))
        if not items:
            empty = f"({unreadable})" if unreadable else "(none yet: press n)" if self._offers_new() else "(none yet)"
            olist.add_option(Option(empty, id="none", disabled=True))
        elif olist.highlighted is None:
            olist.highlighted = 0

    def _reach(self, kind: str) -> list[str]:
        return [x.node for x in self.listings.get(kind, []) if not x.error]

    def _fill_nodes(self) -> None:
        table = self.query_one("#hooks-nodes", DataTable)
        table.clear()
        cur = self.current
        kind = cur.kind if cur else "feature"
        listings = self.listings.get(kind) or next(iter(self.listings.values()), [])
        states = view.node_states(listings, cur.name if cur else None)
        for x in listings:
            table.add_row("●" if x.node in self.marked else " ", x.node, states.get(x.node, ""), key=x.node)
        # sized here: DataTable's auto width sometimes kept the label's width after a refill ("differs (" cut)
        column = table.ordered_columns[2]
        column.auto_width = False
        column.width = max([len("this file"), *(len(states.get(x.node, "")) for x in listings)])
        target = self.targets.get(kind)
        reaches_all = target is not None and target.mount.source == "configMap"
        self.query_one("#hooks-selector-input", Input).placeholder = (
            f"l: label selector · space marks a node · {len(self.marked)} marked"
            + (" · the ConfigMap reaches all" if reaches_all else ""))
        # the status line names where the open file's kind goes (the volume, the ConfigMap or the hostPath)
        where = target.description if target is not None else f"nfd-worker reads no {kind}s the console can write"
        # the deployment's own line is the NfdStatusLine above; without a deployment, why
        self._render_status(where if self.deployment is not None else f"{self._status_head} · {where}")

    @on(OptionList.OptionSelected, "#hooks-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        kind, _, name = (event.option.id or "").partition(":")
        cur = self.current
        if cur is not None and (cur.kind, cur.name) == (kind, name):
            self.editor.focus()  # already open: nothing to ask
            return
        self.ask_discard(lambda: self._open_selected(kind, name), f"open {name}")

    def _open_selected(self, kind: str, name: str) -> None:
        if self.cluster_mode:
            entry = next((e for e in self.entries if (e.kind, e.name) == (kind, name)), None)
            if entry is not None:
                self._open_entry(entry)
            return
        f = next((f for f in self.files if f.kind == kind and f.name == name), None)
        if f is not None:
            self.open_file(f)
            self.editor.focus()

    def _open_entry(self, entry: view.Entry, node: str | None = None) -> None:
        node = node or view.majority_node(self.listings.get(entry.kind, []), entry.name)
        if node is None:
            return
        self._asked = (entry.kind, entry.name)
        self.read_file(entry.kind, entry.name, node)

    @work(thread=True, exclusive=True, group="hooks-read", exit_on_error=False)
    def read_file(self, kind: str, name: str, node: str) -> None:
        try:
            state = self.targets[kind].read(node, name)
        except (NfdStoreError, GuardRefusal) as e:
            self.post_message(FileRead(kind, name, node, None, str(e)))
            return
        self.post_message(FileRead(kind, name, node, state.content, version=state.version))

    def on_file_read(self, msg: FileRead) -> None:
        if (msg.kind, msg.name) != self._asked:  # the admin opened another file meanwhile
            return
        if msg.content is None:
            self.notify(msg.error or f"{msg.name} is gone from {msg.node}; ctrl+l reloads", severity="warning")
            return
        self.open_file(self.loaded(msg.kind, msg.name, msg.node, msg.content, msg.version))
        self._fill_nodes()

    def _chosen(self, kind: str) -> tuple[list[str], str]:
        """The nodes a push / remove of `kind` reaches, and a note when that is not the marked ones."""
        reach = self._reach(kind)
        target = self.targets.get(kind)
        if target is not None and target.mount.source == "configMap":
            extra = sorted(self.marked - set(reach))
            note = "A ConfigMap reaches every node nfd-worker runs on, marked or not."
            return reach, note + (f" Not reached: {view.named(extra)}." if extra else "")
        return [n for n in reach if n in self.marked], ""

    # -- editing ------------------------------------------------------------------------------------------
    def open_file(self, f: StoredFile) -> None:
        self._asked = (f.kind, f.name)
        if self.current is not None:
            key = (self.current.kind, self.current.name)
            if self.editor.text != self.current.content:
                self.drafts[key] = self.editor.text  # keep unsaved edits while switching files
            else:
                self.drafts.pop(key, None)
        same = self.current is not None and (self.current.kind, self.current.name) == (f.kind, f.name)
        self.current = f
        text = self.drafts.get((f.kind, f.name), f.content)
        # a second read of the open file (two loads of the targets before the first read was back) must not
        # reload the editor under the admin's typing: load_text puts the cursor at the top, and the rest of the
        # line being typed lands there
        if not (same and self.editor.text == text):
            load_into(self.editor, f.kind, f.name, text)
        self.preview, self.preview_content, self.node_previews = None, None, {}
        where = f"from {f.location}" if f.location else "(new)"
        keys = "e: edit · ctrl+r: preview · d: diff · " + ("read-only: nothing is saved" if self.read_only
                                                           else "ctrl+s: push")
        self._show_result(Text(f"{f.kind} {f.name} {where}. {keys}"))
        self.render_mode()

    def action_reload(self) -> None:
        self.ask_discard(self._reload, "reload")

    def _reload(self) -> None:
        if self.current is not None:
            self.drafts.pop((self.current.kind, self.current.name), None)
        self.current = None
        if self.cluster_mode:
            self.load_targets()
        else:
            self.load_files()

    def action_new_file(self) -> None:
        if not self.cluster_mode and self.store is None:
            self.notify("no hook store: set hook_dir in config.yaml", severity="warning")
            return
        self.ask_discard(self._new_file, "start a new file")

    def _new_file(self) -> None:

        def created(result: tuple[str, str] | None) -> None:
            if not result:
                return
            kind, name = result
            if any(f.kind == kind and f.name == name for f in self.files):
                self.notify(f"{kind} {name} exists already: pick it in the list", severity="warning")
                return
            if self.cluster_mode and kind not in self.targets:
                self.notify(f"nfd-worker reads no {kind}s here (see the status line)", severity="warning")
                return
            location = self.store.location(kind) if self.store else ""  # type: ignore[arg-type]
            self.open_file(StoredFile(kind, name, "", "", location))  # type: ignore[arg-type]
            load_into(self.editor, kind, name, HOOK_TEMPLATE if kind == "hook" else FEATURE_TEMPLATE)
            self.render_mode()
            self.editor.focus()

        self.app.push_screen(NewFileDialog(), created)

    def _deployed(self) -> tuple[str, str] | None:
        if self.current is None:
            return None
        if self.current.version:
            return self.current.content, f"on {self.current.location}" if self.cluster_mode else "deployed"
        return "", "(new file)"

    # -- preview ------------------------------------------------------------------------------------------
    def action_preview(self) -> None:
        if self.current is None:
            self.notify("open a hook or feature file first", severity="warning")
            return
        self._start_preview(self.editor.text)

    def _start_preview(self, content: str, nodes: Sequence[str] | None = None) -> None:
        assert self.current is not None
        what = "running hook" if self.current.kind == "hook" else "parsing"
        self._show_result(Text(f"{what} {self.current.name} (timeout {self.preview_timeout:g}s)…"))
        self.query_one("#hooks-output").loading = True
        self._preview_seq += 1
        if not self.cluster_mode:
            self.run_preview(self.current.kind, self.current.name, content, self._preview_seq)
            return
        if nodes is None:
            chosen, _ = self._chosen(self.current.kind)
            nodes = chosen or self._reach(self.current.kind)
        self.run_node_previews(self._preview_seq, self.current.kind, self.current.name, content, list(nodes))

    @work(thread=True, exclusive=True, group="hooks-preview", exit_on_error=False)
    def run_preview(self, kind: str, name: str, content: str, seq: int = 0) -> None:
        # the hook runs in a scratch directory with a timeout and an output cap, off the UI thread
        self.post_message(FilePreviewReady(preview_file(kind, name, content, self.version,
                                                        timeout=self.preview_timeout), content, seq))

    @work(thread=True, exclusive=True, group="hooks-preview", exit_on_error=False)
    def run_node_previews(self, seq: int, kind: str, name: str, content: str, nodes: list[str]) -> None:
        """One preview per node with this cluster's master configuration (a hook sees the node's NODE_NAME)."""
        config = self.deployment.master_config() if self.deployment is not None else None
        if config is not None and self.settings.nfd_version:
            config = replace(config, version=self.version)
        previews: dict[str, FilePreview] = {}
        first: FilePreview | None = None
        for node in nodes:
            if kind == "feature" and first is not None:  # a feature file does not depend on the node
                previews[node] = first
                continue
            if kind == "hook" and len(previews) >= PREVIEW_NODES:
                break
            previews[node] = first = preview_file(kind, name, content, self.version, config=config, node_name=node,
                                                  timeout=self.preview_timeout)
        self.post_message(NodePreviewsReady(seq, kind, name, content, previews))

    def on_file_preview_ready(self, msg: FilePreviewReady) -> None:
        if msg.seq != self._preview_seq:
            return  # an older run that finished late (a thread cannot be cancelled)
        self.query_one("#hooks-output").loading = False
        self.preview, self.preview_content = msg.preview, msg.content
        self._show_result(view.render_preview(msg.preview, self.version_text, theme_colors(self.app)))
        if self._convert_after_preview:
            self._convert_after_preview = False
            self.action_convert()

    def on_node_previews_ready(self, msg: NodePreviewsReady) -> None:
        if msg.seq != self._preview_seq:
            return
        self.query_one("#hooks-output").loading = False
        self.node_previews = dict(msg.previews)
        grouped = view.group_previews(msg.previews)
        self.preview, self.preview_content = (grouped[0][1] if grouped else None), msg.content
        out = Text()
        for nodes, p in grouped:
            out.append_text(view.render_preview(p, self.version_text, theme_colors(self.app), nodes))
        self._show_result(out if grouped else Text("no node to preview on: mark nodes or type a selector (l)"))
        if self._pending is not None:
            verb, pending_nodes = self._pending
            self._pending = None
            self._confirm_write(verb, pending_nodes, msg.content, grouped)
        elif self._convert_after_preview:
            self._convert_after_preview = False
            self.action_convert()

    # -- push / remove ------------------------------------------------------------------------------------
    def _refuse_read_only(self, verb: str) -> bool:
        if self.read_only:
            self.notify(f"read-only mode: {verb} is disabled", severity="warning")
        return self.read_only

    def action_save(self) -> None:
        if self._refuse_read_only("push"):
            return
        cur = self.current
        if cur is None:
            self.notify("nothing to push: open or create a file first", severity="warning")
            return
        if not self.cluster_mode:
            self._save_directory(cur)
            return
        self._begin_write("Push", cur, self.editor.text)

    def action_remove(self) -> None:
        if self._refuse_read_only("remove"):
            return
        cur = self.current
        if cur is None or not cur.version:
            self.notify("open a file that exists on the nodes to remove it", severity="warning")
            return
        if not self.cluster_mode:
            self._confirm_directory_delete(cur)
            return
        self._begin_write("Remove", cur, cur.content)

    def _begin_write(self, verb: str, cur: StoredFile, content: str) -> None:
        if cur.kind not in self.targets:
            self.notify(f"nfd-worker reads no {cur.kind}s from anything the console can write", severity="warning")
            return
        nodes, _ = self._chosen(cur.kind)
        if not nodes:
            self.notify("no node chosen: mark nodes (space, a: all) or type a label selector (l)", severity="warning")
            return
        self._pending = (verb, nodes)
        self._start_preview(content, nodes)  # the confirmation shows the labels it gives on those nodes

    def _confirm_write(self, verb: str, nodes: list[str], content: str,
                       grouped: Sequence[tuple[tuple[str, ...], FilePreview]]) -> None:
        cur = self.current
        if cur is None:
            return
        target = self.targets[cur.kind]
        _, note = self._chosen(cur.kind)
        if verb == "Push":
            states = view.node_states(self.listings.get(cur.kind, []), cur.name)
            if cur.version and content == cur.content and all(states.get(n) == "same" for n in nodes):
                self.notify(f"{cur.name}: every chosen node has this content already; nothing to push")
                return
            diff = unified_text(cur.content if cur.version else "", content,
                                f"on {cur.location}" if cur.version else "(new file)", "edited")
        else:
            diff = ""
        body = view.confirm_text(verb, target.description, nodes, diff, grouped, note)

        def confirmed(ok: bool | None) -> None:
            if ok:
                self.write_files(verb, cur.kind, cur.name, content, nodes, dict(self.node_previews),
                                 self.expected(cur.kind, cur.name, nodes))

        self.app.push_screen(ConfirmDanger(verb, f"{cur.kind} {cur.name} on {len(nodes)} node(s)", body), confirmed)

    @work(thread=True, exclusive=True, group="hooks-write", exit_on_error=False)
    def write_files(self, verb: str, kind: str, name: str, content: str, nodes: list[str],
                    previews: Mapping[str, FilePreview], expected: Versions) -> None:
        """Push or remove on `nodes`, each written only while it has the version `expected` (hooks_conflict.py)."""
        target = self.targets[kind]
        try:  # the target's guard refuses it in read-only and audits it (intent before, outcome after)
            results = (target.push(name, content, nodes, expected=expected) if verb == "Push"
                       else target.remove(name, nodes, expected=expected))
        except (NfdStoreError, GuardRefusal) as e:
            self.post_message(FilesWritten(verb, kind, name, [], {}, e, content))
            return
        expected_labels: dict[str, dict[str, str | None]] = {}
        for r in results:
            p = previews.get(r.node)
            if r.ok and r.changed and p is not None and view.labels_appear(kind, self.version, self.deployment):
                expected_labels[r.node] = {k: (v if verb == "Push" else None) for k, v in p.labels.items()}
        self.post_message(FilesWritten(verb, kind, name, results, expected_labels, content=content))

    def on_files_written(self, msg: FilesWritten) -> None:
        colors = theme_colors(self.app)
        if msg.error is not None:
            if isinstance(msg.error, GuardRefusal):
                self.notify_refusal(msg.error, "written; audit record missing", f"{msg.verb.lower()} refused")
            else:
                self.notify(str(msg.error), title=f"{msg.verb.lower()} refused", severity="error", timeout=15)
            self._show_result(Text(f"✗ {msg.error}", style=colors.get("error", "red")))
            return
        failed = [r for r in msg.results if not r.ok and not r.conflict]
        if not any(r.conflict for r in msg.results):  # a conflict opens its dialog, which says it all
            self.notify(f"{msg.verb.lower()} {msg.kind} {msg.name}: {len(msg.results) - len(failed)} ok, "
                        f"{len(failed)} failed", severity="error" if failed else "information")
        report = view.report_text(msg.verb, msg.kind, msg.name, msg.results, colors)
        self._report = report.copy()  # the relabel outcome goes above it (80×24 shows the panel's first lines)
        if msg.expected:
            report.append(f"waiting for NFD to relabel {len(msg.expected)} node(s)…\n", style="italic")
            self.wait_for_labels(dict(msg.expected))
        elif any(r.changed for r in msg.results):
            report.append("nfd-worker does not turn this file into labels here (see the status line)\n",
                          style=colors.get("warning", "yellow"))
        self._show_result(report)
        self.rebase(msg)
        self.render_mode()  # what was pushed is what is saved now: no `● unsaved`
        self.load_targets()  # the listings as the nodes have them now
        self.show_conflict(msg)  # theirs against mine, where a node's file changed since it was loaded

    @work(thread=True, exclusive=True, group="hooks-relabel", exit_on_error=False)
    def wait_for_labels(self, expected: dict[str, dict[str, str | None]]) -> None:
        worker = get_current_worker()

        def progress(text: str) -> None:
            if worker.is_cancelled:
                raise _Stopped
            self.post_message(RelabelProgress(text))

        timeout = view.relabel_timeout(self.deployment, self.targets.values())
        assert self.gateways is not None
        try:
            seen = wait_relabel(self.gateways.api_client, expected, timeout=timeout, progress=progress)
        except _Stopped:
            return
        self.post_message(RelabelDone(expected, seen))

    def on_relabel_progress(self, msg: RelabelProgress) -> None:
        self.query_one("#hooks-output").border_title = f"relabel: {msg.text}"

    def on_relabel_done(self, msg: RelabelDone) -> None:
        out = view.relabel_text(msg.expected, msg.seen, theme_colors(self.app))
        out.append_text(self._report)
        self._show_result(out)
        self.query_one("#hooks-output", VerticalScroll).scroll_home(animate=False)

    # -- hook -> feature file -----------------------------------------------------------------------------
    def action_convert(self) -> None:
        cur = self.current
        if cur is None or cur.kind != "hook":
            self.notify("open a hook to turn it into a feature file", severity="warning")
            return
        if self._refuse_read_only("saving"):
            return
        if self.preview is None or self.preview_content != self.editor.text:
            self._convert_after_preview = True
            self.action_preview()
            return
        hook = self.preview.hook
        if hook is None or not hook.ok:
            self.notify(f"{cur.name} did not run cleanly ({hook.error if hook else 'not run'}); fix it first",
                        severity="error")
            return
        content = hook_to_feature_file(cur.name, hook, self.version)
        if any(f.kind == "feature" and f.name == cur.name for f in self.files):
            self.notify(f"a feature file {cur.name} exists already; rename the hook or edit that file",
                        severity="warning")
            return
        if self.cluster_mode:  # a new feature file in the editor: push it to the nodes like any other
            self.open_file(StoredFile("feature", cur.name, "", "", ""))
            load_into(self.editor, "feature", cur.name, content)
            self.render_mode()
            self.notify(f"feature file {cur.name} made from the hook's output; ctrl+s pushes it")
            return
        if self.store is None:
            return
        target = StoredFile("feature", cur.name, "", "", self.store.location("feature"))
        def confirmed(ok: bool | None) -> None:
            if ok:
                self.save_file(target, content, "")

        self.app.push_screen(ConfirmDanger("Create feature file", target.target, content), confirmed)
