"""What the fleet-plan screen shows, computed from a Plan and the run's progress (no I/O, no widgets).

The table's rows are the nodes the plan grows, in the order the fleet runs them, then the nodes the admin dropped
(kept as rows so `d` on them takes them back); the text below says, for the highlighted node, what it grows to and
every pod it unblocks, then the pods placed on nodes as they are and every pod no plan can place with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rich.text import Text

from console.planner.model import OPENSTACK, NodeChange, Plan, Size, memory_quantity
from console.tui.widgets.runbook import StepState
from console.tui.widgets.table import Column

# the states of a node in a fleet run (console/runbook/fleet.py journal: pending/running/done/failed/attention)
RUN_STATES = ("pending", "running", "done", "failed", "attention")
# a node run's engine statuses (console/runbook/engine.py run-done) that leave the node for the admin to look at
ATTENTION = ("needs-attention", "interrupted", "verify-failed")


@dataclass(frozen=True)
class Marks:
    """The admin's changes to the plan: nodes dropped (never grown) and pinned (grown to exactly this size)."""

    dropped: frozenset[str] = frozenset()
    pinned: Mapping[str, Size] | None = None

    @property
    def pins(self) -> Mapping[str, Size]:
        return self.pinned or {}


def size_short(s: Size) -> str:
    """`m1.large` for a flavor, `4/8Gi` (vCPUs/memory) for a libvirt size."""
    return s.flavor or f"{s.vcpus}/{memory_quantity(s.memory_mib)}"


def size_long(s: Size) -> str:
    text = f"{s.vcpus} vCPU, {memory_quantity(s.memory_mib)}"
    return f"{s.flavor} ({text})" if s.flavor else text


def method_text(method: str) -> str:
    return "resize (reboots)" if method == OPENSTACK else "live (no reboot)"


def fmt_cost(cost: float) -> str:
    return f"{cost:.0f}" if float(cost).is_integer() else f"{cost:.2f}"


def pods_cell(pods: tuple[str, ...]) -> str:
    """`3: ns/a, ns/b, ns/c` (the count first: the table cuts the names where its width ends)."""
    return f"{len(pods)}: {', '.join(pods)}" if pods else "0"


def plan_columns(running: bool) -> list[Column]:
    """Before a run: what grows and what it unblocks; from the run on, each node's progress (its steps) is what
    an 80-column terminal keeps, and the pods column goes first."""
    cols = [Column("node", "NODE", 16), Column("change", "BEFORE → AFTER", 22), Column("cost", "COST", 6, right=True),
            Column("state", "STATE", 9)]
    if running:
        return [*cols, Column("progress", "PROGRESS", 20, flex=True), Column("pods", "UNBLOCKS", 20, priority=1)]
    return [*cols, Column("pods", "UNBLOCKS", 16, flex=True), Column("method", "METHOD", 16, priority=1)]


def gap_text(plan: Plan) -> str:
    if plan.optimal:
        return "optimal"
    gap = plan.gap
    return f"gap ≤ {gap:.0%} (not proven optimal)" if gap is not None else "not proven optimal (no bound)"


def plan_summary(plan: Plan) -> str:
    """`2 nodes to grow · 5/7 pods placed · 2 unplaceable · cost 12 · optimal (exact, 0.3s)`."""
    placed = len(plan.placements)
    total = placed + len(plan.unplaceable)
    n = len(plan.nodes)
    parts = [f"{n} node{'' if n == 1 else 's'} to grow" if n else "no node to grow",
             f"{placed}/{total} pods placed"]
    if plan.unplaceable:
        parts.append(f"{len(plan.unplaceable)} unplaceable")
    # the solver's name, not its seconds: a figure that differs run to run belongs in `plan -o json`
    parts += [f"cost {fmt_cost(plan.cost)}", f"{gap_text(plan)} ({plan.solver})" if plan.solver else gap_text(plan)]
    return " · ".join(parts)


def row_keys(plan: Plan, marks: Marks) -> list[str]:
    grown = [c.node for c in plan.nodes]
    return grown + sorted(marks.dropped - set(grown))


def plan_state(change: NodeChange | None, node: str, marks: Marks, planned: Marks) -> str:
    """A node's mark before a run: `grow`, `pinned`, `dropped`, and `… (r)` for a change not planned yet."""
    if node in marks.dropped:
        return "dropped" if node in planned.dropped else "drop (r)"
    if node in marks.pins:
        return "pinned" if planned.pins.get(node) == marks.pins[node] else "pin (r)"
    if node in planned.pins:
        return "unpin (r)"
    if node in planned.dropped:
        return "undrop (r)"
    return "grow" if change is not None else ""


def node_rows(plan: Plan, marks: Marks, planned: Marks, progress: Mapping[str, tuple[str, str]] | None = None,
              colors: Mapping[str, str] | None = None) -> tuple[list[str], list[tuple[str | Text, ...]]]:
    """The table's keys and cells. `progress`: node → (run state, progress line) once a run started, in the
    fleet's order (a resumed fleet run carries out its recorded plan: its nodes are the rows)."""
    colors = colors or {}
    by_node = {c.node: c for c in plan.nodes}
    keys = list(progress) if progress is not None else row_keys(plan, marks)
    cells: list[tuple[str | Text, ...]] = []
    for node in keys:
        c = by_node.get(node)
        change = f"{size_short(c.from_size)} → {size_short(c.to_size)}" if c else \
            ("its recorded plan" if progress is not None else "not grown")
        cost = fmt_cost(c.cost) if c else "—"
        pods = pods_cell(c.pods) if c else "—"
        if progress is not None:
            state, line = progress.get(node, ("", ""))
            cells.append((node, change, cost, state_text(state, colors), line, pods))
        else:
            cells.append((node, change, cost, plan_state(c, node, marks, planned), pods,
                          method_text(c.method) if c else "—"))
    return keys, cells


