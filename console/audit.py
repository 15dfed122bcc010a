"""The audit trail: one JSON line per mutation (who, what, target, before, after, result).

Written to $XDG_STATE_HOME/console/audit.log. Secret-looking values are
redacted before anything is written.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import socket
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


@dataclass(frozen=True)
class AuditLog:
    path: Path

    @classmethod
    def default(cls) -> AuditLog:
        return cls(state_dir() / "audit.log")

    def record(
        self,
        action: str,
        target: str,
        *,
        before: Any = None,
        after: Any = None,
        result: str = "ok",
        detail: str = "",
        run_id: str | None = None,
    ) -> dict[str, Any]:
        entry = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "who": f"{getpass.getuser()}@{socket.gethostname()}",
            "action": action,
            "target": target,
            "before": redact(before),
            "after": redact(after),
            "result": result,
            "detail": detail,
        }
        if run_id:
            entry["run_id"] = run_id
        line = json.dumps(entry, sort_keys=True, default=str)
        with _lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a") as fh:
                fh.write(line + "\n")
        return entry

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]
