"""The step engine: precondition → idempotency check → action → verification, journaled and audited.

A screen or the CLI subscribes with `on_event(RunEvent)`; events arrive on the
engine's thread (a TUI posts them as messages). Kinds: "run-start",
"step-start", "step-skip" (effect already there / done in an earlier run),
"step-progress", "step-done", "step-failed", "undo-start", "undo-done",
"run-done" (status in data: done | failed | needs-attention | verify-failed | interrupted).

`stop` (a threading.Event, usually an interrupt.StopFlag set by SIGINT/SIGTERM) is checked before each
step; a set flag ends the run "interrupted" (exit 4, journal left resumable, nothing undone) and
Engine.run returns normally, so callers' `finally` blocks run. Steps wait with `ctx.sleep()` and wrap pure
waits in `ctx.breakable()` so a stop does not sit out a long wait.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from console.audit import AuditLog
from console.runbook.interrupt import Interrupted, StopFlag
from console.runbook.journal import Journal, now

# exit codes (also the CLI's)
EXIT_DONE, EXIT_FAILED, EXIT_USAGE, EXIT_VERIFY, EXIT_ATTENTION, EXIT_DECLINED = 0, 1, 2, 3, 4, 5


class StepFailed(Exception):
    """A step failed.

    `safe`: after undoing the completed steps the system is in a known good state (else: needs attention).
    `verify`: the change is in place but verification failed (no undo).
    `resumable`: stop where we are, undo nothing, keep the journal open (an API that is down, a node to fix
    by hand): the next run for the node resumes here.
    """

    def __init__(self, message: str, *, safe: bool = True, verify: bool = False, resumable: bool = False) -> None:
        super().__init__(message)
        self.message, self.safe, self.verify, self.resumable = message, safe, verify, resumable


def describe_error(e: BaseException) -> str:
    """One line for an error a step did not expect: HTTP status and reason when it has them, else its text."""
    status, reason = getattr(e, "status", None), getattr(e, "reason", None)
    text = f"HTTP {status} {reason}" if isinstance(status, int) and reason else (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: {text[:300]}" if text else type(e).__name__


@dataclass(frozen=True)
class RunEvent:
    run_id: str
    kind: str
    step: str = ""
    title: str = ""
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    time: str = field(default_factory=now)


@dataclass
class Context:
    """What steps share: the journal (persisted facts), progress reporting, time spent waiting on infra."""

    journal: Journal
    emit: Callable[[str], None]
    values: dict[str, Any] = field(default_factory=dict)  # live objects (clients, backends): not persisted
    infra_wait: float = 0.0
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def facts(self) -> dict[str, Any]:
        return self.journal.doc["context"]

    def remember(self, **facts: Any) -> None:
        self.facts.update(facts)
        self.journal.save()

    def waiting(self) -> _Waiting:
        return _Waiting(self)

    def sleep(self, seconds: float) -> None:
        """time.sleep that a stop request ends at once (raises Interrupted)."""
        if self.stop.wait(seconds):
            raise Interrupted

    @contextlib.contextmanager
    def breakable(self) -> Iterator[None]:
        """Around a pure wait that resuming simply repeats: a stop request cuts it at once."""
        if isinstance(self.stop, StopFlag):
            with self.stop.breakable():
                yield
            return
        if self.stop.is_set():
            raise Interrupted
        yield


class _Waiting:
    """`with ctx.waiting():` around infra calls, so the benchmark can subtract infra time."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def __enter__(self) -> None:
        self.t0 = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        self.ctx.infra_wait += time.monotonic() - self.t0


Check = Callable[[Context], Any]


