"""Helpers for the fleet runbook's tests: `console plan --apply` in a subprocess with the lab's env, and what the
real clients say afterwards (openstacksdk: Nova's instance actions per server, GET /servers/{id}/os-instance-
actions as nova's instance_actions API lists them; libvirt-python: the domain's vCPUs and memory; the kubernetes
client: pods and nodes)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import journalsignal
from labtools import lab_env

from console.lab.world import Lab


@dataclass
class Run:
    code: int
    doc: dict[str, Any]
    stderr: str


def plan_cli(lab: Lab, state: Path, *args: str, signal_at: str = "", timeout: float = 240,
             before: tuple[str, ...] = ()) -> Run:
    """`python -m console [BEFORE] plan ARGS -o json` (XDG_STATE_HOME=`state`); `signal_at`: SIGKILL it the moment
    a journal records that (tests/support/journalsignal.py, e.g. "resize:acted@kube-worker03")."""
    env = lab_env(lab) | {"XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(state / "config")}
    argv = [sys.executable, "-m", "console", *before, "plan", *args, "-o", "json"]
    if signal_at:
        argv = journalsignal.command(*before, "plan", *args, "-o", "json")
        env |= journalsignal.env(signal_at, "SIGKILL")
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except ValueError:
        doc = {}
    return Run(proc.returncode, doc, proc.stderr)


def openstack(lab: Lab) -> Any:
    import openstack.config
    import openstack.connection

    region = openstack.config.OpenStackConfig(config_files=[str(lab.state.clouds_yaml)]).get_one("lab")
    return openstack.connection.Connection(config=region)


def nova_actions(lab: Lab) -> dict[str, Counter[str]]:
    """Node name → how many of each instance action Nova recorded for its server (create, resize, confirmResize)."""
    conn = openstack(lab)
    try:
        return {vm.node_name: Counter(a.action for a in conn.compute.server_actions(vm.server_id)) for vm in lab.vms}
    finally:
        conn.close()


def domain_sizes(lab: Lab) -> dict[str, tuple[int, int]]:
    """Node name → (vCPUs, memory MiB) of its libvirt domain now (virDomainGetInfo)."""
    import libvirt

    conn = libvirt.open(lab.libvirt_uri)
    try:
        out = {}
        for vm in lab.vms:
            _state, max_kib, _mem, vcpus, _t = conn.lookupByUUIDString(vm.server_id).info()
            out[vm.node_name] = (vcpus, max_kib // 1024)
        return out
    finally:
        conn.close()


def core(lab: Lab) -> Any:
    from kubernetes import client, config

    return client.CoreV1Api(config.new_client_from_config(str(lab_env(lab)["KUBECONFIG"])))


def pods_by_node(lab: Lab, prefix: str) -> dict[str, list[str]]:
    """Node → the Running pods of namespace default whose name starts with `prefix` (the kubernetes client)."""
    out: dict[str, list[str]] = {}
    for p in core(lab).list_namespaced_pod("default").items:
        if p.metadata.name.startswith(prefix) and p.status.phase == "Running":
            out.setdefault(p.spec.node_name, []).append(f"default/{p.metadata.name}")
    return out


def hold_node(lab: Lab, node: str, holder: str) -> None:
    """Another machine's scale-up run takes `node`: its Lease (coordination.k8s.io/v1, named and filled as
    console/runbook/lock.py writes it), created through the kubernetes client."""
    from datetime import UTC, datetime

    from kubernetes import client, config

    now = datetime.now(UTC)
    api = config.new_client_from_config(str(lab.state.kubeconfig))
    try:
        client.CoordinationV1Api(api).create_namespaced_lease("default", client.V1Lease(
            metadata=client.V1ObjectMeta(name=f"console-scale-up-{node}",
                                         labels={"app.kubernetes.io/managed-by": "console"}),
            spec=client.V1LeaseSpec(holder_identity=holder, lease_duration_seconds=60, acquire_time=now,
                                    renew_time=now, lease_transitions=0)))
    finally:
        api.close()


def release_node(lab: Lab, node: str) -> None:
    """That run ended: its Lease is gone."""
    from kubernetes import client, config

    api = config.new_client_from_config(str(lab.state.kubeconfig))
    try:
        client.CoordinationV1Api(api).delete_namespaced_lease(f"console-scale-up-{node}", "default")
    finally:
        api.close()


def journals(state: Path, kind: str) -> list[dict[str, Any]]:
    d = state / "console" / "runbooks"
    return [json.loads(p.read_text()) for p in sorted(d.glob(f"{kind}-*.json"))] if d.exists() else []


def audit(state: Path) -> list[dict[str, Any]]:
    p = state / "console" / "audit.log"
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()] if p.exists() else []