def state_text(state: str, colors: Mapping[str, str]) -> Text:
    style = {"done": colors.get("status-ready", "green"), "running": colors.get("status-pending", "yellow"),
             "failed": colors.get("danger", "red"), "attention": colors.get("danger", "red")}.get(state, "dim")
    return Text(state or "—", style=style)


def node_detail(plan: Plan, node: str | None, marks: Marks) -> Text:
    """The highlighted node whole: before → after, how, cost, every pod it unblocks, its notes."""
    out = Text()
    if node is None:
        return Text("No node to grow.", style="dim")
    c = next((c for c in plan.nodes if c.node == node), None)
    if c is None:
        out.append(f"{node}: dropped — never grown. d takes it back, r re-plans.", style="bold")
        return out
    out.append(f"{c.node}: {size_long(c.from_size)} → {size_long(c.to_size)}", style="bold")
    out.append(f" · {method_text(c.method)} · cost {fmt_cost(c.cost)}")
    if node in marks.dropped:
        out.append(" · dropped: r re-plans without it", style="bold")
    elif node in marks.pins:
        out.append(" · pinned")
    out.append(f"\nunblocks {len(c.pods)}: {', '.join(c.pods) or 'no pod (pinned)'}")
    for note in c.notes:
        out.append(f"\nnote: {note}", style="dim")
    return out


def rest_text(plan: Plan, colors: Mapping[str, str], notes: tuple[str, ...] = ()) -> Text:
    """Pods placed on nodes as they are, every unplaceable pod with its reason, the plan's and inputs' notes."""
    out = Text()
    grown = {p for c in plan.nodes for p in c.pods}
    as_is = sorted((p, n) for p, n in plan.placements.items() if p not in grown)
    if as_is:
        out.append(f"fit without growing ({len(as_is)}): ", style="bold")
        out.append(", ".join(f"{p} → {n}" for p, n in as_is))
    if plan.unplaceable:
        if out:
            out.append("\n")
        n = len(plan.unplaceable)
        out.append(f"{n} pod{'' if n == 1 else 's'} no plan places:",
                   style=f"bold {colors.get('danger', 'red')}")
        for u in plan.unplaceable:
            out.append(f"\n  {u.pod}: ", style="bold")
            out.append(u.reason)
    for note in dict.fromkeys((*plan.notes, *notes)):  # the planner repeats the inputs' notes: each once
        out.append(("\n" if out else "") + f"note: {note}", style="dim")
    return out


def preview(plan: Plan) -> str:
    """What the confirmation lists: every node in run order, what it unblocks, the pods left, the total."""
    lines = [f"{len(plan.nodes)} node scale-ups, one node at a time (each the scale-up runbook: preflight, drain, "
             "journal, audit); the fleet stops at the first failure or needs-attention.", ""]
    for i, c in enumerate(plan.nodes, 1):
        lines.append(f"{i}. {c.node}: {size_long(c.from_size)} → {size_long(c.to_size)}, {method_text(c.method)}, "
                     f"cost {fmt_cost(c.cost)}")
        lines.append(f"   unblocks: {', '.join(c.pods) or '—'}")
        lines += [f"   note: {note}" for note in c.notes]
    for u in plan.unplaceable:
        lines.append(f"not placed: {u.pod}: {u.reason}")
    lines.append(f"total cost {fmt_cost(plan.cost)} · {gap_text(plan)}")
    return "\n".join(lines)


def nodes_target(nodes: tuple[str, ...] | list[str]) -> str:
    """The confirmation's title names every node it touches."""
    return f"{len(nodes)} node{'' if len(nodes) == 1 else 's'} ({', '.join(nodes)})"


def final_state(journal_status: str) -> str:
    """A node's state from the fleet journal once the run ended: "running" there is a node stopped mid-run
    (interrupted: resumable), which is the admin's to look at."""
    return "attention" if journal_status == "running" else journal_status


def state_after(kind: str, previous: str, status: str = "", message: str = "") -> str:
    """A node's run state after one fleet event: `status` is its node run's run-done status, when known."""
    if kind == "node-start":
        return "running"
    if kind == "node-done":
        return "done"
    if kind == "node-failed":
        return "attention" if status in ATTENTION or "attention" in message else "failed"
    return previous


def running_step_line(steps: list[StepState]) -> int | None:
    """The line of the running step in RunbookSteps.render_steps (a step is one line, two with its message shown),
    None when no step runs."""
    line = 0
    for st in steps:
        if st.status in ("running", "undoing"):
            return line
        line += 2 if st.message and st.status != "done" else 1
    return None


FLEET_LOG = {"node-start": ("▶", "scale-up starts"), "node-done": ("■", "done"), "node-failed": ("✗", "stopped"),
             "verify": ("·", "verify"), "done": ("■", "fleet ended")}


def fleet_log_line(kind: str, node: str, message: str) -> str:
    """A fleet event (not one of a node run's engine events) as a log line: `▶ w2: scale-up starts`."""
    icon, what = FLEET_LOG.get(kind, ("·", kind))
    head = f"{icon} {node}: " if node else f"{icon} "
    return head + (f"{what}: {message}" if message else what)
