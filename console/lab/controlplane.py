"""The lab's Kubernetes control plane: upstream's etcd, kube-apiserver, kube-scheduler and kube-controller-manager,
each its own process of the one binary built from console/lab/upstream/kube.

Flags follow what others run for a local control plane (controller-runtime's envtest, kwokctl, k3s): TLS with a
throwaway CA, client certificates for users and components, service-account keys, Node and RBAC authorizers,
NodeRestriction beside the default admission plugins (PodSecurity among them), and the aggregation layer's
request-header and proxy-client certificates. Nothing here decides what a server does: the servers do.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from console.lab.pki import CA, KeyPair, signing_key, write_private

log = logging.getLogger(__name__)
Progress = Callable[[str], None]

SERVICE_CIDR = "10.96.0.0/16"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
ADMIN_USER = "lab-admin"


class ControlPlaneError(Exception):
    """A component did not start; the message names it and where its log is."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def die_with_parent() -> list[str]:
    """A command prefix (util-linux setpriv, installed by ./dev) that makes the process die with the lab; empty
    where setpriv is missing."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


# Each component's soft memory limit (the Go runtime's GOMEMLIMIT, runtime/debug.SetMemoryLimit) as a share of
# the machine's memory. Left to GOGC alone a Go heap grows to twice its live data before it is collected: at
# 5,000 nodes and 150,000 pods kube-apiserver, kube-controller-manager and kube-scheduler together took 12 GB
# at ready and more than the rest of a 23 GB machine while a client listed everything. Near its limit the
# runtime collects sooner instead (never more than half the CPU on it), so a lab that fits is not slowed.
_MEMORY_SHARE = {"kube-apiserver": 0.35, "kube-controller-manager": 0.1, "kube-scheduler": 0.1, "etcd": 0.05}


def go_memory_limit(component: str) -> int:
    """Bytes (0: none) for `component`'s GOMEMLIMIT: its share of MemTotal."""
    share = _MEMORY_SHARE.get(component, 0.0)
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(int(line.split()[1]) * 1024 * share)
    except (OSError, ValueError, IndexError):
        pass
    return 0


@dataclass
class Component:
    name: str
    args: list[str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self, binary: Path) -> None:
        # no proxy from the environment: the API server dials kubelets and aggregated APIs through
        # http.ProxyFromEnvironment, and the lab's are all on loopback
        env = {k: v for k, v in os.environ.items() if k.lower() not in ("https_proxy", "http_proxy")}
        limit = go_memory_limit(self.name)
        if limit and "GOMEMLIMIT" not in env:
            env["GOMEMLIMIT"] = str(limit)
        with open(self.log_path, "ab") as out:
            # a process group of its own: a Ctrl-C at the lab's terminal reaches the lab, which stops these in
            # order; and killed with the lab if the lab itself is killed (setpriv sets the parent-death signal,
            # then execs the component)
            self.proc = subprocess.Popen([*die_with_parent(), str(binary), self.name, *self.args], stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                         env=env)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 20) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class Credentials:
    """What the lab writes into kubeconfigs: the cluster's CA and a client certificate per user."""

    ca_pem: bytes
    users: dict[str, KeyPair] = field(default_factory=dict)


