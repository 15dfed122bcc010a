"""Upstream's metrics-server (sigs.k8s.io/metrics-server, built by console/lab/upstream/build.py) on the lab's
upstream control plane: metrics.k8s.io for `kubectl top`, from what it scrapes of the kubelet agents'
/metrics/resource (console/lab/kubeletserver.py).

    server = MetricsServer(cp, client, binary(METRICS_SERVER), state_root / "metrics-server", node_ip=ip)
    server.launch(progress)  # its RBAC objects and the process (from a thread that lives as long as the lab)
    server.wait_serving()    # until it serves, then registered; kubectl top answers after two scrapes
    ...
    server.stop()

Registered as upstream's manifests (manifests/base: rbac.yaml, service.yaml, apiservice.yaml) register it, except
that the process runs here rather than in a pod: the Service has no selector and an EndpointSlice of the lab's
names the process's address, which the API server's aggregator dials (--enable-aggregator-routing, no
kube-proxy). That address is global unicast, as EndpointSlice validation wants: the .254 of the nodes' /24 of
198.18.0.0/15 (console/lab/nodeaddrs.py), added to `lo` while it runs. Its identity is the client certificate of
its ServiceAccount's user name, so the manifests' bindings (to the ServiceAccount) authorize it unchanged. Flags
as kwokctl runs it against fake kubelets (InternalIP, the node status' port, no kubelet CA), with the shortest
resolution it accepts (10s; its kubelet request timeout must then stay under 9s).
"""

from __future__ import annotations

import base64
import logging
import os
import re
import signal
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from console.lab.controlplane import ControlPlane, die_with_parent, free_port
from console.lab.kubeclient import ApiError, KubeClient
from console.lab.waiting import wait_for

log = logging.getLogger(__name__)
Progress = Callable[[str], None]
Obj = dict[str, Any]

NAMESPACE = "kube-system"
NAME = "metrics-server"
USER = f"system:serviceaccount:{NAMESPACE}:{NAME}"  # what RBAC matches a ServiceAccount subject by
GROUPS = ("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}")
RESOLUTION = "10s"  # --metric-resolution: the least it accepts
APISERVICE = "v1beta1.metrics.k8s.io"


class MetricsServerError(Exception):
    """metrics-server did not start; the message says why and where its log is."""


def _sa_subject() -> list[Obj]:
    return [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]


def rbac_objects() -> list[tuple[str, Obj]]:
    """(API path of the collection, object) of metrics-server's manifests/base/rbac.yaml."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    return [
        (f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", {
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"k8s-app": NAME}}}),
        (f"{rbac}/clusterroles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "system:aggregated-metrics-reader", "labels": {
                "k8s-app": NAME, "rbac.authorization.k8s.io/aggregate-to-view": "true",
                "rbac.authorization.k8s.io/aggregate-to-edit": "true",
                "rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
            "rules": [{"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"],
                       "verbs": ["get", "list", "watch"]}]}),
        (f"{rbac}/namespaces/{NAMESPACE}/rolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "metrics-server-auth-reader", "namespace": NAMESPACE, "labels": {"k8s-app": NAME}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                        "name": "extension-apiserver-authentication-reader"},
            "subjects": _sa_subject()}),
        (f"{rbac}/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "metrics-server:system:auth-delegator", "labels": {"k8s-app": NAME}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:auth-delegator"},
            "subjects": _sa_subject()}),
        (f"{rbac}/clusterroles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "system:metrics-server", "labels": {"k8s-app": NAME}},
            "rules": [{"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
                      {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]}]}),
        (f"{rbac}/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:metrics-server", "labels": {"k8s-app": NAME}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:metrics-server"},
            "subjects": _sa_subject()}),
    ]


def service_objects(address: str, port: int, ca_pem: bytes) -> list[tuple[str, Obj]]:
    """The Service (service.yaml without its selector), the EndpointSlice its selector would have made, and the
    APIService (apiservice.yaml, the cluster CA as its caBundle instead of insecureSkipTLSVerify: the serving
    certificate is the cluster CA's)."""
    return [
        (f"/api/v1/namespaces/{NAMESPACE}/services", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"k8s-app": NAME}},
            "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port,
                                "appProtocol": "https"}]}}),
        (f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices", {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": f"{NAME}-lab", "namespace": NAMESPACE, "labels": {
                "kubernetes.io/service-name": NAME, "endpointslice.kubernetes.io/managed-by": "console-lab",
                "k8s-app": NAME}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [address], "conditions": {"ready": True, "serving": True,
                                                                  "terminating": False}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP", "appProtocol": "https"}]}),
        ("/apis/apiregistration.k8s.io/v1/apiservices", {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": APISERVICE, "labels": {"k8s-app": NAME}},
            "spec": {"service": {"name": NAME, "namespace": NAMESPACE, "port": 443}, "group": "metrics.k8s.io",
                     "version": "v1beta1", "caBundle": base64.b64encode(ca_pem).decode(),
                     "groupPriorityMinimum": 100, "versionPriority": 100}}),
    ]


