"""`console scale-up NODE --revert`: the revert runbook headless (console/runbook/revert.py).

Exit codes as `scale-up`'s: 0 reverted, 1 failed (nothing changed), 2 refused (nothing in VERIFY_RESIZE,
read-only, the audit log cannot be written),
3 the node did not come back with the old capacity, or no such node, 4 needs attention / interrupted (resumable),
5 not confirmed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from console.cli_runout import cordon_note, plan_refused
from console.exit_codes import kind_of, result_kind
from console.faults import is_fault
from console.guard import GuardRefusal
from console.runbook.interrupt import Interrupted, StopFlag, stop_on_signals


def _dry_run_refusal(args: argparse.Namespace, session: Any) -> dict[str, Any]:
    """For a dry run: what a revert would be refused for (the confirm callable's refused/missing)."""
    from console.runbook.session import PermissionsMissing

    if not args.dry_run:
        return {}
    try:
        session.check_permissions("revert")
    except PermissionsMissing as e:
        return {"refused": str(e), "missing": e.details["missing"]}
    return {}


def run(args: argparse.Namespace, session: Any, *, out: Callable[[argparse.Namespace, dict, str], None],
        progress: Callable[[Any], None], interrupted: Callable[..., int], confirm: Callable[..., int | None],
        refusal: Callable[[argparse.Namespace, Any], int]) -> int:
    from console.runbook.revert import plan_revert, render, run_revert
    from console.runbook.scaleup import PlanRefused
    from console.runbook.session import SessionError

    def err(msg: str) -> None:
        print(f"scale-up: {msg}", file=sys.stderr)

    from console.cli_refusal import refused as refuse

    def refused(args: argparse.Namespace, message: str, kind: str, /, **details: Any) -> int:
        return refuse("scale-up", args, message, kind, **details)

    try:
        plan, journal = plan_revert(session, args.node, resume=args.resume, node_timeout=args.node_timeout,
                                    resize_timeout=args.resize_timeout, dry_run=bool(args.dry_run))
    except (PlanRefused, SessionError) as e:  # SessionError: a journal of the node cannot be used
        if is_fault(e):
            raise  # cli.main: one line, the fault's exit code and JSON
        return plan_refused(args, e)
    if not args.dry_run:
        try:
            session.guard.check(f"revert of the resize of {plan.server}")
        except GuardRefusal as e:
            return refusal(args, e)
    stop_here = confirm(args, journal, plan.to_dict(), render(plan), plan.node,
                        f"Revert the resize of {plan.server} ({plan.new_flavor})?", **_dry_run_refusal(args, session))
    if stop_here is not None:
        return stop_here
    stop = StopFlag()
    try:
        with stop_on_signals(stop):
            result = run_revert(session, plan, journal, on_event=progress, stop=stop)
    except GuardRefusal as e:
        return refusal(args, e)
    except SessionError as e:  # another run holds the node (its Lease)
        return refused(args, str(e), kind_of(e), **e.details)
    except Interrupted:
        return interrupted(args, plan.node, "")
    cordoned = cordon_note(result)
    if result.status == "interrupted":
        return interrupted(args, plan.node, result.run_id, result.stopped_at, cordoned)
    doc = {"run_id": result.run_id, "status": result.status, "exit_code": result.exit_code,
           "message": result.message, "journal": result.journal_path, "elapsed_s": round(result.elapsed, 3),
           "plan": plan.to_dict(), "steps": result.steps, "cordoned": cordoned}
    if result.exit_code:
        doc["error"] = result_kind(result.status, result.refusal)
    out(args, doc, f"{result.status}: {result.message or 'resize reverted'} (run {result.run_id})")
    if result.exit_code:
        err(f"{result.status}: {result.message}")
    return result.exit_code
