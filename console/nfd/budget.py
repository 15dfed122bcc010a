"""Execution budgets for NFD templates, and cooperative cancellation of rule evaluation.

Go's text/template has no step or size limit and NFD sets none: a template that ranges over a
2,000,000,000-element range or calls Sprig's `repeat 2000000000` runs until nfd-master's memory is gone.
The console must stay answering, so each template execution gets a budget whose limits a real rule
never reaches:

- `MAX_STEPS` node evaluations (actions, commands, range iterations): the biggest real inputs are a
  node's `kernel.config` (some 10,000 elements) and PCI/USB device lists; ranging over all of them
  with a few commands each stays under 100,000 (500,000 runs in well under a second);
- `MAX_OUTPUT` bytes produced (written text and any one string value built by a function): the
  expansion becomes labels, vars and annotations of one Node object, which cannot be stored past
  etcd's 1.5 MiB request limit anyway;
- `MAX_SECONDS` of wall time, a backstop for steps that are individually slow.

Exceeding one is `BudgetExceeded`, which the template engine turns into an ordinary template
execution error (NFD: "failed to process rule"; `nfd dryrun` exits 1).

`cancellable(event)` makes every budget created in that context (thread) check `event` and raise
`Cancelled` once it is set: the honest way to stop Python work running in a thread (the TUI's dry-run
worker); `check_cancelled()` is the same check for loops outside templates.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

MAX_STEPS = 500_000
MAX_OUTPUT = 1536 * 1024
MAX_SECONDS = 1.0
_CHECK_EVERY = 512  # steps between clock/cancellation checks


class BudgetExceeded(Exception):
    """A template used more steps, output or time than its budget."""


class Cancelled(Exception):
    """The evaluation was cancelled by its owner (e.g. Esc in the TUI)."""


_CANCEL: ContextVar[threading.Event | None] = ContextVar("console_nfd_cancel", default=None)
_CURRENT: ContextVar[Budget | None] = ContextVar("console_nfd_budget", default=None)


@contextmanager
def cancellable(event: threading.Event) -> Iterator[None]:
    """Evaluations started inside this block stop with `Cancelled` soon after `event` is set."""
    token = _CANCEL.set(event)
    try:
        yield
    finally:
        _CANCEL.reset(token)


def check_cancelled() -> None:
    ev = _CANCEL.get()
    if ev is not None and ev.is_set():
        raise Cancelled("evaluation cancelled")


class Budget:
    """One template execution's allowance; `activate()` makes it the one functions charge."""

    def __init__(self, steps: int = MAX_STEPS, output: int = MAX_OUTPUT, seconds: float = MAX_SECONDS) -> None:
        self.max_steps, self.max_output, self.seconds = steps, output, seconds
        self.steps_left = steps
        self.output_left = output
        self.deadline = time.monotonic() + seconds
        self.cancel = _CANCEL.get()

    @contextmanager
    def activate(self) -> Iterator[Budget]:
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)

    def step(self, n: int = 1) -> None:
        self.steps_left -= n
        if self.steps_left < 0:
            raise BudgetExceeded(f"template execution exceeded its budget of {self.max_steps} steps")
        if self.steps_left % _CHECK_EVERY == 0:
            self.check_clock()

    def check_clock(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled("evaluation cancelled")
        if time.monotonic() > self.deadline:
            raise BudgetExceeded(f"template execution exceeded its budget of {self.seconds:g} s")

    def emit(self, n: int) -> None:
        self.output_left -= n
        if self.output_left < 0:
            raise BudgetExceeded(f"template output exceeded its budget of {self.max_output} bytes")

    def value(self, n: int, what: str) -> None:
        """Refuse to build a value of `n` bytes that could never fit the output."""
        if n > self.max_output:
            raise BudgetExceeded(f"{what} would produce {n} bytes, over the template output budget of "
                                 f"{self.max_output} bytes")


def current_budget() -> Budget:
    """The budget of the template execution running in this context (a fresh default one outside any)."""
    b = _CURRENT.get()
    return b if b is not None else Budget()


def charge_value(n: int, what: str) -> None:
    """For template functions: refuse a result of `n` bytes (before building it) over the output budget."""
    b = _CURRENT.get()
    if b is not None:
        b.value(n, what)
    elif n > MAX_OUTPUT:
        raise BudgetExceeded(f"{what} would produce {n} bytes, over the template output budget of {MAX_OUTPUT} bytes")
