"""Upstream nfd-worker (v0.19.0, console/lab/upstream/nfd-v0.19.0) on a lab node, and the real nfd-master labelling
the node from what it found: issue 22's design for the CPU, tried end to end.

nfd-worker reads the CPU with the CPUID instruction (klauspost/cpuid), never from a file, so a node's CPU model
comes from the lab's CPU: `cpuid-run` (console/lab/cpu) makes CPUID fault in the worker and answers it with the
node's model. The rest of what the worker reads is the node's tree in its sandbox (console/lab/sandbox.py: the
node's /proc files over a procfs, /host-sys, /host-etc as its DaemonSet mounts them). Run as the DaemonSet runs it
but outside a pod: `-kubeconfig`, NODE_NAME, KUBERNETES_NAMESPACE, and `-oneshot` (one discovery, one publish); the
NodeFeature is owned by the Node (`-owner-refs=node`) as there is no pod to own it.

The labels are NFD's: the worker's cpu, kernel and system sources (source/cpu, source/kernel, source/system at
v0.19.0) put into the NodeFeature, which the master writes on the node.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labtools import wait_for
from realnfd import crds, feature_labels, node_object, send, start_master

from console.lab import sandbox
from console.lab.controlplane import ControlPlane, free_port
from console.lab.cpu import tracer
from console.lab.guest import SimulatedGuest
from console.lab.guestroot import GuestRoot
from console.lab.scenarios import HASWELL, SKYLAKE, ZEN3, CpuModel
from console.lab.upstream.build import NFD, binary

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (./dev installs it)")

NS = "nfd-worker-conformance"
KERNEL = "5.15.0-91-generic"
PROGRAM = NFD["v0.19.0"]


@pytest.fixture(scope="module")
def nfd(control_plane: ControlPlane, kubectl: Any) -> Iterator[Path]:
    """The release's CRDs and a namespace; yields the directory of its binaries."""
    kubectl("apply", "-f", str(crds(PROGRAM)))
    kubectl("create", "namespace", NS)
    try:
        yield binary(PROGRAM, command="nfd-worker").parent
    finally:
        kubectl("delete", "namespace", NS, "--wait=false")
        kubectl("delete", "-f", str(crds(PROGRAM)))  # waited for: the package's other tests apply them again


def _lab_node(tmp: Path, name: str) -> tuple[GuestRoot, Any]:
    guest = SimulatedGuest(f"{name}-uuid")
    guest.observe("qemu-1", 4, 8 * 1024 * 1024, 8 * 1024 * 1024)
    root = GuestRoot(tmp / name)
    detach = root.attach(guest, hostname=name, kernel_release=KERNEL)
    return root, detach


def _run_worker(control_plane: ControlPlane, bin_dir: Path, tmp: Path, name: str, cpu: CpuModel) -> sandbox.Result:
    root, detach = _lab_node(tmp, name)
    try:
        root.write("/etc/kubernetes/nfd-worker.kubeconfig", (control_plane.root / "admin.kubeconfig").read_text())
        on_cpu = tracer.on_cpu(cpu, tmp / f"{name}-cpu")
        argv = [
            *on_cpu.argv,
            "/opt/nfd/nfd-worker",
            "-kubeconfig=/etc/kubernetes/nfd-worker.kubeconfig",
            "-oneshot",
            "-owner-refs=node",
            f"-port={free_port()}",
        ]
        return sandbox.run(
            root,
            argv,
            env={"NODE_NAME": name, "KUBERNETES_NAMESPACE": NS},
            timeout=120,
            merge_stderr=True,
            binds={**on_cpu.binds, "/opt/nfd": bin_dir},
        )
    finally:
        detach()


@pytest.fixture(scope="module")
def master(
    control_plane: ControlPlane, kubectl: Any, nfd: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[subprocess.Popen[bytes]]:
    tmp = tmp_path_factory.mktemp("nfd-master")
    send(kubectl, "apply", tmp, node_object("nfd-cp"))
    proc = start_master(control_plane, nfd / "nfd-master", "nfd-cp", NS, tmp / "nfd-master.log")
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(30)
        kubectl("delete", "node", "nfd-cp", "--wait=false")


@pytest.mark.parametrize("cpu", [HASWELL, SKYLAKE, ZEN3], ids=lambda c: c.model_name.split("(")[-1].rstrip(")"))
def test_the_real_worker_finds_the_nodes_cpu_and_the_real_master_labels_it(
    control_plane: ControlPlane, kubectl: Any, nfd: Path, master: Any, tmp_path: Path, cpu: CpuModel
) -> None:
    name = "nfd-" + cpu.model_name.split("(")[-1].rstrip(")").lower().replace(" ", "-")
    send(kubectl, "apply", tmp_path, node_object(name))
    try:
        res = _run_worker(control_plane, nfd, tmp_path, name, cpu)
        assert res.code == 0, res.stdout[-3000:]
        nf = json.loads(kubectl("get", "nodefeature", "-n", NS, name, "-o", "json").stdout)
        flags = set(nf["spec"]["features"]["flags"]["cpu.cpuid"]["elements"])
        model = nf["spec"]["features"]["attributes"]["cpu.model"]["elements"]
        assert {"vendor_id": model["vendor_id"], "family": model["family"], "id": model["id"]} == {
            "vendor_id": cpu.vendor_id,
            "family": str(cpu.family),
            "id": str(cpu.model_id),
        }
        wanted = {{"CMPXCHG16B": "CX16"}.get(f, f) for f in cpu.flags}
        assert wanted <= flags, f"the worker did not find {sorted(wanted - flags)}"
        assert ("AVX512F" in flags) == ("AVX512F" in cpu.flags)
        assert master.poll() is None, "nfd-master exited"
        wait_for(
            lambda: "cpu-model.id" in feature_labels(kubectl, name),
            timeout=60,
            what="the real master's labels on the node",
        )
        labels = feature_labels(kubectl, name)
        print(name, json.dumps(labels, indent=0, sort_keys=True), sorted(flags))
        assert labels["cpu-model.vendor_id"] == cpu.vendor_id
        assert labels["cpu-model.family"] == str(cpu.family)
        assert labels["cpu-model.id"] == str(cpu.model_id)
        assert labels.get("cpu-cpuid.AVX512F") == ("true" if "AVX512F" in cpu.flags else None)
        assert labels.get("cpu-cpuid.AVX2") == "true"
        assert labels["kernel-version.full"] == KERNEL
        assert labels["system-os_release.ID"] == "ubuntu"
    finally:
        kubectl("delete", "node", name, "--wait=false")