def apply(client: KubeClient, collection: str, obj: Obj) -> Obj:
    """Create the object, or replace the one of that name (a lab restarted on the same etcd)."""
    try:
        return client.request("POST", collection, obj)
    except ApiError as e:
        if e.code != 409:
            raise
    path = f"{collection}/{obj['metadata']['name']}"
    current = client.request("GET", path)
    obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
    if obj.get("kind") == "Service":  # its allocated ClusterIP stays
        obj["spec"] = {**obj["spec"], "clusterIP": current["spec"].get("clusterIP"),
                       "clusterIPs": current["spec"].get("clusterIPs")}
    return client.request("PUT", path, obj)


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


class MetricsServer:
    def __init__(self, cp: ControlPlane, client: KubeClient, binary: Path, root: Path, *, node_ip: str) -> None:
        """`node_ip`: one of the nodes' addresses; metrics-server listens on the .254 of its /24."""
        self.cp = cp
        self.client = client
        self.binary = binary
        self.root = root
        self.address = ".".join([*node_ip.split(".")[:3], "254"])
        self.port = 0
        self.log_path = root / "metrics-server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._address_added = False
        self._t0 = 0.0

    @property
    def url(self) -> str:
        return f"https://{self.address}:{self.port}"

    # -- lifecycle --------------------------------------------------------
    def launch(self, progress: Progress = lambda _msg: None) -> None:
        """Its RBAC objects, then the process. The process dies with the thread that calls this (setpriv
        --pdeathsig: PR_SET_PDEATHSIG follows the parent thread, prctl(2)), so call it from one that lives as
        long as the lab; wait_serving may run anywhere."""
        self._t0 = time.monotonic()
        self.root.mkdir(parents=True, exist_ok=True)
        self._add_address()
        self.port = free_port(self.address)
        args = self._write_files()
        progress(f"starting metrics-server on {self.url}")
        for collection, obj in rbac_objects():
            apply(self.client, collection, obj)
        self._spawn(args)

    def wait_serving(self, timeout: float = 60) -> None:
        """Until it serves, then registered with the aggregator (its Service, EndpointSlice and APIService)."""
        self._wait(timeout)
        for collection, obj in service_objects(self.address, self.port, self.cp.ca_pem):
            apply(self.client, collection, obj)
        log.info("metrics-server serving after %.1fs", time.monotonic() - self._t0)

    def wait_scraped(self, nodes: set[str], timeout: float = 40, *, since: float | None = None) -> bool:
        """Until metrics.k8s.io has the usage of every node in `nodes`: metrics-server reports a node once it has
        two of its samples, one --metric-resolution apart (a CPU rate needs the sample before;
        sigs.k8s.io/metrics-server pkg/storage/node.go). `since` (epoch seconds): only a rate whose window
        (NodeMetrics' timestamp less its window) starts at or after it counts — a window that saw a container
        start shows a rate no later window repeats. False if not after `timeout` s."""

        def scraped() -> bool:
            try:
                doc = self.client.request("GET", "/apis/metrics.k8s.io/v1beta1/nodes")
            except ApiError as e:  # 503 while the aggregator has not seen the APIService available yet
                log.debug("metrics.k8s.io: %s", e)
                return False
            return nodes <= {i["metadata"]["name"] for i in doc.get("items") or [] if _window_start(i) >= (since or 0)}

        return wait_for(scraped, timeout=timeout, interval=0.5)

    def stop(self, timeout: float = 20, *, graceful: bool = True) -> None:
        """`graceful=False`: killed (SIGKILL) — it keeps nothing, and its graceful shutdown took a second."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM if graceful else signal.SIGKILL)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._address_added:
            _ip("addr", "del", f"{self.address}/32", "dev", "lo")
            self._address_added = False

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # -- parts ------------------------------------------------------------
    def _add_address(self) -> None:
        done = _ip("addr", "add", f"{self.address}/32", "dev", "lo")
        if done.returncode != 0:
            raise MetricsServerError(f"cannot add metrics-server's address {self.address} to lo "
                                     f"({done.stderr.strip()}): the API server's aggregator dials it")
        self._address_added = True

    def _write_files(self) -> list[str]:
        d, pki = self.root, self.cp.pki_dir
        # the aggregator checks the name <service>.<namespace>.svc against the APIService's caBundle
        self.cp.ca.issue(NAME, dns=(f"{NAME}.{NAMESPACE}.svc", f"{NAME}.{NAMESPACE}.svc.cluster.local"),
                         ips=(self.address,), server=True).write(d, "serving")
        kubeconfig = d / "metrics-server.kubeconfig"
        self.cp.write_kubeconfig(kubeconfig, {NAME: self.cp.user_cert(USER, GROUPS)})
        return [
            f"--bind-address={self.address}", f"--secure-port={self.port}",
            f"--tls-cert-file={d / 'serving.crt'}", f"--tls-private-key-file={d / 'serving.key'}",
            f"--cert-dir={d}",
            f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            # the aggregator's proxied requests: the front-proxy client certificate and its headers
            f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client", "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group", "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            # kwokctl's flags for kubelets without a CA-signed serving certificate
            "--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port",
            "--kubelet-insecure-tls", f"--metric-resolution={RESOLUTION}", "--kubelet-request-timeout=5s",
        ]

    def _spawn(self, args: list[str]) -> None:
        # no proxy from the environment: it dials the kubelets and the API server, all on this host
        env = {k: v for k, v in os.environ.items() if k.lower() not in ("https_proxy", "http_proxy")}
        with open(self.log_path, "ab") as out:
            # its own process group: a Ctrl-C at the lab's terminal reaches the lab, which stops it in order
            self.proc = subprocess.Popen([*die_with_parent(), str(self.binary), *args], stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                         env=env)

    def _wait(self, timeout: float) -> None:
        """Until it serves /livez (its delegated authentication and authorization are set up by then)."""
        ctx = ssl.create_default_context(cadata=self.cp.ca_pem.decode())

        def live() -> bool:
            if not self.running():
                code = self.proc.returncode if self.proc else "?"
                raise MetricsServerError(f"metrics-server exited (code {code}); its log ({self.log_path}) ends:\n"
                                         f"{self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/livez", timeout=2, context=ctx) as resp:
                    return bool(resp.status == 200)
            except (OSError, ValueError):
                return False

        if wait_for(live, timeout=timeout, interval=0.2):
            return
        raise MetricsServerError(f"metrics-server was not serving after {timeout:.0f}s; its log ({self.log_path}) "
                                 f"ends:\n{self.tail()}")


def _window_start(metrics: dict[str, Any]) -> float:
    """Epoch seconds a NodeMetrics' rate starts: its timestamp (RFC 3339) less its window (a Go duration such as
    "10.5s" or "1m0.5s", metav1.Duration)."""
    try:
        stamp = datetime.fromisoformat(str(metrics["timestamp"]).replace("Z", "+00:00")).timestamp()
        window = go_duration(str(metrics["window"]))
    except (KeyError, ValueError):
        return 0.0
    return stamp - window


# Go's time.ParseDuration units (the window metrics-server reports)
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(text: str) -> float:
    """time.ParseDuration ("2s", "1m30s", "500ms") in seconds."""
    s = text.strip()
    if s in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        raise ValueError(f"time: invalid duration {text!r}")
    return total
