"""An unprivileged session libvirtd for the lab, and a tap on its QEMU monitor log.

Why a daemon of our own: `qemu:///embed` only serves the process that opened it, but the lab's
domains must be reachable from `virsh` and from the console in other processes. A *session*
libvirtd run as `libvirt-qemu:kvm` (when we are root) owns its state under one directory and
serves `qemu+unix:///session?socket=<dir>/run/libvirt/libvirt-sock`; root clients can connect.
That directory is always a short one of its own in /tmp, never under the lab's state dir: libvirt binds
UNIX sockets deep inside it (`config/libvirt/qemu/lib/domain-<id>-<name>/monitor.sock`, QEMU's
`-qmp unix:…` capabilities probe) and a sun_path holds 107 bytes, so a state dir of 28 characters
already made QEMU's monitor socket "too long" (libvirt virNetSocketNewListenUNIX). The daemon's log
stays in the state dir; the directory goes when the daemon stops.

The daemon runs under a small keeper process (this file run as a script): a child subreaper that
reaps the QEMU processes libvirtd daemonizes at once, and that stops libvirtd and kills our QEMU
when the lab closes its control pipe — or dies without closing it (os._exit, SIGKILL).

Why the tap: after `virsh setmem` on a guest without a balloon driver, libvirt keeps reporting the
*actual* balloon size (live `<currentMemory>`, `info()[2]` and `memoryStats()['actual']` all stay
at the boot size) — the *target* only exists in the QMP `balloon` command libvirt sends to QEMU.
A real guest's balloon driver reads that target from the device; our simulated guest reads it from
the daemon's debug log (filters `qemu.qemu_monitor` + `qemu.qemu_domain`), where every monitor
command is logged with the monitor pointer and, on entry, the domain name.
"""

from __future__ import annotations

import contextlib
import ctypes
import grp
import json
import os
import pwd
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import BinaryIO

import psutil

LIBVIRTD = "/usr/sbin/libvirtd"
QEMU = "/usr/bin/qemu-system-x86_64"
QEMU_DRIVER_MODULE = "/usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_qemu.so"
DAEMON_USER, DAEMON_GROUP = "libvirt-qemu", "kvm"
TAP_MAX_BYTES = 64 * 1024 * 1024  # truncate the debug log beyond this (libvirt appends with O_APPEND)

_event_lock = threading.Lock()
_event_thread: threading.Thread | None = None


def ensure_event_loop() -> None:
    """Register libvirt's default event implementation once per process and run it in a daemon thread.

    Must happen before a connection that wants events is opened. Also silences libvirt's default
    error handler (it prints every error to stderr, including expected lookups that fail); errors
    still raise `libvirtError`.
    """
    global _event_thread
    import libvirt

    with _event_lock:
        if _event_thread is not None:
            return
        libvirt.virEventRegisterDefaultImpl()
        libvirt.registerErrorHandler(lambda _ctx, _err: None, None)

        def run() -> None:
            while True:
                libvirt.virEventRunDefaultImpl()

        _event_thread = threading.Thread(target=run, name="libvirt-events", daemon=True)
        _event_thread.start()


def qemu_available() -> bool:
    """True when a session libvirtd with the QEMU driver can run here."""
    return all(os.path.exists(p) for p in (LIBVIRTD, QEMU, QEMU_DRIVER_MODULE))


def _account_exists(user: str, group: str) -> bool:
    try:
        pwd.getpwnam(user)
        grp.getgrnam(group)
    except KeyError:
        return False
    return True


