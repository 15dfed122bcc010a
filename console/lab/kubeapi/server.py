"""The lab's Kubernetes API server: aiohttp on loopback over the lab Store."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from console.lab.kubeapi import authz, discovery, listing, metrics, objects, pods, reviews
from console.lab.kubeapi.authn import EXEC_USER
from console.lab.kubeapi.encoding import json_response
from console.lab.kubeapi.listing import Snapshots
from console.lab.kubeapi.rbac import AUTHENTICATED, MASTERS, Attributes, Rules, User
from console.lab.kubeapi.status import ApiError, from_store_error, status_body
from console.lab.kubeapi.tls import make_serving_cert
from console.lab.podlogs import PodLogs
from console.lab.resources import ResourceType, by_plural
from console.lab.store import Store, StoreError

log = logging.getLogger(__name__)

_OPEN_PATHS = {"/healthz", "/readyz", "/livez"}
_NOT_FOUND = "the server could not find the requested resource"


@dataclass
class Target:
    """A parsed resource URL."""

    rt: ResourceType
    namespace: str | None
    name: str | None
    sub: str | None
    legacy_watch: bool


def _not_found() -> ApiError:
    return ApiError(404, _NOT_FOUND, "NotFound", {})


def parse_resource_path(segs: list[str], served: discovery.Served = discovery.serve_all) -> Target:
    """Resolve /api/v1/... and /apis/GROUP/VERSION/... into a Target (404 otherwise)."""
    versions = discovery.group_versions(served)
    if segs[0] == "api" and len(segs) >= 3 and segs[1] == "v1":
        group, rest = "", segs[2:]
    elif segs[0] == "apis" and len(segs) >= 4 and versions.get(segs[1]) == segs[2]:
        group, rest = segs[1], segs[3:]
    else:
        raise _not_found()
    legacy_watch = rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and by_plural(group, rest[2]) is not None:
        namespace, rest = rest[1], rest[2:]
    elif group and rest and rest[0] == "namespaces" and len(rest) >= 3:
        raise _not_found()
    if group == "" and namespace is None and len(rest) == 3 and rest[0] == "namespaces" and rest[2] == "bindings":
        # POST /api/v1/namespaces/NS/bindings: the Binding names its pod in metadata.name
        return Target(by_plural("", "pods"), rest[1], None, "binding", False)  # type: ignore[arg-type]
    if not rest or len(rest) > 3:
        raise _not_found()
    rt = by_plural(group, rest[0])
    if rt is None or not served(rt):
        raise _not_found()
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if namespace is not None and not rt.namespaced:
        raise _not_found()
    if rt.namespaced and namespace is None and name is not None:
        raise _not_found()
    if sub is not None and sub not in rt.subresources:
        raise _not_found()
    return Target(rt, namespace, name, sub, legacy_watch)


@dataclass
class _State:
    store: Store
    logs: PodLogs
    token: str | None
    address: str = ""
    # tokens of the users RBAC decides for (kubeapi/rbac.py); the admin token is `system:masters`
    users: dict[str, User] = field(default_factory=dict)
    # the key that signs short-lived tokens (lab/kubeapi/authn.py: the `lab-exec` user, cluster-admin; any
    # other subject is a user RBAC decides for)
    exec_key: bytes | None = None
    snaps: Snapshots = field(default_factory=Snapshots)
    # the node proxy to the kubelets: (node, path) -> (HTTP status, body, content type)
    node_proxy: Callable[[str, str], tuple[int, str, str]] | None = None
    watch_expiry: float | None = None  # end watches older than this with a 410 (listing.watch_objects)
    # metrics.k8s.io as metrics-server serves it through the aggregator (None: not installed)
    metrics: metrics.Metrics | None = None
    # the last requests as "METHOD /path?query", like the API server's audit log, for tests to count calls
    request_log: deque[str] = field(default_factory=lambda: deque(maxlen=10_000))


_STATE = web.AppKey("state", _State)
_USER = web.RequestKey("user", User)
ADMIN = User("lab-admin", (MASTERS, AUTHENTICATED))


def _method_not_allowed(method: str) -> ApiError:
    return ApiError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed",
                    {})


async def _resource(request: web.Request, st: _State, t: Target) -> web.StreamResponse:
    m, rt = request.method, t.rt
    watching = t.legacy_watch or request.query.get("watch") in ("true", "1")
    if t.name is None and t.sub == "binding":
        if m != "POST":
            raise _method_not_allowed(m)
        return await pods.bind(request, st.store, t.namespace or "default", None)
    if t.name is None:
        if m == "GET":
            if watching:
                return await listing.watch_objects(request, st.store, rt, t.namespace, expiry=st.watch_expiry)
            return await listing.list_objects(request, st.store, st.snaps, rt, t.namespace)
        if m == "POST":
            return await objects.create_object(request, st.store, rt, t.namespace)
        if m == "DELETE":
            return await objects.delete_collection(request, st.store, rt, t.namespace)
        raise _method_not_allowed(m)
    if t.legacy_watch:
        raise _not_found()
    if t.sub in (None, "status"):
        if m == "GET":
            return objects.get_object(request, st.store, rt, t.namespace, t.name)
        if m == "PUT":
            return await objects.update_object(request, st.store, rt, t.namespace, t.name, t.sub)
        if m == "PATCH":
            return await objects.patch_object(request, st.store, rt, t.namespace, t.name, t.sub)
        if m == "DELETE" and t.sub is None:
            return await objects.delete_object(request, st.store, rt, t.namespace, t.name)
        raise _method_not_allowed(m)
    ns = t.namespace or ""
    if t.sub == "binding" and m == "POST":
        return await pods.bind(request, st.store, ns, t.name)
    if t.sub == "eviction" and m == "POST":
        return await pods.evict(request, st.store, ns, t.name)
    if t.sub == "log" and m == "GET":
        return await pods.log(request, st.store, st.logs, ns, t.name)
    raise _method_not_allowed(m)


def _static(path: str, st: _State) -> Any:
    """Non-resource endpoints: discovery, version, health. None when not one of them."""
    if path == "/api":
        return discovery.api_versions(st.address)
    served = st.metrics is not None and st.metrics.served
    if path == "/apis":
        groups = discovery.api_group_list(st.store.served)
        if served:  # the aggregator adds the APIService's group to discovery
            groups = {**groups, "groups": [*groups["groups"], metrics.group()]}
        return groups
    if path == "/version":
        return discovery.VERSION
    segs = path.strip("/").split("/")
    if path == "/openapi/v3":
        return discovery.openapi_v3_root(st.store.served)
    if path.startswith("/openapi/v3/"):
        return discovery.openapi_v3_doc(path[len("/openapi/v3/"):], st.store.served) or False
    if path == "/api/v1":
        return discovery.resource_list("", "v1", st.store.served)
    if segs[:2] == ["apis", metrics.GROUP] and len(segs) <= 3:
        if not served or (len(segs) == 3 and segs[2] != metrics.VERSION):
            return False
        return {"kind": "APIGroup", "apiVersion": "v1", **metrics.group()} if len(segs) == 2 else \
            metrics.resource_list()
    if segs[0] == "apis" and len(segs) == 2:
        return discovery.api_group(segs[1], st.store.served) or False
    if segs[0] == "apis" and len(segs) == 3:
        return discovery.resource_list(segs[1], segs[2], st.store.served) or False
    return None


async def _dispatch(request: web.Request) -> web.StreamResponse:
    st: _State = request.app[_STATE]
    path = request.path.rstrip("/") or "/"
    if path in _OPEN_PATHS or path.startswith(("/healthz/", "/readyz/", "/livez/")):
        return web.Response(text="ok", content_type="text/plain")
    if path == "/":
        groups = [g for g in discovery.group_versions(st.store.served) if g]
        if st.metrics is not None and st.metrics.served:
            groups.append(metrics.GROUP)
        return json_response({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version",
                                        *sorted(f"/apis/{g}" for g in groups)]})
    user = request.get(_USER)
    rbac_user: User | None = user if user is not None and MASTERS not in user.groups else None  # None: no RBAC
    static = _static(path, st)
    if rbac_user is not None and static is not None:
        authz.check(Rules(st.store), rbac_user, Attributes(request.method.lower(), path=path, resource_request=False))
    if static is False:
        raise _not_found()
    if static is not None:
        if request.method != "GET":
            raise _method_not_allowed(request.method)
        return json_response(static)
    segs = path.strip("/").split("/")
    if segs[0] not in ("api", "apis"):
        return web.Response(status=404, text="404 page not found\n", content_type="text/plain")
    if len(segs) >= 5 and segs[:3] == ["api", "v1", "nodes"] and segs[4] == "proxy":
        if rbac_user is not None:
            verb = authz.request_verb(request.method, segs[3], False)
            authz.check(Rules(st.store), rbac_user, Attributes(verb, "nodes", "", "proxy", "", segs[3]))
        return _proxy_node(request, st, segs[3], "/".join(segs[5:]))
    if segs[:3] == ["apis", metrics.GROUP, metrics.VERSION] and st.metrics is not None and st.metrics.served:
        return _metrics(request, st, segs)
    target = parse_resource_path(segs, st.store.served)
    if rbac_user is not None:
        watching = target.legacy_watch or request.query.get("watch") in ("true", "1")
        authz.check(Rules(st.store), rbac_user, authz.resource_attributes(
            request.method, target.rt.group, target.rt.plural, target.sub, target.namespace, target.name, watching,
            request.query))
    if target.rt.group in (reviews.AUTHORIZATION_GROUP, reviews.AUTHENTICATION_GROUP):
        if request.method != "POST" or target.name is not None:
            raise _method_not_allowed(request.method)
        return await reviews.review(request, Rules(st.store), user or ADMIN, target.rt.plural)
    try:
        return await _resource(request, st, target)
    except StoreError as err:
        raise from_store_error(err, target.rt, target.name) from None


def _metrics(request: web.Request, st: _State, segs: list[str]) -> web.StreamResponse:
    """/apis/metrics.k8s.io/v1beta1/...: authorized like any resource (the aggregator checks RBAC first)."""
    assert st.metrics is not None
    rt, ns, name = metrics.target(segs)
    user = request.get(_USER)
    if user is not None and MASTERS not in user.groups:
        authz.check(Rules(st.store), user, authz.resource_attributes(
            request.method, rt.group, rt.plural, None, ns, name, request.query.get("watch") in ("true", "1"),
            request.query))
    return metrics.serve(request, st.metrics, rt, ns, name)


def _proxy_node(request: web.Request, st: _State, node: str, path: str) -> web.StreamResponse:
    """GET /api/v1/nodes/NODE/proxy/PATH: the API server passes it to the node's kubelet (port 10250)."""
    if request.method != "GET":
        raise _method_not_allowed(request.method)
    st.store.get("nodes", None, node)  # 404 nodes "x" not found
    if st.node_proxy is None:
        raise ApiError(503, f"error trying to reach service: no kubelet for node {node}", "ServiceUnavailable", {})
    code, body, ctype = st.node_proxy(node, path)
    if code == 503:
        raise ApiError(503, body, "ServiceUnavailable", {})
    return web.Response(status=code, text=body, content_type=ctype)


