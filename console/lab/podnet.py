"""The lab's pod network: each program pod (console/lab/nodeexec.py) in a network namespace of its own.

On a real node every pod has its own network namespace (the CNI plugin's), so NFD v0.16's master and every
worker can all listen on the hard-coded gRPC health port 8082, and nfd-worker v0.9 reaches nfd-master through the
`nfd-master` Service (cluster DNS, kube-proxy). The lab has no CNI, DNS or kube-proxy to run: this module is the
glue in their place. A program container runs in a namespace with only a loopback (bwrap --unshare-net), under
the lab's forwarder (console/lab/podnet_forward.py), which binds before the program starts:

- 127.0.0.1:<API server port> (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT) and the `kubernetes` Service's
  names at 127.0.0.1:443, carried over a Unix socket to the API server (its certificate names 127.0.0.1);
- each Service that exists when the pod starts (but those that select the pod itself: a Service address is not
  the pod's on a real node, here it is, and it would take the pod's own port), at an address of its own,
  127.0.2.1 onwards, under the names cluster DNS gives it (`name` in its own namespace, `name.ns`,
  `name.ns.svc`, `name.ns.svc.cluster.local`, in the pod's /etc/hosts) and its ports, carried to the lab, which
  picks a ready endpoint of the Service from its EndpointSlices (written by the real kube-controller-manager) as
  kube-proxy does, and connects to that pod;
- each TCP containerPort of the pod, and each port its own Services target, served from a Unix socket the lab
  connects to.

Unix sockets live in the lab's state directory, or in a directory of their own under the system's temporary
directory when that is too deep (a Unix socket's path is at most 107 bytes).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.lab import podnet_forward

log = logging.getLogger(__name__)
Obj = dict[str, Any]

INSIDE = "/opt/console-lab-net"  # the lab's sockets, in the pod
FORWARDER = f"{INSIDE}/forward.py"
PYTHON = "/usr/bin/python3"  # the host's, bound at /usr in every sandbox
MAX_SERVICES = 1000  # addresses from 127.0.2.1, 250 to a /24 (Services beyond are left out of /etc/hosts)
SERVICE_LABEL = "kubernetes.io/service-name"
SOCKET_PATH_MAX = 107  # sun_path's 108 bytes, NUL-terminated
SOCKET_TAIL = (
    len("/pods/") + 36 + len("/65535")
)  # a pod's socket under the directory (its uid, a port)  # EndpointSlice -> its Service


@dataclass(frozen=True)
class PodNet:
    """What a container of the pod runs with: argv in front of its own, environment, files bound in."""

    argv: list[str]
    env: dict[str, str]
    binds: dict[str, Path]  # read-only
    rw_binds: dict[str, Path]


class PodNetwork:
    """One lab's pod network, from its API server's address and its informers' Services and EndpointSlices."""

    def __init__(
        self,
        api: tuple[str, int],
        services: Callable[[], list[Obj]],
        slices: Callable[[str, str], list[Obj]],
        state_dir: Path,
    ) -> None:
        self.api = api
        self._services = services
        self._slices = slices
        if len(str(state_dir.resolve() / "podnet")) + SOCKET_TAIL <= SOCKET_PATH_MAX:
            self.dir = state_dir.resolve() / "podnet"
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir.mkdir(parents=True)
        else:
            self.dir = Path(tempfile.mkdtemp(prefix="clab-net-"))
        (self.dir / "shared" / "svc").mkdir(parents=True)
        (self.dir / "pods").mkdir()
        self._lock = threading.Lock()
        self._listeners: dict[str, socket.socket] = {}
        self._closed = False
        self._listen(self.dir / "shared" / "api", lambda: (socket.AF_INET, api))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            listeners, self._listeners = list(self._listeners.values()), {}
        for s in listeners:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def pod(self, pod: Obj, container: Obj) -> PodNet:
        """The network of one container of `pod` (created at its start: the Services that exist then)."""
        meta = pod["metadata"]
        uid, namespace = str(meta.get("uid", "")), str(meta.get("namespace", "default"))
        own = self.dir / "pods" / uid
        own.mkdir(exist_ok=True)
        port = self.api[1]
        opts = ["--listen", f"127.0.0.1:{port}={INSIDE}/shared/api"]
        hosts = [
            "127.0.0.1\tlocalhost",
            "::1\tlocalhost ip6-localhost ip6-loopback",
            f"127.0.0.1\t{meta.get('name', '')}",
        ]
        services = sorted(self._services(), key=lambda s: (s["metadata"].get("namespace", ""), s["metadata"]["name"]))
        served = {
            int(cp["containerPort"])
            for cp in container.get("ports") or []
            if cp.get("protocol", "TCP") == "TCP" and isinstance(cp.get("containerPort"), int)
        }
        for i, svc in enumerate(services[:MAX_SERVICES]):
            ns, name = svc["metadata"].get("namespace", "default"), svc["metadata"]["name"]
            names = [f"{name}.{ns}", f"{name}.{ns}.svc", f"{name}.{ns}.svc.cluster.local"]
            if ns == namespace:
                names.insert(0, name)
            if ns == namespace and _selects(svc, pod):
                # its own Service: served (a containerPort need not be declared), not listened on (an address of
                # the pod's would clash with the pod's own listening on :port)
                served |= _target_ports(svc, container)
                continue
            if (ns, name) == ("default", "kubernetes"):
                hosts.append("127.0.0.1\t" + " ".join(names))
                if port != 443:
                    opts += ["--listen", f"127.0.0.1:443={INSIDE}/shared/api"]
                continue
            address = f"127.0.{2 + i // 250}.{1 + i % 250}"
            hosts.append(f"{address}\t" + " ".join(names))
            for sp in svc.get("spec", {}).get("ports") or []:
                if sp.get("protocol", "TCP") == "TCP" and isinstance(sp.get("port"), int):
                    sock = self._service_socket(ns, name, sp)
                    opts += ["--listen", f"{address}:{sp['port']}={INSIDE}/shared/svc/{sock.name}"]
        for number in sorted(served):
            opts += ["--serve", f"{INSIDE}/pod/{number}={number}"]
        hosts_file = self.dir / "pods" / f"{uid}.hosts"
        hosts_file.write_text("# the lab's pod network: Services as cluster DNS names them\n" + "\n".join(hosts) + "\n")
        return PodNet(
            argv=[PYTHON, "-S", FORWARDER, *opts, "--"],
            env={
                "KUBERNETES_SERVICE_HOST": "127.0.0.1",
                "KUBERNETES_SERVICE_PORT": str(port),
                "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
            },
            binds={
                FORWARDER: Path(podnet_forward.__file__),
                f"{INSIDE}/shared": self.dir / "shared",
                "/etc/hosts": hosts_file,
            },
            rw_binds={f"{INSIDE}/pod": own},
        )

    def release(self, uid: str) -> None:
        """The pod is gone: its sockets and hosts file with it."""
        shutil.rmtree(self.dir / "pods" / uid, ignore_errors=True)
        (self.dir / "pods" / f"{uid}.hosts").unlink(missing_ok=True)

    # -- the lab's side --------------------------------------------------------
    def _service_socket(self, namespace: str, name: str, port: Obj) -> Path:
        key = f"{namespace}/{name}/{port.get('name', '')}/{port['port']}"
        path = self.dir / "shared" / "svc" / hashlib.sha256(key.encode()).hexdigest()[:16]
        self._listen(path, lambda: self._endpoint(namespace, name, port))
        return path

    def _endpoint(self, namespace: str, name: str, port: Obj) -> podnet_forward.Address | None:
        """A ready endpoint of the Service's port, as kube-proxy picks one: the first pod in its EndpointSlices
        whose socket is there (the port by the Service port's name, as the slices name it)."""
        for eps in self._slices(namespace, name):
            number = next(
                (p.get("port") for p in eps.get("ports") or [] if p.get("name", "") == port.get("name", "")), None
            )
            if not isinstance(number, int):
                continue
            for ep in eps.get("endpoints") or []:
                ref = ep.get("targetRef") or {}
                if ref.get("kind") != "Pod" or (ep.get("conditions") or {}).get("ready") is False:
                    continue
                sock = self.dir / "pods" / str(ref.get("uid", "")) / str(number)
                if sock.exists():
                    return socket.AF_UNIX, str(sock)
        return None

    def _listen(self, path: Path, target: Callable[[], podnet_forward.Address | None]) -> None:
        with self._lock:
            if self._closed or str(path) in self._listeners:
                return
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))
            listener.listen(128)
            self._listeners[str(path)] = listener
        threading.Thread(
            target=self._accept, args=(listener, target), name=f"lab-podnet-{path.name}", daemon=True
        ).start()

    def _accept(self, listener: socket.socket, target: Callable[[], podnet_forward.Address | None]) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                where = target()
            except Exception:  # an informer's bad object must not end the listener
                log.exception("pod network: no endpoint")
                where = None
            if where is None:
                client.close()
                continue
            threading.Thread(target=podnet_forward._relay, args=(client, where), daemon=True).start()


def _selects(service: Obj, pod: Obj) -> bool:
    selector = service.get("spec", {}).get("selector") or {}
    labels = pod["metadata"].get("labels") or {}
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _target_ports(service: Obj, container: Obj) -> set[int]:
    """The container's port numbers a Service's TCP ports reach (targetPort: a number, a containerPort's name, or
    the port itself by default)."""
    named = {str(cp.get("name")): cp.get("containerPort") for cp in container.get("ports") or [] if cp.get("name")}
    out = set()
    for sp in service.get("spec", {}).get("ports") or []:
        if sp.get("protocol", "TCP") != "TCP":
            continue
        target = sp.get("targetPort", sp.get("port"))
        target = named.get(target) if isinstance(target, str) else target
        if isinstance(target, int):
            out.add(target)
    return out


def slices_of(list_slices: Callable[[str], list[Obj]]) -> Callable[[str, str], list[Obj]]:
    """The EndpointSlices of one Service, from a lister of a namespace's."""
    return lambda ns, name: [
        s for s in list_slices(ns) if (s.get("metadata", {}).get("labels") or {}).get(SERVICE_LABEL) == name
    ]
