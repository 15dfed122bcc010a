"""Verification: the kubelet's capacity matches the VM, and the planned Pending pods run (or why not)."""

from __future__ import annotations

import time
from typing import Any

from console.kube import nodes_ops
from console.kube.model import NodeInfo, cpu_millis, mem_bytes

MAX_OVERHEAD = 0.06  # guest kernel overhead above this fraction of RAM means memory is missing


def capacity_matches(node: dict[str, Any] | None, vcpus: int, memory_mib: int | None) -> bool:
    """Ready, capacity cpu == vCPUs, and capacity memory within the kernel overhead below the VM's RAM."""
    if node is None:
        return False
    info = NodeInfo.from_api(node)
    if info.ready != "True":
        return False
    cap = (node.get("status") or {}).get("capacity") or {}
    if cpu_millis(cap.get("cpu")) != vcpus * 1000:
        return False
    if memory_mib is None:  # memory not checked (the balloon target is unknown to libvirt)
        return True
    return memory_matches(mem_bytes(cap.get("memory")), memory_mib)


def memory_matches(total_bytes: float, memory_mib: int) -> bool:
    """A guest's MemTotal (= the kubelet's memory capacity) for `memory_mib` of RAM: at most the RAM, at most
    MAX_OVERHEAD below it."""
    ram = memory_mib * 2**20
    return ram * (1 - MAX_OVERHEAD) <= total_bytes <= ram


def describe_capacity(node: dict[str, Any] | None) -> str:
    if node is None:
        return "node not found"
    info = NodeInfo.from_api(node)
    cap = (node.get("status") or {}).get("capacity") or {}
    return f"{info.status}, capacity cpu {cap.get('cpu')} / memory {cap.get('memory')}"


def wait_capacity(
    api: Any, node: str, vcpus: int, memory_mib: int | None, timeout: float
) -> tuple[dict[str, Any], float]:
    """Watch the node until its capacity matches; returns (node, seconds waited). TimeoutError says what it shows."""
    t0 = time.monotonic()
    try:
        obj = nodes_ops.watch_until(api, "node", node, lambda o: capacity_matches(o, vcpus, memory_mib), timeout)
    except TimeoutError:
        last = nodes_ops.get_node_raw(api, node)
        raise TimeoutError(
            f"node {node} did not report cpu {vcpus}{f' / ~{memory_mib} MiB' if memory_mib else ''} "
            f"within {timeout:g}s: it shows {describe_capacity(last)}"
        ) from None
    return obj or {}, time.monotonic() - t0


def wait_pods_running(api: Any, pods: list[str], timeout: float) -> list[str]:
    """Wait for each "namespace/name" to be Running; returns problems (empty: all running)."""
    problems = []
    deadline = time.monotonic() + timeout
    for key in pods:
        ns, name = key.split("/", 1)

        def running(p: dict[str, Any] | None) -> bool:
            return p is None or (p.get("status") or {}).get("phase") in ("Running", "Succeeded")

        try:
            pod = nodes_ops.watch_until(api, "pod", name, running, max(0.5, deadline - time.monotonic()), namespace=ns)
            if pod is None:
                problems.append(f"{key} was deleted")
        except TimeoutError:
            why = nodes_ops.latest_failed_scheduling(api, ns, name) or "no FailedScheduling event"
            problems.append(f"{key} still Pending: {why}")
    return problems