class ControlPlane:
    def __init__(self, root: Path, binary: Path, *, host: str = "127.0.0.1",
                 etcd_compaction_interval: str = "5m", node_monitor_grace_period: str = "50s",
                 authentication_config: Path | None = None, pod_max_backoff: int = 10,
                 audit_users: tuple[str, ...] = (), watch_cache: bool = True,
                 controller_manager_qps: int = 0) -> None:
        self.root = root
        self.binary = binary
        self.host = host
        self.etcd_compaction_interval = etcd_compaction_interval
        # False: --watch-cache=false, every list and watch is served by etcd (no cacher in front,
        # k8s.io/apiserver/pkg/storage/cacher): a watch from a compacted revision then ends in 410 Expired
        self.watch_cache = watch_cache
        self.node_monitor_grace_period = node_monitor_grace_period
        # an AuthenticationConfiguration (apiserver.config.k8s.io/v1) for the API server: JWT authenticators
        self.authentication_config = authentication_config
        # kube-scheduler's podMaxBackoffSeconds (its default 10): how long an unschedulable pod may wait for its
        # next attempt after a cluster event
        self.pod_max_backoff = pod_max_backoff
        # kube-controller-manager's --kube-api-qps and --kube-api-burst (0: its defaults, 20 and 30); each of its
        # controllers has a client of its own held to that rate
        self.controller_manager_qps = controller_manager_qps
        # the users whose requests the API server's audit log records (requests()): the people at the cluster,
        # not its components
        self.audit_users = audit_users
        self.audit_log = root / "audit.log"
        self.pki_dir = root / "pki"
        self.api_port = 0
        self.etcd_port = 0
        self.ca = CA("lab-kubernetes-ca")
        self.front_proxy_ca = CA("lab-front-proxy-ca")
        self.components: dict[str, Component] = {}

    # -- facts ------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.api_port}"

    @property
    def ca_pem(self) -> bytes:
        return self.ca.cert_pem

    def user_cert(self, user: str, groups: tuple[str, ...] = ()) -> KeyPair:
        """A client certificate the API server authenticates as `user` in `groups`."""
        return self.ca.issue(user, orgs=groups, client=True)

    @property
    def etcd_url(self) -> str:
        return f"http://{self.host}:{self.etcd_port}"

    def compact_revision(self) -> int:
        """etcd's last compaction: the revisions below it are gone (0 before the first). From its /metrics,
        etcd_debugging_mvcc_compact_revision (go.etcd.io/etcd/server/v3/storage/mvcc/metrics.go)."""
        with _NO_PROXY.open(f"{self.etcd_url}/metrics", timeout=5) as resp:
            for line in resp.read().decode().splitlines():
                if line.startswith("etcd_debugging_mvcc_compact_revision "):
                    return int(float(line.split()[1]))
        return 0

    def etcd_delete(self, key: str) -> int:
        """Delete `key` (/registry/pods/NAMESPACE/NAME) in etcd itself, past the API server, as another API
        server of the cluster would while this one is down; the number of keys deleted. etcd's gRPC gateway
        (POST /v3/kv/deleterange, keys in base64: go.etcd.io/etcd/api/v3/etcdserverpb/gw)."""
        body = json.dumps({"key": base64.b64encode(key.encode()).decode()}).encode()
        req = urllib.request.Request(f"{self.etcd_url}/v3/kv/deleterange", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        with _NO_PROXY.open(req, timeout=10) as resp:
            return int(json.loads(resp.read()).get("deleted", 0))

    # -- lifecycle --------------------------------------------------------
    def start(self, progress: Progress = lambda _msg: None) -> None:
        # free_port() lets the port go before the component binds it, so another process on the machine (a second
        # lab, a parallel test worker) can take it between the two: the component then exits "address already in
        # use" and the control plane starts again on fresh ports
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            try:
                self._start_once(progress)
                return
            except ControlPlaneError as e:
                if attempt == _PORT_ATTEMPTS or "address already in use" not in str(e):
                    raise
                progress(f"a port was taken meanwhile; starting again on other ports ({e.args[0].splitlines()[0]})")
                self.stop()
                self.components.clear()
                shutil.rmtree(self.root / "etcd", ignore_errors=True)

    def _start_once(self, progress: Progress) -> None:
        t0 = time.monotonic()
        self.root.mkdir(parents=True, exist_ok=True)
        self.etcd_port, self.api_port = free_port(self.host), free_port(self.host)
        self._write_pki()
        progress("starting etcd")
        self._start_etcd()
        progress(f"starting kube-apiserver (etcd ready after {time.monotonic() - t0:.1f}s)")
        self._start_apiserver()
        self.wait_apiserver(60)
        progress(f"starting kube-scheduler and kube-controller-manager "
                 f"(API ready after {time.monotonic() - t0:.1f}s)")
        for name in ("kube-scheduler", "kube-controller-manager"):
            self._start(name, self._component_args(name))

    def stop(self) -> None:
        for name in ("kube-controller-manager", "kube-scheduler", "kube-apiserver", "etcd"):
            if name in self.components:
                self.components[name].stop()

    def discard(self) -> None:
        """Kill every component at once: the lab is done with this cluster (the next start makes a new one), so
        nothing is worth a graceful shutdown, which took 1.3s (the API server drains, etcd syncs)."""
        running = [c.proc for c in self.components.values() if c.proc is not None and c.running()]
        for proc in running:
            proc.kill()
        for proc in running:
            proc.wait()

    def apiserver_down(self) -> None:
        """The API server process stops: its port refuses, watches drop; etcd and the rest keep running."""
        self.components["kube-apiserver"].stop()

    def apiserver_up(self, timeout: float = 60) -> None:
        """The API server starts again on the same port with the same certificates; a scheduler or controller
        manager that exited meanwhile (they exit when the API server is gone at the wrong moment) starts again,
        as their systemd units' Restart= would."""
        self._start_apiserver()
        self.wait_apiserver(timeout)
        for name in ("kube-scheduler", "kube-controller-manager"):
            if name in self.components and not self.components[name].running():
                self.start_component(name)

    def set_pod_max_backoff(self, seconds: int) -> None:
        """kube-scheduler starts again with podMaxBackoffSeconds `seconds`: it reads its configuration once."""
        self.pod_max_backoff = seconds
        if "kube-scheduler" in self.components:
            self.stop_component("kube-scheduler")
            self.start_component("kube-scheduler")

    def stop_component(self, name: str) -> None:
        self.components[name].stop()

    def start_component(self, name: str) -> None:
        self._start(name, self._component_args(name))

    # -- parts ------------------------------------------------------------
    def _write_pki(self) -> None:
        d = self.pki_dir
        self.ca.pair.write(d, "ca")
        self.front_proxy_ca.pair.write(d, "front-proxy-ca")
        self.ca.issue("kube-apiserver", dns=("localhost", "kubernetes", "kubernetes.default",
                                             "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"),
                      ips=(self.host, "127.0.0.1", "10.96.0.1"), server=True).write(d, "apiserver")
        self.ca.issue("kube-apiserver-kubelet-client", orgs=("kubeadm:cluster-admins",),
                      client=True).write(d, "apiserver-kubelet-client")
        self.front_proxy_ca.issue("front-proxy-client", client=True).write(d, "front-proxy-client")
        sa = signing_key()
        (d / "sa.pub").write_bytes(sa.cert_pem)
        write_private(d / "sa.key", sa.key_pem)
        for name, user in (("kube-scheduler", "system:kube-scheduler"),
                           ("kube-controller-manager", "system:kube-controller-manager")):
            self.write_kubeconfig(self.root / f"{name}.kubeconfig", {name: self.user_cert(user)})
        self.write_kubeconfig(self.root / "admin.kubeconfig", {ADMIN_USER: self.admin_cert()})

    def admin_cert(self) -> KeyPair:
        return self.user_cert(ADMIN_USER, ("system:masters",))

    def write_kubeconfig(self, path: Path, users: dict[str, KeyPair], *, cluster: str = "lab",
                         contexts: dict[str, str] | None = None) -> None:
        """A kubeconfig with one context per user, the first current; mode 0600. `contexts` ({context: user})
        names them; without it each context is named after its user."""
        contexts = contexts or {u: u for u in users}
        doc = {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": cluster, "cluster": {
                "server": self.url, "certificate-authority-data": base64.b64encode(self.ca_pem).decode()}}],
            "users": [{"name": u, "user": {"client-certificate-data": base64.b64encode(p.cert_pem).decode(),
                                           "client-key-data": base64.b64encode(p.key_pem).decode()}}
                      for u, p in users.items()],
            "contexts": [{"name": c, "context": {"cluster": cluster, "user": u, "namespace": "default"}}
                         for c, u in contexts.items()],
            "current-context": next(iter(contexts)),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private(path, yaml.safe_dump(doc, sort_keys=False).encode())

    def _start(self, name: str, args: list[str]) -> None:
        comp = Component(name, args, self.root / f"{name}.log")
        self.components[name] = comp
        comp.start(self.binary)

    def _start_etcd(self) -> None:
        peer = free_port(self.host)
        client = f"http://{self.host}:{self.etcd_port}"
        self._start("etcd", [
            "--name=lab", f"--data-dir={self.root / 'etcd'}", f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}", f"--listen-peer-urls=http://{self.host}:{peer}",
            f"--initial-advertise-peer-urls=http://{self.host}:{peer}",
            f"--initial-cluster=lab=http://{self.host}:{peer}",
            "--unsafe-no-fsync=true",  # a throwaway store: durability costs seconds per test and buys nothing
            "--log-level=warn",
        ])
        self._wait("etcd", lambda: _http_ok(f"{client}/health"), 30)

    def _start_apiserver(self) -> None:
        d = self.pki_dir
        self._start("kube-apiserver", [
            f"--etcd-servers=http://{self.host}:{self.etcd_port}",
            f"--etcd-compaction-interval={self.etcd_compaction_interval}",
            *([] if self.watch_cache else ["--watch-cache=false"]),
            f"--bind-address={self.host}", f"--advertise-address={self.host}", f"--secure-port={self.api_port}",
            f"--tls-cert-file={d / 'apiserver.crt'}", f"--tls-private-key-file={d / 'apiserver.key'}",
            f"--client-ca-file={d / 'ca.crt'}",
            f"--service-account-issuer={SA_ISSUER}", f"--service-account-key-file={d / 'sa.pub'}",
            f"--service-account-signing-key-file={d / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            # the `kubernetes` Service's endpoint would be the advertise address, which may not be loopback
            # (pkg/controlplane/reconcilers): kwokctl runs without the reconciler for the same reason
            "--endpoint-reconciler-type=none",
            "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true",
            # the node proxy, logs and exec reach each node's kubelet at its InternalIP (its own loopback address)
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-client-certificate={d / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={d / 'apiserver-kubelet-client.key'}",
            # the aggregation layer (metrics.k8s.io): request-header authentication of the proxied requests
            f"--requestheader-client-ca-file={d / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client", "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group", "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={d / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={d / 'front-proxy-client.key'}",
            "--enable-aggregator-routing=true",  # no kube-proxy here: reach an APIService's endpoints directly
            "--profiling=false",
            *([f"--authentication-config={self.authentication_config}"] if self.authentication_config else []),
            *self._audit_args(),
        ])

    def _audit_args(self) -> list[str]:
        """The API server's audit log (k8s.io/apiserver/pkg/apis/audit/v1 Policy; --audit-log-* in
        k8s.io/apiserver/pkg/server/options/audit.go), one JSON event per line, for the audit users only."""
        if not self.audit_users:
            return []
        policy = self.root / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump({
            "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
            "rules": [{"level": "Metadata", "users": list(self.audit_users)}, {"level": "None"}]}, sort_keys=False))
        return [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}", "--audit-log-format=json"]

    def requests(self, prefix: str = "") -> list[str]:
        """The audit users' requests so far as "GET /api/v1/nodes?limit=500", oldest first, those starting with
        `prefix`: a watch once it has started (stage ResponseStarted), anything else once answered."""
        out, seen = [], set()
        try:
            lines = self.audit_log.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return []
        for line in lines:
            try:
                ev = json.loads(line)
            except ValueError:  # the line being written
                continue
            if ev.get("auditID") in seen:
                continue
            seen.add(ev.get("auditID"))
            method = _HTTP_METHOD.get(ev.get("verb", ""), str(ev.get("verb", "")).upper())
            request = f"{method} {ev.get('requestURI', '')}"
            if request.startswith(prefix):
                out.append(request)
        return out

    def _component_args(self, name: str) -> list[str]:
        d = self.pki_dir
        if name == "kube-scheduler":
            return [f"--config={self._scheduler_config()}", "--secure-port=0"]
        common = [f"--kubeconfig={self.root / f'{name}.kubeconfig'}", "--leader-elect=false",
                  "--secure-port=0"]  # no metrics endpoint: nothing scrapes it
        return [*common, f"--service-account-private-key-file={d / 'sa.key'}", f"--root-ca-file={d / 'ca.crt'}",
                f"--cluster-signing-cert-file={d / 'ca.crt'}", f"--cluster-signing-key-file={d / 'ca.key'}",
                "--use-service-account-credentials=true",
                f"--node-monitor-grace-period={self.node_monitor_grace_period}",
                *([f"--kube-api-qps={self.controller_manager_qps}", f"--kube-api-burst={self.controller_manager_qps}"]
                  if self.controller_manager_qps else [])]

    def _scheduler_config(self) -> Path:
        """A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): with --config, kube-scheduler reads
        the client connection and leader election from it and ignores their flags
        (cmd/kube-scheduler/app/options/options.go: ApplyDeprecated only without a config file)."""
        path = self.root / "kube-scheduler.yaml"
        path.write_text(yaml.safe_dump({
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(self.root / "kube-scheduler.kubeconfig")},
            "leaderElection": {"leaderElect": False},
            "podInitialBackoffSeconds": min(1, self.pod_max_backoff), "podMaxBackoffSeconds": self.pod_max_backoff,
        }, sort_keys=False))
        return path

    def wait_apiserver(self, timeout: float) -> None:
        ctx = ssl.create_default_context(cadata=self.ca_pem.decode())
        cert, key = self.pki_dir / "admin.crt", self.pki_dir / "admin.key"
        if not cert.exists():
            self.admin_cert().write(self.pki_dir, "admin")
        ctx.load_cert_chain(cert, key)
        self._wait("kube-apiserver", lambda: _http_ok(f"{self.url}/readyz", ctx), timeout)

    def _wait(self, name: str, ready: Callable[[], bool], timeout: float) -> None:
        comp, deadline = self.components[name], time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not comp.running():
                raise ControlPlaneError(f"{name} exited (code {comp.proc.returncode if comp.proc else '?'}); "
                                        f"its log ({comp.log_path}) ends:\n{comp.tail()}")
            if ready():
                return
            time.sleep(0.1)
        raise ControlPlaneError(f"{name} was not ready after {timeout:.0f}s; its log ({comp.log_path}) ends:\n"
                                f"{comp.tail()}")


# the audit event's verb is the API verb (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go); its HTTP method
_HTTP_METHOD = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT", "patch": "PATCH",
                "delete": "DELETE", "deletecollection": "DELETE"}


_PORT_ATTEMPTS = 5

# etcd is on loopback: no proxy from the environment
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _http_ok(url: str, ctx: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
            return bool(resp.status == 200)
    except (OSError, ValueError):
        return False

