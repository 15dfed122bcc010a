"""list (with selectors and limit/continue pagination) and watch."""

from __future__ import annotations

import asyncio
import base64
import bisect
import itertools
import json
import time
from collections import OrderedDict
from typing import Any

from aiohttp import web
from aiohttp.client_exceptions import ClientConnectionResetError

from console.lab.kubeapi import table
from console.lab.kubeapi.encoding import accept_params, dumps, json_response, send_list
from console.lab.kubeapi.selectors import Match, combine, field_selector, label_selector
from console.lab.kubeapi.status import ApiError, status_body
from console.lab.resources import ResourceType
from console.lab.store import Gone, Store, WatchEvent

Obj = dict[str, Any]

SNAPSHOT_TTL = 300.0  # like the API server's continue-token lifetime (etcd compaction)
MAX_SNAPSHOTS = 16
BOOKMARK_EVERY = 60.0
# k8s.io/apiserver/pkg/storage/etcd3/errors.go: what a list from a compacted revision is told
EXPIRED_LIST = "The resourceVersion for the provided list is too old."
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list.")


def _sort_key(o: Obj) -> tuple[str, str]:
    m = o["metadata"]
    return (m.get("namespace", ""), m["name"])


class Snapshots:
    """Paged lists read from one consistent snapshot, as etcd serves a continue token.

    Stored dicts are replaced, never edited, on write, so a list of references is a
    point-in-time view; 150,000 pods in 500-item pages cost one filter+sort, not 300.
    """

    def __init__(self) -> None:
        self._snaps: OrderedDict[int, tuple[list[Obj], int, float]] = OrderedDict()
        self._ids = itertools.count(1)

    def put(self, items: list[Obj], rv: int) -> int:
        sid = next(self._ids)
        self._snaps[sid] = (items, rv, time.monotonic())
        while len(self._snaps) > MAX_SNAPSHOTS:
            self._snaps.popitem(last=False)
        return sid

    def get(self, sid: int) -> tuple[list[Obj], int] | None:
        now = time.monotonic()
        for old in [k for k, (_, _, t) in self._snaps.items() if now - t > SNAPSHOT_TTL]:
            del self._snaps[old]
        hit = self._snaps.get(sid)
        return (hit[0], hit[1]) if hit else None


def _encode_token(sid: int, offset: int, rv: int, last: tuple[str, str]) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "s": sid, "o": offset, "k": list(last)})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_token(token: str) -> Obj:
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return {"rv": int(data["rv"]), "s": int(data["s"]), "o": int(data["o"]), "k": tuple(data["k"])}
    except (ValueError, KeyError, TypeError):
        raise ApiError(400, "continue key is not valid: illegal base64 data at input byte 0") from None


def predicate(request: web.Request, rt: ResourceType) -> Match | None:
    q = request.query
    return combine(label_selector(q.get("labelSelector")), field_selector(q.get("fieldSelector"), rt))


def _int_param(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, f"invalid value for {name}: {raw}") from None


async def list_objects(
    request: web.Request, store: Store, snaps: Snapshots, rt: ResourceType, namespace: str | None
) -> web.StreamResponse:
    pred = predicate(request, rt)
    limit = _int_param(request, "limit") or 0
    token = request.query.get("continue")
    if request.query.get("resourceVersionMatch") == "Exact":
        exact = _int_param(request, "resourceVersion") or 0
        if exact < store.compacted:
            raise ApiError(410, EXPIRED_LIST, "Expired")
    if token:
        tok = _decode_token(token)
        if tok["rv"] < store.compacted:  # the snapshot is compacted away: 410 with a token from now on
            items, rv = store.list(rt.key, namespace, pred)
            start = bisect.bisect_right([_sort_key(o) for o in items], tok["k"])
            nxt = _encode_token(snaps.put(items, rv), start, rv, tok["k"])
            raise ApiError(410, INCONSISTENT_CONTINUE, "Expired", meta={"continue": nxt})
        hit = snaps.get(tok["s"])
        if hit is not None:
            items, rv = hit
            start = tok["o"]
        else:  # snapshot expired: carry on after the last key, from a fresh list
            items, rv = store.list(rt.key, namespace, pred)
            start = bisect.bisect_right([_sort_key(o) for o in items], tok["k"])
    else:
        items, rv = store.list(rt.key, namespace, pred)
        start = 0
    meta: Obj = {"resourceVersion": str(rv)}
    page = items
    if limit > 0 and start + limit < len(items):
        page = items[start:start + limit]
        sid = tok["s"] if token and hit is not None else snaps.put(items, rv)
        meta["continue"] = _encode_token(sid, start + limit, rv, _sort_key(page[-1]))
        meta["remainingItemCount"] = len(items) - start - limit
    elif start:
        page = items[start:]
    return await render_list(request, rt, page, meta)


