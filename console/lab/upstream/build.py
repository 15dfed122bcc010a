"""Build a Go program of console/lab/upstream/ into `$XDG_CACHE_HOME/console/upstream/<name>-<key>/<name>`.

The key hashes the module's sources (go.mod and go.sum pin every version), the build flags and the Go toolchain:
what is built once is reused by every later start, test worker and lab. Two processes building the same key wait
for one another (flock); a failed build leaves nothing behind.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Progress = Callable[[str], None]
SOURCE_ROOT = Path(__file__).resolve().parent
_PROGRESS_EVERY = 15.0  # seconds between progress lines while the compiler runs


class BuildError(Exception):
    """An upstream program could not be built; the message says what to do."""


@dataclass(frozen=True)
class Program:
    name: str  # its directory under console/lab/upstream/ and (one command) its binary's name
    # the main packages built, each into a binary named after its last path element; "." is the module's own
    commands: tuple[str, ...] = (".",)

    @property
    def source(self) -> Path:
        return SOURCE_ROOT / self.name

    def requires(self, module: str) -> str:
        """The version of `module` the program's go.mod pins."""
        m = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", (self.source / "go.mod").read_text(),
                      re.MULTILINE)
        if not m:
            raise BuildError(f"{self.source / 'go.mod'} does not require {module}")
        return m.group(1)

    def binaries(self) -> tuple[str, ...]:
        # named as `go build` names them: the last path element, a major version suffix (/v5) skipped
        return tuple(self.name if c == "." else re.sub(r"/v[0-9]+$", "", c).rsplit("/", 1)[-1] for c in self.commands)

    def ldflags(self) -> list[str]:
        flags = ["-s", "-w"]
        if self.name.startswith("nfd-"):
            # as upstream's Makefile and container image: the version `-version` prints and nfd-worker's prefix for
            # the host's /proc, /sys, /etc, /boot, /lib, /usr/lib (its DaemonSet mounts them at /host-…)
            version = self.requires(NFD_MODULE)
            nfd_minor = int(version.split(".")[1])
            prefix_var = "source.pathPrefix" if nfd_minor < 12 else "pkg/utils/hostpath.pathPrefix"
            flags += [f"-X {NFD_MODULE}/pkg/version.version={version}", f"-X {NFD_MODULE}/{prefix_var}=/host-"]
        if self.name == "kube":
            # what `kubectl version` shows: upstream's release builds stamp it the same way (hack/lib/version.sh)
            version = self.requires("k8s.io/kubernetes")
            major, minor = version.lstrip("v").split(".")[:2]
            for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
                flags += [f"-X {pkg}.gitVersion={version}", f"-X {pkg}.gitMajor={major}",
                          f"-X {pkg}.gitMinor={minor}", f"-X {pkg}.gitTreeState=clean"]
        return flags


NFD_MODULE = "sigs.k8s.io/node-feature-discovery"


def _nfd(version: str, commands: tuple[str, ...] = ("nfd-master", "nfd-worker", "nfd-gc")) -> Program:
    return Program(f"nfd-{version}", tuple(f"{NFD_MODULE}/cmd/{c}" for c in commands))


KUBE = Program("kube")
METRICS_SERVER = Program("metrics-server")
KUSTOMIZE = Program("kustomize", ("sigs.k8s.io/kustomize/kustomize/v5",))  # renders NFD's own overlays
# the NFD releases the lab runs; the Go module proxy here serves v0.7.0, v0.9.0, v0.16.6, v0.17.0, v0.17.2, v0.17.3,
# v0.18.2, v0.18.3 and v0.19.0 of those tried, and refuses the rest (docs/CONTRIBUTING.md)
NFD = {p.name.removeprefix("nfd-"): p for p in (
    _nfd("v0.9.0", ("nfd-master", "nfd-worker")), _nfd("v0.16.6"), _nfd("v0.18.3"), _nfd("v0.19.0"))}
PROGRAMS = (KUBE, METRICS_SERVER, KUSTOMIZE, *NFD.values())
LAB = (KUBE, METRICS_SERVER, KUSTOMIZE, NFD["v0.19.0"])  # what the default lab runs: a first `./dev lab` builds no more


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "console" / "upstream"


def _go() -> str:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if go is None:
        raise BuildError("Go is not installed: the lab builds Kubernetes from source with Go 1.26 or later "
                         "(install it from https://go.dev/dl/ or your distribution, then rerun)")
    return go


