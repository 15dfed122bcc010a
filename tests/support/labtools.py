"""Helpers for tests that drive the lab through real clients and CLIs."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from console.lab.world import Lab


def env_from_file(path: Path) -> dict[str, str]:
    """The process environment after `set -a; . DIR/env`."""
    env = dict(os.environ)
    # the `openstack` CLI is a test dependency installed next to this interpreter
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for line in path.read_text().splitlines():
        key, _, value = line.partition("=")
        env[key] = shlex.split(value)[0] if value else ""
    return env


def lab_env(lab: Lab) -> dict[str, str]:
    return env_from_file(lab.state.env)


def run(cmd: list[str], env: dict[str, str], *, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{shlex.join(cmd)} exited {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
        )
    return proc


def wait_for(predicate: Callable[[], object], timeout: float = 60, interval: float = 0.2, what: str = "") -> object:
    """Poll until `predicate()` is truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}; last value: {last!r}")
