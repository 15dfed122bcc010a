"""Whose cordon is it: the console marks the cordon it makes, so no run takes it for an admin's.

A cordon is spec.unschedulable and nothing else: `kubectl cordon` patches that one field (kubectl
pkg/drain/cordon.go), so the node does not say who cordoned it. A run that dies, or whose journal is discarded,
leaves its cordon behind; the next run, on this machine or another, would record it as "cordoned before the
run" and leave the node cordoned for good. So the console writes the annotation `console/cordoned-by: <run id>`
in the same JSON patch that cordons (console/kube/nodes_ops.py set_unschedulable), and removes it in the patch
that uncordons: the mark is on the node, where every later run and the admin (`kubectl describe node`) see it,
and never there without the cordon it marks. kured keeps what it knew before its drain on the node the same
way (the annotation `kured.dev/node-unschedulable-before-drain`, kubereboot/kured
internal/k8soperations/annotations.go) — a journal on one bastion would not reach a run started from another.

A cordoned node with the mark is the console's; without it, someone else's (an admin's, kept as it is). The
mark outlives a `kubectl uncordon`, which changes only spec.unschedulable: an uncordoned node's mark means
nothing (the next cordon by the console rewrites it), but if the admin cordons that node again by hand before
any console run, the run takes that cordon for its own — remove the annotation after uncordoning a node the
console left cordoned (`kubectl annotate node NODE console/cordoned-by-`).

`ending()` is what a run says of its node when it ends: every run that leaves the node cordoned says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from console.kube import nodes_ops

MARK = "console/cordoned-by"


def marked_by(node_raw: dict[str, Any]) -> str | None:
    """The run whose cordon this is (None: the node is not cordoned, or not by the console)."""
    if not (node_raw.get("spec") or {}).get("unschedulable"):
        return None
    return ((node_raw.get("metadata") or {}).get("annotations") or {}).get(MARK)


def someone_elses(node_raw: dict[str, Any]) -> bool:
    """Cordoned, and not by the console: a cordon a run must leave in place."""
    return bool((node_raw.get("spec") or {}).get("unschedulable")) and marked_by(node_raw) is None


def cordon(api: Any, node: str, run_id: str) -> None:
    """Cordon the node, marked as run `run_id`'s (one patch)."""
    nodes_ops.set_unschedulable(api, node, True, {MARK: run_id})


def uncordon(api: Any, node: str) -> None:
    """Uncordon the node and remove the console's mark (one patch)."""
    nodes_ops.set_unschedulable(api, node, False, {MARK: None})


def mark_left(node_raw: dict[str, Any]) -> bool:
    """The node carries the console's mark (cordoned or not): an uncordon that finds it removes it."""
    return MARK in ((node_raw.get("metadata") or {}).get("annotations") or {})


@dataclass(frozen=True)
class Left:
    """A node a run ends with cordoned: by whom ("console", "admin": before the run, "other": during it,
    "unknown": the node could not be read) and the sentence that says so."""

    by: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"by": self.by, "message": self.message}


def ending(api: Any, node: str, was_cordoned: bool | None, run_id: str = "") -> Left | None:
    """How the run leaves `node`, read from the API server now (None: not cordoned). `was_cordoned`: the run found
    the node cordoned by someone else (its journal's fact; None: the run did not reach its cordon step, or has
    none — a kubelet-only run)."""
    from urllib3.exceptions import HTTPError

    try:
        raw = nodes_ops.get_node_raw(api, node)
    except (nodes_ops.NodeOpError, HTTPError, OSError) as e:  # the run's result stands; this line says what is unknown
        return Left("unknown", f"cannot tell whether {node} is left cordoned ({e}): check with "
                               f"`kubectl get node {node}`")
    if not (raw.get("spec") or {}).get("unschedulable"):
        return None
    uncordon_it = f"`kubectl uncordon {node}` lets pods schedule on it"
    owner = marked_by(raw)
    if owner is not None and owner == run_id:
        return Left("console", f"{node} is left cordoned by this run: resuming it uncordons the node; "
                               f"{uncordon_it} now")
    if owner is not None:
        return Left("console", f"{node} is left cordoned by the console's run {owner}: {uncordon_it}")
    if was_cordoned or was_cordoned is None:  # None: the run stopped before its cordon step
        return Left("admin", f"{node} is left cordoned, as it was before the run: {uncordon_it}")
    return Left("other", f"{node} is cordoned, not by this run (cordoned while it ran): {uncordon_it}")
