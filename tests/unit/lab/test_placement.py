"""How a scenario's workloads reach the real control plane (console/lab/seed.py upstream_objects) and the taints
that place their pods (console/lab/placement.py), on nodes held in a dict: no control plane runs here."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from console.lab import scenarios, seed
from console.lab.placement import STEER_KEY, Placement

HPC = {"key": "dedicated", "value": "hpc", "effect": "NoSchedule"}
MASTER = {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def _names(items: list[tuple[str, dict]]) -> list[tuple[str, str]]:
    return [(r, o["metadata"]["name"]) for r, o in items]


def test_the_planner_scenario_places_its_running_pods_and_leaves_the_pending_ones_last():
    made = seed.upstream_objects(scenarios.PLANNER.objects)
    assert [(p.resource, p.obj["metadata"]["name"], p.nodes) for p in made.placed] == [
        ("deployments.apps", "api", ["kube-worker05"]), ("statefulsets.apps", "cache", ["kube-worker02"])]
    assert _names(made.last) == [("jobs.batch", "train"), ("pods", "etl"), ("pods", "solver-xl"),
                                 ("pods", "inference")]
    assert _names(made.first) == [("poddisruptionbudgets.policy", "cache-pdb")]
    # the controllers make their ReplicaSets and pods; the templates are the scenario's, without node affinity
    every = [*made.first, *((p.resource, p.obj) for p in made.placed), *made.last]
    assert not [r for r, _ in every if r == "replicasets.apps"]
    for _, obj in every:
        assert "uid" not in obj["metadata"] and "status" not in obj and "ownerReferences" not in obj["metadata"]
        template = (obj.get("spec") or {}).get("template") or {"spec": {}}
        assert "nodeAffinity" not in (template["spec"].get("affinity") or {})
    job = dict(made.last)["jobs.batch"]
    assert "selector" not in job["spec"] and "controller-uid" not in job["spec"]["template"]["metadata"]["labels"]


def test_a_workload_on_several_nodes_is_placed_pod_by_pod_in_its_order():
    made = seed.upstream_objects(scenarios.SEED_DRAIN.objects)
    assert [(p.obj["metadata"]["name"], p.nodes) for p in made.placed] == [
        ("frontend", ["kube-worker01", "kube-worker02"]), ("db", ["kube-worker02"])]
    assert _names(made.first) == [("poddisruptionbudgets.policy", "frontend-pdb"),
                                  ("poddisruptionbudgets.policy", "db-pdb"), ("daemonsets.apps", "node-exporter")]
    assert made.last == []


class _Nodes:
    """The part of the lab's ApiStore that Placement's taints use: nodes read, and edited as mutate() does (`fn`
    edits a copy, the result replaces the node)."""

    def __init__(self, taints: dict[str, list[dict]]) -> None:
        self.nodes = {name: {"metadata": {"name": name}, "spec": {"taints": [*own, NOT_READY]} if own else {},
                             "status": {}} for name, own in taints.items()}

    def get(self, resource: str, namespace: str | None, name: str) -> dict:
        assert resource == "nodes" and namespace is None
        return self.nodes[name]

    def list(self, resource: str, namespace: str | None) -> tuple[list[dict], int]:
        assert resource == "nodes" and namespace is None
        return list(self.nodes.values()), 1

    def mutate(self, resource: str, namespace: str | None, name: str, fn: Callable[[dict], Any]) -> dict:
        draft = copy.deepcopy(self.get(resource, namespace, name))
        self.nodes[name] = fn(draft) or draft
        return self.nodes[name]


def _taints(store: _Nodes, name: str) -> list[dict]:
    return [{k: t[k] for k in ("key", "value", "effect") if k in t}
            for t in store.get("nodes", None, name)["spec"].get("taints") or []]


def test_placing_on_a_node_taints_the_others_and_lifts_its_own_then_restores_them():
    own = {"cp": [MASTER], "w1": [HPC], "w2": []}
    store = _Nodes(own)
    placement = Placement(store, own)
    placement._taint("w1")
    steer = {"key": STEER_KEY, "value": "elsewhere", "effect": "NoSchedule"}
    assert _taints(store, "w1") == [NOT_READY]  # its own gone; what the node lifecycle controller set stays
    assert _taints(store, "cp") == [MASTER, NOT_READY, steer]
    assert _taints(store, "w2") == [steer]
    placement._taint(None)
    assert _taints(store, "w1") == [HPC, NOT_READY] and _taints(store, "cp") == [MASTER, NOT_READY]
    assert _taints(store, "w2") == []


def _tried(status: str, message: str) -> dict:
    return {"status": {"conditions": [{"type": "PodScheduled", "status": status, "reason": "Unschedulable",
                                       "message": message}]}}


def test_a_pending_pod_counts_as_tried_once_the_scheduler_saw_the_steering_taints_go():
    """kube-scheduler's first try at a Pending pod made right after the lab lifted its steering taints can come
    from its cache of the nodes as they were (its node informer behind the pod's): "2 node(s) had untolerated
    taint(s)" on a cluster where one node (the control plane) carries a taint. The lab waits for the try after
    (the taint change requeues the pod), whose message counts what the nodes carry. Seen in the suite: the seed-drain
    lab's nginx, "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 2 node(s) had untolerated
    taint(s)"."""
    own = {"cp": [MASTER], "w1": [], "w2": []}
    store = _Nodes(own)
    placement = Placement(store, own)
    placement._taint("w1")
    placement._taint(None)  # only the control plane carries a taint now
    stale = "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s). preemption: …"
    settled = "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint(s). preemption: …"
    assert not placement._tried_since_steering(_tried("False", stale))
    assert placement._tried_since_steering(_tried("False", settled))
    assert placement._tried_since_steering(_tried("False", "0/3 nodes are available: 3 Insufficient cpu."))
    assert placement._tried_since_steering(_tried("True", ""))  # bound
    assert not placement._tried_since_steering({"status": {}})  # not tried yet
    # older releases name each taint, one count per taint
    named = ("0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/master: }, "
             "1 node(s) had untolerated taint {lab.console/seeding: elsewhere}, 1 Insufficient cpu.")
    assert not placement._tried_since_steering(_tried("False", named))
