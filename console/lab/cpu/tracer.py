"""`cpuid-run` (cpuid_run.c), compiled once into the upstream build cache, and the command that runs a program on a
lab node's CPU model with it.

    cpu = on_cpu(model, state_dir)
    sandbox.run(root, [*cpu.argv, "/usr/bin/nfd-worker", ...], binds={**cpu.binds, ...})
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from console.lab.cpu import cpuid
from console.lab.scenarios import CpuModel
from console.lab.upstream.build import BuildError, cache_root

SOURCE = "cpuid_run.c"
# where a node's sandbox has the tracer and its table (the lab's own files, read-only)
INSIDE = "/opt/console-lab-cpu"


@dataclass(frozen=True)
class CpuRun:
    argv: list[str]  # the prefix, as the sandbox sees it
    binds: dict[str, Path]  # sandbox path -> lab host path


class CpuUnavailable(RuntimeError):
    """This machine cannot run a program on the model's CPU."""


def _source() -> bytes:
    return resources.files("console.lab.cpu").joinpath(SOURCE).read_bytes()


def binary() -> Path:
    """cpuid-run, compiled with the machine's C compiler the first time a source of it is asked for."""
    source = _source()
    target = cache_root() / f"cpuid-run-{hashlib.sha256(source).hexdigest()[:16]}" / "cpuid-run"
    if target.exists():
        return target
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise BuildError("no C compiler: the lab's node CPUs (cpuid-run) are built with gcc (Debian package gcc)")
    target.parent.mkdir(parents=True, exist_ok=True)
    src = target.parent / SOURCE
    src.write_bytes(source)
    tmp = target.with_name(f"cpuid-run.tmp{id(source)}")
    done = subprocess.run([cc, "-O2", "-Wall", "-static", "-o", str(tmp), str(src)], capture_output=True, text=True)
    if done.returncode != 0:
        raise BuildError(f"compiling cpuid-run failed:\n{done.stderr[-2000:]}")
    tmp.rename(target)  # atomic: a concurrent build renames an identical file
    return target


def on_cpu(model: CpuModel, state_dir: Path) -> CpuRun:
    """What runs a program on `model`'s CPU in a node's sandbox; its table is written under `state_dir`."""
    host = cpuid.host_flags()
    missing = cpuid.unsupported(cpuid.features(model), host)
    if missing:
        raise CpuUnavailable(
            f"this machine's CPU lacks {', '.join(missing)} of {model.model_name}: a program "
            "told of them could execute them; run the lab on a CPU that has them"
        )
    if "cpuid_fault" not in host:
        raise CpuUnavailable(
            "this machine's CPU cannot make CPUID fault (no cpuid_fault in /proc/cpuinfo): the lab "
            "cannot show a node's CPU model to the programs it runs there"
        )
    state_dir.mkdir(parents=True, exist_ok=True)
    table = state_dir / "cpuid.table"
    table.write_text(cpuid.table_text(model))
    return CpuRun(
        [f"{INSIDE}/cpuid-run", f"{INSIDE}/cpuid.table"],
        {f"{INSIDE}/cpuid-run": binary(), f"{INSIDE}/cpuid.table": table},
    )
