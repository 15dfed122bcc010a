"""`console plan`: the cheapest set of VM scale-ups that lets the Pending pods schedule, and where each pod lands.

    console plan [--pods NS/NAME … | --all-pending] [-o table|json] [--drop NODE …] [--pin NODE=SIZE …]
                 [--time-limit S]
    console plan --apply [--yes] [--parallel N] [--max-unavailable N] [--resume FLEET_ID]

Reads the cluster (nodes, pods, FailedScheduling events, PodDisruptionBudgets), the VMs of the cloud and libvirt
URIs the settings name (`cloud` / $OS_CLOUD, `libvirt_uris` / $CONSOLE_LIBVIRT_URI), Nova's flavors and limits
and Placement where it may be read, then plans (console/planner): first as many pods placed as possible, then
the least cost (`plan.flavor_prices`, a flavor extra_spec `plan.price_extra_spec`, else `plan.vcpu_weight` per
vCPU and `plan.memory_gib_weight` per GiB added), then the preferences (`plan.avoid_pdb_blocked`,
`plan.prefer_live`). `--drop NODE` keeps a node out of the plan; `--pin NODE=FLAVOR` or `--pin NODE=8/16Gi`
grows it to exactly that size. Nothing is changed without --apply, which runs the plan as a fleet: one node
at a time (`--parallel N` across hypervisors), each node the scale-up runbook, stopping at the first failure
or when `--max-unavailable` nodes (default `plan.max_unavailable`, 1) are unavailable.

`-o table` (default): per node before → after, how, the pods it unblocks and the cost; the pods no plan can
place and why; the total cost and whether it is proven optimal. `-o json`: {"nodes": [{"node", "vm", "from":
{"vcpus", "memory", "flavor"}, "to": {…}, "method", "pods", "cost", "notes"}], "placements": {"ns/name":
"node"}, "unplaceable": [{"pod", "reason"}], "cost", "optimal", "solver", "gap", "notes"}.

Exit codes (without --apply):
  0  every pod placed (nothing Pending too)
  2  usage: a bad --pin, an unknown --drop/--pin node, a --pods pod that does not exist or is not Pending;
     a bad kubeconfig, clouds.yaml or config file
  3  some pods cannot be placed by any plan (each has its reason)
  6  a backend could not be used (Kubernetes API, Keystone/Nova, libvirt), as every headless command says it:
     one `console: ...` line and, with -o json, {"status": "error", "error": KIND, "message", "exit_code"}
With --apply: the fleet's exit codes (console/cli_plan_apply.py; the scale-up's). When it continues an
unfinished fleet run, a --pods pod that no longer waits is not a usage error: the fleet carries out the plan
it recorded, and its own scale-ups may have let that pod run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import textwrap
from typing import Any

EXIT_OK, EXIT_USAGE, EXIT_UNPLACED = 0, 2, 3
WIDTH = 80
_SIZE = re.compile(r"^(\d+)/(\d+(?:\.\d+)?)(Gi|Mi|G|M)?$")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("plan", help="the cheapest VM scale-ups that schedule the Pending pods (--apply: run them)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--pods", nargs="+", action="extend", metavar="NS/NAME",
                       help="plan for these Pending pods only")
    which.add_argument("--all-pending", action="store_true", help="plan for every Pending pod (the default)")
    p.add_argument("-o", "--output", choices=("table", "json"), default="table")
    p.add_argument("--drop", nargs="+", action="extend", default=[], metavar="NODE",
                   help="never grow this node")
    p.add_argument("--pin", action="append", default=[], metavar="NODE=SIZE",
                   help="grow NODE to exactly this size: a flavor name, or VCPUS/MEMORY (e.g. 8/16Gi)")
    p.add_argument("--time-limit", type=float, default=2.0, metavar="S",
                   help="seconds the exact solver may take before the heuristic's plan is used (default 2)")
    p.add_argument("--apply", action="store_true", help="carry the plan out as a fleet runbook")
    p.add_argument("--yes", "-y", action="store_true", help="with --apply: do not ask for confirmation")
    p.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="with --apply: nodes scaled at once, never two on one hypervisor (default 1)")
    p.add_argument("--max-unavailable", type=int, default=None, metavar="N",
                   help="with --apply: stop when this many nodes are unavailable (default plan.max_unavailable)")
    p.add_argument("--resume", metavar="FLEET_ID", help="with --apply: continue an unfinished fleet run")


def _error(args: argparse.Namespace, kind: str, message: str, code: int = EXIT_USAGE) -> int:
    from console.exit_codes import print_error

    return print_error("console plan", args.output == "json", kind, message, code)


def parse_pin(text: str) -> tuple[str, str | tuple[int, int]]:
    """NODE=FLAVOR → (node, "FLAVOR"); NODE=8/16Gi → (node, (8, 16384)) (memory in MiB; Gi/G, Mi/M, none = Gi)."""
    node, sep, size = text.partition("=")
    if not sep or not node or not size:
        raise ValueError(f"--pin {text!r}: give NODE=FLAVOR or NODE=VCPUS/MEMORY (e.g. worker1=8/16Gi)")
    m = _SIZE.match(size)
    if m is None:
        if "/" in size:
            raise ValueError(f"--pin {text!r}: the size is VCPUS/MEMORY, e.g. 8/16Gi or 4/6144Mi")
        return node, size
    vcpus, amount, unit = int(m.group(1)), float(m.group(2)), m.group(3) or "Gi"
    mib = amount * 1024 if unit in ("Gi", "G") else amount
    if vcpus < 1 or mib < 1 or mib != int(mib):
        raise ValueError(f"--pin {text!r}: vCPUs and memory must be positive (whole MiB)")
    return node, (vcpus, int(mib))


def resolve_pins(inp: Any, pins: list[tuple[str, str | tuple[int, int]]]) -> dict[str, Any]:
    """Each pin as a Size of its node's VM; ValueError naming an unknown node, a node without a VM, or a flavor
    the node cannot be resized to."""
    from console.planner.model import Size

    nodes = {n.name: n for n in inp.nodes}
    out = {}
    for node, spec in pins:
        n = nodes.get(node)
        if n is None:
            raise ValueError(f"--pin {node}: no such node")
        if n.vm is None:
            raise ValueError(f"--pin {node}: no VM found behind this node, it cannot be grown")
        if isinstance(spec, tuple):
            flavor = next((o.size.flavor for o in n.vm.options if (o.size.vcpus, o.size.memory_mib) == spec), "")
            out[node] = Size(spec[0], spec[1], flavor)
            continue
        option = next((o for o in n.vm.options if o.size.flavor == spec), None)
        if option is None and n.vm.current.flavor != spec:
            names = ", ".join(o.size.flavor for o in n.vm.options) or "none"
            raise ValueError(f"--pin {node}={spec}: not a flavor {node} can be resized to (larger flavors: {names})")
        out[node] = option.size if option is not None else n.vm.current
    return out


def run(args: argparse.Namespace) -> int:
    try:
        pins = [parse_pin(p) for p in args.pin]
    except ValueError as e:
        return _error(args, "usage", str(e))
    if args.parallel < 1 or (args.max_unavailable is not None and args.max_unavailable < 1):
        return _error(args, "usage", "--parallel and --max-unavailable are at least 1")
    from console.config import load

    settings = load({"kubeconfig": getattr(args, "kubeconfig", None), "context": getattr(args, "context", None),
                     "read_only": getattr(args, "read_only", None)})
    if args.max_unavailable is None:
        args.max_unavailable = settings.plan.max_unavailable
    from console.kube.connection import connect_for
    from console.planner.inputs import PlanInputError, preferences, read_plan_input

    api, _target = connect_for(settings)
    try:
        try:
            inp = read_plan_input(api, settings, pods=args.pods or None,
                                  prefs=preferences(settings, dropped=args.drop))
        except PlanInputError as e:
            if not (args.apply and args.pods and _fleet_to_continue(args)):
                return _error(args, "bad-pod", str(e))
            # the unfinished fleet is carried out as it recorded its plan (never re-planned): the pods named that
            # no longer wait (its grown nodes run them now, or their controller replaced them) are not planned
            inp = read_plan_input(api, settings, pods=args.pods, prefs=preferences(settings, dropped=args.drop),
                                  waiting_only=True)
        known = {n.name for n in inp.nodes}
        unknown = [n for n in args.drop if n not in known]
        if unknown:
            return _error(args, "usage", f"--drop {', '.join(unknown)}: no such node")
        try:
            pinned = resolve_pins(inp, pins)
        except ValueError as e:
            return _error(args, "usage", str(e))
        if pinned:
            inp = dataclasses.replace(inp, prefs=dataclasses.replace(inp.prefs, pinned=pinned))
        from console.planner.solve import solve

        plan = solve(inp, time_limit=args.time_limit)
        if args.apply:
            import importlib

            # the fleet runbook's module, imported only here: `plan` without --apply never needs it
            try:
                fleet = importlib.import_module("console.cli_plan_apply")
            except ModuleNotFoundError as e:
                if e.name != "console.cli_plan_apply":
                    raise
                return _error(args, "usage", "--apply is not available in this build (no fleet runbook); "
                              "nothing was changed; `console plan` shows the plan")
            return int(fleet.apply(args, inp, plan))
    finally:
        api.close()
    code = EXIT_UNPLACED if plan.unplaceable else EXIT_OK
    if args.output == "json":
        verdict: dict[str, Any] = {"status": "planned", "exit_code": code}
        if plan.unplaceable:
            verdict |= {"status": "partial", "error": "unplaceable", "message": unplaced_message(plan)}
            print(f"console plan: {verdict['message']}", file=sys.stderr)  # the one line a failure has
        print(json.dumps(verdict | plan.to_json(), indent=1))
    else:
        print("\n".join(render(inp, plan)))
    return code


def _fleet_to_continue(args: argparse.Namespace) -> bool:
    """Whether `plan --apply` continues an unfinished fleet run (--resume, or one is journaled) rather than
    carrying out the plan computed now."""
    if getattr(args, "resume", None):
        return True
    from console.runbook.fleet_journal import FleetJournal, FleetJournalError

    try:
        return bool(FleetJournal.unfinished_fleets())
    except FleetJournalError:
        return True  # the fleet runbook refuses it, saying which journal


def unplaced_message(plan: Any) -> str:
    """One line for the pods no plan can place (the table lists each with its reason)."""
    n = len(plan.unplaceable)
    return f"{n} pod{'s' if n != 1 else ''} no plan can place: " + ", ".join(u.pod for u in plan.unplaceable)


# -- the table ----------------------------------------------------------------------------------------------------
def _size(s: Any) -> str:
    from console.planner.model import memory_quantity

    text = f"{s.vcpus}/{memory_quantity(s.memory_mib)}"
    return f"{s.flavor} {text}" if s.flavor else text


def _cost(c: float) -> str:
    return f"{c:.2f}".rstrip("0").rstrip(".") if c != int(c) else str(int(c))


def _wrap(text: str, indent: str = "  ", first: str | None = None) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent if first is None else first, subsequent_indent=indent
                         + "  ", break_on_hyphens=False, break_long_words=True) or [indent.rstrip()]


def render(inp: Any, plan: Any) -> list[str]:
    """The plan at 80 columns: per node grown, then the pods that fit as things are, the unplaceable pods with
    their reasons, the total and whether it is proven optimal, and the notes (what could not be read)."""
    from console.planner.model import OPENSTACK

    pending = len(inp.pods)
    if not pending:
        return ["No Pending pods: nothing to plan."]
    out = [f"Plan for {pending} Pending pod{'s' if pending != 1 else ''}: {len(plan.nodes)} node"
           f"{'s' if len(plan.nodes) != 1 else ''} to grow, {len(plan.placements)} pod"
           f"{'s' if len(plan.placements) != 1 else ''} placed, {len(plan.unplaceable)} not"]
    for i, c in enumerate(plan.nodes, 1):
        how = "resize, reboots" if c.method == OPENSTACK else "live, no reboot"
        out.append("")
        out += _wrap(f"{i}. {c.node}: {_size(c.from_size)} → {_size(c.to_size)}", indent="   ", first="")
        out.append(f"   {c.method} ({how}), cost {_cost(c.cost)}")
        out += _wrap("pods: " + (", ".join(c.pods) or "none (pinned)"), indent="   ")
        out += [line for note in c.notes for line in _wrap("note: " + note, indent="   ")]
    grown = {c.node for c in plan.nodes}
    as_is: dict[str, list[str]] = {}
    for pod, node in sorted(plan.placements.items()):
        if node not in grown:
            as_is.setdefault(node, []).append(pod)
    if as_is:
        out += ["", "Fit without growing a node:"]
        out += [line for node, pods in sorted(as_is.items()) for line in _wrap(f"{node}: {', '.join(pods)}")]
    if plan.unplaceable:
        out += ["", f"Cannot be placed by any plan ({len(plan.unplaceable)}):"]
        out += [line for u in plan.unplaceable for line in _wrap(f"{u.pod}: {u.reason}")]
    proof = "optimal" if plan.optimal else (f"not proven optimal, gap {plan.gap:.0%}" if plan.gap is not None
                                            else "not proven optimal")
    out += ["", f"Total cost {_cost(plan.cost)} ({proof}; {plan.solver or 'solver'}, {plan.seconds:.2f}s)"]
    notes = [*plan.notes, *inp.limits.notes]
    if notes:
        out += ["", "Notes:"] + [line for n in dict.fromkeys(notes) for line in _wrap("- " + n, indent="  ")]
    if plan.nodes:
        out += ["", "Nothing was changed; run it with: console plan --apply"]
    return out
