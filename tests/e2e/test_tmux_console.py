"""End to end in a real terminal: the README's first command (`./dev lab`) in tmux 100x30 —
filter by AVX512F, open a node, see its labels by source, quit."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tmuxtools import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(tmp_path, width=100, height=30)
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
