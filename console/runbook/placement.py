"""Where the pods a plan placed run now, counted per controller (pure: pod objects in, a report out).

A plan puts each Pending pod on a node; for the pods of one controller (a Job's, a ReplicaSet's) that is a count
per node, not a pairing: the scheduler takes a controller's equal Pending pods in its own queue order
(kube-scheduler's PrioritySort plugin, pkg/scheduler/framework/plugins/queuesort/priority_sort.go `Less`:
priority, then the time queued), not the plan's. So a planned node holds
*slots* of a controller — "one pod of job/train on kube-worker01" — and a slot is filled by whichever pod of that
controller runs there. A pod without a controller fills only its own slot.

What counts as running is what the API server says of the pod: bound to a node (spec.nodeName) and phase Running.
A pod the report counts is named with the node it runs on; every planned pod not counted is named with what it is
instead (Pending — the caller adds the scheduler's FailedScheduling message —, bound but not started, running on
another node, deleted). Used by the fleet's final verify (console/runbook/fleet_checks.verify_placements) and by
a fleet node's verify-pods step (console/runbook/verify.share_report).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Pod = Mapping[str, Any]


def key(pod: Pod) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def controller_uid(pod: Pod | None) -> str:
    """The uid of the pod's controller (metav1.GetControllerOf, apimachinery pkg/apis/meta/v1/controller_ref.go: the
    ownerReference with controller: true), "" for a bare pod."""
    return _controller(pod).get("uid") or ""


def controller_name(pod: Pod | None) -> str:
    """`job/train`, `replicaset/api-5d8` (kubectl's kind/name, kind lower-cased); "" for a bare pod."""
    ref = _controller(pod)
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}" if ref.get("uid") else ""


def _controller(pod: Pod | None) -> Mapping[str, Any]:
    refs = ((pod or {}).get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), {})


def running_on(pod: Pod | None) -> str:
    """The node the pod runs on now: bound there and phase Running; "" otherwise."""
    if not pod:
        return ""
    node = (pod.get("spec") or {}).get("nodeName") or ""
    return node if node and (pod.get("status") or {}).get("phase") == "Running" else ""


def state(pod: Pod | None) -> str:
    """What a pod not Running on a node is: "deleted", "Pending", "bound to w1, Pending", "Succeeded on w1", "not
    bound to any node (phase Running)"."""
    if pod is None:
        return "deleted"
    node = (pod.get("spec") or {}).get("nodeName") or ""
    phase = (pod.get("status") or {}).get("phase") or ""
    if node:
        return f"{phase} on {node}" if phase in ("Succeeded", "Failed") else \
            f"bound to {node}, {phase or 'not started'}"
    return "Pending" if phase in ("Pending", "") else f"not bound to any node (phase {phase})"


@dataclass
class Row:
    """One planned pod: where the plan put it (`node`), where it runs now (`runs_on`), whether it fills a slot of
    its controller (`ok`), and what it is when it does not (`why`)."""

    pod: str
    node: str
    controller: str
    runs_on: str
    phase: str
    ok: bool = False
    why: str = ""
    reason: str = ""  # Pending: the scheduler's latest FailedScheduling message

    @property
    def said(self) -> str:
        return f"{self.why}: {self.reason}" if self.reason else self.why

    def to_dict(self) -> dict[str, Any]:
        return {"pod": self.pod, "node": self.node, "controller": self.controller, "runs_on": self.runs_on,
                "phase": self.phase, "ok": self.ok, "why": self.said}


@dataclass
class Group:
    """The planned pods of one controller (or one bare pod) and the slots they fill: (node, pod) counted."""

    controller: str  # "" for a bare pod
    rows: list[Row]
    filled: list[tuple[str, str]] = field(default_factory=list)

    @property
    def planned(self) -> int:
        return len(self.rows)

    @property
    def running(self) -> int:
        return len(self.filled)

    @property
    def ok(self) -> bool:
        return self.running == self.planned

    def missing(self) -> list[str]:
        """The planned nodes with a slot no pod fills (a node once per empty slot)."""
        left = Counter(r.node for r in self.rows)
        left.subtract(n for n, _ in self.filled)
        return sorted(n for n, k in left.items() for _ in range(max(0, k)))

    def text(self) -> str:
        if not self.controller:
            [r] = self.rows
            return f"{r.pod} Running on {r.runs_on}" if r.ok else f"{r.pod} (planned on {r.node}) {r.said}"
        out = f"{self.running} of {self.planned} pods of {self.controller} Running"
        if self.filled:
            out += " (" + ", ".join(f"{n}: {_short(p)}" for n, p in sorted(self.filled)) + ")"
        if missing := self.missing():
            out += f"; none on {', '.join(dict.fromkeys(missing))}"
        return "".join([out, *(f"; {_short(r.pod)} {r.said}" for r in self.rows if not r.ok)])


