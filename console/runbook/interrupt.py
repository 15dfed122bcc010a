"""Stopping a run cooperatively: SIGINT/SIGTERM set a stop flag the engine checks between steps.

A signal never cuts a step's action or a journal write in half: the handler only sets the flag, and the
engine stops before the next step (journal saved, status "interrupted", resumable). Pure waits a step marks
`breakable` (waiting for VERIFY_RESIZE, for the node, for pods) are cut at once, because resuming re-waits.
A second signal stops at once wherever the run is (the journal is rewritten atomically, so it stays whole).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Interrupted(BaseException):  # like KeyboardInterrupt: not an error a step's `except Exception` catches
    """Raised to cut a breakable wait (or, on a second signal, anything) short; the engine stops the run."""


class StopFlag(threading.Event):
    """A threading.Event the engine polls; `breakable()` marks a wait a signal may cut at once."""

    def __init__(self) -> None:
        super().__init__()
        self._breakable = 0
        self.signals = 0

    @contextmanager
    def breakable(self) -> Iterator[None]:
        if self.is_set():
            raise Interrupted
        self._breakable += 1
        try:
            yield
        finally:
            self._breakable -= 1

    def request(self) -> None:
        """Ask the run to stop (from a signal handler: raises Interrupted in a breakable wait or on a repeat)."""
        self.signals += 1
        self.set()
        if self._breakable or self.signals > 1:
            raise Interrupted


@contextmanager
def stop_on_signals(stop: StopFlag, signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[None]:
    """Route `signals` to `stop.request()` for the block (main thread only), restoring the old handlers after."""
    def handler(_signum: int, _frame: Any) -> None:
        stop.request()

    old = {s: signal.signal(s, handler) for s in signals}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
