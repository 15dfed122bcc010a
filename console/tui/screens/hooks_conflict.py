"""The hooks screen's optimistic concurrency in cluster mode, as the rules editor's (console/tui/screens/rules.py).

The editor remembers, for the file it holds, which version each node had when it was loaded (the read node's from
the read, the others' from the listing shown beside it: console/kube/nfdfiles_model.py); every push or remove
carries those versions, and the store writes a node only while it still has its version (a hostPath node compares
and renames in one script, a ConfigMap is updated at its resourceVersion). Unsaved edits keep the versions they
were made on, also across switching files. A node whose file changed since comes back as a conflict: the rules
editor's dialog (console/tui/widgets/diff_dialog.ConflictDialog) shows their version against mine, and the admin
reloads theirs (the edit is dropped) or overwrites with mine — sent again carrying the version now there, so a
third change in between is caught too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from console.kube.nfdfiles_model import WriteResult, conflicts
from console.kube.nfdstore import StoredFile
from console.tui.screens.hooks_messages import FilesWritten
from console.tui.screens.hooks_view import named
from console.tui.widgets.diff_dialog import ConflictDialog

if TYPE_CHECKING:  # what the mixin is mixed into (HooksScreen), for the type checker
    from console.kube.nfdfiles import NodeListing
    from console.tui.screens.editor_base import EditorScreen as _Screen
else:
    _Screen = object

Versions = dict[str, str | None]  # node -> the version of the open file it had when the editor loaded it


class Concurrency(_Screen):
    """Mixed into HooksScreen (which provides the editor, the targets, the listings and the write worker)."""

    if TYPE_CHECKING:  # HooksScreen's (load_targets and write_files are its thread workers)
        def open_file(self, f: StoredFile) -> None: ...
        def _fill_nodes(self) -> None: ...
        load_targets: Callable[..., Any]
        write_files: Callable[..., Any]

    targets: dict[str, Any]
    listings: dict[str, list[NodeListing]]
    current: StoredFile | None
    drafts: dict[tuple[str, str], str]
    node_previews: dict[str, Any]
    bases: dict[tuple[str, str], tuple[StoredFile, Versions]]

    def _listed(self, kind: str, name: str) -> Versions:
        """Each node's version of `name` as the listing shown says (None: that node was not read)."""
        target = self.targets[kind]
        return {x.node: target.version(x, name) for x in self.listings.get(kind, [])}

    def loaded(self, kind: str, name: str, node: str, content: str, version: str) -> StoredFile:
        """The file to open for a read of `name` from `node`; remembers each node's version of it. Unsaved edits
        made on an earlier read stay on that read (its text and versions): a push of them meets what changed."""
        key = (kind, name)
        if key in self.drafts and key in self.bases:
            return self.bases[key][0]
        f = StoredFile(kind, name, content, version, node)  # type: ignore[arg-type]
        self.bases[key] = (f, {**self._listed(kind, name), node: version})
        return f

    def expected(self, kind: str, name: str, nodes: Sequence[str]) -> Versions:
        """What a write of `name` to `nodes` carries: the versions the editor loaded (a node listed only since,
        or a new file: as the listing shows it now)."""
        base = self.bases[(kind, name)][1] if (kind, name) in self.bases else {}
        now = self._listed(kind, name)
        return {n: base[n] if n in base else now.get(n) for n in nodes}

    def rebase(self, msg: FilesWritten) -> None:
        """After a write: the nodes written hold what was sent, the new base of that file (also when the editor
        has moved on to another file meanwhile)."""
        key = (msg.kind, msg.name)
        done = [r for r in msg.results if r.ok]
        if not done:
            return
        base, versions = self.bases.get(key, (None, {}))
        versions = {**versions, **{r.node: r.version for r in done}}
        cur = self.current if self.current is not None and (self.current.kind, self.current.name) == key else None
        if msg.verb == "Push":
            f = StoredFile(msg.kind, msg.name, msg.content, done[0].version, done[0].node)  # type: ignore[arg-type]
            if cur is not None or self.drafts.get(key) == msg.content:
                self.drafts.pop(key, None)
        elif [r for r in msg.results if not r.ok]:  # not gone everywhere: the editor keeps what it had
            if base is not None:
                self.bases[key] = (base, versions)
            return
        else:  # gone from the nodes: what was removed stays in the editor as a new file (ctrl+s puts it back)
            was = cur or base
            f = StoredFile(msg.kind, msg.name, was.content if was else "", "", "")  # type: ignore[arg-type]
        self.bases[key] = (f, versions)
        if cur is not None:
            self.current = f

    # -- conflicts ----------------------------------------------------------------------------------------
    def show_conflict(self, msg: FilesWritten) -> bool:
        """The conflict dialog when some node's file changed since it was loaded (False: no conflict)."""
        found = conflicts(msg.results)
        if not found:
            return False
        first = found[0]
        shown = [r for r in found if r.version == first.version]  # the nodes holding the version shown
        text = first.error.removeprefix("not written: ")
        others = [r.node for r in found[1:] if r.error != first.error]  # one ConfigMap: one message says it all
        if others:
            text += f"; also on {named(others)}"
            if len(shown) < len(found):
                text += f" ({len({r.version for r in found})} versions: {first.node}'s is shown)"
        if first.current is None and first.version:  # there, but did not come back (too large, or unreadable)
            text += "; their version cannot be shown here: r reads it again"
        done = [r.node for r in msg.results if r.ok]
        if done:
            text += f"; written on {named(done)}"
        mine = msg.content if msg.verb == "Push" else ""

        def chosen(choice: str | None) -> None:
            if choice == "reload":
                self._take_theirs(msg, first, shown)
            elif choice == "overwrite":
                self.write_files(msg.verb, msg.kind, msg.name, msg.content, [r.node for r in shown],
                                 dict(self.node_previews), {r.node: r.version for r in shown})

        self.app.push_screen(ConflictDialog(text, first.current or "", mine), chosen)
        return True

    def _take_theirs(self, msg: FilesWritten, first: WriteResult, shown: Sequence[WriteResult]) -> None:
        """Reload theirs: the editor holds their version (the edit is dropped), on the versions now there."""
        key = (msg.kind, msg.name)
        self.drafts.pop(key, None)
        theirs = first.current
        if theirs is None and first.version:  # did not come back with the conflict: read it as any file is read
            self.bases.pop(key, None)
            self.current = None
            self.load_targets()
            return
        f = StoredFile(msg.kind, msg.name, theirs or "", first.version if theirs is not None else "",  # type: ignore[arg-type]
                       first.node if theirs is not None else "")
        base = self.bases[key][1] if key in self.bases else {}
        self.bases[key] = (f, {**base, **{r.node: r.version for r in shown}})
        self.current = None  # nothing of the dropped edit is kept as a draft
        self.open_file(f)
        self._fill_nodes()
        self.load_targets()  # the listings as the nodes have them now
