"""Previews for the hook/feature-file and rule editors: the pure NFD engine run over edited text
and over the cluster's NodeFeatures and Nodes (passed in as dicts; no network, no UI).

- `preview_file`: what one hook or feature file yields on a node under an NFD version (runs a hook
  with a timeout and an output cap in a scratch directory).
- `hook_to_feature_file`: a hook's output turned into a feature file, for NFD versions without hooks.
- `dry_run_rule`: an edited NodeFeatureRule evaluated with the cluster's other rules on every node,
  compared with what each node has now (labels, annotations, taints, extended resources).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console.nfd import versions as V
from console.nfd.hooks import DEFAULT_MAX_OUTPUT, HookResult, run_hook
from console.nfd.labels import ANNOTATION_NS, FEATURE_NS, DroppedItem
from console.nfd.local import local_source
from console.nfd.master import (
    EXTENDED_RESOURCES_ANNOTATION,
    TAINTS_ANNOTATION,
    MasterConfig,
    NodeOutcome,
    compute_node_outcome,
    node_patch,
)
from console.nfd.model import InvalidObject
from console.nfd.rules import RuleError, compile_rule_objects, object_name
from console.nfd.workerconfig import WorkerConfig, hooks_enabled

PREVIEW_TIMEOUT = 5.0


def resolve_version(override: str | None, detected: str | None) -> tuple[V.NfdVersion, str]:
    """The NFD version to preview with and where it came from (settings win over the cluster)."""
    if override:
        return V.parse_version(override), f"NFD {V.parse_version(override)} (from settings)"
    if detected:
        try:
            return V.parse_version(detected), f"NFD {V.parse_version(detected)} (detected on the cluster)"
        except V.UnsupportedVersion:
            return V.CURRENT, f"NFD {V.CURRENT} (cluster reports {detected!r}, not modelled)"
    return V.CURRENT, f"NFD {V.CURRENT} (not detected on the cluster; set nfd_version to override)"


def hooks_note(v: V.NfdVersion) -> str:
    """One line (it heads the hooks screen, 78 columns at 80×24) on whether this NFD version runs hooks."""
    status = V.hooks_status(v)
    if status == "removed":
        return f"NFD {v}: no hooks (removed in v0.17); c makes a hook a feature file"
    if status == "disabled-by-default":
        return f"NFD {v}: hooks off unless sources.local.hooksEnabled: true (v0.14+)"
    if V.hooks_labels_lost(v):
        return f"NFD {v} has a bug: hooks produce no labels (fixed in v0.15.2)"
    return f"NFD {v} runs hooks (deprecated since v0.12)" if v.at_least(12) else f"NFD {v} runs hooks"


@dataclass
class FilePreview:
    kind: str
    name: str
    version: str
    labels: dict[str, str] = field(default_factory=dict)
    dropped: list[DroppedItem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    hook: HookResult | None = None
    note: str = ""  # e.g. "NFD v0.18.1 has no hooks: as a feature file this output would give"
    extended_resources: dict[str, str] = field(default_factory=dict)  # nfd-master -resource-labels
    if_enabled: dict[str, str] = field(default_factory=dict)  # a hook the worker does not run: its labels if it did

    @property
    def failed(self) -> bool:
        return self.hook is not None and not self.hook.ok


def preview_file(kind: str, name: str, content: str, version: V.NfdVersion | str | None, *,
                 timeout: float = PREVIEW_TIMEOUT, max_output: int = DEFAULT_MAX_OUTPUT,
                 config: MasterConfig | None = None, node_name: str = "node",
                 env: Mapping[str, str] | None = None, worker: WorkerConfig | None = None) -> FilePreview:
    """Labels one hook (run here, safely) or feature file gives a node under NFD `version`.

    With `worker` (the cluster's nfd-worker configuration) a hook the worker does not run
    (sources.local.hooksEnabled off) yields no labels; what it would give is in `if_enabled`.
    Without it, hooks are run as if enabled and `note` says when the version's default is off.
    """
    v = config.version if config else V.parse_version(version)
    config = config or MasterConfig(version=v)
    wk = worker or WorkerConfig()
    out = FilePreview(kind, name, str(v))
    env = dict(env if env is not None else os.environ)
    env.setdefault("NODE_NAME", node_name)
    with tempfile.TemporaryDirectory(prefix="console-preview-") as tmp:
        features_dir, hooks_dir = Path(tmp, "features.d"), Path(tmp, "source.d")
        features_dir.mkdir()
        hooks_dir.mkdir()
        if kind == "feature":
            (features_dir / name).write_text(content)
            res = local_source(features_dir, None, config=config, node_name=node_name, worker=wk)
            out.labels, out.dropped, out.warnings = res.labels, res.dropped, res.warnings
            out.extended_resources = res.extended_resources
            return out
        hook = hooks_dir / name
        hook.write_text(content)
        hook.chmod(0o755)
        status = V.hooks_status(v)
        if status != "removed":
            res = local_source(None, hooks_dir, config=config, node_name=node_name, hooks_enabled=True,
                               hook_timeout=timeout, hook_max_output=max_output, hook_env=env, worker=wk)
            out.labels, out.dropped, out.hook = res.labels, res.dropped, (res.hooks[0] if res.hooks else None)
            out.warnings, out.extended_resources = res.warnings, res.extended_resources
            enabled = hooks_enabled(wk, v)
            runs = enabled is True or (enabled is None and status == "enabled")
            if worker is not None and not runs:
                out.if_enabled, out.labels, out.extended_resources = out.labels, {}, {}
                why = "false" if enabled is False else f"unset, and off by default in NFD {v}"
                out.note = (f"this cluster's nfd-worker does not run hooks (sources.local.hooksEnabled: {why}): "
                            "no labels; with hooksEnabled: true it would give the labels in if_enabled")
            elif status == "disabled-by-default" and worker is None:
                out.note = f"NFD {v} only runs this with sources.local.hooksEnabled: true (off by default)"
            return out
        # v0.17+: nfd-worker ignores source.d; show what its output would give as a feature file
        out.hook = run_hook(hook, timeout=timeout, max_output=max_output, env=env)
        out.note = f"NFD {v} has no hooks: nfd-worker ignores it. As a feature file, its output would give:"
        if out.hook.ok:
            (features_dir / name).write_text(out.hook.stdout)
            res = local_source(features_dir, None, config=config, node_name=node_name, worker=wk)
            out.labels, out.dropped, out.warnings = res.labels, res.dropped, res.warnings
            out.extended_resources = res.extended_resources
        else:
            out.warnings = [f"hook {name}: {out.hook.error}"]
    return out


def hook_to_feature_file(name: str, hook: HookResult, version: V.NfdVersion | str | None,
                         now: datetime | None = None) -> str:
    """A feature file with the hook's output and a header saying where it came from."""
    if not hook.ok:
        raise ValueError(f"hook {name} did not run cleanly ({hook.error}); fix it before converting")
    v = V.parse_version(version)
    when = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [line.strip() for line in hook.stdout.splitlines() if line.strip()]
    header = [
        f"# Converted from hook {name!r} by console at {when} for NFD {v}, which has no hooks.",
        "# This is the hook's output at that time: it no longer updates by itself. To keep it current,",
        "# write this file from a DaemonSet or CronJob (atomically, with '# +expiry-time=').",
    ]
    if not V.feature_file_directives(v):
        header = []  # before v0.14 '#' lines are not comments; they would become labels
    return "\n".join([*header, *lines]) + "\n"


# -- rule dry-run -------------------------------------------------------------------------------------------


@dataclass
class Change:
    """Added, changed (old, new) and removed entries of one map on one node."""

    added: dict[str, str] = field(default_factory=dict)
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    removed: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def lines(self) -> list[tuple[str, str]]:
        """("+"|"~"|"-", "key=value") rows, for display."""
        out = [("+", f"{k}={v}") for k, v in sorted(self.added.items())]
        out += [("~", f"{k}={o} → {n}") for k, (o, n) in sorted(self.changed.items())]
        out += [("-", f"{k}={v}") for k, v in sorted(self.removed.items())]
        return out


@dataclass
class NodeChange:
    node: str
    labels: Change = field(default_factory=Change)
    annotations: Change = field(default_factory=Change)
    taints: Change = field(default_factory=Change)
    extended_resources: Change = field(default_factory=Change)
    matched: list[str] = field(default_factory=list)  # rules of the edited object that matched here
    errors: list[str] = field(default_factory=list)  # evaluation errors of the edited object's rules
    dropped: list[DroppedItem] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.labels or self.annotations or self.taints or self.extended_resources)

    def sections(self) -> list[tuple[str, Change]]:
        return [("labels", self.labels), ("annotations", self.annotations), ("taints", self.taints),
                ("extended resources", self.extended_resources)]


