"""The lab's node-feature-discovery: nfd-worker on each node its DaemonSet runs on, and nfd-master, on the store.

What runs comes from the objects NFD's manifests create (console/lab/nfd_deploy.py), read back on every change,
so `kubectl edit` changes what the lab does:
- nfd-master: the Deployment `nfd-master`'s argv (`-extra-label-ns`, `-deny-label-ns`, `-label-whitelist`,
  `-resource-labels`, `-enable-taints`, `-instance`, `-enable-nodefeature-api`, `-feature-gates`) and the
  ConfigMap `nfd-master-conf` (`nfd-master.conf`, v0.13+); flags win (cmd/nfd-master).
- nfd-worker: the DaemonSet `nfd-worker` (which nodes it runs on: its nodeSelector and tolerations; what it
  mounts at source.d and features.d) and the ConfigMap `nfd-worker-conf` (`nfd-worker.conf`: core.sleepInterval,
  core.labelWhiteList, core.labelSources / core.sources, sources.local.hooksEnabled).
Each worker reads source.d / features.d from its volume: a hostPath is that node's own tree
(`Lab.guest_roots[node].path(<hostPath>)`, what node access writes), a configMap volume is the ConfigMap's
data, projected `projection_delay` seconds after it changes (the kubelet's sync). It re-reads them every
sleepInterval and publishes when the result changed: the NodeFeature `<node>` in NFD's namespace when the
NodeFeature API is in use (v0.14+, v0.12-v0.13 with -enable-nodefeature-api; NodeFeatureAPI gate in v0.16),
else straight to the master (gRPC: no object). Hooks run (console/nfd/hooks.py, with NODE_NAME set) when
the version runs them (up to v0.13; v0.14-v0.16 only with hooksEnabled; removed in v0.17) and source.d is
mounted; they are re-run when source.d changes. Hook and feature-file problems are Warning Events on the
Node (component `nfd-worker`; reasons HookFailed, HookWarning, HooksIgnored, LabelDropped,
FeatureFileWarning) and log lines.

nfd-master: for every node, its worker's features (the NodeFeature, or what gRPC sent) and, from v0.14,
third-party NodeFeatures in any namespace (label `nfd.node.kubernetes.io/node-name`) plus the
NodeFeatureRules (v0.10+; Warning Events InvalidRule / RuleFailed / RuleIgnored on the rule) go through
`console.nfd.master.compute_node_outcome`; the Node is patched with `node_patch`. Up to v0.14 it writes the
`worker.version` annotation on every node and `master.version` on the control plane; from v0.15 it removes
both. Deleted nodes lose their NodeFeatures from v0.14 (nfd-gc). Nodes not in the scenario are skipped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.lab import nfd_deploy as D
from console.lab import nfd_features as NF
from console.lab.apistore import ApiStore
from console.lab.nfd_deploy import Mount, Running, read_running
from console.lab.nfd_master import NF_RESOURCE, NFR_RESOURCE, NfdMasterMixin, clip
from console.lab.recorder import EventRecorder, node_ref
from console.lab.scenarios import Scenario
from console.lab.store import NotFound, Obj, WatchEvent
from console.nfd import versions as V
from console.nfd.hooks import HooksRun
from console.nfd.master import MasterConfig
from console.nfd.model import NODE_NAME_LABEL, NodeFeatureSpec, make_node_feature
from console.planner.constraints import tolerates

log = logging.getLogger(__name__)

__all__ = ["NFR_RESOURCE", "NF_RESOURCE", "NfdSim", "Running", "read_running"]

HOOK_MAX_OUTPUT = 64 * 1024
# source.d re-run at least this often even when unchanged (hooks read /proc, which changes under them)
HOOK_RERUN = 30.0
# the tolerations the DaemonSet controller adds to its pods (pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations)
DS_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


def _untolerated_taint(taints: list[Obj], tolerations: list[Obj]) -> Obj | None:
    """The first NoSchedule/NoExecute taint no toleration matches."""
    return next((t for t in taints if t.get("effect") in ("NoSchedule", "NoExecute")
                 and not any(tolerates(tol, t) for tol in tolerations)), None)


def daemon_pod_placement(ds: Obj, node: Obj) -> tuple[bool, bool]:
    """(should run, should continue running), as pkg/controller/daemon/daemon_controller.go
    NodeShouldRunDaemonPod: a node selector that does not match → neither; an untolerated taint → no new
    pod, but a pod already there keeps running unless the taint is NoExecute (a NotReady node's
    not-ready:NoSchedule does not evict its DaemonSet pods)."""
    pod_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False, False
    tolerations = [*(pod_spec.get("tolerations") or []), *DS_TOLERATIONS]
    taints = (node.get("spec") or {}).get("taints") or []
    if _untolerated_taint(taints, tolerations) is None:
        return True, True
    no_execute = [t for t in taints if t.get("effect") == "NoExecute"]
    return False, _untolerated_taint(no_execute, tolerations) is None


@dataclass
class _Worker:
    node: str
    due: float = 0.0  # monotonic time of its next pass
    hooks_key: tuple[Any, ...] | None = None  # source.d signature of the last hook run
    hooks_at: float = 0.0
    hooks: HooksRun | None = None
    published: tuple[Any, ...] | None = None  # what it last sent
    reported: frozenset[str] = frozenset()


class NfdSim(NfdMasterMixin):
    """nfd-worker per node + nfd-master for one scenario (see the module docstring)."""

    def __init__(self, store: ApiStore, scenario: Scenario, work_dir: Path, *,
                 guest_roots: dict[str, Any] | None = None, debounce: float = 0.1, hook_timeout: float = 10.0,
                 projection_delay: float = 0.5) -> None:
        self.store = store
        self.scenario = scenario
        self.namespace = scenario.nfd.namespace
        self.version = V.parse_version(scenario.nfd_version)
        self.work_dir = Path(work_dir)
        self.guest_roots = guest_roots if guest_roots is not None else {}
        self.debounce = debounce
        self.hook_timeout = hook_timeout
        self.projection_delay = projection_delay
        self.specs = {n.name: n for n in scenario.nodes}
        self.worker_events = EventRecorder(store, "nfd-worker")
        self.master_events = EventRecorder(store, "nfd-master")
        self.stats = {"batches": 0, "hook_runs": 0, "publishes": 0, "node_updates": 0, "rule_compiles": 0,
                      "passes": 0}
        self.last_batch_seconds = 0.0
        self.start_seconds = 0.0
        self._builtin = {n: NF.node_features(s, scenario.host_os, self.version) for n, s in self.specs.items()}
        self.running = read_running(store, self.namespace, self.version)
        self._workers: dict[str, _Worker] = {}
        self._grpc: dict[str, NodeFeatureSpec] = {}  # node -> what its worker sent over gRPC (no NodeFeature API)
        self._placed_template = ""  # the DaemonSet pod template the workers were placed by
        self._projected: dict[str, tuple[str, dict[str, str]]] = {}  # ConfigMap -> (rv, data) the kubelet projected
        self._pending_projection: dict[str, float] = {}  # ConfigMap -> when the kubelet syncs it
        self._q: queue.SimpleQueue[WatchEvent | None] = queue.SimpleQueue()
        self._unsubs: list[Any] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._idle = threading.Condition()
        self._enqueued = 0
        self._handled = 0
        self._init_master()

    # -- lifecycle ------------------------------------------------------
    def start(self) -> None:
        """Publish and label every node the worker runs on (synchronously), then follow changes and intervals."""
        if self._thread is not None:
            return
        t0 = time.monotonic()
        self._stop.clear()
        self._unsubs = [self.store.subscribe(r, self._enqueue) for r in (NFR_RESOURCE, NF_RESOURCE, "nodes")]
        self._unsubs += [self.store.subscribe(r, self._enqueue, namespace=self.namespace)
                         for r in ("configmaps", "deployments.apps", "daemonsets.apps")]
        for name, _ in self._mounted_configmaps():
            self._project(name)
        self._sync_rules()
        self._sync_workers()
        for w in list(self._workers.values()):
            self._pass(w, force=True)
        for n in self._labelled_nodes():
            self._label(n)
        self._thread = threading.Thread(target=self._run, name="lab-nfd", daemon=True)
        self._thread.start()
        self.start_seconds = time.monotonic() - t0
        log.info("lab nfd: NFD %s in %s labelled %d node(s) in %.3fs", self.version, self.namespace,
                 len(self._workers), self.start_seconds)

    def stop(self) -> None:
        self._stop.set()
        for unsub in self._unsubs:
            unsub()
        self._unsubs = []
        self._q.put(None)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        shutil.rmtree(self.work_dir, ignore_errors=True)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until every store event seen so far has been handled."""
        deadline = time.monotonic() + timeout
        target = self._enqueued
        with self._idle:
            while self._handled < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(min(left, 0.05))
        return True

    def wait_labelled(self, timeout: float = 10.0) -> bool:
        """Block until every scenario node the DaemonSet runs on has had its worker's first pass (and the master
        has labelled it): what a lab start waits for after its nodes became Ready (nfd-worker pods start then)."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.wait_idle(max(0.0, deadline - time.monotonic())):
                return False
            nodes = [self._node(n) for n in self.specs]
            want = {n["metadata"]["name"] for n in nodes if n is not None and self._eligible(n)}
            if all(w in self._workers and self._workers[w].published is not None for w in want):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def _enqueue(self, ev: WatchEvent) -> None:
        # runs under the store lock: only count and enqueue
        self._enqueued += 1
        self._q.put(ev)

    # -- loop -----------------------------------------------------------
    def _next_due(self) -> float:
        times = [w.due for w in self._workers.values()] + list(self._pending_projection.values())
        return min(times) if times else time.monotonic() + 0.5

    def _run(self) -> None:
        while not self._stop.is_set():
            wait = max(0.0, min(0.5, self._next_due() - time.monotonic()))
            batch: list[WatchEvent | None] = []
            with contextlib.suppress(queue.Empty):
                batch.append(self._q.get(timeout=wait) if wait > 0 else self._q.get_nowait())
            if batch:
                deadline = time.monotonic() + self.debounce
                while (left := deadline - time.monotonic()) > 0:
                    try:
                        batch.append(self._q.get(timeout=left))
                    except queue.Empty:
                        break
                while True:
                    try:
                        batch.append(self._q.get_nowait())
                    except queue.Empty:
                        break
            events = [ev for ev in batch if ev is not None]
            if self._stop.is_set():
                break
            t0 = time.monotonic()
            try:
                self._handle(events)
                self._tick()
            except Exception:  # one bad batch must not stop labelling; the log has the traceback
                log.exception("lab nfd: handling %d event(s) failed", len(events))
            if events:
                self.last_batch_seconds = time.monotonic() - t0
                self.stats["batches"] += 1
            with self._idle:
                self._handled += len(events)
                self._idle.notify_all()

    def _tick(self) -> None:
        """Timers: the kubelet's ConfigMap projections, then every worker whose sleepInterval is up."""
        now = time.monotonic()
        for name, when in list(self._pending_projection.items()):
            if when <= now:
                del self._pending_projection[name]
                if name == D.WORKER_CONF:  # nfd-worker watches its config file and reloads it
                    self.running = read_running(self.store, self.namespace, self.version)
                    for w in self._workers.values():
                        w.due, w.published = now, None
                elif self._project(name):
                    for w in self._workers.values():
                        w.due = now  # nfd-worker watches its config and feature files: re-read now
        relabel = set()
        for w in list(self._workers.values()):
            if w.due <= now and self._pass(w):
                relabel.add(w.node)
        for n in sorted(relabel):  # the master reacts to what the worker sent (our own NodeFeature echo is skipped)
            self._label(n)

    def _handle(self, events: list[WatchEvent]) -> None:
        rules_changed = config_changed = False
        relabel: set[str] = set()
        mounted = {name for name, _ in self._mounted_configmaps()}
        for ev in events:
            meta = ev.object.get("metadata") or {}
            name = meta.get("name", "")
            if ev.resource == NFR_RESOURCE:
                rules_changed = True
            elif ev.resource in ("deployments.apps", "daemonsets.apps"):
                config_changed = config_changed or name in (D.MASTER, D.WORKER)
            elif ev.resource == "configmaps":
                if name == D.MASTER_CONF:
                    config_changed = True
                if name in mounted or name == D.WORKER_CONF:
                    self._pending_projection.setdefault(name, time.monotonic() + self.projection_delay)
            elif ev.resource == NF_RESOURCE:
                node = (meta.get("labels") or {}).get(NODE_NAME_LABEL, "")
                if node not in self.specs:
                    continue
                ours = meta.get("namespace") == self.namespace and name == node
                if ours and ev.type == "DELETED" and node in self._workers:
                    self._workers[node].published = None  # the worker writes it again on its next pass
                    self._workers[node].due = time.monotonic()
                elif not (ours and self._written.get(node) == meta.get("resourceVersion")):
                    relabel.add(node)  # not the echo of our own write
            elif ev.resource == "nodes" and name in self.specs:
                if ev.type == "DELETED":
                    self._forget(name)
                elif ev.type == "ADDED" or self._resources_lost(ev.object):
                    relabel.add(name)
                config_changed = config_changed or ev.type != "MODIFIED" or self._eligibility_changed(ev.object)
        if config_changed:
            old = self.running
            self.running = read_running(self.store, self.namespace, self.version)
            restarted = self.running.mounts != old.mounts  # new pods: the kubelet projects their volumes afresh
            for name, _ in self._mounted_configmaps():
                if restarted and name in self._projected:  # rewritten (modes too) at the next sync; read until then
                    self._projected[name] = ("", self._projected[name][1])
                    self._pending_projection.setdefault(name, time.monotonic() + self.projection_delay)
                if name not in self._projected:
                    self._pending_projection.setdefault(name, time.monotonic() + self.projection_delay)
            self._sync_workers()
            if self.running != old:
                for w in self._workers.values():  # a changed DaemonSet restarts its pods; they publish at once
                    w.due, w.hooks_key, w.published = time.monotonic(), None, None
                relabel.update(self._labelled_nodes())
        if rules_changed and self._sync_rules():
            relabel.update(self._labelled_nodes())
        for n in sorted(relabel):
            if self._node(n) is not None:
                self._label(n)

    def _node(self, name: str) -> Obj | None:
        try:
            return self.store.get("nodes", None, name)
        except NotFound:
            return None

    # -- where workers run ---------------------------------------------
    def _eligible(self, node: Obj) -> bool:
        """Where the DaemonSet controller keeps an nfd-worker pod (daemon_pod_placement): a new one where it
        should run, one already running where it should continue running."""
        ds = self.running.daemonset
        if ds is None:
            return False
        run, keep = daemon_pod_placement(ds, node)
        # a changed pod template is a RollingUpdate: every pod replaced, the new ones only where they should run
        updated = self._template() != self._placed_template
        return keep if node["metadata"]["name"] in self._workers and not updated else run

    def _template(self) -> str:
        ds = self.running.daemonset
        return json.dumps(((ds or {}).get("spec") or {}).get("template") or {}, sort_keys=True)

    def _eligibility_changed(self, node: Obj) -> bool:
        return self._eligible(node) != (node["metadata"]["name"] in self._workers)

    def _sync_workers(self) -> None:
        for name in self.specs:
            node = self._node(name)
            if node is not None and self._eligible(node):
                self._workers.setdefault(name, _Worker(name))
            elif name in self._workers:
                del self._workers[name]
                self._grpc.pop(name, None)  # its pod is gone: the master keeps the labels until it relabels
        self._placed_template = self._template()

    def _labelled_nodes(self) -> list[str]:
        return sorted(n for n in self.specs if n in self._workers or n in self._written)

    # -- the worker's directories --------------------------------------
    def _mounted_configmaps(self) -> list[tuple[str, str]]:
        return [(m.config_map, kind) for kind, m in self.running.mounts.items() if m.source == "configMap"]

    def _project(self, name: str) -> bool:
        """The kubelet writes the ConfigMap's current data into the volume; True when it changed."""
        try:
            cm = self.store.get("configmaps", self.namespace, name)
        except NotFound:
            cm = None
        rv = (cm or {}).get("metadata", {}).get("resourceVersion", "")
        if name in self._projected and self._projected[name][0] == rv != "":
            return False
        data = {str(k): str(v) for k, v in ((cm or {}).get("data") or {}).items()}
        self._projected[name] = (rv, data)
        d = self.work_dir / "configmaps" / name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True, exist_ok=True)
        modes = {m.config_map: m.default_mode for m in self.running.mounts.values() if m.source == "configMap"}
        for key, content in data.items():
            if not key or "/" in key or key in (".", ".."):
                log.warning("lab nfd: ConfigMap %s key %r is not a file name; skipped", name, key)
                continue
            p = d / key
            p.write_text(content, encoding="utf-8")
            p.chmod(modes.get(name, 0o644))
        return True

    def _dir(self, node: str, kind: str) -> Path | None:
        m = self.running.mounts.get(kind, Mount("none"))
        if m.source == "hostPath":
            root = self.guest_roots.get(node)
            return root.path(m.path) if root is not None else None
        if m.source == "configMap" and m.config_map in self._projected:
            return self.work_dir / "configmaps" / m.config_map
        return None

    # -- worker ---------------------------------------------------------
    def _hooks(self, w: _Worker, hooks_dir: Path | None, settings: D.WorkerSettings) -> HooksRun | None:
        """source.d's run, repeated when the directory changed (or every HOOK_RERUN s)."""
        if hooks_dir is None:
            return None
        key = (_signature(hooks_dir), settings.hooks_enabled)
        now = time.monotonic()
        if w.hooks is None or key != w.hooks_key or now - w.hooks_at >= HOOK_RERUN:
            w.hooks = NF.run_source_d(hooks_dir, self.version, node=w.node, enabled=settings.hooks_enabled,
                                      timeout=self.hook_timeout, max_output=HOOK_MAX_OUTPUT,
                                      root=self.guest_roots.get(w.node))
            if w.hooks.status == "ran" and w.hooks.results:
                self.stats["hook_runs"] += 1
            w.hooks_key, w.hooks_at = key, now
        return w.hooks

    def _pass(self, w: _Worker, *, force: bool = False) -> bool:
        """One nfd-worker discovery round: read its sources, publish when changed; True when it sent."""
        settings = self.running.worker or D.WorkerSettings()
        w.due = time.monotonic() + max(settings.sleep_interval, 0.2)
        if self.running.worker is None:
            return False
        self.stats["passes"] += 1
        hooks = self._hooks(w, self._dir(w.node, "hook"), settings)
        local = NF.local_output(self._dir(w.node, "feature"), hooks, self.version)
        self._report(w, local, settings)
        features, labels = NF.worker_publication(self._builtin[w.node], local, self.version)
        labels = _worker_filter(labels, set(local.labels), settings)
        key = (features.to_api(), sorted(labels.items()), self.running.api)
        if not force and key == w.published:
            return False
        w.published = key
        nf = make_node_feature(w.node, features, labels, namespace=self.namespace, worker_version=str(self.version))
        if self.running.api:
            self._write_node_feature(w.node, nf)
        else:
            self._grpc[w.node] = NodeFeatureSpec.from_object(nf)
        self.stats["publishes"] += 1
        return True

    def _write_node_feature(self, node: str, nf: Obj) -> None:
        def edit(cur: Obj) -> None:
            cur["spec"] = nf["spec"]
            cur["metadata"].setdefault("labels", {}).update(nf["metadata"]["labels"])
            cur["metadata"].setdefault("annotations", {}).update(nf["metadata"]["annotations"])

        try:
            written = self.store.mutate(NF_RESOURCE, self.namespace, node, edit)
        except NotFound:
            written = self.store.create(NF_RESOURCE, nf)
        self._written[node] = written["metadata"]["resourceVersion"]

    def _report(self, w: _Worker, out: NF.LocalOutput, settings: D.WorkerSettings) -> None:
        """Warning Events on the Node for what nfd-worker logs about its local source (once per change)."""
        problems: list[tuple[str, str]] = []
        failed = {f"hook {h.name}: {h.error}" for h in out.hooks if h.error}
        other = "HooksIgnored" if out.hooks_status in ("removed", "disabled") else "HookWarning"
        problems += [("HookFailed" if m in failed else other, m) for m in out.hook_warnings if "DEPRECATED" not in m]
        problems += [("FeatureFileWarning", m) for m in out.file_warnings]
        problems += [("LabelDropped", f"label {k}={v!r} dropped by nfd-worker: {why}") for k, v, why, _ in out.dropped]
        problems += [("ConfigError", f"nfd-worker.conf: {e}") for e in settings.errors]
        msgs = {self._where(w.node, m) for _, m in problems}
        if frozenset(msgs) == w.reported:
            return
        w.reported = frozenset(msgs)
        for reason, msg in problems:
            msg = self._where(w.node, msg)
            log.warning("lab nfd: node %s: %s", w.node, msg)
            self.worker_events.event(node_ref(w.node), "Warning", reason, clip(msg), host=w.node)

    def _where(self, node: str, msg: str) -> str:
        """Messages name the path nfd-worker sees, not the lab's directories."""
        for kind, guest in (("hook", D.SOURCE_D.rstrip("/")), ("feature", D.FEATURES_D.rstrip("/"))):
            d = self._dir(node, kind)
            if d is not None:
                msg = msg.replace(str(d), guest)
        return msg

    # -- master ---------------------------------------------------------
    def master_config(self) -> MasterConfig | None:
        return self.running.master.config if self.running.master is not None else None


def _signature(d: Path) -> tuple[Any, ...]:
    try:
        return tuple(sorted((p.name, st.st_mtime_ns, st.st_size, st.st_mode)
                            for p in d.iterdir() for st in (p.stat(),)))
    except OSError:
        return ("missing",)


_SOURCE_OF = re.compile(r"^([a-z]+)[-.]")


def _worker_filter(labels: dict[str, str], local: set[str], s: D.WorkerSettings) -> dict[str, str]:
    """core.labelSources (`local` = the keys from features.d / source.d) and core.labelWhiteList (matched
    against the name without the namespace)."""
    out = {}
    wl = re.compile(s.label_whitelist) if s.label_whitelist else None
    for key, value in labels.items():
        name = key.rpartition("/")[2]
        m = _SOURCE_OF.match(name)
        source = "local" if key in local or not m else m.group(1)
        if s.sources is not None and source not in s.sources:
            continue
        if wl is not None and not wl.search(name):
            continue
        out[key] = value
    return out
