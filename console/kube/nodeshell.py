"""What every node access method returns and raises (console/kube/nodeaccess.py, console/infra/guest_agent.py).

Apart from the methods themselves so the guest agent, which lives with the other libvirt calls in
console/infra, and the factory in nodeaccess.py do not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class NodeAccessError(Exception):
    """The script could not be run (not configured, pod never started, refused, timed out)."""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None  # None: finished state never seen (e.g. the kubelet did not come back)
    output: str
    log_cut: bool = False  # the log stream ended early (kubelet restarted under it)
    stderr: str = ""  # kept apart by SSH and the guest agent (a debug pod's log mixes both into output)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def tail(self, chars: int = 300) -> str:
        """The end of what the command printed (stderr first when it was kept apart), for a failure message."""
        text = "\n".join(t.strip() for t in (self.stderr, self.output) if t.strip())
        return text[-chars:] if text else "no output"


class NodeAccess(Protocol):
    method: str

    def run(self, node: str, script: str, *, timeout: float = 60.0) -> ExecResult: ...

    def prepare(self, node: str) -> list[str]:
        """Before the first command on `node`: clean up what a killed run left; returns what it did."""
        ...
