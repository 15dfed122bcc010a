"""The lab's RBAC objects: the roles of the lab's `viewer` and `operator` (kube-apiserver reconciles its own
bootstrap policy; the read rules here are its `view` ClusterRole's, plugin/pkg/auth/authorizer/rbac/
bootstrappolicy/policy.go).

`lab-viewer`: get/list/watch on everything the lab serves except secrets — `view` plus the cluster-scoped
resources an admin's console reads (nodes, namespaces, NodeFeatureRules) — and never nodes/proxy.
`lab-operator`: what a scale-up and a revert call (console/runbook, console/kube/drain.py, nodeaccess.py,
leases.py): read what the plan reads, patch nodes (cordon), create pods/eviction (drain); in the node-debug
namespace create/get/list/watch/delete pods and get pods/log; in the lease namespace get/create/update leases.
No nodes/proxy, so the kubelet's configz is read over a debug pod (console/runbook/steps/kube.py).
"""

from __future__ import annotations

import contextlib
from typing import Any

from console.lab.resources import RBAC_GROUP

Obj = dict[str, Any]
READ = ["get", "list", "watch"]
VIEWER_USER, OPERATOR_USER = "viewer", "operator"
NODE_DEBUG_NAMESPACE = LEASE_NAMESPACE = "default"  # the console's defaults (console/config.py)


def _rule(verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None) -> Obj:
    r: Obj = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    if names:
        r["resourceNames"] = names
    return r


def _role(kind: str, name: str, rules: list[Obj], namespace: str = "") -> Obj:
    meta: Obj = {"name": name, "labels": {}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": kind, "metadata": meta, "rules": rules}


def _binding(kind: str, name: str, role_kind: str, role: str, subjects: list[tuple[str, str]],
             namespace: str = "") -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind, "name": role},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": k, "name": n} for k, n in subjects]}


_VIEW_RULES = [
    _rule(READ, [""], ["configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
                       "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services",
                       "services/status"]),
    _rule(READ, [""], ["bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
                       "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"]),
    _rule(READ, [""], ["namespaces"]),
    _rule(READ, ["apps"], ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                           "deployments/status", "replicasets", "replicasets/scale", "replicasets/status",
                           "statefulsets", "statefulsets/scale", "statefulsets/status"]),
    _rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    _rule(READ, ["coordination.k8s.io"], ["leases"]),
]


def lab_users() -> list[tuple[str, Obj]]:
    """(store key, object) of the roles and bindings of `viewer` and `operator`."""
    cr, crb = f"clusterroles.{RBAC_GROUP}", f"clusterrolebindings.{RBAC_GROUP}"
    role, rb = f"roles.{RBAC_GROUP}", f"rolebindings.{RBAC_GROUP}"
    cluster_reads = [
        _rule(READ, [""], ["nodes", "nodes/status"]),
        _rule(READ, ["nfd.k8s-sigs.io"], ["nodefeatures", "nodefeaturerules"]),
        _rule(READ, ["metrics.k8s.io"], ["nodes", "pods"]),
        _rule(READ, ["events.k8s.io"], ["events"]),
    ]
    operator = [
        *_VIEW_RULES, *cluster_reads,
        _rule(["patch", "update"], [""], ["nodes"]),  # cordon / uncordon (JSON patch of spec.unschedulable)
        _rule(["create"], [""], ["pods/eviction"]),  # drain: the Eviction API, in every namespace a pod runs in
    ]
    debug = [_rule(["create", "delete", "get", "list", "watch"], [""], ["pods"]), _rule(["get"], [""], ["pods/log"])]
    lease = [_rule(["get", "create", "update"], ["coordination.k8s.io"], ["leases"])]
    return [
        (cr, _role("ClusterRole", "lab-viewer", [*_VIEW_RULES, *cluster_reads])),
        (crb, _binding("ClusterRoleBinding", "lab-viewer", "ClusterRole", "lab-viewer", [("User", VIEWER_USER)])),
        (cr, _role("ClusterRole", "lab-operator", operator)),
        (crb, _binding("ClusterRoleBinding", "lab-operator", "ClusterRole", "lab-operator",
                       [("User", OPERATOR_USER)])),
        (role, _role("Role", "lab-operator-node-debug", debug, NODE_DEBUG_NAMESPACE)),
        (rb, _binding("RoleBinding", "lab-operator-node-debug", "Role", "lab-operator-node-debug",
                      [("User", OPERATOR_USER)], NODE_DEBUG_NAMESPACE)),
        (role, _role("Role", "lab-operator-leases", lease, LEASE_NAMESPACE)),
        (rb, _binding("RoleBinding", "lab-operator-leases", "Role", "lab-operator-leases",
                      [("User", OPERATOR_USER)], LEASE_NAMESPACE)),
    ]


def seed(store: Any, objects: list[tuple[str, Obj]]) -> None:
    """Create what is absent (a restarted API server reconciles, it does not duplicate)."""
    from console.lab.store import AlreadyExists

    for key, obj in objects:
        with contextlib.suppress(AlreadyExists):
            store.create(key, obj)
