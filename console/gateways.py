"""Everything the TUI talks to for ONE kube context, built in one place and handed to the App.

    gateways = Gateways.connect(settings)          # reads the kubeconfig; no request yet
    gateways.start()                               # the node/pod/event watches, in daemon threads
    app = ConsoleApp(gateways)

Screens take what they need from `app.gateways` (the caches, the guard, the access review) and ask it for
the stores and sessions they use (`rule_store()`, `nfd_files()`, `scaleup_session()`, …): they never build
a client, so every request of one context goes through that context's one connection. A context switch
builds a new bundle off the UI thread and replaces the old one whole (`stop()` ends its threads).
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from console.config import Settings
from console.guard import Guard
from console.kube.access import Access

if TYPE_CHECKING:
    from console.infra.inventory import VmListing
    from console.infra.sizes import FlavorInfo
    from console.kube.cache import ResourceCache
    from console.kube.cluster import CacheHealth, ClusterSnapshot
    from console.kube.connection import KubeTarget
    from console.kube.events import Events
    from console.kube.metrics import MetricsReader
    from console.kube.model import NodeInfo, PodInfo
    from console.kube.nfdfiles import FileTarget
    from console.kube.nfdstore import RuleStore
    from console.nfd.deployment import FileKind, NfdDeployment
    from console.planner.model import PlanInput, Preferences
    from console.runbook.session import Session

NOT_REVIEWED = "not reviewed yet"
NFD_DISCOVERY_TTL_S = 30.0  # one discovery serves every screen opened within this many seconds


class ClusterGateway(Protocol):
    """One context's connection and node/pod caches, as the TUI and Gateways use them: console/kube/cluster.Cluster
    is the one (a Protocol, so a test's stand-in needs only what it is asked for)."""

    api_client: Any  # kubernetes.client.ApiClient: handed to the stores; its types never leave console/kube/
    target: KubeTarget  # which kubeconfig / context / server, for the header and a context switch
    nodes: ResourceCache[NodeInfo]
    pods: ResourceCache[PodInfo]

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def on_change(self, callback: Callable[[], None]) -> None: ...
    def on_health(self, callback: Callable[[CacheHealth], object]) -> None: ...
    def health(self) -> CacheHealth: ...
    def snapshot(self) -> ClusterSnapshot: ...


class VmGateway(Protocol):
    """What fills the VM columns (console/infra/inventory.VmInventory); blocking, so a worker's. VmListError."""

    def list(self) -> VmListing: ...
    def flavors(self) -> builtins.list[FlavorInfo]: ...


ClusterFactory = Callable[[str | None, str | None], ClusterGateway]  # (kubeconfig, context) -> a Cluster


@dataclass(frozen=True)
class Gateways:
    """One context's gateways: `cluster` (connection + node/pod caches), `events`, `vms` (None hides the VM
    columns), `guard` (every write goes through it), `access` (what this user may do, console/kube/access.py;
    until the App's review answers it is unknown, and unknown refuses nothing), the `settings` resolved for the
    context."""

    settings: Settings
    cluster: ClusterGateway
    guard: Guard
    vms: VmGateway | None = None
    events: Events | None = None
    metrics: MetricsReader | None = None  # usage from metrics.k8s.io (console/kube/metrics.py)
    access: Access = field(default_factory=lambda: Access(unknown=NOT_REVIEWED))
    label: str = ""  # what the header calls this context ("lab: default"); "" shows the context's name
    _why: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)
    _nfd: dict[str, Any] = field(default_factory=lambda: {"lock": threading.Lock()}, init=False, repr=False,
                                 compare=False)

    @classmethod
    def connect(cls, settings: Settings, *, kubeconfig: str | None = None, guard: Guard | None = None,
                vms: VmGateway | None = None, label: str = "",
                cluster_factory: ClusterFactory | None = None) -> Gateways:
        """Read the kubeconfig and build the bundle (KubeConfigError when it cannot be used); nothing started."""
        from console.kube.cluster import Cluster
        from console.kube.events import Events
        from console.kube.metrics import MetricsReader

        if cluster_factory is not None:
            cluster = cluster_factory(kubeconfig or settings.kubeconfig, settings.context)
        else:
            cluster = Cluster(kubeconfig or settings.kubeconfig, settings.context,
                              exec_timeout=settings.exec_plugin_timeout)
        api_client = getattr(cluster, "api_client", None)  # a stand-in without one has no events or metrics
        return cls(settings, cluster, guard or Guard.from_settings(settings), vms=vms,
                   events=Events(api_client) if api_client is not None else None,
                   metrics=MetricsReader(api_client) if api_client is not None else None, label=label)

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> None:
        self.cluster.start()
        if self.events is not None:
            self.events.start()
        if self.metrics is not None:
            self.metrics.start()

    def stop(self) -> None:
        """End this bundle's watch threads (a context switch, the app's exit); idempotent."""
        if self.events is not None:
            self.events.stop()
        if self.metrics is not None:
            self.metrics.stop()
        self.cluster.stop()

    # -- what this user may do -----------------------------------------------------------------------------
    def review_access(self) -> Access:
        """Ask the API server what this user may do (SelfSubjectRulesReview/AccessReview); blocking: a worker's."""
        from console.kube.access import review

        return review(self.cluster.api_client, self.settings, target=self.cluster.target)

    def with_access(self, access: Access) -> Gateways:
        """The same gateways, with the review's answer (the caches and threads are shared, not copied)."""
        return replace(self, access=access)

    def why_not(self, action: str) -> str:
        """"" when `action` ("scale-up", "rule-apply", …) is allowed or unknown, else what it needs."""
        if action not in self._why:  # asked on every footer refresh: the answer is fixed for the bundle
            self._why[action] = self.access.why_not(action, self.settings)
        return self._why[action]

    def cannot_read(self, what: str) -> str:
        """"" when the data set `what` ("nodes", "pods", …) may be read (or it is unknown), else why not."""
        return self.access.cannot_read(what)

    def unreadable(self, what: str) -> str:
        """Why the data set `what` ("nodes", "pods", "events") is not shown ("" when it is): the review says it
        may not be read, or the API server refused its cache's list or watch (403)."""
        why = self.cannot_read(what)
        if why:
            return why
        cache = {"nodes": getattr(self.cluster, "nodes", None), "pods": getattr(self.cluster, "pods", None),
                 "events": getattr(self.events, "cache", None)}.get(what)
        if cache is None or cache.health().state != "forbidden":  # the cache's own verdict on its last answer
            return ""
        error = cache.last_error
        from console.faults import redact, status_message

        return f"cannot list {what}: {redact(status_message(error)) or 'forbidden'} (403 Forbidden)"

    # -- what the screens used to build themselves ---------------------------------------------------------
    @property
    def api_client(self) -> Any:
        return self.cluster.api_client

    def rule_store(self, guard: Guard | None = None) -> RuleStore:
        from console.kube.nfdstore import RuleStore

        return RuleStore(self.api_client, guard=guard or self.guard)

    def nfd_files(self, kind: FileKind, deployment: NfdDeployment | None = None, *, settings: Settings | None = None,
                  guard: Guard | None = None) -> FileTarget:
        """Where this cluster's nfd-worker reads `kind` ("hook" | "feature") files: the target its DaemonSet's
        volume says (hostPath on each node, or a ConfigMap; console/kube/nfdfiles.file_target), writes through
        the guard and refused unsent where this user's access says no. `deployment`: the NfdDeployment
        (default: `nfd_deployment()`, the discovery's)."""
        from console.kube.nfdfiles import file_target

        nfd = deployment if deployment is not None else self.nfd_deployment()
        if nfd is None:
            from console.kube.nfdfiles import FileTargetError

            raise FileTargetError("no NFD in this cluster: there is no nfd-worker to read hooks or feature files; "
                                  "edit them offline with hook_store: directory and preview with `nfd local`")
        return file_target(nfd, kind, api_client=self.api_client,
                           settings=settings or self.settings, guard=guard or self.guard, access=self.access)

    def node_features(self, node: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """NodeFeature objects by node (one node's, or all); NfdStoreError."""
        from console.kube.nfdstore import list_node_features

        return list_node_features(self.api_client, node)

    def node_objects(self) -> dict[str, dict[str, Any]]:
        """Every Node as the API returns it, by name (what a rule dry-run evaluates); NfdStoreError."""
        from console.kube.nfdstore import list_nodes

        return list_nodes(self.api_client)

    def nfd_deployment(self, *, max_age: float = NFD_DISCOVERY_TTL_S) -> NfdDeployment | None:
        """NFD as this cluster runs it (console/kube/nfddiscovery.py: namespace, version, master/worker flags and
        config, mounts), None when it runs none; discovered at most once per `max_age` seconds and shared by the
        screens. Blocking: a worker's. NfdDiscoveryError."""
        import time

        from console.kube.nfddiscovery import discover_nfd

        with self._nfd["lock"]:  # the status line and the screen's version ask at once: one discovery answers both
            hit = self._nfd.get("deployment")
            if hit is not None and time.monotonic() - hit[0] < max_age:
                return hit[1]
            found = discover_nfd(self.api_client)
            self._nfd["deployment"] = (time.monotonic(), found)
            return found

    def nfd_version(self) -> str | None:
        """The NFD version the cluster runs ("v0.16.4"), from `nfd_deployment()` (image tag, else what NFD recorded),
        else one worker NodeFeature's annotation (nfdstore.cluster_nfd_version); None when unknown. NfdStoreError
        when it cannot be discovered (what the stores' callers already handle)."""
        from console.kube.nfddiscovery import NfdDiscoveryError
        from console.kube.nfdstore import NfdStoreError

        try:
            found = self.nfd_deployment()
        except NfdDiscoveryError as e:
            raise NfdStoreError(str(e)) from e
        if found is not None and found.version is not None:
            return str(found.version)
        from console.kube.nfdstore import cluster_nfd_version

        return cluster_nfd_version(self.api_client)  # no workload found or readable: what a NodeFeature recorded

    def scaleup_session(self, settings: Settings | None = None, guard: Guard | None = None) -> Session:
        """A scale-up Session on this bundle's connection (no second ApiClient); blocking reads happen later."""
        from console.runbook.session import Session

        guard = guard or self.guard
        if settings is not None and settings.read_only and not guard.read_only:  # a read-only screen stays so
            guard = Guard(read_only=True, audit=guard.audit)
        # the App's review when it answered; else the session asks itself before it plans (a refusal at plan time)
        permissions = None if self.access.unknown else self.access
        return Session(settings or self.settings, guard=guard, connection=(self.api_client, self.cluster.target),
                       permissions=permissions)


    def plan_input(self, pods: Sequence[str] | None = None, prefs: Preferences | None = None) -> PlanInput:
        """The capacity planner's input for this context (console/planner/inputs.read_plan_input): the cluster
        through this bundle's connection, the VMs of its settings. Blocking: a worker's."""
        from console.planner.inputs import read_plan_input

        return read_plan_input(self.api_client, self.settings, pods=pods, prefs=prefs)


def vm_inventory_for(settings: Settings) -> VmGateway | None:
    """What fills the VM columns for `settings` (None: no cloud or hypervisor configured); no I/O yet."""
    from console.infra.inventory import vm_inventory
    from console.infra.libvirt import libvirt_uris

    return vm_inventory(settings.cloud, libvirt_uris(settings.libvirt_uris))