def key(program: Program) -> str:
    h = hashlib.sha256()
    h.update(subprocess.run([_go(), "version"], capture_output=True, text=True, check=True).stdout.encode())
    h.update(" ".join(program.ldflags()).encode())
    for path in sorted(program.source.iterdir()):
        if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")):
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def binary(program: Program, progress: Progress = lambda _msg: None, command: str | None = None) -> Path:
    """The program's binary (`command` of a program with several), built first if this key has none yet."""
    target_dir = cache_root() / f"{program.name}-{key(program)}"
    target = target_dir / (command or program.binaries()[0])
    if target.exists():
        return target
    cache_root().mkdir(parents=True, exist_ok=True)
    with open(cache_root() / f"{target_dir.name}.lock", "w") as lock:
        if not _try_lock(lock):
            progress(f"waiting for another process building {program.name}")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():  # the other process may have built it meanwhile
            _build(program, target, progress)
    return target


def _try_lock(lock: object) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # type: ignore[arg-type]
    except BlockingIOError:
        return False
    return True


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "")
    env["GOFLAGS"] = (env["GOFLAGS"] + " -mod=readonly -buildvcs=false").strip()  # go.sum is the pin: never edit it
    env.setdefault("GOTOOLCHAIN", "local")  # never fetch another toolchain behind the user's back
    return env


def _build(program: Program, target: Path, progress: Progress) -> None:
    go, env, t0 = _go(), _env(), time.monotonic()
    progress(f"building {program.name} from {program.source.name}/go.mod (once; later starts reuse "
             f"{target.parent}): downloading modules")
    _run([go, "mod", "download"], program, env, "downloading its Go modules")
    listed = _run([go, "list", "-deps", *program.commands], program, env, "listing its packages")
    total = len(listed.split())
    tmp = target.parent.with_name(target.parent.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    out = str(tmp / program.name) if program.commands == (".",) else f"{tmp}/"  # a directory: one binary each
    cmd = [go, "build", "-v", "-trimpath", "-ldflags", " ".join(program.ldflags()), "-o", out, *program.commands]
    progress(f"building {program.name}: compiling {total} packages (a cold build takes minutes)")
    proc = subprocess.Popen(cmd, cwd=program.source, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None
    done, errors, last = 0, [], time.monotonic()
    for line in proc.stderr:  # `-v` names each package as it is compiled (cached ones are not named)
        if line.startswith(("#", " ", "\t")) or ".go:" in line:
            errors.append(line.rstrip())
        else:
            done += 1
        if time.monotonic() - last >= _PROGRESS_EVERY:
            last = time.monotonic()
            progress(f"building {program.name}: {done}/{total} packages compiled, "
                     f"{time.monotonic() - t0:.0f}s")
    if proc.wait() != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BuildError(f"go build of {program.name} failed (exit {proc.returncode}):\n" + "\n".join(errors[-20:]))
    tmp.rename(target.parent)
    size = sum((target.parent / b).stat().st_size for b in program.binaries()) / 2**20
    progress(f"built {program.name} in {time.monotonic() - t0:.0f}s ({size:.0f} MiB)")


def module_dir(program: Program, module: str) -> Path:
    """Where Go keeps the source of `module` at the version the program pins (its release's manifests: the
    CRDs the lab applies as upstream's kustomize base does)."""
    return Path(_run([_go(), "list", "-m", "-f", "{{.Dir}}", module], program, _env(), f"finding {module}").strip())


def _run(cmd: list[str], program: Program, env: dict[str, str], what: str) -> str:
    proc = subprocess.run(cmd, cwd=program.source, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{program.name}: {what} failed ({' '.join(cmd[1:3])}, exit {proc.returncode}): "
                         f"{proc.stderr.strip()[-2000:]}")
    return proc.stdout


def main() -> int:
    """`python -m console.lab.upstream.build [--lab]`: build every program, or (--lab) those the lab runs; ./dev
    does, before the lab (--lab) or the tests."""
    import sys

    def say(msg: str) -> None:
        print(f"dev: {msg}", file=sys.stderr, flush=True)

    try:
        for program in LAB if "--lab" in sys.argv[1:] else PROGRAMS:
            binary(program, say)
    except BuildError as e:
        say(str(e))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
