"""What this user may do on the cluster: the reads each screen needs and the actions the console offers.

`review(api_client, settings)` asks the API server once (at start and on a context switch), as
`kubectl auth can-i --list` does: a SelfSubjectRulesReview (authorization.k8s.io/v1) per namespace the console
touches, and "" for what holds cluster-wide; where a rules review is incomplete (webhook authorizers:
EKS, GKE, ...) or refused, one SelfSubjectAccessReview per permission still unanswered, as `kubectl auth can-i`
does. The user's name comes from a SelfSubjectReview (authentication.k8s.io/v1, `kubectl auth whoami`) when the
server serves it. Rules are matched as the API server matches them (console/kube/rbacrules.py).

The needs are what the code calls (console/runbook, console/kube/drain.py, nodeaccess.py, leases.py,
nodes_ops.py, nfdstore.py): a missing one is named in the message an action is disabled or refused with —
`scale-up needs: patch nodes, create pods/eviction, create pods in default`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from console.kube import rbacrules

COORDINATION, POLICY, APPS = "coordination.k8s.io", "policy", "apps"
NFD_GROUP, METRICS_GROUP = "nfd.k8s-sigs.io", "metrics.k8s.io"
TIMEOUT_S = 10.0


@dataclass(frozen=True, order=True)
class Need:
    """One permission: `verb` on `resource[/subresource]` of `group`, in `namespace` ("" = cluster-wide, which
    for a namespaced resource means every namespace)."""

    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    namespace: str = ""

    def __str__(self) -> str:
        what = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        if self.group:
            what = f"{what}.{self.group}"
        return f"{self.verb} {what} in {self.namespace}" if self.namespace else f"{self.verb} {what}"


def _read(resource: str, group: str = "", namespace: str = "", verbs: tuple[str, ...] = ("list", "watch")
          ) -> tuple[Need, ...]:
    return tuple(Need(v, resource, group, namespace=namespace) for v in verbs)


# per data set a screen shows: the list+watch (or list) its cache or loader makes
READS: dict[str, tuple[Need, ...]] = {
    "nodes": _read("nodes"),
    "pods": _read("pods"),
    "events": _read("events"),
    "nodefeatures": _read("nodefeatures", NFD_GROUP),
    "nodefeaturerules": _read("nodefeaturerules", NFD_GROUP),
    "metrics": (Need("list", "nodes", METRICS_GROUP), Need("list", "pods", METRICS_GROUP)),
    "leases": _read("leases", COORDINATION, verbs=("list",)),
}


def _setting(settings: Any, name: str, default: str) -> str:
    return str(getattr(settings, name, None) or default)


def _lock_needs(settings: Any) -> tuple[Need, ...]:
    """console/runbook/lock.py: the node's Lease, read, created, renewed and released (update) in lease_namespace."""
    ns = _setting(settings, "lease_namespace", "default")
    return tuple(Need(v, "leases", COORDINATION, namespace=ns) for v in ("get", "create", "update"))


def _node_access_needs(settings: Any) -> tuple[Need, ...]:
    """console/kube/nodeaccess.py DebugPodAccess: list/delete leftovers, create the pod, watch it, read its log."""
    if _setting(settings, "node_access", "debug-pod") != "debug-pod":
        return ()  # ssh / guest-agent: no Kubernetes permission
    ns = _setting(settings, "node_debug_namespace", "default")
    return (*(Need(v, "pods", namespace=ns) for v in ("create", "get", "list", "watch", "delete")),
            Need("get", "pods", subresource="log", namespace=ns))


def _drain_needs() -> tuple[Need, ...]:
    """console/kube/drain.py: the node's pods, the DaemonSets and budgets that decide, the Eviction API."""
    return (Need("patch", "nodes"), Need("list", "pods"), Need("list", "daemonsets", APPS),
            Need("list", "poddisruptionbudgets", POLICY), Need("create", "pods", subresource="eviction"))