@dataclass
class RuleDryRun:
    rule: str
    version: str
    nodes: list[NodeChange] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str = ""  # the rule cannot be compiled: nothing was evaluated

    @property
    def affected(self) -> list[NodeChange]:
        return [n for n in self.nodes if n.changed]


def _diff(old: Mapping[str, str], new: Mapping[str, str], managed: set[str]) -> Change:
    c = Change()
    for k, val in new.items():
        if k not in old:
            c.added[k] = val
        elif old[k] != val:
            c.changed[k] = (old[k], val)
    for k in managed:
        if k in old and k not in new:
            c.removed[k] = old[k]
    return c


def _from_patch(p: Mapping[str, Any], old: Mapping[str, str], skip_ns: str = "") -> Change:
    keep = (lambda k: not k.split("/")[0].endswith(skip_ns)) if skip_ns else (lambda k: True)
    return Change(
        added={k: v for k, v in p["add"].items() if keep(k)},
        changed={k: (old[k], v) for k, v in p["replace"].items() if keep(k)},
        removed={k: old[k] for k in p["remove"] if keep(k)},
    )


def _tracked(ann: Mapping[str, str], key: str) -> set[str]:
    raw = ann.get(key, "")
    return {n if "/" in n else f"{FEATURE_NS}/{n}" for n in raw.split(",") if n} if raw else set()


