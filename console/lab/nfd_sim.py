"""The lab's node-feature-discovery: one nfd-worker per scenario node and nfd-master, on the lab's store.

Worker side: each scenario node's built-in features (console/lab/nfd_features.py) plus the `local`
source of its node group are published as the NodeFeature `<node>` in `node-feature-discovery`
(label `nfd.node.kubernetes.io/node-name`, annotation `nfd.node.kubernetes.io/worker.version`).
NFD before v0.12 had no NodeFeature CRD (the worker sent labels over gRPC): the lab still stores the
object, as its record of what the worker sent, with the annotation `console.lab/nfd-transport: grpc`.

Node groups: a node's group is its label `node.console.lab/group` (else `control-plane` for control
plane nodes, `workers` otherwise). A group's hooks are the ConfigMap `nfd-hooks-<group>` (data: hook
name -> script) and its feature files `nfd-features-<group>` (data: file name -> content), both in
`node-feature-discovery`. They are written into a directory per group and resourceVersion and run
with console.nfd.hooks (executable bit set, `hook_timeout` seconds, 64 KiB of stdout), for real, on
this machine (the lab's "guest"), only when the NFD version runs hooks (up to v0.13; v0.14-v0.16
only with hooksEnabled, which the lab leaves at its default; removed in v0.17). A group's hooks run
once per ConfigMap change; when any of its hooks mentions `NODE_NAME` they run once per node with
`NODE_NAME` set. Every hook gets `NODE_GROUP`. A hook that fails, hangs, prints too much or prints
invalid labels is discarded (as nfd-worker discards it) and reported as a Warning Event on its
ConfigMap (source component `nfd-worker`; reasons `HookFailed`, `HookWarning`, `HooksIgnored` when
the NFD version does not run hooks, `LabelDropped`, `FeatureFileWarning`) and a log line; the other
hooks and files still label. Rule problems are Warning Events on the NodeFeatureRule (namespace
`default`; `InvalidRule`, `RuleFailed`, `RuleIgnored` before v0.10).

Master side: for every node, its NodeFeatures (only the worker's before v0.14) and the
NodeFeatureRules (compiled once per rule change; ignored before v0.10) go through
`console.nfd.master.compute_node_outcome`; the Node's labels, annotations, taints (with
`enable_taints`) and extended resources are patched with `node_patch`, so labels listed in
`nfd.node.kubernetes.io/feature-labels` and no longer produced are removed. Up to v0.14 the master
also writes `nfd.node.kubernetes.io/worker.version` on every node and `.../master.version` on the
control-plane node (where nfd-master runs); from v0.15 it removes both.

Version discovery for clients: the NodeFeature annotation `nfd.node.kubernetes.io/worker.version`,
the Node annotations above (v0.4-v0.14), and a lab-only ConfigMap `nfd-version` (data `version`).

Reactivity: store subscriptions on NodeFeatureRules, NodeFeatures, ConfigMaps in the NFD namespace
and Nodes; events are debounced (`debounce` s) and only what changed is recomputed. Nodes that are
not in the scenario (the scale world's synthetic nodes, which carry cpu labels already) are skipped.
"""

from __future__ import annotations

import logging
import queue
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.lab import nfd_features as NF
from console.lab.recorder import EventRecorder, object_ref
from console.lab.scenarios import NFD_GROUP_LABEL, NodeSpec, Scenario
from console.lab.store import NotFound, Obj, Store, StoreError, WatchEvent
from console.nfd import versions as V
from console.nfd.labels import FEATURE_NS
from console.nfd.master import (
    EXTENDED_RESOURCES_ANNOTATION,
    TAINTS_ANNOTATION,
    MasterConfig,
    NodeOutcome,
    compute_node_outcome,
    node_patch,
)
from console.nfd.model import NODE_NAME_LABEL, InvalidObject, NodeFeatureSpec, make_node_feature
from console.nfd.rules import CompiledRuleObject, RuleError, compile_rule_objects

log = logging.getLogger(__name__)

