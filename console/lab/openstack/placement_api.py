"""Placement routes (service type "placement", under /placement): the version document, resource providers,
their inventories and usages, as the lab's Nova's compute hosts report them.

Sources (openstack/placement 7ad9ef0): handlers/root.py (the version document, no token needed),
handlers/resource_provider.py (`_serialize_provider`: uuid, name, generation, links by microversion; 1.14
parent/root provider uuids), handlers/inventory.py and usage.py (bodies keyed by resource class with the
provider's generation), microversion.py (`OpenStack-API-Version: placement 1.N`, 1.0 by default, `latest`,
406 outside 1.0–1.39), policies/ (resource providers, inventories and usages: `role:admin or role:service`,
so a project member gets 403 "Policy does not allow placement:resource_providers:list to be performed."),
util.py json_error_formatter ({"errors": [{status, title, detail, request_id, code (1.23+)}]}).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from console.lab.openstack import microversion
from console.lab.openstack.keystone import Keystone, Token
from console.lab.openstack.nova import Nova

PLACEMENT: web.AppKey[Nova] = web.AppKey("placement_nova", Nova)
MICROVERSION: web.RequestKey[tuple[int, int]] = web.RequestKey("placement_microversion", tuple)
TOKEN: web.RequestKey[Token] = web.RequestKey("placement_token", Token)
MIN_VERSION, MAX_VERSION = (1, 0), (1, 39)
BASE = "/placement"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
           406: "Not Acceptable"}
_DETAIL_PREFIX = {403: "Access was denied to this resource.", 404: "The resource could not be found.",
                  400: "The server could not comply with the request since it is either malformed or otherwise "
                       "incorrect."}
RP_LIST, RP_SHOW = "placement:resource_providers:list", "placement:resource_providers:show"
INVENTORIES_LIST = "placement:resource_providers:inventories:list"
USAGES = "placement:resource_providers:usages"


class PlacementError(Exception):
    def __init__(self, status: int, detail: str, code: str = "placement.undefined_code"):
        super().__init__(detail)
        self.status, self.detail, self.code = status, detail, code


def _fmt(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def error(status: int, detail: str, request_id: str, mv: tuple[int, int] | None,
          code: str = "placement.undefined_code") -> web.Response:
    prefix = _DETAIL_PREFIX.get(status)
    if prefix and detail != prefix:  # webob's explanation, then the handler's detail
        detail = f"{prefix}\n\n {detail}  "
    body: dict[str, Any] = {"status": status, "title": _TITLES.get(status, "Error"), "detail": detail,
                            "request_id": request_id}
    if mv is not None and mv >= (1, 23):
        body["code"] = code
    if status == 406 and mv is None:
        body |= {"max_version": _fmt(MAX_VERSION), "min_version": _fmt(MIN_VERSION)}
    return web.json_response({"errors": [body]}, status=status)


def _microversion(request: web.Request) -> tuple[int, int]:
    value = microversion.requested(request, "placement")
    try:
        return microversion.resolve(value, MIN_VERSION, MAX_VERSION)
    except microversion.InvalidVersion:
        raise PlacementError(400, f"invalid version string: {value}") from None
    except microversion.UnacceptableVersion:
        raise PlacementError(406, f"Unacceptable version header: {value}") from None


def _authorize(token: Token, action: str) -> None:
    if not ({"admin", "service"} & set(token.roles)):
        raise PlacementError(403, f"Policy does not allow {action} to be performed.")


async def handle(request: web.Request, handler: Handler, keystone: Keystone, request_id: str) -> web.StreamResponse:
    """Run a /placement request: the root needs no token; everything else a scoped one and a microversion."""
    mv: tuple[int, int] | None = None
    try:
        mv = _microversion(request)
        request[MICROVERSION] = mv
        if request.path.rstrip("/") != BASE:
            token = keystone.validate(request.headers.get("X-Auth-Token"))
            if token is None or not token.scoped:
                resp = error(401, "The request you have made requires authentication.", request_id, mv)
                resp.headers["WWW-Authenticate"] = "Keystone uri=''"
                return resp
            request[TOKEN] = token
        resp = await handler(request)
    except PlacementError as exc:
        resp = error(exc.status, exc.detail, request_id, None if exc.status == 406 else mv, exc.code)
    except web.HTTPException as exc:
        resp = error(exc.status, exc.reason, request_id, mv)
    if mv is not None:
        resp.headers["OpenStack-API-Version"] = f"placement {_fmt(mv)}"
        resp.headers["Vary"] = "openstack-api-version"
    return resp


def _nova(request: web.Request) -> Nova:
    return request.app[PLACEMENT]


def _token(request: web.Request) -> Token:
    return request[TOKEN]


def _provider_body(request: web.Request, p: Any) -> dict[str, Any]:
    mv = request[MICROVERSION]
    url = f"{BASE}/resource_providers/{p.uuid}"
    rels = ["inventories", "usages"]
    if mv >= (1, 1):
        rels.append("aggregates")
    if mv >= (1, 6):
        rels.append("traits")
    if mv >= (1, 11):
        rels.append("allocations")
    body: dict[str, Any] = {"uuid": p.uuid, "name": p.name, "generation": p.generation,
                            "links": [{"rel": "self", "href": url}, *({"rel": r, "href": f"{url}/{r}"} for r in rels)]}
    if mv >= (1, 14):
        body |= {"parent_provider_uuid": None, "root_provider_uuid": p.uuid}
    return body


async def home(request: web.Request) -> web.Response:
    return web.json_response({"versions": [{"id": f"v{_fmt(MIN_VERSION)}", "max_version": _fmt(MAX_VERSION),
                                            "min_version": _fmt(MIN_VERSION), "status": "CURRENT",
                                            "links": [{"rel": "self", "href": ""}]}]})


async def list_providers(request: web.Request) -> web.Response:
    _authorize(_token(request), RP_LIST)
    providers = _nova(request).providers()
    if "name" in request.query:
        providers = [p for p in providers if p.name == request.query["name"]]
    if "uuid" in request.query:
        providers = [p for p in providers if p.uuid == request.query["uuid"]]
    return web.json_response({"resource_providers": [_provider_body(request, p) for p in providers]})


def _provider(request: web.Request) -> Any:
    rp = request.match_info["uuid"]
    p = _nova(request).provider(rp)
    if p is None:
        raise PlacementError(404, f"No resource provider with uuid {rp} found", "placement.undefined_code")
    return p


async def show_provider(request: web.Request) -> web.Response:
    _authorize(_token(request), RP_SHOW)
    return web.json_response(_provider_body(request, _provider(request)))


async def list_inventories(request: web.Request) -> web.Response:
    _authorize(_token(request), INVENTORIES_LIST)
    p = _provider(request)
    return web.json_response({"resource_provider_generation": p.generation,
                              "inventories": _nova(request).inventories(p.name)})


async def show_usages(request: web.Request) -> web.Response:
    _authorize(_token(request), USAGES)
    p = _provider(request)
    return web.json_response({"resource_provider_generation": p.generation, "usages": _nova(request).usages(p.name)})


async def not_found(request: web.Request) -> web.Response:
    raise PlacementError(404, "The resource could not be found.")


def add_routes(app: web.Application, nova: Nova) -> None:
    app[PLACEMENT] = nova
    r = app.router
    for path in (BASE, f"{BASE}/"):
        r.add_get(path, home)
    r.add_get(f"{BASE}/resource_providers", list_providers)
    r.add_get(f"{BASE}/resource_providers/{{uuid}}", show_provider)
    r.add_get(f"{BASE}/resource_providers/{{uuid}}/inventories", list_inventories)
    r.add_get(f"{BASE}/resource_providers/{{uuid}}/usages", show_usages)
    r.add_route("*", f"{BASE}/{{tail:.*}}", not_found)
