"""`console nfd files`: argument rules and the text it prints (the cluster parts: tests/integration/nfd_files)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from console import cli_nfd_files as C
from console.kube.nfdfiles import NodeFile, NodeListing, differences


def _console(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args", [
    ["nfd", "files", "push", "f", "--kind", "feature"],  # no nodes chosen
    ["nfd", "files", "push", "f", "--kind", "feature", "-l", "a=b", "--node", "n"],  # both
    ["nfd", "files", "rm", "f", "--node", "n"],  # no kind
    ["nfd", "push", "feature", "x", "f"],  # the ConfigMap push is gone
])
def test_usage_errors_exit_2(args):
    p = _console(*args)
    assert p.returncode == 2 and "usage:" in p.stderr and "Traceback" not in p.stderr


def test_list_text_has_the_table_and_the_differences():
    def f(node, name, h, mode=0o644):
        return NodeFile(node, "feature", name, 9, h, mode, 1_700_000_000.0)

    listings = [NodeListing("w1", (f("w1", "rack.feature", "a" * 64),)),
                NodeListing("w2", (f("w2", "rack.feature", "b" * 64),)),
                NodeListing("w3", ()),
                NodeListing("w4", (), error="the node-debug pod on w4 cannot start")]
    text = "\n".join(C._list_text("feature", "hostPath /d on each node", listings, differences(listings)))
    assert "feature files: hostPath /d on each node" in text
    assert "w1    feature  rack.feature  9     aaaaaaaaaaaa  0644  2023-11-14 22:13:20Z" in text
    assert "w4: the node-debug pod on w4 cannot start" in text and "no files on w3" in text
    assert "rack.feature: different content: aaaaaaaaaaaa on w1; bbbbbbbbbbbb on w2" in text
    assert "rack.feature: missing on w3" in text


def test_plan_text_names_each_node_and_its_label_changes():
    class T:
        description = "hostPath /d on each node"

    rows = [{"node": "w1", "action": "create", "list_error": "", "notes": [],
             "label_changes": {"feature.node.kubernetes.io/rack": {"now": None, "then": "r42"}}},
            {"node": "w2", "action": "replace", "list_error": "", "notes": ["n"],
             "label_changes": {"feature.node.kubernetes.io/rack": {"now": "r1", "then": "r42"},
                               "feature.node.kubernetes.io/old": {"now": "x", "then": None}}},
            {"node": "w3", "action": "unchanged", "list_error": "", "notes": [], "label_changes": {}}]
    assert C._plan_text(T(), "Push", "rack.feature", rows).splitlines() == [
        "Push rack.feature: hostPath /d on each node",
        "  w1: create", "    + feature.node.kubernetes.io/rack=r42",
        "  w2: replace", "    + feature.node.kubernetes.io/rack=r42 (now r1)", "    - feature.node.kubernetes.io/old=x",
        "    note: n",
        "  w3: unchanged", "    labels: no change"]