def _signed_token_user(st: _State, auth: str) -> str | None:
    """The user of a signed, unexpired bearer token (authn.py), else None (and the request gets 401). The scheme
    is case-insensitive (apiserver pkg/authentication/request/bearertoken: strings.ToLower(parts[0]) ==
    "bearer"; kubernetes-python's in-cluster loader sends "bearer")."""
    scheme, _, token = auth.strip().partition(" ")
    if st.exec_key is None or scheme.lower() != "bearer":
        return None
    from console.lab.kubeapi.authn import verify

    return verify(st.exec_key, token.strip())


@web.middleware
async def _guard(request: web.Request, handler: Any) -> web.StreamResponse:
    st: _State = request.app[_STATE]
    st.request_log.append(f"{request.method} {request.path_qs}")
    if st.token is not None and request.path not in _OPEN_PATHS:
        auth = request.headers.get("Authorization", "")
        user = st.users.get(auth.removeprefix("Bearer ")) if auth.startswith("Bearer ") else None
        if user is not None:
            request[_USER] = user
        elif hmac.compare_digest(auth.encode(), f"Bearer {st.token}".encode()):
            request[_USER] = ADMIN
        elif (signed := _signed_token_user(st, auth)) is not None:
            # as an OIDC authenticator: the token says who, RBAC decides what; the lab puts its own exec user
            # in system:masters (cluster-admin, like the lab token), any other subject holds only its bindings
            request[_USER] = User(signed, (MASTERS, AUTHENTICATED) if signed == EXEC_USER else (AUTHENTICATED,))
        else:
            return json_response(status_body(401, "Unauthorized", "Unauthorized"), 401)
    try:
        return await handler(request)
    except ApiError as err:
        return json_response(err.body(), err.code)
    except StoreError as err:
        e = from_store_error(err, None, None)
        return json_response(e.body(), e.code)
    except (ConnectionResetError, web.HTTPException):
        raise
    except Exception as err:  # a bug: answer like the API server would, and keep the traceback
        log.exception("kube api: %s %s failed", request.method, request.path)
        return json_response(status_body(500, f"Internal error occurred: {err}", "InternalError"), 500)


