"""Draining a node with `kubectl drain --ignore-daemonsets`'s semantics: a plan per pod, then evictions.

`drain_plan` is pure: it runs kubectl's pod filters (k8s.io/kubectl pkg/drain/filters.go, in its order:
DaemonSet, mirror, local storage, unreplicated; the first filter that says "do not delete" decides) and
returns, for every pod on the node, what happens to it:

- evict: it has a controller (or it has finished, or a flag allows it); kubectl's warning is kept;
- skip: a DaemonSet pod (the runbook drains as `--ignore-daemonsets` does), a mirror (static) pod, or the
  console's own node-access pod;
- blocked: no controller (needs `--force`) or emptyDir data (needs `--delete-emptydir-data`), with
  kubectl's reason.

`drain` evicts through the Eviction API (policy/v1, as kubectl does when the server lists pods/eviction;
`--force` still evicts, it only lets unmanaged pods be chosen), retries 429s (a PodDisruptionBudget) with
backoff until its timeout and then names the budget, and waits until each evicted pod is gone (404, or a
pod of the same name with another UID: pkg/drain/drain.go waitForDelete).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from console.kube import rest
from console.kube.nodes_ops import NodeOpError, _expr_matches, pods_on_node_raw, watch_until

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# the console's node-debug pods (console/kube/nodeaccess.py): never drained, the runbook itself uses them
MANAGED_BY = ("app.kubernetes.io/managed-by", "console")

FORCE, DELETE_EMPTYDIR = "--force", "--delete-emptydir-data"
# kubectl's own texts (pkg/drain/filters.go)
DAEMONSET_WARNING = "ignoring DaemonSet-managed Pods"
LOCAL_STORAGE_FATAL = "Pods with local storage (use --delete-emptydir-data to override)"
LOCAL_STORAGE_WARNING = "deleting Pods with local storage"
UNMANAGED_FATAL = "Pods that declare no controller (use --force to override)"
UNMANAGED_WARNING = "deleting Pods that declare no controller"
_FINISHED = ("Succeeded", "Failed")


class DrainBlocked(NodeOpError):
    """Pods on the node cannot be drained without --force / --delete-emptydir-data; `items` are those pods."""

    def __init__(self, node: str, items: list[DrainItem]) -> None:
        super().__init__(blocked_message(node, items))
        self.items = items


class DrainStuck(NodeOpError):
    """Evictions still refused (429, a PodDisruptionBudget) when the drain timeout ran out."""

    def __init__(self, message: str, budgets: list[str]) -> None:
        super().__init__(message)
        self.budgets = budgets


@dataclass(frozen=True)
class DrainItem:
    namespace: str
    name: str
    action: str  # evict | skip | blocked
    why: str = ""  # kubectl's reason / warning, or why it is skipped
    needs: tuple[str, ...] = ()  # blocked: the flags that would let it go
    controller: str = ""  # Kind/name of its controller, "" for none
    uid: str = ""
    lost: bool = False  # evicted only because of --force: no controller recreates it

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "name": self.name, "action": self.action, "why": self.why,
                "needs": list(self.needs), "controller": self.controller, "lost": self.lost}


def _controller_of(meta: dict[str, Any]) -> dict[str, Any] | None:
    """metav1.GetControllerOf: the ownerReference with controller: true."""
    return next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)


def _has_local_storage(pod: dict[str, Any]) -> bool:
    return any("emptyDir" in (v or {}) for v in (pod.get("spec") or {}).get("volumes") or [])


def classify(pod: dict[str, Any], *, force: bool = False, delete_emptydir_data: bool = False,
             daemonsets: set[tuple[str, str]] | None = None) -> DrainItem:
    """What `kubectl drain --ignore-daemonsets [--force] [--delete-emptydir-data]` does with one pod.

    `daemonsets` are the (namespace, name) of the DaemonSets that exist (None: assume every one does);
    a DaemonSet pod whose DaemonSet is gone is an orphan kubectl deletes only with --force.
    """
    meta = pod.get("metadata") or {}
    ns, name, uid = meta.get("namespace", "default"), meta.get("name", ""), meta.get("uid", "")
    phase = (pod.get("status") or {}).get("phase")
    finished = phase in _FINISHED
    ref = _controller_of(meta)
    controller = f"{ref.get('kind')}/{ref.get('name')}" if ref else ""

    def item(action: str, why: str = "", needs: tuple[str, ...] = (), lost: bool = False) -> DrainItem:
        return DrainItem(ns, name, action, why, needs, controller, uid, lost)

    if (meta.get("labels") or {}).get(MANAGED_BY[0]) == MANAGED_BY[1]:
        return item("skip", "the console's own node-access pod")
    if ref and ref.get("kind") == "DaemonSet" and ref.get("apiVersion") == "apps/v1" and not finished:
        if daemonsets is None or (ns, ref.get("name")) in daemonsets:
            return item("skip", DAEMONSET_WARNING)
        gone = f'daemonsets.apps "{ref.get("name")}" not found'
        return item("evict", gone, lost=True) if force else item("blocked", gone, (FORCE,))
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return item("skip", "mirror (static) pod: the kubelet owns it")
    needs: list[str] = []
    why = ""
    if _has_local_storage(pod) and not finished and not delete_emptydir_data:
        needs.append(DELETE_EMPTYDIR)
        why = LOCAL_STORAGE_FATAL
    if ref is None and not finished and not force:
        needs.append(FORCE)
        why = why or UNMANAGED_FATAL  # kubectl stops at the first failing filter; we name every flag needed
    if needs:
        return item("blocked", why, tuple(needs))
    if finished:
        return item("evict", f"finished ({phase})")
    if ref is None:
        return item("evict", UNMANAGED_WARNING, lost=True)
    if _has_local_storage(pod):
        return item("evict", LOCAL_STORAGE_WARNING)
    return item("evict")


def drain_plan(pods: Iterable[dict[str, Any]], *, force: bool = False, delete_emptydir_data: bool = False,
               daemonsets: set[tuple[str, str]] | None = None) -> list[DrainItem]:
    """Every pod on the node and its fate (see `classify`), sorted by namespace/name."""
    items = [classify(p, force=force, delete_emptydir_data=delete_emptydir_data, daemonsets=daemonsets)
             for p in pods]
    return sorted(items, key=lambda i: (i.namespace, i.name))


def blocked_message(node: str, items: list[DrainItem]) -> str:
    """kubectl's "cannot delete <reason>: pods" grouped per reason, then the flags that override them."""
    by_reason: dict[str, list[str]] = {}
    for i in items:
        by_reason.setdefault(i.why, []).append(i.key)
    parts = [f"cannot delete {why}: {', '.join(keys)}" for why, keys in by_reason.items()]
    flags = sorted({f for i in items for f in i.needs})
    lost = [i.key for i in items if FORCE in i.needs]
    text = f"drain of {node} refused: " + "; ".join(parts) + f". Rerun with {' '.join(flags)} to override"
    if lost:
        text += f" ({', '.join(lost)} will be deleted and not come back)"
    return text


