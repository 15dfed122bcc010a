"""Nova v2.1 routes: version documents, flavors, servers, server actions, instance actions, limits.

Bodies follow Nova's views for the microversion the client asks for (max 2.96).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web

from console.lab.openstack import microversion, policy
from console.lab.openstack.faults import BadRequest, NotFound, NovaError
from console.lab.openstack.identity_api import origin
from console.lab.openstack.keystone import Token
from console.lab.openstack.model import InstanceAction, ServerView
from console.lab.openstack.nova import Nova, new_request_id
from console.lab.vm import Flavor

NOVA: web.AppKey[Nova] = web.AppKey("nova", Nova)
REQUEST_ID: web.RequestKey[str] = web.RequestKey("request_id", str)
MICROVERSION: web.RequestKey[tuple[int, int]] = web.RequestKey("microversion", tuple)
TOKEN: web.RequestKey[Token] = web.RequestKey("token", Token)
MIN_VERSION, MAX_VERSION = (2, 1), (2, 96)
MAX_LIMIT = 1000  # [api] max_limit: longer lists come in pages with a "next" link
IMAGE_ID = "9d3e5c4a-7b1f-4e2a-8c6d-0f1e2d3c4b5a"
_FAULT_NAMES = {400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound", 405: "badMethod",
                406: "notAcceptable", 409: "conflictingRequest"}
_PROGRESS_STATUSES = ("ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE", "MIGRATING")
Microversion = tuple[int, int]


class VersionNotAcceptable(NovaError):
    status = 406


def fault(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    name = _FAULT_NAMES.get(status, "computeFault")
    return web.json_response({name: {"code": status, "message": message}}, status=status, headers=headers)


def _fmt(version: Microversion) -> str:
    return f"{version[0]}.{version[1]}"


def requested_microversion(request: web.Request) -> Microversion:
    """OpenStack-API-Version: compute 2.NN (or the legacy X-OpenStack-Nova-API-Version); none means 2.1."""
    legacy = request.headers.get("X-OpenStack-Nova-API-Version", "").strip()
    value = microversion.requested(request, "compute") or legacy or None
    try:
        return microversion.resolve(value, MIN_VERSION, MAX_VERSION)
    except microversion.InvalidVersion:
        raise BadRequest(f"API Version String {value} is of invalid format. "
                         "Must be of format MajorNum.MinorNum.") from None
    except microversion.UnacceptableVersion:
        raise VersionNotAcceptable(f"Version {value} is not supported by the API. "
                                   f"Minimum is {_fmt(MIN_VERSION)} and maximum is {_fmt(MAX_VERSION)}.") from None


def _version_doc(request: web.Request) -> dict[str, Any]:
    return {"id": "v2.1", "status": "CURRENT", "version": _fmt(MAX_VERSION), "min_version": _fmt(MIN_VERSION),
            "updated": "2013-07-23T11:33:21Z",
            "links": [{"rel": "self", "href": f"{origin(request)}/compute/v2.1/"},
                      {"rel": "describedby", "type": "text/html", "href": "http://docs.openstack.org/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.compute+json;version=2.1"}]}


async def versions(request: web.Request) -> web.Response:
    return web.json_response({"versions": [_version_doc(request)]})


async def version(request: web.Request) -> web.Response:
    return web.json_response({"version": _version_doc(request)})


# ---- rendering ------------------------------------------------------------------------------------


def _links(request: web.Request, kind: str, ident: str) -> list[dict[str, str]]:
    base = origin(request)
    return [{"rel": "self", "href": f"{base}/compute/v2.1/{kind}/{ident}"},
            {"rel": "bookmark", "href": f"{base}/compute/{kind}/{ident}"}]


def _server_ts(moment: Any) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _action_ts(moment: Any) -> str | None:
    return None if moment is None else moment.strftime("%Y-%m-%dT%H:%M:%S.%f")


def _host_id(project_id: str | None, host: str) -> str:
    return hashlib.sha224(f"{project_id or ''}{host}".encode()).hexdigest() if host else ""


def flavor_body(request: web.Request, f: Flavor, mv: Microversion, *, detail: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"id": f.id, "name": f.name, "links": _links(request, "flavors", f.id)}
    if mv >= (2, 55):
        body["description"] = None
    if not detail:
        return body
    body.update({"ram": f.ram_mb, "vcpus": f.vcpus, "disk": f.disk_gb, "OS-FLV-EXT-DATA:ephemeral": 0,
                 "OS-FLV-DISABLED:disabled": False, "os-flavor-access:is_public": True,
                 "swap": 0 if mv >= (2, 75) else "", "rxtx_factor": 1.0})
    if mv >= (2, 61):
        body["extra_specs"] = {}
    return body


def server_body(request: web.Request, v: ServerView, mv: Microversion, *, admin: bool = True) -> dict[str, Any]:
    """Nova's server view; `admin=False` renders it as a project member sees it (see policy.py)."""
    if mv >= (2, 47):
        flavor: dict[str, Any] = {"vcpus": v.flavor.vcpus, "ram": v.flavor.ram_mb, "disk": v.flavor.disk_gb,
                                  "ephemeral": 0, "swap": 0, "original_name": v.flavor.name, "extra_specs": {}}
    else:
        flavor = {"id": v.flavor.id, "links": _links(request, "flavors", v.flavor.id)[1:]}
    addresses = {"lab-net": [{"version": 4, "addr": a, "OS-EXT-IPS:type": "fixed",
                              "OS-EXT-IPS-MAC:mac_addr": f"fa:16:3e:{v.db_id >> 16 & 255:02x}:"
                                                         f"{v.db_id >> 8 & 255:02x}:{v.db_id & 255:02x}"}
                             for a in v.addresses]} if v.addresses else {}
    body: dict[str, Any] = {
        "id": v.id, "name": v.name, "status": v.status, "tenant_id": v.project_id, "user_id": v.user_id,
        "metadata": {}, "hostId": _host_id(v.project_id, v.host),
        "image": {"id": IMAGE_ID, "links": _links(request, "images", IMAGE_ID)[1:]},
        "flavor": flavor, "created": _server_ts(v.created), "updated": _server_ts(v.updated),
        "addresses": addresses, "accessIPv4": "", "accessIPv6": "", "links": _links(request, "servers", v.id),
        "OS-DCF:diskConfig": "MANUAL", "OS-EXT-AZ:availability_zone": "nova", "config_drive": "",
        "key_name": None, "security_groups": [{"name": "default"}], "os-extended-volumes:volumes_attached": [],
        "OS-SRV-USG:launched_at": _action_ts(v.created), "OS-SRV-USG:terminated_at": None,
        "OS-EXT-STS:vm_state": v.vm_state, "OS-EXT-STS:task_state": v.task_state,
        "OS-EXT-STS:power_state": v.power_state,
    }
    if admin:  # os_compute_api:os-extended-server-attributes
        body.update({"OS-EXT-SRV-ATTR:host": v.host, "OS-EXT-SRV-ATTR:instance_name": v.instance_name,
                     "OS-EXT-SRV-ATTR:hypervisor_hostname": v.hypervisor_hostname})
    if v.status in _PROGRESS_STATUSES:
        body["progress"] = v.progress
    if mv >= (2, 3) and admin:
        body.update({"OS-EXT-SRV-ATTR:hostname": v.name, "OS-EXT-SRV-ATTR:reservation_id": f"r-{v.db_id:08x}",
                     "OS-EXT-SRV-ATTR:launch_index": 0, "OS-EXT-SRV-ATTR:kernel_id": "",
                     "OS-EXT-SRV-ATTR:ramdisk_id": "", "OS-EXT-SRV-ATTR:root_device_name": "/dev/vda",
                     "OS-EXT-SRV-ATTR:user_data": None})
    elif mv >= (2, 90):  # 2.90 shows the hostname to everyone
        body["OS-EXT-SRV-ATTR:hostname"] = v.name
    optional: tuple[tuple[tuple[int, int], str, Any], ...] = (
        ((2, 9), "locked", False), ((2, 16), "host_status", "UP" if admin else None),
        ((2, 19), "description", None),
        ((2, 26), "tags", []), ((2, 63), "trusted_image_certificates", None),
        ((2, 73), "locked_reason", None), ((2, 96), "pinned_availability_zone", None))
    body.update({key: value for since, key, value in optional if mv >= since and (admin or key != "host_status")})
    if v.status == "ERROR" and v.fault is not None:  # `_fault_statuses`: only ERROR/DELETED show the fault
        body["fault"] = {"code": v.fault.code, "message": v.fault.message, "details": v.fault.details,
                         "created": _server_ts(v.fault.created)}
    return body


