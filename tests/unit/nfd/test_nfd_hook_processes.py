"""No process of a hook outlives its run: background children, `nohup`, `setsid`, timeouts, caps, signals.

NFD's own behaviour (kubernetes-sigs/node-feature-discovery v0.16.9 source/local/local.go runHook):
exec.Command + cmd.Run, no timeout, no output limit, no process group; see console/nfd/hooks.py.
Survivors are found with psutil by an environment marker every hook process inherits, and by the
pids the hooks write down.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from console.nfd.hooks import run_hook

REPO = Path(__file__).resolve().parents[3]
MARK = "CONSOLE_HOOK_TEST_MARK"

# every way a shell script leaves something running; `$PIDS` collects their pids
SPAWNER = """#!/bin/sh
sleep 300 &
echo $! >> "$PIDS"
nohup sleep 301 >/dev/null 2>&1 &
echo $! >> "$PIDS"
setsid sleep 302 &
echo $! >> "$PIDS"
setsid sleep 303 </dev/null >/dev/null 2>&1 &
echo $! >> "$PIDS"
( setsid sh -c 'echo $$ >> "$PIDS"; exec sleep 304' </dev/null >/dev/null 2>&1 & )
while [ "$(wc -l < "$PIDS")" -lt 5 ]; do sleep 0.05; done
"""


def _survivors(marker: str, pid_file: Path) -> list[str]:
    alive = []
    pids = {int(x) for x in pid_file.read_text().split()} if pid_file.exists() else set()
    for p in psutil.process_iter():
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            if p.pid in pids or p.environ().get(MARK) == marker:
                alive.append(f"{p.pid} {p.cmdline()}")
        except psutil.Error:
            continue
    return alive


def _hook(tmp_path: Path, body: str) -> Path:
    d = tmp_path / "source.d"
    d.mkdir(exist_ok=True)
    h = d / "spawner"
    h.write_text(body)
    h.chmod(0o755)
    return h


def _env(tmp_path: Path) -> tuple[dict[str, str], str, Path]:
    marker = uuid.uuid4().hex
    pids = tmp_path / "pids"
    return {**os.environ, MARK: marker, "PIDS": str(pids), "STARTED": str(tmp_path / "started")}, marker, pids


def _wait_for(cond, what: str, proc: subprocess.Popen[str] | None = None, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not cond():
        assert proc is None or proc.poll() is None, f"exited before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_background_nohup_and_setsid_children_die_with_the_hook(tmp_path: Path) -> None:
    env, marker, pids = _env(tmp_path)
    res = run_hook(_hook(tmp_path, SPAWNER + "echo spawned=5\n"), timeout=60, env=env)
    assert res.ok, res.error
    assert "spawned=5" in res.stdout and res.duration < 60  # `sleep 300 &` held stdout: NFD's Wait would block
    assert len(pids.read_text().split()) == 5  # the hook waits for all five before it exits
    assert _survivors(marker, pids) == []


def test_timeout_kills_the_whole_tree(tmp_path: Path) -> None:
    env, marker, pids = _env(tmp_path)
    res = run_hook(_hook(tmp_path, SPAWNER + "sleep 300\n"), timeout=1.0, env=env)
    assert res.timed_out and "did not exit within 1s" in res.error and res.exit_code == -signal.SIGKILL
    assert _survivors(marker, pids) == []


def test_output_cap_kills_the_whole_tree(tmp_path: Path) -> None:
    env, marker, pids = _env(tmp_path)
    res = run_hook(_hook(tmp_path, SPAWNER + "while :; do echo yyyyyyyyyyyyyyyy; done\n"), timeout=60,
                   max_output=4096, env=env)
    assert res.output_capped and "more than 4096 bytes" in res.error
    assert _survivors(marker, pids) == []


@pytest.mark.parametrize(("timeout", "max_output"), [(float("nan"), 10), (float("inf"), 10), (-1, 10), (0, 10),
                                                     (1, 0), (1, -5)])
def test_library_refuses_unbounded_limits(tmp_path: Path, timeout: float, max_output: int) -> None:
    with pytest.raises(ValueError, match="positive"):
        run_hook(_hook(tmp_path, "#!/bin/sh\necho a=1\n"), timeout=timeout, max_output=max_output)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "console", "nfd", "local", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize(("flag", "value"), [("--hook-timeout", "nan"), ("--hook-timeout", "inf"),
                                             ("--hook-timeout", "-1"), ("--hook-timeout", "0"),
                                             ("--hook-timeout", "soon"), ("--hook-max-output", "0"),
                                             ("--hook-max-output", "-1"), ("--hook-max-output", "1.5"),
                                             ("--hook-env", "NOEQUALS"), ("--hook-env", "=v")])
def test_cli_rejects_unbounded_limits_as_usage_errors(tmp_path: Path, flag: str, value: str) -> None:
    p = _cli("--features-dir", str(tmp_path), "--hooks-dir", str(tmp_path), flag, value)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"argument {flag}:" in p.stderr and repr(value) in p.stderr


def _start_nfd_local(tmp_path: Path) -> tuple[subprocess.Popen[str], str, Path]:
    """`console nfd local` running the spawner hook, once the hook has started all its children."""
    _, marker, pids = _env(tmp_path)
    _hook(tmp_path, SPAWNER + 'touch "$STARTED"\nsleep 300\n')
    (tmp_path / "features.d").mkdir()
    started = tmp_path / "started"
    proc = subprocess.Popen(
        [sys.executable, "-m", "console", "nfd", "local", "--nfd-version", "v0.12.0", "--features-dir",
         str(tmp_path / "features.d"), "--hooks-dir", str(tmp_path / "source.d"), "--hook-timeout", "600",
         "--hook-env", f"{MARK}={marker}", "--hook-env", f"PIDS={pids}", "--hook-env", f"STARTED={started}"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        _wait_for(started.exists, "the hook to start", proc)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, marker, pids


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_nfd_local_kills_the_running_hook_tree(tmp_path: Path, sig: signal.Signals) -> None:
    proc, marker, pids = _start_nfd_local(tmp_path)
    try:
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 4, err
    assert f"nfd local: interrupted by {sig.name}" in err and "were killed" in err and "Traceback" not in err
    assert _survivors(marker, pids) == []


def test_sigkill_of_the_console_still_ends_the_hook_tree(tmp_path: Path) -> None:
    """No handler runs on SIGKILL: the runner's PR_SET_PDEATHSIG makes it kill the hook's processes."""
    proc, marker, pids = _start_nfd_local(tmp_path)
    proc.kill()
    proc.communicate(timeout=60)
    _wait_for(lambda: _survivors(marker, pids) == [], "the hook's processes to be killed")
