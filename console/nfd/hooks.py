"""Hooks (`source.d`): run executables like nfd-worker v0.4-v0.16 did, but safely.

What NFD does (source/local/local.go, v0.16.9 `runHook`): `exec.Command(path)` for each regular file,
no arguments, stdin /dev/null, the worker's own environment, stdout and stderr into unbounded
`bytes.Buffer`s, `cmd.Run()` with no timeout, no process group and no `WaitDelay`: a hook that never
exits hangs the worker's discovery loop, one that prints gigabytes is buffered whole, and because
`Wait` waits for the output pipes to close, a background child that keeps stdout open (`sleep 300 &`)
holds the worker until it exits, while one that redirects its output lives on after the hook. A
non-zero exit discards all of its stdout; stderr lines are logged.

What the console does (stricter, and said in the result): each hook gets a timeout (`timeout`, default
10 s) and a stdout cap (`max_output`, default 1 MiB), both checked positive and finite. It runs under
console/nfd/hookwrap.py, a small subreaper in its own session, with the hook in a session of its own:
when the hook exits, times out or overflows, or the console is interrupted (SIGINT/SIGTERM raise in
the waiting thread) or dies, the hook's process group and every process it left behind - `&`,
`nohup`, double forks, `setsid` children - are SIGKILLed and reaped. Nothing of a hook outlives its run.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from console.nfd import versions as V
from console.nfd.featurefile import ParsedLocal, decode, parse_feature_lines

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_OUTPUT = 1024 * 1024
KILL_GRACE = 5.0  # for the runner to kill and reap the hook's processes after SIGTERM
_RUNNER = Path(__file__).with_name("hookwrap.py")


def check_limits(timeout: float, max_output: int) -> None:
    """Raise ValueError unless the timeout (seconds) and the output cap (bytes) are positive and finite."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"hook timeout must be a positive, finite number of seconds (got {timeout!r})")
    if isinstance(max_output, bool) or not isinstance(max_output, int) or max_output <= 0:
        raise ValueError(f"hook output cap must be a positive number of bytes (got {max_output!r})")


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
              env: Mapping[str, str] | None = None, now: datetime | None = None,
              runner: Callable[..., HookResult] | None = None) -> HooksRun:
    """Run every hook in `hooks_dir` (name order) as nfd-worker of `version` would.

    `runner(path, *, timeout, max_output, env) -> HookResult` runs one hook (default `run_hook`: here, as
    `nfd local` does); where the hook runs is the runner's business, what its output means is this function's.

    `enabled` is `sources.local.hooksEnabled` (v0.12-v0.16; None = that version's default).
    On versions that removed hooks (v0.17+) or disable them by default (v0.14-v0.16) nothing runs
    and `warnings` says so. Later hooks override earlier ones for the same key.
    """
    check_limits(timeout, max_output)
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
        res = (runner or run_hook)(d / name, timeout=timeout, max_output=max_output, env=env)
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
    from console.userfile import open_regular

    try:
        with open_regular(p) as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def run_hook(path: str | os.PathLike[str], *, timeout: float = DEFAULT_TIMEOUT, max_output: int = DEFAULT_MAX_OUTPUT,
             env: Mapping[str, str] | None = None) -> HookResult:
    """Run one hook with no arguments; never raises for hook misbehaviour (see the module docstring).

    An exception in the waiting thread (KeyboardInterrupt, a signal handler's) kills the hook's whole
    process tree before it propagates.
    """
    check_limits(timeout, max_output)
    p = Path(path)
    res = HookResult(name=p.name, ran=False)
    if error := not_executable(p):
        res.error = error
        return res
    start = time.monotonic()
    status_r, status_w = os.pipe()
    try:
        proc = subprocess.Popen([sys.executable, "-I", "-S", str(_RUNNER)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(status_w,),
                                start_new_session=True)
    except OSError as exc:
        os.close(status_r)
        res.error = f"cannot start the hook runner: {exc.strerror}"
        return res
    finally:
        os.close(status_w)
    runner = _Runner(proc, status_r)
    spec = {"path": str(p.absolute()), "env": dict(env if env is not None else os.environ), "parent": os.getpid(),
            "status_fd": status_w}
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
                runner.request_stop()
                break
        stream.close()  # type: ignore[attr-defined]

    threads = [threading.Thread(target=pump, args=(proc.stdout, out_buf), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, err_buf), daemon=True),
               threading.Thread(target=runner.read_status, daemon=True)]
    try:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(json.dumps(spec).encode())  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        for t in threads:
            t.start()
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        res.timed_out = True
        runner.stop()
    except BaseException:
        runner.stop()
        raise
    finally:
        for t in threads:
            if t.ident is not None:
                t.join(timeout=KILL_GRACE)
        if threads[2].ident is None:  # the status reader (which owns the fd) never started
            os.close(status_r)
    res.duration = round(time.monotonic() - start, 3)
    last = runner.status[-1] if runner.status else ""
    kind, _, num = last.partition(" ")
    if kind == "exec-error":
        code = int(num or 0)
        res.error = ("exec format error: a script needs a '#!' line (nfd-worker skips it)" if code == errno.ENOEXEC
                     else f"cannot start: {os.strerror(code)} (nfd-worker skips it)")
        return res
    res.ran = True
    res.exit_code = {"exit": int(num or 0), "signal": -int(num or 0), "killed": -signal.SIGKILL}.get(
        kind, proc.returncode)
    res.stdout = decode(bytes(out_buf))
    res.stderr = decode(bytes(err_buf))
    res.output_capped = capped.is_set()
    if not res.output_capped and not res.timed_out and kind not in ("exit", "signal", "killed"):
        res.error = f"the hook runner ended unexpectedly (status {proc.returncode}); output discarded"
    else:
        res.error = run_error(res, timeout, max_output)
    return res


