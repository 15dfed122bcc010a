"""What the cluster runs for NFD (pure, no I/O) — MINIMAL STAND-IN from the `files` slice.

The `discovery` slice owns this module; this copy holds only what console/kube/nfdfiles.py needs, under
the contract's names (HELPERS.md), so the lead takes discovery's version at the merge.
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
    source: Literal["hostPath", "configMap", "none", "other"]
    mount_path: str
    volume: str = ""
    host_path: str = ""
    config_map: str = ""
    default_mode: int | None = None
    items: tuple[tuple[str, str, int | None], ...] = ()
    sub_path: str = ""


@dataclass(frozen=True)
class WorkerConfig:
    sleep_interval: float = 60.0
    hooks_enabled: bool | None = None


@dataclass(frozen=True)
class NfdDeployment:
    namespace: str
    version: V.NfdVersion | None
    version_source: str
    master: Any
    worker: Any
    node_feature_api: bool
    mounts: Mapping[FileKind, Mount] = field(default_factory=dict)

    def master_config(self) -> MasterConfig:
        return MasterConfig(version=self.version or V.CURRENT)

    def worker_config(self) -> WorkerConfig:
        return WorkerConfig()
