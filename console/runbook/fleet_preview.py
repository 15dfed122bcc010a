"""The fleet run's preview: what `console plan --apply` prints and the TUI's confirmation shows, the plan and what
each node's scale-up will do (console/runbook/scaleup.render_plan)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from console.runbook.fleet import Fleet


def size_text(s: dict[str, Any]) -> str:
    return f"{s.get('vcpus')} vCPU / {s.get('memory')}" + (f" ({s['flavor']})" if s.get("flavor") else "")


def render_preview(fleet: Fleet, preview: list[tuple[dict[str, Any], Any]]) -> str:
    from console.runbook.scaleup import render_plan

    doc = fleet.plan_doc
    changes = {n["node"]: n for n in doc.get("nodes") or []}
    head = (f"Fleet run {fleet.fleet_id} (resumed: its recorded plan)" if fleet.resuming
            else f"Fleet run of the plan: {len(preview)} nodes, cost {doc.get('cost')}"
            + ("" if doc.get("optimal") else f" (not proven optimal, gap {doc.get('gap')})"))
    pace = "one node at a time" if fleet.parallel <= 1 else \
        f"up to {fleet.parallel} nodes at a time, never two on one hypervisor"
    lines = [head, f"  {pace}, at most {fleet.max_unavailable} node(s) unavailable"]
    if fleet.plan_differs:
        lines.append(f"  note: the plan computed now differs from the one fleet {fleet.fleet_id} recorded; the "
                     "recorded plan is carried out (a fleet is never re-planned). To drop it instead: "
                     f"mv {fleet.journal.path} {fleet.journal.path}.discarded")  # type: ignore[union-attr]
    for i, (e, plan) in enumerate(preview, 1):
        c = changes.get(e["node"], {})
        lines.append(f"{i}. {e['node']} ({e['method']}{' on ' + e['host'] if e['host'] else ''}): "
                     f"{size_text(c.get('from') or {})} → {size_text(c.get('to') or {})}, cost {c.get('cost')}"
                     + (f"; unblocks {', '.join(c['pods'])}" if c.get("pods") else ""))
        if plan is None:
            lines.append(f"   done (scale-up run {e['run_id']})")
            continue
        if e["status"] != "pending":
            lines.append(f"   {e['status']}" + (f" (scale-up run {e['run_id']})" if e["run_id"] else "")
                         + (f": {e['message']}" if e["message"] else ""))
        lines.extend("   " + line for line in render_plan(plan).splitlines())
    placements = doc.get("placements") or {}
    if placements:
        lines.append("then verified, counted per controller (a Job's or ReplicaSet's pods may take each other's "
                     "places): " + ", ".join(f"{p} on {n}" for p, n in placements.items()))
    for u in doc.get("unplaceable") or []:
        lines.append(f"not placed: {u['pod']}: {u['reason']}")
    return "\n".join(lines)
