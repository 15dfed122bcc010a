"""`console scale-up NODE --discard RUN_ID`: move a run's journal aside (console/runbook/discard.py).

Shows what the run had done (or that its journal cannot say), asks for the node name (or --yes), then renames
the journal to `<run id>.json.discarded-<time>`. Nothing on the cluster or the VM changes. Exit codes: 0
discarded (--dry-run: shown only), 2 no such journal / another node's / in progress in another process,
5 not confirmed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def run(args: argparse.Namespace, *, out: Callable[[argparse.Namespace, dict, str], None],
        confirm: Callable[..., int | None]) -> int:
    from console.cli_refusal import refused as refuse
    from console.exit_codes import kind_of
    from console.runbook import discard
    from console.runbook.journal import BadJournal, JournalError
    from console.runbook.journal_lock import JournalBusy

    def refused(args: argparse.Namespace, message: str, kind: str, /, **details: Any) -> int:
        return refuse("scale-up", args, message, kind, **details)

    try:
        found = discard.locate(args.discard, args.node)
    except JournalError as e:
        return refused(args, str(e), "journal", status="error", journal=str(e.path or ""))
    text = discard.summary(found)
    doc: dict[str, Any] = {"run_id": found.path.stem, "journal": str(found.path)}
    if isinstance(found, BadJournal):
        doc["problem"] = found.error.why
    else:
        doc |= {"run_status": found.doc["status"], "steps": found.doc["steps"]}
    stop_here = confirm(args, None, doc, text, args.node,
                        f"Discard journal {found.path.name}? Nothing on the cluster or the VM is changed or undone.")
    if stop_here is not None:
        return stop_here
    try:
        moved = discard.discard(found)
    except JournalBusy as e:
        return refused(args, str(e), kind_of(e, "held"), **e.details)
    except OSError as e:
        return refused(args, f"cannot move {found.path} aside: {e.strerror or e}", "journal", status="error",
                       journal=str(found.path))
    out(args, {"status": "discarded", "exit_code": 0, "moved_to": str(moved), **doc},
        f"discarded: run {found.path.stem}'s journal moved to {moved}")
    return 0
