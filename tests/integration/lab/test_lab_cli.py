"""`python -m console lab` as a user runs it: foreground, state dir, Ctrl-C."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from labtools import env_from_file, run, wait_for

pytestmark = pytest.mark.lab


def _serve(tmp_path, *extra, state: Path | None = None):
    state = state or tmp_path / "state"
    proc = subprocess.Popen(
        [sys.executable, "-m", "console", "lab", "--state-dir", str(state), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: (state / "ready").exists() or proc.poll() is not None, 90, what="lab ready")
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    return proc, state


def _stop(proc):
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out, err


def _qemu_under(path) -> list[str]:
    ps = subprocess.run(["pgrep", "-af", "qemu-system"], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if str(path) in line]


def test_lab_serves_until_ctrl_c_and_cleans_up(tmp_path):
    proc, state = _serve(tmp_path, "--scenario", "seed-resize", "--libvirt", "qemu")
    env = env_from_file(state / "env")
    try:
        assert {"kubeconfig", "clouds.yaml", "env", "ready"} <= {p.name for p in state.iterdir()}
        assert "kube-worker02" in run(["kubectl", "get", "nodes"], env).stdout
        # metrics.k8s.io as metrics-server serves it: kubectl top works once it has a rate, from two scrapes of the
        # kubelets (upstream's metrics-server, console/lab/metricsserver.py: "metrics not available yet" until then)
        top = str(wait_for(lambda: (lambda p: p.returncode == 0 and p.stdout)(
            run(["kubectl", "top", "node"], env, check=False)), timeout=60, what="kubectl top node")).splitlines()
        assert top[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
        assert "kube-worker02" in {ln.split()[0] for ln in top[1:]}
        # the scenario's only app pod is Pending: no metrics for it, and kubectl top says so (top_pod.go)
        pods = run(["kubectl", "top", "pod", "-n", "default"], env, check=False)
        assert pods.returncode == 1 and "metrics not available yet" in pods.stderr
        # NFD's own pods (its manifests' nfd-master Deployment and nfd-worker DaemonSet) are created by the controllers
        nfd = wait_for(lambda: (lambda out: out if "nfd-master-" in out and "nfd-worker-" in out else "")(
            run(["kubectl", "get", "pods", "-n", "node-feature-discovery", "-o", "name"], env).stdout),
            timeout=30, what="NFD's pods")
        assert nfd
        uri = env["CONSOLE_LIBVIRT_URI"]
        listed = run(["virsh", "-c", uri, "list", "--name"], env).stdout.split()
        assert sorted(listed) == ["instance-00003358", "instance-0000335a", "instance-0000335c"]
    finally:
        out, _ = _stop(proc)
    assert "set -a; ." in out and str(state / "env") in out
    assert not (state / "ready").exists()
    time.sleep(0.5)
    assert subprocess.run(["virsh", "-c", uri, "list"], capture_output=True).returncode != 0  # daemon gone


def test_test_driver_fallback_runs_the_offline_field_report(tmp_path):
    proc, state = _serve(tmp_path, "--scenario", "seed-resize", "--libvirt", "test", "--no-metrics")
    env = env_from_file(state / "env")
    try:
        assert env["CONSOLE_LIBVIRT_URI"].startswith("test")
        no_top = run(["kubectl", "top", "node"], env, check=False)  # as a cluster without metrics-server
        assert no_top.returncode != 0 and "Metrics API not available" in no_top.stderr
        run(["openstack", "server", "resize", "--flavor", "m1.large", "--wait", "kube-worker02"], env, timeout=120)
        run(["openstack", "server", "resize", "confirm", "kube-worker02"], env)

        def capacity():
            out = run(
                [
                    "kubectl",
                    "get",
                    "node",
                    "kube-worker02",
                    "-o",
                    "jsonpath={.status.capacity.cpu}/{.status.capacity.memory}",
                ],
                env,
            ).stdout
            return out == "8/12268324Ki"

        wait_for(capacity, 60, what="capacity 8/12268324Ki with the test driver")
    finally:
        _stop(proc)


def test_scale_world_serves_nodes_without_vms(tmp_path):
    """`console lab --scenario scale --nodes 3 --pods-per-node 2 --pending 2`: nodes without VMs, Ready; the pods
    bound to them Running; the Pending pods refused for cpu (19 CPUs asked of nodes with 16); the nodes are Nova
    servers the planner can size, with no hypervisor (no libvirt URI)."""
    proc, state = _serve(tmp_path, "--scenario", "scale", "--nodes", "3", "--pods-per-node", "2", "--pending", "2",
                         "--no-metrics")
    env = env_from_file(state / "env")
    names = [f"node-{i:05d}" for i in range(3)]
    try:
        assert env["CONSOLE_LIBVIRT_URI"] == ""
        nodes = run(["kubectl", "get", "nodes", "--no-headers"], env).stdout.splitlines()
        assert [line.split()[:2] for line in nodes] == [[name, "Ready"] for name in names]
        columns = "custom-columns=NAME:.metadata.name,PHASE:.status.phase,NODE:.spec.nodeName"
        pods = run(["kubectl", "get", "pods", "-n", "default", "--no-headers", "-o", columns], env).stdout
        assert sorted(tuple(line.split()) for line in pods.splitlines()) == sorted(
            [(f"app-{i:05d}-{j:02d}", "Running", names[i]) for i in range(3) for j in range(2)]
            + [(f"pending-{i:05d}", "Pending", "<none>") for i in range(2)])
        jsonpath = 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}'
        message = wait_for(lambda: run(["kubectl", "get", "pod", "pending-00001", "-o", jsonpath], env).stdout,
                           60, what="pending-00001's FailedScheduling")
        assert message.startswith("0/3 nodes are available: 3 Insufficient cpu."), message
        servers = run(["openstack", "server", "list", "-f", "value", "-c", "Name"], env).stdout.split()
        assert sorted(servers) == names
    finally:
        _stop(proc)


def test_unknown_scenario_is_a_clear_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "console", "lab", "--scenario", "nope", "--state-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert ("unknown scenario 'nope'; choose one of: default, seed-resize, seed-live, seed-drain, nfd-configmap, "
            "nfd-gpu-operator, planner, scale") in proc.stderr


@pytest.mark.parametrize("length", [32, 64, 100])
def test_a_long_state_dir_serves_the_lab(length):
    """Issue 20, point 11: a state dir of 28 characters and more ended in exit 70, `UNIX socket path
    '…/config/libvirt/qemu/lib/domain-1-instance-00003358/monitor.sock' too long` (libvirt's
    virNetSocketNewListenUNIX: sun_path is 108 bytes), or QEMU's `-qmp unix:…` probe failing. libvirtd's sockets
    live under a short private directory whatever the state dir; the lab is ready and virsh reaches it."""
    root = Path(tempfile.mkdtemp(prefix="lab-", dir="/tmp"))
    os.chmod(root, 0o755)  # a directory the daemon user can reach, as an admin's own state dir is
    state = root / ("s" * (length - len(str(root)) - 1))
    assert len(str(state)) == length
    try:
        proc, state = _serve(root, "--scenario", "seed-resize", "--libvirt", "qemu", "--no-metrics", state=state)
        env = env_from_file(state / "env")
        try:
            uri = env["CONSOLE_LIBVIRT_URI"]
            socket_path = uri.split("socket=", 1)[1]
            assert len(socket_path) < 64 and not socket_path.startswith(str(root)), uri
            listed = run(["virsh", "-c", uri, "list", "--name"], env).stdout.split()
            assert sorted(listed) == ["instance-00003358", "instance-0000335a", "instance-0000335c"]
            assert "kube-worker02" in run(["kubectl", "get", "nodes"], env).stdout
        finally:
            _stop(proc)
        assert not Path(socket_path).exists()  # the private directory goes with the lab
    finally:
        shutil.rmtree(root, ignore_errors=True)
