"""One process at a time owns a run's journal: an exclusive, non-blocking flock on `<run id>.lock` beside it.

Why a lock of its own next to the node's Lease (console/runbook/lock.py): the Lease keeps two *machines*
apart, but a resumed run takes over the Lease of its own run id (its holder died with the journal
unfinished), so two processes on one machine that share the state directory — an admin's second terminal,
a cron job — would both resume the same journal, both act, and both rewrite it. The flock is what tells
them apart: held from before the journal is first written until the run ends, released by the kernel when
the process dies (so a crashed run never blocks its own resume), refused at once to anyone else.

The lock is a sidecar file, not the journal itself: each save renames a new file over the journal, and a
flock belongs to the old inode. The holder writes its pid into the sidecar for the refusal's message.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

# the `-o json` error kind of a run refused because another run holds what it would change: the node (its Lease,
# console/runbook/lock.py) or the run's own journal (this lock); exit 2, nothing changed
HELD = "held"


class JournalBusy(Exception):
    """Another live process owns the run; the message names the run, the pid and the journal."""

    def __init__(self, message: str, *, run_id: str, pid: str, journal: Path) -> None:
        super().__init__(message)
        self.run_id, self.pid, self.journal = run_id, pid, journal

    @property
    def details(self) -> dict[str, str]:
        """For `-o json`: the kind, who holds the run and its journal."""
        return {"error": HELD, "pid": self.pid, "journal": str(self.journal)}


class JournalLock:
    def __init__(self, directory: Path, run_id: str) -> None:
        self.run_id = run_id
        self.file = directory / f"{run_id}.lock"
        self.journal = directory / f"{run_id}.json"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock (JournalBusy at once if another process holds it)."""
        if self._fd is not None:
            return
        self.file.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.file, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                pid = os.read(fd, 32).decode(errors="replace").strip() or "?"
                os.close(fd)
                raise JournalBusy(f"run {self.run_id} is in progress in another process (pid {pid}) — journal "
                                  f"{self.journal}; wait for it to end", run_id=self.run_id, pid=pid,
                                  journal=self.journal) from None
            try:  # the file we locked may have been unlinked by a holder that just ended: lock the current one
                same = os.fstat(fd).st_ino == os.stat(self.file).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
                self._fd = fd
                return
            os.close(fd)

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.file.unlink()
        os.close(self._fd)
        self._fd = None

    def check(self) -> None:
        """JournalBusy if another process owns the run now (takes the lock and gives it back at once)."""
        if self._fd is None:
            self.acquire()
            self.release()

    def __enter__(self) -> JournalLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
