"""Pod subresources: binding (the scheduler's write), eviction (drain) and log."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from console.lab import disruption
from console.lab.kubeapi.encoding import json_response, read_json
from console.lab.kubeapi.objects import dry_run
from console.lab.kubeapi.status import ApiError, success_body
from console.lab.podlogs import PodLogs
from console.lab.store import Conflict, Store, WatchEvent, now_iso

Obj = dict[str, Any]
_TERMINAL = ("Succeeded", "Failed")


async def bind(request: web.Request, store: Store, ns: str, name: str | None) -> web.Response:
    """pods/NAME/binding, or the `bindings` collection when `name` is None (taken from the body)."""
    body = await read_json(request)
    if not isinstance(body, dict) or body.get("kind", "Binding") != "Binding":
        raise ApiError(400, "the body of the request was in an unknown format")
    body_name = (body.get("metadata") or {}).get("name")
    if name is None:
        if not body_name:
            raise ApiError(422, 'Binding "" is invalid: metadata.name: Required value: name is required', "Invalid")
        name = body_name
    elif body_name and body_name != name:
        raise ApiError(400, f"the name of the object ({body_name}) does not match the name on the URL ({name})")
    target = body.get("target") or {}
    node = target.get("name")
    if not node:
        raise ApiError(422, f'Binding.core "{name}" is invalid: target.name: Required value', "Invalid")
    if target.get("kind", "Node") != "Node":
        raise ApiError(422, f'Binding.core "{name}" is invalid: target.kind: Unsupported value', "Invalid")

    def assign(pod: Obj) -> Obj:
        if pod["metadata"].get("deletionTimestamp"):
            raise ApiError(409, f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is being '
                           "deleted, cannot be assigned to a host", "Conflict", {"name": name, "kind": "pods/binding"})
        current = pod.get("spec", {}).get("nodeName")
        if current:
            raise Conflict(f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already '
                           f'assigned to node "{current}"')
        pod.setdefault("spec", {})["nodeName"] = node
        conds = [c for c in pod.setdefault("status", {}).get("conditions") or [] if c.get("type") != "PodScheduled"]
        conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                      "lastTransitionTime": now_iso()})
        pod["status"]["conditions"] = conds
        return pod

    if dry_run(request):
        import copy

        assign(copy.deepcopy(store.get("pods", ns, name)))
    else:
        store.mutate("pods", ns, name, assign)
    return json_response(success_body(201), 201)


async def evict(request: web.Request, store: Store, ns: str, name: str) -> web.Response:
    body = await read_json(request)
    if not isinstance(body, dict) or body.get("kind", "Eviction") != "Eviction":
        raise ApiError(400, "the body of the request was in an unknown format")
    body_name = (body.get("metadata") or {}).get("name")
    if body_name and body_name != name:
        raise ApiError(400, "name in URL does not match name in Eviction object")
    pod = store.get("pods", ns, name)
    options = body.get("deleteOptions") or {}
    dry = dry_run(request) or "All" in (options.get("dryRun") or [])
    try:
        disruption.check_eviction(store, pod, dry_run=dry)
    except disruption.EvictionRefused as e:
        raise ApiError(e.code, e.message, e.reason, e.details) from None
    if not dry:
        # the API server marks the pod before deleting it (PodDisruptionConditions, GA in v1.31)
        def mark(draft: Obj) -> None:
            conds = [c for c in draft.setdefault("status", {}).get("conditions") or []
                     if c.get("type") != "DisruptionTarget"]
            conds.append({"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": now_iso(), "reason": "EvictionByEvictionAPI",
                          "message": "Eviction API: evicting"})
            draft["status"]["conditions"] = conds

        store.mutate("pods", ns, name, mark)
        store.delete("pods", ns, name)
    return json_response(success_body(201), 201)


def _tail(text: str, lines: int | None) -> str:
    if lines is None:
        return text
    if lines <= 0:
        return ""
    parts = text.splitlines(keepends=True)
    return "".join(parts[-lines:])


async def log(request: web.Request, store: Store, logs: PodLogs, ns: str, name: str) -> web.StreamResponse:
    pod = store.get("pods", ns, name)
    names = [c.get("name") for c in (pod.get("spec", {}).get("containers") or [])]
    inits = [c.get("name") for c in (pod.get("spec", {}).get("initContainers") or [])]
    container = request.query.get("container")
    if not container:
        if len(names) != 1:
            raise ApiError(400, f"a container name must be specified for pod {name}, choose one of: "
                           f"[{' '.join(names)}]" + (f" or one of the init containers: [{' '.join(inits)}]"
                                                     if inits else ""))
    elif container not in names + inits:
        raise ApiError(400, f"container {container} is not valid for pod {name}")
    tail_raw = request.query.get("tailLines")
    try:
        tail = int(tail_raw) if tail_raw else None
    except ValueError:
        raise ApiError(400, f"invalid tailLines: {tail_raw}") from None
    follow = request.query.get("follow") in ("true", "1")
    text = logs.read(ns, name)
    if not follow or pod.get("status", {}).get("phase") in _TERMINAL:
        return web.Response(text=_tail(text, tail), content_type="text/plain")
    return await _follow(request, store, logs, ns, name, tail)


async def _follow(
    request: web.Request, store: Store, logs: PodLogs, ns: str, name: str, tail: int | None
) -> web.StreamResponse:
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()
    done = asyncio.Event()

    def on_append(_chunk: str) -> None:
        loop.call_soon_threadsafe(wake.set)

    def on_pod(ev: WatchEvent) -> None:
        if ev.object["metadata"]["name"] != name:
            return
        if ev.type == "DELETED" or ev.object.get("status", {}).get("phase") in _TERMINAL:
            loop.call_soon_threadsafe(done.set)
            loop.call_soon_threadsafe(wake.set)

    # Followers only wake us; the text is always re-read by offset so nothing is lost or doubled.
    stop_logs = logs.follow(ns, name, on_append)
    unsubscribe = store.subscribe("pods", on_pod, namespace=ns)
    resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
    resp.enable_chunked_encoding()
    try:
        await resp.prepare(request)
        text = logs.read(ns, name)
        offset = len(text)
        if text:
            await resp.write(_tail(text, tail).encode())
        while True:
            await wake.wait()
            wake.clear()
            text = logs.read(ns, name)
            if len(text) > offset:
                await resp.write(text[offset:].encode())
                offset = len(text)
            if done.is_set():
                break
    finally:
        stop_logs()
        unsubscribe()
    await resp.write_eof()
    return resp
