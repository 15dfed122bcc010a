"""This host's features in NFD's model and label format (read from /proc, /sys and /etc under a root).

`discover(root)` -> Discovery; `discovery_labels(d)` -> the labels nfd-worker would publish.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from console.discovery.cpu import cpu_labels, discover_cpu
from console.discovery.devices import (
    discover_memory,
    discover_network,
    discover_pci,
    discover_storage,
    discover_system,
    discover_usb,
    memory_labels,
    network_labels,
    pci_labels,
    storage_labels,
    system_labels,
    usb_labels,
)
from console.discovery.kernel import discover_kernel, kernel_labels
from console.discovery.paths import HostPaths
from console.nfd.labels import FEATURE_NS
from console.nfd.model import Features

NFD_DIR = "etc/kubernetes/node-feature-discovery"


@dataclass
class Discovery:
    features: Features
    local_labels: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    node_name: str | None = None


def discover(root: str | os.PathLike[str] = "/", *, nfd_version: str | None = None,
             hooks_enabled: bool | None = None) -> Discovery:
    """Discover every source under `root` (features.d and source.d from root/etc/kubernetes/...)."""
    from console.nfd.local import local_source

    paths = HostPaths.under(root)
    features = Features()
    warnings: list[str] = []
    for fn in (discover_cpu, discover_kernel, discover_memory, discover_pci, discover_usb, discover_storage,
               discover_network, discover_system):
        try:
            fn(paths, features, warnings)
        except OSError as exc:
            warnings.append(f"{fn.__name__.removeprefix('discover_')}: {exc}")
    node = os.environ.get("NODE_NAME")
    if node:
        features.attributes["system.name"] = {"nodename": node}
    nfd_dir = paths.root / NFD_DIR
    local = local_source(nfd_dir / "features.d", nfd_dir / "source.d", nfd_version, hooks_enabled=hooks_enabled)
    for k, v in local.features.items():
        features.attributes[k] = v
    warnings.extend(w for w in local.warnings if "does not exist" not in w)
    return Discovery(features, dict(local.labels), warnings, node)


def discovery_labels(d: Discovery) -> dict[str, str]:
    """Labels as the worker publishes them (v0.15+: fully prefixed), built-ins then local (local wins)."""
    f = d.features
    labels: dict[str, str] = {}
    for part in (cpu_labels(f), kernel_labels(f), memory_labels(f), network_labels(f), pci_labels(f),
                 storage_labels(f), system_labels(f), usb_labels(f)):
        labels.update({f"{FEATURE_NS}/{k}": v for k, v in part.items()})
    labels.update(d.local_labels)
    return dict(sorted(labels.items()))
