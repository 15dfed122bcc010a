"""The `local` source end to end: feature files + hooks -> nfd-worker -> nfd-master -> node labels."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from console.nfd import versions as V
from console.nfd.featurefile import read_features_dir
from console.nfd.hooks import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, HookResult, run_hooks
from console.nfd.labels import DroppedItem, worker_label_check
from console.nfd.master import MasterConfig, compute_node_outcome
from console.nfd.model import Features, make_node_feature
from console.nfd.regex import compile_regexp
from console.nfd.workerconfig import WorkerConfig, local_labels_enabled

LABEL_FEATURE = "local.label"
RAW_FEATURE = "local.feature"


@dataclass
class LocalResult:
    labels: dict[str, str]  # as they would land on the node
    features: dict[str, dict[str, str]]  # local.label / local.feature attribute elements
    warnings: list[str] = field(default_factory=list)
    dropped: list[DroppedItem] = field(default_factory=list)
    hooks: list[HookResult] = field(default_factory=list)
    hooks_status: str = "none"
    version: str = ""
    extended_resources: dict[str, str] = field(default_factory=dict)  # nfd-master -resource-labels

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "labels": self.labels,
            "features": self.features,
            "warnings": self.warnings,
            "dropped": [d.as_dict() for d in self.dropped],
            "hooks_status": self.hooks_status,
            "hooks": [h.as_dict() for h in self.hooks],
            "extendedResources": self.extended_resources,
        }


def local_source(features_dir: str | os.PathLike[str] | None, hooks_dir: str | os.PathLike[str] | None = None,
                 version: V.NfdVersion | str | None = None, extra_label_ns: Iterable[str] = (), *,
                 hooks_enabled: bool | None = None, hook_timeout: float = DEFAULT_TIMEOUT,
                 hook_max_output: int = DEFAULT_MAX_OUTPUT, hook_env: Mapping[str, str] | None = None,
                 config: MasterConfig | None = None, node_name: str = "node", now: datetime | None = None,
                 worker: WorkerConfig | None = None) -> LocalResult:
    """Labels the local source (features.d + source.d) puts on a node under NFD `version`.

    `worker` is nfd-worker's configuration: its `hooks_enabled` applies unless `hooks_enabled` is given,
    `sources` may leave the local label source out, `label_whitelist` filters in the worker (the master's
    whitelist is `config.label_whitelist`).
    """
    v = V.parse_version(version) if config is None else config.version
    config = config or MasterConfig(version=v, extra_label_ns=frozenset(extra_label_ns))
    worker = worker or WorkerConfig()
    if hooks_enabled is None and v.at_least(12):
        hooks_enabled = worker.hooks_enabled
    res = LocalResult(labels={}, features={}, version=str(v))
    labels: dict[str, str] = {}
    raw: dict[str, str] = {}
    if features_dir is not None:
        fd = read_features_dir(features_dir, v, now)
        labels.update(fd.labels)
        raw.update(fd.features)
        res.warnings.extend(fd.warnings)
    if hooks_dir is not None:
        hr = run_hooks(hooks_dir, v, enabled=hooks_enabled, timeout=hook_timeout, max_output=hook_max_output,
                       env=hook_env, now=now)
        res.hooks, res.hooks_status = hr.results, hr.status
        res.warnings.extend(hr.warnings)
        for k, val in hr.labels.items():  # hooks override feature files
            if k in labels and labels[k] != val:
                res.warnings.append(f"hook output overrides feature-file label {k!r} ({labels[k]!r} -> {val!r})")
            labels[k] = val
        raw.update(hr.features)

    features = Features()
    if V.rules_supported(v):  # the FeatureSource model dates from v0.10
        features.attributes[LABEL_FEATURE] = dict(labels)
        if V.feature_file_no_label_directives(v):
            features.attributes[RAW_FEATURE] = dict(raw)
        res.features = {k: dict(sorted(val.items())) for k, val in features.attributes.items()}

    worker_labels: dict[str, str] = {}
    publish = local_labels_enabled(worker.sources, v)
    if not publish and labels:
        res.warnings.append(f"the worker's label sources ({','.join(worker.sources or ())}) leave out 'local': "
                            f"nfd-worker publishes none of these {len(labels)} label(s)")
    whitelist = compile_regexp(worker.label_whitelist) if worker.label_whitelist else None
    for k, val in labels.items() if publish else ():
        reason = worker_label_check(k, val)
        base = k.split("/", 1)[1] if "/" in k else k
        if not reason and whitelist is not None and not whitelist.match_string(base):
            reason = f"{base} does not match the worker's core.labelWhiteList ({worker.label_whitelist})"
        if reason:
            res.dropped.append(DroppedItem(k, val, reason, stage="worker"))
        else:
            worker_labels[k] = val
    nf = make_node_feature(node_name, features, worker_labels, namespace=config.namespace)
    outcome = compute_node_outcome([nf], (), config=config)
    res.labels = dict(sorted(outcome.labels.items()))
    res.extended_resources = dict(sorted(outcome.extended_resources.items()))
    res.warnings.extend(outcome.warnings)
    res.dropped.extend(outcome.dropped)
    if worker.no_publish:
        res.warnings.append("nfd-worker runs with core.noPublish (-no-publish): it publishes none of these labels")
    for d in res.dropped:
        res.warnings.append(f"label {d.key}={d.value!r} dropped by nfd-{d.stage}: {d.reason}")
    return res
