"""One lab per scenario per module; the CLI runs in a subprocess with the lab's env and XDG_STATE_HOME in tmp."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from labtools import lab_env

from console.lab import scenarios
from console.lab.world import Lab


def _start(name: str, root: Path) -> Iterator[Lab]:
    lab = Lab(scenarios.get(name), root)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


@pytest.fixture(scope="module")
def resize_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from _start("seed-resize", tmp_path_factory.mktemp("scaleup-resize"))


@pytest.fixture(scope="module")
def live_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from _start("seed-live", tmp_path_factory.mktemp("scaleup-live"))


def _scale_up(lab: Lab, state: Path, *args: str, extra_env: dict[str, str] | None = None,
             timeout: float = 150) -> tuple[int, dict, str]:
    env = lab_env(lab) | {"XDG_STATE_HOME": str(state)} | (extra_env or {})
    proc = subprocess.run([sys.executable, "-m", "console", "scale-up", *args, "-o", "json"], env=env,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except ValueError:
        doc = {}
    return proc.returncode, doc, proc.stderr


def node_obj(lab: Lab, name: str = "kube-worker02") -> dict:
    return lab.store.get("nodes", None, name)


def pod_obj(lab: Lab, name: str) -> dict:
    return lab.store.get("pods", "default", name)


@pytest.fixture
def scale_up():
    """Run `python -m console scale-up ... -o json`; returns (exit code, JSON doc, stderr)."""
    return _scale_up