def action_body(a: InstanceAction, mv: Microversion, *, events: bool, admin: bool = True) -> dict[str, Any]:
    """`events`: the show view; a member gets events only at >= 2.51, without traceback, host or details."""
    body: dict[str, Any] = {"action": a.action, "instance_uuid": a.server_id, "message": a.message,
                            "project_id": a.project_id, "request_id": a.request_id,
                            "start_time": _action_ts(a.start_time), "user_id": a.user_id}
    if mv >= (2, 58):
        body["updated_at"] = _action_ts(a.updated_at)
    if events and (admin or mv >= (2, 51)):
        rendered = []
        for e in a.events:
            ev: dict[str, Any] = {"event": e.event, "start_time": _action_ts(e.start_time),
                                  "finish_time": _action_ts(e.finish_time), "result": e.result}
            if admin:  # os_compute_api:os-instance-actions:events
                ev["traceback"] = e.traceback
            if mv >= (2, 62):
                ev["hostId"] = _host_id(a.project_id, e.host)
                if admin:
                    ev["host"] = e.host
            if mv >= (2, 84) and admin:  # os_compute_api:os-instance-actions:events:details
                ev["details"] = e.details
            rendered.append(ev)
        body["events"] = rendered
    return body


def _paginate(request: web.Request, items: Sequence[Any],
              key: Callable[[Any], str]) -> tuple[list[Any], list[dict[str, str]]]:
    marker, limit = request.query.get("marker"), request.query.get("limit")
    items = list(items)
    if marker is not None:
        ids = [key(i) for i in items]
        if marker not in ids:
            raise BadRequest(f"marker [{marker}] not found")
        items = items[ids.index(marker) + 1:]
    try:
        n = min(MAX_LIMIT, int(limit)) if limit is not None else MAX_LIMIT
    except ValueError as exc:
        raise BadRequest(f"Invalid input for query parameters limit. Value: {limit}.") from exc
    page = items[:max(n, 0)]
    if len(items) <= n or not page:
        return page, []
    query = {k: v for k, v in request.query.items() if k != "marker"} | {"marker": key(page[-1])}
    href = request.url.with_query(query)
    return page, [{"rel": "next", "href": str(href)}]