class KubeAPI:
    """A running lab API server; `url` is what a kubeconfig's cluster.server points at.

    `ca_pem` is the CA to trust for an https `url` (None for plain http).
    """

    def __init__(self, runner: web.AppRunner, host: str, port: int, ca_pem: bytes | None,
                 ssl_context: Any = None, compactor: asyncio.Task[None] | None = None,
                 state: _State | None = None) -> None:
        self._runner = runner
        self._compactor = compactor
        self._state = state
        self._ssl_context = ssl_context
        self.host = host
        self.port = port
        self.ca_pem = ca_pem
        self.url = f"{'https' if ca_pem else 'http'}://{host}:{port}"

    async def stop(self) -> None:
        if self._compactor is not None:
            self._compactor.cancel()
        await self._runner.cleanup()

    @property
    def metrics(self) -> metrics.Metrics | None:
        """The metrics.k8s.io backend (None when started without it); `metrics.served = False` unregisters it."""
        return self._state.metrics if self._state else None

    def requests(self, prefix: str = "") -> list[str]:
        """The requests served so far ("GET /api/v1/nodes?limit=500"), oldest first, those starting with `prefix`."""
        log = list(self._state.request_log) if self._state else []
        return [r for r in log if r.startswith(prefix)]

    async def close_port(self) -> None:
        """As a stopped API server: the port refuses connections and the open ones (watches) drop."""
        for site in list(self._runner.sites):
            await site.stop()
        if self._runner.server is not None:
            await self._runner.server.shutdown(1.0)

    async def reopen_port(self) -> None:
        """Serve again on the same port with the same certificate (the kubeconfigs stay valid)."""
        await web.TCPSite(self._runner, self.host, self.port, ssl_context=self._ssl_context).start()


