"""Simulated kubelets: node status from the guest, read at start only.

Facts from shared/reference/scale-up.md 5.1-5.5: capacity (online CPUs,
MemTotal) is read when the kubelet starts and never again while it runs;
after a restart the node is NotReady ("container runtime status check may not
have completed yet") for one status period; a node whose kubelet stops posting
goes Unknown after the grace period and gets the unreachable taint; a boot
brings a new bootID and a `Rebooted` event; the static CPU manager refuses to
start when the CPU set changed until its state file is removed.

Reservations: kubespray's defaults for v1.21 (no kube/system reserved, hard
eviction `memory.available<100Mi`), so allocatable cpu = capacity cpu and
allocatable memory = capacity - 100Mi; the field report quotes capacity.

One `Fleet` thread (in `fleet`) drives every kubelet (timers and work) and
holds the only pod watch, so 5,000 nodes cost one thread; heartbeats can be
switched off. The node-lifecycle controller's part (Unknown, unreachable/not-ready
taints) is kube-controller-manager's; the API server's deletes are graceful and the
kubelet finishes them.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import time
from collections.abc import Callable, MutableMapping
from typing import Any

# Fleet lived here before the split; it stays importable from here
import yaml

from console.lab import images
from console.lab.apistore import ApiStore
from console.lab.fleet import Fleet, Timer, not_ready
from console.lab.guestkernel import cpu_list
from console.lab.kubelet_status import condition, conditions, node_skeleton
from console.lab.nodeexec import runs_in_sandbox
from console.lab.nodelease import renew as renew_lease
from console.lab.recorder import EventRecorder, node_ref, object_ref
from console.lab.store import NotFound, Obj, now_iso
from console.lab.vm import Guest, GuestEventKind

__all__ = [
    "CONFIG",
    "CPU_STATE",
    "EVICTION_HARD_KIB",
    "FAULTS",
    "RESIZE_GATE",
    "Fleet",
    "Kubelet",
]

CPU_STATE = "/var/lib/kubelet/cpu_manager_state"
CONFIG = "/var/lib/kubelet/config.yaml"
RESIZE_GATE = "InPlaceNodeResourceResize"
EVICTION_HARD_KIB = 102400  # memory.available<100Mi
FAULTS = ("no-restart",)


class Kubelet:
    """The kubelet of one node, acting on the store; driven by a `Fleet`.

    States: stopped (guest off or service stopped), starting (NotReady window),
    running, crashloop (static CPU manager state mismatch; systemd retries
    every `restart_sec`), dead (fault "no-restart").
    """

    def __init__(
        self,
        store: ApiStore,
        node_name: str,
        guest: Guest,
        *,
        fleet: Fleet | None = None,
        recorder: EventRecorder | None = None,
        reserved_cpu: str = "0",
        reserved_memory_kib: int = 0,
        eviction_hard_memory_kib: int = EVICTION_HARD_KIB,
        max_pods: int = 110,
        kubelet_version: str = "v1.21.6",
        status_interval: float = 10.0,
        heartbeat: bool = True,
        not_ready_seconds: float = 0.5,
        restart_sec: float = 1.0,
        cpu_manager_policy: str = "none",
        in_place_resize: bool = False,
        os_image: str = "Ubuntu 20.04.6 LTS",
        kernel_version: str = "5.4.0-165-generic",
        container_runtime_version: str = "containerd://1.4.12",
        internal_ip: str | None = None,
        record_events: bool = True,
        ephemeral_storage_kib: int = 20470152,
        files: MutableMapping[str, str] | None = None,
    ) -> None:
        self.store = store
        self.node_name = node_name
        self.guest = guest
        self._own_fleet = fleet is None
        self.fleet = fleet or Fleet(store)
        self.recorder = recorder or EventRecorder(store, "kubelet", node_name)
        self.reserved_cpu_milli = int(float(reserved_cpu.rstrip("m")) if reserved_cpu.endswith("m")
                                      else float(reserved_cpu) * 1000)
        self.reserved_memory_kib = reserved_memory_kib
        self.eviction_hard_memory_kib = eviction_hard_memory_kib
        self.max_pods = max_pods
        self.kubelet_version = kubelet_version
        self.status_interval = status_interval
        self.heartbeat = heartbeat
        self.not_ready_seconds = not_ready_seconds
        self.restart_sec = restart_sec
        self.os_image = os_image
        self.kernel_version = kernel_version
        self.container_runtime_version = container_runtime_version
        self.record_events = record_events
        self.ephemeral_storage_kib = ephemeral_storage_kib
        self._internal_ip = internal_ip
        self.machine_id = hashlib.md5(node_name.encode()).hexdigest()
        self.state = "stopped"
        self.service = "inactive"  # systemd's view: active | activating | failed | inactive
        self.faults: set[str] = set()
        self.journal: list[str] = []
        self.capacity: dict[str, str] = {}
        self.restarts = 0
        # the node's persistent files (survive reboots): its GuestRoot's tree (`GuestRoot.files`), which node
        # access changes with real programs; a plain dict where no tree is given
        self.files: MutableMapping[str, str] = files if files is not None else {}
        self.files[CONFIG] = _config_yaml(cpu_manager_policy, in_place_resize, max_pods)
        self._started_config: str | None = None
        self._pull_failures: set[tuple[str, int]] = set()
        self._terminating: set[str] = set()  # uids of pods whose grace period is running
        self._gen = 0
        self._timers: list[Timer] = []
        self._unsub_guest: Callable[[], None] | None = None
        self._pod_seq = itertools.count(2)
        self._index = 0

    # -- public API (any thread) -----------------------------------------
    def start(self) -> None:
        """Attach to the guest and start the service (if the guest is running)."""
        if self._own_fleet:
            self.fleet.start()
        self._index = self.fleet.register(self)
        self._unsub_guest = self.guest.subscribe(self._on_guest_event)
        self.fleet.call_soon(self._start)

    def stop(self) -> None:
        """Detach the simulator (not a node event: use stop_service for `systemctl stop`)."""
        if self._unsub_guest:
            self._unsub_guest()
            self._unsub_guest = None
        self.fleet.unregister(self)
        self._gen += 1
        self._cancel_timers()
        if self._own_fleet:
            self.fleet.stop()

    def restart(self, *, wait: bool = False) -> None:
        """`systemctl restart kubelet`: reads capacity afresh; NotReady for `not_ready_seconds`.

        `wait` returns once the new process started (or failed to), as a blocking systemctl does.
        """
        if wait:
            self.fleet.run_sync(self._restart)
        else:
            self.fleet.call_soon(self._restart)

    def stop_service(self) -> None:
        self.fleet.call_soon(self._stop_service)

    def start_service(self) -> None:
        self.fleet.call_soon(self._start)

    def inject_fault(self, fault: str) -> None:
        """"no-restart": the next (re)start never comes back (systemd gives up)."""
        if fault not in FAULTS:
            raise ValueError(f"unknown kubelet fault {fault!r}; known: {', '.join(FAULTS)}")
        self.faults.add(fault)

    def clear_fault(self, fault: str) -> None:
        self.faults.discard(fault)

    def _config(self) -> dict[str, Any]:
        """The KubeletConfiguration this process started with (the file as it was at the last start)."""
        text = self._started_config if self._started_config is not None else self.files.get(CONFIG, "")
        try:
            doc = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            return {}
        return doc if isinstance(doc, dict) else {}

    @property
    def cpu_manager_policy(self) -> str:
        return str(self._config().get("cpuManagerPolicy") or "none")

    @property
    def in_place_resize(self) -> bool:
        return bool(self.feature_gates().get(RESIZE_GATE))

    def feature_gates(self) -> dict[str, bool]:
        gates = self._config().get("featureGates") or {}
        return {str(k): bool(v) for k, v in gates.items()} if isinstance(gates, dict) else {}

    def configz(self) -> dict[str, Any]:
        """What GET /api/v1/nodes/<n>/proxy/configz returns: the running configuration, defaults filled in,
        under "kubeletconfig" (cmd/kubelet/app/server.go configz.New("kubeletconfig"))."""
        cfg = {k: v for k, v in self._config().items() if k not in ("apiVersion", "kind")}
        if not cfg.get("featureGates"):
            cfg.pop("featureGates", None)  # omitempty
        return {
            "kubeletconfig": {
                "cpuManagerPolicy": "none",
                "memoryManagerPolicy": "None",
                "maxPods": self.max_pods,
                "nodeStatusUpdateFrequency": f"{self.status_interval:g}s",
                "evictionHard": {"memory.available": f"{self.eviction_hard_memory_kib // 1024}Mi"},
                **cfg,
            }
        }

    # -- guest -------------------------------------------------------------
    def _on_guest_event(self, kind: GuestEventKind) -> None:
        self.fleet.call_soon(self._guest_event, kind)

    def _guest_event(self, kind: str) -> None:
        if kind == "boot":
            self._start()
        elif kind == "shutdown":
            self._gen += 1
            self._cancel_timers()
            self.state, self.service = "stopped", "inactive"
        elif self.in_place_resize and self.state == "running":
            self._resize_in_place()

    def _resize_in_place(self) -> None:
        """KEP-3953: whole CPUs; memory changes under 100Mi are jitter."""
        cpus = len(self.guest.online_cpus)
        mem = self.guest.mem_total_kib
        old_cpus = int(self.capacity.get("cpu", "0"))
        old_mem = int(self.capacity.get("memory", "0Ki")[:-2] or 0)
        if cpus == old_cpus and abs(mem - old_mem) < EVICTION_HARD_KIB:
            return
        self.capacity = self._read_capacity()
        self._post(ready=True)

    # -- lifecycle (fleet thread) -------------------------------------------
    def _cancel_timers(self) -> None:
        for t in self._timers:
            t.cancel()
        self._timers = []

    def _later(self, delay: float, fn: Callable[..., Any], *args: Any) -> None:
        self._timers.append(self.fleet.call_later(delay, fn, *args))
        if len(self._timers) > 16:
            self._timers = [t for t in self._timers if not t.cancelled]

    def _restart(self) -> None:
        self.restarts += 1
        self._log("Stopping kubelet: The Kubernetes Node Agent...")
        self._start()

    def _stop_service(self) -> None:
        self._gen += 1
        self._cancel_timers()
        self._log("Stopped kubelet: The Kubernetes Node Agent.")
        self.state, self.service = "stopped", "inactive"

    def _start(self) -> None:
        self._gen += 1
        gen = self._gen
        self._cancel_timers()
        if not self.guest.running:
            self.state, self.service = "stopped", "inactive"
            return
        if "no-restart" in self.faults:
            self._log("kubelet.service: Main process exited, code=exited, status=1/FAILURE")
            self._log("kubelet.service: Start request repeated too quickly.")
            self._log("kubelet.service: Failed with result 'exit-code'.")
            self.state, self.service = "dead", "failed"
            return
        self._started_config = self.files.get(CONFIG, "")
        self._log("Started kubelet: The Kubernetes Node Agent.")
        self._event("Normal", "Starting", "Starting kubelet.")
        error = self._check_cpu_manager()
        if error:
            self._log(f'"Failed to start ContainerManager" err="{error}"')
            self._log("kubelet.service: Main process exited, code=exited, status=1/FAILURE")
            self._event("Warning", "KubeletSetupFailed", f"Failed to start ContainerManager {error}")
            self.state, self.service = "crashloop", "activating"
            self._later(self.restart_sec, self._retry, gen)
            return
        self.capacity = self._read_capacity()
        self.service = "active"
        if self.not_ready_seconds > 0:
            self.state = "starting"
            self._post(ready=False)
            self._later(self.not_ready_seconds, self._become_ready, gen)
        else:
            self._become_ready(gen)

    def _retry(self, gen: int) -> None:
        if gen == self._gen and self.state == "crashloop":
            self._start()

    def _become_ready(self, gen: int) -> None:
        if gen != self._gen:
            return
        self.state = "running"
        self._post(ready=True)
        if self.heartbeat:  # the lease controller starts with the kubelet; no heartbeats, no lease writes
            renew_lease(self.store, self.node_name)
        for pod in self.store.pods_on_node(self.node_name):
            if pod.get("status", {}).get("phase", "Pending") == "Pending":
                meta = pod["metadata"]
                self._sync_pod(meta.get("namespace", "default"), meta["name"])
        if self.heartbeat and self.status_interval > 0:
            self._later(self.status_interval, self._beat, gen)

    def _beat(self, gen: int) -> None:
        if gen != self._gen or self.state != "running":
            return
        self._post(ready=True, quiet=True)
        renew_lease(self.store, self.node_name)
        self._later(self.status_interval, self._beat, gen)

    def _check_cpu_manager(self) -> str | None:
        if self.cpu_manager_policy != "static":
            return None
        current = cpu_list(self.guest.online_cpus)
        saved = self.files.get(CPU_STATE)
        if saved:
            try:
                in_state = json.loads(saved).get("defaultCpuSet", "")
            except ValueError:
                return f"could not restore state from checkpoint: corrupted checkpoint {CPU_STATE}"
            if in_state != current:
                return (
                    "start cpu manager error: [cpumanager] could not restore state from checkpoint: "
                    f'current set of available CPUs "{current}" doesn\'t match with CPUs in state "{in_state}", '
                    f'please drain this node and delete the CPU manager checkpoint file "{CPU_STATE}" '
                    "before restarting Kubelet"
                )
        state = {"policyName": "static", "defaultCpuSet": current, "checksum": 0}
        self.files[CPU_STATE] = json.dumps(state)
        return None

    def _read_capacity(self) -> dict[str, str]:
        return {
            "cpu": str(len(self.guest.online_cpus)),
            "memory": f"{self.guest.mem_total_kib}Ki",
            "pods": str(self.max_pods),
            "ephemeral-storage": f"{self.ephemeral_storage_kib}Ki",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
        }

    def _allocatable(self) -> dict[str, str]:
        cap = self.capacity
        cpu_milli = int(cap["cpu"]) * 1000 - self.reserved_cpu_milli
        mem_kib = int(cap["memory"][:-2]) - self.reserved_memory_kib - self.eviction_hard_memory_kib
        storage = self.ephemeral_storage_kib * 1024 * 9 // 10  # nodefs.available<10%
        return {
            "cpu": str(cpu_milli // 1000) if cpu_milli % 1000 == 0 else f"{cpu_milli}m",
            "memory": f"{max(0, mem_kib)}Ki",
            "pods": cap["pods"],
            "ephemeral-storage": str(storage),
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
        }

    # -- node status ---------------------------------------------------------
    @property
    def internal_ip(self) -> str:
        return self._internal_ip or f"10.0.{self._index // 250}.{self._index % 250 + 4}"

    def _post(self, *, ready: bool, quiet: bool = False) -> None:
        """Write this kubelet's node status (Ready, or NotReady right after a start)."""
        stamp = now_iso()
        notes: dict[str, Any] = {}

        def edit(node: Obj) -> None:
            status = node.setdefault("status", {})
            info = status.get("nodeInfo") or {}
            notes["rebooted"] = bool(info.get("bootID")) and info.get("bootID") != self.guest.boot_id
            notes["was_ready"] = condition(node, "Ready").get("status")
            # extended resources (domain-prefixed names, e.g. from NFD) are kept in capacity and, as every capacity
            # resource, made allocatable, less nothing reserved; one gone from capacity leaves allocatable too
            # (pkg/kubelet/nodestatus/setters.go MachineInfo)
            extended = {k: v for k, v in (status.get("capacity") or {}).items() if "/" in k}
            status["capacity"] = {**extended, **self.capacity}
            status["allocatable"] = {**extended, **self._allocatable()}
            status["conditions"] = conditions(node, ready, stamp)
            status["addresses"] = [{"type": "InternalIP", "address": self.internal_ip},
                                   {"type": "Hostname", "address": self.node_name}]
            status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
            status["nodeInfo"] = {
                "machineID": self.machine_id, "systemUUID": self.guest.uuid, "bootID": self.guest.boot_id,
                "kernelVersion": self.kernel_version, "osImage": self.os_image,
                "containerRuntimeVersion": self.container_runtime_version,
                "kubeletVersion": self.kubelet_version, "kubeProxyVersion": self.kubelet_version,
                "operatingSystem": "linux", "architecture": "amd64",
            }
            status.setdefault("images", [])

        try:
            self.store.mutate("nodes", None, self.node_name, edit)
        except NotFound:
            node = node_skeleton(self.node_name, self._index)
            edit(node)
            notes["was_ready"] = None
            self.store.create("nodes", node)
        if quiet:
            return
        if notes.get("rebooted"):
            self._event("Warning", "Rebooted",
                        f"Node {self.node_name} has been rebooted, boot id: {self.guest.boot_id}")
        if ready:
            if notes.get("was_ready") != "True":
                self._event("Normal", "NodeReady", f"Node {self.node_name} status is now: NodeReady")
        else:
            self._event("Normal", "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods")
            if notes.get("was_ready") == "True":
                self._event("Normal", "NodeNotReady", f"Node {self.node_name} status is now: NodeNotReady")

    # -- pods ---------------------------------------------------------------
    def _sync_pod(self, namespace: str, name: str) -> None:
        """Start a Pending pod bound here (node-debug pods and pods whose commands run to completion belong to
        NodeExec, console/lab/nodeexec.py runs_in_sandbox); finish a graceful delete of any pod bound here."""
        if self.state != "running":
            return
        try:
            pod = self.store.get("pods", namespace, name)
        except NotFound:
            return
        if pod.get("spec", {}).get("nodeName") != self.node_name:
            return
        if pod["metadata"].get("deletionTimestamp"):  # NodeExec's pods too: their removal kills their commands
            self._terminate_later(pod)
            return
        if runs_in_sandbox(pod):
            return
        phase = pod.get("status", {}).get("phase", "Pending")
        if phase == "Running":
            self._reconcile_ready(namespace, name, pod)
        if phase != "Pending":
            return
        missing = [c for c in pod.get("spec", {}).get("containers") or [] if not images.can_pull(c.get("image", ""))]
        if missing:
            # one attempt per pod and kubelet start: the pod's own status updates must not retrigger it
            key = (pod["metadata"].get("uid", ""), self._gen)
            if key not in self._pull_failures:
                self._pull_failures.add(key)
                self._pull_failed(pod, missing)
            return
        stamp = now_iso()
        ip = self._pod_ip()

        def run(draft: Obj) -> None:
            if draft.get("status", {}).get("phase", "Pending") != "Pending":
                return
            status = draft.setdefault("status", {})
            status.update(phase="Running", hostIP=self.internal_ip, podIP=ip, podIPs=[{"ip": ip}],
                          startTime=stamp)
            status.setdefault("qosClass", "Burstable")
            conds = [c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"]
            for ctype in ("Initialized", "Ready", "ContainersReady"):
                conds.append({"type": ctype, "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp})
            status["conditions"] = conds
            status["containerStatuses"] = [
                {"name": c["name"], "image": c.get("image", ""), "imageID": f"{c.get('image', '')}@sha256:" + "0" * 64,
                 "containerID": "containerd://" + hashlib.sha256(f"{name}/{c['name']}".encode()).hexdigest(),
                 "ready": True, "started": True, "restartCount": 0, "state": {"running": {"startedAt": stamp}},
                 "lastState": {}}
                for c in draft.get("spec", {}).get("containers") or []
            ]

        try:
            updated = self.store.mutate("pods", namespace, name, run)
        except NotFound:
            return
        if self.record_events:
            for c in updated.get("spec", {}).get("containers") or []:
                ref = object_ref(updated) | {"fieldPath": f"spec.containers{{{c['name']}}}"}
                self.recorder.event(ref, "Normal", "Started", f"Started container {c['name']}")

    def _reconcile_ready(self, namespace: str, name: str, pod: Obj) -> None:
        """A pod this kubelet runs whose Ready conditions someone else set False: kube-controller-manager does when
        the node was not ready (pkg/controller/util/node MarkPodsNotReady). The kubelet is the source of truth of
        pod status, so its status manager writes its own back (pkg/kubelet/status/status_manager.go
        needsReconcile): its containers run, so Ready and ContainersReady are True again."""
        status = pod.get("status") or {}
        if not not_ready(status):
            return
        if not status.get("containerStatuses") or not all(
                "running" in (c.get("state") or {}) for c in status["containerStatuses"]):
            return

        def ready(draft: Obj) -> None:
            stamp = now_iso()
            for c in (draft.get("status") or {}).get("conditions") or []:
                if c.get("type") in ("Ready", "ContainersReady") and c.get("status") != "True":
                    c.update(status="True", lastTransitionTime=stamp)
                    c.pop("reason", None)
                    c.pop("message", None)

        with contextlib.suppress(NotFound):
            self.store.mutate("pods", namespace, name, ready)

    def _terminate_later(self, pod: Obj) -> None:
        """A graceful delete (the API server set deletionTimestamp): the containers get the pod's grace period
        (deletionGracePeriodSeconds, what the request or terminationGracePeriodSeconds gave) to stop, then the
        kubelet removes the pod (a delete with grace 0), as pkg/kubelet/status does once it has terminated."""
        meta = pod["metadata"]
        if meta.get("uid") in self._terminating:
            return
        self._terminating.add(meta.get("uid", ""))
        # only running containers are stopped, each given the grace period: a pod whose containers all ended (a
        # finished Job's) or never started goes at once (pkg/kubelet/kubelet.go SyncTerminatingPod kills
        # kubecontainer.ConvertPodStatusToRunningPod's containers, the running ones)
        running = [s.get("name", "") for s in pod.get("status", {}).get("containerStatuses") or []
                   if "running" in (s.get("state") or {})]
        if self.record_events:
            for cname in running:
                ref = object_ref(pod) | {"fieldPath": f"spec.containers{{{cname}}}"}
                self.recorder.event(ref, "Normal", "Killing", f"Stopping container {cname}")
        grace = int(meta.get("deletionGracePeriodSeconds") or 0) if running else 0
        self._later(grace, self._remove_pod, meta.get("namespace", "default"), meta["name"], meta.get("uid", ""))

    def _remove_pod(self, namespace: str, name: str, uid: str) -> None:
        self._terminating.discard(uid)
        try:
            pod = self.store.get("pods", namespace, name)
            if pod["metadata"].get("uid") == uid:
                self.store.delete("pods", namespace, name)
        except NotFound:
            return

    def _pull_failed(self, pod: Obj, missing: list[Obj]) -> None:
        """An image not in the lab's registry: the pod stays Pending, its container in ErrImagePull/ImagePullBackOff."""
        key = (pod["metadata"].get("namespace", "default"), pod["metadata"]["name"])
        names = [c["name"] for c in missing]

        for c in missing:
            ref = object_ref(pod) | {"fieldPath": f"spec.containers{{{c['name']}}}"}

            def event(type_: str, reason: str, message: str, ref: Obj = ref) -> None:
                if self.record_events:
                    self.recorder.event(ref, type_, reason, message)

            def waiting(reason: str, message: str, name: str = c["name"]) -> None:
                def edit(draft: Obj) -> None:
                    statuses = []
                    for k in draft.get("spec", {}).get("containers") or []:
                        why = ({"reason": reason, "message": message} if k["name"] == name else
                               {"reason": "ErrImagePull" if k["name"] in names else "ContainerCreating"})
                        old = next((s for s in draft.get("status", {}).get("containerStatuses") or []
                                    if s.get("name") == k["name"]), None)
                        if k["name"] != name and old is not None:
                            statuses.append(old)
                            continue
                        statuses.append({"name": k["name"], "image": k.get("image", ""), "imageID": "",
                                         "ready": False, "started": False, "restartCount": 0,
                                         "state": {"waiting": why}, "lastState": {}})
                    draft.setdefault("status", {})["containerStatuses"] = statuses

                try:
                    self.store.mutate("pods", *key, edit)
                except NotFound:
                    return

            images.report_pull_failure(c.get("image", ""), event, waiting)

    def _pod_ip(self) -> str:
        n = next(self._pod_seq) % 254 or 1
        return f"10.{64 + self._index // 256}.{self._index % 256}.{n}"

    def pod_ip(self) -> str:
        """An address of this node's pod range for a new pod (NodeExec's pods that are not on the host network)."""
        return self._pod_ip()

    # -- helpers ------------------------------------------------------------
    def _event(self, type_: str, reason: str, message: str) -> None:
        if self.record_events:
            self.recorder.event(node_ref(self.node_name), type_, reason, message)

    def _log(self, line: str) -> None:
        self.journal.append(f"{time.strftime('%b %d %H:%M:%S')} {self.node_name} {line}")
        del self.journal[:-500]


def _config_yaml(policy: str, in_place_resize: bool, max_pods: int) -> str:
    gates = f"featureGates:\n  {RESIZE_GATE}: true\n" if in_place_resize else "featureGates: {}\n"
    return (
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        f"cpuManagerPolicy: {policy}\n{gates}maxPods: {max_pods}\n"
        "evictionHard:\n  memory.available: 100Mi\n  nodefs.available: 10%\n"
    )

