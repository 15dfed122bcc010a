"""What the cluster runs for NFD (pure, no I/O) — a MINIMAL COPY of the issue-11 contract.

The `discovery` slice owns this module (its full version adds WorkerConfig, master flag parsing, as_dict);
this copy has only the names and fields (and trivial methods) the ConfigMap-volume file target and the hooks
screen use, so the `cmfiles` slice can be built and tested before the merge. At the merge the lead takes
discovery's version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from console.nfd import versions as V
from console.nfd.master import MasterConfig

FileKind = Literal["hook", "feature"]


@dataclass(frozen=True)
class Mount:
    """The nfd-worker volume mounted at source.d / features.d."""

    kind: FileKind
    source: Literal["hostPath", "configMap", "none", "other"]  # none: not mounted; other: emptyDir, projected, …
    mount_path: str  # in the worker container, e.g. /etc/kubernetes/node-feature-discovery/features.d
    volume: str = ""  # the volume's name in the DaemonSet
    host_path: str = ""  # hostPath: the directory on each node
    config_map: str = ""  # configMap: its name (in the DaemonSet's namespace)
    default_mode: int | None = None  # configMap defaultMode (None = unset: the kubelet's 0644)
    items: tuple[tuple[str, str, int | None], ...] = ()  # configMap items: (key, path, mode)
    sub_path: str = ""


@dataclass(frozen=True)
class Workload:
    kind: str  # Deployment | DaemonSet
    namespace: str
    name: str
    container: str
    image: str
    args: tuple[str, ...]
    config: Mapping[str, Any]
    config_source: str = ""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    affinity: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkerConfig:
    sleep_interval: float = 60.0  # core.sleepInterval (Go duration) / -sleep-interval
    hooks_enabled: bool | None = None  # sources.local.hooksEnabled (v0.12–v0.16); None = the version's default
    label_whitelist: str | None = None
    sources: tuple[str, ...] | None = None
    no_publish: bool = False


@dataclass(frozen=True)
class NfdDeployment:
    namespace: str
    version: V.NfdVersion | None
    version_source: str
    master: Workload | None
    worker: Workload | None
    node_feature_api: bool
    mounts: Mapping[FileKind, Mount]

    def master_config(self) -> MasterConfig:
        return MasterConfig(version=self.version or V.CURRENT, namespace=self.namespace)

    def worker_config(self) -> WorkerConfig:
        return WorkerConfig()

    def status_line(self) -> str:
        return f"NFD {self.version or '(version unknown)'} in {self.namespace}"
