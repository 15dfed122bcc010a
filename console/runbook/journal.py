"""The runbook journal: one JSON file per run, fsync'd, rewritten atomically before and after each mutation.

$XDG_STATE_HOME/console/runbooks/<run-id>.json:

    {"version": 2, "run_id": "...", "kind": "scale-up", "node": "kube-worker02",
     "cluster": {"server": "https://...:6443", "kube_system_uid": "..." | null, "note": "..."},
     "infra": {"method": "openstack", "openstack": {"auth_url", "project_id", "project"} | null,
               "libvirt": ["qemu+ssh://..."], "vm": "<server id | domain>"},
     "status": "running" | "done" | "failed" | "needs-attention" | "interrupted" | "reverted" | "refused",
     "params": {...the CLI/screen request...}, "context": {...ids found while running...},
     "created": ISO, "updated": ISO, "message": "",
     "steps": [{"id": "resize", "title": "...", "mutating": true,
                "status": "pending" | "started" | "acted" | "done" | "skipped" | "failed" | "undone",
                "started": ISO|null, "finished": ISO|null, "data": {...}, "message": ""}]}

"interrupted": stopped by SIGINT/SIGTERM between steps (or in a wait), resumable; "reverted": a scale-up
superseded by a revert run (console/runbook/revert.py), no longer resumed; "refused": the Guard stopped the
run before it changed anything (read-only, audit log unwritable; console/guard.py), not resumed. A mutating
step's data keeps "audit_intent", the id of its audit intent record, so a resume audits it exactly once.
"started" means the action may have been sent: on resume the step's idempotency
check decides whether to send it again.

A journal is never skipped or adopted when it cannot be trusted: a file of the node that cannot be read,
is not valid JSON, has the wrong shape (console/runbook/journal_shape.py) or an older version raises
JournalError naming the file, what is wrong and the `--discard RUN_ID` that moves it aside
(console/runbook/discard.py). Whose cluster and cloud it is (`cluster`, `infra`) is checked by the session
(console/runbook/identity.py). Each save writes a temp file of its own (unique per process and call) and
renames it over the journal; one process at a time owns a run (console/runbook/journal_lock.py).
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console.config import state_dir
from console.runbook.journal_shape import KINDS, VERSION, node_of, problem

UNFINISHED = ("running", "needs-attention", "interrupted")  # auto-resumed; "failed" runs were rolled back
MAX_BYTES = 16 * 1024 * 1024  # a journal is a few KiB; a bigger file is not one (and is not read whole)


class JournalError(Exception):
    """A journal cannot be used (corrupt, wrong shape, another cluster, ...); the message names the file.

    `path`: the journal file (None when the run id itself is not one); `run_id`: what --discard takes;
    `why`: what is wrong with the file, without the file's name or the advice."""

    def __init__(self, message: str, path: Path | None = None, run_id: str = "", why: str = "") -> None:
        super().__init__(message)
        self.path, self.run_id, self.why = path, run_id, why or message


def discard_command(node: str, run_id: str) -> str:
    return f"python -m console scale-up {node} --discard {run_id}"


def bad_journal(path: Path, why: str, node: str | None = None) -> JournalError:
    """The JournalError for a journal file that cannot be used: names the file, why, and how to discard it."""
    named = node_of(path.stem)
    node = node or (named[1] if named else "NODE")
    return JournalError(f"runbook journal {path} {why}. It is neither resumed nor skipped: check {node} and its "
                        f"VM by hand, then move the journal aside with: {discard_command(node, path.stem)}",
                        path, path.stem, why)


def read_json(path: Path, bad: Callable[[Path, str], Exception] | None = None) -> Any:
    """The JSON document at `path`; `bad(path, why)` (default: bad_journal) is raised when it cannot be read or
    parsed (FileNotFoundError goes through)."""
    bad = bad or bad_journal
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise bad(path, f"cannot be read ({e.strerror or e})") from e
    if len(raw) > MAX_BYTES:
        raise bad(path, f"is larger than {MAX_BYTES // (1024 * 1024)} MiB: not a runbook journal")
    if not raw.strip():
        raise bad(path, "is empty (truncated)")
    try:
        return json.loads(raw)
    except RecursionError as e:
        raise bad(path, "is not a runbook journal (nested too deeply)") from e
    except ValueError as e:  # UnicodeDecodeError is a ValueError too
        raise bad(path, f"is not valid JSON, truncated or overwritten ({e})") from e


def read_doc(path: Path) -> dict[str, Any]:
    """The validated journal document at `path`: JournalError (naming the file) when it is unusable."""
    doc = read_json(path)
    why = problem(doc, path.stem)
    if why:
        raise bad_journal(path, f"is not a usable runbook journal: {why}",
                          doc.get("node") if isinstance(doc, dict) and isinstance(doc.get("node"), str) else None)
    return doc


@dataclass(frozen=True)
class BadJournal:
    """A journal file that cannot be used, as a scan of the directory finds it."""

    path: Path
    node: str | None  # from its file name; None: the name is not a run id
    kind: str | None
    error: JournalError


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def runbooks_dir() -> Path:
    return state_dir() / "runbooks"


def new_run_id(kind: str, node: str) -> str:
    return f"{kind}-{node}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(2)}"


