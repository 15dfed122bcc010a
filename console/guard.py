"""The one choke point every mutation goes through: read-only, then the audit intent, then the call.

    with guard.mutation("nfd.rule.create", "nodefeaturerule/x", what="create of NodeFeatureRule x",
                        before=None) as m:
        out = api_call()
        m.after = out

1. read-only (`Settings.read_only`, the session's): `ReadOnly` ("read-only: <what> not done") before anything;
2. an intent record (who, what, target, before, run id, an id) is appended to the audit log, flushed and
   fsync'd (console/audit.py) BEFORE the call; when it cannot be written (ENOSPC, EACCES, EROFS, …)
   `AuditUnavailable` names the log and the call is not made;
3. after the call, the outcome record (after / result / error) with the same id. If the call raised, the
   outcome says "error" and the exception goes on; if the outcome cannot be written after the call succeeded,
   `AuditUnavailable(done=True)` says the change IS made and only its record is missing.

This is kube-apiserver's `--audit-log-mode=blocking-strict` ("when there is a failure during audit logging at
the RequestReceived stage, the whole request to the API server fails") with its two stages, RequestReceived and
ResponseComplete, sharing one auditID (https://kubernetes.io/docs/tasks/debug/debug-cluster/audit/).

A Guard is built by whoever builds the gateways (the Session, the TUI's start, the headless commands) from the
settings in use, and handed to them: there is no global one. A gateway given no Guard refuses to mutate.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from console.audit import AuditLog, new_id


class GuardRefusal(Exception):
    """A mutation was refused before it was made (or, `done`, made but its outcome not recorded)."""

    kind = "refused"
    done = False


class ReadOnly(GuardRefusal):
    kind = "read-only"

    def __init__(self, what: str) -> None:
        super().__init__(f"read-only: {what} not done")
        self.what = what


class AuditUnavailable(GuardRefusal):
    kind = "audit-unwritable"

    def __init__(self, path: Any, what: str, error: OSError, *, done: bool = False) -> None:
        why = error.strerror or errno.errorcode.get(error.errno or 0, "") or str(error)
        if done:
            text = (f"{what} was done, but its outcome could not be written to the audit log {path} ({why}); "
                    f"free space or fix the permissions of {path}")
        else:
            text = (f"audit log {path} cannot be written ({why}): {what} not done; free space or fix the "
                    f"permissions of {path}, or point XDG_STATE_HOME elsewhere")
        super().__init__(text)
        self.path, self.what, self.done = path, what, done


@dataclass
class Mutation:
    """What the block reports back for the outcome record."""

    id: str
    after: Any = None
    result: str = "ok"
    detail: str = ""


class Guard:
    def __init__(self, *, read_only: bool, audit: AuditLog) -> None:
        self.read_only = bool(read_only)
        self.audit = audit

    @classmethod
    def from_settings(cls, settings: Any, audit: AuditLog | None = None) -> Guard:
        return cls(read_only=bool(getattr(settings, "read_only", False)), audit=audit or AuditLog.default())

    def check(self, what: str) -> None:
        """ReadOnly when this session may not change anything (call it before asking for a confirmation)."""
        if self.read_only:
            raise ReadOnly(what)

    def intent(self, action: str, target: str, *, what: str, before: Any = None, detail: str = "",
               run_id: str | None = None, record_id: str | None = None) -> str:
        """Check read-only, write the intent record (fsync'd); its id. ReadOnly / AuditUnavailable: do not act."""
        self.check(what)
        try:
            return self.audit.intent(action, target, before=before, detail=detail or what, run_id=run_id,
                                     record_id=record_id)["id"]
        except OSError as e:
            raise AuditUnavailable(self.audit.path, what, e) from e

    def outcome(self, record_id: str, action: str, target: str, *, what: str, after: Any = None,
                result: str = "ok", detail: str = "", error: str = "", run_id: str | None = None) -> None:
        try:
            self.audit.outcome(record_id, action, target, after=after, result=result, detail=detail or what,
                               error=error, run_id=run_id)
        except OSError as e:
            raise AuditUnavailable(self.audit.path, what, e, done=result in ("ok", "undone")) from e

    @contextlib.contextmanager
    def mutation(self, action: str, target: str, *, what: str = "", before: Any = None, detail: str = "",
                 run_id: str | None = None, record_id: str | None = None) -> Iterator[Mutation]:
        what = what or f"{action} of {target}"
        m = Mutation(self.intent(action, target, what=what, before=before, detail=detail, run_id=run_id,
                                 record_id=record_id or new_id()))
        try:
            yield m
        except BaseException as e:
            # Ctrl-C/SIGTERM mid-call: the write may or may not have happened
            result = getattr(e, "audit_result", "error" if isinstance(e, Exception) else "interrupted")
            with contextlib.suppress(AuditUnavailable):  # the call's own error is the one to report
                self.outcome(m.id, action, target, what=what, after=m.after, result=result, detail=m.detail,
                             error=str(e)[:500] or type(e).__name__, run_id=run_id)
            raise
        self.outcome(m.id, action, target, what=what, after=m.after, result=m.result, detail=m.detail,
                     run_id=run_id)
