"""The console as the README's first command opens it (`./dev lab`, with a scenario), in a real terminal (tmux),
for the end-to-end stories (tests/e2e): read with capture-pane as a user reads the screen, the cluster checked with
kubectl, and a second admin driven with the real headless CLI.

The lab's kubeconfig is found as a user finds it: `--lab` makes its state directory with Python's
tempfile.mkdtemp(prefix="console-lab-") (console/cli_tui.py), which honours TMPDIR.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tmuxtools import Tmux

LAB_START = 180  # s: `./dev lab` on a machine where .venv exists (./dev test made it)


@dataclass
class Console:
    tmux: Tmux
    kubeconfig: Path
    nodes: int = 5  # the scenario's nodes: the nodes screen says `N nodes`

    def kubectl(self, *args: str) -> str:
        proc = subprocess.run(["kubectl", "--kubeconfig", str(self.kubeconfig), *args], capture_output=True,
                              text=True, timeout=30)
        assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def kget(self, *args: str) -> dict:
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def labelled(self, selector: str) -> set[str]:
        return {n["metadata"]["name"] for n in self.kget("nodes", "-l", selector)["items"]}

    def headless(self, state: Path, *args: str) -> tuple[int, dict[str, Any], str]:
        """`console ARGS -o json` as another admin on this lab (their own XDG state: audit log, config):
        (exit code, JSON, stderr)."""
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "KUBECONFIG": str(self.kubeconfig),
               "XDG_STATE_HOME": str(state / "state"), "XDG_CONFIG_HOME": str(state / "config"),
               "HOME": str(state)}
        proc = subprocess.run([sys.executable, "-m", "console", *args, "-o", "json"], env=env, capture_output=True,
                              text=True, timeout=180, stdin=subprocess.DEVNULL)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr

    def on_nodes_screen(self, screen: str) -> bool:
        # and no filter (that would say `2/5 nodes`)
        return bool(re.search(rf"(^|\s){self.nodes} nodes\b", screen)) and "q Quit" in screen

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

    def add_first_line(self, line: str) -> None:
        """In an editor screen in BROWSE mode: `e`, type `line` as a new first line, esc: BROWSE, `● unsaved`."""
        t = self.tmux
        t.keys("e")
        t.wait(lambda s: mode(s) == "EDIT", 10, "EDIT mode after e")
        t.move_cursor(("Up",) * 12 + ("Home",), lambda before, _after: bool(re.search(r"\b1\s+$", before)),
                      "at the start of the file")
        t.type(line)
        t.keys("Enter")
        t.wait_text(line, what="the new first line")
        t.keys("Escape")
        t.wait(lambda s: mode(s) == "BROWSE" and "● unsaved" in s, 10, "BROWSE with the unsaved edit")

    def command(self, text: str) -> None:
        """`:` then TEXT and enter, from the nodes screen."""
        self.tmux.keys(":")
        self.tmux.wait_text(":nodes :pending", what="the command bar")  # focus moves with it
        self.tmux.type(text)
        self.tmux.keys("Enter")


def mode(screen: str) -> str:
    """EDIT or BROWSE, as the editor screen's footer says (the EDIT MODE contract)."""
    found = re.findall(r"\b(EDIT|BROWSE)\b[^—\n]{0,40}—", screen)  # `EDIT ● unsaved —`, `BROWSE (read-only) —`
    return found[-1] if found else ""


def console_on_lab(*args: str, nodes: int = 5) -> Iterator[Console]:
    """For a module fixture: `./dev lab ARGS` in a 80×24 tmux pane until the node table shows; at the end back to
    the nodes screen, `q`, and the console (and its lab) must exit."""
    # short paths: the lab's unix sockets (libvirt, the SSH agent) live under its state directory
    root = Path(tempfile.mkdtemp(prefix="stories-"))
    (root / "tmp").mkdir()
    tmux = Tmux(root, width=80, height=24, env={"TMPDIR": str(root / "tmp")})
    tmux.start(" ".join(["./dev lab", *args]))
    try:
        c = Console(tmux, Path(), nodes)
        # the nodes screen itself, not the lab's progress lines (they name nodes too)
        tmux.wait(c.on_nodes_screen, LAB_START, "the node table")
        c.kubeconfig = next((root / "tmp").glob("console-lab-*/kubeconfig"))
        yield c
        c.home()
        tmux.keys("q")
        tmux.wait(lambda s: tmux.dead(), 60, "the console (and its lab) to exit")
    finally:
        tmux.kill()
        shutil.rmtree(root, ignore_errors=True)
