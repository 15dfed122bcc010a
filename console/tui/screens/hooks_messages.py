"""Typed messages the hooks screen's workers post (workers never touch widgets), and its new-file dialog."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from console.guard import GuardRefusal
from console.kube.nfdfiles import NodeListing, WriteResult
from console.kube.nfdstore import NfdStoreError, StoredFile
from console.nfd import versions as V
from console.nfd_preview import FilePreview


class TargetsLoaded(Message):
    """Cluster mode: what nfd-worker mounts, each kind's target, nodes and per-node listings."""

    def __init__(self, deployment: Any, targets: Mapping[str, Any], listings: Mapping[str, Sequence[NodeListing]],
                 version: V.NfdVersion, version_text: str, notes: Sequence[str] = (), error: str = "") -> None:
        super().__init__()
        self.deployment, self.targets, self.listings = deployment, targets, listings
        self.version, self.version_text, self.notes, self.error = version, version_text, notes, error


class FileRead(Message):
    """A file read from `node`: its content (None: gone, or `error`) and the version a write must carry."""

    def __init__(self, kind: str, name: str, node: str, content: str | None, error: str = "",
                 version: str = "") -> None:
        super().__init__()
        self.kind, self.name, self.node, self.content, self.error = kind, name, node, content, error
        self.version = version


class NodesSelected(Message):
    def __init__(self, selector: str, nodes: Sequence[str], error: str = "") -> None:
        super().__init__()
        self.selector, self.nodes, self.error = selector, nodes, error


class NodePreviewsReady(Message):
    def __init__(self, seq: int, kind: str, name: str, content: str, previews: Mapping[str, FilePreview]) -> None:
        super().__init__()
        self.seq, self.kind, self.name, self.content, self.previews = seq, kind, name, content, previews


class FilesWritten(Message):
    """A push or remove done: per-node results (some may be conflicts), the labels to wait for, what was sent."""

    def __init__(self, verb: str, kind: str, name: str, results: Sequence[WriteResult],
                 expected: Mapping[str, Mapping[str, str | None]], error: NfdStoreError | GuardRefusal | None = None,
                 content: str = "") -> None:
        super().__init__()
        self.verb, self.kind, self.name, self.results, self.expected, self.error = (verb, kind, name, results,
                                                                                     expected, error)
        self.content = content


class RelabelProgress(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class RelabelDone(Message):
    def __init__(self, expected: Mapping[str, Mapping[str, str | None]],
                 seen: Mapping[str, Mapping[str, str | None]], error: str = "") -> None:
        super().__init__()
        self.expected, self.seen, self.error = expected, seen, error


# -- directory mode (offline editing) ---------------------------------------------------------------------------
class FilesLoaded(Message):
    def __init__(self, files: list[StoredFile], version: V.NfdVersion, version_text: str, error: str = "") -> None:
        super().__init__()
        self.files, self.version, self.version_text, self.error = files, version, version_text, error


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