@dataclass
class Step:
    id: str
    title: str
    action: Callable[[Context], dict[str, Any] | None]
    done: Check | None = None  # idempotency: True when the effect is already there
    precondition: Check | None = None  # returns a reason string when the step must not run
    verify: Check | None = None  # returns a reason string when the effect is not there
    # run (reverse order) when a later step fails; may return a sentence saying what it did
    undo: Callable[[Context], str | None] | None = None
    mutating: bool = True
    audit_target: Callable[[Context], str] | None = None
    describe: Callable[[Context], Any] | None = None  # "before"/"after" snapshot for the audit log

    def as_plan(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "mutating": self.mutating}


@dataclass
class RunResult:
    run_id: str
    status: str  # done | failed | needs-attention | verify-failed | interrupted
    exit_code: int
    message: str
    journal_path: str
    elapsed: float
    infra_wait: float
    steps: list[dict[str, Any]]
    stopped_at: str = ""  # interrupted: "during <step>" or "before <step>"

    @property
    def overhead(self) -> float:
        return self.elapsed - self.infra_wait


class Engine:
    def __init__(self, journal: Journal, steps: list[Step], *, audit: AuditLog | None = None,
                 on_event: Callable[[RunEvent], None] | None = None, values: dict[str, Any] | None = None,
                 stop: threading.Event | None = None) -> None:
        self.journal = journal
        self.steps = steps
        self.audit = audit or AuditLog.default()
        self.on_event = on_event or (lambda _e: None)
        self._current = ""
        self.stop = stop or threading.Event()
        self.ctx = Context(journal, self._progress, values or {}, stop=self.stop)
        journal.set_steps([s.as_plan() for s in steps])

    def _send(self, kind: str, step: Step | None = None, message: str = "", **data: Any) -> None:
        self.on_event(RunEvent(self.journal.run_id, kind, step.id if step else "", step.title if step else "",
                               message, data))

    def _progress(self, message: str) -> None:
        step = next((s for s in self.steps if s.id == self._current), None)
        self._send("step-progress", step, message)

    def _audit(self, step: Step, before: Any, after: Any, result: str, detail: str = "") -> None:
        target = step.audit_target(self.ctx) if step.audit_target else self.journal.doc["node"]
        self.audit.record(f"runbook.{self.journal.doc['kind']}.{step.id}", target, before=before, after=after,
                          result=result, detail=detail or step.title, run_id=self.journal.run_id)

    def run(self) -> RunResult:
        t0 = time.monotonic()
        self._send("run-start", None, f"run {self.journal.run_id}", steps=[s.as_plan() for s in self.steps])
        completed: list[Step] = []
        status, code, message = "done", EXIT_DONE, ""
        stopped_at = ""
        for step in self.steps:
            rec = self.journal.step(step.id)
            if rec["status"] in ("done", "skipped"):
                self._send("step-skip", step, "done in an earlier run")
                completed.append(step)
                continue
            self._current = step.id
            try:
                try:
                    if self.stop.is_set():
                        stopped_at = f"before {step.id}"
                        raise Interrupted
                    stopped_at = f"during {step.id}"
                    self._run_step(step, rec)
                except (StepFailed, Interrupted):
                    raise
                except Exception as e:  # an API/I-O error the step did not expect: stop here, resumable
                    raise StepFailed(f"{step.title}: {describe_error(e)}", resumable=True) from e
                completed.append(step)
            except Interrupted:  # the step keeps its journaled status (started/acted): resuming re-checks it
                status, code = "interrupted", EXIT_ATTENTION
                message = (f"interrupted {stopped_at}; nothing was rolled back; run {self.journal.run_id} "
                           "is journaled and resumes where it stopped")
                break
            except StepFailed as e:
                self.journal.mark(step.id, "failed", message=e.message)
                self._send("step-failed", step, e.message)
                message = e.message
                if e.verify:
                    status, code = "verify-failed", EXIT_VERIFY
                elif e.resumable:
                    status, code = "needs-attention", EXIT_ATTENTION
                    message += (f". Nothing was rolled back; once that is fixed, run the scale-up of "
                                f"{self.journal.doc['node']} again to resume run {self.journal.run_id}")
                else:
                    safe, undone = self._undo(completed)
                    safe = safe and e.safe
                    status, code = ("failed", EXIT_FAILED) if safe else ("needs-attention", EXIT_ATTENTION)
                    if undone:
                        message += ". Rolled back: " + "; ".join(undone)
                break
        self.journal.finish(status, message)
        elapsed = time.monotonic() - t0
        self._send("run-done", None, message or "done", status=status, exit_code=code)
        return RunResult(self.journal.run_id, status, code, message, str(self.journal.path), elapsed,
                         self.ctx.infra_wait, self.journal.doc["steps"], stopped_at if status == "interrupted" else "")

    def _run_step(self, step: Step, rec: dict[str, Any]) -> None:
        resumed = rec["status"] in ("started", "acted")
        self._send("step-start", step, "resuming" if resumed else "")
        if step.precondition:
            why = step.precondition(self.ctx)
            if why:
                raise StepFailed(f"{step.title}: precondition not met: {why}")
        if step.done and step.done(self.ctx):
            if resumed and step.mutating:  # acted in a run that was killed before it could record it
                self._audit(step, None, step.describe(self.ctx) if step.describe else None, "ok",
                            f"{step.title} (done by an earlier, interrupted run; recorded on resume)")
            self.journal.mark(step.id, "skipped", message="already in place")
            self._send("step-skip", step, "already in place")
            return
        before = step.describe(self.ctx) if step.describe and step.mutating else None
        self.journal.mark(step.id, "started")
        try:
            data = step.action(self.ctx) or {}
        except StepFailed as e:
            if step.mutating:
                self._audit(step, before, None, "error", e.message)
            raise
        self.journal.mark(step.id, "acted", data=data)
        if step.verify:
            why = step.verify(self.ctx)
            if why:
                if step.mutating:
                    self._audit(step, before, None, "error", why)
                raise StepFailed(f"{step.title}: {why}")
        if step.mutating:
            after = step.describe(self.ctx) if step.describe else data or None
            self._audit(step, before, after, "ok")
        self.journal.mark(step.id, "done")
        self._send("step-done", step, "", **data)

    def _undo(self, completed: list[Step]) -> tuple[bool, list[str]]:
        """Undo completed steps in reverse: (False when an undo failed — the state needs attention, what was done)."""
        ok, said = True, []
        for step in reversed(completed):
            if not step.undo:
                continue
            self._current = step.id
            self._send("undo-start", step, f"undoing: {step.title}")
            try:
                try:
                    what = step.undo(self.ctx)
                except StepFailed:
                    raise
                except Exception as e:  # an API error while undoing: report it, keep undoing the rest
                    raise StepFailed(f"undo of {step.title}: {describe_error(e)}", safe=False) from e
                self.journal.mark(step.id, "undone", message=what or "")
                self._audit(step, None, what, "undone", f"undo: {step.title}")
                self._send("undo-done", step, what or "")
                if what:
                    said.append(what)
            except StepFailed as e:
                ok = False
                said.append(f"undo failed: {e.message}")
                self.journal.mark(step.id, "failed", message=f"undo failed: {e.message}")
                self._send("step-failed", step, f"undo failed: {e.message}")
        return ok, said


def retry(fn: Callable[[], Any], *, timeout: float, first: float = 0.2, factor: float = 2.0, cap: float = 2.0,
          retry_on: tuple[type[BaseException], ...] = (Exception,), stop: threading.Event | None = None) -> Any:
    """Call `fn` until it returns without raising `retry_on`, with exponential backoff, for `timeout` seconds.

    `stop` (the run's, `ctx.stop`): a stop request ends the backoff at once with Interrupted."""
    deadline = time.monotonic() + timeout
    delay = first
    while True:
        try:
            return fn()
        except retry_on:
            if time.monotonic() + delay > deadline:
                raise
            if stop is None:
                time.sleep(delay)
            elif stop.wait(delay):
                raise Interrupted from None
            delay = min(delay * factor, cap)
