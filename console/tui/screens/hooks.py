"""Hooks and feature files: list, edit, preview the labels they yield, diff, save with conflict detection."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from console.config import Settings
from console.gateways import Gateways
from console.guard import GuardRefusal
from console.kube.nfdstore import (
    DEFAULT_GROUP,
    ConfigMapHookStore,
    HookStore,
    NfdStoreError,
    StoreConflict,
    StoredFile,
    hook_store,
)
from console.nfd import versions as V
from console.nfd_preview import (
    PREVIEW_TIMEOUT,
    FilePreview,
    hook_to_feature_file,
    hooks_note,
    preview_file,
    resolve_version,
)
from console.tui.safety import ConfirmDanger, dangerous
from console.tui.screens.editor_base import EditorScreen
from console.tui.widgets.diff import unified_text
from console.tui.widgets.diff_dialog import ConflictDialog
from console.tui.widgets.editor import load_into
from console.tui.widgets.nfdstatus import NfdStatusLine

STDERR_SHOWN = 2048  # bytes of a hook's stderr/stdout shown inline; the rest is summarised
HOOK_TEMPLATE = ("#!/bin/sh\n# Each line 'key=value' (or 'key') printed on stdout becomes a node label.\n"
                 "echo MY_FEATURE=true\n")
FEATURE_TEMPLATE = "# Each line 'key=value' (or 'key') becomes a node label.\nMY_FEATURE=true\n"


class FilesLoaded(Message):
    def __init__(self, files: list[StoredFile], version: V.NfdVersion, version_text: str, groups: list[str],
                 error: str = "") -> None:
        super().__init__()
        self.files, self.version, self.version_text, self.groups, self.error = (files, version, version_text,
                                                                                 groups, error)


class FilePreviewReady(Message):
    def __init__(self, preview: FilePreview, content: str, seq: int = 0) -> None:
        super().__init__()
        self.preview, self.content, self.seq = preview, content, seq


class FileSaved(Message):
    def __init__(self, file: StoredFile, previous: StoredFile) -> None:
        super().__init__()
        self.file, self.previous = file, previous


class FileSaveFailed(Message):
    def __init__(self, error: NfdStoreError | GuardRefusal, kind: str, name: str, content: str) -> None:
        super().__init__()
        self.error, self.kind, self.name, self.content = error, kind, name, content


class NewFileDialog(ModalScreen[tuple[str, str] | None]):
    """Ask for a name and whether it is a hook or a feature file."""

    DEFAULT_CSS = """
    NewFileDialog { align: center middle; }
    NewFileDialog #new-box { width: 60; height: auto; border: thick $primary; background: $surface; padding: 0 1; }
    NewFileDialog #new-buttons { height: 3; align-horizontal: right; }
    NewFileDialog Button { margin-left: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="new-file-cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="new-box"):
            yield Label("New file name (letters, digits, '-', '_', '.'):", markup=False)
            yield Input(placeholder="my-feature", id="new-name")
            with Horizontal(id="new-buttons"):
                yield Button("Hook", id="new-hook")
                yield Button("Feature file", id="new-feature", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        name = self.query_one("#new-name", Input).value.strip()
        if not name:
            self.notify("type a name first", severity="warning")
            return
        self.dismiss(("hook" if event.button.id == "new-hook" else "feature", name))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip():
            self.dismiss(("feature", event.value.strip()))

    def action_cancel(self) -> None:
        self.dismiss(None)


class HooksScreen(EditorScreen):
    """`:hooks` — the node group's hooks (source.d) and feature files (features.d)."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    PREFIX = "hooks"
    LIST_TITLE = "hooks & feature files"
    OUTPUT_TITLE = "preview"
    LOADING = "Loading hooks and feature files…"
    HINT = "ctrl+r runs a preview of the file being edited."
    BINDINGS: ClassVar[list[BindingType]] = [
        dangerous(Binding("ctrl+s", "save", "Save", id="hooks-save"), needs="hook-save"),
        Binding("ctrl+r", "preview", "Preview", id="hooks-preview"),
        Binding("d", "diff", "Diff", id="hooks-diff"),
        Binding("v", "diff_mode", "Split/unified", id="hooks-diff-mode", show=False),
        dangerous(Binding("n", "new_file", "New", id="hooks-new"), needs="hook-save"),
        dangerous(Binding("c", "convert", "To feature file", id="hooks-convert"), needs="hook-save"),
        Binding("g", "next_group", "Group", id="hooks-group", show=False),
        Binding("ctrl+l", "reload", "Reload", id="hooks-reload", show=False),
        Binding("escape", "back", "Back", id="hooks-back"),
    ]

    def __init__(self, gateways: Gateways | None = None, settings: Settings | None = None, *,
                 group: str | None = None, preview_timeout: float = PREVIEW_TIMEOUT) -> None:
        super().__init__(gateways, settings)
        self.preview_timeout = preview_timeout
        self.group = group or DEFAULT_GROUP
        self.store: HookStore | None = None  # chosen on mount, from the settings
        self.files: list[StoredFile] = []
        self.groups: list[str] = [self.group]
        self.current: StoredFile | None = None
        self.drafts: dict[tuple[str, str], str] = {}
        self.preview: FilePreview | None = None
        self.preview_content: str | None = None
        self._convert_after_preview = False
        self._preview_seq = 0

    def on_mount(self) -> None:
        self.mount_common()
        self.mount(NfdStatusLine(self.gateways, id="hooks-nfd"), before="#hooks-status")  # NFD as deployed
        self._open_store()
        self.load_files()

    def _open_store(self) -> None:
        try:
            if self.gateways is not None:
                self.store = self.gateways.hook_store(self.group, settings=self.settings, guard=self.guard)
            else:  # no cluster: only a local directory can be the store (anything else says it needs one)
                self.store = hook_store(self.settings, None, self.group, guard=self.guard)
        except NfdStoreError as e:
            self.store = None
            self.notify(str(e), title="no hook store", severity="error")

    # -- loading ------------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="hooks-load", exit_on_error=False)
    def load_files(self) -> None:
        version, text = self.version, f"NFD {self.version} (from settings)"
        error = ""
        if self.store is None:
            self.post_message(FilesLoaded([], version, text, [self.group], "no hook store configured"))
            return
        if isinstance(self.store, ConfigMapHookStore) and self.gateways is None:
            self.post_message(FilesLoaded([], version, text, [self.group], "no cluster connection"))
            return
        try:
            if not self.settings.nfd_version and self.gateways is not None:
                version, text = resolve_version(None, self.gateways.nfd_version())
            files, groups = self.store.list(), self.store.groups()
        except NfdStoreError as e:
            files, groups, error = [], [self.group], str(e)
        if not self.settings.nfd_version and self.gateways is None:
            text = f"NFD {version} (no cluster; set nfd_version to choose)"
        self.post_message(FilesLoaded(files, version, text, groups, error))

    def on_files_loaded(self, msg: FilesLoaded) -> None:
        self.files, self.version, self.version_text, self.groups = msg.files, msg.version, msg.version_text, msg.groups
        if msg.error:
            self.notify(f"{msg.error}", title="cannot list hooks", severity="error")
        self._render_status()
        olist = self.query_one("#hooks-list", OptionList)
        olist.clear_options()
        for f in self.files:
            tag = "hook" if f.kind == "hook" else "file"
            olist.add_option(Option(f"{tag} {f.name}", id=f"{f.kind}:{f.name}"))
        if not self.files:
            olist.add_option(Option("(none yet: press n)", id="none", disabled=True))
        if self.current is not None:
            fresh = next((f for f in self.files if (f.kind, f.name) == (self.current.kind, self.current.name)), None)
            if fresh is not None and fresh.content == self.current.content:
                self.current = fresh  # keep the newest resourceVersion for the same content
        elif self.files:
            self.open_file(self.files[0])
        if self.files and olist.highlighted is None:
            olist.highlighted = 0

    def _render_status(self) -> None:
        where = self.store.description if self.store else "no hook store"
        # the note first, each line cut with … (hooks.tcss): at 80 columns the location used to wrap and push the note
        # ("has no hooks: press c") out of the two visible lines
        self.query_one("#hooks-status", Static).update(f"{hooks_note(self.version)}\n{where} · {self.version_text}")

    # -- editing ------------------------------------------------------------------------------------------
    def open_file(self, f: StoredFile) -> None:
        if self.current is not None:
            key = (self.current.kind, self.current.name)
            if self.editor.text != self.current.content:
                self.drafts[key] = self.editor.text  # keep unsaved edits while switching files
            else:
                self.drafts.pop(key, None)
        self.current = f
        load_into(self.editor, f.kind, f.name, self.drafts.get((f.kind, f.name), f.content))
        self.preview, self.preview_content = None, None
        self._show_result(Text(f"{f.kind} {f.name} from {f.location}. ctrl+r: preview · d: diff · ctrl+s: save"))

    @on(OptionList.OptionSelected, "#hooks-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        kind, _, name = (event.option.id or "").partition(":")
        f = next((f for f in self.files if f.kind == kind and f.name == name), None)
        if f is not None:
            self.open_file(f)
            self.editor.focus()

    def action_reload(self) -> None:
        if self.current is not None:
            self.drafts.pop((self.current.kind, self.current.name), None)
        self.current = None
        self.load_files()

    def action_next_group(self) -> None:
        if len(self.groups) < 2:
            self.notify(f"only one node group: {self.group}")
            return
        self.group = self.groups[(self.groups.index(self.group) + 1) % len(self.groups)]
        self._open_store()
        self.current, self.drafts = None, {}
        self.load_files()

    def _need_store(self) -> bool:
        if self.store is None:
            self.notify("no hook store: set hook_store/hook_dir in config.yaml or connect to a cluster",
                        severity="warning")
        return self.store is not None

    def action_new_file(self) -> None:
        if not self._need_store():
            return

        def created(result: tuple[str, str] | None) -> None:
            if not result:
                return
            kind, name = result
            if any(f.kind == kind and f.name == name for f in self.files):
                self.notify(f"{kind} {name} exists already: pick it in the list", severity="warning")
                return
            text = HOOK_TEMPLATE if kind == "hook" else FEATURE_TEMPLATE
            assert self.store is not None
            self.open_file(StoredFile(kind, name, "", "", self.store.location(kind), self.group))  # type: ignore[arg-type]
            load_into(self.editor, kind, name, text)
            self.editor.focus()

        self.app.push_screen(NewFileDialog(), created)

    # -- preview ------------------------------------------------------------------------------------------
    def action_preview(self) -> None:
        if self.current is None:
            self.notify("open a hook or feature file first", severity="warning")
            return
        content = self.editor.text
        what = "running hook" if self.current.kind == "hook" else "parsing"
        limits = f"timeout {self.preview_timeout:g}s, output capped at 1 MiB"
        self._show_result(Text(f"{what} {self.current.name} ({limits})…"))
        self.query_one("#hooks-output").loading = True
        self._preview_seq += 1
        self.run_preview(self.current.kind, self.current.name, content, self._preview_seq)

    @work(thread=True, exclusive=True, group="hooks-preview", exit_on_error=False)
    def run_preview(self, kind: str, name: str, content: str, seq: int = 0) -> None:
        # the hook runs in a scratch directory with a timeout and an output cap, off the UI thread
        self.post_message(FilePreviewReady(preview_file(kind, name, content, self.version,
                                                    timeout=self.preview_timeout), content, seq))

    def on_file_preview_ready(self, msg: FilePreviewReady) -> None:
        if msg.seq != self._preview_seq:
            return  # an older run that finished late (a thread cannot be cancelled)
        self.query_one("#hooks-output").loading = False
        self.preview, self.preview_content = msg.preview, msg.content
        self._show_result(render_preview(msg.preview, self.version_text, theme_colors(self)))
        if self._convert_after_preview:
            self._convert_after_preview = False
            self.action_convert()

    # -- diff ---------------------------------------------------------------------------------------------
    def _deployed(self) -> tuple[str, str] | None:
        if self.current is None:
            return None
        if self.current.version:
            return self.current.content, "deployed"
        return "", "(new file)"

    # -- save ---------------------------------------------------------------------------------------------
    def action_save(self) -> None:
        if self.read_only:
            self.notify("read-only mode: saving is disabled", severity="warning")
            return
        cur = self.current
        if cur is None or not self._need_store():
            self.notify("nothing to save: open or create a file first", severity="warning")
            return
        content = self.editor.text
        if cur.version and content == cur.content:
            self.notify(f"{cur.name}: no changes to save")
            return
        before = cur.content if cur.version else ""
        preview = unified_text(before, content, "deployed" if cur.version else "(new file)", "edited")

        def confirmed(ok: bool | None) -> None:
            if ok:
                self.save_file(cur, content, cur.version)

        self.app.push_screen(ConfirmDanger("Save", cur.target, preview), confirmed)

    @work(thread=True, exclusive=True, group="hooks-save", exit_on_error=False)
    def save_file(self, base: StoredFile, content: str, expected_version: str) -> None:
        assert self.store is not None
        try:  # the store's guard refuses it in read-only and audits it (intent before, outcome after)
            saved = self.store.save(base.kind, base.name, content, expected_version=expected_version)
        except (NfdStoreError, GuardRefusal) as e:
            self.post_message(FileSaveFailed(e, base.kind, base.name, content))
            return
        self.post_message(FileSaved(saved, base))

    def on_file_saved(self, msg: FileSaved) -> None:
        self.drafts.pop((msg.file.kind, msg.file.name), None)
        if self.current is not None and (self.current.kind, self.current.name) == (msg.file.kind, msg.file.name):
            self.current = msg.file
        self.notify(f"saved {msg.file.target}")
        if msg.file.kind == "hook" and V.hooks_status(self.version) != "enabled":
            # saved, but this nfd-worker will not run it: say so rather than let the admin wait for labels
            self.notify(f"NFD {self.version} does not run hooks by default, so no node label changes; "
                        "press c to turn this hook into a feature file", severity="warning", timeout=12)
        self.load_files()

    def on_file_save_failed(self, msg: FileSaveFailed) -> None:
        err = msg.error
        if isinstance(err, GuardRefusal):  # refused before the write (or, `done`, written but not audited)
            self.notify_refusal(err, "saved; audit record missing", "save refused")
            if err.done:
                self.load_files()
            return
        if not isinstance(err, StoreConflict):
            self.notify(str(err), title="save failed", severity="error")
            return
        theirs = err.current.content if isinstance(err.current, StoredFile) else ""

        def chosen(choice: str | None) -> None:
            if choice == "reload":
                if isinstance(err.current, StoredFile):
                    self.drafts.pop((msg.kind, msg.name), None)
                    self.current = None
                    self.open_file(err.current)
                self.load_files()
            elif choice == "overwrite" and self.current is not None:
                self.save_file(self.current, msg.content, err.current_version)

        self.notify(str(err), title="conflict", severity="warning")
        self.app.push_screen(ConflictDialog(str(err), theirs, msg.content), chosen)

    # -- hook -> feature file -----------------------------------------------------------------------------
    def action_convert(self) -> None:
        cur = self.current
        if not self._need_store() or self.store is None:
            return
        if cur is None or cur.kind != "hook":
            self.notify("open a hook to turn it into a feature file", severity="warning")
            return
        if self.read_only:
            self.notify("read-only mode: saving is disabled", severity="warning")
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
        target = StoredFile("feature", cur.name, "", "", self.store.location("feature"), self.group)

        def confirmed(ok: bool | None) -> None:
            if ok:
                self.save_file(target, content, "")

        self.app.push_screen(ConfirmDanger("Create feature file", target.target, content), confirmed)


def theme_colors(screen: Screen[Any]) -> dict[str, str]:
    """Error/warning colours from the active theme, for Rich text built in Python."""
    v = screen.app.get_css_variables()
    return {"error": v.get("error", "red"), "warning": v.get("warning", "yellow")}


def render_preview(p: FilePreview, version_text: str, colors: dict[str, str] | None = None) -> Text:
    """The preview panel: labels, dropped labels with reasons, hook errors and stderr."""
    colors = colors or {"error": "red", "warning": "yellow"}
    red, yellow = colors["error"], colors["warning"]
    t = Text()
    t.append(f"{p.kind} {p.name} under {version_text}\n", style="bold")
    if p.note:
        t.append(p.note + "\n", style="italic")
    hook = p.hook
    if hook is not None and hook.error:
        t.append(f"✗ {hook.error}\n", style=f"bold {red}")
        if hook.timed_out:
            t.append("  would have hung nfd-worker: it has no timeout for hooks\n", style=red)
    t.append(f"Labels ({len(p.labels)}):\n", style="bold")
    for k, v in p.labels.items():
        t.append(f"  {k}={v}\n")
    if not p.labels:
        t.append("  (none)\n")
    if p.dropped:
        t.append(f"Dropped ({len(p.dropped)}):\n", style="bold")
        for d in p.dropped[:50]:
            t.append(f"  {d.key[:80]}={d.value[:40]!r}: {d.reason} (nfd-{d.stage})\n", style=yellow)
        if len(p.dropped) > 50:
            t.append(f"  … and {len(p.dropped) - 50} more\n", style=yellow)
    if hook is not None and hook.stderr:
        t.append(f"stderr ({len(hook.stderr)} chars):\n", style="bold")
        t.append(_cap(hook.stderr) + "\n", style="dim")
    if hook is not None and hook.error and hook.stdout:
        t.append(f"stdout (discarded, {len(hook.stdout)} chars):\n", style="bold")
        t.append(_cap(hook.stdout) + "\n", style="dim")
    other = [w for w in p.warnings if not w.startswith("label ") and not (hook and hook.error and hook.error in w)]
    if other:
        t.append("Warnings:\n", style="bold")
        for w in other[:20]:
            t.append(f"  {w}\n", style=yellow)
    return t


def _cap(s: str) -> str:
    s = "".join(c if c.isprintable() or c in "\n\t" else "�" for c in s[:STDERR_SHOWN])
    return s + ("\n… (truncated)" if len(s) >= STDERR_SHOWN else "")
