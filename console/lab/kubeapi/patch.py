"""The three patch types the API server accepts: JSON merge, strategic merge, JSON patch."""

from __future__ import annotations

import copy
from typing import Any

from console.lab.kubeapi.status import ApiError

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, null deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


# Lists that strategic merge merges by key (patchMergeKey) instead of replacing, by path
# from the object root with list items adding no segment. `None` = a set of primitives
# (patchStrategy=merge without a key).
_MERGE_KEYS: dict[str, str | None] = {
    "metadata.ownerReferences": "uid",
    "metadata.finalizers": None,
    "spec.containers": "name",
    "spec.initContainers": "name",
    "spec.ephemeralContainers": "name",
    "spec.volumes": "name",
    "spec.imagePullSecrets": "name",
    "spec.hostAliases": "ip",
    "spec.resourceClaims": "name",
    "spec.podCIDRs": None,
    "status.conditions": "type",
    "status.addresses": "type",
    "status.podIPs": "ip",
    "status.hostIPs": "ip",
}
for _c in ("containers", "initContainers", "ephemeralContainers"):
    _MERGE_KEYS[f"spec.{_c}.env"] = "name"
    _MERGE_KEYS[f"spec.{_c}.ports"] = "containerPort"
    _MERGE_KEYS[f"spec.{_c}.volumeMounts"] = "mountPath"
    _MERGE_KEYS[f"spec.{_c}.volumeDevices"] = "devicePath"

_PATCH = "$patch"
_SET_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
_RETAIN = "$retainKeys"


def strategic_merge_patch(target: Any, patch: Any, path: str = "") -> Any:
    """A strategic merge patch for the built-in types the lab serves.

    Maps merge; lists with a known merge key merge element-wise (`$patch: delete`
    removes an element); other lists are replaced; `$setElementOrder`,
    `$deleteFromPrimitiveList` and `$retainKeys` directives are honoured.
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get(_PATCH) == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != _PATCH}
    if patch.get(_PATCH) == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    retain = patch.get(_RETAIN)
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in (_PATCH, _RETAIN):
            continue
        if key.startswith(_SET_ORDER):
            orders[key[len(_SET_ORDER):]] = value
            continue
        if key.startswith(_DELETE_PRIMITIVE):
            field = key[len(_DELETE_PRIMITIVE):]
            if isinstance(out.get(field), list):
                out[field] = [v for v in out[field] if v not in value]
            continue
        sub = f"{path}.{key}" if path else key
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list) and sub in _MERGE_KEYS:
            out[key] = _merge_list(out.get(key), value, _MERGE_KEYS[sub], sub)
        elif isinstance(value, dict):
            merged = strategic_merge_patch(out.get(key), value, sub)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        else:
            out[key] = copy.deepcopy(value)
    for field, order in orders.items():
        if isinstance(out.get(field), list):
            out[field] = _reorder(out[field], order, _MERGE_KEYS.get(f"{path}.{field}" if path else field))
    return out


def _merge_list(current: Any, patch: list[Any], key: str | None, path: str) -> list[Any]:
    items = list(current) if isinstance(current, list) else []
    if key is None:  # a set of primitives
        for v in patch:
            if v not in items:
                items.append(copy.deepcopy(v))
        return items
    if any(isinstance(p, dict) and p.get(_PATCH) == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and _PATCH in p)]
    for p in patch:
        if not isinstance(p, dict) or key not in p:
            raise ApiError(400, f"map: {p} does not contain declared merge key: {key}")
        idx = next((i for i, it in enumerate(items) if isinstance(it, dict) and it.get(key) == p[key]), None)
        if p.get(_PATCH) == "delete":
            if idx is not None:
                items.pop(idx)
            continue
        if idx is None:
            items.append(strategic_merge_patch({}, p, path))
        else:
            items[idx] = strategic_merge_patch(items[idx], p, path)
    return items


def _reorder(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    def ident(v: Any) -> Any:
        return v.get(key) if key and isinstance(v, dict) else v

    wanted = [ident(o) for o in order]
    ranked = {repr(w): i for i, w in enumerate(wanted)}
    return sorted(items, key=lambda it: ranked.get(repr(ident(it)), len(wanted)))


# -- RFC 6902 -----------------------------------------------------------------
def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, f"the server rejected our request due to an error in our request: "
                       f"JSON pointer must start with '/': {path}", "Invalid")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    cur = doc
    for p in parts[:-1]:
        if isinstance(cur, dict) and p in cur:
            cur = cur[p]
        elif isinstance(cur, list) and p.isdigit() and int(p) < len(cur):
            cur = cur[int(p)]
        else:
            raise _jp_error(f"doc is missing path: {'/' + '/'.join(parts)}")
    return cur, parts[-1]


def _jp_error(msg: str) -> ApiError:
    return ApiError(422, f"the server rejected our request due to an error in our request: {msg}", "Invalid")


def _get(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return doc
    parent, last = _parent(doc, parts)
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise _jp_error(f"doc is missing key: {'/' + '/'.join(parts)}")


def _remove(doc: Any, parts: list[str]) -> Any:
    parent, last = _parent(doc, parts)
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise _jp_error(f"unable to remove nonexistent key: {last}: missing value")


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent, last = _parent(doc, parts)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise _jp_error(f"add operation does not apply: index out of range: {last}")
    else:
        raise _jp_error(f"add operation does not apply: doc is missing path: {'/' + '/'.join(parts)}")
    return doc


def json_patch(doc: Any, ops: Any) -> Any:
    """Apply RFC 6902 operations to a deep copy of `doc`."""
    if not isinstance(ops, list):
        raise ApiError(400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise _jp_error("Unexpected kind: <nil>")
        kind, parts = op["op"], _pointer(op.get("path", ""))
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, parts)
        elif kind == "replace":
            _get(doc, parts)  # must exist
            if not parts:
                doc = copy.deepcopy(op.get("value"))
            else:
                parent, last = _parent(doc, parts)
                if isinstance(parent, list):
                    parent[int(last)] = copy.deepcopy(op.get("value"))
                else:
                    parent[last] = copy.deepcopy(op.get("value"))
        elif kind in ("move", "copy"):
            src = _pointer(op.get("from", ""))
            value = _remove(doc, src) if kind == "move" else copy.deepcopy(_get(doc, src))
            doc = _add(doc, parts, value)
        elif kind == "test":
            try:
                current = _get(doc, parts)
            except ApiError:
                raise _jp_error(f"testing value {op.get('path')} failed: missing value") from None
            if current != op.get("value"):
                raise _jp_error(f"testing value {op.get('path')} failed: test failed")
        else:
            raise _jp_error(f"Unexpected kind: {kind}")
    return doc
