"""One upstream control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) per test package."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from console.lab.controlplane import ControlPlane
from console.lab.upstream.build import KUBE, binary


@pytest.fixture(scope="package")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    cp = ControlPlane(tmp_path_factory.mktemp("controlplane"), binary(KUBE))
    try:
        cp.start()
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="package")
def kubectl(control_plane: ControlPlane) -> Iterator[object]:
    kubeconfig = control_plane.root / "admin.kubeconfig"

    def run(*args: str, check: bool = True, user: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        extra = [f"--kubeconfig={control_plane.root / (user + '.kubeconfig')}"] if user else []
        proc = subprocess.run(["kubectl", *extra, *args], env=env, capture_output=True, text=True, timeout=120)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
        return proc

    yield run