NFD_NAMESPACE = "node-feature-discovery"
HOOKS_CM_PREFIX = "nfd-hooks-"
FEATURES_CM_PREFIX = "nfd-features-"
VERSION_CONFIGMAP = "nfd-version"
NF_RESOURCE = "nodefeatures.nfd.k8s-sigs.io"
NFR_RESOURCE = "nodefeaturerules.nfd.k8s-sigs.io"
WORKER_VERSION_ANNOTATION = "nfd.node.kubernetes.io/worker.version"
MASTER_VERSION_ANNOTATION = "nfd.node.kubernetes.io/master.version"
TRANSPORT_ANNOTATION = "console.lab/nfd-transport"
HOOK_MAX_OUTPUT = 64 * 1024
EVENT_MESSAGE_LIMIT = 1024


def _cm_group(name: str) -> str | None:
    for prefix in (HOOKS_CM_PREFIX, FEATURES_CM_PREFIX):
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix):]
    return None


def node_group(node: Obj, spec: NodeSpec | None = None) -> str:
    """The NFD node group of a Node object: its `node.console.lab/group` label, else by role."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    if labels.get(NFD_GROUP_LABEL):
        return str(labels[NFD_GROUP_LABEL])
    if spec is not None:
        return spec.nfd_group
    return "control-plane" if "node-role.kubernetes.io/control-plane" in labels else "workers"


def _tracked(value: str) -> set[str]:
    return {n if "/" in n else f"{FEATURE_NS}/{n}" for n in value.split(",") if n}


@dataclass
class _GroupLocal:
    key: tuple[str, str]  # (hooks ConfigMap rv, features ConfigMap rv); "" = no ConfigMap
    dir: Path | None
    hooks_dir: Path | None
    features_dir: Path | None
    per_node: bool  # a hook reads NODE_NAME: run per node
    results: dict[str, NF.LocalOutput] = field(default_factory=dict)  # node ("" = shared) -> output


class NfdSim:
    """nfd-worker + nfd-master for one scenario, driven by store events (see the module docstring)."""

    def __init__(self, store: Store, scenario: Scenario, work_dir: Path, *, debounce: float = 0.1,
                 hook_timeout: float = 2.0, master_config: MasterConfig | None = None) -> None:
        self.store = store
        self.scenario = scenario
        self.version = V.parse_version(scenario.nfd_version)
        self.config = master_config or MasterConfig(version=self.version, namespace=NFD_NAMESPACE)
        self.work_dir = Path(work_dir)
        self.debounce = debounce
        self.hook_timeout = hook_timeout
        self.specs = {n.name: n for n in scenario.nodes}
        self.worker_events = EventRecorder(store, "nfd-worker")
        self.master_events = EventRecorder(store, "nfd-master")
        self.stats = {"batches": 0, "hook_runs": 0, "publishes": 0, "node_updates": 0, "rule_compiles": 0}
        self.last_batch_seconds = 0.0
        self.start_seconds = 0.0  # how long start() took (seeding, first publish and labelling)
        self._builtin = {n: NF.node_features(s, scenario.host_os, self.version) for n, s in self.specs.items()}
        self._groups: dict[str, _GroupLocal] = {}
        self._node_group: dict[str, str] = {}
        self._written: dict[str, str] = {}  # node -> resourceVersion of the NodeFeature this worker wrote
        self._outcomes: dict[str, NodeOutcome] = {}
        self._compiled: dict[str, tuple[str, CompiledRuleObject | None]] = {}  # name -> (rv, compiled)
        self._rules: list[CompiledRuleObject] = []
        self._rules_ignored_logged = False
        self._q: queue.SimpleQueue[WatchEvent | None] = queue.SimpleQueue()
        self._unsubs: list[Any] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._idle = threading.Condition()
        self._enqueued = 0
        self._handled = 0

    # -- lifecycle ------------------------------------------------------
    def start(self) -> None:
        """Seed the ConfigMaps, publish and label every scenario node (synchronously), then follow changes."""
        if self._thread is not None:
            return
        t0 = time.monotonic()
        self._stop.clear()
        self._seed_configmaps()
        self._unsubs = [
            self.store.subscribe(NFR_RESOURCE, self._enqueue),
            self.store.subscribe(NF_RESOURCE, self._enqueue),
            self.store.subscribe("configmaps", self._enqueue, namespace=NFD_NAMESPACE),
            self.store.subscribe("nodes", self._enqueue),
        ]
        self._sync_rules()
        present = [n for n in self.specs if self._node(n) is not None]
        for n in present:
            self._publish(n)
        for n in present:
            self._label(n)
        self._thread = threading.Thread(target=self._run, name="lab-nfd", daemon=True)
        self._thread.start()
        self.start_seconds = time.monotonic() - t0
        log.info("lab nfd: NFD %s labelled %d node(s) in %.3fs", self.version, len(present), self.start_seconds)

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

    def _enqueue(self, ev: WatchEvent) -> None:
        # runs under the store lock: only count and enqueue
        self._enqueued += 1
        self._q.put(ev)

    # -- loop -----------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                first = self._q.get(timeout=0.5)
            except queue.Empty:
                continue
            batch = [first]
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
            except Exception:  # one bad batch must not stop labelling; the log has the traceback
                log.exception("lab nfd: handling %d event(s) failed", len(events))
            self.last_batch_seconds = time.monotonic() - t0
            self.stats["batches"] += 1
            with self._idle:
                self._handled += len(events)
                self._idle.notify_all()

    def _handle(self, events: list[WatchEvent]) -> None:
        rules_changed = False
        groups: set[str] = set()
        republish: set[str] = set()
        relabel: set[str] = set()
        for ev in events:
            meta = ev.object.get("metadata") or {}
            name = meta.get("name", "")
            if ev.resource == NFR_RESOURCE:
                rules_changed = True
            elif ev.resource == "configmaps":
                g = _cm_group(name)
                if g is not None:
                    groups.add(g)
            elif ev.resource == NF_RESOURCE:
                node = (meta.get("labels") or {}).get(NODE_NAME_LABEL, "")
                if node not in self.specs:
                    continue
                ours = meta.get("namespace") == NFD_NAMESPACE and name == node
                if ours and ev.type == "DELETED":
                    self._written.pop(node, None)
                    republish.add(node)  # the lab's worker publishes again at once
                elif not (ours and self._written.get(node) == meta.get("resourceVersion")):
                    relabel.add(node)  # not the echo of our own write
            elif ev.resource == "nodes" and name in self.specs:
                if ev.type == "ADDED":
                    republish.add(name)
                elif ev.type == "DELETED":
                    self._forget(name)
                elif node_group(ev.object, self.specs[name]) != self._node_group.get(name):
                    republish.add(name)
                elif self._resources_lost(ev.object):
                    relabel.add(name)
        if rules_changed and self._sync_rules():
            relabel.update(n for n in self.specs if n in self._node_group)
        if groups:
            republish.update(n for n, g in self._node_group.items() if g in groups)
        for n in sorted(republish):
            if self._node(n) is not None:
                self._publish(n)
                relabel.add(n)
        for n in sorted(relabel):
            if self._node(n) is not None:
                self._label(n)

    def _node(self, name: str) -> Obj | None:
        try:
            return self.store.get("nodes", None, name)
        except NotFound:
            return None

    def _forget(self, node: str) -> None:
        self._node_group.pop(node, None)
        self._outcomes.pop(node, None)
        self._written.pop(node, None)
        if self.version.at_least(14):  # nfd-gc removes the NodeFeatures of a deleted node
            items, _ = self.store.list(NF_RESOURCE, predicate=lambda o: _targets(o, node))
            for o in items:
                try:
                    self.store.delete(NF_RESOURCE, o["metadata"].get("namespace"), o["metadata"]["name"])
                except NotFound:
                    continue

    def _resources_lost(self, node: Obj) -> bool:
        """The kubelet rewrote status.capacity without the extended resources NFD manages."""
        out = self._outcomes.get(node["metadata"]["name"])
        if out is None or not out.extended_resources:
            return False
        cap = (node.get("status") or {}).get("capacity") or {}
        return any(cap.get(k) != v for k, v in out.extended_resources.items())

    # -- seeding --------------------------------------------------------
    def _seed_configmaps(self) -> None:
        data = {"version": str(self.version), "nodeFeatureAPI": str(V.nodefeature_api(self.version)).lower(),
                "nodeFeatureRules": str(V.rules_supported(self.version)).lower(),
                "hooks": V.hooks_status(self.version),
                "note": "lab only: real clusters are detected from the NodeFeature/Node version annotations"}
        cms: list[tuple[str, dict[str, str]]] = [(VERSION_CONFIGMAP, data)]
        for g in self.scenario.nfd_groups:
            cms.append((HOOKS_CM_PREFIX + g.name, dict(g.hooks)))
            cms.append((FEATURES_CM_PREFIX + g.name, dict(g.feature_files)))
        for name, d in cms:
            obj = {"metadata": {"name": name, "namespace": NFD_NAMESPACE,
                                "labels": {"app.kubernetes.io/name": "node-feature-discovery"}}, "data": d}
            try:
                self.store.create("configmaps", obj)
            except StoreError as exc:  # already there (a restarted sim) or no namespace: say so, keep going
                log.info("lab nfd: configmap %s not seeded: %s", name, exc)

    # -- rules ----------------------------------------------------------
    def _sync_rules(self) -> bool:
        """Recompile changed NodeFeatureRules; True when the compiled set changed."""
        items, _ = self.store.list(NFR_RESOURCE)
        if not V.rules_supported(self.version):
            if items and not self._rules_ignored_logged:
                self._rules_ignored_logged = True
                log.warning("lab nfd: NFD %s has no NodeFeatureRule support (v0.10+); %d rule object(s) ignored",
                            self.version, len(items))
            for obj in items:
                if self._compiled.get(obj["metadata"]["name"], ("",))[0] != obj["metadata"]["resourceVersion"]:
                    self._compiled[obj["metadata"]["name"]] = (obj["metadata"]["resourceVersion"], None)
                    self.master_events.event(object_ref(obj), "Warning", "RuleIgnored",
                                             f"NFD {self.version} has no NodeFeatureRule support (added in v0.10.0)")
            return False
        changed = False
        seen = set()
        for obj in items:
            name, rv = obj["metadata"]["name"], obj["metadata"]["resourceVersion"]
            seen.add(name)
            if name in self._compiled and self._compiled[name][0] == rv:
                continue
            changed = True
            self.stats["rule_compiles"] += 1
            try:
                compiled: CompiledRuleObject | None = compile_rule_objects([obj], self.version)[0]
            except RuleError as exc:
                compiled = None
                log.warning("lab nfd: NodeFeatureRule %s skipped: %s", name, exc)
                self.master_events.event(object_ref(obj), "Warning", "InvalidRule", _clip(str(exc)))
            self._compiled[name] = (rv, compiled)
        for gone in set(self._compiled) - seen:
            del self._compiled[gone]
            changed = True
        self._rules = sorted((c for _, c in self._compiled.values() if c is not None), key=lambda o: o.name)
        return changed

    # -- worker ---------------------------------------------------------
    def _configmap(self, name: str) -> Obj | None:
        try:
            return self.store.get("configmaps", NFD_NAMESPACE, name)
        except NotFound:
            return None

    def _group_local(self, group: str) -> _GroupLocal:
        hooks_cm = self._configmap(HOOKS_CM_PREFIX + group)
        files_cm = self._configmap(FEATURES_CM_PREFIX + group)
        key = (hooks_cm["metadata"]["resourceVersion"] if hooks_cm else "",
               files_cm["metadata"]["resourceVersion"] if files_cm else "")
        cur = self._groups.get(group)
        if cur is not None and cur.key == key:
            return cur
        if cur is not None and cur.dir is not None:
            shutil.rmtree(cur.dir, ignore_errors=True)
        root = self.work_dir / group / f"{key[0] or 'none'}-{key[1] or 'none'}"
        shutil.rmtree(root, ignore_errors=True)
        hooks = _materialise(root / "source.d", (hooks_cm or {}).get("data"), 0o755) if hooks_cm else None
        files = _materialise(root / "features.d", (files_cm or {}).get("data"), 0o644) if files_cm else None
        per_node = any("NODE_NAME" in str(t) for t in ((hooks_cm or {}).get("data") or {}).values())
        cur = _GroupLocal(key, root, hooks, files, per_node)
        self._groups[group] = cur
        return cur

    def _local(self, group: str, node: str) -> NF.LocalOutput:
        gl = self._group_local(group)
        slot = node if gl.per_node else ""
        out = gl.results.get(slot)
        if out is None:
            out = NF.local_output(gl.features_dir, gl.hooks_dir, self.version, hook_timeout=self.hook_timeout,
                                  hook_env=NF.hook_env(node if gl.per_node else None, group),
                                  hook_max_output=HOOK_MAX_OUTPUT)
            if gl.hooks_dir is not None and out.hooks_status == "ran":
                self.stats["hook_runs"] += 1
            gl.results[slot] = out
            self._report_local(group, node if gl.per_node else "", out, gl)
        return out

    def _report_local(self, group: str, node: str, out: NF.LocalOutput, gl: _GroupLocal) -> None:
        where = f" (node {node})" if node else ""
        hooks_cm = self._configmap(HOOKS_CM_PREFIX + group)
        files_cm = self._configmap(FEATURES_CM_PREFIX + group)
        # messages name the ConfigMap, not the lab's scratch directory
        out.hook_warnings = [w.replace(str(gl.hooks_dir), f"ConfigMap {NFD_NAMESPACE}/{HOOKS_CM_PREFIX}{group}")
                             for w in out.hook_warnings]
        out.file_warnings = [w.replace(str(gl.features_dir), f"ConfigMap {NFD_NAMESPACE}/{FEATURES_CM_PREFIX}{group}")
                             for w in out.file_warnings]
        problems: list[tuple[Obj | None, str, str]] = []
        failed = {f"hook {h.name}: {h.error}" for h in out.hooks if h.error}
        other = "HooksIgnored" if out.hooks_status in ("removed", "disabled") else "HookWarning"
        problems += [(hooks_cm, "HookFailed" if w in failed else other, w) for w in out.hook_warnings
                     if "DEPRECATED" not in w]
        problems += [(files_cm, "FeatureFileWarning", w) for w in out.file_warnings]
        for key, value, why, origin in out.dropped:
            cm = hooks_cm if origin == "hook" else files_cm
            problems.append((cm, "LabelDropped", f"label {key}={value!r} dropped by nfd-worker: {why}"))
        for cm, reason, msg in problems:
            log.warning("lab nfd: group %s%s: %s", group, where, msg)
            if cm is not None:
                self.worker_events.event(object_ref(cm), "Warning", reason, _clip(msg + where))

    def _publish(self, node: str) -> None:
        """nfd-worker: (re)write the node's NodeFeature from its features and its group's local source."""
        obj = self._node(node)
        if obj is None:
            return
        group = node_group(obj, self.specs[node])
        self._node_group[node] = group
        local = self._local(group, node)
        features, labels = NF.worker_publication(self._builtin[node], local, self.version)
        nf = make_node_feature(node, features, labels, namespace=NFD_NAMESPACE, worker_version=str(self.version))
        if not V.nodefeature_api(self.version):
            nf["metadata"]["annotations"][TRANSPORT_ANNOTATION] = "grpc"

        def edit(cur: Obj) -> None:
            cur["spec"] = nf["spec"]
            cur["metadata"].setdefault("labels", {}).update(nf["metadata"]["labels"])
            cur["metadata"].setdefault("annotations", {}).update(nf["metadata"]["annotations"])

        try:
            written = self.store.mutate(NF_RESOURCE, NFD_NAMESPACE, node, edit)
        except NotFound:
            written = self.store.create(NF_RESOURCE, nf)
        if self._written.get(node) != written["metadata"]["resourceVersion"]:
            self.stats["publishes"] += 1
        self._written[node] = written["metadata"]["resourceVersion"]

    # -- master ---------------------------------------------------------
    def _node_features(self, node: str) -> list[NodeFeatureSpec]:
        if self.version.at_least(14):  # third-party NodeFeatures count from v0.14 (API on by default)
            items, _ = self.store.list(NF_RESOURCE, predicate=lambda o: _targets(o, node))
        else:
            try:
                items = [self.store.get(NF_RESOURCE, NFD_NAMESPACE, node)]
            except NotFound:
                items = []
        specs = []
        for o in items:
            try:
                specs.append(NodeFeatureSpec.from_object(o))
            except InvalidObject as exc:
                log.warning("lab nfd: NodeFeature %s/%s ignored: %s", o["metadata"].get("namespace"),
                            o["metadata"]["name"], exc)
                self.master_events.event(object_ref(o), "Warning", "InvalidNodeFeature", _clip(str(exc)))
        return specs

    def _label(self, node: str) -> None:
        """nfd-master: compute the node's outcome and patch the Node (stale NFD labels removed)."""
        outcome = compute_node_outcome(self._node_features(node), self._rules, config=self.config)
        v = self.version
        if not v.at_least(15):  # v0.4-v0.14 version annotations on Nodes
            outcome.annotations[self.config.annotation_key("worker.version")] = str(v)
            if self.specs[node].role == "control-plane":
                outcome.annotations[self.config.annotation_key("master.version")] = str(v)
        for r in outcome.rule_errors:
            log.warning("lab nfd: node %s: NodeFeatureRule %s rule %s failed: %s", node, r.object, r.rule, r.error)
            try:
                rule_obj = self.store.get(NFR_RESOURCE, None, r.object)
            except NotFound:
                continue
            self.master_events.event(object_ref(rule_obj), "Warning", "RuleFailed",
                                     _clip(f"failed to process rule {r.rule!r} on node {node}: {r.error}"))
        config = self.config

        def edit(draft: Obj) -> None:
            meta = draft.setdefault("metadata", {})
            old_ann = dict(meta.get("annotations") or {})
            patch = node_patch(draft, outcome, config)
            for part in ("labels", "annotations"):
                target = meta.setdefault(part, {})
                for k in patch[part]["remove"]:
                    target.pop(k, None)
                target.update(patch[part]["add"])
                target.update(patch[part]["replace"])
            _apply_extended_resources(draft, old_ann.get(config.annotation_key(EXTENDED_RESOURCES_ANNOTATION), ""),
                                      outcome.extended_resources)
            _apply_taints(draft, old_ann.get(TAINTS_ANNOTATION, ""), [t.as_dict() for t in outcome.taints])

        try:
            before = self._node(node)
            after = self.store.mutate("nodes", None, node, edit)
        except NotFound:
            return
        self._outcomes[node] = outcome
        if before is None or after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]:
            self.stats["node_updates"] += 1


