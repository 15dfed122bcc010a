"""Node exec: privileged node-debug pods run their command on the node, for real.

A pod bound to a lab node that is either `hostPID: true` with a privileged
container (the nsenter recipe) or mounts the host root at /host (`kubectl
debug node/... --profile=sysadmin`) gets its container command run by
`sandbox` (real programs under bubblewrap over that node's `GuestRoot`, the
kubelet behind the systemctl shim). Output (stdout and stderr, as a container
log has both) goes to the pod log as it comes; the pod goes Running, then
Succeeded/Failed with the exit code in `containerStatuses[].state.terminated`
(137 when the lab's timeout killed it, as for a SIGKILLed container).

Realism (shared/reference/scale-up.md 5.2): a blocking `systemctl restart
kubelet` from such a pod cuts its log stream, since logs pass through the
kubelet. Modelled as: whatever the container prints after that command never
reaches the pod log (the log just ends). The container itself survives: its
exit code is recorded once the restarted kubelet is running again, and never
if the kubelet does not come back. `--no-block` keeps the log whole.

Workload pods meant to end run the same way (`runs_to_completion`): restartPolicy Never or OnFailure, every
container saying what to run (command/args) with an image of the lab's registry, no init containers — a Job's
pods, `kubectl run --restart=Never -- CMD`. Their containers run concurrently in the node's sandbox, output in
the pod log; each ends terminated with its exit code (reason Completed/Error), and the pod's phase, conditions
and restarts are the kubelet's (pkg/kubelet/kubelet_pods.go getPhase, pkg/kubelet/status/generate.go): Succeeded
or Failed under Never; under OnFailure a failed container is started again, at once the first time, then after
the kubelet's crash-loop back-off (10 s doubling to 300 s, pkg/kubelet/kubelet.go backOffPeriod and
MaxContainerBackOff), waiting in CrashLoopBackOff with its last termination in lastState meanwhile. Their
commands have no time limit but die with the pod: its removal (after its grace period, console/lab/kubelet.py)
kills them. Any other pod (long-running, or with a container that names no command) stays the kubelet's.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Protocol, cast

from console.lab import containerfs, images, sandbox
from console.lab.apistore import ApiStore
from console.lab.cpu import tracer
from console.lab.guestroot import GuestRoot
from console.lab.guestservices import KubeletControl
from console.lab.podlogs import PodLogs
from console.lab.podnet import PodNet, PodNetwork
from console.lab.recorder import EventRecorder, object_ref
from console.lab.scenarios import CpuModel
from console.lab.store import NotFound, Obj, WatchEvent, now_iso
from console.lab.vm import Guest


class NodeKubelet(KubeletControl, Protocol):
    """What exec needs of a node's kubelet (console/lab/kubelet.py Kubelet, which imports this module): its
    state, its event recorder and address, and the service control the sandbox's systemctl uses."""

    state: str
    recorder: EventRecorder

    @property
    def internal_ip(self) -> str: ...

    def pod_ip(self) -> str: ...

log = logging.getLogger(__name__)

Key = tuple[str, str]
FAULTS = ("exec-fail",)


def is_node_debug_pod(pod: Obj) -> bool:
    """hostPID + a privileged container, or the host root mounted at /host (kubectl debug node)."""
    spec = pod.get("spec", {})
    containers = spec.get("containers") or []
    if spec.get("hostPID") and any((c.get("securityContext") or {}).get("privileged") for c in containers):
        return True
    host_root = {v.get("name") for v in spec.get("volumes") or [] if (v.get("hostPath") or {}).get("path") == "/"}
    return any(
        m.get("mountPath") == "/host" and m.get("name") in host_root
        for c in containers
        for m in c.get("volumeMounts") or []
    )


def container_argv(container: Obj) -> list[str]:
    """command + args; args alone replace the image's CMD (a shell image: run them as the command)."""
    return [*(container.get("command") or []), *(container.get("args") or [])]


def runs_to_completion(pod: Obj) -> bool:
    """A workload pod meant to end whose commands the lab runs: restartPolicy Never or OnFailure, no init
    containers, and every container with a command or args and an image the node can pull."""
    spec = pod.get("spec", {})
    containers = spec.get("containers") or []
    return (spec.get("restartPolicy") in ("Never", "OnFailure") and bool(containers)
            and not spec.get("initContainers") and not is_node_debug_pod(pod)
            and all(container_argv(c) and images.can_pull(c.get("image", "")) for c in containers))


