"""`nfd files` lab tests: each module starts its own lab as the `lab` fixture; these build on it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from labtools import lab_env

from console.kube.connection import connect
from console.lab.world import Lab

Cli = Callable[..., tuple[int, dict[str, Any], str]]


@pytest.fixture(scope="module")
def api(lab: Lab) -> Iterator[Any]:
    """A kubernetes ApiClient on the module's lab (the console's own connect())."""
    c, _target = connect(str(lab.state.kubeconfig))
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def cli(lab: Lab) -> Cli:
    """cli(env, *args): `python -m console *args -o json` on the lab -> (exit code, JSON, stderr); never a traceback."""

    def run(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any], str]:
        proc = subprocess.run([sys.executable, "-m", "console", *args, "-o", "json"], env=lab_env(lab) | env,
                              capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr

    return run