def node_change(node_name: str, node: Mapping[str, Any] | None, outcome: NodeOutcome, config: MasterConfig,
                rule: str) -> NodeChange:
    """What nfd-master would change on `node` to reach `outcome`."""
    node = node or {"metadata": {"name": node_name}}
    meta = node.get("metadata") or {}
    old_labels, old_ann = meta.get("labels") or {}, meta.get("annotations") or {}
    patch = node_patch(node, outcome, config)
    nc = NodeChange(node_name)
    nc.labels = _from_patch(patch["labels"], old_labels)
    # NFD's own bookkeeping annotations change whenever labels do; show only the rules' annotations
    nc.annotations = _from_patch(patch["annotations"], old_ann, skip_ns=ANNOTATION_NS)
    old_taints = {f"{t['key']}:{t.get('effect', '')}": t.get("value", "")
                  for t in (node.get("spec") or {}).get("taints") or []}
    new_taints = {f"{t.key}:{t.effect}": t.value for t in outcome.taints}
    managed_taints = {s.split("=")[0] + ":" + s.rsplit(":", 1)[-1] if "=" in s else s
                      for s in old_ann.get(TAINTS_ANNOTATION, "").split(",") if s}
    nc.taints = _diff(old_taints, new_taints, managed_taints)
    capacity = (node.get("status") or {}).get("capacity") or {}
    managed_ers = _tracked(old_ann, config.annotation_key(EXTENDED_RESOURCES_ANNOTATION))
    nc.extended_resources = _diff({k: str(v) for k, v in capacity.items()}, outcome.extended_resources, managed_ers)
    for r in outcome.rule_results:
        if r.object == rule:
            if r.error:
                nc.errors.append(f"rule {r.rule!r}: {r.error}")
            elif r.matched:
                nc.matched.append(r.rule)
    nc.dropped = list(outcome.dropped)
    return nc


def dry_run_rule(rule_obj: Mapping[str, Any], cluster_rules: Sequence[Mapping[str, Any]],
                 node_features_by_node: Mapping[str, Sequence[Mapping[str, Any]]],
                 nodes: Mapping[str, Mapping[str, Any]], config: MasterConfig) -> RuleDryRun:
    """Evaluate `rule_obj` (replacing the cluster rule of the same name) with the other rules, on every node."""
    name = object_name(rule_obj)
    out = RuleDryRun(name, str(config.version))
    objs = [r for r in cluster_rules if object_name(r) != name]
    objs.append(rule_obj)
    objs.sort(key=object_name)
    try:
        compiled = compile_rule_objects(objs, config.version)
    except (RuleError, InvalidObject) as e:
        out.error = str(e)
        return out
    missing = sorted(set(nodes) - set(node_features_by_node))
    if missing:
        out.warnings.append(f"no NodeFeature for {', '.join(missing)}: nfd-master does not label "
                            f"{'it' if len(missing) == 1 else 'them'} from rules")
    for node_name in sorted(node_features_by_node):
        try:
            outcome = compute_node_outcome(node_features_by_node[node_name], compiled, config=config)
        except InvalidObject as e:
            out.warnings.append(f"{node_name}: its NodeFeature is invalid ({e}); skipped")
            continue
        out.nodes.append(node_change(node_name, nodes.get(node_name), outcome, config, name))
        for w in outcome.warnings:
            if w not in out.warnings:
                out.warnings.append(w)
    return out



# -- new-rule templates ---------------------------------------------------------------------------------------

RULE_TEMPLATES: dict[str, str] = {
    "kernel modules loaded": """\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: kernel-modules
spec:
  rules:
    - name: "modules A and B loaded"
      labels:
        example.dev/kernel-modules-ready: "true"
      matchFeatures:
        - feature: kernel.loadedmodule
          matchExpressions:
            vfio: {op: Exists}
            vfio_pci: {op: Exists}
""",
    "AVX512F nodes": """\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: avx512
spec:
  rules:
    - name: "cpu has AVX512F"
      labels:
        example.dev/avx512: "true"
      matchFeatures:
        - feature: cpu.cpuid
          matchExpressions:
            AVX512F: {op: Exists}
""",
    "taint nodes with a PCI vendor": """\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: pci-vendor-taint
spec:
  rules:
    - name: "NVIDIA devices present"
      labels:
        example.dev/nvidia: "true"
      taints:
        - key: example.dev/nvidia
          value: "true"
          effect: NoSchedule
      matchFeatures:
        - feature: pci.device
          matchExpressions:
            vendor: {op: In, value: ["10de"]}
""",
    "extended resource from an attribute": """\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: cpu-sockets-resource
spec:
  rules:
    - name: "sockets as an extended resource"
      extendedResources:
        example.dev/cpu-sockets: "@cpu.topology.socket_count"
      matchFeatures:
        - feature: cpu.topology
          matchExpressions:
            socket_count: {op: Exists}
""",
}
