"""Run one hook so that none of its processes outlive it: a tiny subreaper between the console and the hook.

Started by console.nfd.hooks.run_hook as `python -I -S hookwrap.py` (standard library only, no console
import) in its own session. It reads `{"path", "env", "parent", "status_fd"}` as JSON on stdin, then:

- marks itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER, Linux 3.4+): every process the hook
  leaves behind - `cmd &`, `nohup cmd &`, double forks, even `setsid cmd &`, which leaves the hook's
  process group and session - is re-parented to this process when its parent dies, never to init;
- asks for SIGTERM when the console dies (PR_SET_PDEATHSIG), so even a SIGKILLed console leaves nothing;
- runs the hook in its own session (stdin /dev/null, stdout/stderr inherited from the console's pipes);
- when the hook exits, or on SIGTERM (the console's timeout, output cap, or its own SIGINT/SIGTERM),
  SIGKILLs the hook's process group and then every remaining descendant, reaping until none is left;
- reports on the status fd it is given: `started PID`, then `exit N` | `signal N` | `killed` | `exec-error ERRNO`.

Without PR_SET_CHILD_SUBREAPER (not Linux) the process group kill still happens; a `setsid` child
would escape it there.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


class _Stop(Exception):
    pass


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (ImportError, OSError, AttributeError):  # no ctypes or no prctl: the group kill still happens
        return False


def _children() -> list[int]:
    """Processes whose parent is this one (as subreaper: every orphaned descendant of the hook)."""
    if not os.path.isdir("/proc"):
        return []
    me = os.getpid()
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # after "pid (comm) "
        if len(fields) > 1 and int(fields[1]) == me:
            kids.append(int(entry))
    return kids


def _kill_tree(hook_pid: int) -> None:
    """SIGKILL the hook's group, then every child (orphans included) until none is left."""
    with contextlib.suppress(OSError):
        os.killpg(hook_pid, signal.SIGKILL)  # the group outlives its leader; its id is not reused meanwhile
    while kids := _children():
        for pid in kids:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)  # a `setsid` child leads its own group
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in kids:  # once reaped, their own children are ours: the next round gets them
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _stop(_signum: int, _frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one shot: a second SIGTERM must not cut the cleanup
    raise _Stop


def main() -> int:
    spec = json.load(sys.stdin)
    status = os.fdopen(spec["status_fd"], "w", buffering=1)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != spec["parent"]:  # the console died before PDEATHSIG was armed
        return 1
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the hook
        try:
            os.setsid()
            os.close(r)
            status.close()
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, set())
            os.execve(spec["path"], [spec["path"]], spec["env"])
        except OSError as exc:
            os.write(w, str(exc.errno or 0).encode())
        os._exit(127)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        failed = f.read()  # EOF at a successful exec (the pipe is close-on-exec)
    if failed:
        os.waitpid(pid, 0)
        status.write(f"exec-error {int(failed)}\n")
        return 127
    status.write(f"started {pid}\n")
    signal.signal(signal.SIGTERM, _stop)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        _, st = os.waitpid(pid, 0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except _Stop:
        _kill_tree(pid)
        status.write("killed\n")
        return 137
    _kill_tree(pid)  # whatever the hook left running
    if os.WIFSIGNALED(st):
        status.write(f"signal {os.WTERMSIG(st)}\n")
        return 128 + os.WTERMSIG(st)
    status.write(f"exit {os.WEXITSTATUS(st)}\n")
    return os.WEXITSTATUS(st)


if __name__ == "__main__":
    sys.exit(main())
