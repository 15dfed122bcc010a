"""Pure parts of the hook editor: preview per NFD version, hook -> feature file, diffs, editor language."""

from __future__ import annotations

from console.kube.nfdfiles import NodeFile, NodeListing, WriteResult
from console.nfd import versions as V
from console.nfd.hooks import HookResult
from console.nfd_preview import hook_to_feature_file, hooks_note, preview_file
from console.tui.screens import hooks_view
from console.tui.widgets.diff import side_by_side_rows, unified_lines, unified_text
from console.tui.widgets.editor import language_for


def test_preview_names_labels_per_version() -> None:
    script = "#!/bin/sh\necho FOO=bar\n"
    assert preview_file("hook", "h.sh", script, "v0.8.2").labels == {"feature.node.kubernetes.io/h.sh-FOO": "bar"}
    assert preview_file("hook", "h.sh", script, "v0.12.0").labels == {"feature.node.kubernetes.io/FOO": "bar"}
    removed = preview_file("hook", "h.sh", script, "v0.19.0")
    assert "has no hooks" in removed.note and removed.labels == {"feature.node.kubernetes.io/FOO": "bar"}
    feat = preview_file("feature", "f", "# comment\nexample.com/x=1\nbad key\n", "v0.19.0")
    assert feat.labels == {"example.com/x": "1"}
    assert [d.key for d in feat.dropped] == ["bad key"]


def test_hang_and_flood_are_reported() -> None:
    hung = preview_file("hook", "h", "#!/bin/sh\nsleep 20\n", "v0.12.0", timeout=0.5)
    assert hung.failed and hung.hook is not None and hung.hook.timed_out and hung.labels == {}
    flood = preview_file("hook", "h", "#!/bin/sh\nyes A=1\n", "v0.12.0", max_output=4096)
    assert flood.failed and flood.hook is not None and flood.hook.output_capped


def test_hook_to_feature_file_header_and_old_versions() -> None:
    ok = HookResult("h", True, 0, stdout="A=1\n\n  B=2  \n")
    text = hook_to_feature_file("h", ok, "v0.18.1")
    assert text.startswith("# Converted from hook 'h'") and text.endswith("A=1\nB=2\n")
    assert hook_to_feature_file("h", ok, "v0.12.0") == "A=1\nB=2\n"  # '#' is not a comment before v0.14
    assert "removed" in hooks_note(V.parse_version("v0.17.0"))
    assert "hooksEnabled" in hooks_note(V.parse_version("v0.16.0"))


def test_diff_helpers() -> None:
    old, new = "a\nb\nc\n", "a\nB\nc\nd\n"
    tags = [t for t, _ in unified_lines(old, new)]
    assert tags.count("+") == 2 and tags.count("-") == 1
    assert unified_text(old, old) == ""
    assert side_by_side_rows(old, new) == [(" ", "a", "a"), ("~", "b", "B"), (" ", "c", "c"), ("+", "", "d")]


def test_editor_language_by_shebang() -> None:
    assert language_for("hook", "x", "#!/usr/bin/env python3\n") == "python"
    assert language_for("hook", "x", "#!/bin/sh\n") == "bash"
    assert language_for("hook", "x.py", "print(1)\n") == "python"
    assert language_for("feature", "x.sh", "#!/bin/sh\n") is None
    assert language_for("rule", "r", "") == "yaml"


def test_hooks_note_fits_the_status_line_at_80_columns() -> None:
    for text in ("v0.4.0", "v0.12.0", "v0.14.0", "v0.15.1", "v0.16.0", "v0.17.0", "v0.19.0", "v0.20.0-devel"):
        note = hooks_note(V.parse_version(text))
        assert len(note) <= 78, note


def _listing(node: str, *files: tuple[str, str], error: str = "") -> NodeListing:
    return NodeListing(node, tuple(NodeFile(node, "feature", n, 1, h * 64, 0o644, 0.0) for n, h in files), error)


def test_entries_and_node_states_show_where_nodes_differ() -> None:
    listings = [_listing("w1", ("rack", "a"), ("zone", "c")), _listing("w2", ("rack", "a"), ("zone", "c")),
                _listing("w3", ("rack", "b"), ("zone", "c")), _listing("w4", ("zone", "c")),
                _listing("w5", error="unreachable")]
    got = {e.name: e.label for e in hooks_view.entries({"feature": listings})}
    assert got == {"rack": "file rack ≠ 3/4", "zone": "file zone"}  # the unreadable node is not counted
    assert hooks_view.node_states(listings, "rack") == {
        "w1": "same", "w2": "same", "w3": "differs (bbbbbbbb)", "w4": "missing", "w5": "cannot read: unreachable"}
    assert hooks_view.majority_node(listings, "rack") == "w1"


def test_previews_grouped_by_labels_and_the_confirmation_names_every_node() -> None:
    same = preview_file("feature", "rack", "example.com/rack=r1\n", "v0.19.0")
    other = preview_file("feature", "rack", "example.com/rack=r2\n", "v0.19.0")
    grouped = hooks_view.group_previews({"w2": same, "w1": same, "w3": other})
    assert [nodes for nodes, _ in grouped] == [("w1", "w2"), ("w3",)]
    body = hooks_view.confirm_text("Push", "ConfigMap ns/nfd-features (volume features-d, mode 0644)",
                                   ["w1", "w2", "w3"], "-a\n+b\n", grouped, "A ConfigMap reaches every node")
    assert body.splitlines()[:3] == ["Target: ConfigMap ns/nfd-features (volume features-d, mode 0644)",
                                     "Nodes (3): w1, w2, w3", "A ConfigMap reaches every node"]
    assert "on w1, w2: 1 label(s)" in body and "  example.com/rack=r2" in body and body.endswith("+b")
    many = [f"n{i:02}" for i in range(20)]
    assert hooks_view.named(many).endswith("n11 and 8 more")


def test_report_counts_changed_unchanged_and_failed_nodes() -> None:
    results = [WriteResult("w1", True, True), WriteResult("w2", True, False), WriteResult("w3", False, False, "boom")]
    text = hooks_view.report_text("Push", "feature", "rack", results, {}).plain
    assert text.splitlines() == ["Push feature rack: 1 changed, 1 unchanged, 1 failed", "  changed: w1",
                                 "  already so: w2", "  ✗ w3: boom"]
    done = hooks_view.relabel_text({"w1": {"a": "1"}, "w2": {"a": None}}, {"w1": {"a": "1"}, "w2": {"a": "x"}}, {})
    assert done.plain.splitlines() == ["relabelled: 1/2 nodes", "  ✓ w1: a=1", "  … w2: a: 'x', want None"]
