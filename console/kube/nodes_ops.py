"""Node operations for the scale-up runbook: read, watch-wait, cordon/uncordon (the drain: console/kube/drain.py).

Blocking calls on the kubernetes client (run them in a worker thread). Waits use
a watch on the one object (fieldSelector metadata.name), so a change is seen as
soon as the API server sends it, not at the next poll.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from console.kube import rest
from console.kube.model import NodeInfo, PodInfo
from console.kube.rest import LIST_PAGE

NODE = "/api/v1/nodes/{name}"
POD = "/api/v1/namespaces/{namespace}/pods/{name}"


class NodeOpError(Exception):
    """A node operation failed; the message says what and why."""


class NodeNotFound(NodeOpError):
    """The API server has no node of that name (404)."""


def _raw(api_client: Any, path: str, params: dict[str, str] | None = None, /, **options: Any) -> dict[str, Any]:
    """GET → the JSON dict. A read that gets no byte for 30 s fails (as the caches' reads: console/kube/cache.py
    REQUEST_TIMEOUT) instead of hanging on a connection the server no longer serves; the waits (retrywatch.py)
    then try again."""
    from console.kube.cache import REQUEST_TIMEOUT

    return rest.get(api_client, path, params=params, timeout=REQUEST_TIMEOUT, **options)


def _raw_items(api_client: Any, path: str, params: dict[str, str] | None = None, /, *, page: int = LIST_PAGE,
               **options: Any) -> list[dict[str, Any]]:
    """Every item of a list, read in pages (rest.items), each read with the timeout above."""
    from console.kube.cache import REQUEST_TIMEOUT

    return rest.items(api_client, path, params=params, page=page, timeout=REQUEST_TIMEOUT, **options)


def get_node(api_client: Any, name: str) -> NodeInfo:
    return NodeInfo.from_api(get_node_raw(api_client, name))


def get_node_raw(api_client: Any, name: str) -> dict[str, Any]:
    from kubernetes.client.exceptions import ApiException

    try:
        return _raw(api_client, NODE, {"name": name})
    except ApiException as e:
        if e.status == 404:
            raise NodeNotFound(f"node {name} not found") from e
        raise NodeOpError(f"reading node {name}: {e.status} {e.reason}") from e


def pods_on_node(api_client: Any, node: str) -> list[PodInfo]:
    return [PodInfo.from_api(p) for p in pods_on_node_raw(api_client, node)]


def pods_on_node_raw(api_client: Any, node: str) -> list[dict[str, Any]]:
    return _raw_items(api_client, "/api/v1/pods", field_selector=f"spec.nodeName={node}")


def get_pod_raw(api_client: Any, namespace: str, name: str) -> dict[str, Any] | None:
    from kubernetes.client.exceptions import ApiException

    try:
        return _raw(api_client, POD, {"namespace": namespace, "name": name})
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def pending_pods(api_client: Any, node: NodeInfo | None = None, *, page: int = LIST_PAGE) -> list[PodInfo]:
    """Unbound Pending pods (read in pages); with `node`, only those whose node selector and required affinity
    allow it."""
    items = _raw_items(api_client, "/api/v1/pods", page=page,
                       field_selector="status.phase=Pending,spec.nodeName=")
    return [PodInfo.from_api(p) for p in items
            if not (p.get("spec") or {}).get("nodeName") and (node is None or selects_node(p, node))]


def _expr_matches(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    """One nodeSelectorRequirement / LabelSelectorRequirement: the planner's matcher, which follows
    component-helpers nodeaffinity (Gt/Lt: exactly one value, Go's ParseInt)."""
    from console.planner.constraints import requirement_matches

    return requirement_matches(expr, labels)


def selects_node(pod: dict[str, Any], node: NodeInfo) -> bool:
    """Whether the pod's nodeSelector and required node affinity allow `node` (taints aside)."""
    spec = pod.get("spec") or {}
    labels = dict(node.labels)
    labels.setdefault("kubernetes.io/hostname", node.name)
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True

    def term_ok(term: dict[str, Any]) -> bool:
        fields = {"metadata.name": node.name}
        return (all(_expr_matches(e, labels) for e in term.get("matchExpressions") or [])
                and all(_expr_matches(e, fields) for e in term.get("matchFields") or []))

    return any(term_ok(t) for t in terms)  # terms are ORed, expressions within a term ANDed


def latest_failed_scheduling(api_client: Any, namespace: str, name: str) -> str | None:
    """The newest FailedScheduling event message for a pod (why it is still Pending)."""
    data = _raw(
        api_client, "/api/v1/namespaces/{namespace}/events", {"namespace": namespace},
        field_selector=f"involvedObject.name={name},involvedObject.kind=Pod,reason=FailedScheduling",
    )
    items = data.get("items") or []
    if not items:
        return None

    def stamp(ev: dict[str, Any]) -> str:
        meta = ev.get("metadata") or {}
        return ev.get("lastTimestamp") or ev.get("eventTime") or meta.get("creationTimestamp") or ""

    return max(items, key=stamp).get("message")


def watch_until(
    api_client: Any,
    kind: str,
    name: str,
    predicate: Callable[[dict[str, Any] | None], bool],
    timeout: float,
    *,
    namespace: str = "",
) -> dict[str, Any] | None:
    """Block until `predicate(obj)` holds for the node/pod `name` (obj None: deleted); return it.

    Reads the object, then watches it (fieldSelector metadata.name) from its resourceVersion; a watch that ends
    or fails is started again from the last resourceVersion seen, a 410 reads it again, and an API server that is
    away is waited for until the timeout (console/kube/retrywatch.py). Raises WaitTimedOut (a TimeoutError) with
    the last state seen and, when the server was away at the end, since when.
    """
    from kubernetes.client.exceptions import ApiException

    from console.kube import retrywatch

    if kind == "node":
        one, params, lister = NODE, {"name": name}, rest.Lister(api_client, "/api/v1/nodes")
    else:
        one, params = POD, {"namespace": namespace, "name": name}
        lister = rest.Lister(api_client, "/api/v1/namespaces/{namespace}/pods", {"namespace": namespace})
    last: dict[str, Any] | None = None
    seen = False

    def read_it() -> tuple[bool, str | None]:
        nonlocal last, seen
        try:
            last = _raw(api_client, one, params)
        except ApiException as e:
            if e.status != 404:
                raise
            last = None
        seen = True
        return predicate(last), ((last or {}).get("metadata") or {}).get("resourceVersion")

    def changed(event: str, obj: dict[str, Any]) -> bool:
        nonlocal last
        last = None if event == "DELETED" else obj
        return predicate(last)

    waited = retrywatch.until(lister, read=read_it, on_event=changed, deadline=time.monotonic() + timeout,
                              what=f"{kind} {f'{namespace}/' if namespace else ''}{name}",
                              field_selector=f"metadata.name={name}")
    if waited.done:
        return last
    raise retrywatch.WaitTimedOut(f"{kind} {name}: condition not met within {timeout:g}s{waited.outage}", last, seen,
                                  waited.outage)


# -- cordon / drain ------------------------------------------------------------------------------


def set_unschedulable(api_client: Any, name: str, value: bool,
                      annotations: dict[str, str | None] | None = None) -> tuple[bool, bool]:
    """Cordon (True) or uncordon (False) with optimistic concurrency; returns (before, after).

    `annotations` are set (a value) or removed (None) in the same JSON patch, so the node never shows one without
    the other (the runbook marks the cordon it makes: console/runbook/cordon.py)."""
    from kubernetes.client.exceptions import ApiException

    for _ in range(5):
        node = get_node_raw(api_client, name)
        before = bool((node.get("spec") or {}).get("unschedulable"))
        ops = annotation_patch(node, annotations or {})
        if before == value and not ops:
            return before, value
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": node["metadata"]["resourceVersion"]},
            {"op": "add", "path": "/spec/unschedulable", "value": value},
            *ops,
        ]
        try:
            rest.send(api_client, "PATCH", NODE, patch, params={"name": name},
                      content_type="application/json-patch+json")
            return before, value
        except ApiException as e:
            if e.status not in (409, 422):
                raise NodeOpError(f"{'cordon' if value else 'uncordon'} {name}: {e.status} {e.reason}") from e
    raise NodeOpError(f"{'cordon' if value else 'uncordon'} {name}: the node kept changing (conflicts)")


def annotation_patch(node: dict[str, Any], want: dict[str, str | None]) -> list[dict[str, Any]]:
    """JSON patch operations (RFC 6902; a key's "/" escaped as "~1", RFC 6901) that make the node's annotations
    hold `want` (None: absent); none for what is already so."""
    have = (node.get("metadata") or {}).get("annotations")
    if have is None:
        added = {k: v for k, v in want.items() if v is not None}
        return [{"op": "add", "path": "/metadata/annotations", "value": added}] if added else []
    ops: list[dict[str, Any]] = []
    for key, value in want.items():
        path = "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1")
        if value is None and key in have:
            ops.append({"op": "remove", "path": path})
        elif value is not None and have.get(key) != value:
            ops.append({"op": "add", "path": path, "value": value})
    return ops