def runs_programs(pod: Obj) -> bool:
    """A pod whose every container's image the lab has real programs for (console/lab/containerfs.py), under any
    restart policy: upstream NFD's master, worker and gc."""
    spec = pod.get("spec", {})
    containers = spec.get("containers") or []
    return (bool(containers) and not spec.get("initContainers") and not is_node_debug_pod(pod)
            and all(images.has_programs(c.get("image", "")) for c in containers))


def runs_in_sandbox(pod: Obj) -> bool:
    """The pods NodeExec runs (the node's kubelet leaves their containers to it)."""
    return is_node_debug_pod(pod) or runs_to_completion(pod) or runs_programs(pod)


def _containers(pod: Obj) -> list[Obj]:
    """The containers NodeExec runs: a node-debug pod's first, a workload pod's all."""
    containers = pod.get("spec", {}).get("containers") or [{}]
    return containers[:1] if is_node_debug_pod(pod) else containers


def _cname(container: Obj) -> str:
    return str(container.get("name", "debugger"))


def pod_phase(pod: Obj) -> str:
    """The pod's phase from its container statuses, as the kubelet's getPhase (pkg/kubelet/kubelet_pods.go) for
    a pod without init containers; a node-debug pod runs once (as restartPolicy Never)."""
    spec = pod.get("spec", {})
    policy = "Never" if is_node_debug_pod(pod) else spec.get("restartPolicy", "Always")
    statuses = {s.get("name"): s for s in pod.get("status", {}).get("containerStatuses") or []}
    unknown = running = waiting = stopped = succeeded = 0
    for c in _containers(pod):
        status = statuses.get(_cname(c)) or {}
        state = status.get("state") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += state["terminated"].get("exitCode") == 0
        elif "waiting" in state:
            if (status.get("lastState") or {}).get("terminated"):
                stopped += 1  # restarting (CrashLoopBackOff)
            else:
                waiting += 1
        else:
            unknown += 1
    if waiting:
        return "Pending"
    if running and not unknown:
        return "Running"
    if not running and stopped and not unknown:
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if policy == "Never" else "Running"  # OnFailure: restarting the failed one
    return "Pending"


def pod_conditions(pod: Obj, phase: str, stamp: str) -> list[Obj]:
    """Initialized, Ready and ContainersReady as pkg/kubelet/status/generate.go writes them for a pod without init
    containers (Ready is ContainersReady without readiness gates): a Succeeded pod's are PodCompleted (Initialized
    True, the others False), a Failed pod's Ready ones False with PodFailed, else ContainersNotReady naming the
    unready containers; a condition keeps its lastTransitionTime while its status stays. Others are kept."""
    status = pod.get("status", {})
    ready = {s.get("name"): bool(s.get("ready")) for s in status.get("containerStatuses") or []}
    unready = [_cname(c) for c in _containers(pod) if not ready.get(_cname(c))]
    init: tuple[str, str | None, str | None] = ("True", "PodCompleted" if phase == "Succeeded" else None, None)
    if phase in ("Succeeded", "Failed"):
        rdy: tuple[str, str | None, str | None] = ("False", "PodCompleted" if phase == "Succeeded" else "PodFailed",
                                                   None)
    elif unready:
        rdy = ("False", "ContainersNotReady", f"containers with unready status: [{' '.join(unready)}]")
    else:
        rdy = ("True", None, None)
    old = {c.get("type"): c for c in status.get("conditions") or []}
    out = [c for c in status.get("conditions") or []
           if c.get("type") not in ("Initialized", "Ready", "ContainersReady")]
    for ctype, (value, reason, message) in (("Initialized", init), ("Ready", rdy), ("ContainersReady", rdy)):
        prev = old.get(ctype) or {}
        cond: Obj = {"type": ctype, "status": value, "lastProbeTime": None,
                     "lastTransitionTime": prev.get("lastTransitionTime") if prev.get("status") == value and
                     prev.get("lastTransitionTime") else stamp}
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        out.append(cond)
    return out


VOLUME_SYNC = 2.0  # seconds: the lab's kubelet sync of ConfigMap/Secret volumes (a real one's is a minute or more)
BACKOFF = (10.0, 300.0)  # crash-loop back-off: pkg/kubelet/kubelet.go backOffPeriod, MaxCrashLoopBackOff
WORKLOAD_TIMEOUT = 7 * 86400.0  # a workload command has no limit of its own; its pod's removal kills it


