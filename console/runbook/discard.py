"""`scale-up NODE --discard RUN_ID`: move a journal the console refuses to use (or a run given up) aside.

The journal is renamed to `<run id>.json.discarded-<UTC time>` in the same directory, never deleted: what
the run had done stays readable there. Discarding changes nothing on the cluster or the VM and undoes
nothing, so it is not written to the audit log (that records changes to the cluster and its VMs); it is
local state of this machine, confirmed like a run (the node name, or --yes), and refused while another
process owns the run (its flock, console/runbook/journal_lock.py).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from console.runbook.held import held_state
from console.runbook.journal import BadJournal, Journal, JournalError, read_doc, runbooks_dir
from console.runbook.journal_lock import JournalLock
from console.runbook.journal_shape import node_of

MARKS = {"done": "✓", "skipped": "↷", "started": "…", "acted": "…", "failed": "✗", "undone": "↺", "pending": "·"}


def locate(run_id: str, node: str, directory: Path | None = None) -> Journal | BadJournal:
    """The journal file `<run_id>.json` (usable or not) of `node`; JournalError when there is none or it is
    another node's."""
    d = directory or runbooks_dir()
    if not run_id or "/" in run_id or run_id.startswith(".") or run_id.endswith(".json"):
        raise JournalError(f"{run_id!r} is not a run id: give the journal's name without .json (e.g. "
                           f"scale-up-{node}-20261201T101500-ab12)")
    path = d / f"{run_id}.json"
    named = node_of(run_id)
    try:
        found: Journal | BadJournal = Journal(path, read_doc(path))
    except FileNotFoundError:
        raise JournalError(f"no runbook journal {path}", path, run_id) from None
    except JournalError as e:
        found = BadJournal(path, named[1] if named else None, named[0] if named else None, e)
    owner = found.doc["node"] if isinstance(found, Journal) else found.node
    if owner is not None and owner != node:
        raise JournalError(f"run {run_id} (journal {path}) is a run of {owner}, not of {node}", path, run_id)
    return found


def summary(found: Journal | BadJournal) -> str:
    """What the run had done, as its journal says (or that it cannot say)."""
    if isinstance(found, BadJournal):
        return (f"journal {found.path} cannot be used: {found.error.why}\n"
                "  what that run had done is unknown: check the node, its pods and its VM by hand")
    doc = found.doc
    lines = [f"run {found.run_id}: {doc['kind']} of {doc['node']}, {doc['status']} (updated {doc['updated']})",
             f"  journal: {found.path}", "  steps:"]
    lines += [f"    {MARKS.get(s['status'], '?')} {s['title']} [{s['status']}]" for s in doc["steps"]]
    lines.append(f"  the node as the journal leaves it: {held_state(doc)}")
    return "\n".join(lines)


def discard(found: Journal | BadJournal) -> Path:
    """Rename the journal aside as its owner (JournalBusy while another process runs it); the new path."""
    path = found.path
    with JournalLock(path.parent, path.stem):
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        target = path.with_name(f"{path.name}.discarded-{stamp}")
        os.rename(path, target)
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    return target