def not_executable(path: Path) -> str:
    """Why nfd-worker would skip `path` before running it ("" when it would run it)."""
    if os.access(path, os.X_OK):
        return ""
    return ("not executable (permission denied): nfd-worker logs \"failed to run hook\" and skips it; "
            f"chmod +x {path.name}")


def run_error(res: HookResult, timeout: float, max_output: int) -> str:
    """Why nfd-worker would not use the output of this finished run ("" when it would), wherever it ran."""
    if res.output_capped:
        return (f"printed more than {max_output} bytes on stdout; stopped and output discarded (nfd-worker has "
                "no limit and would buffer it all in memory)")
    if res.timed_out:
        return (f"did not exit within {timeout:g}s; killed and output discarded (nfd-worker has no timeout: "
                "this hook would hang its whole discovery loop)")
    if res.exit_code:
        return (f"exited with status {res.exit_code}: nfd-worker discards all of its output"
                if res.exit_code > 0 else f"killed by signal {-res.exit_code}: output discarded")
    return ""


class _Runner:
    """The hookwrap process: its status lines, and how to make it kill the hook's tree."""

    def __init__(self, proc: subprocess.Popen[bytes], status_fd: int) -> None:
        self.proc, self.status_fd = proc, status_fd
        self.status: list[str] = []
        self.hook_pid: int | None = None

    def read_status(self) -> None:
        with open(self.status_fd, encoding="utf-8", errors="replace") as f:
            for line in f:
                self.status.append(line.strip())
                if line.startswith("started "):
                    self.hook_pid = int(line.split()[1])

    def request_stop(self) -> None:
        """SIGTERM the runner: it SIGKILLs the hook's group and every descendant, then exits."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        self.request_stop()
        try:
            self.proc.wait(timeout=KILL_GRACE)
        except subprocess.TimeoutExpired:  # the runner itself is stuck: kill what we know of
            for pgid in (self.proc.pid, self.hook_pid):
                if pgid:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pgid, signal.SIGKILL)
            self.proc.wait()
