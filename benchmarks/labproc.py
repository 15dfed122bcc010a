"""The lab as a subprocess for the benchmark scripts: `with scale_lab(nodes, pods_per_node) as lab: ...`."""

from __future__ import annotations

import os
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
    proc: subprocess.Popen[str] | None  # None: a lab already running, not ours to stop
    state: Path
    command: list[str]
    ready_s: float
    env: dict[str, str] = field(default_factory=dict)  # the environment with the lab's KUBECONFIG etc.


def lab_has(flag: str) -> bool:
    """Whether `python -m console lab` knows a switch (older trees lack some)."""
    out = subprocess.run([sys.executable, "-m", "console", "lab", "--help"], capture_output=True, text=True).stdout
    return flag in out


def _lab_env(state: Path, base_env: dict[str, str] | None) -> dict[str, str]:
    import os

    env = dict(base_env if base_env is not None else os.environ)
    for line in (state / "env").read_text().splitlines():
        k, _, v = line.partition("=")
        env[k] = shlex.split(v)[0]
    return env


@contextmanager
def scale_lab(
    nodes: int,
    pods_per_node: int,
    extra: list[str] | None = None,
    base_env: dict[str, str] | None = None,
    running: Path | None = None,
) -> Iterator[RunningLab]:
    """Start the scale world, wait for its `ready` file, yield it; stop it however the block ends.

    `running`: the state directory of a lab already started (`console lab --nodes N … --state-dir DIR`), used
    as it is and left running — a 5,000-node world takes minutes to start, so the benchmarks share one."""
    if running is not None:
        if not (running / "ready").exists():
            raise LabFailed(f"no ready lab in {running} (its `ready` file is missing)")
        yield RunningLab(None, running, ["(running)", "--state-dir", str(running)], 0.0, _lab_env(running, base_env))
        return
    state = Path(tempfile.mkdtemp(prefix="bench-lab-"))
    cmd = [
        sys.executable,
        "-m",
        "console",
        "lab",
        "--nodes",
        str(nodes),
        "--pods-per-node",
        str(pods_per_node),
        "--state-dir",
        str(state),
        *(extra or []),
    ]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while not (state / "ready").exists():
            if proc.poll() is not None:
                raise LabFailed(f"lab exited early ({proc.returncode}): {proc.stderr.read() if proc.stderr else ''}")
            time.sleep(0.05)
        yield RunningLab(proc, state, cmd, time.monotonic() - t0, _lab_env(state, base_env))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def kubectl_timed(args: list[str], env: dict[str, str], out: Path, *, table: bool = False) -> tuple[float, int, float]:
    """`kubectl ARGS -o json` timed, its output written to `out` (not read into this process: 150,000 pods are
    gigabytes of JSON, and parsed here they would not fit beside the lab); the number of items comes from an
    untimed `-o name` run, which kubectl prints page by page. `table`: kubectl's table instead of `-o json`, also
    printed page by page (at 5,000 x 30, `-o json` held 7.5 GB in kubectl, which does not fit beside the world).
    Returns the time, the number of items and kubectl's peak RSS in MB (its own, from wait4)."""
    t = time.monotonic()
    with open(out, "wb") as f:
        proc = subprocess.Popen(["kubectl", *args, *(() if table else ("-o", "json"))], env=env, stdout=f)
        _, status, usage = os.wait4(proc.pid, 0)
    took = time.monotonic() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, proc.args)
    names = subprocess.run(["kubectl", *args, "-o", "name"], env=env, capture_output=True, text=True, check=True)
    out.unlink()
    return took, len(names.stdout.splitlines()), usage.ru_maxrss / 1024
