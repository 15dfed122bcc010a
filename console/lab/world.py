"""The embedded lab: one scenario's world, started and stopped as a unit.

Wiring only: the store and the HTTP servers (on a background asyncio loop),
libvirt with one domain per VM, the guests' kubelets, the scheduler, node
exec, Nova, NFD. The state directory receives what other processes need.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from console.lab import seed
from console.lab.loop import LoopThread
from console.lab.podlogs import PodLogs
from console.lab.scenarios import Scenario
from console.lab.statedir import StateDir
from console.lab.store import Store

if TYPE_CHECKING:
    from console.lab.vm import Flavor, Guest, VMSpec

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
MEMBER_USER, MEMBER_USER_ID = "lab-member", "9b7c1d2e3f4a45b6c7d8e9f0a1b2c3d4"  # role member in project admin


class LabError(Exception):
    """The lab could not start; the message says what is missing."""


class Lab:
    def __init__(
        self,
        scenario: Scenario,
        state_dir: Path,
        *,
        libvirt: Literal["auto", "qemu", "test"] = "auto",
        nova_timing: Any = None,
        watch_expiry: float | None = None,
        token_ttl: float = 300,
        metrics: bool = True,
        kubernetes: Literal["lab", "upstream"] | None = None,
    ) -> None:
        self.scenario = scenario
        self.state = StateDir(Path(state_dir))
        self.libvirt_driver = libvirt
        self.nova_timing = nova_timing
        self.watch_expiry = watch_expiry  # seconds: watches end with 410 and etcd-like compaction (kubeapi)
        self.token_ttl = token_ttl  # seconds the `lab-exec` context's exec-plugin tokens live
        self.metrics = metrics  # serve metrics.k8s.io, as metrics-server does
        # "upstream": upstream's control plane (console/lab/controlplane.py) instead of the lab's API server,
        # scheduler and controllers; the store is then a view of the real API server (console/lab/apistore.py)
        # (default: $CONSOLE_LAB_KUBERNETES, else "lab" — while the lab moves onto upstream's control plane)
        self.kubernetes = kubernetes or os.environ.get("CONSOLE_LAB_KUBERNETES", "lab")
        self.control_plane: Any = None
        self.token_issuer: Any = None  # the lab-exec context's OIDC issuer on the upstream control plane
        self.store: Any = Store()
        self.logs = PodLogs()
        self.vms = seed.vm_specs(scenario)
        self.scale_servers = seed.scale_vm_specs(scenario)  # Nova servers without a hypervisor (scale world)
        self._loop = LoopThread()
        self._stack: list[Callable[[], None]] = []  # undo actions, run in reverse on stop
        self.kube_api: Any = None
        self.openstack_api: Any = None
        self.hypervisor: Any = None
        self.nova: Any = None
        self.kubelets: dict[str, Any] = {}
        self.guest_roots: dict[str, Any] = {}  # node -> console.lab.guestroot.GuestRoot, its `/` on this host
        self.scheduler: Any = None
        self.controllers: Any = None
        self.node_exec: Any = None
        self.fleet: Any = None
        self.nfd: Any = None
        self.sshd: Any = None
        self.ssh_config: Path | None = None
        self._token = "lab-" + secrets.token_urlsafe(24)
        self._nobody_token = "lab-nobody-" + secrets.token_urlsafe(24)  # authenticated, no RBAC: 403
        self._exec_key = secrets.token_bytes(32)  # signs the exec plugin's short-lived tokens (kubeapi/authn.py)
        # RBAC users (console/lab/rbac_policy.py): context -> (user, token)
        self.rbac_users = {"lab-viewer": ("viewer", "lab-viewer-" + secrets.token_urlsafe(24)),
                           "lab-operator": ("operator", "lab-operator-" + secrets.token_urlsafe(24))}
        self._os_password = secrets.token_urlsafe(18)
        self._os_member_password = secrets.token_urlsafe(18)

    # -- public facts ---------------------------------------------------
    @property
    def kube_url(self) -> str:
        if self.control_plane is not None:
            return str(self.control_plane.url)
        return self.kube_api.url if self.kube_api else ""

    @property
    def openstack_url(self) -> str:
        return self.openstack_api.auth_url if self.openstack_api else ""

    @property
    def libvirt_uri(self) -> str:
        return self.hypervisor.uri if self.hypervisor else ""

    # -- lifecycle ------------------------------------------------------
    def start(self, progress: Progress = lambda _msg: None) -> None:
        t0 = time.monotonic()
        self.state.prepare()
        self._loop.start()
        self._stack.append(self._loop.stop)
        if self.kubernetes == "upstream":
            self._start_control_plane(progress)
        self._seed(progress)
        if self.vms:
            self._start_hypervisor(progress)
        self._start_cluster_sims(progress)
        self._start_nfd(progress)
        self._start_servers(progress)
        if self.vms:
            self._start_sshd(progress)
        self.state.write_env(libvirt_uri=self.libvirt_uri, ssh_config=self.ssh_config)
        self._wait_ready(progress)
        if self.control_plane is not None and self.metrics:
            self._start_metrics_server(progress)
        if self.control_plane is not None:
            self._seed_workloads(progress)
        self.state.mark_ready()
        progress(f"ready after {time.monotonic() - t0:.1f}s")

    def stop(self) -> None:
        self.state.clear_ready()
        while self._stack:
            undo = self._stack.pop()
            try:
                undo()
            except Exception:  # keep stopping the rest; the log says what failed
                log.exception("lab: stopping %s failed", getattr(undo, "__qualname__", undo))

    def kube_api_down(self) -> None:
        """The API server goes away (its port refuses, watches drop) until `kube_api_up()` serves again on the
        same port with the same certificate; the world (and its compaction) keeps running behind it."""
        if self.control_plane is not None:
            self.control_plane.apiserver_down()
            return
        self._loop.call(self.kube_api.close_port())

    def kube_api_up(self) -> None:
        if self.control_plane is not None:
            self.control_plane.apiserver_up()
            return
        self._loop.call(self.kube_api.reopen_port())

    # -- parts ----------------------------------------------------------
    def _start_control_plane(self, progress: Progress) -> None:
        from console.lab.apistore import ApiStore
        from console.lab.controlplane import ControlPlane, ControlPlaneError
        from console.lab.kubeclient import KubeClient
        from console.lab.tokenissuer import TokenIssuer
        from console.lab.upstream.build import KUBE, BuildError, binary

        if self.scenario.scale_nodes:
            raise LabError("the scale world does not run on the upstream control plane yet: "
                           "leave out --kubernetes upstream")
        try:
            kube = binary(KUBE, progress)
        except BuildError as e:
            raise LabError(str(e)) from e
        # a new cluster each start, as the VMs are new: no etcd data of an earlier run in this state dir
        shutil.rmtree(self.state.root / "kube", ignore_errors=True)
        # the `lab-exec` user's tokens: an OIDC issuer the API server's JWT authenticator trusts, serving its
        # discovery document and keys before the API server starts (console/lab/tokenissuer.py)
        authn_config = self.state.root / "kube" / "authentication-config.yaml"
        self.control_plane = ControlPlane(self.state.root / "kube", kube, authentication_config=authn_config)
        self.token_issuer = TokenIssuer(self.control_plane.ca)
        self._loop.call(self.token_issuer.start())
        self._stack.append(lambda: self._loop.call(self.token_issuer.stop()))
        self.token_issuer.write_authentication_config(authn_config)
        self._stack.append(self.control_plane.stop)
        try:
            self.control_plane.start(progress)
            self.token_issuer.wait_accepted(self.control_plane.url)
        except (ControlPlaneError, TimeoutError) as e:
            raise LabError(str(e)) from e
        pki = self.control_plane.pki_dir
        self.store = ApiStore(KubeClient(self.control_plane.url, ca=pki / "ca.crt", cert=pki / "admin.crt",
                                         key=pki / "admin.key"))
        self._stack.append(self.store.stop)

    def _start_metrics_server(self, progress: Progress) -> None:
        """Upstream's metrics-server serving metrics.k8s.io from the kubelet agents' /metrics/resource
        (console/lab/metricsserver.py); `kubectl top` answers once it has scraped twice."""
        from console.lab.metricsserver import MetricsServer, MetricsServerError
        from console.lab.upstream.build import METRICS_SERVER, BuildError, binary

        if not self.kubelets:
            return
        try:
            exe = binary(METRICS_SERVER, progress)
        except BuildError as e:
            raise LabError(str(e)) from e
        node_ip = next(iter(self.kubelets.values())).internal_ip
        server = MetricsServer(self.control_plane, self.store.client, exe, self.state.root / "metrics-server",
                               node_ip=node_ip)
        self._stack.append(server.stop)
        try:
            server.start(progress)
        except MetricsServerError as e:
            raise LabError(str(e)) from e

    def _wait_service_account(self, namespace: str, timeout: float = 60) -> None:
        from console.lab.kubeclient import ApiError

        deadline = time.monotonic() + timeout
        while True:
            try:
                self.store.client.request("GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
                return
            except ApiError as e:
                if e.code != 404 or time.monotonic() > deadline:
                    raise LabError(f"kube-controller-manager made no service account in {namespace}: {e}") from e
            time.sleep(0.1)

    def _seed(self, progress: Progress) -> None:
        from console.lab.store import AlreadyExists

        sc = self.scenario
        upstream = self.control_plane is not None
        for ns in sc.namespaces:
            try:
                self.store.create("namespaces", seed.namespace(ns))
            except AlreadyExists:
                if not upstream:  # a real API server made default and kube-system itself
                    raise
        if upstream:  # the ServiceAccount admission plugin refuses pods until the controller made `default`
            for ns in {"default", *sc.namespaces}:
                self._wait_service_account(ns)
        by_node = {vm.node_name: vm for vm in self.vms}
        for spec in sc.nodes:
            self.store.create("nodes", seed.node_object(spec, by_node.get(spec.name)))
        if sc.scale_nodes:
            progress(f"generating {sc.scale_nodes} nodes and {sc.scale_nodes * sc.scale_pods_per_node} pods"
                     + (f", {sc.scale_pending} Pending" if sc.scale_pending else ""))
            nodes, pods = seed.scale_objects(sc)
            self.store.bulk_load("nodes", nodes)
            self.store.bulk_load("pods", pods)
        for pod in sc.pods:
            self.store.create("pods", seed.pod_object(pod))
        if upstream:
            return  # the workloads come once the nodes are Ready (_seed_workloads)
        for resource, obj in seed.nfd_objects(sc):
            self.store.create(resource, obj)
        for resource, obj in sc.objects:
            self.store.create(resource, obj)

    def _start_hypervisor(self, progress: Progress) -> None:
        from console.lab.libvirt_host import LibvirtHost

        progress(f"starting libvirt ({self.libvirt_driver}) and {len(self.vms)} VMs")
        self.hypervisor = LibvirtHost(self.state.root / "libvirt", driver=self.libvirt_driver)
        try:
            self.hypervisor.start()
        except Exception as e:
            raise LabError(f"libvirt did not start: {e}. Run ./dev lab to install libvirt and QEMU.") from e
        self._stack.append(self.hypervisor.close)
        for vm in self.vms:
            self.hypervisor.define_from_flavor(vm, vm.flavor)
            self.hypervisor.start(vm.server_id)

    def _start_cluster_sims(self, progress: Progress) -> None:
        from console.lab.controllers import Controllers
        from console.lab.kubelet import Fleet, Kubelet
        from console.lab.nodeexec import NodeExec
        from console.lab.scheduler import Scheduler

        sc = self.scenario
        self.fleet = Fleet(self.store)
        self.fleet.start()
        self._stack.append(self.fleet.stop)
        specs = {n.name: n for n in sc.nodes}
        guests = {}
        from console.lab.guestroot import GuestRoot

        # the nodes' disks are new with the lab's VMs: nothing of an earlier run (a CPU manager checkpoint, hooks)
        shutil.rmtree(self.state.root / "guests", ignore_errors=True)
        addresses = self._node_addresses()

        for vm in self.vms:
            guest = self.hypervisor.guest(vm.server_id)
            root = GuestRoot(self.state.root / "guests" / vm.node_name)
            self._stack.append(root.attach(guest, hostname=vm.node_name, kernel_release=sc.host_os.kernel_release,
                                           os_release=sc.host_os.os_release))
            self.guest_roots[vm.node_name] = root
            seed.write_guest_files(specs[vm.node_name], root)
            guests[vm.node_name] = guest
            kubelet = Kubelet(
                self.store,
                vm.node_name,
                guest,
                fleet=self.fleet,
                kubelet_version=sc.kubernetes_version,
                os_image=sc.host_os.os_image,
                kernel_version=sc.host_os.kernel_release,
                cpu_manager_policy="static" if specs[vm.node_name].cpu_manager_static else "none",
                files=root.files,
                upstream=self.control_plane is not None,
                internal_ip=addresses.get(vm.node_name),
            )
            kubelet.start()
            self.kubelets[vm.node_name] = kubelet
            self._stack.append(kubelet.stop)
        self.node_exec = NodeExec(self.store, self.logs, guests, self.kubelets, roots=self.guest_roots)
        self.node_exec.start()
        self._stack.append(self.node_exec.stop)
        if self.control_plane is not None:
            self._start_kubelet_servers()
            return  # upstream's kube-scheduler and kube-controller-manager run
        self.scheduler = Scheduler(self.store, version=sc.kubernetes_version)
        self.scheduler.start()
        self._stack.append(self.scheduler.stop)
        self.controllers = Controllers(self.store)
        self.controllers.start()
        self._stack.append(self.controllers.stop)

    def _node_addresses(self) -> dict[str, str]:
        """On the upstream control plane each node gets an address its kubelet serves on (console/lab/nodeaddrs.py);
        the lab's own API server reaches its kubelets in process."""
        from console.lab.nodeaddrs import AddressError, NodeAddresses

        if self.control_plane is None or not self.vms:
            return {}
        addrs = NodeAddresses()
        try:
            ips = addrs.allocate(len(self.vms))
        except AddressError as e:
            raise LabError(str(e)) from e
        self._stack.append(addrs.release)
        return {vm.node_name: ip for vm, ip in zip(self.vms, ips, strict=True)}

    def _start_kubelet_servers(self) -> None:
        """Each kubelet's HTTPS endpoints (console/lab/kubeletserver.py), listening while its kubelet runs."""
        import asyncio
        import functools

        from console.lab.kubeletserver import KubeletServer

        servers = []
        for name, kubelet in self.kubelets.items():
            server = KubeletServer(kubelet, ca=self.control_plane.ca, logs=self.logs,
                                   pods=functools.partial(self.store.pods_on_node, name))
            servers.append(server)

        async def follow_states() -> None:
            # a stopped kubelet's port refuses, as a dead process's does
            while True:
                for server in servers:
                    await server.sync()
                await asyncio.sleep(0.2)

        task = asyncio.run_coroutine_threadsafe(follow_states(), self._loop.loop)

        def stop() -> None:
            task.cancel()
            for server in servers:
                self._loop.call(server.stop())

        self._stack.append(stop)

    def _start_nfd(self, progress: Progress) -> None:
        from console.lab.nfd_sim import NfdSim

        if self.control_plane is not None:
            progress("NFD does not run on the upstream control plane yet")
            return

        progress(f"starting NFD {self.scenario.nfd_version} (workers and master)")
        self.nfd = NfdSim(self.store, self.scenario, self.state.root / "nfd", guest_roots=self.guest_roots)
        self._stack.append(self.nfd.stop)
        self.nfd.start()

    def _kubelet_proxy(self, node: str, path: str) -> tuple[int, str, str]:
        """What a node's kubelet answers on :10250 to the API server's node proxy."""
        from console.lab.kubelet import kubelet_endpoint

        return kubelet_endpoint(self.kubelets.get(node), path)

    def _start_servers(self, progress: Progress) -> None:
        if self.control_plane is not None:
            self._upstream_users()
        else:
            self._start_kube_api(progress)
        self._start_openstack(progress)

    def _upstream_users(self) -> None:
        """The kubeconfig's contexts as client certificates the real API server authenticates (CN = user,
        O = groups), and the lab's RBAC as plain objects; `lab-exec` gets its token from an exec plugin that signs
        as the lab's token issuer, valid token_ttl s (console/lab/tokenissuer.py)."""
        from console.lab.kubeconfig import add_context
        from console.lab.rbac_policy import OPERATOR_USER, VIEWER_USER, lab_users, seed
        from console.lab.tokenissuer import EXEC_USER

        cp = self.control_plane
        seed(self.store, lab_users())
        cp.write_kubeconfig(self.state.kubeconfig, {"lab": cp.admin_cert(), "lab-viewer": cp.user_cert(VIEWER_USER),
                                                    "lab-operator": cp.user_cert(OPERATOR_USER)})
        plugin = self.token_issuer.write_plugin(self.state.exec_plugin, self.token_ttl)
        add_context(self.state.kubeconfig, "lab-exec", EXEC_USER, {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "args": [],
            "interactiveMode": "Never", "provideClusterInfo": False}})

    def _start_kube_api(self, progress: Progress) -> None:
        from console.lab.faultfiles import NOBODY_USER
        from console.lab.kubeapi.server import start_kube_api
        from console.lab.kubeconfig import add_contexts, write_kubeconfig
        from console.lab.rbac_policy import lab_users, seed

        progress("starting the Kubernetes API")
        self.kube_api = self._loop.call(start_kube_api(self.store, self.logs, token=self._token,
                                                       node_proxy=self._kubelet_proxy,
                                                       unbound={self._nobody_token: NOBODY_USER},
                                                       watch_expiry=self.watch_expiry,
                                                       exec_key=self._exec_key,
                                                       users={t: u for u, t in self.rbac_users.values()},
                                                       metrics_server=self.metrics))
        self._stack.append(lambda: self._loop.call(self.kube_api.stop()))
        seed(self.store, lab_users())
        write_kubeconfig(self.state.kubeconfig, self.kube_api.url, self._token, ca_pem=self.kube_api.ca_pem)
        add_contexts(self.state.kubeconfig, {ctx: (user, token) for ctx, (user, token) in self.rbac_users.items()})
        self._add_exec_context()

    def _start_openstack(self, progress: Progress) -> None:
        from console.lab.cloudsyaml import write_clouds_yaml, write_openrc
        from console.lab.faultfiles import write_fault_files
        from console.lab.openstack.nova import Nova
        from console.lab.openstack.server import start_openstack

        progress("starting the OpenStack APIs")
        if self.vms:
            self.nova = Nova(self.scenario.flavors, self.vms, self.hypervisor, self.nova_timing,
                             hosts=self.scenario.compute_hosts, quota=self.scenario.quota)
            self._stack.append(self.nova.close)
        else:
            # the scale world: flavors, and its nodes as servers when it has Pending pods to plan for
            self.nova = Nova(self.scenario.flavors, self.scale_servers, _NoHypervisor(),
                             self.nova_timing, hosts=self.scenario.compute_hosts, quota=self.scenario.quota)
        self.openstack_api = self._loop.call(start_openstack(self.nova, password=self._os_password))
        self._stack.append(lambda: self._loop.call(self.openstack_api.stop()))
        # a plain project member, as most cloud users are: Nova's policy hides admin fields and actions
        self.openstack_api.keystone.add_user(MEMBER_USER, self._os_member_password, user_id=MEMBER_USER_ID)
        write_clouds_yaml(
            self.state.clouds_yaml,
            "lab",
            auth_url=self.openstack_api.auth_url,
            username="admin",
            password=self._os_password,
            project="admin",
            more={MEMBER_USER: (MEMBER_USER, self._os_member_password)},
        )
        write_openrc(self.state.openrc_member, auth_url=self.openstack_api.auth_url, username=MEMBER_USER,
                     password=self._os_member_password, project="admin")
        if self.kube_api is not None:
            write_fault_files(self.state.root / "faults", kube_url=self.kube_api.url, ca_pem=self.kube_api.ca_pem,
                              nobody_token=self._nobody_token, auth_url=self.openstack_api.auth_url,
                              os_password=self._os_password)

    def _add_exec_context(self) -> None:
        """Context `lab-exec`: its user's token comes from an exec plugin in the state dir, valid token_ttl s."""
        from console.lab.kubeapi.authn import EXEC_USER, write_plugin
        from console.lab.kubeconfig import add_context

        plugin = write_plugin(self.state.exec_plugin, self._exec_key, self.token_ttl)
        add_context(self.state.kubeconfig, "lab-exec", EXEC_USER, {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "args": [],
            "interactiveMode": "Never", "provideClusterInfo": False}})

    def _start_sshd(self, progress: Progress) -> None:
        from console.lab.sshd import LabSshd

        progress(f"starting SSH for {len(self.vms)} nodes")
        ips = {vm.node_name: self.kubelets[vm.node_name].internal_ip for vm in self.vms}
        self.sshd = LabSshd(self.node_exec, ips)
        self._loop.call(self.sshd.start())
        self._stack.append(lambda: self._loop.call(self.sshd.stop()))
        self.ssh_config = self.sshd.write_client_files(self.state.root)

    def _wait_ready(self, progress: Progress, timeout: float = 60) -> None:
        """Every VM node has posted a Ready status (the kubelets read their guests)."""
        deadline = time.monotonic() + timeout
        waiting = [vm.node_name for vm in self.vms]
        while waiting and time.monotonic() < deadline:
            waiting = [n for n in waiting if not _ready(self.store.get("nodes", None, n))]
            if waiting:
                time.sleep(0.05)
        if waiting:
            raise LabError(f"nodes never became Ready: {', '.join(waiting)}")
        # nfd-worker's DaemonSet pods start once their nodes are Ready: wait for their first labels
        if self.nfd is not None and not self.nfd.wait_labelled(max(1.0, deadline - time.monotonic())):
            log.warning("lab: NFD had not labelled every node when the lab became ready")
        # and for NFD's own pods (what the nodes' requests and usage include) to be Running
        while not self._nfd_pods_running() and time.monotonic() < deadline:
            time.sleep(0.05)

    def _seed_workloads(self, progress: Progress, timeout: float = 60) -> None:
        """The scenario's workloads as a user creates them, on Ready nodes (placed by kube-scheduler as on a
        cluster in steady state, not in the race of nodes registering); waits until their pods run."""
        objects = seed.upstream_objects(self.scenario.objects)
        if not objects:
            return
        progress(f"creating {len(objects)} workload objects")
        for resource, obj in objects:
            self.store.create(resource, obj)
        deadline = time.monotonic() + timeout

        def waiting() -> list[str]:
            pods, _ = self.store.list("pods", None, lambda p: bool(p["metadata"].get("ownerReferences")))
            return [p["metadata"]["name"] for p in pods if p.get("status", {}).get("phase") != "Running"]

        while (left := waiting()) and time.monotonic() < deadline:
            time.sleep(0.1)
        if left:
            log.warning("lab: workload pods not Running when the lab became ready: %s", ", ".join(left))

    def _nfd_pods_running(self) -> bool:
        ns = self.scenario.nfd.namespace
        daemonsets, _ = self.store.list("daemonsets.apps", ns)
        deployments, _ = self.store.list("deployments.apps", ns)
        if any("desiredNumberScheduled" not in (d.get("status") or {}) for d in daemonsets):
            return False  # the DaemonSet controller has not placed its pods yet
        want = sum(int(d["status"]["desiredNumberScheduled"]) for d in daemonsets)
        want += sum(int((d.get("spec") or {}).get("replicas", 1)) for d in deployments)
        pods, _ = self.store.list("pods", ns)
        return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running") >= want


def _ready(node: dict[str, Any]) -> bool:
    conds = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


class _NoHypervisor:
    """The scale world has no VMs: Nova serves flavors (and servers to read when it has Pending pods), never an
    action that would call the hypervisor."""

    uri = ""

    def on_stopped_outside(self, callback: Callable[[str], None]) -> None:
        pass

    def define_from_flavor(self, vm: VMSpec, flavor: Flavor) -> None:
        raise RuntimeError(f"the scale world has no VMs: cannot define {vm.server_id}")

    def start(self, server_id: str) -> None:
        raise RuntimeError(f"the scale world has no VMs: cannot start {server_id}")

    def stop(self, server_id: str) -> None:
        raise RuntimeError(f"the scale world has no VMs: cannot stop {server_id}")

    def soft_reboot(self, server_id: str) -> None:
        raise RuntimeError(f"the scale world has no VMs: cannot reboot {server_id}")

    def is_running(self, server_id: str) -> bool:
        return False

    def guest(self, server_id: str) -> Guest:
        raise RuntimeError(f"the scale world has no VMs: {server_id} has no guest")

    def close(self) -> None:
        pass