async def start_kube_api(
    store: Store,
    logs: PodLogs,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    tls: bool | None = None,
    node_proxy: Callable[[str, str], tuple[int, str, str]] | None = None,
    unbound: dict[str, str] | None = None,
    watch_expiry: float | None = None,
    exec_key: bytes | None = None,
    users: dict[str, str] | None = None,
    metrics_server: bool = True,
) -> KubeAPI:
    """Start serving `store` on the running asyncio loop; port 0 picks a free port.

    `tls` defaults to on when a token is set: kubectl never sends a bearer token
    to a plain-http server. The CA to trust is `KubeAPI.ca_pem`. `unbound`: {token: user name} of users
    that authenticate but hold no RBAC binding (403 on every resource request, lab/kubeapi/authz.py); `users`:
    {token: user name} of the users RBAC decides for (group system:authenticated). The bootstrap RBAC policy is
    created in `store` when absent (console/lab/rbac_policy.py), as kube-apiserver reconciles it at start.
    `watch_expiry`: watches end after that many seconds with a 410 ERROR event, and the store is compacted
    every that many seconds (list/watch from before the compaction: 410), see `_compact`. `exec_key`
    signs the short-lived tokens of the exec plugin (lab/kubeapi/authn.py), accepted until they expire.
    `metrics_server`: serve metrics.k8s.io (lab/kubeapi/metrics.py) as a cluster with metrics-server does.
    """
    from console.lab.rbac_policy import bootstrap, seed

    seed(store, bootstrap())
    use_tls = token is not None if tls is None else tls
    cert = make_serving_cert(host) if use_tls else None
    app = web.Application(middlewares=[_guard], client_max_size=64 * 1024 * 1024)
    known = {**(unbound or {}), **(users or {})}
    state = _State(store, logs, token, node_proxy=node_proxy, users={t: User(n) for t, n in known.items()},
                   watch_expiry=watch_expiry or None, exec_key=exec_key,
                   metrics=metrics.Metrics(store) if metrics_server else None)
    app[_STATE] = state
    app.router.add_route("*", "/{tail:.*}", _dispatch)
    # open watches end within a second of stop() instead of at their timeoutSeconds
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0)
    await runner.setup()
    ssl_context = cert.server_context() if cert else None
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    await site.start()
    server = site._server
    sockets = server.sockets if isinstance(server, asyncio.Server) else []  # the bound port when port=0
    bound = sockets[0].getsockname()[1] if sockets else port
    state.address = f"{host}:{bound}"
    compactor = asyncio.get_running_loop().create_task(_compact(store, watch_expiry)) if watch_expiry else None
    return KubeAPI(runner, host, bound, cert.ca_pem if cert else None, ssl_context, compactor, state)


async def _compact(store: Store, every: float) -> None:
    """kube-apiserver compacts etcd every --etcd-compaction-interval to the revision it saw one interval
    earlier (k8s.io/apiserver/pkg/storage/etcd3/compact.go); the lab does the same every `every` seconds."""
    seen = store.resource_version
    while True:
        await asyncio.sleep(every)
        store.compact(seen)
        seen = store.resource_version
