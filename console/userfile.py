"""Opening a file a user named (a rule file, the config file, a kubeconfig, a theme, clouds.yaml): only a regular
file, refused before it is opened.

`open()` on a FIFO blocks until a writer comes, on a terminal or a device it waits for input (or, for some
devices, acts: a tape rewinds, /dev/watchdog arms): a command given such a path would hang or worse. So the
path is stat()ed first and anything but a regular file is refused naming it — `NotRegularFile`, an OSError
whose `strerror` says what the path is, so every caller's existing "cannot read PATH: {strerror}" words it —
and the file is then opened as OpenSSH opens authorized_keys (auth.c auth_openkeyfile: O_NONBLOCK, fstat,
refuse what is not S_ISREG, clear O_NONBLOCK), so a path swapped for a FIFO between the two calls is refused
too, never waited on. `-` (standard input), where a command takes it, is the caller's business.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from typing import BinaryIO

_WHAT = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


class NotRegularFile(OSError):
    """The path names something that is not a regular file (it was not opened, or opened without waiting)."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(errno.EINVAL, f"not a regular file ({what})", path)
        self.what = what


def _what(mode: int) -> str:
    return next((name for test, name in _WHAT if test(mode)), "not a regular file")


def check_regular(path: str | os.PathLike[str]) -> None:
    """IsADirectoryError / NotRegularFile (or the stat's own OSError, e.g. FileNotFoundError) unless `path`
    (symlinks followed) is a regular file."""
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    if not stat.S_ISREG(mode):
        raise NotRegularFile(os.fspath(path), _what(mode))


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for reading in binary, when it is a regular file (see the module docstring)."""
    check_regular(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced between the stat and the open
            raise NotRegularFile(os.fspath(path), _what(mode))
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