def _targets(obj: Obj, node: str) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(NODE_NAME_LABEL) == node


def _materialise(d: Path, data: dict[str, Any] | None, mode: int) -> Path:
    """ConfigMap data -> files in `d` (keys are file names; anything path-like is skipped)."""
    d.mkdir(parents=True, exist_ok=True)
    for name, content in (data or {}).items():
        if not name or "/" in name or name in (".", ".."):
            log.warning("lab nfd: ConfigMap key %r is not a file name; skipped", name)
            continue
        p = d / name
        p.write_text(str(content), encoding="utf-8")
        p.chmod(mode)
    return d


def _apply_extended_resources(node: Obj, old_tracked: str, new: dict[str, str]) -> None:
    """status.capacity/allocatable: drop ERs NFD tracked before and no longer produces, set the new ones."""
    status = node.setdefault("status", {})
    for part in ("capacity", "allocatable"):
        res = status.get(part)
        if res is None and not new:
            continue
        res = status.setdefault(part, {})
        for k in _tracked(old_tracked) - set(new):
            res.pop(k, None)
        res.update(new)


def _taint_strings(value: str) -> set[tuple[str, str, str]]:
    out = set()
    for item in value.split(","):
        kv, _, effect = item.rpartition(":")
        if kv:
            key, _, val = kv.partition("=")
            out.add((key, val, effect))
    return out


def _apply_taints(node: Obj, old_tracked: str, new: list[dict[str, str]]) -> None:
    """spec.taints: drop taints NFD tracked before and no longer produces, add the new ones."""
    old = _taint_strings(old_tracked)
    want = {(t["key"], t.get("value", ""), t["effect"]) for t in new}
    spec = node.setdefault("spec", {})
    taints = [t for t in spec.get("taints") or []
              if (t.get("key"), t.get("value", ""), t.get("effect")) not in old - want]
    have = {(t.get("key"), t.get("value", ""), t.get("effect")) for t in taints}
    taints.extend(dict(t) for t in new if (t["key"], t.get("value", ""), t["effect"]) not in have)
    if taints:
        spec["taints"] = taints
    else:
        spec.pop("taints", None)


def _clip(msg: str) -> str:
    return msg if len(msg) <= EVENT_MESSAGE_LIMIT else msg[: EVENT_MESSAGE_LIMIT - 3] + "..."
