"""The hooks editor's version bookkeeping (console/tui/screens/hooks_conflict.py) on plain data: which version of the
open file each node had when the editor loaded it is what a push carries — also for unsaved edits kept while
another file is open (a fresh read must not become their base: a push of them would overwrite the change made
since), and for nodes listed only after the file was loaded. Issue 20, point 1."""

from __future__ import annotations

from typing import Any

from console.kube.nfdfiles import NodeFile, NodeListing, WriteResult
from console.kube.nfdstore import StoredFile
from console.tui.screens.hooks_conflict import Concurrency
from console.tui.screens.hooks_messages import FilesWritten


class _Target:
    """A hostPath target's versions: a file's sha256, "" when the node has none, None when not read."""

    def version(self, listing: NodeListing, name: str) -> str | None:
        if listing.error:
            return None
        f = next((f for f in listing.files if f.name == name), None)
        return "" if f is None else f.sha256


class _Screen(Concurrency):
    def __init__(self, listings: list[NodeListing]) -> None:
        self.targets: dict[str, Any] = {"feature": _Target()}
        self.listings = {"feature": listings}
        self.bases = {}
        self.drafts = {}
        self.current = None
        self.node_previews = {}


def _listing(node: str, **files: str) -> NodeListing:
    return NodeListing(node, tuple(NodeFile(node, "feature", n, 1, h, 0o644, 0.0) for n, h in files.items()))


def test_a_push_carries_each_nodes_version_as_loaded() -> None:
    s = _Screen([_listing("w1", inv="h1"), _listing("w2", inv="h0"), _listing("w3"),
                 NodeListing("w4", (), error="unreachable")])
    f = s.loaded("feature", "inv", "w1", "a=1\n", "h1")
    assert (f.content, f.version, f.location) == ("a=1\n", "h1", "w1")
    assert s.expected("feature", "inv", ["w1", "w2", "w3", "w4"]) == {"w1": "h1", "w2": "h0", "w3": "", "w4": None}
    s.listings["feature"].append(_listing("w5", inv="h9"))  # a node listed after the file was loaded
    assert s.expected("feature", "inv", ["w5"]) == {"w5": "h9"}  # as the table shows it now


def test_unsaved_edits_keep_the_versions_they_were_made_on() -> None:
    s = _Screen([_listing("w1", inv="h1")])
    s.loaded("feature", "inv", "w1", "a=1\n", "h1")
    s.drafts[("feature", "inv")] = "a=1\nmine=1\n"  # edited, then another file opened
    s.listings = {"feature": [_listing("w1", inv="h2")]}  # someone pushed meanwhile; the listing is reloaded
    again = s.loaded("feature", "inv", "w1", "theirs=1\n", "h2")  # the file opened again: a fresh read
    assert (again.content, again.version) == ("a=1\n", "h1")  # the edit stays on what it was made on
    assert s.expected("feature", "inv", ["w1"]) == {"w1": "h1"}  # so its push meets their change
    del s.drafts[("feature", "inv")]  # no unsaved edit: a fresh read is the base
    assert s.loaded("feature", "inv", "w1", "theirs=1\n", "h2").version == "h2"


def test_a_write_rebases_its_file_even_when_another_is_open() -> None:
    s = _Screen([_listing("w1", inv="h1"), _listing("w2", inv="h1")])
    s.loaded("feature", "inv", "w1", "a=1\n", "h1")
    s.current = StoredFile("feature", "other", "o=1\n", "h7", "w1")  # the admin moved on before the result
    s.drafts[("feature", "inv")] = "a=2\n"
    results = [WriteResult("w1", True, True, version="h3"),
               WriteResult("w2", False, False, "changed since", version="h5", conflict=True, current="t=1\n")]
    s.rebase(FilesWritten("Push", "feature", "inv", results, {}, content="a=2\n"))
    base, versions = s.bases[("feature", "inv")]
    assert (base.content, base.version) == ("a=2\n", "h3") and versions == {"w1": "h3", "w2": "h1"}
    assert ("feature", "inv") not in s.drafts  # what was pushed is not an unsaved edit any more
    assert s.current.name == "other"  # the open file is left alone
