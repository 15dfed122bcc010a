"""What the fleet runbook reads from the cluster between node runs: unavailable nodes, PodDisruptionBudgets that
would block a node's drain now, and where the planned pods run after it.

Unavailable is what `maxUnavailable` counts for a rolling node update (a node NotReady or cordoned:
spec.unschedulable), checked before each node run so the fleet never takes more nodes out than allowed.

At the end, where the planned pods run is counted per controller (console/runbook/placement.py): pods of one Job
or ReplicaSet are interchangeable for the plan, so a planned node's slot is filled by whichever of them runs there.

A PodDisruptionBudget blocks an eviction while its status.disruptionsAllowed is 0 (the eviction subresource
answers 429: kubernetes pkg/registry/core/pod/storage/eviction.go checkAndDecrement), so a drain of a node
holding a pod it selects would stop "needs attention" with the node cordoned. The fleet reads the budgets of
the pods the drain would evict (console/kube/drain.py's rules) before it starts a node and stops there
instead, before the node is cordoned or its VM touched.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from console.kube import drain as drains
from console.kube import nodes_ops, rest
from console.kube.model import NodeInfo
from console.kube.retrywatch import poll_again
from console.runbook import placement
from console.runbook.verify import failed_scheduling


def unavailable_nodes(api: Any) -> dict[str, str]:
    """Nodes NotReady or cordoned now: name → why ("NotReady", "cordoned", "NotReady, cordoned")."""
    items = rest.items(api, "/api/v1/nodes")
    out = {}
    for n in items:
        info = NodeInfo.from_api(n)
        why = [w for w, bad in (("NotReady", info.ready != "True"),
                                ("cordoned", bool((n.get("spec") or {}).get("unschedulable")))) if bad]
        if why:
            out[info.name] = ", ".join(why)
    return out


def blocking_budgets(pods: Iterable[Mapping[str, Any]], budgets: Iterable[Mapping[str, Any]]) -> list[str]:
    """"ns/pod (PodDisruptionBudget ns/pdb allows no disruption now)" for each pod a budget with
    disruptionsAllowed 0 selects (pure: `pods` are those the drain evicts, `budgets` the PDB objects)."""
    out = []
    for p, b in drains.budget_blocks(pods, budgets):
        meta, status = p.get("metadata") or {}, b.get("status") or {}
        ns = meta.get("namespace") or "default"
        out.append(f"{ns}/{meta.get('name')} (PodDisruptionBudget {ns}/{b['metadata']['name']} allows no "
                   f"disruption now: {status.get('currentHealthy', '?')} healthy, "
                   f"{status.get('desiredHealthy', '?')} needed)")
    return out


def pdb_blocked(api: Any, node: str) -> list[str]:
    """The pods on `node` whose eviction a PodDisruptionBudget would refuse now (see blocking_budgets)."""
    from kubernetes.client.exceptions import ApiException

    pods = nodes_ops.pods_on_node_raw(api, node)
    plan = drains.drain_plan(pods, daemonsets=drains.existing_daemonsets(api))
    evicted = {i.key for i in plan if i.action == "evict"}
    todo = [p for p in pods if f"{(p.get('metadata') or {}).get('namespace', 'default')}/"
            f"{(p.get('metadata') or {}).get('name')}" in evicted]
    if not todo:
        return []
    try:
        budgets = rest.items(api, "/apis/policy/v1/poddisruptionbudgets")
    except ApiException as e:
        if e.status == 403:
            return []  # may not list budgets: the drain's own 429 handling still stops the run
        raise
    return blocking_budgets(todo, budgets)


def verify_placements(api: Any, placements: Mapping[str, str], timeout: float, stop: Any = None,
                      candidates: Iterable[str] = ()) -> placement.Report:
    """Where the planned pods run, per controller (console/runbook/placement.py): every planned slot filled by a
    pod of its controller Running there, read from the API server at once for each look — never an object read
    earlier while waiting for another. Waits up to `timeout` while a slot is empty and a planned pod is still
    Pending (or bound, not started); `stop` ends the wait. `candidates`: the pods the node runs found Pending (their
    plans' advice), which may fill a slot of their controller in a planned pod's place. Each planned pod still
    Pending gets the scheduler's latest FailedScheduling message."""
    deadline = time.monotonic() + timeout
    wanted = set(candidates) - set(placements)

    def pause() -> None:
        if stop is not None:
            stop.wait(1.0)
        else:
            time.sleep(1.0)

    down = False
    while True:
        try:
            pods = read_pods(api, placements)
            spares = [p for n in (dict.fromkeys(placements.values()) if wanted else ())
                      for p in nodes_ops.pods_on_node_raw(api, n) if placement.key(p) in wanted]
        except Exception as e:  # the API server away for a moment: look again until the deadline, as the watches do
            if not poll_again(e, deadline, "the planned pods", down) or (stop is not None and stop.is_set()):
                raise
            down = True
            pause()
            continue
        down = False
        report = placement.report(placements, pods, spares)
        # a pod still Pending (unbound, or bound and not started) may yet fill an empty slot
        waiting = any(not r.ok and pods.get(r.pod) is not None and r.phase in ("Pending", "") for r in report.rows)
        if report.ok or not waiting or time.monotonic() >= deadline or (stop is not None and stop.is_set()):
            break
        pause()
    return report.explain(failed_scheduling(api, report.pending()))


def node_share(planned: list[str], placements: Mapping[str, str], pods: Mapping[str, Mapping[str, Any] | None],
               done_nodes: set[str]) -> list[str]:
    """The pods a fleet node's scale-up is for, as it starts (pure): its planned pods, each one that is no longer
    Pending (the scheduler put it on an earlier node, in the place of a twin) replaced by that twin — a planned,
    still Pending pod of the same controller whose own planned node is done."""
    from console.runbook.placement import controller_uid

    def pending(k: str) -> bool:
        p = pods.get(k) or {}
        return bool(p) and not (p.get("spec") or {}).get("nodeName") and (p.get("status") or {}).get("phase") in (
            "Pending", None)

    out: list[str] = []
    for k in planned:
        uid = controller_uid(pods.get(k))
        twin = None if pending(k) or not uid else next(
            (q for q, n in placements.items() if q not in planned and q not in out and n in done_nodes and pending(q)
             and controller_uid(pods[q]) == uid), None)
        out.append(twin or k)
    return out


def read_pods(api: Any, keys: Iterable[str]) -> dict[str, dict[str, Any] | None]:
    """"ns/name" → the pod object (None: not found)."""
    return {k: nodes_ops.get_pod_raw(api, *k.split("/", 1)) for k in keys}
