"""One scale-up run per node at a time, across machines: a coordination.k8s.io/v1 Lease per node.

The Lease `<lease_namespace>/console-scale-up-<node>` names its holder `user@host/<run id>`. Acquiring
follows client-go's leader election (tools/leaderelection/leaderelection.go tryAcquireOrRenew): read it;
absent → create it (409 AlreadyExists: another run was first, read again); held by someone else and not
expired → refuse; expired or released → update it with the resourceVersion read (409 Conflict: someone
else moved first, read again), counting a new holder in leaseTransitions. Releasing is client-go's too:
holderIdentity "" and leaseDurationSeconds 1, so the next run takes it at once.

While the run goes on, a daemon thread renews spec.renewTime every third of the duration. The duration is
60 s: a holder that dies blocks others for at most a minute (its own run resumes at once, see below), and two
renewals in a row can fail — an API server hiccup, a loaded bastion — before the Lease runs out. If renewing
fails for a whole duration, or another holder took the Lease, the run stops before its next mutating step
(resumable: nothing is undone under someone else's feet).

Expiry is judged by renewTime + leaseDurationSeconds against this machine's clock: client-go's electors
instead watch for a full duration, which a CLI that must answer at once cannot do; bastions keep NTP time.

A resumed run takes over the Lease of its own run id even when unexpired (its holder died with the journal
unfinished). Two processes resuming the same journal on one machine would both qualify, so a run also holds
an flock on `<run id>.lock` beside its journal for as long as it runs (console/runbook/journal_lock.py):
the Lease keeps machines apart, the flock processes sharing one state directory; both are needed.

The Lease is not written to the audit log: it is a coordination object of the console's own, renewed every
20 s, not a change an admin makes to the cluster; the journal records who held it before a takeover.
"""

from __future__ import annotations

import getpass
import hashlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console.kube import leases
from console.runbook.engine import Context, Step, StepFailed
from console.runbook.journal_lock import HELD, JournalBusy, JournalLock

DURATION_S = 60
RENEW_S = DURATION_S / 3
LABELS = {"app.kubernetes.io/managed-by": "console"}


