"""What an unfinished run leaves on its node, read from the run journals (local files, no API call).

Used by the CLI's interruption line and the nodes screen's "held by a run" marker.

A journal file that cannot be used (unreadable, truncated, garbage, wrong shape) marks its node too, with
status "unusable" and what is wrong: a run on that node is refused until the journal is discarded, so the
marker says so rather than hiding it (or crashing the screen). A bad file whose name names no node is
listed under the node "" (the screen's line shows it; no row is marked).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.runbook.journal import UNFINISHED, Journal, discard_command

BEGUN = ("started", "acted", "done", "skipped")
FINISHED = ("done", "skipped")


@dataclass(frozen=True)
class HeldRun:
    run_id: str
    kind: str
    node: str
    status: str  # running | needs-attention | interrupted | unusable (the journal cannot be read or trusted)
    state: str  # "cordoned by the console, its server in VERIFY_RESIZE"; unusable: what is wrong
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
    """Unfinished runs per node, oldest first, then the node's journals that cannot be used (status
    "unusable": last, so a screen showing a node's latest entry shows that)."""
    journals, bad = Journal.scan(directory)
    out: dict[str, list[HeldRun]] = {}
    for j in journals:
        doc = j.doc
        if doc["status"] not in UNFINISHED:
            continue
        out.setdefault(doc["node"], []).append(HeldRun(j.run_id, doc["kind"], doc["node"], doc["status"],
                                                       held_state(doc), doc["updated"]))
    for b in bad:
        node = b.node or ""
        out.setdefault(node, []).append(HeldRun(
            b.path.stem, b.kind or "", node, "unusable",
            f"journal {b.path.name} {b.error.why}; discard it: {discard_command(node or 'NODE', b.path.stem)}", ""))
    return out
