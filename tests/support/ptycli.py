"""A headless command that asks before it changes anything, run with a terminal on stdin (so it asks), something
done while it waits at its question (another admin's change), then the answer typed."""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Callable


def answer_after(cmd: list[str], env: dict[str, str], meanwhile: Callable[[str], object], answer: bytes = b"y\n",
                 *, question: str = "[y/N]", timeout: float = 60) -> tuple[int, str, str]:
    """Run `cmd` until it shows `question` on stderr, call `meanwhile(stderr so far)`, type `answer`: (exit code,
    stdout, stderr)."""
    primary, secondary = os.openpty()  # a terminal on stdin, so the command asks
    proc = subprocess.Popen(cmd, env=env, stdin=secondary, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(secondary)
    try:
        err = ""
        deadline = time.monotonic() + timeout
        while question not in err and time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([proc.stderr], [], [], 1)
            if ready:
                err += os.read(proc.stderr.fileno(), 4096).decode()  # type: ignore[union-attr]
        assert question in err, err
        meanwhile(err)
        os.write(primary, answer)
        out, rest = proc.communicate(timeout=timeout)
    finally:
        os.close(primary)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err + rest
