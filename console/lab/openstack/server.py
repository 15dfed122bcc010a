"""Serve the lab's Keystone + Nova + Placement on loopback with aiohttp.

    api = await start_openstack(nova, password=secret)
    write_clouds_yaml(path, auth_url=api.auth_url, username="admin", password=secret, project="admin")
    ...
    await api.stop()

Only method, path and status are logged; never bodies or headers (passwords, tokens).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from console.lab.openstack import compute_api, identity_api, placement_api
from console.lab.openstack.faults import NovaError
from console.lab.openstack.keystone import Keystone
from console.lab.openstack.nova import Nova, new_request_id

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def _middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    rid = new_request_id()
    request[compute_api.REQUEST_ID] = rid
    headers = {"x-openstack-request-id": rid}
    compute = request.path.startswith("/compute")
    try:
        if request.path == placement_api.BASE or request.path.startswith(placement_api.BASE + "/"):
            resp = await placement_api.handle(request, handler, request.app[identity_api.KEYSTONE], rid)
        elif compute_api.is_versioned_compute(request.path):
            headers["x-compute-request-id"] = rid
            token = request.app[identity_api.KEYSTONE].validate(request.headers.get("X-Auth-Token"))
            if token is None or not token.scoped:
                resp: web.StreamResponse = identity_api.unauthorized(request)
            else:
                mv = compute_api.requested_microversion(request)
                request[compute_api.MICROVERSION] = mv
                request[compute_api.TOKEN] = token
                headers |= {"OpenStack-API-Version": f"compute {mv[0]}.{mv[1]}",
                            "X-OpenStack-Nova-API-Version": f"{mv[0]}.{mv[1]}",
                            "Vary": "OpenStack-API-Version, X-OpenStack-Nova-API-Version"}
                resp = await handler(request)
        else:
            resp = await handler(request)
    except NovaError as exc:
        resp = compute_api.fault(exc.status, exc.message)
    except web.HTTPException as exc:  # router misses (404/405): answer in the service's error format
        if compute:
            resp = compute_api.fault(exc.status, exc.reason)
        else:
            resp = identity_api.identity_error(exc.status, exc.reason, exc.reason)
    resp.headers.update(headers)
    log.debug("%s %s -> %s", request.method, request.path_qs, resp.status)
    return resp


def build_app(nova: Nova, keystone: Keystone, *, region: str = "RegionOne") -> web.Application:
    app = web.Application(middlewares=[_middleware])
    app[compute_api.NOVA] = nova
    app[identity_api.KEYSTONE] = keystone
    app[identity_api.REGION] = region
    identity_api.add_routes(app)
    compute_api.add_routes(app)
    placement_api.add_routes(app, nova)
    return app


class OpenStackAPI:
    """A running endpoint; `auth_url` goes into clouds.yaml."""

    def __init__(self, runner: web.AppRunner, host: str, port: int, nova: Nova, keystone: Keystone, region: str):
        self._runner = runner
        self.host, self.port, self.nova, self.keystone, self.region = host, port, nova, keystone, region

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def auth_url(self) -> str:
        return f"{self.base_url}/identity/v3"

    @property
    def compute_url(self) -> str:
        return f"{self.base_url}/compute/v2.1"

    async def stop(self) -> None:
        await self._runner.cleanup()

    def __repr__(self) -> str:
        return f"OpenStackAPI({self.auth_url})"


async def start_openstack(
    nova: Nova,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    username: str = "admin",
    password: str,
    project: str = "admin",
    region: str = "RegionOne",
    token_ttl: float = 3600.0,
) -> OpenStackAPI:
    """Start Keystone v3 + Nova v2.1 on host:port (0 = ephemeral) on the running loop."""
    keystone = Keystone(username=username, password=password, project=project, user_id=nova.user_id,
                        project_id=nova.project_id, token_ttl=token_ttl)
    runner = web.AppRunner(build_app(nova, keystone, region=region), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]
    log.info("lab OpenStack listening on http://%s:%s (identity /identity/v3, compute /compute/v2.1)", host, bound)
    return OpenStackAPI(runner, host, bound, nova, keystone, region)
