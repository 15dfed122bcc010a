"""The audit trail: JSON lines, an intent record before each mutation and an outcome record after it.

Written to $XDG_STATE_HOME/console/audit.log (mode 0600). Every line is flushed and fsync'd before the call
returns, so an intent is on disk before the mutation it announces is made (console/guard.py decides that).

    {"phase": "intent", "id": "…", "time", "who", "action", "target", "before", "run_id"?, "detail",
     "result": "pending"}
    {"phase": "outcome", "id": "<the intent's id>", "time", "who", "action", "target", "after",
     "result": "ok" | "error" | "conflict" | "undone", "detail", "error"?, "run_id"?}

Secret-looking values are redacted before anything is written. `entries()` skips a line it cannot parse
(a torn last line after a crash, a hand edit) instead of failing.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import secrets
import socket
import stat
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console.config import state_dir

_SECRET_KEY = re.compile(r"(pass(word)?|token|secret|credential|auth)", re.IGNORECASE)
_lock = threading.Lock()


def redact(value: Any) -> Any:
    """Copy of `value` with secret-looking keys masked (tokens, passwords)."""
    if isinstance(value, dict):
        return {k: "***" if _SECRET_KEY.search(str(k)) else redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def new_id() -> str:
    return secrets.token_hex(8)


def who() -> str:
    return f"{getpass.getuser()}@{socket.gethostname()}"


@dataclass(frozen=True)
class AuditLog:
    path: Path

    @classmethod
    def default(cls) -> AuditLog:
        return cls(state_dir() / "audit.log")

    def write(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Append one record and fsync it; OSError (ENOSPC, EACCES, EROFS, …) when it is not on disk."""
        entry = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), "who": who(), **entry}
        for key in ("before", "after"):
            if key in entry:
                entry[key] = redact(entry[key])
        data = (json.dumps(entry, sort_keys=True, default=str) + "\n").encode()
        with _lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
        return entry

    def intent(self, action: str, target: str, *, before: Any = None, detail: str = "", run_id: str | None = None,
               record_id: str | None = None) -> dict[str, Any]:
        entry: dict[str, Any] = {"phase": "intent", "id": record_id or new_id(), "action": action, "target": target,
                                 "before": before, "detail": detail, "result": "pending"}
        if run_id:
            entry["run_id"] = run_id
        return self.write(entry)

    def outcome(self, record_id: str, action: str, target: str, *, after: Any = None, result: str = "ok",
                detail: str = "", error: str = "", run_id: str | None = None) -> dict[str, Any]:
        entry: dict[str, Any] = {"phase": "outcome", "id": record_id, "action": action, "target": target,
                                 "after": after, "result": result, "detail": detail}
        if error:
            entry["error"] = error
        if run_id:
            entry["run_id"] = run_id
        return self.write(entry)

    def entries(self) -> list[dict[str, Any]]:
        try:
            if not stat.S_ISREG(self.path.stat().st_mode):
                return []  # e.g. /dev/full, whose reads never end
            text = self.path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            return []
        out = []
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                out.append(entry)
        return out

    def phases(self, record_id: str) -> set[str]:
        """Which records of mutation `record_id` the log holds ("intent", "outcome")."""
        return {e.get("phase", "") for e in self.entries() if e.get("id") == record_id}
