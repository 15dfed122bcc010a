"""labelSelector and fieldSelector parsing, as the API server accepts them."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from console.lab.kubeapi.status import ApiError
from console.lab.resources import ResourceType

Obj = dict[str, Any]
Match = Callable[[Obj], bool]

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_CMP_RE = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=|>|<)\s*([A-Za-z0-9_.-]*)\s*$")


def _split_requirements(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


def _label_requirement(req: str) -> Match:
    m = _CMP_RE.match(req)
    if m:
        key, op, value = m.groups()
        if op in ("=", "=="):
            return lambda labels: labels.get(key) == value
        if op == "!=":
            return lambda labels: labels.get(key) != value
        if not value.lstrip("-").isdigit():
            raise ApiError(400, "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer")
        bound = int(value)

        def compare(labels: Obj) -> bool:
            have = labels.get(key)
            if have is None or not have.lstrip("-").isdigit():
                return False
            return int(have) > bound if op == ">" else int(have) < bound

        return compare
    m = _SET_RE.match(req)
    if m:
        bang, key, op, values = m.groups()
        if op:
            if bang:
                raise ApiError(400, f"unable to parse requirement: {req.strip()}")
            wanted = {v.strip() for v in values.split(",") if v.strip()}
            if op == "in":
                return lambda labels: labels.get(key) in wanted
            return lambda labels: labels.get(key) not in wanted
        if bang:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise ApiError(400, f"unable to parse requirement: found '{req.strip()}', expected: identifier")


def label_selector(text: str | None) -> Match | None:
    """A predicate over an object's metadata.labels, or None for 'everything'."""
    if not text or not text.strip():
        return None
    reqs = [_label_requirement(r) for r in _split_requirements(text)]

    def match(obj: Obj) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(r(labels) for r in reqs)

    return match


def _path(*keys: str) -> Callable[[Obj], str]:
    def get(obj: Obj) -> str:
        cur: Any = obj
        for k in keys:
            if not isinstance(cur, dict):
                return ""
            cur = cur.get(k)
        if cur is None:
            return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get


_COMMON = {"metadata.name": _path("metadata", "name"), "metadata.namespace": _path("metadata", "namespace")}

# The fields each resource's API accepts in fieldSelector (the real API's field label conversion funcs).
FIELDS: dict[str, dict[str, Callable[[Obj], str]]] = {
    "pods": {
        **_COMMON,
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": lambda o: "true" if o.get("spec", {}).get("hostNetwork") else "false",
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "nodes": {**_COMMON, "spec.unschedulable": lambda o: "true" if o.get("spec", {}).get("unschedulable") else "false"},
    "namespaces": {**_COMMON, "status.phase": _path("status", "phase")},
    "events": {
        **_COMMON,
        **{
            f"involvedObject.{k}": _path("involvedObject", k)
            for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
        },
        "reason": _path("reason"),
        "reportingComponent": _path("reportingComponent"),
        "source": lambda o: o.get("source", {}).get("component", "") or o.get("reportingComponent", ""),
        "type": _path("type"),
    },
}


def field_selector(text: str | None, rt: ResourceType) -> Match | None:
    """A predicate from a fieldSelector; unsupported fields are a 400 like the real API."""
    if not text or not text.strip():
        return None
    fields = FIELDS.get(rt.key, _COMMON)
    reqs: list[Match] = []
    for raw in text.split(","):
        if not raw.strip():
            continue
        m = re.match(r"^\s*([^=!\s]+)\s*(==|!=|=)\s*(.*?)\s*$", raw)
        if not m:
            raise ApiError(400, f"invalid selector: '{text}'; can't understand '{raw}'")
        field, op, value = m.groups()
        getter = fields.get(field)
        if getter is None:
            if fields is _COMMON:
                raise ApiError(400, f'"{field}" is not a known field selector: only "metadata.name", '
                               '"metadata.namespace"')
            raise ApiError(400, f"field label not supported: {field}")
        reqs.append(_field_req(getter, op != "!=", value))

    def match(obj: Obj) -> bool:
        return all(r(obj) for r in reqs)

    return match


def _field_req(getter: Callable[[Obj], str], equal: bool, value: str) -> Match:
    if equal:
        return lambda o: getter(o) == value
    return lambda o: getter(o) != value


def combine(*matches: Match | None) -> Match | None:
    active = [m for m in matches if m is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]
    return lambda o: all(m(o) for m in active)