# ---- handlers -----------------------------------------------------------------------------------


def _nova(request: web.Request) -> Nova:
    return request.app[NOVA]


def _mv(request: web.Request) -> Microversion:
    return request[MICROVERSION]


def _admin(request: web.Request) -> bool:
    return request[TOKEN].is_admin


def _member_query(request: web.Request) -> Any:
    """Non-admins' list filters: Nova silently drops the ones they may not use (remove_invalid_options)."""
    if _admin(request):
        return request.query
    allowed = policy.MEMBER_SERVER_FILTERS + (policy.MEMBER_SERVER_FILTERS_283 if _mv(request) >= (2, 83) else ())
    return {k: v for k, v in request.query.items() if k in allowed or k in ("limit", "marker")}


async def list_flavors(request: web.Request) -> web.Response:
    detail = request.path.endswith("/detail")
    flavors = _nova(request).flavors()
    if request.query.get("is_public", "true").lower() in ("false", "0", "no"):
        flavors = []  # the lab has public flavors only; "None" (all) and "true" list them
    if "minRam" in request.query:
        flavors = [f for f in flavors if f.ram_mb >= int(request.query["minRam"])]
    if "minDisk" in request.query:
        flavors = [f for f in flavors if f.disk_gb >= int(request.query["minDisk"])]
    flavors.sort(key=lambda f: f.id)  # Nova's default sort_key is flavorid
    page, links = _paginate(request, flavors, lambda f: f.id)
    body: dict[str, Any] = {"flavors": [flavor_body(request, f, _mv(request), detail=detail) for f in page]}
    if links:
        body["flavors_links"] = links
    return web.json_response(body)


async def show_flavor(request: web.Request) -> web.Response:
    f = _nova(request).flavor(request.match_info["flavor_id"])
    return web.json_response({"flavor": flavor_body(request, f, _mv(request))})


def _matches(v: ServerView, query: Any) -> bool:
    name = query.get("name")
    if name is not None:
        try:
            if not re.search(name, v.name):  # Nova's name filter is a regular expression
                return False
        except re.error:
            return False
    if "status" in query and v.status != query["status"].upper():
        return False
    if "host" in query and v.host != query["host"]:
        return False
    if "flavor" in query and v.flavor.id != query["flavor"]:
        return False
    if "vm_state" in query and v.vm_state != query["vm_state"]:
        return False
    return "uuid" not in query or v.id == query["uuid"]


async def list_servers(request: web.Request) -> web.Response:
    detail = request.path.endswith("/detail")
    servers = [v for v in _nova(request).servers() if _matches(v, _member_query(request))]
    page, links = _paginate(request, servers, lambda v: v.id)
    if detail:
        rendered = [server_body(request, v, _mv(request), admin=_admin(request)) for v in page]
    else:
        rendered = [{"id": v.id, "name": v.name, "links": _links(request, "servers", v.id)} for v in page]
    body: dict[str, Any] = {"servers": rendered}
    if links:
        body["servers_links"] = links
    return web.json_response(body)


async def show_server(request: web.Request) -> web.Response:
    v = _nova(request).server(request.match_info["server_id"])
    return web.json_response({"server": server_body(request, v, _mv(request), admin=_admin(request))})


