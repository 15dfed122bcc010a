"""The console's three stories end to end, on the README's first command (`./dev lab`) in a real 80×24 terminal
(tmux), one lab for the file: each story reads the screens as a user does (capture-pane) and checks what it
did to the cluster with kubectl against the lab's kubeconfig.

(a) a Pending pod → why it is Pending → scale a node up → the pod Running;
(b) edit a feature file → preview its labels → push (save) it → the label on the nodes;
(c) a NodeFeatureRule from a template → dry-run → apply → its labels on the nodes;
(d) two admins edit one feature file at once: the second's push survives, the first meets the conflict;
and first the nodes screen's filter → node detail → back; the file ends with `q` and the console (and its lab)
exiting.

(b) and (c) follow the editors' EDIT MODE contract (issue 12): the screens open in BROWSE (plain letters are
actions), `e` edits, `esc` stops editing, ctrl+r previews / dry-runs, ctrl+s saves / applies; the footer (or
the line above it) says `EDIT —` or `BROWSE —`.

The console in tmux and its lab: tests/support/storytools.py.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from labtools import wait_for
from storytools import Console, console_on_lab, mode
from tmuxtools import flat

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]


@pytest.fixture(scope="module")
def console() -> Iterator[Console]:
    yield from console_on_lab()


def test_filter_open_node_and_back(console: Console) -> None:
    """The nodes screen: filter by a label selector (AVX512F), open a node, see its labels by source, back
    (esc) to the filtered table, esc clears the filter. (Was tests/e2e/test_tmux_console.py, on its own lab.)"""
    t = console.tmux
    console.home()
    t.keys("/")
    t.wait(lambda s: "filter: text, !text" in s, 10, "the filter box")  # focus moves on the next frame
    t.type("-l feature.node.kubernetes.io/cpu-cpuid.AVX512F=true")
    t.keys("Enter")
    screen = t.wait(lambda s: "2/5 nodes" in s, 10, "the filtered table")
    rows = [line for line in screen.splitlines() if line.startswith("kube-")]
    assert [r.split()[0] for r in rows] == ["kube-worker02", "kube-worker03"], screen
    t.keys("Down")
    t.keys("Enter")
    screen = t.wait(lambda s: "Labels (" in s and "cpu (" in s, 10, "the node detail")
    assert "kube-worker03" in screen
    assert "cpu-cpuid.AVX512" in screen, screen
    t.keys("Escape")
    t.wait(lambda s: "2/5 nodes" in s, 10, "back on the node table")
    t.keys("Escape")
    t.wait(console.on_nodes_screen, 10, "the filter cleared")


def test_a_pending_pod_why_scale_up_running(console: Console) -> None:
    """Story (a): the Pending screen (`p`) says why nginx is Pending (its FailedScheduling event) and the smallest
    size that fits it; `s` opens the scale-up of that node, `r` + `y` runs it; the screen ends verified with nginx
    Running there, and the cluster agrees (kubectl: nginx Running on that node, the node's new capacity)."""
    t = console.tmux
    console.home()
    assert console.kget("pod", "nginx")["status"]["phase"] == "Pending"

    t.keys("p")
    screen = t.wait_text("Pending pods", "default/nginx", "Smallest fitting size:", what="the Pending screen")
    text = flat(screen)
    # why: the scheduler's own words (kube-scheduler's FailedScheduling message), as kubectl describe shows them
    assert "0/5 nodes are available" in text and "Insufficient cpu" in text, screen
    m = re.search(r"Smallest fitting size: (kube-\S+) → (\d+) vCPU", text)
    assert m, screen
    node = m.group(1)

    t.keys("s")
    screen = t.wait_text(f"{node}: ", "makes fit: default/nginx", "r runs the plan", timeout=60,
                         what=f"the scale-up plan of {node}")
    t.keys("r")
    t.wait_text("Press y to confirm", f"scale up: {node}", what="the confirmation naming the node")
    t.keys("y")
    screen = t.wait_text("verified", f"default/nginx Running on {node}", timeout=180, what="the verified run")
    assert "done" in flat(screen), screen

    pod = console.kget("pod", "nginx")
    assert (pod["status"]["phase"], pod["spec"]["nodeName"]) == ("Running", node)
    capacity = console.kget("node", node)["status"]["capacity"]
    assert int(capacity["cpu"]) >= int(m.group(2)), capacity
    assert not console.kget("node", node)["spec"].get("unschedulable"), "the node is left cordoned"
    console.home()


def test_b_edit_feature_file_preview_push_label(console: Console) -> None:
    """Story (b): `:hooks` opens the nodes' `inventory` feature file (nfd-worker's features.d, a hostPath on each
    node); `e` edits it, a new line `example.com/owner=story-b` is typed, ctrl+r previews the labels it gives,
    esc stops editing (unsaved, marked ●); `a` marks every node and space unmarks the control plane (whose
    inventory differs), ctrl+s pushes after a confirmation naming the nodes and the label, and the screen waits
    for NFD to relabel them. kubectl: the four workers carry the label, the control plane does not and keeps its
    own rack label. NFD's feature-file format: kubernetes-sigs/node-feature-discovery
    docs/usage/customization-guide.md ("Feature files": `<name>[=<value>]` per line, `# +no-label`)."""
    t = console.tmux
    console.home()
    workers = {n["metadata"]["name"] for n in console.kget("nodes")["items"]} - console.labelled(
        "node-role.kubernetes.io/control-plane")
    assert len(workers) == 4
    rack_before = console.kget("node", "kube-controlplane01")["metadata"]["labels"].get("example.com/rack")

    console.command("hooks")
    screen = t.wait(lambda s: "inventory" in s and "# written by the site inventory" in s and mode(s) == "BROWSE",
                    30, "the inventory feature file, in BROWSE mode")

    t.keys("e")
    t.wait(lambda s: mode(s) == "EDIT", 10, "EDIT mode after e")
    # the top of the file (a line before any `# +` directive applies to it alone)
    t.move_cursor(("Up",) * 8 + ("Home",), lambda before, after: bool(re.search(r"\b1\s+$", before))
                  and after.startswith("# written by the site inventory"), "at the start of the file")
    # a new line above the comment, as an editor's user opens one: Enter at the start of line 1, then Up onto it
    t.keys("Enter")
    t.wait(lambda s: bool(re.search(r"^\W*1\s+[▎▊]?\s*$", s, re.M)
                          and re.search(r"\b2\s+# written by the site inventory", s)), 10,
           "an empty line 1 above the comment, now line 2")
    t.move_cursor(("Up",), lambda before, after: bool(re.search(r"\b1\s+$", before)) and not after.strip(" ▎▊"),
                  "on the empty line 1")
    t.type("example.com/owner=story-b")
    # the text, not the cursor: Textual moves the terminal's cursor only with a repaint, which can lag the edit
    t.wait(lambda s: bool(re.search(r"\b1\s+example\.com/owner=story-b\s", s)
                          and re.search(r"\b2\s+# written by the site inventory", s)), 10,
           "the typed line 1 above the comment, now line 2")

    t.keys("C-r")
    t.wait_text("Labels (3)", "example.com/owner=story-b", timeout=30, what="the preview with the new label")

    t.keys("Escape")
    screen = t.wait(lambda s: mode(s) == "BROWSE", 10, "BROWSE mode after esc")
    assert "●" in screen, f"no unsaved mark after esc with an edit:\n{screen}"  # no node is marked yet

    t.keys("a")
    t.wait_text("5 marked", what="every node marked")
    t.keys("space")  # the node table's cursor is on its first row, kube-controlplane01
    screen = t.wait_text("4 marked", what="the control plane unmarked")
    assert not re.search(r"●\s+kube-controlplane01", screen), screen

    t.keys("C-s")
    # the edit survived esc: the confirmation shows its label on the nodes (and the diff)
    screen = t.wait_text("Press y to confirm", "inventory on 4 node(s)", "example.com/owner=story-b", timeout=30,
                         what="the push confirmation naming the nodes and the label")
    assert "kube-controlplane01" not in flat(screen), screen
    t.keys("y")
    t.wait_text("relabelled: 4/4 nodes", timeout=90, what="NFD relabelling the nodes")

    assert console.labelled("example.com/owner=story-b") == workers
    cp = console.kget("node", "kube-controlplane01")["metadata"]["labels"]
    assert "example.com/owner" not in cp and cp.get("example.com/rack") == rack_before
    console.home()


def test_c_rule_from_template_dry_run_apply_labels(console: Console) -> None:
    """Story (c): `:rules`, `n` and the "AVX512F nodes" template; the rule renamed `avx512-story` in EDIT mode;
    ctrl+r dry-runs it on every node (the nodes it would label are exactly those whose NFD cpuid feature has
    AVX512F, per kubectl); ctrl+s applies after a confirmation; kubectl: the NodeFeatureRule exists and
    nfd-master put `example.dev/avx512=true` on those nodes and no other. NodeFeatureRule semantics:
    kubernetes-sigs/node-feature-discovery docs/usage/custom-resources.md (matchFeatures, labels)."""
    t = console.tmux
    console.home()
    avx512 = console.labelled("feature.node.kubernetes.io/cpu-cpuid.AVX512F=true")
    assert avx512 and not console.labelled("example.dev/avx512")

    console.command("rules")
    t.wait(lambda s: "NodeFeatureRule(s)" in s and mode(s) == "BROWSE", 30, "the rules screen in BROWSE mode")
    t.keys("n")
    t.wait_text("New NodeFeatureRule from a template", what="the template picker")
    t.keys("Home", "Down", "Enter")  # the second template
    screen = t.wait(lambda s: "name: avx512" in s, 10, "the AVX512F template in the editor")
    if mode(screen) != "EDIT":  # the contract leaves open whether a new rule opens in EDIT mode
        t.keys("e")
        t.wait(lambda s: mode(s) == "EDIT", 10, "EDIT mode after e")
    t.move_cursor(("Up",) * 20 + ("Home", "Down", "Down", "Down", "End"),
                  lambda before, _after: before.endswith("name: avx512"), "after `name: avx512` (line 4)")
    t.type("-story")
    t.wait(lambda s: "name: avx512-story" in s, 10, "the renamed rule")

    t.keys("C-r")
    screen = t.wait_text(f"avx512-story: {len(avx512)} of 5 node(s) change", timeout=60, what="the dry-run")
    changed = set(re.findall(r"(kube-\S+) — changes", flat(screen)))
    assert changed == avx512, screen
    assert "+ labels: example.dev/avx512=true" in flat(screen), screen

    t.keys("C-s")
    t.wait_text("Press y to confirm", f"NodeFeatureRule avx512-story ({len(avx512)} nodes affected)", timeout=30,
                what="the apply confirmation")
    t.keys("y")
    # the rule list now holds it (the toast saying so may be gone before a poll sees it)
    t.wait(lambda s: "1 NodeFeatureRule(s)" in s and bool(re.search(r"│ avx512-story\s", s)), 30,
           "the created rule in the list")

    assert console.kget("nodefeaturerule", "avx512-story")["spec"]["rules"][0]["labels"] == {
        "example.dev/avx512": "true"}
    wait_for(lambda: console.labelled("example.dev/avx512=true") == avx512, 60, what="nfd-master's labels")
    console.home()


def _inventory_sha(console: Console, state: Path, nodes: tuple[str, ...]) -> dict[str, str]:
    """Each node's sha256 of its `inventory` feature file, as the headless `nfd files list` reads it."""
    code, doc, err = console.headless(state, "nfd", "files", "list", "--kind", "feature", "--node", *nodes)
    assert code == 0, err
    return {ls["node"]: next((f["sha256"] for f in ls["files"] if f["name"] == "inventory"), "")
            for ls in doc["kinds"]["feature"]["nodes"]}


def test_d_concurrent_edits_of_a_feature_file_on_the_nodes(console: Console, tmp_path: Path) -> None:
    """Issue 20, point 1, hostPath store (features.d as NFD's own manifests mount it): admin A edits `inventory` in
    `:hooks`; meanwhile admin B pushes another version to kube-worker01 and kube-worker02 with the headless CLI
    (`console nfd files push … --node kube-worker01 --node kube-worker02`); A marks the workers, ctrl+s, y. Each
    node compared the version A loaded in the script that renames: kube-worker01/02 keep B's file (the CLI's
    listing), kube-worker03/04 get A's, and A sees the conflict: their version against A's edit, both shown.
    r reloads B's version into A's editor (A's edit dropped, nothing unsaved)."""
    t = console.tmux
    console.home()
    workers = ("kube-worker01", "kube-worker02", "kube-worker03", "kube-worker04")
    before = _inventory_sha(console, tmp_path / "b", workers)
    console.command("hooks")
    t.wait(lambda s: "# written by the site inventory" in s and mode(s) == "BROWSE", 30,
           "the inventory feature file, in BROWSE mode")
    console.add_first_line("example.com/owner=admin-a")  # A's edit, unsaved

    theirs = tmp_path / "inventory"
    theirs.write_text("# pushed by admin B\nexample.com/owner=admin-b\n")
    code, doc, err = console.headless(tmp_path / "b", "nfd", "files", "push", str(theirs), "--kind", "feature",
                                      "--node", "kube-worker01", "--node", "kube-worker02", "--yes", "--no-wait")
    assert (code, doc["status"]) == (0, "done"), err

    t.keys("a")
    t.wait_text("5 marked", what="every node marked")
    t.keys("space")  # the node table's cursor is on its first row, kube-controlplane01
    t.wait_text("4 marked", what="the control plane unmarked")
    t.keys("C-s")
    t.wait_text("Press y to confirm", "inventory on 4 node(s)", timeout=30, what="the push confirmation")
    t.keys("y")
    screen = t.wait_text("Conflict:", "changed since it was read", "Reload theirs", "Overwrite with mine",
                         timeout=60, what="the conflict dialog")
    text = flat(screen)
    assert "inventory on kube-worker01" in text and "also on kube-worker02" in text, screen
    assert "written on kube-worker03, kube-worker04" in text, screen
    # both versions: theirs (-) and A's edit (+)
    assert "-example.com/owner=admin-b" in text and "+example.com/owner=admin-a" in text, screen

    digest = hashlib.sha256(theirs.read_bytes()).hexdigest()
    after = _inventory_sha(console, tmp_path / "b", workers)
    assert after["kube-worker01"] == after["kube-worker02"] == digest  # B's change survives
    assert after["kube-worker03"] == after["kube-worker04"] not in (digest, before["kube-worker03"])  # A's

    t.keys("r")
    screen = t.wait(lambda s: "example.com/owner=admin-b" in s and "Conflict:" not in s and mode(s) == "BROWSE",
                    20, "B's version in A's editor")
    assert "unsaved" not in screen and "example.com/owner=admin-a" not in screen, screen
    console.home()
