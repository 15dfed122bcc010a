"""`console scale-up NODE`: the scale-up runbook headless (same engine and journal as the screen).

--revert reverts a resize waiting in VERIFY_RESIZE as its own journaled runbook (same exit codes).
--discard RUN_ID moves a run's journal aside after showing what it had done (console/cli_discard.py).

A journal records its cluster (API server + kube-system uid), cloud/hypervisor and parameters; one that
cannot be used (unreadable, truncated, wrong shape, older version, another cluster or cloud) is never
skipped or resumed, a rerun naming another target than the run's is refused, and a run in progress in
another process is left alone: exit 2 naming the journal file (and --discard RUN_ID).

A run that ends with its node cordoned says so on stderr, and by whom (JSON "cordoned": {"by", "message"}, else
null): the console marks its own cordon with the node annotation console/cordoned-by (console/runbook/cordon.py).

Exit codes:
  0  done: capacity matches and the planned Pending pods run; or nothing to do (the VM and the kubelet
     already have the target size: nothing is changed, journaled or audited)
  1  failed, rolled back / left in a safe state (message says what happened)
  2  usage error or plan refused (unknown flavor, too small, not a scale-up, no VM found), or the node is held
     by another run (its Lease names the holder and when it expires), or a journal fault (above); read-only
     (`--read-only`, `read_only: true`: the plan and --dry-run still work, nothing is changed); the audit log
     cannot be written (a step's intent record must be on disk before the step acts: nothing more is done;
     resumable when a step was); missing RBAC permissions found at plan time, before any change (JSON
     "error": "forbidden", "missing": ["patch nodes", "create pods/eviction", ...]; --dry-run reports them, exit 0)
  3  verification failed: the VM grew but capacity or pods are not as planned (message says why); or the cluster
     has no such node (JSON {"status": "error", "error": "not-found", ...}, as `get node NAME`)
  4  needs attention: failed in a state the runbook could not make safe (journal + message say where);
     or interrupted (Ctrl-C/SIGTERM): stopped before the next step, journal saved, one line names the
     resume command (a second Ctrl-C stops at once)
  5  not confirmed (answered no, or stdin is not a TTY and --yes was not given)
  6  a backend could not be used (Kubernetes API, Keystone/Nova, libvirt: unreachable, TLS/CA, 401, a 403 met
     while running);
     nothing was changed. A bad kubeconfig, clouds.yaml or config file is 2. Both print one `console: ...`
     line and, with -o json, {"status": "error", "error": KIND, "message", "exit_code"} (console/faults.py)
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from console import cli_refusal
from console.cli import stdout_closed
from console.cli_runout import cordon_note, plan_refused
from console.exit_codes import kind_of, print_error, result_kind
from console.faults import is_fault
from console.guard import GuardRefusal
from console.runbook.engine import EXIT_ATTENTION, EXIT_DECLINED, EXIT_USAGE
from console.runbook.interrupt import Interrupted, StopFlag, stop_on_signals


def add_parser(sub: Any) -> None:
    p = sub.add_parser("scale-up", help="scale a worker VM up (OpenStack resize or libvirt live) and verify",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("node", metavar="NODE")
    p.add_argument("--flavor", help="OpenStack flavor name or id")
    p.add_argument("--vcpus", type=int, help="target vCPUs (libvirt)")
    p.add_argument("--memory", help="target memory, e.g. 16Gi (libvirt)")
    p.add_argument("--method", choices=("openstack", "libvirt"))
    p.add_argument("--node-access", choices=("debug-pod", "ssh", "guest-agent"),
                   help="how to reach the node for vCPU onlining and the kubelet restart (default: config, debug-pod)")
    p.add_argument("--node-debug-image", metavar="IMAGE",
                   help="image of the node-debug pod, with nsenter (default: config, busybox:1.37.0)")
    p.add_argument("--node-debug-namespace", metavar="NS",
                   help="namespace of the node-debug pod; must allow privileged pods (default: config, default)")
    p.add_argument("--kubelet-unit", metavar="UNIT",
                   help="the kubelet's systemd unit (default: config, else detected from the node: kubelet, "
                        "k3s, k3s-agent, rke2-server, rke2-agent)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    p.add_argument("--resume", metavar="RUN_ID", help="resume an unfinished run")
    p.add_argument("--new", action="store_true", help="start a new run even if an unfinished one exists")
    p.add_argument("--discard", metavar="RUN_ID",
                   help="move the run's journal aside (after showing what it had done; --yes to skip the question)")
    p.add_argument("--revert", action="store_true",
                   help="revert the node's resize waiting in VERIFY_RESIZE (its own journaled, audited runbook)")
    p.add_argument("--resize-timeout", type=float, default=300.0, help="seconds to wait for Nova (default 300)")
    p.add_argument("--node-timeout", type=float, default=180.0, help="seconds to wait for the node (default 180)")
    p.add_argument("--pods-timeout", type=float, default=60.0, help="seconds to wait for pods (default 60)")
    p.add_argument("--lease-namespace", help="namespace of the per-node Lease that keeps runs apart "
                   "(default: config lease_namespace, default)")
    # the drain is `kubectl drain --ignore-daemonsets`; these two flags mean what they mean for kubectl
    p.add_argument("--force", action="store_true",
                   help="drain pods that declare no controller too (they are deleted and do not come back)")
    p.add_argument("--delete-emptydir-data", action="store_true",
                   help="drain pods using emptyDir too (their local data is deleted)")
    p.add_argument("--drain-timeout", type=float, default=None,
                   help="seconds to retry evictions a PodDisruptionBudget refuses, then stop needing attention "
                        "(default 120)")


def _out(args: argparse.Namespace, doc: dict[str, Any], text: str) -> None:
    try:
        print(json.dumps(doc, indent=1, default=str) if args.output == "json" else text, flush=True)
    except BrokenPipeError:  # `-o json | head -c1`: the run's exit code still says what happened
        stdout_closed()


def interrupted(args: argparse.Namespace, node: str, run_id: str, stopped_at: str = "",
                cordoned: dict[str, Any] | None = None) -> int:
    """The one line for a run stopped by SIGINT/SIGTERM (journal saved, resumable), and exit 4. `cordoned`: the
    run's cordon_note (the line names the node's state as the journal leaves it)."""
    from console.runbook.held import held_state, resume_command
    from console.runbook.journal import UNFINISHED, Journal

    runs = [j for j in Journal.scan()[0]  # never raises: this line reports a run, a bad file is refused elsewhere
            if j.doc["node"] == node and j.doc["status"] in UNFINISHED and (j.run_id == run_id or not run_id)]
    doc = max(runs, key=lambda j: j.doc.get("updated", "")).doc if runs else {}
    run_id = run_id or doc.get("run_id", "")
    if not stopped_at:
        running = [s["id"] for s in doc.get("steps", []) if s["status"] in ("started", "acted")]
        stopped_at = f"during {running[0]}" if running else "between steps"
    line = (f"interrupted {stopped_at}; the node is {held_state(doc)}; resume with: "
            f"{resume_command(node, run_id)}")
    if args.output == "json":
        _out(args, {"run_id": run_id, "status": "interrupted", "error": "interrupted", "exit_code": EXIT_ATTENTION,
                    "message": line, "resume": resume_command(node, run_id), "steps": doc.get("steps", []),
                    "cordoned": cordoned}, "")
    print(f"scale-up: {line}", file=sys.stderr, flush=True)
    return EXIT_ATTENTION


def preview_and_confirm(args: argparse.Namespace, journal: Any, plan_doc: dict[str, Any], text: str, node: str,
                        question: str, warning: str | None = None, refused: str = "",
                        missing: list[str] | None = None) -> int | None:
    """Show the plan; the exit code when the run must not start (--dry-run: 0, not confirmed: 5), else None.
    `warning` is said again right above the question (what the change means beyond this run). A dry run reports
    what a run would be refused for (`refused`, the `missing` permissions) instead of refusing."""
    if journal is not None:
        print(f"scale-up: resuming run {journal.run_id}", file=sys.stderr)
    if args.dry_run:
        doc: dict[str, Any] = {"dry_run": True, "plan": plan_doc}
        if missing:
            doc |= {"error": "forbidden", "missing": missing, "message": f"a run would be {refused}"}
        _out(args, doc, text + (f"\nwarning: a run would be {refused}" if missing else ""))
        return 0
    print(text, file=sys.stderr)
    if not args.yes:
        if not sys.stdin.isatty():
            return declined(args, "refusing to change anything without --yes when stdin is not a terminal")
        ask = f"{question} Type the node name to go on: "
        if input(f"warning: {warning}\n{ask}" if warning else ask).strip() != node:
            return declined(args, "not confirmed; nothing changed")
    return None


def declined(args: argparse.Namespace, message: str) -> int:
    return cli_refusal.declined("scale-up", args, message)


def refused(args: argparse.Namespace, message: str, kind: str, /, **details: Any) -> int:
    return cli_refusal.refused("scale-up", args, message, kind, **details)


def dry_run_refusal(args: argparse.Namespace, session: Any, action: str) -> dict[str, Any]:
    """For a dry run: what a run of `action` would be refused for (preview_and_confirm's refused/missing)."""
    from console.runbook.session import PermissionsMissing

    if not args.dry_run:
        return {}
    try:
        session.check_permissions(action)
    except PermissionsMissing as e:
        return {"refused": str(e), "missing": e.details["missing"]}
    return {}


def refusal(args: argparse.Namespace, e: Any) -> int:
    """A Guard refusal (read-only, audit log unwritable) before anything was changed: one line, exit 2."""
    return refused(args, str(e), e.kind)


def guard_refusal(args: argparse.Namespace, session: Any, what: str) -> int | None:
    """Exit 2 when the session is read-only (before asking to confirm: the answer could change nothing)."""
    try:
        session.guard.check(what)
    except GuardRefusal as e:
        return refusal(args, e)
    return None


def _progress(ev: Any) -> None:
    if ev.kind == "run-done" and ev.data.get("status") == "interrupted":
        return  # said once, by interrupted()
    label = {"step-start": "…", "step-done": "✓", "step-skip": "↷", "step-failed": "✗", "step-progress": " ",
             "undo-start": "↺", "undo-done": "↺", "run-start": "▶", "run-done": "■"}.get(ev.kind, "·")
    text = f"{ev.title} {ev.message}".strip() if ev.title else ev.message
    print(f"[{ev.time[11:23]}] {label} {text}", file=sys.stderr, flush=True)


def _revert(args: argparse.Namespace, err: Any) -> int:
    from console import cli_revert
    from console.config import load as load_settings
    from console.runbook.session import Session, SessionError

    try:  # a ConfigError goes up to cli.main (exit 2, bad-config)
        session = Session(load_settings({"kubeconfig": args.kubeconfig, "context": args.context,
                                         "read_only": args.read_only, "node_access": args.node_access}))
    except SessionError as e:
        if is_fault(e):
            raise  # cli.main: one line, the fault's exit code and JSON
        return refused(args, str(e), kind_of(e), **e.details)
    return cli_revert.run(args, session, out=_out, progress=_progress, interrupted=interrupted,
                          confirm=preview_and_confirm, refusal=refusal)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except KeyboardInterrupt:  # Ctrl-C while planning or at the prompt (the run itself stops via StopFlag)
        return print_error("scale-up", args.output == "json", "interrupted", "interrupted before anything was "
                           "changed", EXIT_DECLINED, status="interrupted")


def _run(args: argparse.Namespace) -> int:
    from console.config import load as load_settings
    from console.runbook.scaleup import DRAIN_TIMEOUT_S, PlanRefused, ScaleUpRequest, parse_memory_mib
    from console.runbook.session import Session, SessionError, plan_action

    def err(msg: str) -> None:
        print(f"scale-up: {msg}", file=sys.stderr)

    if args.discard:
        from console import cli_discard

        return cli_discard.run(args, out=_out, confirm=preview_and_confirm)
    if args.revert or (args.resume or "").startswith("revert-"):
        return _revert(args, err)
    if not args.resume and not args.flavor and not (args.vcpus and args.memory):
        return print_error("scale-up", args.output == "json", "usage", "give --flavor NAME, or --vcpus N and "
                           "--memory SIZE", EXIT_USAGE)
    try:
        # a ConfigError goes up to cli.main (exit 2, bad-config)
        settings = load_settings({"kubeconfig": args.kubeconfig, "context": args.context,
                                  "node_access": args.node_access, "node_debug_image": args.node_debug_image,
                                  "node_debug_namespace": args.node_debug_namespace,
                                  "kubelet_unit": args.kubelet_unit,
                                  "lease_namespace": args.lease_namespace,
                                  "read_only": getattr(args, "read_only", None)})
        request = ScaleUpRequest(
            node=args.node, flavor=args.flavor, vcpus=args.vcpus,
            memory_mib=parse_memory_mib(args.memory) if args.memory else None, method=args.method,
            resize_timeout=args.resize_timeout, node_timeout=args.node_timeout, pods_timeout=args.pods_timeout,
            force=args.force, delete_emptydir_data=args.delete_emptydir_data,
            drain_timeout=DRAIN_TIMEOUT_S if args.drain_timeout is None else args.drain_timeout,
        )
        session = Session(settings)
        plan, journal = session.plan(request, resume=args.resume, new=args.new, dry_run=bool(args.dry_run))
    except (PlanRefused, SessionError) as e:
        if is_fault(e):
            raise  # cli.main: one line, the fault's exit code and JSON
        return plan_refused(args, e)
    from console.runbook.scaleup import render_plan

    if plan.nothing_to_do:
        _out(args, {"status": "nothing-to-do", "message": plan.nothing_to_do, "exit_code": 0,
                    "dry_run": bool(args.dry_run), "plan": plan.to_dict()}, plan.nothing_to_do)
        return 0
    from console.runbook.nova_drift import nova_regeneration_warning

    if not args.dry_run and (said := guard_refusal(args, session, f"scale-up of {plan.node.name}")) is not None:
        return said
    stop_here = preview_and_confirm(args, journal, plan.to_dict(), render_plan(plan), plan.node.name,
                                    f"Scale {plan.node.name} ({plan.vm.name}) to {plan.target}?",
                                    warning=nova_regeneration_warning(plan),
                                    **dry_run_refusal(args, session, plan_action(plan)))
    if stop_here is not None:
        return stop_here

    progress = _progress

    stop = StopFlag()
    try:
        with stop_on_signals(stop):
            result = session.run(plan, journal, on_event=progress, stop=stop)
    except GuardRefusal as e:
        return refusal(args, e)
    except SessionError as e:
        return refused(args, str(e), kind_of(e), **e.details)
    except Interrupted:  # a second signal: stopped at once; the journal is whole (atomic rewrites)
        return interrupted(args, plan.node.name, "")
    cordoned = cordon_note(result)
    if result.status == "interrupted":
        return interrupted(args, plan.node.name, result.run_id, result.stopped_at, cordoned)
    doc = {"run_id": result.run_id, "status": result.status, "exit_code": result.exit_code,
           "message": result.message, "journal": result.journal_path, "elapsed_s": round(result.elapsed, 3),
           "infra_wait_s": round(result.infra_wait, 3), "overhead_s": round(result.overhead, 3),
           "plan": plan.to_dict(), "steps": result.steps, "cordoned": cordoned}
    if result.exit_code:
        doc["error"] = result_kind(result.status, result.refusal)
    text = f"{result.status}: {result.message or 'scale-up done'} (run {result.run_id})"
    _out(args, doc, text)
    if result.exit_code:
        err(f"{result.status}: {result.message}")
    if result.status == "needs-attention":
        err(f"journal: {result.journal_path}; resume with: python -m console scale-up {plan.node.name} "
            f"--resume {result.run_id}")
    return result.exit_code