class LockError(Exception):
    """The run may not start: the node is held by another run, or the Lease cannot be taken."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


def lease_name(node: str) -> str:
    name = f"console-scale-up-{node}"
    if len(name) <= 253:
        return name
    return f"{name[:240]}-{hashlib.sha256(node.encode()).hexdigest()[:12]}"


def identity(run_id: str) -> str:
    return f"{getpass.getuser()}@{socket.gethostname()}/{run_id}"


def run_of(holder: str) -> str:
    """The run id in a holder identity (`user@host/<run id>`)."""
    return holder.rpartition("/")[2]


def _when(t: datetime | None, now: datetime) -> str:
    if t is None:
        return "never"
    secs = (t - now).total_seconds()
    at = t.astimezone(UTC).strftime("%H:%M:%S UTC")
    return f"in {secs:.0f}s (at {at})" if secs >= 0 else f"{-secs:.0f}s ago (at {at})"


class RunLock:
    """The node's Lease (and this machine's lock on the run's journal) for one run.

    `acquire()` raises LockError; `release()` never raises (a Lease left behind expires by itself).
    `on_note` gets one-line progress notes (acquired, took over, renewal trouble), from any thread.
    """

    def __init__(self, api: Any, node: str, run_id: str, *, namespace: str, resuming: bool, journal_dir: Path,
                 on_note: Callable[[str], object] | None = None) -> None:
        self.api, self.node, self.run_id = api, node, run_id
        self.namespace, self.name = namespace, lease_name(node)
        self.resuming = resuming
        self.me = identity(run_id)
        self.on_note = on_note or (lambda _m: None)
        self.previous: str = ""  # the holder we took the Lease over from
        self._journal_lock = JournalLock(journal_dir, run_id)
        self._lease: leases.Lease | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._renewed = 0.0  # time.monotonic() of the last successful write
        self._lost = ""

    @property
    def where(self) -> str:
        return f"Lease {self.namespace}/{self.name}"

    # -- acquire ---------------------------------------------------------------------------------------
    def check(self) -> None:
        """Read-only: LockError if another run holds the node now. Planning reads the VM and the hypervisor,
        whose state a run in progress is changing (a resizing VM's domain is shut off), so a second run must
        hear "held by …" before it plans, not a fault of the state the first run is in the middle of."""
        now = datetime.now(UTC)
        try:
            cur = leases.get(self.api, self.namespace, self.name)
        except leases.LeaseError:
            return  # acquire() says what is wrong with the Lease, with the run's wording
        own = self.resuming and cur is not None and run_of(cur.holder) == self.run_id
        if cur is not None and cur.held(now) and cur.holder != self.me and not own:
            raise self._refusal(cur, now)

    def acquire(self) -> None:
        self._lock_journal()
        try:
            self._take()
        except BaseException:
            self._unlock_journal()
            raise
        self._renewed = time.monotonic()
        self._thread = threading.Thread(target=self._renew_loop, name=f"lease-{self.node}", daemon=True)
        self._thread.start()

    def _take(self) -> None:
        for _ in range(5):  # each retry follows a 409: someone else moved between our read and our write
            now = datetime.now(UTC)
            try:
                cur = leases.get(self.api, self.namespace, self.name)
                if cur is None:
                    self._lease = leases.create(self.api, self.namespace, self.name,
                                                leases.spec(self.me, DURATION_S, now, now, 0), LABELS)
                    self.on_note(f"holding {self.where} as {self.me}")
                    return
                own = self.resuming and run_of(cur.holder) == self.run_id
                if cur.held(now) and cur.holder != self.me and not own:
                    raise self._refusal(cur, now)
                acquired = cur.acquire_time if cur.holder == self.me and cur.acquire_time else now
                transitions = cur.transitions + (0 if cur.holder == self.me else 1)
                self._lease = leases.update(self.api, cur, leases.spec(self.me, DURATION_S, acquired, now,
                                                                       transitions))
            except leases.LeaseConflict:
                continue
            except leases.LeaseError as e:
                raise LockError(f"cannot take {self.where} that keeps runs on {self.node} apart: {e}",
                                {"lease": f"{self.namespace}/{self.name}"}) from e
            if cur.holder and cur.holder != self.me:
                self.previous = cur.holder
                why = "its own run's" if own and cur.held(now) else "the expired"
                self.on_note(f"took over {why} {self.where} from {cur.holder} "
                             f"(last renewed {_when(cur.renew_time, now)})")
            else:
                self.on_note(f"holding {self.where} as {self.me}")
            return
        raise LockError(f"{self.where} kept changing while this run tried to take it; another run on "
                        f"{self.node} is starting: try again in a minute",
                        {"error": HELD, "lease": f"{self.namespace}/{self.name}"})

    def _refusal(self, cur: leases.Lease, now: datetime) -> LockError:
        other = run_of(cur.holder)
        return LockError(
            f"{self.node} is being scaled up by {cur.holder} ({self.where}, renewed "
            f"{_when(cur.renew_time, now)}, expires {_when(cur.expires, now)} unless renewed). Wait for that run "
            f"to end; if its machine died, rerun after the Lease expires, or resume it with --resume {other} "
            "where its journal is",
            {"error": HELD, "holder": cur.holder,
             "expires": leases.micro_time(cur.expires) if cur.expires else None,
             "lease": f"{self.namespace}/{self.name}"})

    # -- this machine: one process per journal ------------------------------------------------------------
    def _lock_journal(self) -> None:
        try:
            self._journal_lock.acquire()
        except JournalBusy as e:
            raise LockError(str(e), e.details) from None

    def _unlock_journal(self) -> None:
        self._journal_lock.release()

    # -- renew -------------------------------------------------------------------------------------------
    def _renew_loop(self) -> None:
        while not self._stop.wait(RENEW_S):
            self.renew()

    def renew(self) -> None:
        """One renewal (the thread calls it every RENEW_S); marks the lock lost when it cannot be kept."""
        if self._lost or self._lease is None:
            return
        now = datetime.now(UTC)
        lease = self._lease
        try:
            try:
                self._lease = leases.update(self.api, lease, self._renewed_spec(lease, now))
            except leases.LeaseConflict:  # changed since our last write: still ours?
                cur = leases.get(self.api, self.namespace, self.name)
                if cur is None or cur.holder != self.me:
                    self._lose(f"{self.where} was taken by {cur.holder if cur else 'nobody (deleted)'}")
                    return
                self._lease = leases.update(self.api, cur, self._renewed_spec(cur, now))
            self._renewed = time.monotonic()
        except leases.LeaseError as e:
            if time.monotonic() - self._renewed >= DURATION_S:
                self._lose(f"{self.where} could not be renewed for {DURATION_S}s ({e})")
            else:
                self.on_note(f"renewing {self.where} failed, retrying: {e}")

    def _renewed_spec(self, lease: leases.Lease, now: datetime) -> dict[str, Any]:
        return leases.spec(self.me, DURATION_S, lease.acquire_time or now, now, lease.transitions)

    def _lose(self, why: str) -> None:
        self._lost = why
        self.on_note(f"lost {self.where}: {why}; the run stops before its next change")

    @property
    def lost(self) -> str:
        """Why the run no longer holds the Lease ("" while it does)."""
        return self._lost

    def record(self, journal: Any) -> None:
        """Write who holds the node (and whom it was taken over from) into the run's journal."""
        journal.doc["context"]["lease"] = {"lease": f"{self.namespace}/{self.name}", "holder": self.me,
                                           **({"took_over_from": self.previous} if self.previous else {})}
        journal.save()

    def guard(self, steps: list[Step]) -> list[Step]:
        """The steps, each mutating one first checking that the run still holds the Lease."""
        def guarded(step: Step) -> Step:
            act = step.action

            def action(ctx: Context) -> dict[str, Any] | None:
                if self._lost:
                    raise StepFailed(f"stopped before {step.title}: {self._lost}. Another run may be changing "
                                     f"{self.node}; check it, then rerun to resume", resumable=True)
                return act(ctx)

            return replace(step, action=action)

        return [guarded(s) if s.mutating else s for s in steps]

    # -- release -----------------------------------------------------------------------------------------
    def release(self) -> None:
        """Stop renewing and hand the Lease back (client-go: holder "", duration 1 s), if it is still ours."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(35)
        try:
            if self._lease is not None and not self._lost:
                self._give_back()
        finally:
            self._lease = None
            self._unlock_journal()

    def _give_back(self) -> None:
        assert self._lease is not None
        lease = self._lease
        for _ in range(3):
            now = datetime.now(UTC)
            try:
                leases.update(self.api, lease, leases.spec("", 1, now, now, lease.transitions))
                return
            except leases.LeaseConflict:
                try:
                    cur = leases.get(self.api, self.namespace, self.name)
                except leases.LeaseError as e:
                    self.on_note(f"releasing {self.where} failed ({e}); it expires within {DURATION_S}s")
                    return
                if cur is None or cur.holder != self.me:
                    return
                lease = cur
            except leases.LeaseError as e:
                self.on_note(f"releasing {self.where} failed ({e}); it expires within {DURATION_S}s")
                return

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