async def server_action(request: web.Request) -> web.Response:
    nova, sid, rid = _nova(request), request.match_info["server_id"], request[REQUEST_ID]
    uid = request[TOKEN].user_id  # instance actions record who asked
    try:
        body = json.loads(await request.read())
    except ValueError as exc:
        raise BadRequest("Malformed request body") from exc
    if not isinstance(body, dict) or len(body) != 1:
        raise BadRequest("Malformed request body")
    name, args = next(iter(body.items()))
    nova.server(sid)  # 404 before validating the action, as Nova does
    if name == "resize":
        ref = args.get("flavorRef") if isinstance(args, dict) else None
        if not isinstance(ref, str | int) or ref == "":
            raise BadRequest(f"Invalid input for field/attribute resize. Value: {json.dumps(args)}. "
                             "'flavorRef' is a required property")
        nova.resize(sid, str(ref).rstrip("/").rsplit("/", 1)[-1], request_id=rid, user_id=uid)
    elif name == "confirmResize":
        nova.confirm_resize(sid, request_id=rid, user_id=uid)
        return web.Response(status=204)
    elif name == "revertResize":
        nova.revert_resize(sid, request_id=rid, user_id=uid)
    elif name == "reboot":
        kind = args.get("type") if isinstance(args, dict) else None
        if not isinstance(kind, str):
            raise BadRequest(f"Invalid input for field/attribute reboot. Value: {json.dumps(args)}. "
                             "'type' is a required property")
        nova.reboot(sid, kind, request_id=rid, user_id=uid)  # type: ignore[arg-type]
    elif name == "os-start":
        nova.start(sid, request_id=rid, user_id=uid)
    elif name == "os-stop":
        nova.stop(sid, request_id=rid, user_id=uid)
    elif name == "os-resetState":
        policy.authorize(policy.RESET_STATE, admin=_admin(request))
        state = args.get("state") if isinstance(args, dict) else None
        nova.reset_state(sid, state)  # type: ignore[arg-type]
    else:
        raise BadRequest(f"There is no such action: {name}")
    return web.Response(status=202)


async def list_instance_actions(request: web.Request) -> web.Response:
    actions = _nova(request).actions(request.match_info["server_id"])
    mv = _mv(request)
    links: list[dict[str, str]] = []
    if mv >= (2, 58):
        actions, links = _paginate(request, actions, lambda a: a.request_id)
    body: dict[str, Any] = {"instanceActions": [action_body(a, mv, events=False) for a in actions]}
    if links:
        body["links"] = links
    return web.json_response(body)


async def show_instance_action(request: web.Request) -> web.Response:
    a = _nova(request).action(request.match_info["server_id"], request.match_info["request_id"])
    return web.json_response({"instanceAction": action_body(a, _mv(request), events=True, admin=_admin(request))})


async def show_limits(request: web.Request) -> web.Response:
    """GET /limits (nova/api/openstack/compute/limits.py): the caller's project; another project's (tenant_id)
    needs os_compute_api:limits:other_project, admin only."""
    nova, token = _nova(request), request[TOKEN]
    tenant = request.query.get("tenant_id")
    if tenant and tenant != token.project_id:
        policy.authorize(policy.LIMITS_OTHER_PROJECT, admin=_admin(request))
        raise NotFound(f"Project {tenant} could not be found.")  # the lab cloud has one project
    return web.json_response({"limits": {"rate": [], "absolute": nova.limits(_mv(request))}})


async def not_found(request: web.Request) -> web.Response:
    raise NotFound("The resource could not be found.")


def add_routes(app: web.Application) -> None:
    r = app.router
    for path in ("/compute", "/compute/"):
        r.add_get(path, versions)
    for path in ("/compute/v2.1", "/compute/v2.1/"):
        r.add_get(path, version)
    base = "/compute/v2.1"
    r.add_get(f"{base}/flavors", list_flavors)
    r.add_get(f"{base}/flavors/detail", list_flavors)
    r.add_get(f"{base}/flavors/{{flavor_id}}", show_flavor)
    r.add_get(f"{base}/servers", list_servers)
    r.add_get(f"{base}/servers/detail", list_servers)
    r.add_get(f"{base}/servers/{{server_id}}", show_server)
    r.add_post(f"{base}/servers/{{server_id}}/action", server_action)
    r.add_get(f"{base}/servers/{{server_id}}/os-instance-actions", list_instance_actions)
    r.add_get(f"{base}/servers/{{server_id}}/os-instance-actions/{{request_id}}", show_instance_action)
    r.add_get(f"{base}/limits", show_limits)
    r.add_route("*", f"{base}/{{tail:.*}}", not_found)


def is_versioned_compute(path: str) -> bool:
    """Paths that need a token and a microversion (the version documents need neither)."""
    return path.startswith("/compute/v2.1/") and path != "/compute/v2.1/"


__all__ = ["NOVA", "add_routes", "fault", "is_versioned_compute", "new_request_id", "requested_microversion"]
