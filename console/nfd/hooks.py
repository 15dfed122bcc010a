"""Hooks (`source.d`): run executables like nfd-worker v0.4-v0.16 did, but safely.

nfd-worker runs each regular file with no arguments, no timeout and unbounded output; a non-zero
exit discards all of its stdout. Here each hook gets a timeout and an output cap, and the result
says when the real worker would have hung or buffered without limit.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from console.nfd import versions as V
from console.nfd.featurefile import ParsedLocal, decode, parse_feature_lines

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_OUTPUT = 1024 * 1024


@dataclass
class HookResult:
    name: str
    ran: bool
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    error: str = ""  # why its output is not used
    timed_out: bool = False
    output_capped: bool = False
    duration: float = 0.0
    labels: dict[str, str] = field(default_factory=dict)
    features: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.ran and not self.error

    def as_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in ("name", "ran", "exit_code", "stdout", "stderr", "error", "timed_out",
                                              "output_capped", "duration", "labels", "features")}


@dataclass
class HooksRun:
    status: str  # "ran", "disabled", "removed", "missing"
    results: list[HookResult] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    features: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _hook_entries(d: Path, v: V.NfdVersion) -> list[str]:
    names = []
    for name in sorted(os.listdir(d)):
        if name.startswith(".") and V.dotfiles_ignored(v):
            continue
        try:
            if (d / name).is_file():  # follows symlinks like os.Stat
                names.append(name)
        except OSError:
            continue
    return names


def run_hooks(hooks_dir: str | os.PathLike[str], version: V.NfdVersion | str | None = None, *,
              enabled: bool | None = None, timeout: float = DEFAULT_TIMEOUT, max_output: int = DEFAULT_MAX_OUTPUT,
              env: Mapping[str, str] | None = None, now: datetime | None = None) -> HooksRun:
    """Run every hook in `hooks_dir` (name order) as nfd-worker of `version` would.

    `enabled` is `sources.local.hooksEnabled` (v0.12-v0.16; None = that version's default).
    On versions that removed hooks (v0.17+) or disable them by default (v0.14-v0.16) nothing runs
    and `warnings` says so. Later hooks override earlier ones for the same key.
    """
    v = V.parse_version(version)
    d = Path(hooks_dir)
    run = HooksRun(status="ran")
    try:
        names = _hook_entries(d, v)
    except FileNotFoundError:
        run.status = "missing"
        run.warnings.append(f"hook directory {d} does not exist")
        return run
    except OSError as exc:
        run.status = "missing"
        run.warnings.append(f"unable to access {d}: {exc.strerror}")
        return run
    status = V.hooks_status(v)
    if status == "removed":
        run.status = "removed"
        if names:
            run.warnings.append(
                f"NFD {v} has no hooks (removed in v0.17.0): the {len(names)} hook(s) in {d} ({', '.join(names)}) "
                "are ignored; write feature files (features.d) from a separate DaemonSet/CronJob instead")
        return run
    if status == "disabled-by-default" and not enabled:
        run.status = "disabled"
        if names:
            run.warnings.append(
                f"hooks are disabled by default since v0.14 (sources.local.hooksEnabled: false): NFD {v} does not "
                f"run the {len(names)} hook(s) in {d} ({', '.join(names)}) unless hooksEnabled is set to true")
        return run
    if enabled is False and v.at_least(12):
        run.status = "disabled"
        if names:
            run.warnings.append(f"sources.local.hooksEnabled is false: the {len(names)} hook(s) in {d} are not run")
        return run
    if names and v.at_least(12):
        run.warnings.append("hooks are DEPRECATED since v0.12.0 and removed in v0.17.0; use feature files instead")
    lost = V.hooks_labels_lost(v)
    if lost and names:
        run.warnings.append(f"NFD {v} has a bug (fixed in v0.15.2): hook output becomes local.feature only, "
                            "so hooks produce no labels")
    for name in names:
        res = run_hook(d / name, timeout=timeout, max_output=max_output, env=env)
        if res.ok:
            if v.at_least(13) and _is_script(d / name):
                run.warnings.append(f"{name}: a script hook; the default NFD image since v0.13 is minimal and has no "
                                    "shell or interpreter, so it only runs with the -full image")
            parsed: ParsedLocal = parse_feature_lines(res.stdout, name, v, now)
            res.labels, res.features = parsed.labels, parsed.features
            run.warnings.extend(f"hook {w}" for w in parsed.warnings)
            if lost:
                res.labels = {}  # v0.15.0-1: `labelsFromHooks[k] = v` instead of labelsFromFiles
            for k, val in res.labels.items():
                if k in run.labels and run.labels[k] != val:
                    run.warnings.append(f"hook {name}: overriding label {k!r} ({run.labels[k]!r} -> {val!r})")
                run.labels[k] = val
            run.features.update(res.features)
        else:
            run.warnings.append(f"hook {name}: {res.error}")
        run.results.append(res)
    return run


def _is_script(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def run_hook(path: str | os.PathLike[str], *, timeout: float = DEFAULT_TIMEOUT, max_output: int = DEFAULT_MAX_OUTPUT,
             env: Mapping[str, str] | None = None) -> HookResult:
    """Run one hook with no arguments; never raises for hook misbehaviour."""
    p = Path(path)
    res = HookResult(name=p.name, ran=False)
    if not os.access(p, os.X_OK):
        res.error = ("not executable (permission denied): nfd-worker logs \"failed to run hook\" and skips it; "
                     f"chmod +x {p.name}")
        return res
    start = time.monotonic()
    try:
        proc = subprocess.Popen([str(p)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(env) if env is not None else None, start_new_session=True)
    except OSError as exc:
        if exc.errno == errno.ENOEXEC:
            res.error = "exec format error: a script needs a '#!' line (nfd-worker skips it)"
        else:
            res.error = f"cannot start: {exc.strerror} (nfd-worker skips it)"
        return res
    res.ran = True
    out_buf = bytearray()
    err_buf = bytearray()
    capped = threading.Event()

    def pump(stream: object, buf: bytearray) -> None:
        read = stream.read1  # type: ignore[attr-defined]
        while chunk := read(65536):
            if len(buf) < max_output:
                buf.extend(chunk[: max_output - len(buf)])
            if len(buf) >= max_output and buf is out_buf:
                capped.set()
                _kill(proc)
                break
        stream.close()  # type: ignore[attr-defined]

    threads = [threading.Thread(target=pump, args=(proc.stdout, out_buf), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, err_buf), daemon=True)]
    for t in threads:
        t.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        res.timed_out = True
        _kill(proc)
        proc.wait()
    for t in threads:
        t.join(timeout=2.0)
    res.duration = round(time.monotonic() - start, 3)
    res.exit_code = proc.returncode
    res.stdout = decode(bytes(out_buf))
    res.stderr = decode(bytes(err_buf))
    if capped.is_set():
        res.output_capped = True
        res.error = (f"printed more than {max_output} bytes on stdout; stopped and output discarded (nfd-worker has "
                     "no limit and would buffer it all in memory)")
    elif res.timed_out:
        res.error = (f"did not exit within {timeout:g}s; killed and output discarded (nfd-worker has no timeout: "
                     "this hook would hang its whole discovery loop)")
    elif proc.returncode != 0:
        res.error = (f"exited with status {proc.returncode}: nfd-worker discards all of its output"
                     if proc.returncode > 0 else f"killed by signal {-proc.returncode}: output discarded")
    return res


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