def action_needs(action: str, settings: Any) -> tuple[Need, ...]:
    """The permissions `action` calls for with these settings (unknown actions need nothing known: ())."""
    identity = (Need("get", "namespaces"),)  # console/runbook/identity.py reads kube-system's uid
    node = (Need("get", "nodes"),)
    # nodes_ops.watch_until: read, then watch by metadata.name (the node's return; the planned pods Running)
    waits = (Need("watch", "nodes"), Need("get", "pods"), Need("watch", "pods"))
    if action in ("cordon", "uncordon", "label", "taint"):
        return (*node, Need("patch", "nodes"))
    if action == "drain":
        return (*node, *_drain_needs())
    if action == "scale-up":
        return _unique((*identity, *node, *_drain_needs(), *waits, *_lock_needs(settings),
                        *_node_access_needs(settings)))
    if action == "kubelet-restart":  # a scale-up whose VM already has the target: no cordon, drain or VM change
        return _unique((*identity, *node, Need("list", "pods"), *waits, *_lock_needs(settings),
                        *_node_access_needs(settings)))
    if action == "revert":
        return _unique((*identity, *node, Need("patch", "nodes"), Need("watch", "nodes"), *_lock_needs(settings)))
    if action in ("rule-apply", "nfd-apply"):
        return tuple(Need(v, "nodefeaturerules", NFD_GROUP) for v in ("get", "create", "update"))
    if action == "rule-delete":
        return (Need("get", "nodefeaturerules", NFD_GROUP), Need("delete", "nodefeaturerules", NFD_GROUP))
    if action in ("hook-save", "nfd-push"):
        if _setting(settings, "hook_store", "cluster") == "directory":
            return ()
        # the nodes' hostPath (NFD's manifests) through node access; a ConfigMap volume's target asks for
        # its own namespace's configmaps when it writes (console/kube/nfdfiles_cm.py)
        return _node_access_needs(settings)
    return ()


ACTIONS = ("cordon", "uncordon", "label", "drain", "scale-up", "revert", "rule-apply", "rule-delete", "hook-save")


def _unique(needs: Iterable[Need]) -> tuple[Need, ...]:
    return tuple(dict.fromkeys(needs))


@dataclass(frozen=True)
class Access:
    """The answer of `review`: rules per namespace reviewed, and the access reviews asked where rules did not
    tell. `unknown` says why permissions could not be read ("" when they could); then nothing is refused."""

    unknown: str = ""
    user: str = ""
    # namespace -> (resourceRules, complete)
    rules: Mapping[str, tuple[tuple[dict[str, Any], ...], bool]] = field(default_factory=dict)
    answers: Mapping[Need, bool] = field(default_factory=dict)  # SelfSubjectAccessReview per Need

    def allows(self, need: Need) -> bool | None:
        """True/False as the API server would decide; None when it cannot be told."""
        if need in self.answers:
            return self.answers[need]
        scopes = [need.namespace] if need.namespace in self.rules else []
        if need.namespace and "" in self.rules:
            scopes.append("")  # cluster role bindings hold in every namespace
        for ns in scopes:
            rules, _ = self.rules[ns]
            if any(rbacrules.resource_allows(r, need.verb, need.group, need.resource, need.subresource)
                   for r in rules):
                return True
        # no: known only where the need's own scope was reviewed completely (a RoleBinding elsewhere may grant it)
        own = self.rules.get(need.namespace)
        return False if own is not None and own[1] else None

    def missing(self, needs: Iterable[Need]) -> list[Need]:
        """The needs this user is known not to hold, in order (unknown ones are not missing)."""
        return [n for n in _unique(needs) if self.allows(n) is False]

    def why_not(self, action: str, settings: Any) -> str:
        missing = self.missing(action_needs(action, settings))
        return f"{action} needs: {', '.join(map(str, missing))}" if missing else ""

    def cannot_read(self, what: str) -> str:
        return self.cannot(READS.get(what, ()))

    def cannot(self, needs: Iterable[Need]) -> str:
        """What of `needs` this user may not do, as the screens say it ("" when nothing is known missing)."""
        missing = self.missing(needs)
        if not missing:
            return ""
        return f"cannot {', '.join(map(str, missing))} (forbidden for {self.user or 'this user'})"


class MissingPermissions(Exception):
    """An action refused before any change: the API server would refuse `missing` to this user (exit 2; JSON adds
    `details()`: {"error": "forbidden", "missing": [...]})."""

    def __init__(self, action: str, missing: list[Need], user: str = "") -> None:
        self.action, self.missing, self.user = action, missing, user
        super().__init__(f"refused before any change: {action} needs: {', '.join(map(str, missing))}, which the "
                         f"API server does not allow {f'user {user}' if user else 'this user'} (RBAC) — ask for "
                         "them (a Role/ClusterRole binding) or use a context that has them")

    def details(self) -> dict[str, Any]:
        return {"error": "forbidden", "missing": [str(n) for n in self.missing]}


