"""Keystone v3 routes: version discovery, /auth/tokens, the service catalog."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from aiohttp import web

from console.lab.openstack.keystone import DEFAULT_DOMAIN_ID, DEFAULT_DOMAIN_NAME, AuthError, Keystone, Token

KEYSTONE: web.AppKey[Keystone] = web.AppKey("keystone", Keystone)
REGION: web.AppKey[str] = web.AppKey("region", str)
IDENTITY_VERSION = "v3.14"


def origin(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}"


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def identity_error(status: int, title: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": status, "title": title, "message": message}}, status=status)


def unauthorized(request: web.Request) -> web.Response:
    resp = identity_error(401, "Unauthorized", "The request you have made requires authentication.")
    resp.headers["WWW-Authenticate"] = f'Keystone uri="{origin(request)}/identity"'
    return resp


def _version(request: web.Request) -> dict[str, Any]:
    return {
        "id": IDENTITY_VERSION, "status": "stable", "updated": "2020-04-07T00:00:00Z",
        "links": [{"rel": "self", "href": f"{origin(request)}/identity/v3/"}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}],
    }


async def versions(request: web.Request) -> web.Response:
    return web.json_response({"versions": {"values": [_version(request)]}}, status=300)


async def version(request: web.Request) -> web.Response:
    return web.json_response({"version": _version(request)})


def catalog(request: web.Request) -> list[dict[str, Any]]:
    region, base = request.app[REGION], origin(request)

    def service(kind: str, name: str, url: str) -> dict[str, Any]:
        return {"type": kind, "name": name, "id": f"{name}-service", "endpoints": [
            {"id": f"{name}-{iface}", "interface": iface, "region": region, "region_id": region, "url": url}
            for iface in ("public", "internal", "admin")]}

    return [service("compute", "nova", f"{base}/compute/v2.1"), service("identity", "keystone", f"{base}/identity"),
            service("placement", "placement", f"{base}/placement")]


def token_body(request: web.Request, token: Token, *, with_catalog: bool = True) -> dict[str, Any]:
    domain = {"id": DEFAULT_DOMAIN_ID, "name": DEFAULT_DOMAIN_NAME}
    body: dict[str, Any] = {
        "methods": list(token.methods), "issued_at": ts(token.issued_at), "expires_at": ts(token.expires_at),
        "audit_ids": [token.id[-22:]],
        "user": {"id": token.user_id, "name": token.user_name, "domain": domain, "password_expires_at": None},
    }
    if token.scoped:
        body["project"] = {"id": token.project_id, "name": token.project_name, "domain": domain}
        body["roles"] = [{"id": f"role-{name}", "name": name} for name in token.roles]
        body["is_domain"] = False
        if with_catalog:
            body["catalog"] = catalog(request)
    return {"token": body}


async def issue_token(request: web.Request) -> web.Response:
    try:
        body = json.loads(await request.read() or b"null")
    except ValueError:
        return identity_error(400, "Bad Request", "Expecting to find auth in request body.")
    try:
        token = request.app[KEYSTONE].authenticate(body)
    except AuthError as exc:
        if exc.status == 401:
            return unauthorized(request)
        return identity_error(exc.status, exc.title, exc.message)
    resp = web.json_response(token_body(request, token, with_catalog="nocatalog" not in request.query), status=201)
    resp.headers["X-Subject-Token"] = token.id
    return resp


def _caller(request: web.Request) -> Token | None:
    return request.app[KEYSTONE].validate(request.headers.get("X-Auth-Token"))


async def check_token(request: web.Request) -> web.Response:
    """GET/HEAD /auth/tokens: validate X-Subject-Token for a caller holding X-Auth-Token."""
    if _caller(request) is None:
        return unauthorized(request)
    subject_id = request.headers.get("X-Subject-Token")
    subject = request.app[KEYSTONE].validate(subject_id)
    if subject is None:
        return identity_error(404, "Not Found", "Could not find token.")
    if request.method == "HEAD":
        resp = web.Response(status=200)
    else:
        resp = web.json_response(token_body(request, subject, with_catalog="nocatalog" not in request.query))
    resp.headers["X-Subject-Token"] = subject.id
    return resp


async def revoke_token(request: web.Request) -> web.Response:
    if _caller(request) is None:
        return unauthorized(request)
    if not request.app[KEYSTONE].revoke(request.headers.get("X-Subject-Token", "")):
        return identity_error(404, "Not Found", "Could not find token.")
    return web.Response(status=204)


async def auth_projects(request: web.Request) -> web.Response:
    token = _caller(request)
    if token is None:
        return unauthorized(request)
    ks = request.app[KEYSTONE]
    return web.json_response({"projects": [{
        "id": ks.project_id, "name": ks.project, "domain_id": DEFAULT_DOMAIN_ID, "enabled": True,
        "is_domain": False, "parent_id": DEFAULT_DOMAIN_ID, "description": "",
        "links": {"self": f"{origin(request)}/identity/v3/projects/{ks.project_id}"}}]})


async def auth_catalog(request: web.Request) -> web.Response:
    token = _caller(request)
    if token is None or not token.scoped:
        return unauthorized(request)
    return web.json_response({"catalog": catalog(request)})


def add_routes(app: web.Application) -> None:
    r = app.router
    for path in ("/identity", "/identity/"):
        r.add_get(path, versions)
    for path in ("/identity/v3", "/identity/v3/"):
        r.add_get(path, version)
    r.add_post("/identity/v3/auth/tokens", issue_token)
    r.add_get("/identity/v3/auth/tokens", check_token)  # aiohttp answers HEAD through the GET route
    r.add_delete("/identity/v3/auth/tokens", revoke_token)
    r.add_get("/identity/v3/auth/projects", auth_projects)
    r.add_get("/identity/v3/auth/catalog", auth_catalog)
