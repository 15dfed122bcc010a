"""nfd-master.conf (v0.13+) as far as it changes what lands on a Node, and flag-over-file precedence.

Reference (github:kubernetes-sigs/node-feature-discovery, pkg/nfd-master/nfd-master.go): `NFDConfig` and
`configure` — the file is read with sigs.k8s.io/yaml (YAML -> JSON -> encoding/json: keys match
case-insensitively, unknown keys are ignored, a wrong type fails the whole file and nfd-master does not
start), then every command-line flag that was given replaces the file's value (`m.args.Overrides`).
Fields: extraLabelNs, denyLabelNs (lists), labelWhiteList (a Go regexp string), enableTaints, noPublish,
resourceLabels (v0.13-v0.16), autoDefaultNs (v0.15-v0.17, default true), restrictions (v0.17+:
disableLabels, disableExtendedResources, disableAnnotations, denyNodeFeatureLabels).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from console.nfd import versions as V
from console.nfd.master import MasterConfig
from console.nfd.workerconfig import json_field, regexp_field


class MasterConfigError(ValueError):
    """An nfd-master.conf nfd-master would refuse ("failed to parse config file")."""


def _set(value: Any, key: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise MasterConfigError(f"{key} must be a list of strings, not {value!r}")
    return frozenset(value)


def _bool(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise MasterConfigError(f"{key} must be true or false, not {value!r}")
    return value


def master_config_from_file(data: Mapping[str, Any] | None, base: MasterConfig) -> MasterConfig:
    """`base` with the settings of a parsed nfd-master.conf for `base.version` (before v0.13: no file)."""
    v = base.version
    if data is None or not v.at_least(13):
        return base
    if not isinstance(data, Mapping):
        raise MasterConfigError(f"nfd-master.conf must be a mapping, not {type(data).__name__}")
    out: dict[str, Any] = {}
    for key, attr in (("extraLabelNs", "extra_label_ns"), ("denyLabelNs", "deny_label_ns")):
        if (val := json_field(data, key)) is not None:
            out[attr] = _set(val, key)
    if (val := json_field(data, "resourceLabels")) is not None and V.resource_labels_supported(v):
        out["resource_labels"] = _set(val, "resourceLabels")
    if (val := json_field(data, "enableTaints")) is not None:
        out["enable_taints"] = _bool(val, "enableTaints")
    if (val := json_field(data, "labelWhiteList")) is not None:
        out["label_whitelist"] = regexp_field(val, "labelWhiteList", MasterConfigError)
    auto = json_field(data, "autoDefaultNs")
    if auto is not None and v.at_least(15) and not v.at_least(18) and not _bool(auto, "autoDefaultNs"):
        out["disable_auto_prefix"] = True
    restrictions = json_field(data, "restrictions")
    if restrictions is not None and v.at_least(17):
        if not isinstance(restrictions, Mapping):
            raise MasterConfigError(f"restrictions must be a mapping, not {restrictions!r}")
        for key, attr in (("disableLabels", "disable_labels"),
                          ("disableExtendedResources", "disable_extended_resources"),
                          ("disableAnnotations", "disable_annotations"),
                          ("denyNodeFeatureLabels", "deny_node_feature_labels")):
            if (val := json_field(restrictions, key)) is not None:
                out[attr] = _bool(val, f"restrictions.{key}")
    return dataclasses.replace(base, **out)


def with_flags(config: MasterConfig, flags: Mapping[str, Any]) -> MasterConfig:
    """The flags that were given (MasterConfig field -> value) replace what the file or the cluster set."""
    return dataclasses.replace(config, **{k: v for k, v in flags.items() if v is not None})