def require(access: Access, action: str, settings: Any, needs: Iterable[Need] | None = None) -> None:
    """MissingPermissions when `access` knows this user lacks a need of `action` (or of `needs`, when the plan
    calls for fewer); permissions that could not be read refuse nothing (the API server still decides)."""
    missing = access.missing(action_needs(action, settings) if needs is None else needs)
    if missing:
        raise MissingPermissions(action, missing, access.user)


def everything(settings: Any) -> tuple[Need, ...]:
    """Every need of every read and action with these settings: what `review` must answer."""
    return _unique([*(n for needs in READS.values() for n in needs),
                    *(n for a in ACTIONS for n in action_needs(a, settings))])


class _Refused(Exception):
    pass


def _post(call: Any, body: dict[str, Any]) -> dict[str, Any]:
    """POST a review through the typed client; a refusal (403, not served, invalid) is _Refused."""
    from kubernetes.client.rest import ApiException

    from console.faults import status_message

    try:
        resp = call(body, _preload_content=False, _request_timeout=TIMEOUT_S)
    except ApiException as e:
        if e.status in (400, 403, 404, 405, 422):
            raise _Refused(f"HTTP {e.status} {status_message(e) or e.reason}") from e
        raise
    return json.loads(resp.data)


def _whoami(api_client: Any) -> str:
    from kubernetes import client

    try:
        doc = _post(client.AuthenticationV1Api(api_client).create_self_subject_review,
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    except _Refused:
        return ""
    return str(((doc.get("status") or {}).get("userInfo") or {}).get("username") or "")


def _rules_review(api_client: Any, namespace: str) -> tuple[tuple[dict[str, Any], ...], bool] | None:
    from kubernetes import client

    try:
        doc = _post(client.AuthorizationV1Api(api_client).create_self_subject_rules_review, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": namespace}})
    except _Refused:
        return None
    status = doc.get("status") or {}
    return tuple(status.get("resourceRules") or ()), not status.get("incomplete")


def _access_review(api_client: Any, need: Need) -> bool:
    attrs = {"verb": need.verb, "resource": need.resource, "group": need.group}
    if need.subresource:
        attrs["subresource"] = need.subresource
    if need.namespace:
        attrs["namespace"] = need.namespace
    from kubernetes import client

    doc = _post(client.AuthorizationV1Api(api_client).create_self_subject_access_review, {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attrs}})
    return bool((doc.get("status") or {}).get("allowed"))


def review(api_client: Any, settings: Any, extra: Iterable[Need] = (), *, target: Any = None) -> Access:
    """Ask the API server what this user may do (never raises: a failure is `Access.unknown`); `extra`: needs
    beyond the settings' (e.g. a namespace the admin picked for NodeFeatures), reviewed too. `target`: the
    connection's KubeTarget (console/kube/connection.py), so a failure names the kubeconfig, context and user
    actually in use (else the settings' kubeconfig and context)."""
    from console import faults

    if target is not None:
        where = faults.Where(target.kubeconfig, target.context, server=target.server)
    else:
        where = faults.Where(getattr(settings, "kubeconfig", None) or "", getattr(settings, "context", None) or "")

    needs = _unique([*everything(settings), *extra])
    namespaces = ["", *sorted({n.namespace for n in needs if n.namespace})]
    user = ""
    try:
        user = _whoami(api_client)
        rules = {ns: got for ns in namespaces if (got := _rules_review(api_client, ns)) is not None}
        partial = Access(user=user, rules=rules)
        answers = {n: _access_review(api_client, n) for n in needs if partial.allows(n) is None}
    except _Refused as e:
        return Access(unknown=f"the API server did not say what this user may do ({e})", user=user)
    except Exception as e:  # unreachable, TLS, 401: the console's other calls meet it too
        fault = faults.classify(e, where)
        return Access(unknown=f"permissions could not be read: {fault.message if fault else e}", user=user)
    return Access(user=user, rules=rules, answers=answers)