def existing_daemonsets(api_client: Any) -> set[tuple[str, str]] | None:
    """(namespace, name) of every DaemonSet, one list call; None when the server has no apps/v1 DaemonSets."""
    from kubernetes.client.exceptions import ApiException

    try:
        items = rest.get(api_client, "/apis/apps/v1/daemonsets").get("items") or []
    except ApiException as e:
        if e.status in (403, 404):
            return None  # cannot tell: treat DaemonSet pods as managed, as their ownerReference says
        raise
    return {((o["metadata"].get("namespace") or "default"), o["metadata"]["name"]) for o in items}


def plan_node(api_client: Any, node: str, *, force: bool = False,
              delete_emptydir_data: bool = False) -> list[DrainItem]:
    return drain_plan(pods_on_node_raw(api_client, node), force=force, delete_emptydir_data=delete_emptydir_data,
                      daemonsets=existing_daemonsets(api_client))


# -- evictions -------------------------------------------------------------------------------------------
_BUDGET_RE = re.compile(r"disruption budget (\S+)")


def _status_body(e: Any) -> dict[str, Any]:
    try:
        body = json.loads(e.body or "{}")
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def budget_from_429(body: dict[str, Any]) -> tuple[str, str]:
    """(PDB name, the server's cause text) from an eviction's 429 Status (eviction.go checkAndDecrement)."""
    for cause in (body.get("details") or {}).get("causes") or []:
        msg = cause.get("message") or ""
        m = _BUDGET_RE.search(msg)
        if m:
            return m.group(1), msg
    return "", ""


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector; an empty or missing selector matches nothing (eviction.go)."""
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_expr_matches(e, labels) for e in selector.get("matchExpressions") or [])


def budget_blocks(pods: Iterable[Any], budgets: Iterable[Any]) -> list[tuple[Any, Any]]:
    """(pod, budget) for each pod a PodDisruptionBudget of its namespace selects while it allows no disruption now
    (status.disruptionsAllowed ≤ 0: the eviction subresource's check, pkg/registry/core/pod/storage/eviction.go
    checkAndDecrement) — the pods whose eviction would be refused (429) if tried now. Pure: API-shaped dicts."""
    stuck: dict[str, list[Any]] = {}
    for b in budgets:
        if int((b.get("status") or {}).get("disruptionsAllowed") or 0) <= 0:
            stuck.setdefault((b.get("metadata") or {}).get("namespace") or "default", []).append(b)
    out = []
    for p in pods:
        meta = p.get("metadata") or {}
        labels = meta.get("labels") or {}
        budget = next((b for b in stuck.get(meta.get("namespace") or "default", ())
                       if _selects((b.get("spec") or {}).get("selector"), labels)), None)
        if budget is not None:
            out.append((p, budget))
    return out


def budgets_for(api_client: Any, namespace: str, labels: dict[str, str]) -> list[str]:
    """Names of the PodDisruptionBudgets in `namespace` whose selector matches `labels`."""
    from kubernetes.client.exceptions import ApiException

    try:
        items = rest.get(api_client, "/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
                         params={"namespace": namespace}).get("items") or []
    except ApiException:
        return []  # no right to list them: the 429's own text still says why
    return [o["metadata"]["name"] for o in items if _selects((o.get("spec") or {}).get("selector"), labels)]


def drain(
    api_client: Any,
    node: str,
    *,
    force: bool = False,
    delete_emptydir_data: bool = False,
    timeout: float = 120.0,
    on_progress: Callable[[str], None] = lambda _m: None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[DrainItem]:
    """Evict what `drain_plan` says (refusing a blocked node first), honouring PodDisruptionBudgets.

    `sleep` waits between retries of refused evictions (a runbook passes one that a stop request cuts short).

    Raises DrainBlocked (nothing evicted), DrainStuck (429s until `timeout`), NodeOpError, TimeoutError.
    """
    from kubernetes.client.exceptions import ApiException

    pods = {(p["metadata"].get("namespace", "default"), p["metadata"]["name"]): p
            for p in pods_on_node_raw(api_client, node)}
    plan = drain_plan(pods.values(), force=force, delete_emptydir_data=delete_emptydir_data,
                      daemonsets=existing_daemonsets(api_client))
    blocked = [i for i in plan if i.action == "blocked"]
    if blocked:
        raise DrainBlocked(node, blocked)
    todo = [i for i in plan if i.action == "evict"]
    deadline = time.monotonic() + timeout
    delay = 0.5
    refused: dict[str, str] = {}  # pod key -> why (PDB and the server's cause)
    evicted: list[str] = []
    budgets: dict[str, set[str]] = {}
    while todo:
        waiting = []
        for item in todo:
            body = {"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": item.name, "namespace": item.namespace}}
            try:
                rest.send(api_client, "POST", "/api/v1/namespaces/{namespace}/pods/{name}/eviction", body,
                          params={"namespace": item.namespace, "name": item.name})
                on_progress(f"evicted {item.key}" + (" (no controller: it will not come back)" if item.lost else ""))
                refused.pop(item.key, None)
                evicted.append(item.key)
            except ApiException as e:
                if e.status == 404:
                    continue
                if e.status != 429:
                    msg = _status_body(e).get("message") or e.reason
                    raise NodeOpError(f"evicting {item.key}: {e.status} {msg}") from e
                name, cause = budget_from_429(_status_body(e))
                labels = (pods.get((item.namespace, item.name), {}).get("metadata") or {}).get("labels") or {}
                names = [name] if name else budgets_for(api_client, item.namespace, labels)
                budgets[item.key] = {f"{item.namespace}/{n}" for n in names}
                refused[item.key] = cause or _status_body(e).get("message") or "429 Too Many Requests"
                waiting.append(item)
        todo = waiting
        if todo:
            if time.monotonic() + delay > deadline:
                raise _stuck(node, todo, refused, budgets, timeout, evicted)
            on_progress("; ".join(f"{i.key}: eviction refused ({refused[i.key]}), retrying in {delay:g}s"
                                  for i in todo))
            sleep(delay)
            delay = min(delay * 2, 5.0)  # kubectl retries every 5 s (EvictErrorRetryDelay)
    for item in plan:
        if item.action == "evict":
            def gone(o: dict[str, Any] | None, uid: str = item.uid) -> bool:
                return o is None or o["metadata"].get("uid") != uid

            watch_until(api_client, "pod", item.name, gone, max(1.0, deadline - time.monotonic()),
                        namespace=item.namespace)
    return plan


def _stuck(node: str, todo: list[DrainItem], refused: dict[str, str], budgets: dict[str, set[str]],
           timeout: float, evicted: list[str]) -> DrainStuck:
    names = sorted({b for i in todo for b in budgets.get(i.key, set())})
    pods = ", ".join(f"{i.key} ({refused[i.key]})" for i in todo)
    which = f"PodDisruptionBudget {', '.join(names)}" if names else "a PodDisruptionBudget"
    done = f"evicted so far: {', '.join(evicted)}" if evicted else "nothing evicted"
    return DrainStuck(
        f"{which} still refuses to evict {pods} after {timeout:g}s; {node} stays cordoned ({done}). Wait for "
        f"the budget's pods to become healthy, scale the workload up or relax the budget "
        f"(kubectl get pdb -n {todo[0].namespace}), then run the scale-up again to resume (or raise "
        "--drain-timeout)", names)

