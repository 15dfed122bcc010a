"""Fast JSON in and out, content negotiation, and streaming of big lists."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from console.lab.kubeapi.status import ApiError

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)
dumps = _ENCODER.encode

# Lists bigger than this are streamed in slices so one response never holds the loop long.
STREAM_CHUNK = 2000


def dump_bytes(obj: Any) -> bytes:
    return dumps(obj).encode()


def json_response(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=dump_bytes(obj), status=status, content_type="application/json")


# kube-apiserver's MaxRequestBodyBytes default (k8s.io/apiserver/pkg/server/config.go: 3 MiB): 413 past it
MAX_REQUEST_BYTES = 3 * 1024 * 1024


async def read_json(request: web.Request) -> Any:
    from console.bounded import InputError, Limits, load_json, load_yaml

    if (request.content_length or 0) > MAX_REQUEST_BYTES:
        raise ApiError(413, f"Request entity too large: limit is {MAX_REQUEST_BYTES}", "RequestEntityTooLarge")
    raw = await request.read()
    if len(raw) > MAX_REQUEST_BYTES:
        raise ApiError(413, f"Request entity too large: limit is {MAX_REQUEST_BYTES}", "RequestEntityTooLarge")
    if not raw.strip():
        raise ApiError(400, "the body of the request was in an unknown format")
    ctype = request.content_type
    if ctype == "application/vnd.kubernetes.protobuf":  # client-go's typed clients (kubectl debug, create ns)
        from console.lab.kubeapi import protobuf

        return protobuf.decode(raw)
    # bounded like the console's own loading (console/bounded.py): alias expansion, depth; never RecursionError
    limits = Limits(max_bytes=MAX_REQUEST_BYTES)
    if ctype.endswith("yaml"):  # only apply-patch bodies are YAML
        try:
            return load_yaml(raw, "body", limits)
        except InputError as err:
            raise ApiError(400, f"error decoding YAML: {str(err).removeprefix('body: ')}") from None
    try:
        return load_json(raw, "body", limits)
    except InputError as err:
        raise ApiError(400, f"couldn't get version/kind; json parse error: {str(err).removeprefix('body: ')}") \
            from None


def accept_params(request: web.Request) -> dict[str, str] | None:
    """The parameters of the first `as=` media range in Accept (Table, PartialObjectMetadataList), if any."""
    for part in request.headers.get("Accept", "").split(","):
        fields = [f.strip() for f in part.split(";")]
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        if "as" in params and params.get("g", "meta.k8s.io") == "meta.k8s.io" and params["as"] in (
            "Table",
            "PartialObjectMetadataList",
            "PartialObjectMetadata",
        ):
            return params
    return None


async def send_list(
    request: web.Request, head: dict[str, Any], items: list[Any], key: str = "items"
) -> web.StreamResponse:
    """`head` plus `items` as one JSON object; big lists are written slice by slice."""
    opening = dumps(head)[:-1]
    opening = (opening + "," if len(head) else opening) + f'"{key}":['
    if len(items) <= STREAM_CHUNK:
        body = opening + dumps(items)[1:-1] + "]}"
        return web.Response(body=body.encode(), content_type="application/json")
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)
    await resp.write(opening.encode())
    for start in range(0, len(items), STREAM_CHUNK):
        chunk = dumps(items[start:start + STREAM_CHUNK])[1:-1]
        await resp.write(((", " if start else "") + chunk).encode())
    await resp.write(b"]}")
    await resp.write_eof()
    return resp
