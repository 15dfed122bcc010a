"""End to end in a real terminal: the README's first command (`./dev lab`) in tmux 100x30 —
filter by AVX512F, open a node, see its labels by source, quit."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    def __init__(self, tmp: Path) -> None:
        self.socket = f"console-e2e-{uuid.uuid4().hex[:8]}"
        self.session = "console"
        self.env = {**os.environ, "XDG_CONFIG_HOME": str(tmp / "cfg"), "XDG_DATA_HOME": str(tmp / "data"),
                    "XDG_STATE_HOME": str(tmp / "state"), "TERM": "xterm-256color"}

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, env=self.env,
                              timeout=20).stdout

    def start(self, command: str) -> None:
        subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", self.session,
                        "-x", "100", "-y", "30", command], check=True, env=self.env, cwd=REPO, timeout=20)
        self.tmux("set-option", "-t", self.session, "remain-on-exit", "on")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.session)

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", self.session, *(["-l", "--"] if literal else []), *keys)

    def dead(self) -> bool:
        return self.tmux("display-message", "-p", "-t", self.session, "#{pane_dead}").strip() == "1"

    def wait(self, predicate: Callable[[str], bool], timeout: float, what: str) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}; screen:\n{text}")

    def kill(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(tmp_path)
    try:
        yield t
    finally:
        t.kill()


def test_filter_open_node_and_quit(tmux: Tmux) -> None:
    tmux.start("./dev lab")
    tmux.wait(lambda s: "5 nodes" in s and "kube-worker04" in s, 180, "the node table")
    tmux.keys("/")
    tmux.wait(lambda s: "filter: text, !text" in s, 10, "the filter box")  # focus moves on the next frame
    tmux.keys("-l feature.node.kubernetes.io/cpu-cpuid.AVX512F=true", literal=True)
    tmux.keys("Enter")
    screen = tmux.wait(lambda s: "2/5 nodes" in s, 10, "the filtered table")
    rows = [line for line in screen.splitlines() if line.startswith("kube-")]
    assert [r.split()[0] for r in rows] == ["kube-worker02", "kube-worker03"], screen
    tmux.keys("Down")
    tmux.keys("Enter")
    screen = tmux.wait(lambda s: "Labels (" in s and "cpu (" in s, 10, "the node detail")
    assert "kube-worker03" in screen
    assert "cpu-cpuid.AVX512F=true" in tmux.screen() or "cpu-cpuid.AVX512" in screen
    tmux.keys("Escape")
    tmux.wait(lambda s: "2/5 nodes" in s, 10, "back on the node table")
    tmux.keys("q")
    tmux.wait(lambda s: tmux.dead(), 30, "the console (and its lab) to exit")
