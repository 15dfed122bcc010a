"""What the fleet runbook reads from the cluster between node runs: unavailable nodes, PodDisruptionBudgets that
would block a node's drain now, and whether the planned pods run where the plan put them.

Unavailable is what `maxUnavailable` counts for a rolling node update (a node NotReady or cordoned:
spec.unschedulable), checked before each node run so the fleet never takes more nodes out than allowed.

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
from console.kube import nodes_ops
from console.kube.model import NodeInfo
from console.kube.raw import raw_json
from console.kube.retrywatch import WaitTimedOut


def unavailable_nodes(api: Any) -> dict[str, str]:
    """Nodes NotReady or cordoned now: name → why ("NotReady", "cordoned", "NotReady, cordoned")."""
    from kubernetes import client

    items = raw_json(client.CoreV1Api(api).list_node(_preload_content=False)).get("items") or []
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
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    pods = nodes_ops.pods_on_node_raw(api, node)
    plan = drains.drain_plan(pods, daemonsets=drains.existing_daemonsets(api))
    evicted = {i.key for i in plan if i.action == "evict"}
    todo = [p for p in pods if f"{(p.get('metadata') or {}).get('namespace', 'default')}/"
            f"{(p.get('metadata') or {}).get('name')}" in evicted]
    if not todo:
        return []
    try:
        resp = client.PolicyV1Api(api).list_pod_disruption_budget_for_all_namespaces(_preload_content=False)
    except ApiException as e:
        if e.status == 403:
            return []  # may not list budgets: the drain's own 429 handling still stops the run
        raise
    return blocking_budgets(todo, raw_json(resp).get("items") or [])


def placement_problem(pod: Mapping[str, Any] | None, node: str) -> tuple[bool, str]:
    """(settled, why not as planned; "" when it runs on `node`) for one pod object (None: deleted)."""
    if pod is None:
        return True, "deleted"
    bound = (pod.get("spec") or {}).get("nodeName") or ""
    phase = (pod.get("status") or {}).get("phase") or ""
    if bound and bound != node:
        return True, f"runs on {bound}, not on {node}" if phase == "Running" else f"bound to {bound} ({phase})"
    if bound == node and phase == "Running":
        return True, ""
    if bound == node:
        return phase in ("Succeeded", "Failed"), f"{phase or 'not yet Running'} on {node}"
    return False, "still Pending"


def placement_results(placements: Mapping[str, str], pods: Mapping[str, Mapping[str, Any] | None]
                      ) -> list[dict[str, Any]]:
    """[{"pod", "node", "ok", "why", "instead"}] for the planned placements (pure; `pods`: each planned pod's object,
    None when deleted). A placement is a slot: pod P on node N. Pods of one controller are interchangeable (the
    scheduler takes a Job's or ReplicaSet's Pending pods in its own queue order — PrioritySort: priority, then
    time queued — not in the plan's), so P's slot is filled when P runs on N, or when another planned pod of the
    same controller, itself not on its own planned node, runs on N (`instead` names it)."""
    from console.runbook.verify import controller_uid

    uid = {k: controller_uid(dict(pods.get(k) or {})) if pods.get(k) else "" for k in placements}
    out: dict[str, dict[str, Any]] = {
        k: {"pod": k, "node": n, "ok": False, "why": placement_problem(pods.get(k), n)[1], "instead": ""}
        for k, n in placements.items()}
    for r in out.values():
        r["ok"] = not r["why"]

    def bound(k: str) -> str:
        p = pods.get(k) or {}
        return (p.get("spec") or {}).get("nodeName") or "" if (p.get("status") or {}).get("phase") == "Running" else ""

    spare = [k for k, r in out.items() if not r["ok"] and bound(k) and uid[k]]  # running off their own slot
    for r in out.values():
        if r["ok"] or not uid[r["pod"]]:
            continue
        twin = next((k for k in spare if uid[k] == uid[r["pod"]] and bound(k) == r["node"]), None)
        if twin is not None:
            spare.remove(twin)
            r.update(ok=True, instead=twin, why="")
    return list(out.values())


def verify_placements(api: Any, placements: Mapping[str, str], timeout: float,
                      stop: Any = None) -> list[dict[str, Any]]:
    """Every planned pod Running on its planned node (or an interchangeable twin in its place: placement_results),
    waiting up to `timeout` for those not settled yet; a pod still Pending says the scheduler's latest
    FailedScheduling message."""
    deadline = time.monotonic() + timeout
    pods: dict[str, Any] = {}
    for key, node in placements.items():
        ns, name = key.split("/", 1)

        def settled(p: dict[str, Any] | None, node: str = node) -> bool:
            return placement_problem(p, node)[0] or bool(p and (p.get("spec") or {}).get("nodeName")
                                                          and (p.get("status") or {}).get("phase") == "Running")

        try:
            pods[key] = nodes_ops.watch_until(api, "pod", name, settled, max(0.5, deadline - time.monotonic()),
                                              namespace=ns)
        except WaitTimedOut as e:  # as the watch saw it last (the server may be away now)
            pods[key] = e.last if e.seen else nodes_ops.get_pod_raw(api, ns, name)
        if stop is not None and stop.is_set():
            break
    out = placement_results({k: placements[k] for k in pods}, pods)
    for r in out:
        if r["why"] == "still Pending":
            ns, name = r["pod"].split("/", 1)
            r["why"] += ": " + (nodes_ops.latest_failed_scheduling(api, ns, name) or "no FailedScheduling event")
    return out


def node_share(planned: list[str], placements: Mapping[str, str], pods: Mapping[str, Mapping[str, Any] | None],
               done_nodes: set[str]) -> list[str]:
    """The pods a fleet node's scale-up is for, as it starts (pure): its planned pods, each one that is no longer
    Pending (the scheduler put it on an earlier node, in the place of a twin) replaced by that twin — a planned,
    still Pending pod of the same controller whose own planned node is done."""
    from console.runbook.verify import controller_uid

    def pending(k: str) -> bool:
        p = pods.get(k) or {}
        return bool(p) and not (p.get("spec") or {}).get("nodeName") and (p.get("status") or {}).get("phase") in (
            "Pending", None)

    out: list[str] = []
    for k in planned:
        uid = controller_uid(dict(pods.get(k) or {})) if pods.get(k) else ""
        twin = None if pending(k) or not uid else next(
            (q for q, n in placements.items() if q not in planned and q not in out and n in done_nodes and pending(q)
             and controller_uid(dict(pods[q] or {})) == uid), None)
        out.append(twin or k)
    return out


def read_pods(api: Any, keys: Iterable[str]) -> dict[str, dict[str, Any] | None]:
    """"ns/name" → the pod object (None: not found)."""
    return {k: nodes_ops.get_pod_raw(api, *k.split("/", 1)) for k in keys}
