"""`console plan --apply`: carry a capacity plan out as the fleet runbook (console/runbook/fleet.py).

The preview lists each node of the plan in the order the fleet runs them, its change and the pods it unblocks,
and what its scale-up run will do (the scale-up's own plan: drain, steps). Then the confirmation (type
`apply`; --yes skips it; without a terminal and without --yes: exit 5), then progress per node on stderr and
the result (`-o json`: one object).

An unfinished fleet run (killed, interrupted, stopped needing attention) is continued by the next
`plan --apply` (or `--resume FLEET_ID`) with the plan it recorded: it is never re-planned, so a plan computed
now that differs (the grown nodes are bigger now, their pods run) is shown as a note and not used. To drop
the unfinished fleet instead, move its journal aside (the line printed says how).

Exit codes (the scale-up's):
  0  every node scaled up and every planned node running the pods planned there (pods of one Job or ReplicaSet
     are interchangeable: counted per controller); or the plan grows no node and places every pod
  1  a node's scale-up failed and was left safe (rolled back); the fleet stopped there
  2  refused before anything was changed: read-only, the audit log cannot be written, a fleet or node journal
     that cannot be used, a node's scale-up would be refused (its plan, its drain, missing permissions); or
     another run holds a node or the fleet (JSON "error": "held", as `scale-up` says it), found before the
     fleet or before that node (nothing changed on it; the nodes done before stay done and the same command
     resumes the fleet once that run has ended)
  3  some planned nodes do not run the pods planned there after the fleet (the message counts them per
     controller, names where each runs and why a pod is not Running), or the plan grows no node and leaves
     pods unplaced
  4  needs attention: a node's run stopped in a state it could not make safe, a PodDisruptionBudget would
     block the next node's drain, --max-unavailable nodes are unavailable; or interrupted (Ctrl-C/SIGTERM):
     the fleet and the node's run are journaled and the same command resumes them
  5  not confirmed
  6  a backend could not be used (console/faults.py)
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from typing import TYPE_CHECKING, Any

from console.guard import GuardRefusal
from console.runbook.engine import EXIT_ATTENTION, EXIT_DONE, EXIT_USAGE, EXIT_VERIFY
from console.runbook.fleet_preview import render_preview
from console.runbook.interrupt import Interrupted, StopFlag, stop_on_signals

if TYPE_CHECKING:
    from console.planner.model import Plan, PlanInput
    from console.runbook.fleet import FleetEvent

MARKS = {"run-start": "▶", "step-start": "…", "step-done": "✓", "step-skip": "↷", "step-failed": "✗",
         "step-progress": " ", "undo-start": "↺", "undo-done": "↺", "run-done": "■", "lease": "·"}
_PRINT = threading.Lock()
FLEET_MARKS = {"node-start": "▶▶", "node-done": "✓✓", "node-failed": "✗✗", "verify": "?", "done": "■■"}


def _err(msg: str) -> None:
    print(f"plan: {msg}", file=sys.stderr, flush=True)


def _json(args: argparse.Namespace) -> bool:
    return getattr(args, "output", "") == "json"


def _out(args: argparse.Namespace, doc: dict[str, Any], text: str) -> None:
    from console.cli import stdout_closed

    try:
        print(json.dumps(doc, indent=1, default=str) if _json(args) else text, flush=True)
    except BrokenPipeError:
        stdout_closed()


def _refused(args: argparse.Namespace, message: str, kind: str, code: int = EXIT_USAGE, /, **details: Any) -> int:
    from console.cli_refusal import refused

    return refused("plan", args, message, kind, code, **details)


def _declined(args: argparse.Namespace, message: str) -> int:
    from console.cli_refusal import declined

    return declined("plan", args, message)


def apply(args: argparse.Namespace, inp: PlanInput, plan: Plan) -> int:
    """Carry `plan` out (or continue the unfinished fleet run); the exit code (module docstring)."""
    try:
        return _apply(args, inp, plan)
    except KeyboardInterrupt:  # Ctrl-C while previewing or at the prompt (the run itself stops via StopFlag)
        return _declined(args, "interrupted before anything was changed")


def _apply(args: argparse.Namespace, inp: PlanInput, plan: Plan) -> int:
    from console.config import load as load_settings
    from console.exit_codes import kind_of, result_kind
    from console.faults import is_fault
    from console.runbook.fleet import Fleet, FleetError, NothingToDo
    from console.runbook.session import Session, SessionError

    settings = load_settings({"kubeconfig": getattr(args, "kubeconfig", None),
                              "context": getattr(args, "context", None),
                              "read_only": getattr(args, "read_only", None)})  # ConfigError: cli.main, exit 2
    try:
        session = Session(settings)
    except SessionError as e:
        if is_fault(e):
            raise
        return _refused(args, str(e), kind_of(e), **e.details)
    try:  # read-only refuses before anything is read for the run, journaled or asked
        session.guard.check("plan --apply (the fleet runbook)")
    except GuardRefusal as e:
        return _refused(args, str(e), e.kind)
    max_unavailable = getattr(args, "max_unavailable", None)
    if max_unavailable is None:
        max_unavailable = getattr(getattr(settings, "plan", None), "max_unavailable", 1) or 1
    parallel = getattr(args, "parallel", None) or 1
    try:
        fleet = Fleet(session, plan, inp, resume=getattr(args, "resume", None), parallel=parallel,
                      max_unavailable=max_unavailable,
                      session_factory=(lambda: Session(settings, guard=session.guard)) if parallel > 1 else None)
        preview = fleet.preview()
    except NothingToDo as e:
        code = EXIT_VERIFY if plan.unplaceable else EXIT_DONE
        msg = f"{e}" + (f"; {len(plan.unplaceable)} pods no plan can place" if plan.unplaceable else "")
        error = {"error": "unplaceable"} if plan.unplaceable else {}
        _out(args, {"status": "nothing-to-do", **error, "message": msg, "exit_code": code, "plan": plan.to_json()},
             msg)
        return code
    except FleetError as e:
        return _refused(args, f"{e}; nothing was changed", kind_of(e, "plan-refused"), **e.details)
    except SessionError as e:
        if is_fault(e):
            raise
        return _refused(args, str(e), kind_of(e), **e.details)
    print(render_preview(fleet, preview), file=sys.stderr, flush=True)
    if not getattr(args, "yes", False):
        if not sys.stdin.isatty():
            return _declined(args, "refusing to change anything without --yes when stdin is not a terminal")
        todo = [e["node"] for e, p in preview if p is not None]
        if input(f"Scale up {len(todo)} nodes ({', '.join(todo)})? Type apply to go on: ").strip() != "apply":
            return _declined(args, "not confirmed; nothing changed")
    stop = StopFlag()
    try:
        with stop_on_signals(stop):
            result = fleet.run(on_event=progress, stop=stop)
    except FleetError as e:
        return _refused(args, str(e), kind_of(e), **e.details)
    except Interrupted:  # a second signal: stopped at once; the journals are whole (atomic rewrites)
        return _interrupted(args, fleet.fleet_id, "at once (second signal)")
    if result.status == "interrupted":
        return _interrupted(args, result.fleet_id, result.message)
    doc = {"fleet_id": result.fleet_id, "status": result.status, "exit_code": result.exit_code,
           "message": result.message, "journal": result.journal_path, "resumed": fleet.resuming,
           "this_run": result.this_run, "elapsed_s": round(result.elapsed, 3), "nodes": result.nodes,
           "verify": result.verify, "plan": fleet.plan_doc}
    if result.exit_code:
        doc["error"] = result_kind(result.status, result.refusal)
    _out(args, doc, render_result(result))
    if result.exit_code:
        _err(f"{result.status}: {result.message}")
    return result.exit_code


def _interrupted(args: argparse.Namespace, fleet_id: str, message: str) -> int:
    resume = f"python -m console plan --apply --resume {fleet_id}"
    line = message if resume in message else f"{message}; resume with: {resume}"
    if _json(args):
        _out(args, {"fleet_id": fleet_id, "status": "interrupted", "error": "interrupted", "exit_code": EXIT_ATTENTION,
                    "message": line, "resume": resume}, "")
    _err(line)
    return EXIT_ATTENTION


def progress(ev: FleetEvent) -> None:
    """One stderr line per fleet event, the node's scale-up steps as `scale-up` prints them, named by node."""
    run = ev.run_event
    if run is not None:
        if run.kind == "run-done" and run.data.get("status") == "interrupted":
            return  # said once, by _interrupted
        text = f"{run.title} {run.message}".strip() if run.title else run.message
        mark, when = MARKS.get(run.kind, "·"), run.time[11:23]
    else:
        from console.runbook.journal import now

        text, when = ev.message, now()[11:23]
        mark = FLEET_MARKS.get(ev.kind, "·")
    with _PRINT:  # node runs report from their own threads with --parallel: one whole line at a time
        sys.stderr.write(f"[{when}] {ev.node or 'fleet'}: {mark} {text}\n")
        sys.stderr.flush()


def render_result(result: Any) -> str:
    lines = [f"{result.status}: {result.message} (fleet run {result.fleet_id})"]
    before = set((getattr(result, "this_run", None) or {}).get("done_before") or ())
    for e in result.nodes:
        lines.append(f"  {e['node']}: {e['status']}" + (" before this run" if e["node"] in before else "")
                     + (f" (scale-up run {e['run_id']})" if e["run_id"] else ""))
    for c in result.verify:  # console/runbook/placement.Row.to_dict
        where = f"Running on {c['runs_on']}" if c["runs_on"] else c["why"]
        lines.append(f"  {c['pod']} (planned on {c['node']}): {where}"
                     + ("" if c["ok"] or not c["runs_on"] else f" ({c['why']})"))
    return "\n".join(lines)
