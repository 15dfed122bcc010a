"""Waiting for a condition the lab's servers bring about: `wait_for(lambda: ..., timeout=60)`."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(condition: Callable[[], object], *, timeout: float, interval: float = 0.1) -> bool:
    """Check `condition` every `interval` seconds until it is true (True) or `timeout` seconds have passed
    (False); it is checked once more at the deadline, so a slow machine's last chance is not lost."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
    return True