@dataclass
class Report:
    rows: list[Row]
    groups: list[Group]

    @property
    def ok(self) -> bool:
        return all(g.ok for g in self.groups)

    def texts(self) -> list[str]:
        """One line per controller (per bare pod)."""
        return [g.text() for g in self.groups]

    def pending(self) -> list[str]:
        """The planned pods not bound to any node (the ones a FailedScheduling message explains)."""
        return [r.pod for r in self.rows if r.why == "Pending"]

    def explain(self, reasons: Mapping[str, str]) -> Report:
        """Give each Pending pod its reason (`reasons`: pod → the scheduler's latest FailedScheduling message)."""
        for r in self.rows:
            if r.why == "Pending" and reasons.get(r.pod):
                r.reason = reasons[r.pod]
        return self

    def running(self) -> dict[str, str]:
        """Pod → the node it runs on, for every pod this report counts or names Running (none that is not)."""
        out = {p: n for g in self.groups for n, p in g.filled}
        return out | {r.pod: r.runs_on for r in self.rows if r.runs_on}

    def problems(self) -> list[str]:
        """The planned pods a node's share still waits for (pure; as the single-node runbook accepts, a planned
        pod Running on another node is not one): per controller, as many of its planned pods that run nowhere
        as it has empty slots beyond those running elsewhere."""
        out = []
        for g in self.groups:
            elsewhere = sum(1 for r in g.rows if not r.ok and r.runs_on)
            short = g.planned - g.running - elsewhere
            out += [r.pod for r in g.rows if not r.ok and not r.runs_on][:max(0, short)]
        return out

    def to_dicts(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.rows]


def report(placements: Mapping[str, str], pods: Mapping[str, Pod | None], spares: Iterable[Pod] = ()) -> Report:
    """Fill each controller's planned slots (`placements`: pod → node) from the pods as read (`pods`: each planned
    pod's object, None when deleted): first each planned pod Running on its own planned node, then each planned pod
    Running on another slot node of its controller, then `spares` — pods not planned that were Pending with them
    (a node's run may count them: console/runbook/verify.py) — on a slot node of their controller."""
    groups: dict[str, Group] = {}
    for k, node in placements.items():
        p = pods.get(k)
        uid = controller_uid(p)
        row = Row(k, node, controller_name(p), running_on(p), ((p or {}).get("status") or {}).get("phase") or "")
        groups.setdefault(uid or f"pod:{k}", Group(row.controller, [])).rows.append(row)
    free = {uid: Counter(r.node for r in g.rows) for uid, g in groups.items()}  # each group's empty slots
    for uid, g in groups.items():
        for own in (True, False):
            for r in g.rows:
                if not r.ok and r.runs_on and free[uid][r.runs_on] > 0 and (r.runs_on == r.node) == own:
                    free[uid][r.runs_on] -= 1
                    r.ok = True
                    g.filled.append((r.runs_on, r.pod))
    for sp in spares:
        uid, node = controller_uid(sp), running_on(sp)
        if uid not in free or not node or key(sp) in placements or free[uid][node] <= 0:
            continue
        free[uid][node] -= 1
        groups[uid].filled.append((node, key(sp)))
    for g in groups.values():
        slots = {r.node for r in g.rows}
        for r in g.rows:
            if r.ok:
                continue
            p = pods.get(r.pod)
            if not r.runs_on:
                r.why = state(p)
            elif not g.controller:
                r.why = f"runs on {r.runs_on}, not on {r.node}"
            elif r.runs_on in slots:
                r.why = f"runs on {r.runs_on}, beyond the pods of {g.controller} planned there"
            else:
                r.why = f"runs on {r.runs_on}, not on a node planned for {g.controller}"
    rows = [r for g in groups.values() for r in g.rows]
    order = {k: i for i, k in enumerate(placements)}
    return Report(sorted(rows, key=lambda r: order[r.pod]), list(groups.values()))


def _short(pod: str) -> str:
    return pod.split("/", 1)[-1]
