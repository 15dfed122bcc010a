"""The step engine: precondition → idempotency check → action → verification, journaled and audited.

A screen or the CLI subscribes with `on_event(RunEvent)`; events arrive on the
engine's thread (a TUI posts them as messages). Kinds: "run-start",
"step-start", "step-skip" (effect already there / done in an earlier run),
"step-progress", "step-done", "step-failed", "undo-start", "undo-done",
"run-done" (status in data: done | failed | needs-attention | verify-failed | interrupted | refused).

Every mutating step's action and every undo goes through the session's Guard (console/guard.py): read-only
refuses it, and its audit intent is fsync'd before the action (its id kept in the step's journal data,
`audit_intent`), its outcome written after the verification. A refusal (read-only, audit log unwritable)
stops the run with exit 2 ("refused"), nothing rolled back; the journal stays resumable when an earlier
step changed something. A resumed step whose intent is logged but whose outcome is not gets the outcome
(once) — not a second intent; a step whose outcome is there gets no record at all.

`stop` (a threading.Event, usually an interrupt.StopFlag set by SIGINT/SIGTERM) is checked before each
step; a set flag ends the run "interrupted" (exit 4, journal left resumable, nothing undone) and
Engine.run returns normally, so callers' `finally` blocks run. Steps wait with `ctx.sleep()` and wrap pure
waits in `ctx.breakable()` so a stop does not sit out a long wait.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from console.audit import new_id
from console.guard import Guard, GuardRefusal
from console.runbook.interrupt import Interrupted, StopFlag
from console.runbook.journal import Journal, now

if TYPE_CHECKING:
    from console.infra.libvirt import LibvirtBackend
    from console.infra.openstack import OpenStackBackend
    from console.kube.nodeshell import NodeAccess
    from console.runbook.cordon import Left

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
    """One line for an error a step did not expect, in words (console/faults.py describe: the fault, the HTTP
    answer, the console's own message; never a bare class name); its traceback goes to the console's log."""
    from console.faults import describe

    said = describe(e)
    logging.getLogger(__name__).warning("a step's error: %s", said, exc_info=e)
    return said


@dataclass(frozen=True)
class RunEvent:
    run_id: str
    kind: str
    step: str = ""
    title: str = ""
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    time: str = field(default_factory=now)


class MissingClient(RuntimeError):
    """A step asked for a client its run was not given (a plan for a backend the session has none of)."""


@dataclass(frozen=True)
class Clients:
    """The live objects a run's steps call, built by the session (console/runbook/session.py); not persisted."""

    api: Any = None  # the kubernetes ApiClient that console/kube/ functions take
    openstack_backend: OpenStackBackend | None = None
    libvirt_backend: LibvirtBackend | None = None
    node_access: NodeAccess | None = None  # how commands run on a node (debug pod, SSH, guest agent)
    kubelet_unit: str | None = None  # the settings' kubelet_unit; None: read the node's

    @property
    def openstack(self) -> OpenStackBackend:
        if self.openstack_backend is None:
            raise MissingClient("this run has no OpenStack cloud (set cloud in the config, or OS_CLOUD)")
        return self.openstack_backend

    @property
    def libvirt(self) -> LibvirtBackend:
        if self.libvirt_backend is None:
            raise MissingClient("this run has no libvirt URI (set libvirt_uris in the config)")
        return self.libvirt_backend

    @property
    def access(self) -> NodeAccess:
        if self.node_access is None:
            raise MissingClient("this run has no node access (node_access in the config)")
        return self.node_access


@dataclass
class Context:
    """What steps share: the journal (persisted facts), progress reporting, time spent waiting on infra."""

    journal: Journal
    emit: Callable[[str], None]
    clients: Clients = field(default_factory=Clients)
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
    refusal: str = ""  # refused: the kind (read-only, audit-unwritable)
    # the node left cordoned (console/runbook/cordon.py Left: by whom, and the sentence saying so), read from the
    # API server once the run ended; None: not cordoned. Set by the runbook's caller (session.py, revert.py)
    cordoned: Left | None = None

    @property
    def overhead(self) -> float:
        return self.elapsed - self.infra_wait


class Engine:
    def __init__(self, journal: Journal, steps: list[Step], *, guard: Guard,
                 on_event: Callable[[RunEvent], object] | None = None, clients: Clients | None = None,
                 stop: threading.Event | None = None) -> None:
        self.journal = journal
        self.steps = steps
        self.guard = guard
        self.on_event = on_event or (lambda _e: None)
        self._current = ""
        self.stop = stop or threading.Event()
        self.ctx = Context(journal, self._progress, clients or Clients(), stop=self.stop)
        journal.set_steps([s.as_plan() for s in steps])

    def _send(self, kind: str, step: Step | None = None, message: str = "", **data: Any) -> None:
        self.on_event(RunEvent(self.journal.run_id, kind, step.id if step else "", step.title if step else "",
                               message, data))

    def _progress(self, message: str) -> None:
        step = next((s for s in self.steps if s.id == self._current), None)
        self._send("step-progress", step, message)

    def _names(self, step: Step) -> tuple[str, str]:
        target = step.audit_target(self.ctx) if step.audit_target else self.journal.doc["node"]
        return f"runbook.{self.journal.doc['kind']}.{step.id}", target

    def _intent(self, step: Step, before: Any, record_id: str, detail: str = "") -> None:
        action, target = self._names(step)
        self.guard.intent(action, target, what=f"{step.title} ({self.journal.doc['kind']} run {self.journal.run_id})",
                          before=before, detail=detail or step.title, run_id=self.journal.run_id, record_id=record_id)

    def _outcome(self, step: Step, record_id: str, after: Any, result: str, detail: str = "",
                 error: str = "") -> None:
        action, target = self._names(step)
        self.guard.outcome(record_id, action, target, what=step.title, after=after, result=result,
                           detail=detail or step.title, error=error, run_id=self.journal.run_id)

    def _refused(self, e: GuardRefusal) -> tuple[str, str]:
        """(journal status, message) for a run the guard stopped: resumable when something was changed."""
        mutating = {s.id for s in self.steps if s.mutating}
        touched = any(s.get("status") != "pending" and s["id"] in mutating for s in self.journal.doc["steps"])
        if not touched:
            return "refused", f"{e}; nothing was changed"
        return "needs-attention", (f"{e}. Nothing was rolled back; once that is fixed, run the "
                                   f"{self.journal.doc['kind']} of {self.journal.doc['node']} again to resume run "
                                   f"{self.journal.run_id}")

    def run(self) -> RunResult:
        t0 = time.monotonic()
        self._send("run-start", None, f"run {self.journal.run_id}", steps=[s.as_plan() for s in self.steps])
        completed: list[Step] = []
        status, code, message = "done", EXIT_DONE, ""
        stopped_at, refusal, journal_status = "", "", ""
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
                except (StepFailed, Interrupted, GuardRefusal):
                    raise
                except Exception as e:  # an API/I-O error the step did not expect: stop here, resumable
                    raise StepFailed(f"{step.title}: {describe_error(e)}", resumable=True) from e
                completed.append(step)
            except GuardRefusal as e:  # read-only or no audit log: this step was not made (or not recorded)
                status, code, refusal = "refused", EXIT_USAGE, e.kind
                journal_status, message = self._refused(e)
                self._send("step-failed", step, str(e))
                break
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
        self.journal.finish(journal_status or status, message)
        elapsed = time.monotonic() - t0
        self._send("run-done", None, message or "done", status=status, exit_code=code)
        return RunResult(self.journal.run_id, status, code, message, str(self.journal.path), elapsed,
                         self.ctx.infra_wait, self.journal.doc["steps"], stopped_at if status == "interrupted" else "",
                         refusal)

    def _run_step(self, step: Step, rec: dict[str, Any]) -> None:
        resumed = rec["status"] in ("started", "acted")
        self._send("step-start", step, "resuming" if resumed else "")
        if step.precondition:
            why = step.precondition(self.ctx)
            if why:
                raise StepFailed(f"{step.title}: precondition not met: {why}")
        # the intent an interrupted run journaled for this step, and what the audit log holds of it
        pending = (rec.get("data") or {}).get("audit_intent") if resumed and step.mutating else None
        logged = self.guard.audit.phases(pending) if pending else set()
        if step.done and step.done(self.ctx):
            if resumed and step.mutating and "outcome" not in logged:
                self._record_resumed(step, pending if "intent" in logged else None)
            self.journal.mark(step.id, "skipped", message="already in place")
            self._send("step-skip", step, "already in place")
            return
        if not step.mutating:
            self.journal.mark(step.id, "started")
            data = step.action(self.ctx) or {}
            self.journal.mark(step.id, "acted", data=data)
            if step.verify:
                why = step.verify(self.ctx)
                if why:
                    raise StepFailed(f"{step.title}: {why}")
            self.journal.mark(step.id, "done")
            self._send("step-done", step, "", **data)
            return
        self.guard.check(f"{step.title} ({self.journal.doc['kind']} run {self.journal.run_id})")
        before = step.describe(self.ctx) if step.describe else None
        # reuse the journaled intent while it has no outcome: the step is still that one mutation
        record_id = pending if pending and "outcome" not in logged else new_id()
        self.journal.mark(step.id, "started", data={"audit_intent": record_id})
        if "intent" not in logged or record_id != pending:
            try:
                self._intent(step, before, record_id)
            except GuardRefusal:
                if not resumed:  # not sent: this run did nothing in this step
                    self.journal.mark(step.id, "pending")
                raise
        try:
            data = step.action(self.ctx) or {}
        except StepFailed as e:
            self._outcome_after_error(step, record_id, e.message)
            raise
        except Exception as e:
            self._outcome_after_error(step, record_id, describe_error(e))
            raise
        self.journal.mark(step.id, "acted", data=data)
        if step.verify:
            why = step.verify(self.ctx)
            if why:
                self._outcome_after_error(step, record_id, why)
                raise StepFailed(f"{step.title}: {why}")
        after = step.describe(self.ctx) if step.describe else data or None
        self._outcome(step, record_id, after, "ok")
        self.journal.mark(step.id, "done")
        self._send("step-done", step, "", **data)

    def _outcome_after_error(self, step: Step, record_id: str, why: str) -> None:
        """The outcome of a failed action; the action's error is what the run reports, even if this fails."""
        with contextlib.suppress(GuardRefusal):
            self._outcome(step, record_id, None, "error", why, error=why)

    def _record_resumed(self, step: Step, intent: str | None) -> None:
        """A step an interrupted run did: its outcome for the intent it logged (or, from a journal that kept no
        intent id, one intent and its outcome), so the step is audited once."""
        after = step.describe(self.ctx) if step.describe else None
        detail = f"{step.title} (done by an earlier, interrupted run; recorded on resume)"
        record_id = intent or new_id()
        if intent is None:
            self._intent(step, None, record_id, detail)
        self._outcome(step, record_id, after, "ok", detail)

    def _undo(self, completed: list[Step]) -> tuple[bool, list[str]]:
        """Undo completed steps in reverse: (False when an undo failed — the state needs attention, what was done)."""
        ok, said = True, []
        for step in reversed(completed):
            if not step.undo:
                continue
            self._current = step.id
            self._send("undo-start", step, f"undoing: {step.title}")
            try:
                record_id = new_id()
                try:
                    self._intent(step, step.describe(self.ctx) if step.describe else None, record_id,
                                 f"undo: {step.title}")
                except GuardRefusal as e:  # not undone: it must not happen unaudited
                    raise StepFailed(f"undo of {step.title}: {e}", safe=False) from e
                try:
                    what = step.undo(self.ctx)
                except StepFailed as e:
                    self._outcome_after_error(step, record_id, f"undo: {e.message}")
                    raise
                except Exception as e:  # an API error while undoing: report it, keep undoing the rest
                    self._outcome_after_error(step, record_id, f"undo: {describe_error(e)}")
                    raise StepFailed(f"undo of {step.title}: {describe_error(e)}", safe=False) from e
                self.journal.mark(step.id, "undone", message=what or "")
                try:
                    self._outcome(step, record_id, what, "undone", f"undo: {step.title}")
                except GuardRefusal as e:
                    raise StepFailed(f"undo of {step.title}: {e}", safe=False) from e
                self._send("undo-done", step, what or "")
                if what:
                    said.append(what)
            except StepFailed as e:
                ok = False
                said.append(f"undo failed: {e.message}")
                self.journal.mark(step.id, "failed", message=f"undo failed: {e.message}")
                self._send("step-failed", step, f"undo failed: {e.message}")
        return ok, said
