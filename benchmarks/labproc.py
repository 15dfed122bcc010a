"""The lab as a subprocess for the benchmark scripts: `with scale_lab(nodes, pods_per_node) as lab: ...`."""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


class LabFailed(RuntimeError):
    """The lab exited before it was ready."""


@dataclass
class RunningLab:
    proc: subprocess.Popen[str]
    state: Path
    command: list[str]
    ready_s: float
    env: dict[str, str] = field(default_factory=dict)  # the environment with the lab's KUBECONFIG etc.


def lab_has(flag: str) -> bool:
    """Whether `python -m console lab` knows a switch (older trees lack some)."""
    out = subprocess.run([sys.executable, "-m", "console", "lab", "--help"], capture_output=True, text=True).stdout
    return flag in out


@contextmanager
def scale_lab(nodes: int, pods_per_node: int, extra: list[str] | None = None,
              base_env: dict[str, str] | None = None) -> Iterator[RunningLab]:
    """Start the scale world, wait for its `ready` file, yield it; stop it however the block ends."""
    import os

    state = Path(tempfile.mkdtemp(prefix="bench-lab-"))
    cmd = [sys.executable, "-m", "console", "lab", "--nodes", str(nodes), "--pods-per-node", str(pods_per_node),
           "--state-dir", str(state), *(extra or [])]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while not (state / "ready").exists():
            if proc.poll() is not None:
                raise LabFailed(f"lab exited early ({proc.returncode}): {proc.stderr.read() if proc.stderr else ''}")
            time.sleep(0.05)
        env = dict(base_env if base_env is not None else os.environ)
        for line in (state / "env").read_text().splitlines():
            k, _, v = line.partition("=")
            env[k] = shlex.split(v)[0]
        yield RunningLab(proc, state, cmd, time.monotonic() - t0, env)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
