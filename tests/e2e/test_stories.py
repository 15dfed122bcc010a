"""The console's three stories end to end, on the README's first command (`./dev lab`) in a real 80×24 terminal
(tmux), one lab for the file: each story reads the screens as a user does (capture-pane) and checks what it
did to the cluster with kubectl against the lab's kubeconfig.

(a) a Pending pod → why it is Pending → scale a node up → the pod Running;
(b) edit a feature file → preview its labels → push (save) it → the label on the nodes;
(c) a NodeFeatureRule from a template → dry-run → apply → its labels on the nodes;
and first the nodes screen's filter → node detail → back; the file ends with `q` and the console (and its lab)
exiting.

(b) and (c) follow the editors' EDIT MODE contract (issue 12): the screens open in BROWSE (plain letters are
actions), `e` edits, `esc` stops editing, ctrl+r previews / dry-runs, ctrl+s saves / applies; the footer (or
the line above it) says `EDIT —` or `BROWSE —`.

The lab's kubeconfig is found as a user finds it: `--lab` makes its state directory with Python's
tempfile.mkdtemp(prefix="console-lab-") (console/cli_tui.py), which honours TMPDIR.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from labtools import wait_for
from tmuxtools import Tmux, flat

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

LAB_START = 180  # s: `./dev lab` on a machine where .venv exists (./dev test made it)


@dataclass
class Console:
    tmux: Tmux
    kubeconfig: Path

    def kubectl(self, *args: str) -> str:
        proc = subprocess.run(["kubectl", "--kubeconfig", str(self.kubeconfig), *args], capture_output=True,
                              text=True, timeout=30)
        assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def kget(self, *args: str) -> dict:
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def labelled(self, selector: str) -> set[str]:
        return {n["metadata"]["name"] for n in self.kget("nodes", "-l", selector)["items"]}

    def on_nodes_screen(self, screen: str) -> bool:
        return bool(re.search(r"(^|\s)5 nodes\b", screen)) and "q Quit" in screen  # and no filter: `2/5 nodes`

    def home(self) -> None:
        """Back to the nodes screen as a user gets there: esc (and `d` on a discard question)."""
        for _ in range(8):
            screen = self.tmux.screen()
            if self.on_nodes_screen(screen):
                return
            self.tmux.keys("d" if "Discard unsaved changes" in screen else "Escape")
            try:  # the next screen (or the same one, when esc only closed something on it)
                self.tmux.wait(lambda s, before=screen: s != before or self.on_nodes_screen(s), 3, "a change")
            except AssertionError:
                continue
        self.tmux.wait(self.on_nodes_screen, 1, "the nodes screen after esc")

    def command(self, text: str) -> None:
        """`:` then TEXT and enter, from the nodes screen."""
        self.tmux.keys(":")
        self.tmux.wait_text(":nodes :pending", what="the command bar")  # focus moves with it
        self.tmux.type(text)
        self.tmux.keys("Enter")


@pytest.fixture(scope="module")
def console() -> Iterator[Console]:
    # short paths: the lab's unix sockets (libvirt, the SSH agent) live under its state directory
    root = Path(tempfile.mkdtemp(prefix="stories-"))
    (root / "tmp").mkdir()
    tmux = Tmux(root, width=80, height=24, env={"TMPDIR": str(root / "tmp")})
    tmux.start("./dev lab")
    try:
        tmux.wait(lambda s: "5 nodes" in s and "kube-worker04" in s, LAB_START, "the node table")
        kubeconfig = next((root / "tmp").glob("console-lab-*/kubeconfig"))
        yield Console(tmux, kubeconfig)
        c = Console(tmux, kubeconfig)
        c.home()
        tmux.keys("q")
        tmux.wait(lambda s: tmux.dead(), 60, "the console (and its lab) to exit")
    finally:
        tmux.kill()
        shutil.rmtree(root, ignore_errors=True)


def mode(screen: str) -> str:
    """EDIT or BROWSE, as the editor screen's footer says (the EDIT MODE contract)."""
    found = re.findall(r"\b(EDIT|BROWSE)\b[^—\n]{0,40}—", screen)  # `EDIT ● unsaved —`, `BROWSE (read-only) —`
    return found[-1] if found else ""


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
    t.type("example.com/owner=story-b")
    t.keys("Enter")
    t.wait_cursor(lambda before, after: bool(re.search(r"\b2\s+$", before))
                  and after.startswith("# written by the site inventory"), 10, "on line 2, under the new line")

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
