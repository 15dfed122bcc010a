"""What an unfinished run leaves on its node, read from the run journals (local files, no API call).

Used by the CLI's interruption line and the nodes screen's "held by a run" marker.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.runbook.journal import UNFINISHED, runbooks_dir

BEGUN = ("started", "acted", "done", "skipped")
FINISHED = ("done", "skipped")


@dataclass(frozen=True)
class HeldRun:
    run_id: str
    kind: str
    node: str
    status: str  # running | needs-attention | interrupted
    state: str  # "cordoned by the console, its server in VERIFY_RESIZE"
    updated: str

    @property
    def resume_command(self) -> str:
        return resume_command(self.node, self.run_id)


def resume_command(node: str, run_id: str) -> str:
    return f"python -m console scale-up {node} --resume {run_id}"


def held_state(doc: dict[str, Any]) -> str:
    """The node's state as the journal leaves it: "cordoned by the console, its server in VERIFY_RESIZE"."""
    st = {s["id"]: s["status"] for s in doc.get("steps", [])}
    facts = doc.get("context") or {}
    parts = []
    if "cordon" in st:
        if st["cordon"] in BEGUN and st.get("uncordon") not in FINISHED:
            parts.append("cordoned (as it was before the run)" if facts.get("was_cordoned")
                         else "cordoned by the console")
        else:
            parts.append("uncordoned" if st.get("uncordon") in FINISHED else "not cordoned")
    elif "uncordon" in st:  # the revert runbook uncordons what the scale-up cordoned
        if (doc.get("params") or {}).get("was_cordoned"):
            parts.append("cordoned (as it was before the scale-up)")
        else:
            parts.append("uncordoned" if st["uncordon"] in FINISHED else "cordoned by the console")
    if st.get("resize") in BEGUN and st.get("confirm-resize") not in FINISHED:
        parts.append("its server in VERIFY_RESIZE (resize not confirmed)"
                     if st.get("wait-verify-resize") in FINISHED else "its server resizing")
    if st.get("revert-resize") in BEGUN and st.get("wait-reverted") not in FINISHED:
        parts.append("its server reverting the resize")
    if st.get("raise-maxima") in BEGUN and st.get("restart-kubelet") not in FINISHED:
        last = [s["id"] for s in doc.get("steps", []) if s["status"] in FINISHED]
        parts.append(f"its VM mid live scale-up (last step done: {last[-1] if last else 'none'})")
    return ", ".join(parts) or "unchanged"


def held_runs(directory: Path | None = None) -> dict[str, list[HeldRun]]:
    """Unfinished runs per node, oldest first (unreadable journals are left out: the run says so on resume)."""
    d = directory or runbooks_dir()
    out: dict[str, list[HeldRun]] = {}
    for p in sorted(d.glob("*.json")) if d.exists() else []:
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or doc.get("status") not in UNFINISHED or not doc.get("node"):
            continue
        run = HeldRun(str(doc.get("run_id", p.stem)), str(doc.get("kind", "")), doc["node"], doc["status"],
                      held_state(doc), str(doc.get("updated", "")))
        out.setdefault(run.node, []).append(run)
    return out
