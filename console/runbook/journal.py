"""The runbook journal: one JSON file per run, fsync'd, rewritten atomically before and after each mutation.

$XDG_STATE_HOME/console/runbooks/<run-id>.json:

    {"version": 1, "run_id": "...", "kind": "scale-up", "node": "kube-worker02",
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
"""

from __future__ import annotations

import json
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console.config import state_dir

VERSION = 1
UNFINISHED = ("running", "needs-attention", "interrupted")  # auto-resumed; "failed" runs were rolled back


class JournalError(Exception):
    """A journal file exists but cannot be used (corrupt, not a runbook journal); the message names it."""


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
               directory: Path | None = None, run_id: str | None = None) -> Journal:
        run_id = run_id or new_run_id(kind, node)
        doc = {
            "version": VERSION, "run_id": run_id, "kind": kind, "node": node, "status": "running",
            "params": params, "context": {}, "created": now(), "updated": now(), "message": "",
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
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            raise FileNotFoundError(f"no runbook journal {path}") from None
        except (OSError, ValueError) as e:
            raise JournalError(f"runbook journal {path} cannot be read ({e}); move it aside and check the VM "
                               f"and node by hand before starting a new run") from e
        if not isinstance(doc, dict) or doc.get("version") != VERSION or not isinstance(doc.get("steps"), list):
            raise JournalError(f"{path} is not a version-{VERSION} runbook journal; move it aside")
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
        if journal.doc.get("kind", kind) != kind or journal.doc.get("node") != node:
            raise JournalError(f"run {run_id} is a {journal.doc.get('kind')} run of node {journal.doc.get('node')}, "
                               f"not a {kind} run of {node}")
        status = journal.doc.get("status")
        if status == "done":
            raise JournalError(f"run {run_id} is already done; nothing to resume")
        if status == "reverted":
            raise JournalError(f"run {run_id} was {journal.doc.get('message') or 'reverted'}; nothing to resume")
        return journal

    @classmethod
    def unfinished(cls, kind: str, node: str, directory: Path | None = None) -> list[Journal]:
        d = directory or runbooks_dir()
        out = []
        for p in sorted(d.glob(f"{kind}-*.json")) if d.exists() else []:
            try:
                doc = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
            if doc.get("node") == node and doc.get("status") in UNFINISHED:
                out.append(cls(p, doc))
        return out

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
        tmp = self.path.with_suffix(".json.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(self.doc, fh, indent=1, sort_keys=True, default=str)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        dfd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
