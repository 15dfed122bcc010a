"""Single-object verbs: create, get, update, patch, delete (with dryRun) and the /status subresource."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import Any

from aiohttp import web

from console.lab.kubeapi import patch as patches
from console.lab.kubeapi import podsecurity, table
from console.lab.kubeapi.encoding import accept_params, json_response, read_json
from console.lab.kubeapi.listing import predicate, render_list
from console.lab.kubeapi.status import ApiError, object_details, success_body
from console.lab.kubeapi.validation import check_type, default_on_create, validate
from console.lab.resources import NFD_GROUP, RESOURCES, ResourceType
from console.lab.store import AlreadyExists, Conflict, NotFound, Store, now_iso

Obj = dict[str, Any]

# Deleting these returns the object (as the real registries do); others return a Success Status.
_RETURNS_OBJECT = {"pods", "namespaces"}


def dry_run(request: web.Request) -> bool:
    values = request.query.getall("dryRun", [])
    for v in values:
        if v != "All":
            raise ApiError(400, f'Invalid dryRun value: "{v}": valid values are "All"')
    return bool(values)


def conflict(rt: ResourceType, name: str) -> Conflict:
    group = f".{rt.group}" if rt.group else ""
    return Conflict(
        f'Operation cannot be fulfilled on {rt.plural}{group} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def _respond(request: web.Request, rt: ResourceType, obj: Obj, status: int = 200) -> web.Response:
    wanted = accept_params(request)
    if wanted and wanted["as"] == "Table":
        return json_response(table.table(rt.key, [obj], table_version=wanted.get("v", "v1"),
                                         include_object=request.query.get("includeObject", "Metadata")), status)
    if wanted and wanted["as"] == "PartialObjectMetadata":
        v = f"meta.k8s.io/{wanted.get('v', 'v1')}"
        return json_response({"kind": "PartialObjectMetadata", "apiVersion": v, "metadata": obj["metadata"]}, status)
    return json_response(obj, status)


def get_object(request: web.Request, store: Store, rt: ResourceType, ns: str | None, name: str) -> web.Response:
    return _respond(request, rt, store.get(rt.key, ns, name))


async def create_object(request: web.Request, store: Store, rt: ResourceType, ns: str | None) -> web.Response:
    body = await read_json(request)
    check_type(rt, body)
    meta = body.setdefault("metadata", {})
    if rt.namespaced:
        if meta.get("namespace") and ns and meta["namespace"] != ns:
            raise ApiError(400, "the namespace of the provided object does not match the namespace sent on "
                           "the request")
        meta["namespace"] = ns or meta.get("namespace") or "default"
    if not meta.get("creationTimestamp"):  # a client's `creationTimestamp: null` (kubectl's -o json): the server's
        meta.pop("creationTimestamp", None)
    validate(rt, body)
    default_on_create(rt, body)
    if rt.key == "pods":
        _admit_pod(store, body)
    if dry_run(request):
        return _respond(request, rt, _preview_create(store, rt, body), 201)
    return _respond(request, rt, store.create(rt.key, body), 201)


def _admit_pod(store: Store, pod: Obj) -> None:
    """Pod Security admission (the namespace's enforce level); a missing namespace is the create's 404."""
    try:
        namespace = store.get("namespaces", None, pod["metadata"]["namespace"])
    except NotFound:
        return
    podsecurity.admit(namespace, pod)


def _preview_create(store: Store, rt: ResourceType, body: Obj) -> Obj:
    obj = copy.deepcopy(body)
    meta = obj["metadata"]
    if not meta.get("name"):
        if not meta.get("generateName"):
            raise ApiError(422, f"{rt.kind} is invalid: metadata.name: Required value: name or generateName is "
                           "required", "Invalid")
        meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
    try:
        store.get(rt.key, meta.get("namespace"), meta["name"])
    except NotFound:
        pass
    else:
        group = f".{rt.group}" if rt.group else ""
        raise AlreadyExists(f'{rt.plural}{group} "{meta["name"]}" already exists')
    if rt.namespaced and rt.key != "events":
        store.get("namespaces", None, meta["namespace"])
    meta.setdefault("uid", str(uuid.uuid4()))
    meta.setdefault("creationTimestamp", now_iso())
    meta["generation"] = 1
    meta.pop("resourceVersion", None)
    obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
    return obj


def _write(
    request: web.Request,
    store: Store,
    rt: ResourceType,
    ns: str | None,
    name: str,
    build: Callable[[Obj], Obj],
) -> Obj:
    """Read-modify-write: `build` turns a copy of the current object into the new one.

    A resourceVersion in the new object is a precondition (409 when stale); the
    result is validated; with dryRun=All it is returned without being stored.
    """

    def fn(draft: Obj) -> Obj:
        current_rv = draft["metadata"]["resourceVersion"]
        new = build(draft)
        sent = (new.get("metadata") or {}).get("resourceVersion")
        if sent and sent != current_rv:
            raise conflict(rt, name)
        validate(rt, new)
        return new

    if dry_run(request):
        current = store.get(rt.key, ns, name)
        new = fn(copy.deepcopy(current))
        meta = new.setdefault("metadata", {})
        for keep in ("uid", "creationTimestamp", "name", "namespace", "resourceVersion"):
            if keep in current["metadata"]:
                meta[keep] = current["metadata"][keep]
        gen = current["metadata"].get("generation", 1)
        meta["generation"] = gen + 1 if new.get("spec") != current.get("spec") else gen
        new["apiVersion"], new["kind"] = rt.api_version, rt.kind
        return new
    return store.mutate(rt.key, ns, name, fn)


def _split_status(rt: ResourceType, sub: str | None, current: Obj, new: Obj) -> Obj:
    """Main-resource writes keep the stored status; /status writes change only status."""
    if "status" not in rt.subresources:
        return new
    if sub == "status":
        out = copy.deepcopy(current)
        out["status"] = new.get("status", {})
        if (new.get("metadata") or {}).get("resourceVersion"):
            out["metadata"]["resourceVersion"] = new["metadata"]["resourceVersion"]
        return out
    out = dict(new)
    if "status" in current:
        out["status"] = current["status"]
    else:
        out.pop("status", None)
    return out


async def update_object(
    request: web.Request, store: Store, rt: ResourceType, ns: str | None, name: str, sub: str | None
) -> web.Response:
    body = await read_json(request)
    check_type(rt, body)
    meta = body.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise ApiError(400, f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
    if rt.namespaced and meta.get("namespace") and meta["namespace"] != ns:
        raise ApiError(400, "the namespace of the provided object does not match the namespace sent on the request")
    if rt.namespaced:
        # the URL names the namespace; a body without one is still that object
        body["metadata"] = {**meta, "namespace": ns}

    def build(draft: Obj) -> Obj:
        return _split_status(rt, sub, draft, body)

    return _respond(request, rt, _write(request, store, rt, ns, name, build))


async def patch_object(
    request: web.Request, store: Store, rt: ResourceType, ns: str | None, name: str, sub: str | None
) -> web.Response:
    ctype = request.content_type
    allowed = [patches.JSON_PATCH, patches.MERGE_PATCH, patches.APPLY_PATCH]
    if rt.group != NFD_GROUP:  # built-in kinds take strategic merge patches; custom resources do not
        allowed.insert(2, patches.STRATEGIC_PATCH)
    if ctype not in allowed:
        raise ApiError(415, f"the body of the request was in an unknown format - accepted media types include: "
                       f"{', '.join(allowed)}")
    body = await read_json(request)
    if ctype == patches.APPLY_PATCH:
        return await _apply(request, store, rt, ns, name, body)

    def build(draft: Obj) -> Obj:
        if ctype == patches.JSON_PATCH:
            new = patches.json_patch(draft, body)
        elif ctype == patches.MERGE_PATCH:
            new = patches.merge_patch(draft, body)
        else:
            new = patches.strategic_merge_patch(draft, body)
        if not isinstance(new, dict):
            raise ApiError(422, "the server rejected our request due to an error in our request", "Invalid")
        return _split_status(rt, sub, draft, new)

    return _respond(request, rt, _write(request, store, rt, ns, name, build))


async def _apply(
    request: web.Request, store: Store, rt: ResourceType, ns: str | None, name: str, body: Any
) -> web.Response:
    """Server-side apply, simplified: create when missing, else a JSON merge (no field ownership)."""
    if not request.query.get("fieldManager"):
        raise ApiError(400, "PATCH /apply requests require fieldManager to be set")
    check_type(rt, body)
    try:
        store.get(rt.key, ns, name)
    except NotFound:
        body.setdefault("metadata", {})["name"] = name
        if rt.namespaced:
            body["metadata"]["namespace"] = ns
        validate(rt, body)
        default_on_create(rt, body)
        if dry_run(request):
            return _respond(request, rt, _preview_create(store, rt, body), 201)
        return _respond(request, rt, store.create(rt.key, body), 201)
    return _respond(request, rt, _write(request, store, rt, ns, name, lambda d: patches.merge_patch(d, body)))


async def _delete_options(request: web.Request) -> Obj:
    if request.can_read_body:
        raw = await request.read()
        if raw.strip():
            opts = await read_json(request)
            return opts if isinstance(opts, dict) else {}
    return {}


async def delete_object(
    request: web.Request, store: Store, rt: ResourceType, ns: str | None, name: str
) -> web.Response:
    opts = await _delete_options(request)
    current = store.get(rt.key, ns, name)
    pre = opts.get("preconditions") or {}
    if pre.get("uid") and pre["uid"] != current["metadata"].get("uid"):
        raise Conflict(f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                       f"{current['metadata'].get('uid')}")
    if pre.get("resourceVersion") and pre["resourceVersion"] != current["metadata"]["resourceVersion"]:
        raise Conflict(f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                       f"ResourceVersion in object meta: {current['metadata']['resourceVersion']}")
    if dry_run(request) or "All" in (opts.get("dryRun") or []):
        gone = current
    else:
        if rt.key == "namespaces":
            _empty_namespace(store, name)
        gone = store.delete(rt.key, ns, name)
    if rt.key in _RETURNS_OBJECT:
        return _respond(request, rt, gone)
    return json_response(success_body(200, object_details(rt, name, current["metadata"].get("uid"))))


def _empty_namespace(store: Store, namespace: str) -> None:
    for key, rt in RESOURCES.items():
        if rt.namespaced:
            for o in store.list(key, namespace)[0]:
                try:
                    store.delete(key, namespace, o["metadata"]["name"])
                except NotFound:
                    continue


async def delete_collection(request: web.Request, store: Store, rt: ResourceType, ns: str | None) -> web.StreamResponse:
    pred = predicate(request, rt)
    items, _ = store.list(rt.key, ns, pred)
    deleted = []
    if dry_run(request):
        deleted = items
    else:
        for o in items:
            try:
                deleted.append(store.delete(rt.key, o["metadata"].get("namespace"), o["metadata"]["name"]))
            except NotFound:
                continue
    return await render_list(request, rt, deleted, {"resourceVersion": str(store.resource_version)})
