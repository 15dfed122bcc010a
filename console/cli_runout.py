"""What `scale-up` and `scale-up --revert` say when a plan is refused, and about the node a run leaves cordoned.

Shared by console/cli_scaleup.py and console/cli_revert.py (neither imports the other at module level).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from console.cli import stdout_closed
from console.runbook.engine import EXIT_USAGE

EXIT_NOT_FOUND = 3  # README "Exit codes": not found, as `get node NAME` (console/cli_get.py)


def plan_refused(args: argparse.Namespace, e: Exception) -> int:
    """A plan refused before any change (PlanRefused, SessionError): one line on stderr, with -o json its object.
    A node the cluster does not have is "not found" (exit 3, `"error": "not-found"`, as `get node NAME`); anything
    else exit 2 (`"status": "refused"` and what the refusal details, e.g. the Lease's holder)."""
    from console.runbook.scaleup import DrainRefused, NoSuchNode

    print(f"scale-up: {e}", file=sys.stderr)
    code = EXIT_NOT_FOUND if isinstance(e, NoSuchNode) else EXIT_USAGE
    if args.output == "json":
        if isinstance(e, NoSuchNode):
            doc: dict[str, Any] = {"status": "error", "error": "not-found", "message": str(e), "exit_code": code}
        else:
            doc = {"status": "refused", "message": str(e), "exit_code": code, **getattr(e, "details", {})}
        if isinstance(e, DrainRefused):
            doc["blocking"] = [i.to_dict() for i in e.blocking]
        try:
            print(json.dumps(doc), flush=True)
        except BrokenPipeError:  # `-o json | head -c1`: the exit code still says what happened
            stdout_closed()
    return code


def cordon_note(result: Any) -> dict[str, Any] | None:
    """Say on stderr that the run leaves its node cordoned (`result.cordoned`, console/runbook/cordon.py); the
    value of the JSON's "cordoned" (null: not cordoned)."""
    left = result.cordoned
    if left is None:
        return None
    print(f"scale-up: {left.message}", file=sys.stderr, flush=True)
    return left.to_dict()
