"""What `scale-up` and `scale-up --revert` say when a plan is refused, and about the node a run leaves cordoned.

Shared by console/cli_scaleup.py and console/cli_revert.py (neither imports the other at module level).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

EXIT_NOT_FOUND = 3  # README "Exit codes": not found, as `get node NAME` (console/cli_get.py)


def plan_refused(args: argparse.Namespace, e: Exception) -> int:
    """A plan refused before any change (PlanRefused, SessionError): one line on stderr, with -o json the error
    object (console/exit_codes.py). A node the cluster does not have is `not-found` (exit 3, as `get node NAME`); a
    refusal of the session says its kind (held, journal, run-differs, forbidden: its details); a drain says which
    pods block it; anything else is `plan-refused` (exit 2)."""
    from console.cli_refusal import refused
    from console.exit_codes import kind_of
    from console.runbook.scaleup import DrainRefused, NoSuchNode

    if isinstance(e, NoSuchNode):
        return refused("scale-up", args, str(e), "not-found", EXIT_NOT_FOUND, status="error")
    details: dict[str, Any] = dict(getattr(e, "details", {}) or {})
    if isinstance(e, DrainRefused):
        details["blocking"] = [i.to_dict() for i in e.blocking]
    return refused("scale-up", args, str(e), kind_of(e, "plan-refused"), **details)


def cordon_note(result: Any) -> dict[str, Any] | None:
    """Say on stderr that the run leaves its node cordoned (`result.cordoned`, console/runbook/cordon.py); the
    value of the JSON's "cordoned" (null: not cordoned)."""
    left = result.cordoned
    if left is None:
        return None
    print(f"scale-up: {left.message}", file=sys.stderr, flush=True)
    return left.to_dict()
