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
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from console.lab import images, sandbox
from console.lab.guestroot import GuestRoot
from console.lab.guestservices import KubeletControl
from console.lab.podlogs import PodLogs
from console.lab.recorder import EventRecorder, object_ref
from console.lab.store import NotFound, Obj, Store, WatchEvent, now_iso
from console.lab.vm import Guest


class NodeKubelet(KubeletControl, Protocol):
    """What exec needs of a node's kubelet (console/lab/kubelet.py Kubelet, which imports this module): its
    state, its event recorder and address, and the service control the sandbox's systemctl uses."""

    state: str
    recorder: EventRecorder

    @property
    def internal_ip(self) -> str: ...

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


class NodeExec:
    def __init__(
        self,
        store: Store,
        logs: PodLogs,
        guests: dict[str, Guest],
        kubelets: dict[str, NodeKubelet],
        *,
        roots: dict[str, GuestRoot],
        workers: int = 4,
        poll: float = 0.05,
        timeout: float = 300.0,
    ) -> None:
        self.store = store
        self.logs = logs
        self.guests = guests
        self.kubelets = kubelets
        self.roots = roots
        self.poll = poll
        self.timeout = timeout  # seconds a command may run before the lab kills it
        self.faults: dict[str | None, set[str]] = {}
        self._recorders: dict[str, EventRecorder] = {}
        self._new: queue.SimpleQueue[Key] = queue.SimpleQueue()
        self._seen: set[str | None] = set()
        self._waiting: list[Key] = []
        self._finishing: list[tuple[Key, int, str, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lab-nodeexec")
        self._thread: threading.Thread | None = None
        self._unsub: Any = None
        self._running: set[Key] = set()

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._unsub = self.store.subscribe("pods", self._on_event)
        pods, _ = self.store.list("pods", predicate=is_node_debug_pod)
        for pod in pods:
            self._consider(pod)
        self._thread = threading.Thread(target=self._run, name="lab-nodeexec-dispatch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._unsub:
            self._unsub()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        self._pool.shutdown(wait=True, cancel_futures=True)

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
        if ev.type != "DELETED":
            self._consider(ev.object)

    def _consider(self, pod: Obj) -> None:
        node = pod.get("spec", {}).get("nodeName")
        if node not in self.guests or pod.get("status", {}).get("phase", "Pending") != "Pending":
            return
        if not is_node_debug_pod(pod):
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
                node = self._node_of(key)
                if node is None:
                    continue
                if self._kubelet_up(node):
                    with self._lock:
                        self._running.add(key)
                    self._pool.submit(self._run_pod, key, node)
                else:
                    with self._lock:
                        self._waiting.append(key)
            for item in finishing:
                self._finish(*item)

    def _node_of(self, key: Key) -> str | None:
        try:
            return self.store.get("pods", *key).get("spec", {}).get("nodeName")
        except NotFound:
            return None

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
        container = (pod.get("spec", {}).get("containers") or [{}])[0]
        cname, image = container.get("name", "debugger"), container.get("image", "")
        rec = self._recorder(node)
        ref = object_ref(pod) | {"fieldPath": f"spec.containers{{{cname}}}"}
        if not images.can_pull(image):
            self._image_pull_failed(key, rec, ref, image)
            return
        rec.event(ref, "Normal", "Pulled", f'Container image "{image}" already present on machine')
        rec.event(ref, "Normal", "Created", f"Created container {cname}")
        started = now_iso()
        if self._has_fault("exec-fail", node):
            argv0 = (container_argv(container) or ["sh"])[0]
            msg = (f"failed to create containerd task: failed to create shim: OCI runtime create failed: "
                   f'runc create failed: unable to start container process: exec: "{argv0}": '
                   "executable file not found in $PATH: unknown")
            rec.event(ref, "Warning", "Failed", f"Error: {msg}")
            self._post_terminated(key, 128, started, now_iso(), reason="StartError", message=msg)
            return
        self.store.mutate("pods", *key, lambda p: self._mark_running(p, node, started))
        rec.event(ref, "Normal", "Started", f"Started container {cname}")
        cut = threading.Event()

        def sink(text: str) -> None:
            if not cut.is_set():
                self.logs.append(key[0], key[1], text)

        argv = container_argv(container) or ["sh"]
        try:
            res = sandbox.run(self.roots[node], argv, kubelet=self.kubelets.get(node), timeout=self.timeout,
                              on_kubelet_restart=lambda blocking: cut.set() if blocking else None,
                              stdout=sink, merge_stderr=True)
        except sandbox.SandboxError as e:  # the lab host cannot run it: say why in the pod, as a StartError
            log.error("node exec on %s: %s", node, e)
            self._post_terminated(key, 128, started, now_iso(), reason="StartError", message=str(e))
            return
        self._finish(key, 137 if res.code is None else res.code, started, now_iso())

    def _finish(self, key: Key, code: int, started: str, finished: str) -> None:
        node = self._node_of(key)
        if node is None:
            return
        if not self._kubelet_up(node):  # nobody posts pod status until the kubelet is back
            with self._lock:
                self._finishing.append((key, code, started, finished))
            return
        self._post_terminated(key, code, started, finished)

    def _mark_running(self, pod: Obj, node: str, started: str) -> None:
        kubelet = self.kubelets.get(node)
        ip = kubelet.internal_ip if kubelet is not None else "10.0.0.1"
        status = pod.setdefault("status", {})
        status.update(phase="Running", hostIP=ip, podIP=ip, podIPs=[{"ip": ip}], startTime=started)
        status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"] + [
            {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": started}
            for t in ("Initialized", "Ready", "ContainersReady")
        ]
        status["containerStatuses"] = [_container_status(pod, {"running": {"startedAt": started}}, ready=True)]

    def _post_terminated(self, key: Key, code: int, started: str, finished: str, *,
                         reason: str | None = None, message: str | None = None) -> None:
        def edit(pod: Obj) -> None:
            status = pod.setdefault("status", {})
            status["phase"] = "Succeeded" if code == 0 else "Failed"
            status.setdefault("startTime", started)
            term: Obj = {"exitCode": code, "reason": reason or ("Completed" if code == 0 else "Error"),
                         "startedAt": started, "finishedAt": finished}
            if message:
                term["message"] = message
            status["containerStatuses"] = [_container_status(pod, {"terminated": term}, ready=False)]
            why = "PodCompleted" if code == 0 else "PodFailed"
            conds = [c for c in status.get("conditions") or [] if c.get("type") in ("PodScheduled", "Initialized")]
            conds += [{"type": t, "status": "False", "reason": why, "lastProbeTime": None,
                       "lastTransitionTime": finished} for t in ("Ready", "ContainersReady")]
            status["conditions"] = conds

        try:
            self.store.mutate("pods", *key, edit)
        except NotFound:
            return

    def _image_pull_failed(self, key: Key, rec: EventRecorder, ref: Obj, image: str) -> None:
        def waiting(reason: str, message: str) -> None:
            def edit(pod: Obj) -> None:
                state = {"waiting": {"reason": reason, "message": message}}
                pod.setdefault("status", {})["containerStatuses"] = [_container_status(pod, state, ready=False)]

            self.store.mutate("pods", *key, edit)

        images.report_pull_failure(image, lambda t, r, m: rec.event(ref, t, r, m), waiting)


def _container_status(pod: Obj, state: Obj, *, ready: bool) -> Obj:
    c = (pod.get("spec", {}).get("containers") or [{}])[0]
    name = c.get("name", "debugger")
    out: Obj = {"name": name, "image": c.get("image", ""), "imageID": "", "ready": ready,
                "restartCount": 0, "started": "running" in state, "state": state, "lastState": {}}
    if "waiting" not in state:
        meta = pod["metadata"]
        digest = hashlib.sha256(f"{meta.get('uid')}/{name}".encode()).hexdigest()
        out["containerID"] = f"containerd://{digest}"
    return out