class Journal:
    def __init__(self, path: Path, doc: dict[str, Any]) -> None:
        self.path = path
        self.doc = doc

    @classmethod
    def create(cls, kind: str, node: str, params: dict[str, Any], steps: list[dict[str, Any]],
               directory: Path | None = None, run_id: str | None = None, *, cluster: dict[str, Any] | None = None,
               infra: dict[str, Any] | None = None) -> Journal:
        """`cluster`/`infra`: whose run it is (console/runbook/identity.py), checked before it is resumed."""
        run_id = run_id or new_run_id(kind, node)
        doc = {
            "version": VERSION, "run_id": run_id, "kind": kind, "node": node, "status": "running",
            "params": params, "context": {}, "created": now(), "updated": now(), "message": "",
            "cluster": cluster or {"server": "", "kube_system_uid": None}, "infra": infra or {},
            "steps": [{"status": "pending", "started": None, "finished": None, "data": {}, "message": "", **s}
                      for s in steps],
        }
        j = cls((directory or runbooks_dir()) / f"{run_id}.json", doc)
        j.save()
        return j

    @classmethod
    def load(cls, run_id: str, directory: Path | None = None) -> Journal:
        if not run_id or "/" in run_id or run_id.startswith("."):
            raise JournalError(f"{run_id!r} is not a run id (runs are named like scale-up-NODE-TIME-XXXX)")
        path = (directory or runbooks_dir()) / f"{run_id}.json"
        try:
            doc = read_doc(path)
        except FileNotFoundError:
            raise FileNotFoundError(f"no runbook journal {path}") from None
        return cls(path, doc)

    @classmethod
    def to_resume(cls, kind: str, node: str, run_id: str | None = None, directory: Path | None = None
                  ) -> Journal | None:
        """The run to resume: `run_id` when given (JournalError says why it cannot be resumed), else the newest
        unfinished `kind` run of `node`, else None."""
        if not run_id:
            found = cls.unfinished(kind, node, directory)
            return found[-1] if found else None
        try:
            journal = cls.load(run_id, directory)
        except FileNotFoundError as e:
            raise JournalError(str(e)) from e
        path = journal.path
        if journal.doc.get("kind", kind) != kind or journal.doc.get("node") != node:
            raise JournalError(f"run {run_id} is a {journal.doc.get('kind')} run of node {journal.doc.get('node')}, "
                               f"not a {kind} run of {node} (journal {path})", path, run_id)
        status = journal.doc.get("status")
        if status == "done":
            raise JournalError(f"run {run_id} is already done; nothing to resume (journal {path})", path, run_id)
        if status == "reverted":
            raise JournalError(f"run {run_id} was {journal.doc.get('message') or 'reverted'}; nothing to resume "
                               f"(journal {path})", path, run_id)
        return journal

    @classmethod
    def unfinished(cls, kind: str, node: str, directory: Path | None = None) -> list[Journal]:
        """The unfinished `kind` runs of `node`, oldest first. JournalError for the first journal file that may
        be the node's and cannot be used: its name or its content names the node, or neither names any node."""
        journals, bad = cls.scan(directory, kind)
        for b in bad:
            if b.node in (None, node):
                raise bad_journal(b.path, b.error.why, node)
        return [j for j in journals if j.doc["node"] == node and j.doc["status"] in UNFINISHED]

    @classmethod
    def scan(cls, directory: Path | None = None, kind: str | None = None) -> tuple[list[Journal], list[BadJournal]]:
        """Every journal file (`<kind>-*.json`, of `kind` or every kind) in the directory: the usable ones, and
        those that are not (never raises)."""
        d = directory or runbooks_dir()
        good: list[Journal] = []
        bad: list[BadJournal] = []
        paths = sorted(p for k in ((kind,) if kind else KINDS) for p in d.glob(f"{k}-*.json")) if d.is_dir() else []
        for p in paths:
            named = node_of(p.stem)
            try:
                good.append(cls(p, read_doc(p)))
            except FileNotFoundError:  # discarded or renamed between the listing and the read
                continue
            except JournalError as e:
                bad.append(BadJournal(p, named[1] if named else None, named[0] if named else None, e))
        return good, bad

    @property
    def run_id(self) -> str:
        return self.doc["run_id"]

    def step(self, step_id: str) -> dict[str, Any]:
        for s in self.doc["steps"]:
            if s["id"] == step_id:
                return s
        raise KeyError(step_id)

    def set_steps(self, steps: list[dict[str, Any]]) -> None:
        """Keep the recorded state of steps that exist already (a resume rebuilds the list)."""
        old = {s["id"]: s for s in self.doc["steps"]}
        self.doc["steps"] = [
            old.get(s["id"]) or {"status": "pending", "started": None, "finished": None, "data": {}, "message": "", **s}
            for s in steps
        ]
        self.save()

    def mark(self, step_id: str, status: str, *, message: str | None = None,
             data: dict[str, Any] | None = None) -> None:
        s = self.step(step_id)
        s["status"] = status
        if status == "started":
            s["started"] = now()
        if status in ("done", "skipped", "failed", "undone"):
            s["finished"] = now()
        if message is not None:
            s["message"] = message
        s["data"].update(data or {})
        self.save()

    def finish(self, status: str, message: str = "") -> None:
        self.doc["status"], self.doc["message"] = status, message
        self.save()

    def save(self) -> None:
        self.doc["updated"] = now()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # a temp file of this call's own (mkstemp: O_EXCL, 0600): two writers never share one half-written
        # file; the rename over the journal stays atomic
        fd, tmp = tempfile.mkstemp(prefix=f"{self.path.stem}.", suffix=".json.tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(self.doc, fh, indent=1, sort_keys=True, default=str)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        dfd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
