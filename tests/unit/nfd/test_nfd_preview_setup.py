"""Which master/worker configuration a preview uses: NFD defaults < the cluster's deployment < files < flags.

The cluster side is an object with the NfdDeployment contract (console/nfd/deployment.py: version,
version_source, namespace, master_config(), worker_config()), as `discover_nfd` returns it. Reference for
the precedence inside nfd-master: github:kubernetes-sigs/node-feature-discovery pkg/nfd-master/nfd-master.go
`configure` (flags override the config file).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from console.cli_nfd_flags import FlagStop, resolve
from console.nfd.master import MasterConfig
from console.nfd.versions import NfdVersion, parse_version
from console.nfd.workerconfig import WorkerConfig


@dataclass
class Deployment:
    version: NfdVersion | None
    namespace: str = "gpu-operator"
    version_source: str = "image registry.k8s.io/nfd/node-feature-discovery:v0.16.4"

    def master_config(self) -> MasterConfig:
        return MasterConfig(version=self.version or parse_version("v0.19.0"), extra_label_ns=frozenset({"nvidia.com"}),
                            namespace=self.namespace)

    def worker_config(self) -> WorkerConfig:
        return WorkerConfig(sleep_interval=60.0, hooks_enabled=True)


def args(*argv: str) -> argparse.Namespace:
    from console import cli

    return cli.build_parser().parse_args(["nfd", "local", "--features-dir", "/x", *argv])


def test_cluster_configuration_is_used() -> None:
    setup = resolve(args("--from-cluster"), worker_side=True, deployment=Deployment(parse_version("v0.16.4")))
    assert setup.config.version == parse_version("v0.16.4") and setup.config.extra_label_ns == {"nvidia.com"}
    assert setup.config.namespace == "gpu-operator" and setup.worker.hooks_enabled is True
    assert setup.source == "cluster: NFD v0.16.4 in gpu-operator"


def test_files_then_flags_override_the_cluster(tmp_path: Path) -> None:
    conf = tmp_path / "nfd-master.conf"
    conf.write_text("extraLabelNs: [example.com]\nenableTaints: true\n")
    wconf = tmp_path / "nfd-worker.conf"
    wconf.write_text("sources: {local: {hooksEnabled: false}}\n")
    dep = Deployment(parse_version("v0.16.4"))
    setup = resolve(args("--from-cluster", "--master-config", str(conf), "--worker-config", str(wconf)),
                    worker_side=True, deployment=dep)
    assert setup.config.extra_label_ns == {"example.com"} and setup.config.enable_taints
    assert setup.worker.hooks_enabled is False
    flagged = resolve(args("--from-cluster", "--master-config", str(conf), "--extra-label-ns=a.io",
                           "--enable-taints=false", "--nfd-version", "v0.15.0"), worker_side=True, deployment=dep)
    assert flagged.config.extra_label_ns == {"a.io"} and not flagged.config.enable_taints
    assert flagged.config.version == parse_version("v0.15.0")


def test_unknown_cluster_version_needs_nfd_version() -> None:
    with pytest.raises(FlagStop) as exc:
        resolve(args("--from-cluster"), worker_side=True, deployment=Deployment(None))
    assert exc.value.code == 2 and "--nfd-version" in str(exc.value)
    ok = resolve(args("--from-cluster", "--nfd-version", "v0.14.0"), worker_side=True, deployment=Deployment(None))
    assert ok.config.version == parse_version("v0.14.0")


def test_without_from_cluster_the_deployment_is_not_used() -> None:
    setup = resolve(args(), worker_side=True, deployment=replace(Deployment(parse_version("v0.16.4"))))
    assert setup.config == MasterConfig() and setup.source == "defaults"
