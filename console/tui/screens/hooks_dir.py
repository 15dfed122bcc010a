"""The hooks screen's directory mode (`hook_store: directory`): a local source.d / features.d for offline editing,
saved and deleted with content-hash conflict detection (console/kube/nfdstore.DirectoryHookStore)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work

from console.guard import GuardRefusal
from console.kube.nfdstore import DirectoryHookStore, NfdStoreError, StoreConflict, StoredFile
from console.nfd import versions as V
from console.tui.safety import ConfirmDanger
from console.tui.screens.hooks_messages import FileSaved, FileSaveFailed, FilesLoaded
from console.tui.widgets.diff import unified_text
from console.tui.widgets.diff_dialog import ConflictDialog

if TYPE_CHECKING:  # what the mixin is mixed into (HooksScreen), for the type checker
    from collections.abc import Sequence

    from console.tui.screens.editor_base import EditorScreen as _Screen
else:
    _Screen = object


class DirectoryMode(_Screen):
    """Mixed into HooksScreen (which provides the editor, the list and the notifications)."""

    if TYPE_CHECKING:  # HooksScreen's
        def _render_status(self, where: str = "") -> None: ...
        def _fill_list(self, items: Sequence[tuple[str, str]]) -> None: ...
        def open_file(self, f: StoredFile) -> None: ...

    store: DirectoryHookStore | None
    files: list[StoredFile]
    current: StoredFile | None
    drafts: dict[tuple[str, str], str]
    version: V.NfdVersion
    version_text: str
    settings: Any
    editor: Any

    # -- directory mode -----------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="hooks-load", exit_on_error=False)
    def load_files(self) -> None:
        text = f"NFD {self.version} ({'from settings' if self.settings.nfd_version else 'no cluster; set nfd_version'})"
        if self.store is None:
            self.post_message(FilesLoaded([], self.version, text, "no hook store configured"))
            return
        try:
            self.post_message(FilesLoaded(self.store.list(), self.version, text))
        except NfdStoreError as e:
            self.post_message(FilesLoaded([], self.version, text, str(e)))

    def on_files_loaded(self, msg: FilesLoaded) -> None:
        self.files, self.version, self.version_text = msg.files, msg.version, msg.version_text
        if msg.error:
            self.notify(msg.error, title="cannot list hooks", severity="error")
        self._render_status()
        self._fill_list([(f"{f.kind}:{f.name}", f"{'hook' if f.kind == 'hook' else 'file'} {f.name}")
                         for f in self.files])
        if self.current is not None:
            fresh = next((f for f in self.files if (f.kind, f.name) == (self.current.kind, self.current.name)), None)
            if fresh is not None and fresh.content == self.current.content:
                self.current = fresh
        elif self.files:
            self.open_file(self.files[0])

    def _save_directory(self, cur: StoredFile) -> None:
        if self.store is None:
            self.notify("no hook store: set hook_dir in config.yaml", severity="warning")
            return
        content = self.editor.text
        if cur.version and content == cur.content:
            self.notify(f"{cur.name}: no changes to save")
            return
        preview = unified_text(cur.content if cur.version else "", content,
                               "deployed" if cur.version else "(new file)", "edited")
        def confirmed(ok: bool | None) -> None:
            if ok:
                self.save_file(cur, content, cur.version)

        self.app.push_screen(ConfirmDanger("Save", cur.target, preview), confirmed)

    def _confirm_directory_delete(self, cur: StoredFile) -> None:
        def confirmed(ok: bool | None) -> None:
            if ok:
                self.save_file(cur, None, cur.version)

        self.app.push_screen(ConfirmDanger("Delete", cur.target, cur.content), confirmed)

    @work(thread=True, exclusive=True, group="hooks-save", exit_on_error=False)
    def save_file(self, base: StoredFile, content: str | None, expected_version: str) -> None:
        assert self.store is not None
        try:  # the store's guard refuses it in read-only and audits it (intent before, outcome after)
            if content is None:
                self.store.delete(base.kind, base.name, expected_version=expected_version)
                saved = StoredFile(base.kind, base.name, "", "", base.location)
            else:
                saved = self.store.save(base.kind, base.name, content, expected_version=expected_version)
        except (NfdStoreError, GuardRefusal) as e:
            self.post_message(FileSaveFailed(e, base.kind, base.name, content or ""))
            return
        self.post_message(FileSaved(saved, base))

    def on_file_saved(self, msg: FileSaved) -> None:
        self.drafts.pop((msg.file.kind, msg.file.name), None)
        if self.current is not None and (self.current.kind, self.current.name) == (msg.file.kind, msg.file.name):
            self.current = msg.file if msg.file.version else None
        self.notify(f"saved {msg.file.target}" if msg.file.version else f"deleted {msg.file.target}")
        if msg.file.kind == "hook" and msg.file.version and V.hooks_status(self.version) != "enabled":
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

