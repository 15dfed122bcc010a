"""The embedded lab: one scenario's world, started and stopped as a unit.

Wiring only: upstream's control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager:
console/lab/controlplane.py) and the lab's view of it (console/lab/apistore.py), the HTTP servers (on a
background asyncio loop), libvirt with one domain per VM, the guests' kubelets, node exec, Nova, NFD. The
state directory receives what other processes need.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import logging
import secrets
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from console.lab import seed
from console.lab.loop import LoopThread
from console.lab.podlogs import PodLogs
from console.lab.podnet import PodNetwork, slices_of
from console.lab.scenarios import Scenario
from console.lab.statedir import StateDir
from console.lab.waiting import wait_for

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
        steady_usage: bool = False,
        wait_usage: bool = True,
        cloud: Literal["sim", "real"] = "sim",
    ) -> None:
        self.scenario = scenario
        # "real": Keystone, Nova and Placement from PyPI with the lab's virt driver, one libvirtd per compute host
        # (console/lab/cloud/); "sim": the lab's own OpenStack (console/lab/openstack/), until every test moved
        self.cloud_kind = cloud
        self.state = StateDir(Path(state_dir))
        self.libvirt_driver = libvirt
        self.nova_timing = nova_timing
        self.watch_expiry = watch_expiry  # seconds: etcd compacted that often, watches served from etcd
        self.token_ttl = token_ttl  # seconds the `lab-exec` context's exec-plugin tokens live
        self.metrics = metrics  # serve metrics.k8s.io: upstream's metrics-server
        # the kubelets' usage at its mean, the same in every scrape (pictures that do not change between runs)
        self.steady_usage = steady_usage
        # ready only once metrics.k8s.io has every node's usage (`kubectl top` answers): metrics-server's second
        # scrape, 10-20 s after it starts. False: ready once it serves, and the usage comes that much later, as on
        # a cluster whose metrics-server has just started (steady usage always waits: its pictures need the rates)
        self.wait_usage = wait_usage or steady_usage
        self.control_plane: Any = None  # upstream's control plane (console/lab/controlplane.py)
        self.token_issuer: Any = None  # the lab-exec context's OIDC issuer (console/lab/tokenissuer.py)
        self.metrics_server: Any = None  # upstream's metrics-server (console/lab/metricsserver.py)
        self.store: Any = None  # the lab's view of the real API server (console/lab/apistore.py ApiStore)
        self.logs = PodLogs()
        self.vms = seed.vm_specs(scenario)
        self.scale_servers = seed.scale_vm_specs(scenario)  # Nova servers without a hypervisor (scale world)
        self._loop = LoopThread()
        self._stack: list[Callable[[], None]] = []  # undo actions, run in reverse on stop
        self.openstack_api: Any = None
        self.hypervisor: Any = None
        self.nova: Any = None
        self.cloud: Any = None  # console/lab/cloud/stack.py Cloud (cloud="real")
        self.compute: Any = None  # console/lab/compute_hosts.py ComputeHosts (cloud="real")
        self.kubelets: dict[str, Any] = {}
        self.guest_roots: dict[str, Any] = {}  # node -> console.lab.guestroot.GuestRoot, its `/` on this host
        self.node_exec: Any = None
        self.fleet: Any = None
        self._nfd_objects_made: list[tuple[str, dict[str, Any]]] | None = None
        self.sshd: Any = None
        self.ssh_config: Path | None = None
        self._os_password = secrets.token_urlsafe(18)
        self._os_member_password = secrets.token_urlsafe(18)

    # -- public facts ---------------------------------------------------
    @property
    def kube_url(self) -> str:
        return str(self.control_plane.url) if self.control_plane is not None else ""

    @property
    def kube_ca_pem(self) -> bytes:
        """The CA that signed the Kubernetes API server's certificate (PEM): what a kubeconfig's
        certificate-authority-data and a pod's service-account ca.crt hold."""
        return bytes(self.control_plane.ca_pem) if self.control_plane is not None else b""

    @property
    def rbac_contexts(self) -> tuple[str, ...]:
        """The kubeconfig's contexts of the lab's RBAC users (console/lab/rbac_policy.py), beside `lab` (admin)."""
        return ("lab-viewer", "lab-operator")

    def compacted_revision(self) -> int:
        """The storage's compaction: a watch or an Exact list from a resourceVersion below this is answered 410
        (etcd's last compaction revision less one: a watch from R reads R+1 on)."""
        return max(0, int(self.control_plane.compact_revision()) - 1)

    def delete_behind_api(self, resource: str, namespace: str, name: str) -> None:
        """Delete an object in the storage behind the API server, which may be down meanwhile, as another API server
        of the cluster would: etcd's key of it (/registry/<resource>/<ns>/<name>, pods and other namespaced core
        resources)."""
        key = f"/registry/{resource}/{namespace}/{name}"
        if self.control_plane.etcd_delete(key) != 1:
            raise LabError(f"etcd has no key {key}")

    def mint_token(self, user: str, ttl: float) -> str:
        """A bearer token the API server authenticates as `user`, with no groups, for `ttl` seconds: signed as the
        lab-exec plugin's tokens are (by the issuer the API server's JWT authenticator trusts,
        console/lab/tokenissuer.py)."""
        return str(self.token_issuer.mint(user, ttl)[0])

    def write_token_plugin(self, path: Path, ttl: float, user: str) -> Path:
        """An exec credential plugin at `path` whose tokens (mint_token's) make its user `user` for `ttl` s."""
        return Path(self.token_issuer.write_plugin(path, ttl, subject=user))

    @property
    def openstack_url(self) -> str:
        if self.cloud is not None:
            return str(self.cloud.auth_url)
        return self.openstack_api.auth_url if self.openstack_api else ""

    @property
    def libvirt_uri(self) -> str:
        if self.compute is not None:  # each compute host's, space-separated (CONSOLE_LIBVIRT_URI)
            return " ".join(self.compute.uris.values())
        return self.hypervisor.uri if self.hypervisor else ""

    # -- lifecycle ------------------------------------------------------
    def start(self, progress: Progress = lambda _msg: None) -> None:
        t0 = time.monotonic()
        self.state.prepare()
        self._loop.start()
        self._stack.append(self._loop.stop)
        # the VMs boot while the control plane starts (neither needs the other), as a cluster's machines do
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            if self.cloud_kind == "real" and self.vms:
                # Nova boots the servers; their ids are the nodes' providerID and systemUUID
                cloud = pool.submit(self._start_cloud, progress)
                self._start_control_plane(progress)
                cloud.result()
                self._seed(progress)
            else:
                hypervisor = pool.submit(self._start_hypervisor, progress) if self.vms else None
                self._start_control_plane(progress)
                self._seed(progress)
                if hypervisor is not None:
                    hypervisor.result()
        self._start_cluster_sims(progress)
        # metrics-server as soon as the nodes it scrapes are there: `kubectl top` answers only after its second
        # scrape, a --metric-resolution (10s) after the first, and NFD, the servers and the workloads start
        # meanwhile
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            metrics = None
            if self.metrics:
                self._launch_metrics_server(progress)
                if self.metrics_server is not None:  # None: no kubelets to scrape (the scale world)
                    metrics = pool.submit(self.metrics_server.wait_serving)
            self._start_nfd(progress)
            self._start_servers(progress)
            if self.vms:
                self._start_sshd(progress)
            self.state.write_env(libvirt_uri=self.libvirt_uri, ssh_config=self.ssh_config)
            self._wait_ready(progress)
            if metrics is not None:
                from console.lab.metricsserver import MetricsServerError

                try:
                    metrics.result()
                except MetricsServerError as e:
                    raise LabError(str(e)) from e
        self._seed_workloads(progress)
        if self.metrics_server is not None and self.wait_usage:  # `kubectl top` answers after its second scrape
            progress("waiting for metrics-server's node metrics")
            # steady usage: the same rates in every run only from a window after the last container started
            since = self._all_bound_pods_started() if self.steady_usage else None
            if not self.metrics_server.wait_scraped(set(self.kubelets), since=since):
                log.warning("lab: metrics.k8s.io had not every node's usage when the lab became ready")
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

    @staticmethod
    def _audit_users() -> tuple[str, ...]:
        """Who the audit log follows (api_requests): the users of the kubeconfig's contexts and fault files."""
        from console.lab.controlplane import ADMIN_USER
        from console.lab.faultfiles import NOBODY_USER
        from console.lab.rbac_policy import OPERATOR_USER, VIEWER_USER
        from console.lab.tokenissuer import EXEC_USER

        return ADMIN_USER, VIEWER_USER, OPERATOR_USER, EXEC_USER, NOBODY_USER

    def api_requests(self, prefix: str = "") -> list[str]:
        """The requests the kubeconfig's users made to the Kubernetes API so far ("GET /api/v1/nodes?limit=500"),
        oldest first, those starting with `prefix`: the API server's audit log."""
        return list(self.control_plane.requests(prefix))

    def kube_api_down(self) -> None:
        """The API server goes away (its port refuses, watches drop) until `kube_api_up()` serves again on the
        same port with the same certificate; etcd (and its compaction) keeps running behind it."""
        self.control_plane.apiserver_down()

    def kube_api_up(self) -> None:
        self.control_plane.apiserver_up()

    # -- parts ----------------------------------------------------------
    def _start_control_plane(self, progress: Progress) -> None:
        from console.lab.apistore import ApiStore
        from console.lab.controlplane import ControlPlane, ControlPlaneError
        from console.lab.kubeclient import KubeClient
        from console.lab.nodeleases import grace_period
        from console.lab.tokenissuer import TokenIssuer
        from console.lab.upstream.build import KUBE, BuildError, binary

        try:
            kube = binary(KUBE, progress)
        except BuildError as e:
            raise LabError(str(e)) from e
        # a new cluster each start, as the VMs are new: no etcd data of an earlier run in this state dir
        shutil.rmtree(self.state.root / "kube", ignore_errors=True)
        # the `lab-exec` user's tokens: an OIDC issuer the API server's JWT authenticator trusts, serving its
        # discovery document and keys before the API server starts (console/lab/tokenissuer.py)
        authn_config = self.state.root / "kube" / "authentication-config.yaml"
        # the scale world's nodes have no kubelets: the lab renews their Leases (console/lab/nodeleases.py), at
        # a rate that stays the same beyond a few hundred nodes, so less often for more nodes; the node lifecycle
        # controller must then wait as many renewals before it calls a node unreachable as with kubelets (50s
        # for 10s renewals), or it would taint thousands of healthy nodes and evict their pods
        grace = grace_period(self.scenario.scale_nodes) if self.scenario.scale_nodes else "50s"
        # kube-controller-manager's one client (cmd/kube-controller-manager/app/controllermanager.go
        # createClientBuilders: c.Client) makes each controller's ServiceAccount and token at start, some 130
        # requests, and its node lifecycle controller lifts the not-ready taint of each new node with two more
        # (a get and a patch: pkg/controller/controller_utils.go RemoveTaintOffNode): at its default 20 a second
        # the default service account came 5.6s after it started, at 100 0.6s. Kubernetes' own scale tests run it
        # at 100 (test-infra, sig-scalability jobs: CONTROLLER_MANAGER_TEST_ARGS=--kube-api-qps=100
        # --kube-api-burst=100)
        qps = 100
        # watch_expiry: etcd compacted every that many seconds, and lists and watches served by etcd rather than
        # the watch cache, whose history compaction does not shorten (k8s.io/apiserver/pkg/storage/cacher/
        # compactor.go compacts only its snapshots): a watch resumed from a compacted revision then ends in 410
        expiry = self.watch_expiry
        self.control_plane = ControlPlane(self.state.root / "kube", kube, authentication_config=authn_config,
                                          node_monitor_grace_period=grace, audit_users=self._audit_users(),
                                          etcd_compaction_interval=f"{expiry:g}s" if expiry else "5m",
                                          watch_cache=expiry is None, controller_manager_qps=qps)
        self.token_issuer = TokenIssuer(self.control_plane.ca)
        self._loop.call(self.token_issuer.start())
        self._stack.append(lambda: self._loop.call(self.token_issuer.stop()))
        self.token_issuer.write_authentication_config(authn_config)
        self._stack.append(self.control_plane.discard)
        try:
            self.control_plane.start(progress)
            self.token_issuer.wait_accepted(self.control_plane.url)
        except (ControlPlaneError, TimeoutError) as e:
            raise LabError(str(e)) from e
        # the lab's own writes (agents, seeding) as a user of their own, so the audit log holds only the people's
        world = self.control_plane.user_cert(WORLD_USER, ("system:masters",))
        world.write(self.control_plane.pki_dir, "world")
        pki = self.control_plane.pki_dir
        self.store = ApiStore(KubeClient(self.control_plane.url, ca=pki / "ca.crt", cert=pki / "world.crt",
                                         key=pki / "world.key"))
        self._stack.append(self.store.stop)

    def _launch_metrics_server(self, progress: Progress) -> None:
        """Upstream's metrics-server serving metrics.k8s.io from the kubelet agents' /metrics/resource
        (console/lab/metricsserver.py), launched (MetricsServer.launch); `kubectl top` answers once it serves
        and has scraped twice."""
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
        self._stack.append(lambda: server.stop(graceful=False))
        try:
            server.launch(progress)
        except MetricsServerError as e:
            raise LabError(str(e)) from e
        self.metrics_server = server

    def _wait_service_account(self, namespace: str, timeout: float = 60) -> None:
        from console.lab.kubeclient import ApiError

        def made() -> bool:
            # a GET, not the store's informer: a watch on every ServiceAccount for the lab's life to wait once
            try:
                self.store.client.request("GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
            except ApiError as e:
                if e.code != 404:
                    raise LabError(f"kube-controller-manager made no service account in {namespace}: {e}") from e
                return False
            return True

        if not wait_for(made, timeout=timeout):
            raise LabError(f"kube-controller-manager made no service account in {namespace} in {timeout:.0f}s "
                           f"(its log: {self.control_plane.root / 'kube-controller-manager.log'})")

    def _seed(self, progress: Progress) -> None:
        from console.lab.store import AlreadyExists

        sc = self.scenario
        for ns in sc.namespaces:
            with contextlib.suppress(AlreadyExists):  # the API server made default and kube-system itself
                self.store.create("namespaces", seed.namespace(ns))
        # the ServiceAccount admission plugin refuses pods until the controller made `default`
        for ns in {"default", *sc.namespaces}:
            self._wait_service_account(ns)
        by_node = {vm.node_name: vm for vm in self.vms}
        for spec in sc.nodes:
            self.store.create("nodes", seed.node_object(spec, by_node.get(spec.name)))
        if sc.scale_nodes:
            progress(f"generating {sc.scale_nodes} nodes and {sc.scale_nodes * sc.scale_pods_per_node} pods"
                     + (f", {sc.scale_pending} Pending" if sc.scale_pending else ""))
            nodes, pods = seed.scale_objects(sc)
            self._load_scale_world(nodes, pods, progress)
        for pod in sc.pods:
            if pod.node is None:
                continue  # meets the scheduler once the workloads run (_seed_workloads)
            self.store.create("pods", seed.pod_object(pod))
        # NFD's DaemonSet and Deployment come once the nodes are Ready (_start_nfd), the workloads too
        # (_seed_workloads)
        self._seed_nfd(progress, [(r, o) for r, o in self._nfd_objects() if r not in _NFD_WORKLOADS])

    def _load_scale_world(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                          progress: Progress) -> None:
        """The scale world on the real API server: its nodes with the status kubelets would post, their Leases
        kept renewed (console/lab/nodeleases.py: no kubelet runs there), the pods bound to them Running; then,
        once the node lifecycle controller has lifted the not-ready taint every new node gets (the
        TaintNodesByCondition admission plugin), the Pending pods, which kube-scheduler finds no room for."""
        from console.lab.nodelease import micro_time
        from console.lab.nodeleases import NodeLeases, PodFinisher

        seed.kubelet_statuses(nodes, pods, micro_time()[:19] + "Z")
        bound = [p for p in pods if p["spec"].get("nodeName")]
        pending = [p for p in pods if not p["spec"].get("nodeName")]
        self.store.bulk_load("nodes", nodes, progress=progress)
        made, _ = self.store.list("nodes")
        leases = NodeLeases(self.store, {n["metadata"]["name"]: n["metadata"]["uid"] for n in made})
        self._stack.append(leases.stop)
        leases.start(progress)
        finisher = PodFinisher(self.store, {n["metadata"]["name"] for n in made})
        self._stack.append(finisher.stop)
        finisher.start()
        self.store.bulk_load("pods", bound, progress=progress)
        self._wait_schedulable(len(nodes), progress)
        if pending:
            self.store.bulk_load("pods", pending, progress=progress)

    def _wait_schedulable(self, count: int, progress: Progress) -> None:
        """Until `count` nodes are Ready without the node lifecycle controller's not-ready or unreachable taints
        (pkg/controller/nodelifecycle: doNoScheduleTaintingPass)."""
        from console.lab.kubelet_status import NOT_READY_TAINT, UNREACHABLE_TAINT

        def schedulable(node: dict[str, Any]) -> bool:
            taints = (node.get("spec") or {}).get("taints") or []
            return _ready(node) and not any(t.get("key") in (NOT_READY_TAINT, UNREACHABLE_TAINT) for t in taints)

        def unschedulable() -> int:
            nodes, _ = self.store.list("nodes")
            return sum(1 for n in nodes if not schedulable(n)) + max(0, count - len(nodes))

        progress(f"waiting for kube-controller-manager to lift the not-ready taint of {count} nodes")
        timeout = 60 + count / 25
        if not wait_for(lambda: not unschedulable(), timeout=timeout, interval=0.2):
            raise LabError(f"{unschedulable()} of {count} nodes were not Ready and untainted after "
                           f"{timeout:.0f}s (kube-controller-manager's log: "
                           f"{self.control_plane.root / 'kube-controller-manager.log'})")

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
        from console.lab.kubelet import Fleet, Kubelet
        from console.lab.nodeexec import NodeExec

        if not self.vms:
            # no kubelet, guest or sandbox to run (the scale world): and their pod watch would keep every pod
            return
        sc = self.scenario
        self.fleet = Fleet(self.store)
        self.fleet.start()
        self._stack.append(self.fleet.stop)
        specs = {n.name: n for n in sc.nodes}
        guests = {}
        from console.lab.guestroot import GuestRoot
        from console.lab.nodehardware import hardware_files

        # the nodes' disks are new with the lab's VMs: nothing of an earlier run (a CPU manager checkpoint, hooks)
        shutil.rmtree(self.state.root / "guests", ignore_errors=True)
        addresses = self._node_addresses()

        for vm in self.vms:
            guest = (self.compute if self.compute is not None else self.hypervisor).guest(vm.server_id)
            root = GuestRoot(self.state.root / "guests" / vm.node_name)
            self._stack.append(root.attach(guest, hostname=vm.node_name, kernel_release=sc.host_os.kernel_release,
                                           os_release=sc.host_os.os_release))
            self.guest_roots[vm.node_name] = root
            for path, text in hardware_files(specs[vm.node_name], sc.host_os).items():
                root.write(path, text)
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
                internal_ip=addresses.get(vm.node_name),
            )
            kubelet.start()
            self.kubelets[vm.node_name] = kubelet
            self._stack.append(kubelet.stop)
        network = PodNetwork(self.store.client.address, lambda: self.store.list("services")[0],
                             slices_of(lambda ns: self.store.list("endpointslices.discovery.k8s.io", ns)[0]),
                             self.state.root)
        self._stack.append(network.close)
        self.node_exec = NodeExec(self.store, self.logs, guests, self.kubelets, roots=self.guest_roots,
                                  cpus={spec.name: spec.cpu for spec in self.scenario.nodes},
                                  state_dir=self.state.root / "cpus", network=network)
        self.node_exec.start()
        self._stack.append(self.node_exec.stop)
        self._start_kubelet_servers()  # upstream's kube-scheduler and kube-controller-manager do the rest

    def _node_addresses(self) -> dict[str, str]:
        """Each node's address its kubelet serves on (console/lab/nodeaddrs.py), which the API server dials."""
        from console.lab.nodeaddrs import AddressError, NodeAddresses

        if not self.vms:
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
                                   pods=functools.partial(self.store.pods_on_node, name),
                                   steady_usage=self.steady_usage)
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

    def _nfd_objects(self) -> list[tuple[str, dict[str, Any]]]:
        """The scenario's NFD release as its own manifests deploy it (console/lab/nfd_release.py), then the
        scenario's own NFD objects (NodeFeatureRules)."""
        from console.lab import nfd_release

        if self._nfd_objects_made is None:
            try:
                release = nfd_release.objects(self.scenario, self.state.root / "nfd-release")
            except nfd_release.ReleaseError as e:
                raise LabError(str(e)) from e
            self._nfd_objects_made = [*release, *seed.scenario_nfd_objects(self.scenario)]
        return self._nfd_objects_made

    def _start_nfd(self, progress: Progress) -> None:
        # NFD's DaemonSet and Deployment once the nodes are Ready and schedulable, as NFD is installed on a
        # running cluster: nfd-master's pod meets every node, its preferred node affinity picks the control
        # plane (the rest of NFD's objects came with the seed, _seed); its pods are the node agents' to run
        # (console/lab/nodeexec.py)
        workloads = [(r, o) for r, o in self._nfd_objects() if r in _NFD_WORKLOADS]
        if workloads:
            self._wait_schedulable(len(self.vms), progress)
            self._seed_nfd(progress, workloads)
            progress(f"NFD {self.scenario.nfd_version}: upstream's nfd-master, nfd-worker and nfd-gc in their pods")

    def _seed_nfd(self, progress: Progress, objects: list[tuple[str, dict[str, Any]]], timeout: float = 60) -> None:
        """NFD's objects through the real API server as `kubectl apply -k` sends them (seed.upstream_nfd_objects:
        with their service accounts and RBAC, and the scenario's NodeFeatureRules): the objects of a custom
        resource once its CRD is Established (served, and in discovery). The DaemonSet's and the Deployment's pods
        are then the controllers', bound by kube-scheduler and the DaemonSet controller and run by the kubelet
        agents."""
        from console.lab.resources import CRD_RESOURCE, rtype
        from console.lab.store import StoreError

        progress(f"creating {len(objects)} objects of NFD {self.scenario.nfd_version}")
        crds = [o["metadata"]["name"] for r, o in objects if r == CRD_RESOURCE]
        for resource, obj in objects:
            try:
                if crds and rtype(resource).custom:
                    self._wait_established(crds, timeout)
                    crds = []
                self.store.create(resource, obj)
            except StoreError as e:
                raise LabError(f"the API server refused NFD's {resource} {obj['metadata']['name']}: {e}") from e
            if resource == "namespaces":  # v0.8-v0.11 workers run as the namespace's `default` service account
                self._wait_service_account(obj["metadata"]["name"])
        if crds:
            self._wait_established(crds, timeout)

    def _wait_established(self, names: list[str], timeout: float) -> None:
        """Until each CRD has condition Established (apiextensions-apiserver's establishing controller sets it
        once the names are accepted; pkg/controller/establish/establishing_controller.go)."""
        from console.lab.resources import CRD_RESOURCE
        from console.lab.store import NotFound

        def established(name: str) -> bool:
            try:
                crd = self.store.get(CRD_RESOURCE, None, name)
            except NotFound:
                return False
            return any(c.get("type") == "Established" and c.get("status") == "True"
                       for c in (crd.get("status") or {}).get("conditions") or [])

        if not wait_for(lambda: all(established(n) for n in names), timeout=timeout, interval=0.05):
            waiting = [n for n in names if not established(n)]
            raise LabError(f"CRDs not Established after {timeout:.0f}s: {', '.join(waiting)}")

    def _start_servers(self, progress: Progress) -> None:
        self._kube_users()
        self._start_openstack(progress)

    def _kube_users(self) -> None:
        """The kubeconfig's contexts as client certificates the real API server authenticates (CN = user,
        O = groups), and the lab's RBAC as plain objects; `lab-exec` gets its token from an exec plugin that signs
        as the lab's token issuer, valid token_ttl s (console/lab/tokenissuer.py)."""
        from console.lab.controlplane import ADMIN_USER
        from console.lab.kubeconfig import add_context
        from console.lab.rbac_policy import OPERATOR_USER, VIEWER_USER, lab_users, seed
        from console.lab.tokenissuer import EXEC_USER

        cp = self.control_plane
        seed(self.store, lab_users())
        # each kubeconfig user named after the user the server authenticates
        cp.write_kubeconfig(self.state.kubeconfig, {ADMIN_USER: cp.admin_cert(), VIEWER_USER: cp.user_cert(VIEWER_USER),
                                                    OPERATOR_USER: cp.user_cert(OPERATOR_USER)},
                            contexts={"lab": ADMIN_USER, "lab-viewer": VIEWER_USER, "lab-operator": OPERATOR_USER})
        plugin = self.token_issuer.write_plugin(self.state.exec_plugin, self.token_ttl)
        add_context(self.state.kubeconfig, "lab-exec", EXEC_USER, {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "args": [],
            "interactiveMode": "Never", "provideClusterInfo": False}})

    def _start_cloud(self, progress: Progress) -> None:
        """The compute hosts' libvirt, the real OpenStack services on them, the scenario's flavors and quota, and
        the VMs as Nova servers on the hosts the scenario names (an admin may force a host: availability zone
        `nova:HOST`). Their ids replace the lab's own (a server's id is Nova's to choose)."""
        from console.lab.cloud.hosts import HostSpec
        from console.lab.cloud.stack import Cloud, CloudError
        from console.lab.compute_hosts import ComputeHosts

        hosts = self._compute_hosts()
        progress(f"starting libvirt on {len(hosts)} compute hosts")
        self.compute = ComputeHosts(self.state.root / "compute", [h.name for h in hosts])
        try:
            self.compute.start()
        except Exception as e:
            raise LabError(f"libvirt did not start: {e}. Run ./dev lab to install libvirt and QEMU.") from e
        self._stack.append(self.compute.close)
        specs = [HostSpec(h.name, self.compute.uri(h.name), vcpus=h.vcpus, memory_mb=h.memory_mb, disk_gb=h.disk_gb,
                          reserved_vcpus=h.reserved_vcpus, reserved_memory_mb=h.reserved_memory_mb,
                          cpu_allocation_ratio=h.cpu_allocation_ratio, ram_allocation_ratio=h.ram_allocation_ratio)
                 for h in hosts]
        shutil.rmtree(self.state.root / "cloud", ignore_errors=True)  # a new cloud each start, as the VMs are new
        self.cloud = Cloud(self.state.root / "cloud", specs, admin_password=self._os_password)
        self._stack.append(self.cloud.stop)
        try:
            self.cloud.start(progress)
            self._fill_cloud(progress)
        except CloudError as e:
            raise LabError(str(e)) from e

    def _compute_hosts(self) -> list[Any]:
        """The scenario's compute hosts, and a roomy one for each host its nodes name that it does not size; at
        least two: Nova resizes on another host (allow_resize_to_same_host is False by default), so a cloud of one
        host can resize nothing."""
        from console.lab.vm import ROOMY_HOST

        sized = {h.name: h for h in self.scenario.compute_hosts}
        for vm in self.vms:
            sized.setdefault(vm.compute_host, dataclasses.replace(ROOMY_HOST, name=vm.compute_host))
        n = 1
        while len(sized) < 2:
            sized.setdefault(f"cmp{n:03d}", dataclasses.replace(ROOMY_HOST, name=f"cmp{n:03d}"))
            n += 1
        return sorted(sized.values(), key=lambda h: h.name)

    def _fill_cloud(self, progress: Progress) -> None:
        from console.lab.cloud.confs import LAB_IMAGE_ID

        conn = self.cloud.admin()
        try:
            for f in self.scenario.flavors:
                conn.compute.create_flavor(id=f.id, name=f.name, vcpus=f.vcpus, ram=f.ram_mb, disk=f.disk_gb)
            q = self.scenario.quota  # -1 = unlimited, Nova's own convention
            conn.set_compute_quotas(conn.current_project_id, cores=q.cores, ram=q.ram_mb, instances=q.instances)
            self.cloud.add_user(MEMBER_USER, self._os_member_password, "admin", ["member"])
            progress(f"booting {len(self.vms)} servers")
            made = [conn.compute.create_server(name=vm.node_name, flavor_id=vm.flavor.id, image_id=LAB_IMAGE_ID,
                                               networks="none", availability_zone=f"nova:{vm.compute_host}")
                    for vm in self.vms]
            booted = [conn.compute.wait_for_server(s, wait=300) for s in made]
        finally:
            conn.close()
        self.vms = [dataclasses.replace(vm, server_id=s.id, db_id=int(s.instance_name.rpartition("-")[2], 16))
                    for vm, s in zip(self.vms, booted, strict=True)]
        for vm in self.vms:
            self.compute.track(vm.server_id)

    def _start_openstack(self, progress: Progress) -> None:
        from console.lab.openstack.nova import Nova
        from console.lab.openstack.server import start_openstack

        if self.cloud is not None:
            self._write_cloud_files(self.cloud.auth_url)
            return
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
        self._write_cloud_files(self.openstack_api.auth_url)

    def _write_cloud_files(self, auth_url: str) -> None:
        from console.lab.cloudsyaml import write_clouds_yaml, write_openrc
        from console.lab.faultfiles import write_fault_files

        write_clouds_yaml(
            self.state.clouds_yaml,
            "lab",
            auth_url=auth_url,
            username="admin",
            password=self._os_password,
            project="admin",
            more={MEMBER_USER: (MEMBER_USER, self._os_member_password)},
        )
        write_openrc(self.state.openrc_member, auth_url=auth_url, username=MEMBER_USER,
                     password=self._os_member_password, project="admin")
        write_fault_files(self.state.root / "faults", kube_url=self.kube_url, ca_pem=self.kube_ca_pem,
                          write_nobody=self._write_nobody_kubeconfig, auth_url=auth_url,
                          os_password=self._os_password)

    def _write_nobody_kubeconfig(self, path: Path) -> None:
        """A kubeconfig of user `lab-nobody`: authenticated, no RBAC binding (403 to everything but discovery)."""
        from console.lab.faultfiles import NOBODY_USER

        self.control_plane.write_kubeconfig(path, {NOBODY_USER: self.control_plane.user_cert(NOBODY_USER)},
                                            contexts={"lab": NOBODY_USER})

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

        def not_ready() -> list[str]:
            return [vm.node_name for vm in self.vms if not _ready(self.store.get("nodes", None, vm.node_name))]

        if not wait_for(lambda: not not_ready(), timeout=timeout, interval=0.05):
            raise LabError(f"nodes never became Ready: {', '.join(not_ready())}")
        # nfd-worker's DaemonSet pods start once their nodes are Ready: wait for their first labels
        if self.scenario.nfd.workloads and not wait_for(self._nfd_labelled,
                                                        timeout=max(1.0, deadline - time.monotonic()), interval=0.1):
            log.warning("lab: NFD had not labelled every node its workers run on when the lab became ready")
        # and for NFD's own pods (what the nodes' requests and usage include) to be Running; a scenario with
        # NFD's CRDs only has none (and the scale world's lab must not list its pods: it would keep them all)
        left = max(0.0, deadline - time.monotonic())
        if self.scenario.nfd.workloads and not wait_for(self._nfd_pods_running, timeout=left, interval=0.05):
            log.warning("lab: NFD's pods were not all Running when the lab became ready")

    def _seed_workloads(self, progress: Progress, timeout: float = 60) -> None:
        """The scenario's workloads as a user creates them, on Ready nodes, their controllers making the pods:
        those the scenario runs on named nodes placed there (console/lab/placement.py), then the pods the scenario
        leaves to the scheduler meet it, as on the field reports' clusters: after the running pods took their
        room."""
        from console.lab.placement import Placement, PlacementError

        workloads = seed.upstream_objects(self.scenario.objects)
        for pod in self.scenario.pods:
            if pod.node is None:  # the scenario's Pending pods: what a user creates (the server sets the status)
                workloads.last.append(("pods", {k: v for k, v in seed.pod_object(pod).items() if k != "status"}))
        if workloads:
            progress(f"creating {len(workloads)} workload objects")
        taints = {spec.name: seed.node_taints(spec) for spec in self.scenario.nodes}
        try:
            Placement(self.store, taints, step_timeout=timeout, progress=progress).run(workloads)
        except PlacementError as e:
            raise LabError(str(e)) from e

    def _all_bound_pods_started(self, timeout: float = 60) -> float:
        """Once every pod on a node has started (or ended): the time then."""

        def started() -> bool:
            pods, _ = self.store.list("pods", None)
            return all((p.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed")
                       for p in pods if (p.get("spec") or {}).get("nodeName"))

        if not wait_for(started, timeout=timeout, interval=0.2):
            log.warning("lab: not every bound pod had started after %.0fs", timeout)
        return time.time()

    def _nfd_labelled(self) -> bool:
        """Every node with a running nfd-worker pod has NFD's labels (the real master wrote them)."""
        pods, _ = self.store.list("pods", self.scenario.nfd.namespace)
        nodes = {p["spec"].get("nodeName") for p in pods if (p.get("status") or {}).get("phase") == "Running"
                 and any(c.get("name") == "nfd-worker" for c in p["spec"].get("containers") or [])}
        if not nodes:
            return False
        for name in nodes:
            labels = self.store.get("nodes", None, name)["metadata"].get("labels") or {}
            if not any(k.startswith("feature.node.kubernetes.io/") for k in labels):
                return False
        return True

    def _nfd_pods_running(self) -> bool:
        ns = self.scenario.nfd.namespace
        daemonsets, _ = self.store.list("daemonsets.apps", ns)
        deployments, _ = self.store.list("deployments.apps", ns)
        if any("desiredNumberScheduled" not in (d.get("status") or {})
               or (d.get("status") or {}).get("observedGeneration", 0) < d["metadata"].get("generation", 1)
               for d in daemonsets):
            return False  # the DaemonSet controller has not placed its pods yet (a new one's status is all zeros)
        want = sum(int(d["status"]["desiredNumberScheduled"]) for d in daemonsets)
        want += sum(int((d.get("spec") or {}).get("replicas", 1)) for d in deployments)
        pods, _ = self.store.list("pods", ns)
        return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running") >= want


_NFD_WORKLOADS = ("deployments.apps", "daemonsets.apps")  # nfd-master's and nfd-worker's


WORLD_USER = "lab-world"  # the lab's agents and seeding


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
