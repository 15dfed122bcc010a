"""The HTTPS server of a lab node's kubelet (upstream: pkg/kubelet/server/server.go), which kube-apiserver's node
proxy and `kubectl logs` reach at the node's InternalIP, port 10250.

    server = KubeletServer(kubelet, ca=cp.ca, pods=lambda: pods_bound_to(node), logs=pod_logs)
    loop.call(server.start())   # on the lab's asyncio loop (console/lab/loop.py)
    ...
    loop.call(server.stop())

Each node listens on its own address (any 127/8 address works on Linux). Upstream's node proxy
(/api/v1/nodes/N/proxy/..., pkg/registry/core/node isProxyableHostname) only dials global unicast addresses, so
it refuses a node whose InternalIP is on 127/8 ("address not allowed"); `kubectl logs` has no such check.
A kubelet that is not running has no listener, so the API server sees `connection refused` as it would: `sync()`
starts or stops listening to follow the agent's state. TLS as kubeadm sets it up: a serving certificate from the
cluster CA for the node's IP, and client certificates required and checked against that CA (the API server
presents its kubelet-client certificate). Authorization (the kubelet's SubjectAccessReview webhook) is not
modelled: a valid client certificate may read everything.

Served: /healthz (and /healthz/ping), /configz, /pods, /containerLogs/{namespace}/{pod}/{container} with
follow, tailLines, limitBytes, previous and stream, /metrics/resource (what metrics-server scrapes). Anything else
answers as Go's http.NotFound does.

/metrics/resource is the kubelet's resource-metrics collector (pkg/kubelet/metrics/collectors/resource_metrics.go)
in Prometheus' text format, as client_golang writes it: families sorted by name, series by label values, values as
Go's strconv 'g', each sample with its stats' timestamp in milliseconds (container_start_time_seconds without).
metrics-server (pkg/scraper/client/resource/decode.go) takes CPU as a counter and computes the rate between two
scrapes, so the usage here is a model with cumulative CPU seconds: each running container uses a slowly varying
fraction of its requests (0.45 ± 0.3 of its CPU request, 0.6 ± 0.15 of its memory request, over a period of
`PERIOD`, phase per container; 10m and 32Mi without requests), integrated from the container's start; the node
adds its system part (kubelet, runtime, OS: ~50m + 3% of its CPUs, ~300Mi + 5% of its memory) to its running
pods' and never loses what containers that ended used (its counter only grows, as the root cgroup's does).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import ssl
import tempfile
import time
import zlib
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web
from kubernetes.utils import parse_quantity

from console.lab.https import serve
from console.lab.pki import CA, KeyPair, write_private

log = logging.getLogger(__name__)

PORT = 10250
LISTENING_STATES = ("running", "starting")  # the kubelet process is up (starting: not yet Ready)
NOT_FOUND = "404 page not found\n"
_FOLLOW_POLL = 0.5  # seconds between checks that a following client is still there

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class KubeletAgent(Protocol):
    """What the server reads of the node's kubelet (console.lab.kubelet.Kubelet fits)."""

    @property
    def node_name(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def internal_ip(self) -> str: ...

    @property
    def capacity(self) -> dict[str, str]:
        """The node's capacity as its kubelet read it at its start ("cpu", "memory" as quantities)."""
        ...

    def configz(self) -> dict[str, Any]: ...


class LogSource(Protocol):
    """Container logs per pod (console.lab.podlogs.PodLogs fits); `follow`'s callback may run on any thread."""

    def read(self, namespace: str, pod: str) -> str: ...

    def follow(self, namespace: str, pod: str, callback: Callable[[str], None]) -> Callable[[], None]: ...


PodsSource = Callable[[], list[dict[str, Any]]]


def _text(status: int, body: str) -> web.Response:
    # Go's http.Error/NotFound headers
    return web.Response(status=status, text=body, content_type="text/plain", charset="utf-8",
                        headers={"X-Content-Type-Options": "nosniff"})


def _json(body: Any) -> web.Response:
    return web.Response(text=json.dumps(body), content_type="application/json")


def _int_param(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    value = int(raw)  # ValueError -> 400 in the handler
    if value < 0:
        raise ValueError(name)
    return value


def _tail(text: str, lines: int) -> str:
    if lines == 0:
        return ""
    parts = text.splitlines(keepends=True)
    return "".join(parts[-lines:])


def _containers(pod: dict[str, Any]) -> set[str]:
    spec = pod.get("spec") or {}
    return {c.get("name", "") for key in ("containers", "initContainers", "ephemeralContainers")
            for c in spec.get(key) or ()}


# -- /metrics/resource ----------------------------------------------------------------------------------------
PERIOD = 600.0  # seconds for a container's usage to go round its cycle
_MiB = 1024 * 1024
_SCRAPE_ERROR = "1 if there was an error while getting container metrics, 0 otherwise"
_HELP = {  # name: (type, stability, help) as resource_metrics.go declares them
    "container_cpu_usage_seconds_total": ("counter", "STABLE",
                                          "Cumulative cpu time consumed by the container in core-seconds"),
    "container_memory_working_set_bytes": ("gauge", "STABLE", "Current working set of the container in bytes"),
    "container_start_time_seconds": ("gauge", "STABLE", "Start time of the container since unix epoch in seconds"),
    "container_swap_usage_bytes": ("gauge", "ALPHA", "Current amount of the container swap usage in bytes. "
                                   "Reported only on non-windows systems"),
    "node_cpu_usage_seconds_total": ("counter", "STABLE", "Cumulative cpu time consumed by the node in core-seconds"),
    "node_memory_working_set_bytes": ("gauge", "STABLE", "Current working set of the node in bytes"),
    "node_swap_usage_bytes": ("gauge", "ALPHA",
                              "Current swap usage of the node in bytes. Reported only on non-windows systems"),
    "pod_cpu_usage_seconds_total": ("counter", "STABLE", "Cumulative cpu time consumed by the pod in core-seconds"),
    "pod_memory_working_set_bytes": ("gauge", "STABLE", "Current working set of the pod in bytes"),
    "pod_swap_usage_bytes": ("gauge", "ALPHA", "Current amount of the pod swap usage in bytes. "
                             "Reported only on non-windows systems"),
    "resource_scrape_error": ("gauge", "STABLE", _SCRAPE_ERROR),
    "scrape_error": ("gauge", "ALPHA", _SCRAPE_ERROR),
}

Sample = tuple[tuple[str, ...], float, int | None]  # label values, value, timestamp (ms) or none


def _phase(key: str) -> float:
    return (zlib.crc32(key.encode()) % 1000) / 1000 * 2 * math.pi


def _fraction(key: str, t: float, base: float, swing: float) -> float:
    """The share of its requests a container (or a node's system part) uses at time `t`."""
    return base + swing * math.sin(2 * math.pi * t / PERIOD + _phase(key))


def _integral(key: str, start: float, t: float, base: float, swing: float) -> float:
    """∫ _fraction dt from `start` to `t`: seconds of use of one unit; grows with `t` as base > swing."""
    w, phase = 2 * math.pi / PERIOD, _phase(key)
    return base * (t - start) - swing / w * (math.cos(w * t + phase) - math.cos(w * start + phase))


@lru_cache(maxsize=4096)
def _quantity(resource: str, value: str) -> int:
    """A quantity as the scheduler counts it: millicores for cpu, else whole units rounded up."""
    q = parse_quantity(value)
    return math.ceil(q * 1000) if resource == "cpu" else math.ceil(q)


def _epoch(stamp: Any) -> float | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def go_float(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 64): what client_golang's text format writes."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(map(str, digits))
    exp = len(mantissa) + exponent - 1  # of the first digit
    prefix = "-" if sign else ""
    if exp < -4 or exp >= 6:  # shortest formatting decides at precision 6
        tail = f".{mantissa[1:]}" if len(mantissa) > 1 else ""
        return f"{prefix}{mantissa[0]}{tail}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{prefix}0.{'0' * (-exp - 1)}{mantissa}"
    if len(mantissa) <= exp + 1:
        return prefix + mantissa + "0" * (exp + 1 - len(mantissa))
    return f"{prefix}{mantissa[:exp + 1]}.{mantissa[exp + 1:]}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def exposition(families: dict[str, tuple[tuple[str, ...], list[Sample]]]) -> str:
    """Prometheus text format of {name: (label names, samples)}, ordered as client_golang's Gather orders it."""
    out = []
    for name in sorted(families):
        labels, samples = families[name]
        kind, stability, text = _HELP[name]
        out += [f"# HELP {name} [{stability}] {text}", f"# TYPE {name} {kind}"]
        # label pairs sorted by name (prometheus.MakeLabelPairs), series by their values in that order
        rows = sorted((sorted(zip(labels, values, strict=True)), value, stamp) for values, value, stamp in samples)
        for pairs, value, stamp in rows:
            series = name + ("{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}" if pairs else "")
            out.append(f"{series} {go_float(value)}" + (f" {stamp}" if stamp is not None else ""))
    return "\n".join(out) + "\n"


class ResourceUsage:
    """The usage model of one node's containers and of the node (see the module's doc); remembers what ended
    containers used, so the node's CPU counter never goes back."""

    def __init__(self, node_name: str, *, clock: Callable[[], float] = time.time, steady: bool = False) -> None:
        """`steady`: every container (and the node's system part) uses exactly its mean share at all times, so
        metrics-server's rates between any two scrapes are the same numbers in every run (pictures, snapshots)."""
        self.node_name = node_name
        self.clock = clock
        self.swing = 0.0 if steady else 1.0  # times each share's swing around its mean
        self.since = clock()  # the node's counter counts from here (its boot, as far as scrapes can tell)
        self._seen: dict[str, float] = {}  # container id -> CPU seconds at the last scrape
        self._retired = 0.0  # CPU seconds of containers no longer running

    @staticmethod
    def _containers(pod: dict[str, Any]) -> Iterable[tuple[dict[str, Any], float]]:
        """(spec, start time) of each running container of a Running pod."""
        status = pod.get("status") or {}
        if status.get("phase") != "Running":
            return
        running = {s.get("name"): s for s in status.get("containerStatuses") or []
                   if "running" in (s.get("state") or {})}
        for container in (pod.get("spec") or {}).get("containers") or []:
            state = running.get(container.get("name"))
            if state is None:
                continue
            start = _epoch(state["state"]["running"].get("startedAt")) or _epoch(status.get("startTime"))
            if start is not None:
                yield container, start

    def _key(self, pod: dict[str, Any]) -> str:
        meta = pod.get("metadata") or {}
        # same phase in every run: a controller's pod by its generateName and node (its name is random)
        name = f"{meta['generateName']}@{self.node_name}" if meta.get("generateName") else meta.get("name", "")
        return f"{meta.get('namespace', '')}/{name}"

    def metrics(self, pods: list[dict[str, Any]], capacity: dict[str, str]) -> str:
        """GET /metrics/resource now."""
        t = self.clock()
        ms = int(t * 1000)
        fams: dict[str, tuple[tuple[str, ...], list[Sample]]] = {
            name: (("container", "pod", "namespace"), []) for name in (
                "container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
                "container_start_time_seconds", "container_swap_usage_bytes")}
        fams |= {name: (("pod", "namespace"), []) for name in (
            "pod_cpu_usage_seconds_total", "pod_memory_working_set_bytes", "pod_swap_usage_bytes")}
        seen: dict[str, float] = {}
        node_cpu, node_mem = 0.0, 0
        for pod in pods:
            meta = pod.get("metadata") or {}
            name, namespace = meta.get("name", ""), meta.get("namespace", "")
            pod_cpu, pod_mem, any_running = 0.0, 0, False
            for container, start in self._containers(pod):
                any_running = True
                cname = container.get("name", "")
                req = (container.get("resources") or {}).get("requests") or {}
                cpu_m = _quantity("cpu", str(req["cpu"])) if "cpu" in req else 10
                mem = _quantity("memory", str(req["memory"])) if "memory" in req else 32 * _MiB
                key = f"{self._key(pod)}/{cname}"
                cpu = cpu_m / 1000 * _integral(key, start, max(t, start), 0.45, 0.3 * self.swing)
                mem_b = int(mem * _fraction(key + "m", t, 0.6, 0.15 * self.swing)) // 1024 * 1024
                seen[f"{meta.get('uid', '')}/{cname}/{start}"] = cpu
                labels = (cname, name, namespace)
                fams["container_cpu_usage_seconds_total"][1].append((labels, cpu, ms))
                fams["container_memory_working_set_bytes"][1].append((labels, mem_b, ms))
                fams["container_start_time_seconds"][1].append((labels, start, None))
                fams["container_swap_usage_bytes"][1].append((labels, 0, ms))
                pod_cpu, pod_mem = pod_cpu + cpu, pod_mem + mem_b
            if any_running:
                fams["pod_cpu_usage_seconds_total"][1].append(((name, namespace), pod_cpu, ms))
                fams["pod_memory_working_set_bytes"][1].append(((name, namespace), pod_mem, ms))
                fams["pod_swap_usage_bytes"][1].append(((name, namespace), 0, ms))
                node_cpu, node_mem = node_cpu + pod_cpu, node_mem + pod_mem
        self._retired += sum(cpu for key, cpu in self._seen.items() if key not in seen)
        self._seen = seen
        cap_cores = _quantity("cpu", str(capacity.get("cpu", "1"))) / 1000
        cap_b = _quantity("memory", str(capacity.get("memory", "1Gi")))
        # kubelet, container runtime and the OS: ~50m + 3% of the CPUs, ~300Mi + 5% of the memory
        system_cpu = (0.05 + 0.03 * cap_cores) * _integral(self.node_name, self.since, t, 1.0, 0.2 * self.swing)
        system_mem = 300 * _MiB + int(0.05 * cap_b)
        fams["node_cpu_usage_seconds_total"] = ((), [((), self._retired + node_cpu + system_cpu, ms)])
        fams["node_memory_working_set_bytes"] = ((), [((), min(cap_b, node_mem + system_mem), ms)])
        fams["node_swap_usage_bytes"] = ((), [((), 0, ms)])
        fams["resource_scrape_error"] = ((), [((), 0, None)])
        fams["scrape_error"] = ((), [((), 0, None)])
        return exposition(fams)


@web.middleware
async def _middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPNotFound:
        return _text(404, NOT_FOUND)
    except web.HTTPMethodNotAllowed:
        return _text(405, "405: Method Not Allowed")  # go-restful's answer


class KubeletServer:
    """The kubelet HTTPS endpoint of one node; `start()`, `stop()` and `sync()` run on the lab's asyncio loop."""

    def __init__(self, agent: KubeletAgent, *, ca: CA, pods: PodsSource, logs: LogSource,
                 host: str | None = None, port: int = PORT, steady_usage: bool = False) -> None:
        """`host` defaults to the agent's InternalIP; `pods` returns the pods bound to the node (v1 dicts)."""
        self.agent = agent
        self.pods = pods
        self.logs = logs
        self.host = host or agent.internal_ip
        self.port = port
        self._ca_pem = ca.cert_pem
        # what a kubelet-serving CSR asks for (kubelet's serverTLSBootstrap); the node's IP as SAN
        self.serving: KeyPair = ca.issue(f"system:node:{agent.node_name}", orgs=("system:nodes",),
                                         dns=(agent.node_name,), ips=(self.host,), server=True)
        self._ssl = self._ssl_context()
        self.usage = ResourceUsage(agent.node_name, steady=steady_usage)
        self._runner: web.AppRunner | None = None
        self._streams: set[asyncio.Event] = set()  # wake-ups of the log followers, set on stop
        self._run = 0  # bumped by stop(): a stream of an earlier run ends even if start() came right after

    @property
    def listening(self) -> bool:
        return self._runner is not None

    @property
    def followers(self) -> int:
        """Open `follow=true` log streams."""
        return len(self._streams)

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="kubelet-tls-") as tmp:  # load_cert_chain only reads files
            cert, key = Path(tmp) / "kubelet.crt", Path(tmp) / "kubelet.key"
            cert.write_bytes(self.serving.cert_pem)
            write_private(key, self.serving.key_pem)
            ctx.load_cert_chain(cert, key)
        ctx.load_verify_locations(cadata=self._ca_pem.decode())
        ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx

    def _app(self) -> web.Application:
        app = web.Application(middlewares=[_middleware])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/healthz/ping", self._healthz)
        app.router.add_get("/configz", self._configz)
        app.router.add_get("/pods", self._pods)
        app.router.add_get("/pods/", self._pods)
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._container_logs)
        app.router.add_get("/metrics/resource", self._metrics_resource)
        return app

    # -- lifecycle ---------------------------------------------------------------------------------------------
    async def start(self) -> None:
        if self._runner is not None:
            return
        self._runner, self.port = await serve(self._app(), self.host, self.port, self._ssl)
        log.info("kubelet server of %s listening on %s", self.agent.node_name, self.url)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._run += 1
        for wake in list(self._streams):
            wake.set()
        await runner.cleanup()
        log.info("kubelet server of %s stopped", self.agent.node_name)

    async def sync(self) -> None:
        """Listen exactly while the agent's kubelet process is up."""
        if self.agent.state in LISTENING_STATES:
            await self.start()
        else:
            await self.stop()

    # -- handlers ----------------------------------------------------------------------------------------------
    async def _healthz(self, request: web.Request) -> web.Response:
        return _text(200, "ok")

    async def _configz(self, request: web.Request) -> web.Response:
        return _json(self.agent.configz())

    async def _pods(self, request: web.Request) -> web.Response:
        return _json({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": list(self.pods())})

    async def _metrics_resource(self, request: web.Request) -> web.Response:
        body = self.usage.metrics(list(self.pods()), dict(self.agent.capacity))
        # what promhttp answers a client that asks for no format in particular
        return web.Response(body=body.encode(), headers={
            "Content-Type": "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"})

    async def _container_logs(self, request: web.Request) -> web.StreamResponse:
        namespace = request.match_info["namespace"]
        name = request.match_info["pod"]
        container = request.match_info["container"]
        try:
            tail_lines = _int_param(request, "tailLines")
            limit = _int_param(request, "limitBytes")
        except ValueError:
            return _text(400, '{"message": "Unable to decode query."}')
        if limit == 0:
            return _text(422, '{"message": "Invalid request."}')  # validation: limitBytes must be > 0
        stream = request.query.get("stream", "All")
        if stream not in ("All", "Stdout", "Stderr"):
            return _text(400, f'invalid stream type "{stream}"')
        pod = next((p for p in self.pods() if p.get("metadata", {}).get("namespace") == namespace
                    and p.get("metadata", {}).get("name") == name), None)
        if pod is None:
            return _text(404, f'pod "{name}" does not exist')
        if container not in _containers(pod):
            return _text(404, f'container "{container}" not found in pod "{name}"')
        if request.query.get("previous") == "true":
            # the lab's containers never restart, so there is no previous instance (kuberuntime's message)
            return _text(400, f'previous terminated container "{container}" in pod "{name}" not found')
        follow = request.query.get("follow") == "true"

        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await resp.prepare(request)
        if stream == "Stderr":  # the lab's log holds what containers write, all of it counted as stdout
            await resp.write_eof()
            return resp
        wake = asyncio.Event()
        loop = asyncio.get_running_loop()

        def appended(_chunk: str) -> None:  # on the appending thread
            with contextlib.suppress(RuntimeError):  # the loop closed under a late append
                loop.call_soon_threadsafe(wake.set)

        # subscribed before the first read: an append between the two still wakes us; the text itself is
        # re-read, so a chunk is never sent twice or lost (the log only grows)
        unfollow = self.logs.follow(namespace, name, appended) if follow else (lambda: None)
        self._streams.add(wake)
        run = self._run
        try:
            text = self.logs.read(namespace, name)
            first = text if tail_lines is None else _tail(text, tail_lines)
            sent_at = len(text)
            budget = limit
            if not await self._send(resp, first, budget):
                return resp
            if budget is not None:
                budget -= len(first.encode())
            while follow and run == self._run and (budget is None or budget > 0):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), _FOLLOW_POLL)
                wake.clear()
                if request.transport is None or request.transport.is_closing():
                    break  # the client went away
                text = self.logs.read(namespace, name)
                if len(text) < sent_at:
                    sent_at = 0  # the log was dropped and started over
                chunk, sent_at = text[sent_at:], len(text)
                if chunk:
                    if not await self._send(resp, chunk, budget):
                        break
                    if budget is not None:
                        budget -= len(chunk.encode())
            if run != self._run and request.transport is not None:
                request.transport.abort()  # the kubelet went away mid-stream: no clean end of the body
        finally:
            unfollow()
            self._streams.discard(wake)
        return resp

    @staticmethod
    async def _send(resp: web.StreamResponse, text: str, budget: int | None) -> bool:
        """Write `text` (cut to `budget` bytes); False when the client is gone."""
        data = text.encode()
        if budget is not None:
            data = data[:budget]
        if not data:
            return True
        try:
            await resp.write(data)
        except ConnectionError:
            return False
        return True

    def __repr__(self) -> str:
        return f"KubeletServer({self.agent.node_name} at {self.url}, {'listening' if self.listening else 'down'})"
