"""A node's /sys/devices/system/cpu as a FUSE filesystem, so CPU hotplug writes are synchronous as in sysfs.

In the kernel, `echo 1 > /sys/devices/system/cpu/cpu8/online` returns once cpu8 is up
(drivers/base/cpu.c online_store → device_online), so the script's next command (`cat .../online`,
`lscpu`) sees it. A plain file in the node's tree cannot do that, so `GuestRoot.attach` mounts this
filesystem (libfuse 3 through mfusepy) over a copy-free view of the tree's cpu directory and the sandbox
binds it at /sys/devices/system/cpu: reads pass through to the tree; a write to `cpuN/online` asks the lab
process (a socketpair) to hot(un)plug the CPU and returns only when the guest did it and the tree was
rewritten — EINVAL for a value other than 0/1, EIO when the guest refuses (what the kernel returns).
Everything else is read-only (EACCES), as in sysfs.

The filesystem runs in its own process (`python -m console.lab.cpufs SOURCE MOUNTPOINT FD`): libfuse takes
SIGTERM/SIGHUP for itself, which must not happen to the lab. It ends when its mount goes away (the lab
unmounts it to stop it) and unmounts itself when its stdin, a pipe only the lab holds, closes (the lab
died). A mount whose process died (stat gives ENOTCONN) is found in /proc/self/mounts and unmounted.
Where FUSE is unavailable (no /dev/fuse, not root and no fusermount3, no libfuse3) `CpuFs.unavailable()`
says why and the sandbox falls back to polling the files (`guestroot`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_ONLINE = re.compile(r"/cpu(\d+)/online")


# -- the lab's side --------------------------------------------------------------------------------------
class CpuFs:
    """One mounted cpu directory; `hotplug(cpu, online) -> errno (0 = done)` is called for each write."""

    def __init__(self, source: Path, mountpoint: Path, hotplug: Callable[[int, bool], int]) -> None:
        self.source = source
        self.mountpoint = mountpoint
        self.hotplug = hotplug
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    @staticmethod
    def unavailable() -> str | None:
        """Why FUSE cannot be used here, or None."""
        if not os.path.exists("/dev/fuse"):
            return "no /dev/fuse"
        if os.geteuid() != 0 and shutil.which("fusermount3") is None:
            return "not root and no fusermount3 (Debian package fuse3)"
        try:
            import mfusepy  # noqa: F401  (loads libfuse)
        except (ImportError, OSError) as e:
            return f"mfusepy/libfuse3 not loadable ({e})"
        return None

    def start(self, timeout: float = 15.0) -> None:
        """Mount (in a helper process) and serve its requests; raises OSError if it did not mount."""
        if mounted(self.mountpoint):  # left by a lab that was killed
            unmount(self.mountpoint)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        ours, theirs = socket.socketpair()
        # the helper's stdin is a pipe only the lab holds: its EOF means the lab is gone; its messages go to a
        # file beside the mount point (a pipe nobody reads would block it once full)
        with open(self.log_path, "wb") as err:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "console.lab.cpufs", str(self.source), str(self.mountpoint),
                 str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=err, env={**os.environ, "PYTHONPATH": _pythonpath()})
        theirs.close()
        self._sock = ours
        ours.settimeout(timeout)
        try:
            ready = ours.recv(6)
        except OSError:
            ready = b""
        if ready != b"ready\n":
            why = self._abort()
            raise OSError(f"the cpu filesystem did not mount at {self.mountpoint}: {why or 'no answer'}")
        ours.settimeout(None)
        self._thread = threading.Thread(target=self._serve, name=f"lab-cpufs-{self.source.parent.name}",
                                        daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        assert self._sock is not None
        with contextlib.suppress(OSError), self._sock.makefile("rwb", buffering=0) as f:
            for line in f:
                cpu, value = line.split()
                f.write(f"{self.hotplug(int(cpu), value == b'1')}\n".encode())

    @property
    def log_path(self) -> Path:
        return self.mountpoint.with_name(self.mountpoint.name + ".log")

    def _abort(self) -> str:
        assert self._proc is not None
        with contextlib.suppress(OSError):
            self._proc.kill()
        self._proc.wait()
        unmount(self.mountpoint)
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            lines = []
        return lines[-1] if lines else ""

    def stop(self) -> None:
        if self._proc is None:
            return
        unmount(self.mountpoint)  # the helper's FUSE loop ends with its mount
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        # the FUSE loop notices the lazy unmount only about a second later (a second per node at every lab
        # stop); SIGTERM ends it at once, through libfuse's own handler (lib/fuse_signals.c: SIGTERM ->
        # fuse_session_exit), as the helper itself would do after 5 s
        with contextlib.suppress(OSError):
            self._proc.terminate()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._abort()
        if self._sock is not None:
            self._sock.close()
        if self._thread is not None:
            self._thread.join(5)
        if mounted(self.mountpoint):
            unmount(self.mountpoint)
        with contextlib.suppress(OSError):
            self.mountpoint.rmdir()
        self._proc = None


def mounted(path: Path | str) -> bool:
    """Whether `path` is a mount point, also when its FUSE process died (os.path.ismount fails then)."""
    target = os.path.abspath(path)
    try:
        with open("/proc/self/mounts") as f:
            # fields are octal-escaped (getmntent(3)): a space is \040
            return any(line.split()[1].encode().decode("unicode_escape") == target for line in f if line.strip())
    except OSError:
        return os.path.ismount(path)


def unmount(path: Path | str) -> None:
    """Lazy unmount (root: umount(8); otherwise fusermount3); nothing when not mounted."""
    cmd = ["umount", "-l", str(path)] if os.geteuid() == 0 else ["fusermount3", "-u", "-z", str(path)]
    with contextlib.suppress(OSError):
        subprocess.run(cmd, capture_output=True, check=False, timeout=30)


def _pythonpath() -> str:
    here = str(Path(__file__).resolve().parents[2])
    rest = os.environ.get("PYTHONPATH", "")
    return f"{here}{os.pathsep}{rest}" if rest else here


# -- the helper process ----------------------------------------------------------------------------------
def _ops(source: str, ask: Callable[[int, bytes], int]) -> Any:
    import mfusepy

    def real(path: str) -> str:
        return source + path

    class Ops(mfusepy.Operations):
        use_ns = True

        def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
            try:
                st = os.lstat(real(path))
            except OSError as e:
                raise mfusepy.FuseOSError(e.errno or errno.ENOENT) from None
            keys = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime_ns", "st_mtime_ns",
                    "st_ctime_ns")
            out = {k.removesuffix("_ns"): getattr(st, k) for k in keys}
            return out

        def readdir(self, path: str, fh: int) -> list[Any]:
            # with the entries' types (d_type): lscpu skips entries whose type is unknown
            try:
                with os.scandir(real(path)) as it:
                    entries = [(e.name, {"st_mode": e.stat(follow_symlinks=False).st_mode}, 0) for e in it]
            except OSError as e:
                raise mfusepy.FuseOSError(e.errno or errno.ENOENT) from None
            return [".", "..", *entries]

        def open(self, path: str, flags: int) -> int:
            if flags & (os.O_WRONLY | os.O_RDWR) and not _ONLINE.fullmatch(path):
                raise mfusepy.FuseOSError(errno.EACCES)
            if not os.path.exists(real(path)):
                raise mfusepy.FuseOSError(errno.ENOENT)
            return 0

        def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
            try:
                with open(real(path), "rb") as f:
                    f.seek(offset)
                    return f.read(size)
            except OSError as e:
                raise mfusepy.FuseOSError(e.errno or errno.EIO) from None

        def truncate(self, path: str, length: int, fh: int | None = None) -> int:
            if not _ONLINE.fullmatch(path):
                raise mfusepy.FuseOSError(errno.EACCES)
            return 0  # `> file` truncates first; sysfs ignores it

        def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
            m = _ONLINE.fullmatch(path)
            if m is None:
                raise mfusepy.FuseOSError(errno.EACCES)
            value = data.strip()
            if value not in (b"0", b"1"):
                raise mfusepy.FuseOSError(errno.EINVAL)
            code = ask(int(m.group(1)), value)
            if code:
                raise mfusepy.FuseOSError(code)
            return len(data)

    return Ops()


def main(argv: list[str]) -> int:
    import mfusepy

    source, mountpoint, fd = argv[0].rstrip("/"), argv[1], int(argv[2])
    sock = socket.socket(fileno=fd)
    lock = threading.Lock()
    f = sock.makefile("rwb", buffering=0)

    def ask(cpu: int, value: bytes) -> int:
        with lock:
            try:
                f.write(b"%d %s\n" % (cpu, value))
                return int(f.readline() or errno.EIO)
            except (OSError, ValueError):
                return errno.EIO

    def announce() -> None:  # once the mount is there, tell the lab; end when the lab goes away
        deadline = time.monotonic() + 15
        while not os.path.ismount(mountpoint) and time.monotonic() < deadline:
            time.sleep(0.01)
        with lock:
            sock.sendall(b"ready\n")
        with contextlib.suppress(OSError):
            sys.stdin.buffer.read()  # returns at EOF: the lab closed its end or died
        unmount(mountpoint)  # ends the FUSE loop below
        time.sleep(5)
        os.kill(os.getpid(), signal.SIGTERM)  # still running: libfuse's handler ends it

    threading.Thread(target=announce, daemon=True).start()
    with contextlib.suppress(RuntimeError):  # fuse_main's status after a signal: unmounted, as asked
        mfusepy.FUSE(_ops(source, ask), mountpoint, foreground=True, default_permissions=True,
                     attr_timeout=0, entry_timeout=0, negative_timeout=0, direct_io=True, fsname="lab-cpufs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
