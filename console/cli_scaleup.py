"""`console scale-up NODE`: the scale-up runbook headless (same engine and journal as the screen).

Exit codes:
  0  done: capacity matches and the planned Pending pods run; or nothing to do (the VM and the kubelet
     already have the target size: nothing is changed, journaled or audited)
  1  failed, rolled back / left in a safe state (message says what happened)
  2  usage error or plan refused (unknown flavor, too small, not a scale-up, no VM found), or the node is held
     by another run (its Lease names the holder and when it expires)
  3  verification failed: the VM grew but capacity or pods are not as planned (message says why)
  4  needs attention: failed in a state the runbook could not make safe (journal + message say where)
  5  not confirmed (answered no, or stdin is not a TTY and --yes was not given)
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from console.runbook.engine import EXIT_DECLINED, EXIT_USAGE


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
    print(json.dumps(doc, indent=1, default=str) if args.output == "json" else text)


def run(args: argparse.Namespace) -> int:
    from console.config import ConfigError
    from console.config import load as load_settings
    from console.runbook.scaleup import DRAIN_TIMEOUT_S, DrainRefused, PlanRefused, ScaleUpRequest, parse_memory_mib
    from console.runbook.session import Session, SessionError

    def err(msg: str) -> None:
        print(f"scale-up: {msg}", file=sys.stderr)

    if not args.resume and not args.flavor and not (args.vcpus and args.memory):
        err("give --flavor NAME, or --vcpus N and --memory SIZE")
        return EXIT_USAGE
    try:
        settings = load_settings({"kubeconfig": args.kubeconfig, "context": args.context,
                                  "node_access": args.node_access, "node_debug_image": args.node_debug_image,
                                  "node_debug_namespace": args.node_debug_namespace,
                                  "kubelet_unit": args.kubelet_unit,
                                  "lease_namespace": args.lease_namespace})
        request = ScaleUpRequest(
            node=args.node, flavor=args.flavor, vcpus=args.vcpus,
            memory_mib=parse_memory_mib(args.memory) if args.memory else None, method=args.method,
            resize_timeout=args.resize_timeout, node_timeout=args.node_timeout, pods_timeout=args.pods_timeout,
            force=args.force, delete_emptydir_data=args.delete_emptydir_data,
            drain_timeout=DRAIN_TIMEOUT_S if args.drain_timeout is None else args.drain_timeout,
        )
        session = Session(settings)
        plan, journal = session.plan(request, resume=args.resume, new=args.new)
    except (PlanRefused, SessionError, ConfigError) as e:
        err(str(e))
        if args.output == "json":
            doc = {"status": "refused", "message": str(e), "exit_code": EXIT_USAGE}
            if isinstance(e, DrainRefused):
                doc["blocking"] = [i.to_dict() for i in e.blocking]
            print(json.dumps(doc))
        return EXIT_USAGE
    from console.runbook.scaleup import render_plan

    if journal is not None:
        print(f"scale-up: resuming run {journal.run_id}", file=sys.stderr)
    if plan.nothing_to_do:
        _out(args, {"status": "nothing-to-do", "message": plan.nothing_to_do, "exit_code": 0,
                    "dry_run": bool(args.dry_run), "plan": plan.to_dict()}, plan.nothing_to_do)
        return 0
    if args.dry_run:
        _out(args, {"dry_run": True, "plan": plan.to_dict()}, render_plan(plan))
        return 0
    print(render_plan(plan), file=sys.stderr)
    if not args.yes:
        if not sys.stdin.isatty():
            err("refusing to change anything without --yes when stdin is not a terminal")
            return EXIT_DECLINED
        from console.runbook.nova_drift import nova_regeneration_warning

        warning = nova_regeneration_warning(plan)
        ask = f"Scale {plan.node.name} ({plan.vm.name}) to {plan.target}? Type the node name to go on: "
        answer = input(f"warning: {warning}\n{ask}" if warning else ask)
        if answer.strip() != plan.node.name:
            err("not confirmed; nothing changed")
            return EXIT_DECLINED

    def progress(ev: Any) -> None:
        label = {"step-start": "…", "step-done": "✓", "step-skip": "↷", "step-failed": "✗", "step-progress": " ",
                 "undo-start": "↺", "undo-done": "↺", "run-start": "▶", "run-done": "■"}.get(ev.kind, "·")
        text = f"{ev.title} {ev.message}".strip() if ev.title else ev.message
        print(f"[{ev.time[11:23]}] {label} {text}", file=sys.stderr, flush=True)

    try:
        result = session.run(plan, journal, on_event=progress)
    except SessionError as e:
        err(str(e))
        if args.output == "json":
            print(json.dumps({"status": "refused", "message": str(e), "exit_code": EXIT_USAGE, **e.details}))
        return EXIT_USAGE
    doc = {"run_id": result.run_id, "status": result.status, "exit_code": result.exit_code,
           "message": result.message, "journal": result.journal_path, "elapsed_s": round(result.elapsed, 3),
           "infra_wait_s": round(result.infra_wait, 3), "overhead_s": round(result.overhead, 3),
           "plan": plan.to_dict(), "steps": result.steps}
    text = f"{result.status}: {result.message or 'scale-up done'} (run {result.run_id})"
    _out(args, doc, text)
    if result.exit_code:
        err(f"{result.status}: {result.message}")
    if result.status == "needs-attention":
        err(f"journal: {result.journal_path}; resume with: python -m console scale-up {plan.node.name} "
            f"--resume {result.run_id}")
    return result.exit_code