async def render_list(request: web.Request, rt: ResourceType, items: list[Obj], meta: Obj) -> web.StreamResponse:
    wanted = accept_params(request)
    if wanted and wanted["as"] == "Table":
        include = request.query.get("includeObject", "Metadata")
        return json_response(table.table(rt.key, items, table_version=wanted.get("v", "v1"),
                                         include_object=include, list_meta=meta))
    if wanted and wanted["as"].startswith("PartialObjectMetadata"):
        v = f"meta.k8s.io/{wanted.get('v', 'v1')}"
        partial = [{"kind": "PartialObjectMetadata", "apiVersion": v, "metadata": o["metadata"]} for o in items]
        return await send_list(request, {"kind": "PartialObjectMetadataList", "apiVersion": v, "metadata": meta},
                               partial)
    head = {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta}
    return await send_list(request, head, items)


# -- watch --------------------------------------------------------------------------
def _event_for(ev: WatchEvent, pred: Match | None) -> tuple[str, Obj] | None:
    """Translate a store event for a filtered watch, as the API server's watch cache does."""
    if pred is None:
        return ev.type, ev.object
    now_ok = pred(ev.object)
    if ev.type != "MODIFIED":
        return (ev.type, ev.object) if now_ok else None
    was_ok = pred(ev.old) if ev.old is not None else now_ok
    if now_ok and was_ok:
        return "MODIFIED", ev.object
    if now_ok:
        return "ADDED", ev.object
    if was_ok and ev.old is not None:
        # the object left the selection: DELETED carrying the old state at the new resourceVersion
        old = {**ev.old, "metadata": {**ev.old["metadata"], "resourceVersion": str(ev.rv)}}
        return "DELETED", old
    return None


async def watch_objects(
    request: web.Request, store: Store, rt: ResourceType, namespace: str | None, *, expiry: float | None = None
) -> web.StreamResponse:
    """Stream the watch; with `expiry`, a watch older than that many seconds ends with an ERROR event carrying
    a 410 Expired Status, as the watch cache answers a watcher whose resourceVersion fell out of its window
    (k8s.io/apiserver/pkg/storage/cacher/watch_cache.go: "too old resource version: %d (%d)")."""
    pred = predicate(request, rt)
    rv_param = request.query.get("resourceVersion", "")
    timeout = _int_param(request, "timeoutSeconds")
    bookmarks = request.query.get("allowWatchBookmarks") in ("true", "1")
    wanted = accept_params(request)
    as_table = wanted is not None and wanted["as"] == "Table"
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[WatchEvent] = asyncio.Queue()

    def enqueue(ev: WatchEvent) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, ev)

    resp = web.StreamResponse(headers={"Content-Type": "application/json", "Cache-Control": "no-cache, private"})
    resp.enable_chunked_encoding()
    initial: list[Obj] = []
    try:
        if rv_param in ("", "0"):
            # "Get state and start at most recent": synthetic ADDED for what exists now.
            initial, since = store.list(rt.key, namespace, pred)
        else:
            try:
                since = int(rv_param)
            except ValueError:
                raise ApiError(400, f"invalid resource version: {rv_param}") from None
        unsubscribe = store.subscribe(rt.key, enqueue, namespace=namespace, since_rv=since)
    except Gone as err:
        await resp.prepare(request)
        body = status_body(410, str(err), "Expired")
        await resp.write((dumps({"type": "ERROR", "object": body}) + "\n").encode())
        return resp
    headers_sent = False

    def line(kind: str, obj: Obj) -> bytes:
        nonlocal headers_sent
        if as_table and kind in ("ADDED", "MODIFIED", "DELETED"):
            obj = table.table(rt.key, [obj], table_version=wanted.get("v", "v1") if wanted else "v1",
                              include_object=request.query.get("includeObject", "Metadata"),
                              list_meta={"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                              headers=not headers_sent)
            headers_sent = True
        return (dumps({"type": kind, "object": obj}) + "\n").encode()

    deadline = loop.time() + timeout if timeout else None
    expires = loop.time() + expiry if expiry else None
    if expires is not None and (deadline is None or expires < deadline):
        deadline = expires
    else:
        expires = None
    last_rv = since
    try:
        await resp.prepare(request)
        if initial:
            await resp.write(b"".join(line("ADDED", o) for o in initial))
        while True:
            wait = BOOKMARK_EVERY if bookmarks else None
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    if expires is not None:
                        gone = status_body(410, f"too old resource version: {last_rv} ({store.resource_version})",
                                           "Expired")
                        await resp.write((dumps({"type": "ERROR", "object": gone}) + "\n").encode())
                    break
                wait = min(wait, left) if wait else left
            try:
                ev = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                if bookmarks and (deadline is None or deadline - loop.time() > 0):
                    mark = {"kind": rt.kind, "apiVersion": rt.api_version,
                            "metadata": {"resourceVersion": str(last_rv)}}
                    await resp.write(line("BOOKMARK", mark))
                continue
            batch = [ev]
            while not queue.empty():
                batch.append(queue.get_nowait())
            out = []
            for e in batch:
                last_rv = e.rv
                translated = _event_for(e, pred)
                if translated:
                    out.append(line(*translated))
            if out:
                await resp.write(b"".join(out))
    except (ConnectionResetError, ClientConnectionResetError):
        return resp  # the client went away: nothing to finish
    finally:  # also on client disconnect (handler cancellation)
        unsubscribe()
    await resp.write_eof()
    return resp