class SessionDaemon:
    """A session libvirtd in a fresh short directory under /tmp (its sockets fit in a sun_path whatever
    `state_dir` is), logging to `state_dir`/libvirtd.log."""

    def __init__(self, state_dir: Path, *, socket_timeout: float = 20.0) -> None:
        self.state_dir = Path(state_dir)
        self.socket_timeout = socket_timeout
        self.base: Path | None = None  # the daemon's HOME; everything it writes is under it
        self._keeper: subprocess.Popen[bytes] | None = None
        self._ctl_w: int | None = None  # closing it (or our death) tells the keeper to clean up
        self._stderr: BinaryIO | None = None

    # -- paths -------------------------------------------------------------------------------
    @property
    def socket_path(self) -> Path:
        assert self.base is not None, "daemon not started"
        return self.base / "run" / "libvirt" / "libvirt-sock"

    @property
    def tap_path(self) -> Path:
        assert self.base is not None, "daemon not started"
        return self.base / "monitor-tap.log"

    @property
    def log_path(self) -> Path:
        return self.state_dir / "libvirtd.log"

    def uri(self, driver: str = "qemu") -> str:
        if driver == "test":
            return f"test+unix:///default?socket={self.socket_path}"
        return f"qemu+unix:///session?socket={self.socket_path}"

    @property
    def pid(self) -> int | None:
        """libvirtd's pid (a child of the keeper process)."""
        if self._keeper is None:
            return None
        with contextlib.suppress(psutil.NoSuchProcess):
            for child in psutil.Process(self._keeper.pid).children():
                if child.name() == "libvirtd":
                    return child.pid
        return None

    @property
    def keeper_pid(self) -> int | None:
        return self._keeper.pid if self._keeper else None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        # as root, drop to libvirt-qemu:kvm (created by libvirt-daemon-system); else run as ourselves
        as_root = os.geteuid() == 0 and _account_exists(DAEMON_USER, DAEMON_GROUP)
        uid, gid = (
            (pwd.getpwnam(DAEMON_USER).pw_uid, grp.getgrnam(DAEMON_GROUP).gr_gid)
            if as_root
            else (os.getuid(), os.getgid())
        )
        # a fresh directory of this daemon's own, and short: /tmp/console-libvirt-XXXXXXXX is 29 characters, the
        # deepest socket under it config/libvirt/qemu/lib/domain-<id>-<the name cut to 20 characters
        # (virDomainDefGetShortName)>/monitor.sock about 70, within the 107 bytes of sun_path
        base = Path(tempfile.mkdtemp(prefix="console-libvirt-", dir="/tmp"))
        self.base = base
        dirs = {name: base / name for name in ("config", "run", "cache", "data")}
        for d in (base, *dirs.values(), dirs["config"] / "libvirt"):
            d.mkdir(parents=True, exist_ok=True)
        conf = dirs["config"] / "libvirt"
        (conf / "libvirtd.conf").write_text(
            # first matching filter wins; monitor sends (info) and "Entering monitor" lines (debug)
            'log_filters="3:qemu.qemu_monitor_json 2:qemu.qemu_monitor 1:qemu.qemu_domain"\n'
            f'log_outputs="1:file:{self.tap_path} 3:stderr"\n'
        )
        # QEMU's stdout/stderr to plain files: no virtlogd that would outlive the daemon
        (conf / "qemu.conf").write_text('stdio_handler = "file"\n')
        for d in (base, *dirs.values()):
            os.chmod(d, 0o755)
        os.chmod(dirs["run"], 0o700)
        if as_root:
            for root, subdirs, files in os.walk(base):
                for name in [root, *(os.path.join(root, n) for n in subdirs + files)]:
                    os.chown(name, uid, gid)
        env = {
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(base),
            "XDG_CONFIG_HOME": str(dirs["config"]),
            "XDG_RUNTIME_DIR": str(dirs["run"]),
            "XDG_CACHE_HOME": str(dirs["cache"]),
            "XDG_DATA_HOME": str(dirs["data"]),
        }
        argv = [LIBVIRTD, "--timeout", "0"]
        if as_root:
            argv = ["setpriv", "--reuid", DAEMON_USER, "--regid", DAEMON_GROUP, "--clear-groups", *argv]
        self._stderr = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the daemon's lifetime
        ctl_r, self._ctl_w = os.pipe()
        try:
            self._keeper = subprocess.Popen(
                [sys.executable, __file__, "keeper", str(base), str(ctl_r), "1", *argv],
                env=env,
                cwd=base,
                stdin=subprocess.DEVNULL,
                stdout=self._stderr,
                stderr=self._stderr,
                pass_fds=(ctl_r,),
                start_new_session=True,  # a Ctrl-C in the terminal must not kill it before we clean up
            )
        finally:
            os.close(ctl_r)
        deadline = time.monotonic() + self.socket_timeout
        # the socket's file appears at bind(), before libvirtd listens: a connect until then is refused (seen
        # under load: "Failed to connect socket … Connection refused"), so wait until one is accepted
        while not _accepts(self.socket_path):
            if self._keeper.poll() is not None:
                rc = self._keeper.returncode
                self.stop()
                raise RuntimeError(f"libvirtd exited ({rc}); see {self.log_path}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"libvirtd did not accept connections on its socket in {self.socket_timeout}s; "
                                   f"see {self.log_path}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Tell the keeper to stop libvirtd (SIGTERM, then SIGKILL) and end QEMU left in our directory."""
        if self._ctl_w is not None:
            os.close(self._ctl_w)
            self._ctl_w = None
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            try:
                keeper.wait(timeout=30)
            except subprocess.TimeoutExpired:
                keeper.kill()
                keeper.wait(timeout=10)
        if self.base is not None:  # normally the keeper did this already
            _kill_all(leftover_qemu(self.base))
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self.base is not None:  # normally the keeper removed it already
            shutil.rmtree(self.base, ignore_errors=True)


def _kill_all(procs: list[psutil.Process]) -> None:
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(procs, timeout=5)


def leftover_qemu(base: Path) -> list[psutil.Process]:
    """QEMU processes whose command line points into `base` (their master key and log live there)."""
    found = []
    for p in psutil.process_iter(["name", "cmdline"]):
        cmd = p.info["cmdline"] or []
        if (p.info["name"] or "").startswith("qemu-system") and any(str(base) in a for a in cmd):
            found.append(p)
    return found


_ENTER = re.compile(r"Entering monitor \(mon=(0x[0-9a-f]+) vm=0x[0-9a-f]+ name=([^)\s]+)\)")
_NEW = re.compile(r"QEMU_MONITOR_NEW: mon=(0x[0-9a-f]+)")
_SEND = re.compile(r"QEMU_MONITOR_SEND_MSG: mon=(0x[0-9a-f]+) msg=(\{.*\})")


class MonitorTap:
    """Reads the daemon's monitor log incrementally: balloon targets per domain name, per QEMU process.

    `generation(name)` counts QEMU processes seen for a domain (a new monitor = a new process);
    `balloon_kib(name)` is the last balloon target sent to the current process, or None.
    """

    def __init__(self, path: Path, *, from_start: bool = False) -> None:
        self.path = path
        self._lock = threading.Lock()
        # a reused state dir keeps the log of earlier runs: start at its end unless told otherwise
        self._offset = 0 if from_start or not path.exists() else path.stat().st_size
        self._partial = b""
        self._mon_name: dict[str, str] = {}
        self._fresh_mons: set[str] = set()
        self._target: dict[str, int | None] = {}
        self._generation: dict[str, int] = {}

    def read(self) -> set[str]:
        """Consume new log lines; return names whose balloon target or process changed."""
        changed: set[str] = set()
        with self._lock:
            try:
                size = self.path.stat().st_size
            except FileNotFoundError:
                return changed
            if size < self._offset:  # truncated under us
                self._offset, self._partial = 0, b""
            if size == self._offset:
                return changed
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read(size - self._offset)
            self._offset += len(data)
            lines = (self._partial + data).split(b"\n")
            self._partial = lines.pop()
            for raw in lines:
                self._line(raw.decode("utf-8", "replace"), changed)
            if self._offset > TAP_MAX_BYTES and not self._partial:
                with open(self.path, "r+b") as f:
                    f.truncate(0)
                self._offset = 0
        return changed

    def _line(self, line: str, changed: set[str]) -> None:
        if m := _NEW.search(line):
            self._fresh_mons.add(m.group(1))
        elif m := _ENTER.search(line):
            mon, name = m.groups()
            self._mon_name[mon] = name
            if mon in self._fresh_mons:  # first use of a new monitor: a new QEMU process for `name`
                self._fresh_mons.discard(mon)
                self._generation[name] = self._generation.get(name, 0) + 1
                self._target[name] = None
                changed.add(name)
        elif "balloon" in line and (m := _SEND.search(line)):
            mon, msg = m.groups()
            name = self._mon_name.get(mon)
            try:
                cmd = json.loads(msg)
            except ValueError:
                return
            if name and cmd.get("execute") == "balloon":
                self._target[name] = int(cmd["arguments"]["value"]) // 1024
                changed.add(name)

    def balloon_kib(self, name: str) -> int | None:
        with self._lock:
            return self._target.get(name)

    def generation(self, name: str) -> int:
        with self._lock:
            return self._generation.get(name, 0)


def _keeper(base: Path, ctl_fd: int, remove_base: bool, argv: list[str]) -> int:
    """Run libvirtd as our child and clean up after it, even when the lab process dies without close().

    It is a child subreaper, so the QEMU processes libvirtd daemonizes become its children and are
    reaped at once (PID 1 here reaps orphans ~1 s late, which made every virDomainDestroy take
    ~1.5 s: libvirt polls until the process is gone). It stops everything when the control pipe
    reaches EOF (the lab closed it, or the lab process died) or when libvirtd exits.
    """
    pr_set_child_subreaper = 36
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    stop = []
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    daemon = subprocess.Popen(argv)  # inherits env, cwd, stdout/stderr; reaped below, never via Popen.wait
    alive = True

    def reap() -> None:
        nonlocal alive
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == daemon.pid:
                alive = False

    while alive and not stop:
        ready, _, _ = select.select([ctl_fd, wake_r], [], [], 1.0)
        with contextlib.suppress(BlockingIOError):
            os.read(wake_r, 512)
        reap()
        if ctl_fd in ready:
            break
    if alive:
        os.kill(daemon.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)
            reap()
        if alive:
            os.kill(daemon.pid, signal.SIGKILL)
    _kill_all(leftover_qemu(base))
    reap()
    if remove_base:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__" and len(sys.argv) > 5 and sys.argv[1] == "keeper":
    sys.exit(_keeper(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5:]))


def _accepts(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True
