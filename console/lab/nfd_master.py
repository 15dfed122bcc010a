"""The lab's nfd-master: NodeFeatures (or what workers sent over gRPC) + NodeFeatureRules -> Node updates.

Mixed into console/lab/nfd_sim.NfdSim (its docstring says what the master does); the options come from the
deployed Deployment and nfd-master-conf (`NfdSim.running.master`).
"""

from __future__ import annotations

import logging
from typing import Any

from console.lab.apistore import ApiStore
from console.lab.nfd_deploy import Running
from console.lab.recorder import EventRecorder, object_ref
from console.lab.scenarios import NodeSpec
from console.lab.store import NotFound, Obj
from console.nfd import versions as V
from console.nfd.labels import FEATURE_NS
from console.nfd.master import (
    EXTENDED_RESOURCES_ANNOTATION,
    TAINTS_ANNOTATION,
    NodeOutcome,
    compute_node_outcome,
    node_patch,
)
from console.nfd.model import NODE_NAME_LABEL, InvalidObject, NodeFeatureSpec
from console.nfd.rules import CompiledRuleObject, RuleError, compile_rule_objects

log = logging.getLogger(__name__)

NF_RESOURCE = "nodefeatures.nfd.k8s-sigs.io"
NFR_RESOURCE = "nodefeaturerules.nfd.k8s-sigs.io"
EVENT_MESSAGE_LIMIT = 1024


class NfdMasterMixin:
    # the simulation's state and lookups (console/lab/nfd_sim.py NfdSim, which mixes this class in and sets
    # them), declared here so the master need not import the simulation back
    store: ApiStore
    namespace: str
    version: V.NfdVersion
    running: Running
    specs: dict[str, NodeSpec]
    stats: dict[str, int]
    master_events: EventRecorder
    _workers: dict[str, Any]
    _grpc: dict[str, NodeFeatureSpec]

    def _node(self, name: str) -> Obj | None:
        raise NotImplementedError

    def _init_master(self) -> None:
        self._written: dict[str, str] = {}  # node -> resourceVersion of the NodeFeature its worker wrote
        self._outcomes: dict[str, NodeOutcome] = {}
        self._compiled: dict[str, tuple[str, CompiledRuleObject | None]] = {}  # name -> (rv, compiled)
        self._rules: list[CompiledRuleObject] = []
        self._rules_ignored_logged = False

    def _forget(self, node: str) -> None:
        self._workers.pop(node, None)
        self._grpc.pop(node, None)
        self._outcomes.pop(node, None)
        self._written.pop(node, None)
        if self.version.at_least(14) and self.running.api:  # nfd-gc removes the NodeFeatures of a deleted node
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
                self.master_events.event(object_ref(obj), "Warning", "InvalidRule", clip(str(exc)))
            self._compiled[name] = (rv, compiled)
        for gone in set(self._compiled) - seen:
            del self._compiled[gone]
            changed = True
        self._rules = sorted((c for _, c in self._compiled.values() if c is not None), key=lambda o: o.name)
        return changed

    # -- labelling ------------------------------------------------------
    def _node_features(self, node: str) -> list[NodeFeatureSpec]:
        if not self.running.api:
            sent = self._grpc.get(node)
            return [sent] if sent is not None else []
        if self.version.at_least(14):  # third-party NodeFeatures in any namespace count from v0.14
            items, _ = self.store.list(NF_RESOURCE, predicate=lambda o: _targets(o, node))
        else:
            try:
                items = [self.store.get(NF_RESOURCE, self.namespace, node)]
            except NotFound:
                items = []
        specs = []
        for o in items:
            try:
                specs.append(NodeFeatureSpec.from_object(o))
            except InvalidObject as exc:
                log.warning("lab nfd: NodeFeature %s/%s ignored: %s", o["metadata"].get("namespace"),
                            o["metadata"]["name"], exc)
                self.master_events.event(object_ref(o), "Warning", "InvalidNodeFeature", clip(str(exc)))
        return specs

    def _label(self, node: str) -> None:
        """nfd-master: compute the node's outcome and patch the Node (stale NFD labels removed)."""
        master = self.running.master
        if master is None or master.no_publish:
            return
        if not self.running.api and node not in self._grpc:
            return  # gRPC: the master updates a node only when its worker sends; until then its labels stay
        config = master.config
        outcome = compute_node_outcome(self._node_features(node), self._rules, config=config)
        v = self.version
        if not v.at_least(15):  # v0.4-v0.14 version annotations on Nodes
            outcome.annotations[config.annotation_key("worker.version")] = str(v)
            if self.specs[node].role == "control-plane":
                outcome.annotations[config.annotation_key("master.version")] = str(v)
        for r in outcome.rule_errors:
            log.warning("lab nfd: node %s: NodeFeatureRule %s rule %s failed: %s", node, r.object, r.rule, r.error)
            try:
                rule_obj = self.store.get(NFR_RESOURCE, None, r.object)
            except NotFound:
                continue
            self.master_events.event(object_ref(rule_obj), "Warning", "RuleFailed",
                                     clip(f"failed to process rule {r.rule!r} on node {node}: {r.error}"))

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


def _tracked(value: str) -> set[str]:
    return {n if "/" in n else f"{FEATURE_NS}/{n}" for n in value.split(",") if n}


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


def clip(msg: str) -> str:
    return msg if len(msg) <= EVENT_MESSAGE_LIMIT else msg[: EVENT_MESSAGE_LIMIT - 3] + "..."
