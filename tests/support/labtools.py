"""Helpers for tests that drive the lab through real clients and CLIs."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from console.lab.world import Lab


def env_from_file(path: Path) -> dict[str, str]:
    """The process environment after `set -a; . DIR/env`."""
    env = dict(os.environ)
    # the `openstack` CLI is a test dependency installed next to this interpreter
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for line in path.read_text().splitlines():
        key, _, value = line.partition("=")
        env[key] = shlex.split(value)[0] if value else ""
    return env


def lab_env(lab: Lab) -> dict[str, str]:
    return env_from_file(lab.state.env)


def run(cmd: list[str], env: dict[str, str], *, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{shlex.join(cmd)} exited {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
        )
    return proc


def wait_for(predicate: Callable[[], object], timeout: float = 60, interval: float = 0.2, what: str = "") -> object:
    """Poll until `predicate()` is truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}; last value: {last!r}")


def resize_to_verify(lab: Lab, server_id: str, flavor: str, timeout: float = 120) -> None:
    """Resize a server with openstacksdk as the cloud's admin (cloud `lab`) and wait until Nova waits in
    VERIFY_RESIZE: a resize someone left unconfirmed, for `scale-up --revert`."""
    import openstack.config
    import openstack.connection

    region = openstack.config.OpenStackConfig(config_files=[str(lab.state.clouds_yaml)]).get_one("lab")
    conn = openstack.connection.Connection(config=region)
    try:
        conn.compute.resize_server(server_id, conn.compute.find_flavor(flavor, ignore_missing=False).id)
    finally:
        conn.close()
    wait_for(lambda: lab.nova.server(server_id).status == "VERIFY_RESIZE", timeout=timeout,
             what=f"server {server_id} in VERIFY_RESIZE")


def quick_scheduler_retries(lab: Lab) -> Lab:
    """Cap kube-scheduler's unschedulable-pod backoff at its initial 1 s (podMaxBackoffSeconds: 1).

    A Pending pod a scale-up makes fit has failed a scheduling attempt at every node change before it (cordon,
    drain, resize), so by the uncordon its backoff has doubled to the default 10 s and verify-pods waits that long.
    kube-scheduler reads the cap from KubeSchedulerConfiguration podMaxBackoffSeconds
    (kubernetes/kubernetes cmd/kube-scheduler/app/server.go: scheduler.WithPodMaxBackoffSeconds); Kubernetes' own
    scheduler integration tests lower it the same way (test/integration/scheduler: WithPodMaxBackoffSeconds(1)).
    Nothing is skipped: the pod still fails while it does not fit and binds on the first retry after it does.
    kube-scheduler restarts with podMaxBackoffSeconds: 1."""
    lab.control_plane.set_pod_max_backoff(1)
    return lab


def scheduler_away(lab: Lab) -> None:
    """The cluster's scheduler stops (the kube-scheduler process): Pending pods stay Pending until
    `scheduler_back`."""
    lab.control_plane.stop_component("kube-scheduler")


def scheduler_back(lab: Lab) -> None:
    """kube-scheduler runs again (nothing to do when it runs)."""
    if not lab.control_plane.components["kube-scheduler"].running():
        lab.control_plane.start_component("kube-scheduler")