class NodeExec:
    def __init__(
        self,
        store: ApiStore,
        logs: PodLogs,
        guests: dict[str, Guest],
        kubelets: dict[str, NodeKubelet],
        *,
        roots: dict[str, GuestRoot],
        workers: int = 4,
        poll: float = 0.05,
        timeout: float = 300.0,
        backoff: tuple[float, float] = BACKOFF,
        cpus: dict[str, CpuModel] | None = None,
        state_dir: Path | None = None,
        volume_sync: float = VOLUME_SYNC,
        network: PodNetwork | None = None,
    ) -> None:
        self.store = store
        self.logs = logs
        self.guests = guests
        self.kubelets = kubelets
        self.roots = roots
        self.poll = poll
        self.timeout = timeout  # seconds a node-debug command may run before the lab kills it
        self.backoff = backoff  # (first, most) seconds before an OnFailure container starts again
        self.cpus = cpus or {}  # node -> the CPU model its programs' CPUID answers with (console/lab/cpu)
        self.state_dir = state_dir  # where the nodes' CPU tables are written (None: a directory beside the nodes')
        self.volume_sync = volume_sync  # seconds between a running pod's looks at its ConfigMaps and Secrets
        self.network = network  # the pods' network (None: program pods on the host's, as before it existed)
        self.faults: dict[str | None, set[str]] = {}
        self._recorders: dict[str, EventRecorder] = {}
        self._new: queue.SimpleQueue[Key] = queue.SimpleQueue()
        self._seen: set[str | None] = set()
        self._waiting: list[Key] = []
        self._finishing: list[tuple[str, Callable[[], None]]] = []  # (node, post) until its kubelet is back
        self._cancels: dict[str, threading.Event] = {}  # pod uid -> set once the pod is removed or the lab stops
        self._terminating: dict[str, threading.Event] = {}  # pod uid -> set once its graceful delete began
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lab-nodeexec")
        # workload pods may run for long: threads of their own, so node access never waits behind them
        self._workloads = ThreadPoolExecutor(max_workers=64, thread_name_prefix="lab-podexec")
        self._thread: threading.Thread | None = None
        self._unsub: Any = None
        self._running: set[Key] = set()
        self._volumes: dict[str, containerfs.PodVolumes] = {}  # pod uid -> its volumes, while it runs

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._unsub = self.store.subscribe("pods", self._on_event)
        pods, _ = self.store.list("pods", predicate=runs_in_sandbox)
        for pod in pods:
            self._consider(pod)
        self._thread = threading.Thread(target=self._run, name="lab-nodeexec-dispatch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._unsub:
            self._unsub()
        with self._lock:
            for cancel in self._cancels.values():
                cancel.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._workloads.shutdown(wait=True, cancel_futures=True)

    def inject_fault(self, fault: str, node: str | None = None) -> None:
        """"exec-fail": the container cannot start (images not in the lab's registry fail to pull by themselves)."""
        if fault not in FAULTS:
            raise ValueError(f"unknown node-exec fault {fault!r}; known: {', '.join(FAULTS)}")
        self.faults.setdefault(node, set()).add(fault)

    def clear_fault(self, fault: str, node: str | None = None) -> None:
        self.faults.get(node, set()).discard(fault)

    def busy(self) -> bool:
        with self._lock:
            return bool(self._running or self._waiting or self._finishing) or not self._new.empty()

    # -- direct access (the lab's SSH) -----------------------------------------
    def run(self, node: str, argv: list[str], **kw: Any) -> sandbox.Result:
        """Run `argv` on the node as root, as sshd does (works while the kubelet is down; nothing is cut)."""
        return sandbox.run(self.roots[node], argv, kubelet=self.kubelets.get(node), timeout=self.timeout, **kw)

    def ssh(self, node: str, script: str) -> tuple[int, str]:
        """Run a script on the node as root over SSH: (exit status, stdout and stderr)."""
        guest = self.guests.get(node)
        if guest is None or not guest.running:
            raise ConnectionError(f"ssh: connect to host {node} port 22: No route to host")
        res = self.run(node, ["sh", "-c", script], merge_stderr=True, cwd="/root")
        return (255 if res.code is None else res.code), res.stdout

    # -- watch -----------------------------------------------------------------
    def _on_event(self, ev: WatchEvent) -> None:
        meta = ev.object.get("metadata", {})
        if ev.type == "DELETED" or (meta.get("deletionTimestamp") and meta.get("deletionGracePeriodSeconds") == 0):
            # removed (by its kubelet once the grace period ran, or at once): its containers are killed
            with self._lock:
                cancel = self._cancels.get(meta.get("uid", ""))
            if cancel is not None:
                cancel.set()
            return
        if meta.get("deletionTimestamp") and runs_programs(ev.object):
            # a graceful delete: the kubelet stops the containers (SIGTERM) and removes the pod once they ended,
            # or after the grace period (console/lab/kubelet.py)
            self._terminate(meta.get("uid", "")).set()
            return
        self._consider(ev.object)

    def _consider(self, pod: Obj) -> None:
        node = pod.get("spec", {}).get("nodeName")
        if node not in self.guests or pod.get("status", {}).get("phase", "Pending") != "Pending":
            return
        if not runs_in_sandbox(pod) or pod["metadata"].get("deletionTimestamp"):
            return
        meta = pod["metadata"]
        key = (meta.get("namespace", "default"), meta["name"])
        with self._lock:  # by uid: a pod deleted and created again under the same name runs again
            if meta.get("uid") in self._seen:
                return
            self._seen.add(meta.get("uid"))
        self._new.put(key)

    def _kubelet_up(self, node: str) -> bool:
        kubelet = self.kubelets.get(node)
        return kubelet is None or kubelet.state == "running"

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                key = self._new.get(timeout=self.poll)
                with self._lock:
                    self._waiting.append(key)
            except queue.Empty:
                pass
            with self._lock:
                waiting, self._waiting = self._waiting, []
                finishing, self._finishing = self._finishing, []
            for key in waiting:
                pod = self._pod(key)
                node = (pod or {}).get("spec", {}).get("nodeName")
                if pod is None or not node:
                    continue
                if self._kubelet_up(node):
                    with self._lock:
                        self._running.add(key)
                    pool = self._pool if is_node_debug_pod(pod) else self._workloads
                    pool.submit(self._run_pod, key, node)
                else:
                    with self._lock:
                        self._waiting.append(key)
            for node, post in finishing:
                self._when_kubelet_up(node, post)

    def _pod(self, key: Key) -> Obj | None:
        try:
            return self.store.get("pods", *key)
        except NotFound:
            return None

    def _when_kubelet_up(self, node: str, post: Callable[[], None]) -> None:
        """Post a container's status now, or once the node's kubelet runs again (nobody posts pod status before)."""
        if self._kubelet_up(node):
            post()
        else:
            with self._lock:
                self._finishing.append((node, post))

    # -- one pod ---------------------------------------------------------------
    def _recorder(self, node: str) -> EventRecorder:
        kubelet = self.kubelets.get(node)
        if kubelet is not None:
            return kubelet.recorder
        return self._recorders.setdefault(node, EventRecorder(self.store, "kubelet", node))

    def _has_fault(self, fault: str, node: str) -> bool:
        return fault in self.faults.get(None, set()) or fault in self.faults.get(node, set())

    def _run_pod(self, key: Key, node: str) -> None:
        try:
            self._execute(key, node)
        except NotFound:
            pass
        except Exception:  # a broken pod must not stop node exec
            log.exception("node exec of %s/%s failed", *key)
        finally:
            with self._lock:
                self._running.discard(key)

    def _execute(self, key: Key, node: str) -> None:
        pod = self.store.get("pods", *key)
        uid = str(pod["metadata"].get("uid", ""))
        containers = _containers(pod)
        image = containers[0].get("image", "")
        if not images.can_pull(image):  # a node-debug pod's (a workload pod's images are all in the registry)
            self._image_pull_failed(key, uid, self._recorder(node), pod, containers[0])
            return
        with self._lock:
            cancel = self._cancels[uid] = threading.Event()
            if self._stop.is_set():
                cancel.set()
        try:
            now = self._pod(key)  # deleted before its removal could reach the cancel: it never starts
            if now is None or now["metadata"].get("uid") != uid or now["metadata"].get("deletionTimestamp"):
                return
            if runs_programs(pod) and not self._mount(key, uid, node, pod, cancel):
                return
            started = now_iso()
            if not self._has_fault("exec-fail", node):  # the sandbox is up: every container starts at once
                host_ip, pod_ip = self._ips(node, pod)
                self._post(key, uid, lambda p: _mark_running(p, host_ip, pod_ip, started, containers))
            others = [threading.Thread(target=self._run_container, args=(key, uid, node, pod, c, cancel, started),
                                       name=f"lab-podexec-{key[1]}-{_cname(c)}", daemon=True) for c in containers[1:]]
            for thread in others:
                thread.start()
            self._run_container(key, uid, node, pod, containers[0], cancel, started)
            for thread in others:
                thread.join()
            if self._terminate(uid).is_set() and not cancel.is_set():  # stopped before its grace period ran out
                with contextlib.suppress(NotFound):
                    self.store.delete("pods", *key, grace_seconds=0)
        finally:
            with self._lock:
                self._cancels.pop(uid, None)
                self._volumes.pop(uid, None)
                self._terminating.pop(uid, None)
            if self.network is not None:
                self.network.release(uid)

    def _run_container(self, key: Key, uid: str, node: str, pod: Obj, container: Obj, cancel: threading.Event,
                       started: str) -> None:
        """Run one container until it ends for good: once, or (OnFailure) again after each failure, as the
        kubelet's SyncPod does (pkg/kubelet/kuberuntime/kuberuntime_manager.go: the first restart at once, then
        CrashLoopBackOff with "back-off 10s restarting failed container=…", the restart count growing)."""
        name, image = _cname(container), container.get("image", "")
        rec, ref = self._recorder(node), _ref(pod, container)
        debug = is_node_debug_pod(pod)
        policy = pod.get("spec", {}).get("restartPolicy", "Always")
        again = not debug and policy in ("OnFailure", "Always")
        restarts, delay, last = 0, 0.0, cast(Obj, {})
        reason: str | None
        while True:
            rec.event(ref, "Normal", "Pulled", f'Container image "{image}" already present on machine')
            rec.event(ref, "Normal", "Created", f"Created container {name}")
            message: str | None = None
            if self._has_fault("exec-fail", node):
                argv0 = (container_argv(container) or ["sh"])[0]
                message = (f"failed to create containerd task: failed to create shim: OCI runtime create failed: "
                           f'runc create failed: unable to start container process: exec: "{argv0}": '
                           "executable file not found in $PATH: unknown")
                rec.event(ref, "Warning", "Failed", f"Error: {message}")
                code, reason = 128, "StartError"
            else:
                if restarts:
                    started = now_iso()
                    self._set(key, uid, name, {"running": {"startedAt": started}}, True, restarts, last)
                rec.event(ref, "Normal", "Started", f"Started container {name}")
                code, reason, message = self._command(key, node, pod, container, cancel, debug)
            term: Obj = {"exitCode": code, "reason": reason or ("Completed" if code == 0 else "Error"),
                         "startedAt": started, "finishedAt": now_iso(),
                         "containerID": _container_id(uid, name, restarts)}
            if message:
                term["message"] = message
            if not again or (code == 0 and policy == "OnFailure") or cancel.is_set() or self._terminate(uid).is_set():
                self._when_kubelet_up(node, partial(self._set, key, uid, name, {"terminated": term}, False, restarts,
                                                    last))
                return
            last = {"terminated": term}
            while not self._kubelet_up(node):  # the kubelet restarts containers: wait for it
                if cancel.wait(self.poll):
                    return
            if delay:
                pod_ref = f"{key[1]}_{key[0]}({uid})"  # pkg/kubelet/util/format.Pod
                back_off = {"waiting": {"reason": "CrashLoopBackOff", "message":
                                        f"back-off {_go_seconds(delay)} restarting failed container={name} "
                                        f"pod={pod_ref}"}}
                self._set(key, uid, name, back_off, False, restarts, last)
                rec.event(ref, "Warning", "BackOff", f"Back-off restarting failed container {name} in pod {pod_ref}")
                if cancel.wait(delay):
                    return
            delay = min(delay * 2, self.backoff[1]) if delay else self.backoff[0]
            restarts += 1

    def _command(self, key: Key, node: str, pod: Obj, container: Obj, cancel: threading.Event,
                 debug: bool) -> tuple[int, str | None, str | None]:
        """Run the container's command in the node's sandbox, its output into the pod log: (exit code, reason,
        message); 137 when killed (the lab's timeout for a node-debug command, the pod's removal)."""
        cut = threading.Event()

        def sink(text: str) -> None:
            if not cut.is_set():
                self.logs.append(key[0], key[1], text)

        argv = container_argv(container) or ["sh"]
        env = {str(e["name"]): str(e.get("value", "")) for e in container.get("env") or []
               if e.get("name") and "valueFrom" not in e}
        binds: dict[str, Path] = {}
        net: PodNet | None = None
        try:
            if runs_programs(pod):
                argv, env, binds, net = self._program(node, pod, container)
            res = sandbox.run(self.roots[node], argv, kubelet=self.kubelets.get(node),
                              timeout=self.timeout if debug else WORKLOAD_TIMEOUT, env=env, cancel=cancel,
                              on_kubelet_restart=lambda blocking: cut.set() if blocking else None,
                              stdout=sink, merge_stderr=True, binds=binds, node_proc=bool(binds),
                              terminate=self._terminate(str(pod["metadata"].get("uid", ""))) if binds else None,
                              rw_binds=net.rw_binds if net else None, unshare_net=net is not None)
        # the lab host cannot run it (no bwrap, a CPU it cannot show) or a volume is missing: say why in the pod, as
        # a StartError
        except (sandbox.SandboxError, containerfs.VolumeError, tracer.CpuUnavailable) as e:
            log.error("node exec on %s: %s", node, e)
            return 128, "StartError", str(e)
        return (137 if res.code is None else res.code), None, None

    def _terminate(self, uid: str) -> threading.Event:
        with self._lock:
            return self._terminating.setdefault(uid, threading.Event())

    def _mount(self, key: Key, uid: str, node: str, pod: Obj, cancel: threading.Event) -> bool:
        """Set up the pod's volumes, trying again as the kubelet's volume manager does while one cannot be
        (a ConfigMap not created yet: Warning FailedMount); then keep them current while the pod runs. False: the
        pod went first."""
        host_ip, pod_ip = self._ips(node, pod)
        volumes = containerfs.PodVolumes(pod, self.roots[node], self.store.get, self.store.client,
                                         host_ip=host_ip, pod_ip=pod_ip)
        while True:
            try:
                volumes.project()
                break
            except containerfs.VolumeError as e:
                self._recorder(node).event(object_ref(pod), "Warning", "FailedMount", f"MountVolume.SetUp failed: {e}")
                if cancel.wait(max(self.volume_sync, 1.0)):
                    return False
        with self._lock:
            self._volumes[uid] = volumes
        threading.Thread(target=self._sync_volumes, args=(volumes, cancel), name=f"lab-podvolumes-{key[1]}",
                         daemon=True).start()
        return True

    def _sync_volumes(self, volumes: containerfs.PodVolumes, cancel: threading.Event) -> None:
        """The kubelet's periodic sync of a running pod's ConfigMap and Secret volumes (its syncFrequency, a minute
        by default, plus its object cache's TTL; the lab's is `volume_sync`)."""
        while not cancel.wait(self.volume_sync) and not self._stop.is_set():
            try:
                volumes.refresh()
            except Exception:  # a bad object must not end the sync
                log.exception("volume sync of %s failed", volumes.pod["metadata"].get("name"))

    def _program(self, node: str, pod: Obj,
                 container: Obj) -> tuple[list[str], dict[str, str], dict[str, Path], PodNet | None]:
        """argv, environment and binds of a container of a program image, on the node's CPU, and its pod's network
        (none on the host's network)."""
        with self._lock:
            volumes = self._volumes.get(str(pod["metadata"].get("uid", "")))
        if volumes is None:
            raise containerfs.VolumeError("the pod's volumes are not set up")
        host, port = self.store.client.address
        net = None
        if self.network is not None and not pod.get("spec", {}).get("hostNetwork"):
            net = self.network.pod(pod, container)
        env = containerfs.environment(pod, container, self.store.get, api_host=host, api_port=port,
                                      host_ip=volumes.host_ip, pod_ip=volumes.pod_ip)
        box = containerfs.container(pod, container, volumes, {**env, **(net.env if net else {})})
        argv, binds = box.argv, {**box.binds, **(net.binds if net else {})}
        cpu = self.cpus.get(node)
        if cpu is not None:
            on_cpu = tracer.on_cpu(cpu, (self.state_dir or self.roots[node].root.parent / ".cpu") / node)
            argv, binds = [*on_cpu.argv, *argv], {**binds, **on_cpu.binds}
        return [*(net.argv if net else []), *argv], box.env, binds, net

    def _ips(self, node: str, pod: Obj) -> tuple[str, str]:
        """(host IP, pod IP): a pod on the host's network (a node-debug pod) has the node's address."""
        kubelet = self.kubelets.get(node)
        host = kubelet.internal_ip if kubelet is not None else "10.0.0.1"
        if kubelet is None or is_node_debug_pod(pod) or pod.get("spec", {}).get("hostNetwork"):
            return host, host
        return host, kubelet.pod_ip()

    def _set(self, key: Key, uid: str, name: str, state: Obj, ready: bool, restarts: int, last: Obj) -> None:
        self._post(key, uid, lambda p: _set_container(p, name, state, ready=ready, restarts=restarts, last=last))

    def _post(self, key: Key, uid: str, edit: Callable[[Obj], None]) -> None:
        """Edit the pod's status (not another pod of the same name; never out of a terminal phase)."""
        def guarded(pod: Obj) -> None:
            if pod["metadata"].get("uid", "") == uid and \
                    pod.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
                edit(pod)

        try:
            self.store.mutate("pods", *key, guarded)
        except NotFound:
            return

    def _image_pull_failed(self, key: Key, uid: str, rec: EventRecorder, pod: Obj, container: Obj) -> None:
        name, image, ref = _cname(container), container.get("image", ""), _ref(pod, container)

        def waiting(reason: str, message: str) -> None:
            state = {"waiting": {"reason": reason, "message": message}}
            self._post(key, uid, lambda p: _set_container(p, name, state, ready=False))

        images.report_pull_failure(image, lambda t, r, m: rec.event(ref, t, r, m), waiting)


def _ref(pod: Obj, container: Obj) -> Obj:
    return object_ref(pod) | {"fieldPath": f"spec.containers{{{_cname(container)}}}"}


def _go_seconds(seconds: float) -> str:
    """A whole number of seconds as Go's time.Duration prints it (10s, 1m20s, 5m0s)."""
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s}s" if m else f"{s}s"


def _container_id(uid: str, name: str, instance: int) -> str:
    """The runtime's id of a container's `instance`-th run (its restart count then)."""
    return "containerd://" + hashlib.sha256(f"{uid}/{name}{f'/{instance}' if instance else ''}".encode()).hexdigest()


def _container_status(pod: Obj, name: str, state: Obj, *, ready: bool, restarts: int, last: Obj) -> Obj:
    c = next((k for k in _containers(pod) if _cname(k) == name), {})
    out: Obj = {"name": name, "image": c.get("image", ""), "imageID": "", "ready": ready,
                "restartCount": restarts, "started": "running" in state, "state": state, "lastState": last}
    if "waiting" not in state or last.get("terminated"):  # an instance ran (none before the first start)
        out["containerID"] = _container_id(str(pod["metadata"].get("uid", "")), name, restarts)
    return out


def _set_container(pod: Obj, name: str, state: Obj, *, ready: bool, restarts: int = 0, last: Obj | None = None) -> None:
    """One container's new status; the pod's phase and conditions follow from all of them."""
    status = pod.setdefault("status", {})
    statuses = {s.get("name"): s for s in status.get("containerStatuses") or []}
    statuses[name] = _container_status(pod, name, state, ready=ready, restarts=restarts, last=last or {})
    status["containerStatuses"] = [statuses[_cname(c)] for c in _containers(pod) if _cname(c) in statuses]
    phase = pod_phase(pod)
    stamp = now_iso()
    if phase != "Pending" or status.get("phase") != "Pending":
        status["phase"] = phase
        status.setdefault("startTime", stamp)
        status["conditions"] = pod_conditions(pod, phase, stamp)


def _mark_running(pod: Obj, host_ip: str, pod_ip: str, started: str, containers: list[Obj]) -> None:
    status = pod.setdefault("status", {})
    status.update(phase="Running", hostIP=host_ip, podIP=pod_ip, podIPs=[{"ip": pod_ip}], startTime=started)
    status["containerStatuses"] = [_container_status(pod, _cname(c), {"running": {"startedAt": started}}, ready=True,
                                                     restarts=0, last={}) for c in containers]
    status["conditions"] = pod_conditions(pod, "Running", started)
